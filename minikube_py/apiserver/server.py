"""Running the apiserver: HTTPS on uvicorn, with client certificates available to authentication.

kube-apiserver serves only HTTPS. We do the same with uvicorn's TLS support, asking clients for a
certificate (`CERT_OPTIONAL`: a bearer token is another way in) and verifying it against `--client-ca-file`.
ASGI has no standard place for the peer certificate, so uvicorn runs with the protocol classes of
`streaming/uvicorn_protocols.py`, which hand it to every request, WebSocket ones too, as
`scope["extensions"]["tls"]["peercert"]` (and let exec/attach/port-forward take a connection over after
a SPDY upgrade).
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

import uvicorn

from ..auth.authn import Authenticator
from ..streaming.uvicorn_protocols import StreamingHttpProtocol, StreamingWebSocketProtocol
from .app import APIServer, build_app
from .audit import AuditInitMiddleware, AuditMiddleware, Auditor
from .authentication import AuthenticationMiddleware
from .authorization import AuthorizationMiddleware
from .impersonation import ImpersonationMiddleware
from .options import ServerOptions


def make_asgi_app(options: ServerOptions, server: APIServer | None = None) -> Any:
    """The handler chain, outermost first: (audit ID) → authentication → audit → impersonation → authorization
    → the app."""
    server = server or APIServer(options)
    authenticator = Authenticator.from_token_auth_file(options.token_auth_file, anonymous=options.anonymous_auth)
    server.authenticator = authenticator
    app = AuthorizationMiddleware(build_app(server), server)
    app = ImpersonationMiddleware(app, server)
    auditor = Auditor.from_options(options)  # None without --audit-policy-file and --audit-log-path
    if auditor is not None:
        app = AuditMiddleware(app, auditor)
    app = AuthenticationMiddleware(app, authenticator)
    return AuditInitMiddleware(app, auditor) if auditor is not None else app


def uvicorn_config(options: ServerOptions, app: Any) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=options.bind_address,
        port=options.secure_port,
        ssl_certfile=options.tls_cert_file,
        ssl_keyfile=options.tls_private_key_file,
        ssl_ca_certs=options.client_ca_file or None,
        ssl_cert_reqs=ssl.CERT_OPTIONAL if options.client_ca_file else ssl.CERT_NONE,
        http=StreamingHttpProtocol,
        ws=StreamingWebSocketProtocol,
        lifespan="on",
        access_log=False,
        # kube never takes a client's address from X-Forwarded-For; audit lists that header's addresses
        # before the peer's own (audit.py), which uvicorn's rewrite of the peer address would hide
        proxy_headers=False,
        log_level="warning",
        timeout_keep_alive=120,
        # On SIGTERM, open watches get a second to end before they are cut (kube ends them at shutdown too),
        # so a stopping apiserver never waits on its longest-lived clients.
        timeout_graceful_shutdown=1,
    )


def serve(options: ServerOptions) -> None:
    """Run the apiserver in the foreground until SIGINT/SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = uvicorn_config(options, make_asgi_app(options))
    uvicorn.Server(config).run()

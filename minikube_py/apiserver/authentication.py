"""The authentication filter: who is making this request?

The first filter of the handler chain. It asks the authenticator chain (`auth/authn.py`: the verified
client certificate, then bearer tokens, then anonymous) for the request's user and stores it as
`scope["user"]` for the filters after it. A request nobody vouches for is answered `401 Unauthorized` here.
Anonymous requests (no credentials, `--anonymous-auth`) go on as `system:anonymous`: authorization decides
what they may see (kube's RBAC grants `system:unauthenticated` the health and version endpoints).

The TLS layer (`server.py`) puts the connection's verified peer certificate into
`scope["extensions"]["tls"]["peercert"]`.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ..api import errors
from ..auth.authn import Authenticator
from .responses import error_response


class AuthenticationMiddleware:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        peercert = scope.get("extensions", {}).get("tls", {}).get("peercert")
        authorization = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value.decode("latin-1")
                break
        user = self.authenticator.authenticate(peercert, authorization)
        if user is None:
            await error_response(errors.unauthorized())(scope, receive, send)
            return
        scope["user"] = user
        await self.app(scope, receive, send)

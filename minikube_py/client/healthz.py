"""The health endpoint every component other than the apiserver serves: `/healthz`, `/livez`, `/readyz` over HTTPS.

kube-scheduler and kube-controller-manager serve these on their `--secure-port` (10259 and 10257) so that a
supervisor (here `mkpy status` and `mkpy up`) can tell whether they are alive. Each named check is a function
returning `(ok, detail)`; a path answers 200 "ok" when all checks pass, else 500 listing the failures, and
`?verbose` lists every check as kube does ("[+]leaderElection ok").

Usage rules: the server is deliberately tiny (asyncio streams, one request per connection, GET only) so a
component does not carry a web framework for three paths. Without a certificate it makes a self-signed one
at start, as kube components do.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

Check = Callable[[], tuple[bool, str]]
PATHS = ("/healthz", "/livez", "/readyz")
_MAX_REQUEST_LINE = 8192


class HealthServerError(Exception):
    """The address cannot be served (port taken, address not local); the message says which and why."""


class HealthServer:
    def __init__(self, bind_address: str, port: int, *, cert_file: str = "", key_file: str = "") -> None:
        self.bind_address = bind_address
        self.port = port
        self.cert_file, self.key_file = cert_file, key_file
        self.checks: dict[str, Check] = {"ping": lambda: (True, "")}
        self._server: asyncio.Server | None = None

    def add_check(self, name: str, check: Check) -> None:
        self.checks[name] = check

    async def start(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        else:
            _load_self_signed(context)
        try:
            self._server = await asyncio.start_server(self._serve, self.bind_address, self.port, ssl=context)
        except OSError as error:
            raise HealthServerError(f"cannot serve /healthz on {self.bind_address}:{self.port}: "
                                    f"{error.strerror or error}") from None

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), timeout=5)
            while (await asyncio.wait_for(reader.readline(), timeout=5)) not in (b"\r\n", b"\n", b""):
                pass  # headers are not needed
            status, body = self.answer(request_line[:_MAX_REQUEST_LINE].decode("latin-1"))
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (TimeoutError, OSError, ssl.SSLError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    def answer(self, request_line: str) -> tuple[str, bytes]:
        """The status line and body for one request line such as `GET /healthz?verbose HTTP/1.1`."""
        parts = request_line.split()
        if len(parts) < 2 or parts[0] != "GET":
            return "405 Method Not Allowed", b"only GET is served\n"
        path, _, query = parts[1].partition("?")
        if path not in PATHS:
            return "404 Not Found", b"404 page not found\n"
        results = {name: _run(check) for name, check in self.checks.items()}
        failed = [name for name, (ok, _) in results.items() if not ok]
        if "verbose" in query or failed:
            lines = [f"[+]{name} ok" if ok else f"[-]{name} failed: {detail or 'reason withheld'}"
                     for name, (ok, detail) in results.items()]
            verdict = f"{path[1:]} check failed" if failed else f"{path[1:]} check passed"
            body = "\n".join([*lines, verdict]) + "\n"
            return ("500 Internal Server Error" if failed else "200 OK"), body.encode()
        return "200 OK", b"ok"


def _run(check: Check) -> tuple[bool, str]:
    try:
        return check()
    except Exception as error:  # a broken check reports itself, it does not break the endpoint
        return False, str(error)


def _load_self_signed(context: ssl.SSLContext) -> None:
    """Serve with a certificate made for this run; its files (a private key among them) are gone once the
    context has loaded them."""
    from minikube_py.auth import pki

    with tempfile.TemporaryDirectory(prefix="mkpy-serving-") as name:
        directory = Path(name)
        ca = pki.ensure_ca(directory, common_name="self-signed")
        ips, dns = pki.apiserver_sans("127.0.0.1", "10.96.0.0/12")
        pair = pki.ensure_serving_cert(directory, ca, "serving", common_name="localhost", ip_addresses=ips,
                                       dns_names=dns)
        context.load_cert_chain(str(pair.cert_path), str(pair.key_path))

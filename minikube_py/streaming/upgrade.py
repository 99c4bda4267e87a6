"""HTTP upgrades to SPDY/3.1, both ends.

Client (`connect_spdy`): the apiserver calling a kubelet, or a kubelet calling the runtime's streaming
server, sends

    POST /exec/... HTTP/1.1
    Connection: Upgrade
    Upgrade: SPDY/3.1
    X-Stream-Protocol-Version: v4.channel.k8s.io        (or portforward.k8s.io)

and expects `101 Switching Protocols` naming the chosen protocol in `X-Stream-Protocol-Version`; from
then on the socket carries a SPDY session. Any other answer raises `UpgradeError` with the status code and
body (a kubelet answers a metav1.Status, a runtime plain text).

Server (`SpdyUpgradeResponse`): a Starlette response that negotiates the protocol from the client's
`X-Stream-Protocol-Version` list, takes the socket over (see uvicorn_protocols.py), and runs `serve` with a
started `SpdySession` until it returns, then closes the session.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from .session import SpdySession
from .transport import SocketStream
from .uvicorn_protocols import TAKEOVER

SPDY = "SPDY/3.1"
PROTOCOL_HEADER = "X-Stream-Protocol-Version"
MAX_ERROR_BODY = 64 * 1024


class UpgradeError(Exception):
    """The server did not switch protocols."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body
        super().__init__(f"unable to upgrade connection: {body.decode(errors='replace').strip() or status}")


async def connect_spdy(url: str, protocols: list[str], *, ssl_context: ssl.SSLContext | None = None,
                       headers: dict[str, str] | None = None,
                       timeout: float = 30.0) -> tuple[SpdySession, str]:
    """Upgrade a POST to `url` to SPDY/3.1, offering `protocols` in order of preference; return the started
    session and the protocol the server chose. Raises UpgradeError, OSError or TimeoutError."""
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(
            parts.hostname, port, ssl=(ssl_context or ssl.create_default_context()) if secure else None)
        lines = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: Upgrade", f"Upgrade: {SPDY}",
                 f"{PROTOCOL_HEADER}: {', '.join(protocols)}", "Content-Length: 0",
                 *(f"{name}: {value}" for name, value in (headers or {}).items())]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        try:
            status, response_headers = await _read_head(reader)
            if status != 101:
                body = await _read_body(reader, response_headers)
                raise UpgradeError(status, body)
        except BaseException:
            writer.close()
            raise
    return SpdySession(SocketStream(reader, writer), client=True).start(), response_headers.get(
        PROTOCOL_HEADER.lower(), "")


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        raise ConnectionResetError("the server closed the connection without answering") from None
    except asyncio.LimitOverrunError:
        raise ConnectionResetError("the server's response head is too long") from None
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(status_line.split(" ", 2)[1])
    except (IndexError, ValueError):
        raise ConnectionResetError(f"not an HTTP response: {status_line!r}") from None
    headers = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "content-length" in headers:
        return await reader.read(min(int(headers["content-length"]), MAX_ERROR_BODY))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while len(body) < MAX_ERROR_BODY and (size := int((await reader.readline()).strip() or b"0", 16)):
            body += await reader.readexactly(size)
            await reader.readline()
        return body
    return await reader.read(MAX_ERROR_BODY)


Serve = Callable[[SpdySession, str], Awaitable[None]]


class SpdyUpgradeResponse(Response):
    """Switch to SPDY/3.1 with one of `protocols` (preferred first among the client's offers) and run
    `serve(session, protocol)`. Answers 403 when no protocol matches, 400 without `Upgrade: SPDY/3.1`
    (as kube's handshake does), 500 when the server cannot take connections over."""

    def __init__(self, protocols: list[str], serve: Serve) -> None:
        super().__init__()
        self.protocols = protocols
        self.serve = serve

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        offered = [p.strip() for header in request.headers.getlist(PROTOCOL_HEADER) for p in header.split(",")
                   if p.strip()]  # kubectl sends one header per protocol
        chosen = next((p for p in offered if p in self.protocols), None)
        take_over = scope.get("extensions", {}).get(TAKEOVER, {}).get("take_over")
        if request.headers.get("upgrade", "").lower() != SPDY.lower():
            answer: Response = PlainTextResponse("unable to upgrade: missing upgrade headers in request",
                                                 status_code=400)
        elif chosen is None:
            answer = PlainTextResponse(f"unable to upgrade: unable to negotiate protocol: client supports "
                                       f"{offered}, server supports {self.protocols}", status_code=403)
        elif take_over is None:
            answer = PlainTextResponse("unable to upgrade: this server cannot switch protocols", status_code=500)
        else:
            reader, writer = await take_over([("Connection", "Upgrade"), ("Upgrade", SPDY),
                                              (PROTOCOL_HEADER, chosen)])
            session = SpdySession(SocketStream(reader, writer), client=False).start()
            try:
                await self.serve(session, chosen)
            finally:
                await session.close()
            return
        await answer(scope, receive, send)

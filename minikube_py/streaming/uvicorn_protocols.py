"""What uvicorn lacks for streaming servers: peer certificates in every scope, and SPDY upgrades.

ASGI knows two kinds of connection: HTTP request/response and WebSocket. kubectl's SPDY fallback
(`Upgrade: SPDY/3.1`) is neither: after `101 Switching Protocols` the socket carries raw SPDY frames.
uvicorn hands such a request to the app as plain HTTP (logging "Unsupported upgrade request") and would
frame anything the app sends as an HTTP body. So the HTTP protocol class here puts one more extension in
the scope of an upgrade request, `scope["extensions"]["mkpy.takeover"]["take_over"]`: an async function
that writes the 101 response itself, detaches the socket from uvicorn's HTTP machinery (uvicorn then
considers that request answered) and returns it as an asyncio reader/writer pair (`upgrade.py` uses it).

Both protocol classes also put the connection's verified client certificate into every scope, as
`scope["extensions"]["tls"]["peercert"]` (what `ssl.SSLObject.getpeercert()` returned): authentication
by client certificate must work for WebSocket requests (kubectl exec) as for plain ones. A WebSocket
scope also gets `scope["method"] = "GET"` (a handshake is a GET on the wire), so filters that derive the
verb from the method (authorization, audit) treat it like any GET.

The HTTP protocol class also sends the head of a response whose length is known together with its body:
uvicorn writes them separately, which over TLS costs two records and two socket writes per answer where
one does (`_JoinedHeadTransport`). A streamed response (chunked: watches, logs) still gets its head at once,
and a body over JOIN_LIMIT its own write (copying it behind the head would cost more than the record).

Use: `uvicorn.Config(app, http=StreamingHttpProtocol, ws=StreamingWebSocketProtocol, ...)`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.websockets.websockets_impl import WebSocketProtocol

TAKEOVER = "mkpy.takeover"
TAKEOVER_UPGRADES = (b"spdy/3.1",)
JOIN_LIMIT = 64 * 1024  # bodies up to this size are sent in one write with their head


def _tls_info(transport: asyncio.BaseTransport) -> dict[str, Any]:
    return {"peercert": transport.get_extra_info("peercert")}


class StreamingHttpProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._tls = _tls_info(transport)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {"tls": self._tls}  # type: ignore[typeddict-unknown-key]

    def on_headers_complete(self) -> None:
        if self.parser.should_upgrade() and self._get_upgrade() in TAKEOVER_UPGRADES:
            self.scope["extensions"][TAKEOVER] = {"take_over": self._take_over}  # type: ignore[typeddict-item]
        super().on_headers_complete()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        cycle.transport = _JoinedHeadTransport(cycle.transport, hold=cycle.scope["method"] != "HEAD")
        super()._start_asgi_task(cycle, app)

    def _unsupported_upgrade_warning(self) -> None:
        if self._get_upgrade() not in TAKEOVER_UPGRADES:
            super()._unsupported_upgrade_warning()

    async def _take_over(self, headers: list[tuple[str, str]]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Answer `101 Switching Protocols` with `headers` and hand the socket over."""
        head = ["HTTP/1.1 101 Switching Protocols", *(f"{name}: {value}" for name, value in headers)]
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        self.cycle.response_started = self.cycle.response_complete = True  # uvicorn must not answer too
        self.connections.discard(self)
        self._unset_keepalive_if_required()
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        protocol = asyncio.StreamReaderProtocol(reader)
        self.transport.set_protocol(protocol)
        protocol.connection_made(self.transport)
        self.flow.resume_reading()
        return reader, asyncio.StreamWriter(self.transport, protocol, reader, loop)


class _JoinedHeadTransport:
    """One response's view of the connection's transport: a first write that is a head announcing a
    Content-Length (the body follows at once) waits for the next write and goes out with it; everything
    else passes straight through. A HEAD request's head is never held: no body write follows it."""

    def __init__(self, transport: asyncio.Transport, *, hold: bool) -> None:
        self._transport = transport
        self._hold = hold
        self._head = b""

    def write(self, data: bytes) -> None:
        if self._hold:
            self._hold = False
            if b"\r\ncontent-length: " in data:
                self._head = data
                return
        if self._head:
            head, self._head = self._head, b""
            if len(data) > JOIN_LIMIT:  # a big body: a second record costs less than copying it behind the head
                self._transport.write(head)
            else:
                data = head + data
        self._transport.write(data)

    def close(self) -> None:
        if self._head:  # a head still held is owed before the connection ends
            self._transport.write(self._head)
            self._head = b""
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class StreamingWebSocketProtocol(WebSocketProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._tls = _tls_info(transport)

    async def run_asgi(self) -> None:
        self.scope["extensions"]["tls"] = self._tls  # type: ignore[index]
        self.scope["method"] = "GET"  # type: ignore[typeddict-unknown-key]
        await super().run_asgi()

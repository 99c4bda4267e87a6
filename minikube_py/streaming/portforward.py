"""Port-forward independent of the transport: each forwarded connection is a data pipe and an error pipe.

kubectl forwards a local TCP connection as two SPDY streams with headers `streamtype: error|data`,
`port: <port in the pod>` and `requestid: <n>` (the same n for the pair). Bytes of the connection flow on
the data stream both ways; a failure (e.g. nothing listens on the port) is text on the error stream. The
server ends a connection with FIN on the data stream *and* on the error stream: kubectl waits for the
error stream to end before it lets the local connection go.

The Python client uses the WebSocket channel protocol instead (`?ports=80,443`, subprotocol
`v4.channel.k8s.io`): for the i-th port, channel 2i carries data and 2i+1 errors, and the server begins
each channel with the port number (2 bytes, little-endian). One WebSocket forwards one connection per port.

Either way, a server hands each forwarded connection to a `Handler(port, data, error)` as two `Pipe`s and
closes both when the handler returns:

    await serve_spdy(session, handler)               # raw SPDY, or SPDY inside kubectl's WebSocket tunnel
    await serve_websocket(websocket, ports, handler)  # the Python client's channel protocol

A proxy (the apiserver, the kubelet) handles a connection by opening the same pair upstream with
`PortForwardClient.open` and `relay`ing between them; the runtime dials the port in the pod.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol

from starlette.websockets import WebSocket

from . import channels
from .remotecommand import STREAM_TYPE
from .session import SpdySession, SpdyStream

PORT, REQUEST_ID = "port", "requestid"
DATA, ERROR = "data", "error"


class Pipe(Protocol):
    async def read(self) -> bytes:
        """The next bytes; b"" once the other side has finished."""
        ...

    async def write(self, data: bytes) -> None:
        ...

    async def close(self) -> None:
        """Half-close: nothing more will be written."""
        ...


Handler = Callable[[int, Pipe, Pipe], Awaitable[None]]


def parse_port(value: str) -> int:
    """A port number from a header or query parameter. Raises ValueError with kube's wording."""
    try:
        port = int(value)
    except ValueError:
        raise ValueError(f'unable to parse "{value}" as a port: invalid syntax') from None
    if not 0 < port < 65536:
        raise ValueError(f"port {value} must be > 0 and < 65536")
    return port


async def _run(handler: Handler, port: int, data: Pipe, error: Pipe) -> None:
    try:
        await handler(port, data, error)
    finally:
        await data.close()
        await error.close()


# SPDY --------------------------------------------------------------------------------------------------


async def serve_spdy(session: SpdySession, handler: Handler) -> None:
    """Serve every stream pair the client opens until the session ends; then close it."""
    pairs: dict[str, dict[str, SpdyStream]] = {}
    tasks: set[asyncio.Task[None]] = set()
    try:
        while (stream := await session.accept()) is not None:
            request_id = stream.headers.get(REQUEST_ID, "")
            pair = pairs.setdefault(request_id, {})
            pair[stream.headers.get(STREAM_TYPE, "")] = stream
            if DATA not in pair or ERROR not in pair:
                continue
            del pairs[request_id]
            try:
                port = parse_port(pair[DATA].headers.get(PORT, ""))
            except ValueError as err:
                await pair[ERROR].write(str(err).encode())
                await pair[ERROR].close()
                await pair[DATA].close()
                continue
            task = asyncio.ensure_future(_run(handler, port, pair[DATA], pair[ERROR]))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await session.close()


class PortForwardClient:
    """Opens forwarded connections over a SPDY session to a kubelet or a runtime (`portforward.k8s.io`)."""

    def __init__(self, session: SpdySession) -> None:
        self.session = session
        self._next_request = 0

    async def open(self, port: int) -> tuple[SpdyStream, SpdyStream]:
        """(data, error) streams of a new connection to `port`, opened error first, as kubectl does."""
        headers = {PORT: str(port), REQUEST_ID: str(self._next_request)}
        self._next_request += 1
        error = await self.session.open({STREAM_TYPE: ERROR, **headers})
        await error.close()  # only the server writes errors
        data = await self.session.open({STREAM_TYPE: DATA, **headers})
        return data, error

    async def close(self) -> None:
        await self.session.close()


async def copy(source: Pipe, target: Pipe) -> None:
    """Copy until `source` ends, then half-close `target`."""
    with contextlib.suppress(ConnectionError):
        while data := await source.read():
            await target.write(data)
    await target.close()


async def relay(data: Pipe, error: Pipe, upstream_data: Pipe, upstream_error: Pipe) -> None:
    """Join a forwarded connection to its upstream pair: data both ways, errors down. Over when the upstream
    has finished both its data and its error stream."""
    up = asyncio.ensure_future(copy(data, upstream_data))
    try:
        await asyncio.gather(copy(upstream_data, data), copy(upstream_error, error))
    finally:
        up.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await up


# WebSocket channels ------------------------------------------------------------------------------------


class ChannelPipe:
    """One channel of the WebSocket port-forward protocol as a Pipe."""

    def __init__(self, websocket: WebSocket, channel: int) -> None:
        self.websocket = websocket
        self.channel = channel
        self.incoming: asyncio.Queue[bytes] = asyncio.Queue()

    async def read(self) -> bytes:
        data = await self.incoming.get()
        if not data:
            self.incoming.put_nowait(b"")
        return data

    async def write(self, data: bytes) -> None:
        try:
            await self.websocket.send_bytes(channels.encode(self.channel, data))
        except RuntimeError as err:  # Starlette: the socket is already closed
            raise ConnectionResetError("websocket closed") from err

    async def close(self) -> None:
        """The channel protocol has no half-close: the connection ends when the WebSocket closes."""


async def serve_websocket(websocket: WebSocket, ports: list[int], handler: Handler) -> None:
    """Serve one connection per port over an accepted WebSocket; close it when all are over (or the client
    went away)."""
    pipes = [(ChannelPipe(websocket, 2 * i), ChannelPipe(websocket, 2 * i + 1)) for i in range(len(ports))]
    by_channel = {pipe.channel: pipe for pair in pipes for pipe in pair}
    for port, (data, error) in zip(ports, pipes, strict=True):
        for pipe in (data, error):
            await pipe.write(port.to_bytes(2, "little"))

    async def dispatch() -> None:
        while (message := await websocket.receive())["type"] != "websocket.disconnect":
            if message.get("bytes"):
                channel, payload = channels.decode(message["bytes"])
                if channel in by_channel and payload:
                    by_channel[channel].incoming.put_nowait(payload)
        for pipe in by_channel.values():
            pipe.incoming.put_nowait(b"")

    reader = asyncio.ensure_future(dispatch())
    handlers = asyncio.gather(*[_run(handler, port, data, error)
                                for port, (data, error) in zip(ports, pipes, strict=True)])
    try:
        await asyncio.wait([reader, handlers], return_when=asyncio.FIRST_COMPLETED)
    finally:
        reader.cancel()
        handlers.cancel()
        await asyncio.gather(reader, handlers, return_exceptions=True)
        with contextlib.suppress(RuntimeError):
            await websocket.close(1000)

"""Remote commands (exec and attach) independent of the transport, and the bridge between two hops.

A remote command is a handful of streams: stdin, stdout, stderr, error (the final Status), resize. Whatever
carries them, this module speaks of them as *channel messages* `(channel, bytes)` with the channel numbers
of the WebSocket protocol (`channels.py`), plus `(CLOSE, bytes([STDIN]))` for "stdin is finished".
`Channels` is one end of a connection seen that way:

* server side (we serve the command, the peer is kubectl or an upstream proxy): `receive` yields stdin,
  resize and close; we `send` stdout, stderr and error;
* client side (we asked for the command, the peer is a kubelet or a runtime): `receive` yields stdout,
  stderr and error; we `send` stdin, resize and close.

Implementations: `WebSocketChannels` (Starlette, server side, v4/v5), `SpdyChannels` (either side, over a
`SpdySession`: one SPDY stream per channel, named by the `streamtype` header, stdin finished by FIN), and
`ClientWebSocketChannels` (client side over `websockets`, v4/v5). `bridge` connects a server side to a
client side, which is all the apiserver and the kubelet do with a command: copy the user's stdin and
resizes up, the output and the final Status down, and close both ends when the command is over.

`StreamOptions` are the `stdin`, `stdout`, `stderr` and `tty` query parameters every hop passes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from starlette.websockets import WebSocket
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from . import channels
from .channels import CLOSE, ERROR, RESIZE, STDERR, STDIN, STDOUT
from .session import SpdySession, SpdyStream
from .transport import StarletteWebSocketStream

STREAM_TYPE = "streamtype"
STREAM_CREATION_TIMEOUT = 30.0  # seconds a SPDY server waits for the client's streams, as the kubelet does


@dataclass(frozen=True)
class StreamOptions:
    stdin: bool = False
    stdout: bool = True
    stderr: bool = True
    tty: bool = False

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> StreamOptions:
        """From `?stdin=true&stdout=true&stderr=true&tty=true` (kube's names). With a tty, stderr goes to
        stdout. Raises ValueError when no stream at all is asked for, as kube does."""
        def flag(name: str) -> bool:
            return query.get(name, "").lower() in ("true", "1")

        options = cls(stdin=flag("stdin"), stdout=flag("stdout"), stderr=flag("stderr") and not flag("tty"),
                      tty=flag("tty"))
        if not (options.stdin or options.stdout or options.stderr):
            raise ValueError("you must specify at least 1 of stdin, stdout, stderr")
        return options

    def query(self) -> str:
        return "&".join(f"{name}={str(getattr(self, name)).lower()}"
                        for name in ("stdin", "stdout", "stderr", "tty"))

    def channels(self) -> list[int]:
        """The channels of a command with these options, error first (the order kubectl opens them)."""
        wanted = [(STDIN, self.stdin), (STDOUT, self.stdout), (STDERR, self.stderr), (RESIZE, self.tty)]
        return [ERROR] + [channel for channel, on in wanted if on]


class Channels(Protocol):
    async def receive(self) -> tuple[int, bytes] | None:
        """The next channel message from the peer; None once the peer is gone (client side: once the
        command's output and Status have all arrived)."""
        ...

    async def send(self, channel: int, data: bytes) -> None:
        """Send `data` on `channel` (a channel the peer does not read is silently dropped)."""
        ...

    async def close(self) -> None:
        """End the connection (server side: after the Status was sent)."""
        ...


# WebSocket ---------------------------------------------------------------------------------------------


class WebSocketChannels:
    """The server side over an accepted Starlette WebSocket speaking `protocol` (v4 or v5): each binary
    message of the socket (`transport.StarletteWebSocketStream`) is one channel byte and its data."""

    def __init__(self, websocket: WebSocket, protocol: str) -> None:
        self.stream = StarletteWebSocketStream(websocket)
        self.protocol = protocol

    async def receive(self) -> tuple[int, bytes] | None:
        while message := await self.stream.read():
            channel, data = channels.decode(message)
            if channel == CLOSE and self.protocol != channels.V5:
                continue  # v4 has no "stdin closed" channel
            return channel, data
        return None

    async def send(self, channel: int, data: bytes) -> None:
        if not self.stream.closed:
            with contextlib.suppress(ConnectionResetError):
                await self.stream.write(channels.encode(channel, data))

    async def close(self) -> None:
        await self.stream.close()


class ClientWebSocketChannels:
    """The client side over a `websockets` connection speaking v4 or v5 (`connection.subprotocol`)."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection

    async def receive(self) -> tuple[int, bytes] | None:
        while True:
            try:
                message = await self.connection.recv()
            except ConnectionClosed:
                return None
            if isinstance(message, bytes) and len(message) > 1:  # a bare channel byte opens a channel
                return channels.decode(message)

    async def send(self, channel: int, data: bytes) -> None:
        if channel == CLOSE and self.connection.subprotocol != channels.V5:
            return  # v4 cannot say that stdin is finished
        with contextlib.suppress(ConnectionClosed):
            await self.connection.send(channels.encode(channel, data))

    async def close(self) -> None:
        await self.connection.close()


# SPDY --------------------------------------------------------------------------------------------------


class SpdyChannels:
    """Either side of a command over a SPDY session: one stream per channel."""

    def __init__(self, session: SpdySession, streams: dict[int, SpdyStream], *, server: bool) -> None:
        self.session = session
        self.streams = streams
        self.server = server
        self._messages: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        readable = (STDIN, RESIZE) if server else (STDOUT, STDERR)
        self._outputs = [asyncio.ensure_future(self._copy(channel)) for channel in readable if channel in streams]
        self._tasks = list(self._outputs)
        if not server and ERROR in streams:
            self._tasks.append(asyncio.ensure_future(self._copy_status()))
        self._tasks.append(asyncio.ensure_future(self._watch_end()))

    @classmethod
    async def accept(cls, session: SpdySession, options: StreamOptions,
                     timeout: float = STREAM_CREATION_TIMEOUT) -> SpdyChannels:
        """Server side: wait for the streams the client must open for `options`. Raises TimeoutError or
        ConnectionError (the session ended first)."""
        wanted, streams = set(options.channels()), {}
        by_name = {name: channel for channel, name in channels.NAMES.items()}
        async with asyncio.timeout(timeout):
            while not wanted <= streams.keys():
                stream = await session.accept()
                if stream is None:
                    raise ConnectionResetError("the client went away before opening its streams")
                channel = by_name.get(stream.headers.get(STREAM_TYPE, ""))
                if channel is None or channel not in wanted:
                    await stream.reset()
                    continue
                streams[channel] = stream
        return cls(session, streams, server=True)

    @classmethod
    async def open(cls, session: SpdySession, options: StreamOptions) -> SpdyChannels:
        """Client side: open the streams for `options`, error first, then stdin, stdout, stderr, resize."""
        streams = {}
        for channel in options.channels():
            streams[channel] = await session.open({STREAM_TYPE: channels.NAMES[channel]})
            if channel == ERROR:
                await streams[channel].close()  # the client never writes on the error stream
        return cls(session, streams, server=False)

    async def _copy(self, channel: int) -> None:
        stream, pending = self.streams[channel], b""
        while data := await stream.read():
            if channel != RESIZE:
                self._messages.put_nowait((channel, data))
                continue
            sizes, pending = channels.parse_sizes(pending + data)
            for size in sizes:
                self._messages.put_nowait((RESIZE, size.encode()))
        if channel == STDIN:
            self._messages.put_nowait((CLOSE, bytes([STDIN])))

    async def _copy_status(self) -> None:
        """The Status, in one message, once the output streams are done (it must reach the user last)."""
        status, stream = b"", self.streams[ERROR]
        while data := await stream.read():
            status += data
        await asyncio.gather(*self._outputs, return_exceptions=True)
        if status:
            self._messages.put_nowait((ERROR, status))

    async def _watch_end(self) -> None:
        """Server side: the peer is gone when the session ends; client side: the command is over when every
        stream it writes is finished."""
        if self.server:
            await self.session.closed.wait()
        else:
            await asyncio.gather(*[task for task in self._tasks if task is not asyncio.current_task()],
                                 return_exceptions=True)
        self._messages.put_nowait(None)

    async def receive(self) -> tuple[int, bytes] | None:
        message = await self._messages.get()
        if message is None:
            self._messages.put_nowait(None)
        return message

    async def send(self, channel: int, data: bytes) -> None:
        if channel == CLOSE:
            stream = self.streams.get(data[0]) if data else None
            if stream is not None:
                await stream.close()
            return
        stream = self.streams.get(channel)
        if stream is not None:
            with contextlib.suppress(ConnectionError):
                await stream.write(data)

    async def close(self) -> None:
        for stream in self.streams.values():
            await stream.close()
        await self.session.close()
        for task in self._tasks:
            task.cancel()


# the bridge --------------------------------------------------------------------------------------------


async def bridge(downstream: Channels, upstream: Channels) -> None:
    """Relay a command between the user's side (`downstream`, a server side) and the side that runs it
    (`upstream`, a client side) until the command is over or the user has gone; then close both."""
    async def up() -> None:
        while (message := await downstream.receive()) is not None:
            await upstream.send(*message)

    async def down() -> None:
        while (message := await upstream.receive()) is not None:
            await downstream.send(*message)

    tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await upstream.close()
        await downstream.close()

"""A SPDY/3.1 session: streams multiplexed over one `ByteStream`, for either end of the connection.

    session = SpdySession(transport, client=True)      # the side that sent the upgrade request
    session.start()
    stream = await session.open({"streamtype": "error"})  # SYN_STREAM, waits for the SYN_REPLY
    await stream.write(b"..."); await stream.close()      # DATA; DATA with FIN (half-close)
    data = await stream.read()                            # b"" once the peer sent FIN (or reset it)

    incoming = await session.accept()                     # a stream the peer opened (None: session over)

Clients number their streams 1, 3, 5...; servers 2, 4, 6... A stream the peer opens is accepted at once
(SYN_REPLY), as kube's servers do. PINGs are echoed. No flow control: like Go's spdystream (kubectl,
the kubelet, containerd), WINDOW_UPDATE is ignored and never sent. The session ends when the transport
reaches EOF, when either side sends GOAWAY, or on `close()`; then every stream reads b"".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from . import spdy
from .transport import ByteStream

log = logging.getLogger(__name__)


class SpdyStream:
    def __init__(self, session: SpdySession, stream_id: int, headers: spdy.Headers) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self.replied = asyncio.Event()
        self._data: asyncio.Queue[bytes] = asyncio.Queue()
        self._remote_closed = False
        self._local_closed = False

    async def read(self) -> bytes:
        """The next data; b"" (every time) once the peer has finished the stream."""
        data = await self._data.get()
        if not data:
            self._data.put_nowait(b"")  # later reads see the end too
        return data

    async def write(self, data: bytes) -> None:
        if self._local_closed:
            raise ConnectionResetError(f"SPDY stream {self.id} is closed")
        await self.session.send(spdy.DataFrame(self.id, data))

    async def close(self) -> None:
        """Half-close: FIN, we send nothing more (the peer may go on sending)."""
        if not self._local_closed:
            self._local_closed = True
            with contextlib.suppress(ConnectionError):
                await self.session.send(spdy.DataFrame(self.id, b"", fin=True))

    async def reset(self, status: int = spdy.CANCEL) -> None:
        self._local_closed = True
        self._remote_finished()
        with contextlib.suppress(ConnectionError):
            await self.session.send(spdy.RstStream(self.id, status))

    def _received(self, data: bytes, fin: bool) -> None:
        if self._remote_closed:
            return
        if data:
            self._data.put_nowait(data)
        if fin:
            self._remote_finished()

    def _remote_finished(self) -> None:
        if not self._remote_closed:
            self._remote_closed = True
            self._data.put_nowait(b"")


class SpdySession:
    def __init__(self, transport: ByteStream, *, client: bool) -> None:
        self.transport = transport
        self.client = client
        self.streams: dict[int, SpdyStream] = {}
        self.closed = asyncio.Event()
        self._codec = spdy.FrameCodec()
        self._next_id = 1 if client else 2
        self._incoming: asyncio.Queue[SpdyStream | None] = asyncio.Queue()
        self._write_lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self._last_peer_id = 0

    def start(self) -> SpdySession:
        self._reader = asyncio.get_running_loop().create_task(self._read_frames())
        return self

    async def send(self, frame: spdy.Frame) -> None:
        """Write one frame (encoding and writing under one lock: the header compressor is stateful)."""
        if self.closed.is_set():
            raise ConnectionResetError("SPDY session closed")
        async with self._write_lock:
            await self.transport.write(self._codec.encode(frame))

    async def open(self, headers: spdy.Headers, *, fin: bool = False) -> SpdyStream:
        """Open a stream and wait for the peer to accept it. Raises ConnectionError if the session ends or
        the peer resets the stream instead."""
        stream = SpdyStream(self, self._next_id, headers)
        self._next_id += 2
        self.streams[stream.id] = stream
        if fin:
            stream._local_closed = True
        await self.send(spdy.SynStream(stream.id, headers, fin=fin))
        replied = asyncio.ensure_future(stream.replied.wait())
        ended = asyncio.ensure_future(self.closed.wait())
        try:
            await asyncio.wait([replied, ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            replied.cancel()
            ended.cancel()
        if not stream.replied.is_set():
            raise ConnectionResetError(f"SPDY session closed before stream {stream.id} was accepted")
        return stream

    async def accept(self) -> SpdyStream | None:
        """The next stream the peer opened, or None once the session is over."""
        stream = await self._incoming.get()
        if stream is None:
            self._incoming.put_nowait(None)
        return stream

    async def close(self) -> None:
        """Say GOAWAY, close the transport and end every stream."""
        if not self.closed.is_set():
            with contextlib.suppress(ConnectionError):
                await self.send(spdy.GoAway(self._last_peer_id))
        self._finish()
        await self.transport.close()
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    def _finish(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for stream in self.streams.values():
            stream._remote_finished()
        self._incoming.put_nowait(None)

    async def _read_frames(self) -> None:
        try:
            while data := await self.transport.read():
                for frame in self._codec.feed(data):
                    await self._handle(frame)
        except spdy.ProtocolError as err:
            log.warning("closing SPDY session: %s", err)
        except ConnectionError:
            pass
        finally:
            self._finish()
            await self.transport.close()

    async def _handle(self, frame: spdy.Frame) -> None:
        match frame:
            case spdy.DataFrame(stream_id, data, fin):
                stream = self.streams.get(stream_id)
                if stream is not None:
                    stream._received(data, fin)
            case spdy.SynStream(stream_id, headers, fin):
                stream = SpdyStream(self, stream_id, headers)
                self.streams[stream_id] = stream
                self._last_peer_id = stream_id
                stream.replied.set()
                await self.send(spdy.SynReply(stream_id))
                if fin:
                    stream._remote_finished()
                self._incoming.put_nowait(stream)
            case spdy.SynReply(stream_id, _, fin):
                stream = self.streams.get(stream_id)
                if stream is not None:
                    stream.replied.set()
                    if fin:
                        stream._remote_finished()
            case spdy.RstStream(stream_id, _):
                stream = self.streams.get(stream_id)
                if stream is not None:
                    stream._local_closed = True
                    stream._remote_finished()
            case spdy.Ping(ping_id):
                if ping_id % 2 != self._next_id % 2:  # the peer's ping (ours would have our parity)
                    await self.send(frame)
            case spdy.GoAway():
                self._finish()

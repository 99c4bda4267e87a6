"""Byte streams a SPDY session can run over: a raw (upgraded) connection, or a WebSocket used as a pipe.

A SPDY session needs only "read some bytes, write some bytes, close" (`ByteStream`). Two things provide
that here:

* `SocketStream`: an asyncio reader/writer pair, for a connection upgraded with `Upgrade: SPDY/3.1`
  (kubectl's fallback, the apiserver → kubelet leg, the kubelet → containerd leg);
* `StarletteWebSocketStream`: the server side of kubectl's port-forward tunnel, a WebSocket whose binary
  messages are consecutive pieces of one SPDY byte stream (the Go client writes a frame in several
  messages, so message boundaries mean nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

from starlette.websockets import WebSocket, WebSocketDisconnect


class ByteStream(Protocol):
    async def read(self) -> bytes:
        """The next bytes that arrived; b"" once the peer has closed the connection."""
        ...

    async def write(self, data: bytes) -> None:
        """Send `data`. Raises ConnectionError once the connection is gone."""
        ...

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        ...


READ_SIZE = 64 * 1024


class SocketStream:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read(self) -> bytes:
        try:
            return await self.reader.read(READ_SIZE)
        except (ConnectionError, OSError):
            return b""

    async def write(self, data: bytes) -> None:
        if self.writer.is_closing():
            raise ConnectionResetError("connection closed")
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
        with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
            await self.writer.wait_closed()


class StarletteWebSocketStream:
    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket
        self.closed = False

    async def read(self) -> bytes:
        while not self.closed:
            try:
                message = await self.websocket.receive()
            except (WebSocketDisconnect, RuntimeError):
                break
            if message["type"] == "websocket.disconnect":
                break
            if message.get("bytes"):
                return bytes(message["bytes"])
        self.closed = True
        return b""

    async def write(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionResetError("websocket closed")
        try:
            await self.websocket.send_bytes(data)
        except (WebSocketDisconnect, RuntimeError) as err:
            self.closed = True
            raise ConnectionResetError("websocket closed") from err

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                await self.websocket.close(1000)

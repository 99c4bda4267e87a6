"""An in-memory connection for protocol tests: two ByteStreams, each reading what the other writes."""

from __future__ import annotations

import asyncio


class MemoryStream:
    def __init__(self, incoming: asyncio.Queue[bytes], outgoing: asyncio.Queue[bytes]) -> None:
        self.incoming, self.outgoing = incoming, outgoing
        self.closed = False
        self.written: list[bytes] = []

    async def read(self) -> bytes:
        data = await self.incoming.get()
        if not data:
            self.incoming.put_nowait(b"")
        return data

    async def write(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionResetError("closed")
        self.written.append(data)
        self.outgoing.put_nowait(data)

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.outgoing.put_nowait(b"")
            self.incoming.put_nowait(b"")


def memory_pipe() -> tuple[MemoryStream, MemoryStream]:
    a_to_b: asyncio.Queue[bytes] = asyncio.Queue()
    b_to_a: asyncio.Queue[bytes] = asyncio.Queue()
    return MemoryStream(b_to_a, a_to_b), MemoryStream(a_to_b, b_to_a)

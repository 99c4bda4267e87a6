"""Remote commands over SPDY as channel messages, and the bridge between two hops (in memory)."""

from __future__ import annotations

import asyncio

import pytest

from minikube_py.streaming import channels
from minikube_py.streaming.channels import CLOSE, ERROR, RESIZE, STDERR, STDIN, STDOUT
from minikube_py.streaming.remotecommand import SpdyChannels, StreamOptions, bridge
from minikube_py.streaming.session import SpdySession
from tests.streaming.memory import memory_pipe

INTERACTIVE = StreamOptions(stdin=True, stdout=True, stderr=False, tty=True)
PLAIN = StreamOptions(stdin=True, stdout=True, stderr=True, tty=False)


async def command_pair(options: StreamOptions) -> tuple[SpdyChannels, SpdyChannels]:
    """(client side, server side) of one command."""
    client_end, server_end = memory_pipe()
    client = SpdySession(client_end, client=True).start()
    server = SpdySession(server_end, client=False).start()
    accepted = asyncio.ensure_future(SpdyChannels.accept(server, options, timeout=5))
    opened = await SpdyChannels.open(client, options)
    return opened, await accepted


async def test_streams_are_opened_error_first_with_kubes_stream_types() -> None:
    client, server = await command_pair(INTERACTIVE)
    assert [(s.id, s.headers["streamtype"]) for s in client.streams.values()] == [
        (1, "error"), (3, "stdin"), (5, "stdout"), (7, "resize")]
    assert sorted(server.streams) == [STDIN, STDOUT, ERROR, RESIZE]
    await client.close()


async def test_stdin_eof_reaches_the_server_as_a_close_message() -> None:
    client, server = await command_pair(PLAIN)
    await client.send(STDIN, b"hello\n")
    await client.send(CLOSE, bytes([STDIN]))
    assert await server.receive() == (STDIN, b"hello\n")
    assert await server.receive() == (CLOSE, bytes([STDIN]))
    await client.close()
    assert await server.receive() is None


async def test_resizes_arrive_one_message_per_event_however_the_stream_splits_them() -> None:
    client, server = await command_pair(INTERACTIVE)
    await client.streams[RESIZE].write(b'{"Width":100,"Height":30}{"Width"')
    await client.streams[RESIZE].write(b':80,"Height":24}')
    assert await server.receive() == (RESIZE, channels.TerminalSize(100, 30).encode())
    assert await server.receive() == (RESIZE, channels.TerminalSize(80, 24).encode())
    await client.close()


async def test_the_status_reaches_the_client_after_all_output_then_the_end() -> None:
    client, server = await command_pair(PLAIN)
    status = channels.status_bytes(channels.exit_code_status(3))
    await server.send(STDOUT, b"out\n")
    await server.send(ERROR, status[:10])
    await server.send(STDERR, b"err\n")
    await server.send(ERROR, status[10:])
    await server.close()
    received = [await client.receive() for _ in range(4)]
    assert received[:2] in ([(STDOUT, b"out\n"), (STDERR, b"err\n")], [(STDERR, b"err\n"), (STDOUT, b"out\n")])
    assert received[2:] == [(ERROR, status), None]


async def test_a_client_that_never_opens_its_streams_times_out() -> None:
    client_end, server_end = memory_pipe()
    SpdySession(client_end, client=True).start()
    server = SpdySession(server_end, client=False).start()
    with pytest.raises(TimeoutError):
        await SpdyChannels.accept(server, PLAIN, timeout=0.2)
    await server.close()


class FakeChannels:
    """A scripted end: yields `incoming`, records what is sent."""

    def __init__(self, incoming: list[tuple[int, bytes]], *, then_wait: bool = False) -> None:
        self.incoming = list(incoming)
        self.sent: list[tuple[int, bytes]] = []
        self.closed = asyncio.Event()
        self.then_wait = then_wait

    async def receive(self) -> tuple[int, bytes] | None:
        if self.incoming:
            return self.incoming.pop(0)
        if self.then_wait:
            await self.closed.wait()
        return None

    async def send(self, channel: int, data: bytes) -> None:
        self.sent.append((channel, data))

    async def close(self) -> None:
        self.closed.set()


async def test_bridge_relays_both_ways_and_closes_both_ends_when_the_command_is_over() -> None:
    user = FakeChannels([(STDIN, b"in"), (CLOSE, b"\x00")], then_wait=True)
    runtime = FakeChannels([(STDOUT, b"out"), (ERROR, b"{}")])
    await asyncio.wait_for(bridge(user, runtime), 5)
    assert user.sent == [(STDOUT, b"out"), (ERROR, b"{}")]
    assert set(runtime.sent) <= {(STDIN, b"in"), (CLOSE, b"\x00")}
    assert user.closed.is_set() and runtime.closed.is_set()


async def test_bridge_hangs_up_upstream_when_the_user_goes_away() -> None:
    user = FakeChannels([])
    runtime = FakeChannels([], then_wait=True)
    await asyncio.wait_for(bridge(user, runtime), 5)
    assert runtime.closed.is_set()

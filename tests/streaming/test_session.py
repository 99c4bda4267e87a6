"""SPDY sessions over an in-memory connection: streams, half-close, reset, ping, goaway."""

from __future__ import annotations

import asyncio

import pytest

from minikube_py.streaming import spdy
from minikube_py.streaming.session import SpdySession
from tests.streaming.memory import memory_pipe


def sessions() -> tuple[SpdySession, SpdySession]:
    client_end, server_end = memory_pipe()
    return SpdySession(client_end, client=True).start(), SpdySession(server_end, client=False).start()


async def test_a_stream_opened_by_the_client_is_accepted_and_carries_data_both_ways() -> None:
    client, server = sessions()
    stream = await client.open({"streamtype": "data", "port": "80"})
    assert stream.id == 1
    accepted = await server.accept()
    assert accepted is not None and accepted.headers == {"streamtype": "data", "port": "80"}
    await stream.write(b"ping")
    assert await accepted.read() == b"ping"
    await accepted.write(b"pong")
    await accepted.close()
    assert await stream.read() == b"pong"
    assert await stream.read() == b"" and await stream.read() == b""  # FIN, and it stays finished
    await stream.write(b"half-closed the other way only")
    assert await accepted.read() == b"half-closed the other way only"
    await client.close()
    assert await server.accept() is None


async def test_server_streams_have_even_ids_and_client_ids_are_odd() -> None:
    client, server = sessions()
    assert (await client.open({})).id == 1 and (await client.open({})).id == 3
    assert (await server.open({})).id == 2
    await client.close()


async def test_a_reset_stream_ends_reads_on_both_sides() -> None:
    client, server = sessions()
    stream = await client.open({})
    accepted = await server.accept()
    assert accepted is not None
    await accepted.reset()
    assert await stream.read() == b"" and await accepted.read() == b""
    with pytest.raises(ConnectionResetError):
        await stream.write(b"x")
    await client.close()


async def test_the_peers_pings_are_echoed() -> None:
    client_end, server_end = memory_pipe()
    server = SpdySession(server_end, client=False).start()
    codec = spdy.FrameCodec()
    await client_end.write(codec.encode(spdy.Ping(1)))
    assert codec.feed(await client_end.read()) == [spdy.Ping(1)]
    await server.close()


async def test_goaway_ends_the_session_and_every_stream() -> None:
    client, server = sessions()
    stream = await client.open({})
    await server.send(spdy.GoAway(1))
    await asyncio.wait_for(client.closed.wait(), 5)
    assert await stream.read() == b""
    await server.close()


async def test_opening_a_stream_on_a_dead_session_fails() -> None:
    client_end, server_end = memory_pipe()
    client = SpdySession(client_end, client=True).start()
    await server_end.close()
    await asyncio.wait_for(client.closed.wait(), 5)
    with pytest.raises(ConnectionResetError):
        await client.open({})


async def test_garbage_on_the_wire_closes_the_session() -> None:
    client_end, server_end = memory_pipe()
    server = SpdySession(server_end, client=False).start()
    await client_end.write(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")  # SPDY/2
    await asyncio.wait_for(server.closed.wait(), 5)
    assert await server.accept() is None

"""The local cloud's TCP proxy with real sockets on loopback: round-robin, failover, health checks, half-close,
flow control, and the errors a bind can give."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
import uvloop

from minikube_py.ccm.cloud.local.proxy import ListenError, TCPProxy
from minikube_py.store.etcd_server import free_port
from tests.kcm.running import wait_for

LB_ADDRESS = "127.0.121.1"


@contextlib.asynccontextmanager
async def named_server(name: str, port: int | None = None, host: str = "127.0.0.1"
                       ) -> AsyncIterator[tuple[str, int]]:
    """A backend on `host` that answers every chunk it reads with `<name>:<chunk>`, and once the client has
    finished sending, with `<name>:bye` before closing; yields its (ip, port)."""
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(name.encode() + b":" + data)
        writer.write(name.encode() + b":bye")
        writer.close()

    server = await asyncio.start_server(answer, host, port or 0)
    try:
        yield host, server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def ask(address: str, port: int, data: bytes = b"hi") -> bytes:
    """Send `data` through a new connection; the first answer (b"" when the connection is closed)."""
    reader, writer = await asyncio.open_connection(address, port)
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(65536), 5)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def proxy_to(*backends: tuple[str, int], interval: float = 60.0, connect_timeout: float = 1.0,
                   health_check_timeout: float = 2.5) -> AsyncIterator[TCPProxy]:
    proxy = TCPProxy(LB_ADDRESS, free_port(), health_check_interval=interval, connect_timeout=connect_timeout,
                     health_check_timeout=health_check_timeout)
    proxy.set_backends(backends)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()


def closed_port() -> tuple[str, int]:
    return "127.0.0.1", free_port()


@contextlib.contextmanager
def gone_silent() -> Iterator[tuple[str, int]]:
    """A backend that no longer answers at all, like a pod on a node cut off from the network: its listen
    queue (of length 0) is full, so the kernel drops new SYNs and a connect neither succeeds nor is refused."""
    with socket.create_server(("127.0.0.1", 0), backlog=0) as server, socket.create_connection(server.getsockname()):
        yield "127.0.0.1", server.getsockname()[1]


async def test_connections_are_spread_round_robin_over_the_backends() -> None:
    async with named_server("a") as a, named_server("b") as b, proxy_to(a, b) as proxy:
        answers = [await ask(LB_ADDRESS, proxy.port) for _ in range(4)]
    assert answers == [b"a:hi", b"b:hi", b"a:hi", b"b:hi"]


async def test_a_refused_connection_fails_over_to_the_next_backend_and_marks_it_unhealthy() -> None:
    dead = closed_port()
    async with named_server("live") as live, proxy_to(dead, live) as proxy:
        answers = [await ask(LB_ADDRESS, proxy.port) for _ in range(3)]
        assert proxy.healthy == [live]
    assert answers == [b"live:hi"] * 3


async def test_health_checks_mark_backends_down_and_up_again() -> None:
    dead = closed_port()
    async with named_server("a") as a, proxy_to(a, dead) as proxy:
        assert proxy.healthy == [a, dead], "new backends count as healthy until checked"
        await proxy.check_health()
        assert proxy.healthy == [a, dead], "one failed check may be a lost SYN: not down yet"
        await proxy.check_health()
        assert proxy.healthy == [a]
        async with named_server("revived", port=dead[1]):
            await proxy.check_health()
            assert proxy.healthy == [a, dead]
            assert {await ask(LB_ADDRESS, proxy.port) for _ in range(2)} == {b"a:hi", b"revived:hi"}


async def test_a_backend_that_stopped_answering_gets_no_traffic_once_its_health_checks_fail() -> None:
    """A NotReady node stays a backend (the service controller does not look at readiness, as in kube 1.32):
    the load balancer's own checks are what keep traffic off it. Here, off a pod that stopped answering."""
    async with named_server("live") as live:
        with gone_silent() as silent:
            async with proxy_to(silent, live, connect_timeout=5.0, health_check_timeout=0.2) as proxy:
                await proxy.check_health()
                assert proxy.healthy == [silent, live], "one failed check may be a lost SYN: not down yet"
                await proxy.check_health()
                assert proxy.healthy == [live]
                async with asyncio.timeout(2):  # one try at the silent backend would take its 5 s connect timeout
                    answers = [await ask(LB_ADDRESS, proxy.port) for _ in range(4)]
    assert answers == [b"live:hi"] * 4


async def test_when_every_backend_fails_its_checks_all_are_still_tried() -> None:
    async with named_server("slow-to-check") as backend, proxy_to(backend) as proxy:
        proxy.mark(backend, False)  # a wrong verdict, e.g. checks lost under load
        assert proxy.healthy == []
        assert await ask(LB_ADDRESS, proxy.port) == b"slow-to-check:hi"  # fail open, as clouds' NLBs do


async def test_health_checks_run_every_interval() -> None:
    dead = closed_port()
    async with named_server("a") as a, proxy_to(a, dead, interval=0.05) as proxy:
        await wait_for(lambda: proxy.healthy == [a], 5, "the periodic check to mark the dead backend")


async def test_without_backends_the_client_connection_is_closed() -> None:
    async with proxy_to() as proxy:
        assert await ask(LB_ADDRESS, proxy.port) == b""
    async with proxy_to(closed_port()) as proxy:
        assert await ask(LB_ADDRESS, proxy.port) == b"", "every backend refusing is the same as none"


async def test_changed_backends_apply_to_new_connections() -> None:
    async with named_server("a") as a, named_server("b") as b, proxy_to(a) as proxy:
        assert await ask(LB_ADDRESS, proxy.port) == b"a:hi"
        proxy.set_backends([b])
        assert [await ask(LB_ADDRESS, proxy.port) for _ in range(2)] == [b"b:hi", b"b:hi"]


async def test_a_half_close_is_passed_on_and_the_answer_still_arrives() -> None:
    async with named_server("a") as a, proxy_to(a) as proxy:
        reader, writer = await asyncio.open_connection(LB_ADDRESS, proxy.port)
        writer.write(b"last words")
        writer.write_eof()
        answer = await asyncio.wait_for(reader.read(), 5)  # until the backend closes: it saw our FIN
        writer.close()
    assert answer == b"a:last wordsa:bye"


async def test_large_transfers_arrive_whole_in_both_directions() -> None:
    payload = bytes(range(256)) * 16384  # 4 MiB: more than the socket buffers, so flow control kicks in
    async with named_server("a") as a, proxy_to(a) as proxy:
        reader, writer = await asyncio.open_connection(LB_ADDRESS, proxy.port)
        writer.write(payload)
        writer.write_eof()
        received = await asyncio.wait_for(reader.read(), 20)
        writer.close()
    assert received.replace(b"a:", b"").removesuffix(b"bye") == payload


async def test_closing_the_proxy_drops_open_connections_and_stops_listening() -> None:
    async with named_server("a") as a:
        async with proxy_to(a) as proxy:
            reader, writer = await asyncio.open_connection(LB_ADDRESS, proxy.port)
            writer.write(b"hi")
            assert await reader.read(100) == b"a:hi"
        with contextlib.suppress(ConnectionResetError):
            assert await asyncio.wait_for(reader.read(100), 5) == b""
        writer.close()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection(LB_ADDRESS, proxy.port)


async def test_a_port_in_use_is_an_error_naming_the_address_and_the_reason() -> None:
    with socket.create_server((LB_ADDRESS, 0)) as taken:
        port = taken.getsockname()[1]
        proxy = TCPProxy(LB_ADDRESS, port, health_check_interval=60)
        with pytest.raises(ListenError, match=rf"cannot listen on {LB_ADDRESS}:{port}: address already in use"):
            await proxy.start()


async def test_an_address_not_on_this_host_is_an_error() -> None:
    proxy = TCPProxy("192.0.2.1", 80, health_check_interval=60)
    with pytest.raises(ListenError, match=r"192\.0\.2\.1:80: .*not an address of this host"):
        await proxy.start()


def test_the_proxy_works_on_uvloop_too() -> None:
    """uvloop starts reading a new connection even when connection_made paused it: bytes that come before
    the backend connection must wait for it, not be lost."""
    async def scenario() -> bytes:
        async with named_server("a") as a, proxy_to(a) as proxy:
            reader, writer = await asyncio.open_connection(LB_ADDRESS, proxy.port)
            writer.write(b"early")
            writer.write_eof()
            answer = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            return answer

    assert uvloop.run(scenario()) == b"a:earlya:bye"

"""Benchmark: HTTP requests through a local-cloud load balancer ÷ the same requests straight to the backend.
Target ≥ 0.5.

What is measured: GETs per second of a 1 KB response, closed loop, 16 concurrent clients (see common.run_load),
each on one HTTP/1.1 connection kept alive as long as the server allows (busybox httpd answers every request
with `Connection: close`, so against it each request is a new connection, as it is for a busybox pod):

* direct: the clients connect to the backend itself (as they would to a pod IP);
* load balancer: the clients connect to a `TCPProxy` from minikube_py/ccm/cloud/local/proxy.py listening on
  a load-balancer address (127.0.100.254), with the backend as its only backend. The proxy runs in a process
  of its own on the standard asyncio event loop, as it does inside `mkpy ccm` (`--uvloop`: on uvloop); it
  is the load balancer's whole data path (LocalLoadBalancers only decides which backends a proxy has).

The backend is a real HTTP server process: `busybox httpd` serving a 1 KB file when busybox is on PATH
(`--server busybox`), else (`--server asyncio`) a small keep-alive HTTP server on uvloop in this file. Or
`--backend IP:PORT` points both sides at a server that is already running, a pod IP for instance (it must
answer `GET --path` with 200 and a Content-Length). Both sides are measured in alternating rounds with the
same client; figures are medians, with each process's CPU share to show who was the bottleneck.

    python -m bench.lb_throughput [--seconds 3] [--rounds 3] [--concurrency 16] [--processes 1]
                                  [--server busybox|asyncio | --backend IP:PORT [--path /]] [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import uvloop

from bench.common import HTTPError, Load, Op, Side, compare, verdict
from minikube_py.ccm.cloud.local.proxy import TCPProxy
from minikube_py.store.etcd_server import free_port

TARGET = 0.5
BODY = b"x" * 1024
LB_ADDRESS = "127.0.100.254"
READY_TIMEOUT = 10.0


# the client ---------------------------------------------------------------------------------------------

class HTTPConnection:
    """Plain HTTP/1.1 GETs, one at a time, on one connection, reopened whenever the server closes it."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self._address = (host, port)
        self._request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def get(self) -> bytes:
        if self._streams is None:
            self._streams = await asyncio.open_connection(*self._address)
        reader, writer = self._streams
        writer.write(self._request)
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        if not head.startswith(b"http/1.1 200"):
            raise HTTPError(f"GET {self._address}: {head[:200]!r}")
        start = head.index(b"content-length:") + len(b"content-length:")
        body = await reader.readexactly(int(head[start:head.index(b"\r\n", start)]))
        if b"connection: close" in head:
            self.close()
        return body

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


@asynccontextmanager
async def http_gets(host: str, port: int, path: str) -> AsyncIterator[Op]:
    """A session whose op GETs `path`; one connection per concurrent op."""
    idle: list[HTTPConnection] = []

    async def get(_: str) -> None:
        connection = idle.pop() if idle else HTTPConnection(host, port, path)
        try:
            await connection.get()
        except BaseException:
            connection.close()
            raise
        idle.append(connection)

    try:
        yield get
    finally:
        for connection in idle:
            connection.close()


# the servers ---------------------------------------------------------------------------------------------

class _KeepAliveHTTP(asyncio.Protocol):
    """Answers every GET with 200 and BODY, keeping the connection open (requests without bodies only)."""

    RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(BODY)) + BODY

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.pending = b""

    def data_received(self, data: bytes) -> None:
        self.pending += data
        requests = self.pending.count(b"\r\n\r\n")
        if requests:
            self.pending = self.pending[self.pending.rindex(b"\r\n\r\n") + 4:]
            self.transport.write(self.RESPONSE * requests)  # type: ignore[attr-defined]


def _serve_asyncio(port: int) -> None:
    async def serve() -> None:
        server = await asyncio.get_running_loop().create_server(_KeepAliveHTTP, "127.0.0.1", port, backlog=1024)
        await server.serve_forever()

    uvloop.run(serve())


def _serve_proxy(address: str, port: int, backend: tuple[str, int], on_uvloop: bool) -> None:
    async def serve() -> None:
        proxy = TCPProxy(address, port, health_check_interval=2.0)
        proxy.set_backends([backend])
        await proxy.start()
        await asyncio.Event().wait()

    (uvloop.run if on_uvloop else asyncio.run)(serve())


@contextmanager
def backend_server(kind: str) -> Iterator[tuple[tuple[str, int], int | None, str]]:
    """Start the backend: its address, pid and a description."""
    port = free_port()
    if kind == "busybox":
        with tempfile.TemporaryDirectory(prefix="lb-bench-") as root:
            (Path(root) / "index.html").write_bytes(BODY)
            process = subprocess.Popen(["busybox", "httpd", "-f", "-p", f"127.0.0.1:{port}", "-h", root])
            try:
                wait_listening(("127.0.0.1", port))
                yield ("127.0.0.1", port), process.pid, "busybox httpd (a new connection per request)"
            finally:
                process.terminate()
                process.wait()
        return
    with child(_serve_asyncio, port) as pid:
        wait_listening(("127.0.0.1", port))
        yield ("127.0.0.1", port), pid, "asyncio HTTP server on uvloop (keep-alive)"


@contextmanager
def child(target: Any, *args: object) -> Iterator[int]:
    process = multiprocessing.get_context("spawn").Process(target=target, args=args, daemon=True)
    process.start()
    try:
        assert process.pid is not None
        yield process.pid
    finally:
        process.terminate()
        process.join()


def wait_listening(address: tuple[str, int]) -> None:
    async def probe() -> bool:
        try:
            _, writer = await asyncio.open_connection(*address)
        except OSError:
            return False
        writer.close()
        return True

    deadline = time.monotonic() + READY_TIMEOUT
    while not asyncio.run(probe()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on {address[0]}:{address[1]} after {READY_TIMEOUT:g} s")
        time.sleep(0.05)


# the comparison ------------------------------------------------------------------------------------------

def parse() -> tuple[Load, int, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each measurement")
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each side, alternating")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent clients")
    parser.add_argument("--processes", type=int, default=1, help="client processes sharing the clients")
    parser.add_argument("--server", choices=("busybox", "asyncio"),
                        default="busybox" if shutil.which("busybox") else "asyncio",
                        help="the backend to start (default: busybox httpd when busybox is on PATH)")
    parser.add_argument("--backend", metavar="IP:PORT", help="a running HTTP server to use as the backend instead")
    parser.add_argument("--path", default="/", help="the path to GET")
    parser.add_argument("--uvloop", action="store_true",
                        help="run the proxy on uvloop (mkpy ccm runs it on the standard asyncio loop)")
    args = parser.parse_args()
    return Load(args.concurrency, args.processes, args.seconds), args.rounds, args


@contextmanager
def backend(args: argparse.Namespace) -> Iterator[tuple[tuple[str, int], int | None, str]]:
    if args.backend:
        host, _, port = args.backend.rpartition(":")
        yield (host, int(port)), None, f"{args.backend} (given)"
    else:
        with backend_server(args.server) as started:
            yield started


def main() -> None:
    load, rounds, args = parse()
    with backend(args) as (address, backend_pid, description):
        lb_port = free_port()
        with child(_serve_proxy, LB_ADDRESS, lb_port, address, args.uvloop) as proxy_pid:
            wait_listening((LB_ADDRESS, lb_port))
            print(f"lb_throughput: {load.concurrency} concurrent clients in {load.processes} process(es), "
                  f"{rounds} rounds of {load.seconds:g} s; {len(BODY)} B responses from {description}; "
                  f"proxy on {'uvloop' if args.uvloop else 'the asyncio event loop'}", flush=True)
            sides = [Side("direct", http_gets, (*address, args.path)),
                     Side("load balancer", http_gets, (LB_ADDRESS, lb_port, args.path))]
            pids = {"proxy": proxy_pid, **({"backend": backend_pid} if backend_pid else {})}
            rates = compare(load, rounds, sides, pids, "GET")
    verdict("lb: through a local load balancer / direct", rates["load balancer"] / rates["direct"], TARGET,
            at_least=True)


if __name__ == "__main__":
    main()

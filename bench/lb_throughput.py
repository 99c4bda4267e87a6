"""Benchmark (issue 8): HTTP requests through a local-cloud load balancer ÷ the same requests straight to a pod
IP, in the same run. Target ≥ 0.5.

What is measured: GETs per second of a 1 KB response, closed loop, 16 concurrent clients (see common.run_load),
each on one HTTP/1.1 connection kept alive as long as the server allows (busybox httpd answers every request
with `Connection: close`, so against it each request is a new connection), the two sides in alternating
rounds with the same client; figures are medians, with each process's CPU share to show the bottleneck.

Default: the real thing. `mkpy up --nodes 1` (one containerd node) in a private MKPY_HOME and HOME; in it a
Deployment of busybox httpd pods serving a 1 KB file on port 8080, and a `type: LoadBalancer` Service (port 80
→ 8080). Once the pods are Ready and the service controller has set `status.loadBalancer.ingress`:

* direct: the clients connect to the first pod's IP, port 8080;
* load balancer: the clients connect to the Service's EXTERNAL-IP, port 80, where the local cloud's proxy (an
  asyncio TCP proxy inside the `mkpy ccm` process, minikube_py/ccm/cloud/local/proxy.py) forwards every
  connection to one of the Service's ready endpoints.

With the default one replica both sides reach the same busybox httpd, so the ratio is the cost of the extra
hop alone; with `--replicas N` the load balancer spreads over N pods (on the same two cores) while the
direct side still hits one. The cluster is deleted at the end, whatever happens.

`--proxy-only`: no cluster; a `TCPProxy` in a process of its own on the standard asyncio event loop, as in
`mkpy ccm` (`--uvloop`: on uvloop), listening on 127.0.100.254 in front of a backend started here: `busybox
httpd` serving the 1 KB file when busybox is on PATH (`--server busybox`), else (`--server asyncio`) a small
keep-alive HTTP server on uvloop in this file; or `--backend IP:PORT`, a server already running (it must
answer `GET --path` with 200 and a Content-Length).

    python -m bench.lb_throughput [--seconds 3] [--rounds 4] [--concurrency 16] [--processes 1] [--replicas 1]
    python -m bench.lb_throughput --proxy-only [--server busybox|asyncio | --backend IP:PORT [--path /]] [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import uvloop

from bench.common import HTTPError, Load, MkpyHome, Op, Side, compare, verdict
from minikube_py.ccm.cloud.local.proxy import TCPProxy
from minikube_py.store.etcd_server import free_port

TARGET = 0.5
BODY = b"x" * 1024
LB_ADDRESS = "127.0.100.254"
RETRY_DELAY = 0.01  # seconds before a GET that got no response is tried again
READY_TIMEOUT = 10.0  # seconds a server has to answer once it should
SETUP_TIMEOUT = 180.0  # seconds the pods have to be Ready and the Service to get its address
CLUSTER = "lbbench"
NAMESPACE = "default"
APP = "lb-bench-web"


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
    """A session whose op GETs `path`; one connection per concurrent op. A GET whose connection is closed or
    reset before the response is tried again on a new connection after RETRY_DELAY (only answered GETs count);
    the session says at its end how many there were."""
    idle: list[HTTPConnection] = []
    failed = 0

    async def get(_: str) -> None:
        nonlocal failed
        while True:
            connection = idle.pop() if idle else HTTPConnection(host, port, path)
            try:
                await connection.get()
            except (ConnectionError, asyncio.IncompleteReadError):
                connection.close()
                failed += 1
                await asyncio.sleep(RETRY_DELAY)
                continue
            except BaseException:
                connection.close()
                raise
            idle.append(connection)
            return

    try:
        yield get
    finally:
        for connection in idle:
            connection.close()
        if failed:
            print(f"    {host}:{port}: {failed} GETs got no response (connection closed or reset) and were retried",
                  flush=True)


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


# the cluster ---------------------------------------------------------------------------------------------

def web_deployment(replicas: int) -> dict[str, Any]:
    script = (f"mkdir -p /www && head -c {len(BODY)} /dev/zero | tr '\\0' x > /www/index.html "
              "&& exec httpd -f -p 8080 -h /www")
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": APP},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": APP}},
                     "template": {"metadata": {"labels": {"app": APP}},
                                  "spec": {"terminationGracePeriodSeconds": 0,
                                           "containers": [{"name": "httpd", "image": "busybox",
                                                           "command": ["sh", "-c", script],
                                                           "ports": [{"name": "http", "containerPort": 8080}]}]}}}}


def web_service() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": APP},
            "spec": {"type": "LoadBalancer", "selector": {"app": APP},
                     "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}


def is_ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


async def deploy(kubeconfig: Path, replicas: int) -> tuple[list[str], str]:
    """Create the Deployment and the LoadBalancer Service; once the pods are Ready and the Service has an
    ingress address: the pods' IPs and that address."""
    from minikube_py.client import resources
    from minikube_py.client.kubeconfig import load_kubeconfig
    from minikube_py.client.rest import RESTClient

    async with RESTClient(load_kubeconfig(str(kubeconfig))) as client:
        began = time.monotonic()
        await client.create(resources.DEPLOYMENTS, web_deployment(replicas), NAMESPACE)
        await client.create(resources.SERVICES, web_service(), NAMESPACE)
        pod_ips: list[str] = []
        address = ""
        while time.monotonic() - began < SETUP_TIMEOUT:
            if len(pod_ips) < replicas:
                pods = (await client.list(resources.PODS, NAMESPACE, label_selector=f"app={APP}"))["items"]
                pod_ips = sorted(pod["status"]["podIP"] for pod in pods if is_ready(pod))
                if len(pod_ips) == replicas:
                    print(f"  {replicas} pod(s) Ready after {time.monotonic() - began:.1f} s: {', '.join(pod_ips)}")
            if not address:
                service = await client.get(resources.SERVICES, APP, NAMESPACE)
                ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
                if ingress:
                    address = ingress[0]["ip"]
                    print(f"  service {APP}: EXTERNAL-IP {address} after {time.monotonic() - began:.1f} s")
            if address and len(pod_ips) == replicas:
                return pod_ips, address
            await asyncio.sleep(0.5)
    raise RuntimeError(f"after {SETUP_TIMEOUT:g} s: {len(pod_ips)} of {replicas} pods Ready, "
                       f"ingress {address or 'none'}")


async def first_get(host: str, port: int) -> None:
    """GET / until it answers 200 (the proxy gets its backends from an Endpoints watch, a moment later)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        connection = HTTPConnection(host, port, "/")
        try:
            await connection.get()
            return
        except (OSError, asyncio.IncompleteReadError, HTTPError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
        finally:
            connection.close()


def in_cluster(load: Load, rounds: int, replicas: int) -> float:
    """Measure both sides on a throwaway cluster; the load balancer ÷ direct ratio of the medians."""
    from minikube_py.cli.supervisor import Supervised

    with tempfile.TemporaryDirectory(prefix="mkpy-bench-") as root:
        home = MkpyHome(root, CLUSTER)
        try:
            began = time.monotonic()
            home("up", "--nodes", "1", "--no-switch-context")
            print(f"lb_throughput: cluster up in {time.monotonic() - began:.1f} s; load average "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
            pod_ips, address = asyncio.run(deploy(home.kubeconfig, replicas))
            asyncio.run(first_get(pod_ips[0], 8080))
            asyncio.run(first_get(address, 80))
            ccm = Supervised("ccm", home.cluster_dir).pid()
            assert ccm is not None, "the cluster's ccm is not running"
            print(f"lb_throughput: {load.concurrency} concurrent clients in {load.processes} process(es), "
                  f"{rounds} rounds of {load.seconds:g} s; {len(BODY)} B responses from busybox httpd in "
                  f"{replicas} pod(s) (a new connection per request); direct: {pod_ips[0]}:8080, "
                  f"load balancer: {address}:80 (the proxy in mkpy ccm)", flush=True)
            sides = [Side("direct", http_gets, (pod_ips[0], 8080, "/")),
                     Side("load balancer", http_gets, (address, 80, "/"))]
            rates = compare(load, rounds, sides, {"ccm": ccm}, "GET")
            print(f"lb_throughput: load average {os.getloadavg()[0]:.2f}", flush=True)
        finally:
            health_changes(home.cluster_dir / "logs" / "ccm.log")
            home.delete()
    return rates["load balancer"] / rates["direct"]


def health_changes(ccm_log: Path) -> None:
    """Print the load balancer's health-check verdicts from the CCM's log (a backend marked unhealthy gets no
    connections until a check finds it healthy again)."""
    with contextlib.suppress(OSError):
        changes = [line for line in ccm_log.read_text().splitlines() if "load balancer" in line and "backend" in line]
        print(f"lb_throughput: {len(changes)} backend health change(s) in the CCM's log", flush=True)
        for line in changes[:10]:
            print(f"    {line}", flush=True)


# the proxy alone -----------------------------------------------------------------------------------------

@contextmanager
def backend(args: argparse.Namespace) -> Iterator[tuple[tuple[str, int], int | None, str]]:
    if args.backend:
        host, _, port = args.backend.rpartition(":")
        yield (host, int(port)), None, f"{args.backend} (given)"
    else:
        with backend_server(args.server) as started:
            yield started


def proxy_only(load: Load, rounds: int, args: argparse.Namespace) -> float:
    """Measure both sides against an in-process TCPProxy; the load balancer ÷ direct ratio of the medians."""
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
    return rates["load balancer"] / rates["direct"]


# the comparison ------------------------------------------------------------------------------------------

def parse() -> tuple[Load, int, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each measurement")
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each side, alternating")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent clients")
    parser.add_argument("--processes", type=int, default=1, help="client processes sharing the clients")
    parser.add_argument("--replicas", type=int, default=1, help="httpd pods behind the load balancer")
    only = parser.add_argument_group("--proxy-only: no cluster, a TCPProxy in front of a local server")
    only.add_argument("--proxy-only", action="store_true", help="measure the proxy alone, without a cluster")
    only.add_argument("--server", choices=("busybox", "asyncio"),
                      default="busybox" if shutil.which("busybox") else "asyncio",
                      help="the backend to start (default: busybox httpd when busybox is on PATH)")
    only.add_argument("--backend", metavar="IP:PORT", help="a running HTTP server to use as the backend instead")
    only.add_argument("--path", default="/", help="the path to GET")
    only.add_argument("--uvloop", action="store_true",
                      help="run the proxy on uvloop (mkpy ccm runs it on the standard asyncio loop)")
    args = parser.parse_args()
    return Load(args.concurrency, args.processes, args.seconds), args.rounds, args


def main() -> None:
    load, rounds, args = parse()
    if args.proxy_only:
        ratio = proxy_only(load, rounds, args)
        what = "lb: through a TCPProxy / direct (proxy only, no cluster)"
    else:
        ratio = in_cluster(load, rounds, args.replicas)
        what = f"lb: through the local cloud's load balancer / straight to a pod IP ({args.replicas} replica(s))"
    verdict(what, ratio, TARGET, at_least=True)


if __name__ == "__main__":
    main()

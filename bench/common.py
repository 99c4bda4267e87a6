"""What the benchmarks share: the pod they write, a lean HTTPS client, closed-loop load, CPU and memory
readings, and the PASS/MISS lines.

The client. Every HTTP benchmark drives its servers with `ConnectionPool`: HTTP/1.1 keep-alive connections
over TLS with the admin client certificate, one request at a time per connection, written and parsed by
hand on asyncio streams. httpx is the obvious choice, but it costs ~0.9 ms of client CPU per request here
and its pool slows down as connections are added: one process with 16 concurrent requests manages ~600
GETs/s, four processes ~1,900/s with both cores busy, while the bare Starlette route they hit uses a
quarter of one core. With httpx a throughput benchmark measures httpx. This client costs ~50 µs per
request, so the server under test is the bottleneck, and it is the same client on every side.

Load. `run_load` is a closed loop: `concurrency` coroutines, spread over `processes` client processes
(spawned fresh, on uvloop like the servers), each calling one operation back to back for a fixed time
after a common start. An operation is made by a *session*: a module-level async context manager factory
(picklable, so that client processes can be spawned) that sets up connections and yields `op(tag)`, where
`tag` is unique across the whole run (usable as an object name). The same loop drives both sides of a
comparison, so the only difference between them is the server.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import os
import re
import ssl
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlsplit

import orjson
import uvloop

from minikube_py.store.etcd import EtcdStorage
from tests.harness import ControlPlane

Op = Callable[[str], Awaitable[object]]
Session = Callable[..., AbstractAsyncContextManager[Op]]

SETUP_TIMEOUT = 60.0  # seconds a client process may take to start, connect and warm up
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)


# the object -------------------------------------------------------------------------------------------

def pod_body(name: str) -> dict[str, Any]:
    """A Pod like a real workload's: labels, annotations, env, ports, probes, resources (~1.5 KB of JSON)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": "bench-web", "tier": "frontend", "track": "stable", "version": "v1.4.2"},
            "annotations": {"bench.mkpy.dev/commit": "3f9c2a7e5b1d4c8a9e0f6b2d7a1c5e3f9b8d4a2c",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "9102"},
        },
        "spec": {
            "containers": [{
                "name": "web",
                "image": "registry.example.com/bench/web:1.4.2",
                "args": ["--listen=:8080", "--metrics=:9102", "--log-level=info", "--cache-dir=/var/cache/web"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9102, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "production"}, {"name": "CACHE_SIZE", "value": "256Mi"},
                        {"name": "UPSTREAM", "value": "http://backend.default.svc.cluster.local:8080"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5},
                "livenessProbe": {"httpGet": {"path": "/livez", "port": 8080}, "initialDelaySeconds": 10},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/web", "readOnly": True},
                                 {"name": "cache", "mountPath": "/var/cache/web"}],
            }],
            "volumes": [{"name": "config", "configMap": {"name": "web-config"}},
                        {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
    }


# the client -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TLSFiles:
    """The cluster CA and a client certificate (the admin's): how every benchmark client authenticates."""

    ca: Path
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


class HTTPError(RuntimeError):
    """A response with an unexpected status: the benchmark is misconfigured, so it stops."""


class HTTPSConnection:
    """One keep-alive HTTP/1.1 connection; one request at a time; responses must carry Content-Length."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self._reader = reader
        self._writer = writer
        self._host = host

    @classmethod
    async def open(cls, url: str, context: ssl.SSLContext) -> HTTPSConnection:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port, ssl=context)
        return cls(reader, writer, parts.netloc)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        header = await self._send(method, path, body)
        length = _CONTENT_LENGTH.search(header)
        if length is None:
            raise HTTPError(f"response without Content-Length: {header[:200]!r}")
        return int(header[9:12]), await self._reader.readexactly(int(length.group(1)))

    async def lines(self, path: str) -> AsyncIterator[bytes]:
        """GET a chunked response (a watch) and yield its lines as they arrive."""
        header = await self._send("GET", path, b"")
        if header[9:12] != b"200" or b"chunked" not in header.lower():
            raise HTTPError(f"GET {path}: not a 200 chunked stream: {header[:300]!r}")
        pending = b""
        while size := int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16):
            pending += (await self._reader.readexactly(size + 2))[:-2]
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line

    async def _send(self, method: str, path: str, body: bytes) -> bytes:
        """Send a request; the response's status line and headers."""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self._host}\r\nAccept: application/json\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self._writer.write(head.encode() + body)
        return await self._reader.readuntil(b"\r\n\r\n")

    def close(self) -> None:
        self._writer.close()


class ConnectionPool:
    """Keep-alive connections to one server, opened on demand: as many as there are concurrent requests."""

    def __init__(self, url: str, tls: TLSFiles) -> None:
        self._url = url
        self._context = tls.context()
        self._idle: list[HTTPSConnection] = []

    async def request(self, method: str, path: str, body: bytes = b"", *, expect: int = 200) -> bytes:
        connection = self._idle.pop() if self._idle else await HTTPSConnection.open(self._url, self._context)
        try:
            status, payload = await connection.request(method, path, body)
        except BaseException:
            connection.close()
            raise
        self._idle.append(connection)
        if status != expect:
            raise HTTPError(f"{method} {path}: {status} (expected {expect}): {payload[:300]!r}")
        return payload

    def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()


@asynccontextmanager
async def connection_pool(url: str, tls: TLSFiles) -> AsyncIterator[ConnectionPool]:
    pool = ConnectionPool(url, tls)
    try:
        yield pool
    finally:
        pool.close()


@asynccontextmanager
async def pod_creates(url: str, tls: TLSFiles, namespace: str) -> AsyncIterator[Op]:
    """A session whose op POSTs `pod_body(<op tag>)` into `namespace` and expects 201."""
    head, tail = orjson.dumps(pod_body(_NAME_MARK)).split(_NAME_MARK.encode())
    path = f"/api/v1/namespaces/{namespace}/pods"
    async with connection_pool(url, tls) as pool:
        async def create(name: str) -> None:
            await pool.request("POST", path, head + name.encode() + tail, expect=201)

        yield create


_NAME_MARK = "@NAME@"


# the cluster ------------------------------------------------------------------------------------------

# The controller manager beside the benchmarks' apiservers runs only the serviceaccount controller: the
# ServiceAccount admission plugin needs each namespace's `default` account. The tests' control plane also
# runs controllers that watch pods (resourcequota, pvc-protection), which would make the apiserver stream
# every pod a benchmark creates to them, and share the machine with their work: a cost of having
# controllers, not of the apiserver's requests being measured.
BENCH_CONTROLLERS = "serviceaccount"


@contextmanager
def control_plane() -> Iterator[ControlPlane]:
    """The tests' control plane (a real etcd and an `mkpy apiserver` process), removed afterwards."""
    cp = ControlPlane(controllers=BENCH_CONTROLLERS)
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


def admin_tls(cp: ControlPlane) -> TLSFiles:
    return TLSFiles(cp.ca_file, cp.admin.cert_path, cp.admin.key_path)


def server_pids(cp: ControlPlane) -> dict[str, int]:
    assert cp.process is not None
    return {"apiserver": cp.process.pid, "etcd": pid_of(str(cp.etcd.data_dir))}


def create_namespace(cp: ControlPlane, name: str) -> None:
    with cp.client() as client:
        response = client.post("/api/v1/namespaces", json={"metadata": {"name": name}})
        if response.status_code != 201:
            raise HTTPError(f"creating namespace {name}: {response.status_code} {response.text}")


def create_pod(cp: ControlPlane, namespace: str, name: str) -> tuple[bytes, bytes]:
    """Create a `pod_body` Pod through the apiserver: the request body, and the value etcd now holds for it."""
    body = orjson.dumps(pod_body(name))
    with cp.client() as client:
        response = client.post(f"/api/v1/namespaces/{namespace}/pods", content=body,
                               headers={"content-type": "application/json"})
        if response.status_code != 201:
            raise HTTPError(f"creating pod {name}: {response.status_code} {response.text}")
    return body, asyncio.run(_stored(cp.etcd.endpoint, f"/registry/pods/{namespace}/{name}"))


async def _stored(endpoint: str, key: str) -> bytes:
    storage = await EtcdStorage.connect([endpoint])
    try:
        kv = await storage.get(key)
    finally:
        await storage.close()
    if kv is None:
        raise LookupError(key)
    return kv.value


# load ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Load:
    """A closed loop: `concurrency` coroutines over `processes` client processes, for `seconds`."""

    concurrency: int
    processes: int
    seconds: float


def parse_load(doc: str | None, *, seconds: float = 4.0, rounds: int = 4) -> tuple[Load, int]:
    """The command line of a throughput benchmark: its Load and how many rounds of each side to run."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=seconds, help="length of each measurement")
    parser.add_argument("--rounds", type=int, default=rounds, help="measurements of each side, alternating")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent clients")
    parser.add_argument("--processes", type=int, default=1, help="client processes sharing the clients")
    args = parser.parse_args()
    return Load(args.concurrency, args.processes, args.seconds), args.rounds


@dataclass(frozen=True)
class Measurement:
    rate: float  # operations completed per second
    cpu: dict[str, float]  # share of one core each watched process (servers, clients) used during the run


def run_load(load: Load, tag: str, session: Session, *args: object, pids: dict[str, int]) -> Measurement:
    """Drive `session(*args)`'s op under `load`; `tag` prefixes every op's tag (unique per call, please)."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(load.processes + 1)
    results = ctx.Queue()
    shares = [load.concurrency // load.processes + (i < load.concurrency % load.processes)
              for i in range(load.processes)]
    clients = [ctx.Process(target=_client_process, daemon=True,
                           args=(load.seconds, share, f"{tag}p{i}", start, results, session, args))
               for i, share in enumerate(shares)]
    for client in clients:
        client.start()
    try:
        start.wait(SETUP_TIMEOUT)
    except threading.BrokenBarrierError:
        raise RuntimeError(f"a client process failed to start:\n{results.get(timeout=5)}") from None
    meter = CpuMeter({**pids, **{f"client{i}" if len(clients) > 1 else "client": client.pid
                                 for i, client in enumerate(clients)}})
    outcomes = [results.get(timeout=load.seconds + SETUP_TIMEOUT) for _ in clients]
    cpu = meter.shares()
    for client in clients:
        client.join()
    failures = [outcome for outcome in outcomes if isinstance(outcome, str)]
    if failures:
        raise RuntimeError(f"a client process failed:\n{failures[0]}")
    return Measurement(sum(outcomes) / load.seconds, cpu)


def _client_process(seconds: float, coroutines: int, tag: str, start: Any, results: Any, session: Session,
                    args: tuple[object, ...]) -> None:
    try:
        results.put(uvloop.run(_drive(seconds, coroutines, tag, start, session, args)))
    except BaseException:
        start.abort()
        results.put(f"{tag}: {traceback.format_exc()}")


async def _drive(seconds: float, coroutines: int, tag: str, start: Any, session: Session,
                 args: tuple[object, ...]) -> int:
    async with session(*args) as op:
        # one op per coroutine first: connections are opened (and TLS handshakes done) before the clock runs
        await asyncio.gather(*(op(f"{tag}w{i}") for i in range(coroutines)))
        start.wait(SETUP_TIMEOUT)
        deadline = time.perf_counter() + seconds
        counts = await asyncio.gather(*(_loop(op, f"{tag}c{i}", deadline) for i in range(coroutines)))
    return sum(counts)


async def _loop(op: Op, tag: str, deadline: float) -> int:
    done = 0
    while time.perf_counter() < deadline:
        await op(f"{tag}-{done}")
        if time.perf_counter() <= deadline:
            done += 1
    return done


@dataclass(frozen=True)
class Side:
    """One side of a throughput comparison: a session against one server."""

    label: str
    session: Session
    args: tuple[object, ...]


def compare(load: Load, rounds: int, sides: list[Side], pids: dict[str, int], unit: str) -> dict[str, float]:
    """Measure every side `rounds` times, alternating, printing each measurement; the median rate of each.

    The order of the sides is reversed every other round: a measurement that directly follows another runs
    slower on this machine (two identical apiservers measured the same way differ by 2-4% depending on which
    goes second), so a fixed order would favour the first side. An even number of rounds puts each side
    first equally often."""
    rates: dict[str, list[float]] = {side.label: [] for side in sides}
    for n in range(rounds):
        for i, side in (enumerate(sides) if n % 2 == 0 else reversed(list(enumerate(sides)))):
            measured = run_load(load, f"r{n}s{i}", side.session, *side.args, pids=pids)
            rates[side.label].append(measured.rate)
            print(f"  round {n + 1}  {side.label:<20} {measured.rate:>8,.0f} {unit}/s   "
                  f"{cpu_note(measured.cpu, measured.rate, unit)}", flush=True)
    medians = {label: median(values) for label, values in rates.items()}
    print("  median: " + ", ".join(f"{label} {rate:,.0f} {unit}/s" for label, rate in medians.items()))
    return medians


# processes ----------------------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process (all its threads) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory (VmRSS) of a process, in MB (10^6 bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise ValueError(f"no VmRSS for pid {pid}")


def pid_of(*markers: str) -> int:
    """The pid of the one process whose command line contains every marker (e.g. a binary and a data dir)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and all(marker in cmdline for marker in markers):
            found.append(int(proc.name))
    if len(found) != 1:
        raise LookupError(f"{len(found)} processes match {markers}")
    return found[0]


class CpuMeter:
    """How much of one core each of some processes uses between construction and `shares()`."""

    def __init__(self, pids: dict[str, int]) -> None:
        self._pids = pids
        self._began = time.perf_counter()
        self._cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}

    def shares(self) -> dict[str, float]:
        elapsed = time.perf_counter() - self._began
        return {name: (cpu_seconds(pid) - self._cpu[name]) / elapsed for name, pid in self._pids.items()}


# reporting ----------------------------------------------------------------------------------------------

def percentile(samples: Sequence[float], q: float) -> float:
    """The nearest-rank `q` percentile (0 < q <= 100)."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def cpu_note(cpu: dict[str, float], rate: float, unit: str) -> str:
    """Each busy process's share of a core and its CPU time per operation."""
    busy = {name: share for name, share in cpu.items() if share >= 0.05}
    return "CPU: " + ", ".join(f"{name} {share:.0%} ({share / rate * 1e6:.0f} µs/{unit})"
                               for name, share in busy.items())


def verdict(what: str, value: float, target: float, *, at_least: bool, unit: str = "") -> None:
    """Print the benchmark's PASS/MISS line (run_all.py collects these); never raises."""
    passed = value >= target if at_least else value <= target
    bound = ">=" if at_least else "<="
    print(f"[{'PASS' if passed else 'MISS'}] {what} = {value:.2f}{unit} (target {bound} {target:g}{unit})",
          flush=True)


class MkpyHome:
    """A private MKPY_HOME, HOME and KUBECONFIG under `root`, and `mkpy ... --name cluster` run against them,
    so a benchmark's cluster never touches the user's clusters or kubeconfig."""

    def __init__(self, root: str, cluster: str) -> None:
        self.cluster = cluster
        self.env = {**os.environ, "HOME": root, "MKPY_HOME": f"{root}/mkpy", "KUBECONFIG": f"{root}/kube/config"}
        self.mkpy = str(Path(sys.executable).parent / "mkpy")
        self.cluster_dir = Path(root) / "mkpy" / cluster
        self.kubeconfig = self.cluster_dir / "kubeconfig"

    def __call__(self, *args: str) -> None:
        subprocess.run([self.mkpy, *args, "--name", self.cluster], env=self.env, check=True,
                       stdout=subprocess.DEVNULL)

    def delete(self) -> None:
        subprocess.run([self.mkpy, "delete", "--name", self.cluster], env=self.env, stdout=subprocess.DEVNULL)

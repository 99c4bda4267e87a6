"""Benchmark 7: scheduler throughput, shaped like Kubernetes' scheduler_perf
(test/integration/scheduler_perf). Targets: SchedulingBasic at 5000 nodes ≥ 200 pods/s; its throughput at
5000 nodes ÷ at 500 nodes ≥ 0.5; the scheduler ÷ a bind-only loop against the same apiserver (5000 nodes)
≥ 0.6.

What is measured: pods bound per second while `mkpy scheduler` (a child process, `--leader-elect=false`, as
`system:kube-scheduler` with its own certificate) works through a batch of pods. The cluster is the tests'
`ControlPlane` (etcd and an apiserver process) on this machine; nodes are API objects with
`status.allocatable` (4 CPUs, 32Gi, 110 pods, as kube's node-default template) and no kubelets. The shape
is kube's: the nodes first, then the scheduler is started and its caches synced, then the measured pods are
created in bulk (32 creates in flight) while it runs, as kube's `createPods` with `collectMetrics`.
`--precreate` creates the pods before the scheduler starts instead (the clock then starts when it is ready).

A pod's bind time is the arrival of its first watch event with `spec.nodeName` set (a watch on the
namespace from the list's resourceVersion). Throughput = pods / (last bind - first create): kube's
throughput collector also starts with the creates. It is not (pods - 1) / (last bind - first bind), which
each run prints too, because binds do not come evenly here: the scheduler's loop does not yield to the
event loop while pods are queued, so a whole burst of pods is scheduled before the first of their binding
tasks runs, and the bind-only loop's binds reach the watch in a burst when the apiserver is saturated;
either makes the first-to-last window much shorter than the work. The scheduler's start and cache sync are
outside the measurement.

Workloads (kube's names; pods have requests of 100m CPU and 500Mi, as kube's pod-default template; no
init pods):

* SchedulingBasic at 500, 1000 and 5000 nodes: plain pods.
* TopologySpreading at 1000 nodes: nodes spread over 10 zones (`topology.kubernetes.io/zone`), pods with a
  `DoNotSchedule` zone constraint, maxSkew 1, on their own label (kube uses 3 zones and maxSkew 5).
* RequiredPodAntiAffinity at 1000 nodes: required anti-affinity on `kubernetes.io/hostname` against the
  pods of their own group label, groups of at most 100 pods, so that it stays satisfiable.

Each run checks the placement afterwards (zone skew, one pod of a group per node).

The baseline, in the same run and at the same node count as the 5000-node SchedulingBasic: a bind-only loop,
no scheduling at all. Pods are created the same way, and each is bound, as soon as its create is
acknowledged, to the next node round-robin by POSTing its `pods/<name>/binding` (with its uid, as
DefaultBinder does), with 16 binds in flight: the scheduler starts a binding task per pod, and its REST
client lets at most `rest.MAX_IN_FLIGHT` (16) requests out at once (binds, events and status patches; its
watches have connections of their own). Its throughput is counted from the same watch in the same way.
The bench's own client is common.py's lean HTTPS client, so the bench process takes little CPU from the
servers; the per-run lines give each process's CPU per pod.

One control plane serves every workload: workloads run in order of node count, nodes are added (or
deleted) to reach each count, every run gets a fresh namespace, and after each run the scheduler is
stopped and the run's pods are deleted.

    python -m bench.scheduler_perf [--pods 1000] [--quick] [--rounds 1] [--precreate] [--bind-concurrency 64]
                                   [--profile FILE] [WORKLOAD ...]

WORKLOAD is a template (SchedulingBasic) or a full name (SchedulingBasic/5000Nodes); default: all.
`--quick` divides node counts by 5 and makes 300 pods per workload. `--profile FILE` runs the scheduler
under cProfile (one workload, no baseline, no verdicts: the profiler slows it down about 1.8 times); SIGTERM
stops it, and the profile is written as it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Any

import orjson
import uvloop

from bench.common import (
    ConnectionPool,
    HTTPSConnection,
    TLSFiles,
    admin_tls,
    control_plane,
    cpu_seconds,
    server_pids,
    verdict,
)
from minikube_py.client.rest import MAX_IN_FLIGHT
from tests.harness import ControlPlane
from tests.scheduler.cluster import READY_LINE, node, pod

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
ZONES = 10
MAX_SKEW = 1
GROUP_SIZE = 100  # at most this many pods share an anti-affinity group
CREATE_CONCURRENCY = 32  # creates and deletes in flight
BIND_CONCURRENCY = MAX_IN_FLIGHT  # as many requests as the scheduler's REST client has on the wire at most
QUICK_SCALE = 5
QUICK_PODS = 300
STALL_TIMEOUT = 180.0  # seconds without a new bind before a run gives up (binds come in bursts: see above)
PROFILED_STALL_TIMEOUT = 1800.0  # the same under cProfile, which slows the scheduler down
READY_TIMEOUT = 180.0  # seconds for the scheduler to sync its caches
STOP_TIMEOUT = 60.0  # seconds for the scheduler to exit after SIGTERM (writing a profile takes a while)
TARGET_RATE = 200.0
TARGET_SCALING = 0.5
TARGET_BASELINE = 0.6
BIND_ONLY = "bind-only loop"
SCHEDULER = "scheduler"


# the workloads ------------------------------------------------------------------------------------------

def node_name(i: int) -> str:
    return f"node-{i:05d}"


def node_body(i: int) -> dict[str, Any]:
    return node(node_name(i), memory="32Gi", labels={ZONE_KEY: f"zone-{i % ZONES}"})


def zone_of(name: str) -> int:
    return int(name.rsplit("-", 1)[1]) % ZONES


def basic_pod(name: str, i: int, pods: int, nodes: int) -> dict[str, Any]:
    return pod(name, cpu="100m", memory="500Mi", labels={"app": "perf"})


def spreading_pod(name: str, i: int, pods: int, nodes: int) -> dict[str, Any]:
    constraint = {"maxSkew": MAX_SKEW, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"color": "blue"}}}
    return pod(name, cpu="100m", memory="500Mi", labels={"color": "blue"},
               topologySpreadConstraints=[constraint])


def anti_affinity_groups(pods: int, nodes: int) -> int:
    return math.ceil(pods / max(1, min(GROUP_SIZE, nodes)))


def anti_affinity_pod(name: str, i: int, pods: int, nodes: int) -> dict[str, Any]:
    group = f"g{i % anti_affinity_groups(pods, nodes)}"
    term = {"labelSelector": {"matchLabels": {"group": group}}, "topologyKey": HOSTNAME_KEY}
    return pod(name, cpu="100m", memory="500Mi", labels={"group": group},
               affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})


def check_none(bodies: list[dict[str, Any]], placed: dict[str, str]) -> str:
    return ""


def check_spreading(bodies: list[dict[str, Any]], placed: dict[str, str]) -> str:
    per_zone = Counter(zone_of(host) for host in placed.values())
    skew = max(per_zone.values()) - min(per_zone.get(z, 0) for z in range(ZONES)) if per_zone else 0
    return f"zone skew {skew} > {MAX_SKEW}" if skew > MAX_SKEW else ""


def check_anti_affinity(bodies: list[dict[str, Any]], placed: dict[str, str]) -> str:
    groups = {b["metadata"]["name"]: b["metadata"]["labels"]["group"] for b in bodies}
    per_node = Counter((groups[name], host) for name, host in placed.items())
    shared = [key for key, n in per_node.items() if n > 1]
    return f"{len(shared)} node(s) hold two pods of one group" if shared else ""


Template = Callable[[str, int, int, int], dict[str, Any]]
Check = Callable[[list[dict[str, Any]], dict[str, str]], str]
TEMPLATES: dict[str, tuple[Template, Check]] = {
    "SchedulingBasic": (basic_pod, check_none),
    "TopologySpreading": (spreading_pod, check_spreading),
    "RequiredPodAntiAffinity": (anti_affinity_pod, check_anti_affinity),
}


@dataclass(frozen=True)
class Workload:
    template: str
    nodes: int

    @property
    def name(self) -> str:
        return f"{self.template}/{self.nodes}Nodes"

    def pods(self, count: int) -> list[dict[str, Any]]:
        make = TEMPLATES[self.template][0]
        return [make(f"pod-{i:05d}", i, count, self.nodes) for i in range(count)]

    def check(self, bodies: list[dict[str, Any]], placed: dict[str, str]) -> str:
        return TEMPLATES[self.template][1](bodies, placed)


WORKLOADS = (Workload("SchedulingBasic", 500), Workload("SchedulingBasic", 1000),
             Workload("TopologySpreading", 1000), Workload("RequiredPodAntiAffinity", 1000),
             Workload("SchedulingBasic", 5000))


# the scheduler process ------------------------------------------------------------------------------------

class SchedulerProcess:
    """`mkpy scheduler` as a child process (optionally under cProfile), logging to a file in the workdir."""

    def __init__(self, cp: ControlPlane, kubeconfig: Path, run: int, profile: str = "") -> None:
        self.log_file = cp.workdir / f"scheduler-{run}.log"
        profiler = ["-m", "cProfile", "-o", profile] if profile else []
        argv = [sys.executable, *profiler, "-m", "minikube_py.cli.main", "scheduler",
                f"--kubeconfig={kubeconfig}", "--secure-port=0", "--leader-elect=false"]
        with open(self.log_file, "wb") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                            cwd=Path(__file__).resolve().parents[1],
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def log_tail(self) -> str:
        return self.log_file.read_text(errors="replace")[-3000:]

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(f"the scheduler exited ({self.process.returncode}):\n{self.log_tail()}")

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while READY_LINE not in self.log_file.read_text(errors="replace"):
            self.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the scheduler did not sync in {READY_TIMEOUT:g} s:\n{self.log_tail()}")
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM (the scheduler cancels its main task, so a profiler writes its file), SIGKILL if stuck."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# the cluster --------------------------------------------------------------------------------------------

async def each(items: Iterable[Any], op: Callable[[Any], Any], concurrency: int = CREATE_CONCURRENCY) -> None:
    """Await `op(item)` for every item, `concurrency` at a time."""
    pending = iter(items)

    async def worker() -> None:
        for item in pending:
            await op(item)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


@dataclass
class Cluster:
    """The control plane as the benchmark uses it: an admin connection pool, nodes 0..count-1."""

    cp: ControlPlane
    tls: TLSFiles
    pool: ConnectionPool
    scheduler_kubeconfig: Path
    nodes: int = 0
    runs: Iterator[int] = field(default_factory=itertools.count)

    def fresh_pool(self) -> None:
        """Drop the pooled connections: after a long wait the apiserver may have closed them (keep-alive)."""
        self.pool.close()
        self.pool = ConnectionPool(self.cp.url, self.tls)

    async def ensure_nodes(self, count: int) -> None:
        began = time.perf_counter()
        if count > self.nodes:
            async def create(i: int) -> None:
                await self.pool.request("POST", "/api/v1/nodes", orjson.dumps(node_body(i)), expect=201)
            await each(range(self.nodes, count), create)
        elif count < self.nodes:
            async def delete(i: int) -> None:
                await self.pool.request("DELETE", f"/api/v1/nodes/{node_name(i)}")
            await each(range(count, self.nodes), delete)
        if count != self.nodes:
            print(f"  nodes: {self.nodes} -> {count} in {time.perf_counter() - began:.1f} s", flush=True)
        self.nodes = count

    async def new_namespace(self) -> str:
        name = f"perf-{next(self.runs)}"
        await self.pool.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": name}}),
                                expect=201)
        return name

    async def delete_pods(self, namespace: str, names: list[str]) -> None:
        async def delete(name: str) -> None:
            path = f"/api/v1/namespaces/{namespace}/pods/{name}?gracePeriodSeconds=0"
            await self.pool.request("DELETE", path)
        await each(names, delete)


# measuring ------------------------------------------------------------------------------------------------

class BindWatch:
    """Watches one namespace's pods; notes each pod's first event with `spec.nodeName`, and when it came."""

    def __init__(self) -> None:
        self.bound_at: dict[str, float] = {}
        self.placed: dict[str, str] = {}
        self.progress = asyncio.Event()

    async def follow(self, connection: HTTPSConnection, path: str) -> None:
        async for line in connection.lines(path):
            if b'"nodeName"' not in line:  # ADDED of an unbound pod: skip the decode
                continue
            obj = orjson.loads(line)["object"]
            name, host = obj["metadata"]["name"], (obj.get("spec") or {}).get("nodeName")
            if host and name not in self.bound_at:
                self.bound_at[name] = time.perf_counter()
                self.placed[name] = host
                self.progress.set()
        raise RuntimeError("the watch ended")

    async def until(self, expected: int, alive: Callable[[], None], follower: asyncio.Task[None],
                    stall_timeout: float) -> None:
        """Wait for `expected` binds, or until none came for `stall_timeout`; `alive` raises if a binder
        died."""
        last, last_change = 0, time.monotonic()
        while len(self.bound_at) < expected:
            if follower.done():
                follower.result()
            alive()
            if len(self.bound_at) != last:
                last, last_change = len(self.bound_at), time.monotonic()
            elif time.monotonic() - last_change > stall_timeout:
                print(f"  no bind for {stall_timeout:g} s: giving up at {last}/{expected}", flush=True)
                return
            self.progress.clear()
            try:
                await asyncio.wait_for(self.progress.wait(), 1.0)
            except TimeoutError:
                pass


@dataclass
class Binder:
    """One side of the comparison while it runs: what to tell it of a created pod, and how to see it died."""

    submit: Callable[[str, str], None]  # (name, uid) of a pod just created
    alive: Callable[[], None]
    pids: dict[str, int]
    log_tail: Callable[[], str] = str


@asynccontextmanager
async def scheduler_side(cluster: Cluster, namespace: str, profile: str) -> AsyncIterator[Binder]:
    run = int(namespace.split("-")[1])
    process = SchedulerProcess(cluster.cp, cluster.scheduler_kubeconfig, run, profile)
    try:
        await process.wait_ready()
        yield Binder(lambda name, uid: None, process.check_alive, {"scheduler": process.process.pid},
                     process.log_tail)
    finally:
        process.stop()
    if profile:
        print(f"  profile: {profile} ({Path(profile).stat().st_size:,} bytes)" if Path(profile).exists()
              else f"  profile: {profile} was NOT written (exit {process.process.returncode})", flush=True)


@asynccontextmanager
async def bind_only_side(cluster: Cluster, namespace: str, concurrency: int) -> AsyncIterator[Binder]:
    """Binds each submitted pod to the next node, round-robin, `concurrency` binds in flight."""
    queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    turn = itertools.count()

    async def worker() -> None:
        while True:
            name, uid = await queue.get()
            binding = {"apiVersion": "v1", "kind": "Binding",
                       "metadata": {"namespace": namespace, "name": name, "uid": uid},
                       "target": {"kind": "Node", "name": node_name(next(turn) % cluster.nodes)}}
            await cluster.pool.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
                                       orjson.dumps(binding), expect=201)

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]

    def alive() -> None:
        for task in workers:
            if task.done():
                task.result()

    try:
        yield Binder(lambda name, uid: queue.put_nowait((name, uid)), alive, {})
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


@dataclass(frozen=True)
class Run:
    workload: Workload
    side: str
    pods: int
    bound: int
    first: float  # seconds from the start (the first create, or the pods handed over) to the first bind
    last: float  # ... to the last bind
    cpu: dict[str, float]  # CPU seconds per process, from the start to the end of the wait
    wall: float  # seconds from the start to the end of the wait
    problem: str  # a placement the workload forbids, or ""

    @property
    def rate(self) -> float:
        """Pods bound per second from the start to the last bind."""
        return self.bound / self.last if self.last > 0 else 0.0

    @property
    def bind_span_rate(self) -> float:
        """Pods bound per second from the first bind to the last."""
        return (self.bound - 1) / (self.last - self.first) if self.last > self.first else 0.0

    def line(self) -> str:
        per_pod = ", ".join(f"{name} {used / max(self.bound, 1) * 1e3:.2f} ms ({used / self.wall:.0%})"
                            for name, used in self.cpu.items() if used / self.wall >= 0.05)
        placement = f"PLACEMENT WRONG: {self.problem}" if self.problem else "placement ok"
        missing = f" ({self.pods - self.bound} NOT BOUND)" if self.bound < self.pods else ""
        return (f"  {self.workload.name:<34} {self.side:<15} {self.workload.nodes:>5} nodes "
                f"{self.bound:>5} pods{missing} {self.rate:>7.1f} pods/s  (binds from {self.first:.2f} s "
                f"to {self.last:.2f} s: {self.bind_span_rate:.0f}/s between first and last; CPU per pod: "
                f"{per_pod}; {placement})")


async def measure(cluster: Cluster, workload: Workload, pods: int, side: str,
                  options: argparse.Namespace) -> Run:
    await cluster.ensure_nodes(workload.nodes)
    namespace = await cluster.new_namespace()
    bodies = workload.pods(pods)
    listed = orjson.loads(await cluster.pool.request("GET", f"/api/v1/namespaces/{namespace}/pods"))
    revision = listed["metadata"]["resourceVersion"]
    path = f"/api/v1/namespaces/{namespace}/pods?watch=true&resourceVersion={revision}"
    connection = await HTTPSConnection.open(cluster.cp.url, cluster.tls.context())
    watch = BindWatch()
    follower = asyncio.create_task(watch.follow(connection, path))
    created: list[tuple[str, str]] = []
    create_path = f"/api/v1/namespaces/{namespace}/pods"

    async def create(body: dict[str, Any], submit: Callable[[str, str], None] | None) -> None:
        reply = await cluster.pool.request("POST", create_path, orjson.dumps(body), expect=201)
        name, uid = body["metadata"]["name"], orjson.loads(reply)["metadata"]["uid"]
        created.append((name, uid))
        if submit is not None:
            submit(name, uid)

    binder = (scheduler_side(cluster, namespace, options.profile) if side == SCHEDULER
              else bind_only_side(cluster, namespace, options.bind_concurrency))
    try:
        if options.precreate:
            await each(bodies, lambda body: create(body, None))
        async with binder as running:
            pids = {**server_pids(cluster.cp), "bench": os.getpid(), **running.pids}
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            began = time.perf_counter()
            if options.precreate:
                for name, uid in created:
                    running.submit(name, uid)
            else:
                await each(bodies, lambda body: create(body, running.submit))
            await watch.until(pods, running.alive, follower,
                              PROFILED_STALL_TIMEOUT if options.profile else STALL_TIMEOUT)
            wall = time.perf_counter() - began
            cpu = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
            if len(watch.bound_at) < pods:
                print(f"  the end of the scheduler's log:\n{running.log_tail()}", flush=True)
    finally:
        follower.cancel()
        connection.close()
    times = sorted(at - began for at in watch.bound_at.values()) or [0.0]
    run = Run(workload, side, pods, len(watch.bound_at), times[0], times[-1], cpu, wall,
              workload.check(bodies, watch.placed))
    cluster.fresh_pool()
    await cluster.delete_pods(namespace, [name for name, _ in created])
    return run


# the run ------------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                        help=f"templates or names (default: all): {', '.join(w.name for w in WORKLOADS)}")
    parser.add_argument("--pods", type=int,
                        help=f"measured pods per workload (default 1000; {QUICK_PODS} with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"node counts ÷ {QUICK_SCALE}, {QUICK_PODS} pods")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each side; figures are medians")
    parser.add_argument("--precreate", action="store_true",
                        help="create the pods before starting the scheduler (or the bind-only loop)")
    parser.add_argument("--bind-concurrency", type=int, default=BIND_CONCURRENCY,
                        help="binds in flight in the bind-only loop")
    parser.add_argument("--profile", default="", metavar="FILE",
                        help="run the scheduler under cProfile, writing FILE (exactly one workload)")
    args = parser.parse_args()
    wanted = {w.lower() for w in args.workloads}
    unknown = wanted - {w.name.lower() for w in WORKLOADS} - {t.lower() for t in TEMPLATES}
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")
    chosen = [w for w in WORKLOADS if not wanted or w.name.lower() in wanted or w.template.lower() in wanted]
    if args.profile and len(chosen) != 1:
        parser.error("--profile needs exactly one workload")
    if args.quick:
        chosen = [replace(w, nodes=w.nodes // QUICK_SCALE) for w in chosen]
    args.chosen = sorted(chosen, key=lambda w: w.nodes)
    args.pods = args.pods or (QUICK_PODS if args.quick else 1000)
    return args


async def run_all(cp: ControlPlane, options: argparse.Namespace) -> dict[tuple[str, str], list[Run]]:
    basic = [w for w in options.chosen if w.template == "SchedulingBasic"]
    baseline_at = max(basic, key=lambda w: w.nodes) if basic and not options.profile else None
    kubeconfig = cp.component_kubeconfig("scheduler", user="system:kube-scheduler")
    tls = admin_tls(cp)
    cluster = Cluster(cp, tls, ConnectionPool(cp.url, tls), kubeconfig)
    runs: dict[tuple[str, str], list[Run]] = {}
    try:
        for workload in options.chosen:
            sides = [SCHEDULER, BIND_ONLY] if workload == baseline_at else [SCHEDULER]
            for _ in range(options.rounds):
                for side in sides:
                    cluster.fresh_pool()
                    run = await measure(cluster, workload, options.pods, side, options)
                    print(run.line(), flush=True)
                    runs.setdefault((workload.name, side), []).append(run)
    finally:
        cluster.pool.close()
    return runs


def report(options: argparse.Namespace, runs: dict[tuple[str, str], list[Run]]) -> None:
    rates = {key: median(run.rate for run in each_run) for key, each_run in runs.items()}
    print("  median pods/s: " + ", ".join(f"{name} ({side}) {rate:,.1f}"
                                          for (name, side), rate in rates.items()))
    if options.profile:
        print("  (under cProfile: no verdicts)")
        return
    basic = {w.nodes: rates[(w.name, SCHEDULER)] for w in options.chosen if w.template == "SchedulingBasic"}
    if not basic:
        return
    big, small = max(basic), min(basic)
    verdict(f"scheduler_perf: SchedulingBasic at {big} nodes", basic[big], TARGET_RATE, at_least=True,
            unit=" pods/s")
    if small < big and basic[small] > 0:
        verdict(f"scheduler_perf: SchedulingBasic throughput, {big} nodes / {small} nodes",
                basic[big] / basic[small], TARGET_SCALING, at_least=True)
    bind_only = rates.get((f"SchedulingBasic/{big}Nodes", BIND_ONLY))
    if bind_only:
        verdict(f"scheduler_perf: scheduler / bind-only loop ({big} nodes, {bind_only:,.0f} binds/s)",
                basic[big] / bind_only, TARGET_BASELINE, at_least=True)


def main() -> None:
    options = parse_args()
    shape = ("pods created before the scheduler starts" if options.precreate
             else "pods created while the scheduler runs (kube's shape)")
    print(f"scheduler_perf: {options.pods} pods per workload, {shape}, {options.rounds} round(s); "
          f"bind-only loop with {options.bind_concurrency} binds in flight", flush=True)
    with control_plane() as cp:
        runs = uvloop.run(run_all(cp, options))
    report(options, runs)


if __name__ == "__main__":
    main()

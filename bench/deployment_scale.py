"""Benchmark (issue 7): a 1,000-replica Deployment on 50 simulated nodes, against 1,000 bare pods.

Target: **(time until the Deployment's 1,000 replicas are Available) ÷ (time to create and run 1,000 bare
pods on the same nodes) ≤ 1.5**, both measured in the same run on the same cluster, one after the other:

(a) bare pods: the benchmark creates 1,000 pods itself, as fast as one lean client goes (32 keep-alive HTTPS
    connections with the admin certificate, `bench.common.ConnectionPool`, ~50 µs of client CPU a request,
    each connection sending its next POST as soon as the previous one is answered). The pods carry no
    `nodeName`: the scheduler places them. Timed from the first POST to the moment the benchmark's pod watch
    has seen every one of them Running with Ready=True. Then they are deleted (32 at a time, graceful, as
    kubectl does) and the benchmark waits until they are gone, and 5 s more for the kubelets' cleanup.
(b) Deployment: one POST of a Deployment with `replicas: 1000` and the same pod template; timed from that
    POST to the Deployment watch event showing `status.updatedReplicas == availableReplicas == 1000` for the
    current generation. The Deployment controller creates the ReplicaSet, the ReplicaSet controller the pods
    (at most 500 per sync, in slow-start batches), the scheduler binds them, the kubelets start them, and
    the ready counts travel back through the ReplicaSet's and the Deployment's status.

For the analysis each phase also prints its milestones (the N-th pod seen created, bound to a node, Ready;
the ReplicaSet's and Deployment's counts reaching N), and the CPU time every cluster process used in it.

The cluster is `mkpy up --nodes 0 --simulated-nodes 50` in a private MKPY_HOME, deleted at the end whatever
happens; if a cluster process exits meanwhile, the run stops at once with a MISS saying which. Pods are
plain (one container, no requests, no probes); the simulated nodes "run" them at once. With
`--no-leader-election` the scheduler and the controller manager are started by the benchmark instead of
`mkpy up`, with the same identities and `--leader-elect=false`: under this burst the scheduler's Lease
renewals queue behind its binds and it loses the Lease (docs/benchmarks.md §11).

    python -m bench.deployment_scale [--replicas 1000] [--nodes 50] [--concurrency 32] [--no-leader-election]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.common import ConnectionPool, HTTPSConnection, MkpyHome, TLSFiles, cpu_seconds, verdict
from bench.simulated_nodes import wait_nodes_ready

CLUSTER = "deployscale"
TARGET_RATIO = 1.5
NAMESPACE = "default"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
REPLICA_SETS = f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets"
COMPONENTS = ("etcd", "apiserver", "kcm", "scheduler", "simulated-nodes")
SETTLE_SECONDS = 5.0  # after the bare pods are gone, for the kubelets' cleanup to finish before phase (b)


def pod_spec() -> dict[str, Any]:
    return {"containers": [{"name": "web", "image": "busybox"}]}


def bare_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bare"}},
            "spec": pod_spec()}


def deployment(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()}}}


def is_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


@dataclass
class Milestones:
    """When (seconds after `began`) each named count first reached `expected`."""

    expected: int
    began: float = 0.0
    at: dict[str, float] = field(default_factory=dict)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def reached(self, what: str, count: int) -> None:
        if count >= self.expected and what not in self.at:
            self.at[what] = time.perf_counter() - self.began

    def mark(self, what: str) -> None:
        """Record that `what` happened, the first time it does."""
        self.at.setdefault(what, time.perf_counter() - self.began)

    def show(self) -> str:
        return ", ".join(f"{what} {seconds:.1f} s" for what, seconds in sorted(self.at.items(), key=lambda i: i[1]))


class PodTally:
    """Pods as a watch reports them: which exist, which are bound to a node, which are Ready."""

    def __init__(self, milestones: Milestones, *, finish_when_ready: bool) -> None:
        self.milestones = milestones
        self.finish_when_ready = finish_when_ready
        self.seen: set[str] = set()
        self.bound: set[str] = set()
        self.ready: set[str] = set()
        self.quartiles: dict[str, dict[int, float]] = {"created": {}, "bound": {}, "Ready": {}}

    def __call__(self, kind: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            return
        self.seen.add(name)
        self.milestones.mark("first pod created")
        if (pod.get("spec") or {}).get("nodeName"):
            self.bound.add(name)
        if is_ready(pod):
            self.ready.add(name)
        for what, pods in (("created", self.seen), ("bound", self.bound), ("Ready", self.ready)):
            self.milestones.reached(f"pods {what}", len(pods))
            for quarter in (1, 2, 3, 4):
                if len(pods) * 4 >= quarter * self.milestones.expected:
                    self.quartiles[what].setdefault(quarter, time.perf_counter() - self.milestones.began)
        if self.finish_when_ready and len(self.ready) >= self.milestones.expected:
            self.milestones.done.set()

    def show(self) -> str:
        """When a quarter, half, three quarters and all of the pods were created, bound, Ready."""
        return "; ".join(f"{what} " + " / ".join(f"{seconds:.1f}" for _, seconds in sorted(at.items())) + " s"
                         for what, at in self.quartiles.items())


class ComponentExited(RuntimeError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class Cluster:
    """The benchmark's view of the cluster: the lean client, the kubeconfig for helpers, the processes."""

    def __init__(self, home: MkpyHome, own: dict[str, subprocess.Popen[bytes]]) -> None:
        from minikube_py.client.kubeconfig import load_kubeconfig

        pki = home.cluster_dir / "pki"
        self.home = home
        self.own = own  # components the benchmark started itself instead of `mkpy up`
        self.url = load_kubeconfig(str(home.kubeconfig)).server
        self.tls = TLSFiles(pki / "ca.crt", pki / "admin.crt", pki / "admin.key")
        self.pool = ConnectionPool(self.url, self.tls)

    def pids(self) -> dict[str, int]:
        return {name: self.own[name].pid if name in self.own else
                int((self.home.cluster_dir / "run" / f"{name}.pid").read_text()) for name in COMPONENTS}

    def log_path(self, name: str) -> Path:
        return self.home.cluster_dir / "logs" / f"{name}.log"

    async def watch_components(self) -> None:
        """Fail as soon as a cluster process exits (e.g. a component that lost its leader Lease), instead of
        waiting for pods that will never come."""
        pids = self.pids()
        while True:
            for name, pid in pids.items():
                if not alive(pid):
                    tail = self.log_path(name).read_text(errors="replace").splitlines()[-5:]
                    raise ComponentExited(name, f"{name} (pid {pid}) exited during the run; the end of its log "
                                       f"{self.log_path(name)}:\n" + "\n".join(tail))
            await asyncio.sleep(1.0)

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return orjson.loads(await self.pool.request("POST", path, orjson.dumps(body), expect=201))

    async def list_rv(self, path: str) -> tuple[str, int]:
        """The collection's resourceVersion and whether it holds anything (one item is enough to say)."""
        listed = orjson.loads(await self.pool.request("GET", f"{path}&limit=1" if "?" in path else f"{path}?limit=1"))
        return listed["metadata"]["resourceVersion"], len(listed["items"])

    async def watch(self, path: str, on_event: Callable[[str, dict[str, Any]], None]) -> None:
        """Feed every event of `path` after now to `on_event`, until cancelled."""
        rv, _ = await self.list_rv(path)
        connection = await HTTPSConnection.open(self.url, self.tls.context())
        sep = "&" if "?" in path else "?"
        try:
            async for line in connection.lines(f"{path}{sep}watch=true&resourceVersion={rv}"):
                event = orjson.loads(line)
                if event["type"] == "ERROR":
                    raise RuntimeError(f"watch {path}: {event['object']}")
                on_event(event["type"], event["object"])
        finally:
            connection.close()
        raise RuntimeError(f"watch {path} ended early")

    async def wait_for_service_account(self) -> None:
        """Pods are refused until the ServiceAccount controller has made the namespace's `default` account."""
        path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"
        while True:
            try:
                await self.pool.request("GET", path)
                return
            except RuntimeError:
                await asyncio.sleep(0.2)

    async def wait_gone(self, label: str) -> None:
        while (await self.list_rv(f"{PODS}?labelSelector=app%3D{label}"))[1]:
            await asyncio.sleep(0.2)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def run_phase(milestones: Milestones, watches: list[Coroutine[Any, Any, None]],
                    act: Callable[[], Awaitable[None]], timeout: float) -> None:
    """Open the watches, start the clock, `act`, and wait until `milestones.done` (failing as soon as a watch
    fails, or after `timeout`); the watches are closed afterwards."""
    tasks = [asyncio.create_task(watch) for watch in watches]
    finished = asyncio.create_task(milestones.done.wait())
    try:
        await asyncio.sleep(0.5)  # the watches are open (each lists first) before the clock starts
        milestones.began = time.perf_counter()
        await act()
        done, _ = await asyncio.wait([finished, *tasks], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if finished not in done:
            for task in done:
                task.result()
            raise TimeoutError(f"not done after {timeout:.0f} s: {milestones.show() or 'nothing reached'}")
    finally:
        for task in (finished, *tasks):
            task.cancel()
        await asyncio.gather(finished, *tasks, return_exceptions=True)


@dataclass(frozen=True)
class Phase:
    seconds: float  # until done
    milestones: str
    progress: str  # PodTally.show()
    cpu: dict[str, float]  # CPU seconds each cluster process used in the phase


async def bare_pods(cluster: Cluster, count: int, concurrency: int, timeout: float) -> Phase:
    """Phase (a): create `count` pods with `concurrency` connections; until all are Running and Ready."""
    milestones = Milestones(count)
    tally = PodTally(milestones, finish_when_ready=True)
    names = iter(range(count))

    async def creator() -> None:
        for index in names:
            await cluster.post(PODS, bare_pod(f"bare-{index:04d}"))

    async def create_all() -> None:
        await asyncio.gather(*(creator() for _ in range(concurrency)))
        milestones.reached("creates answered", count)

    pids = cluster.pids()
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    await run_phase(milestones, [cluster.watch_components(), cluster.watch(f"{PODS}?labelSelector=app%3Dbare", tally)],
                    create_all, timeout)
    cpu = cpu_used(pids, before)
    return Phase(milestones.at["pods Ready"], milestones.show(), tally.show(), cpu)


async def delete_bare_pods(cluster: Cluster, count: int, concurrency: int) -> float:
    began = time.perf_counter()
    names = iter(range(count))

    async def deleter() -> None:
        for index in names:
            await cluster.pool.request("DELETE", f"{PODS}/bare-{index:04d}")

    await asyncio.gather(*(deleter() for _ in range(concurrency)))
    await cluster.wait_gone("bare")
    return time.perf_counter() - began


async def deployment_phase(cluster: Cluster, replicas: int, timeout: float) -> Phase:
    """Phase (b): one Deployment of `replicas`; until its status says they are all updated and available."""
    milestones = Milestones(replicas)
    tally = PodTally(milestones, finish_when_ready=False)

    def replica_set_event(kind: str, replica_set: dict[str, Any]) -> None:
        milestones.mark("ReplicaSet created")
        status = replica_set.get("status") or {}
        for what in ("replicas", "readyReplicas", "availableReplicas"):
            milestones.reached(f"ReplicaSet {what}", int(status.get(what, 0)))

    def deployment_event(kind: str, deployment: dict[str, Any]) -> None:
        status = deployment.get("status") or {}
        if status.get("observedGeneration", 0) < deployment["metadata"].get("generation", 1):
            return
        updated, available = int(status.get("updatedReplicas", 0)), int(status.get("availableReplicas", 0))
        milestones.reached("Deployment updatedReplicas", updated)
        milestones.reached("Deployment availableReplicas", available)
        if updated == available == replicas:
            milestones.done.set()

    async def create() -> None:
        await cluster.post(DEPLOYMENTS, deployment(replicas))

    pids = cluster.pids()
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    await run_phase(milestones, [cluster.watch_components(), cluster.watch(f"{PODS}?labelSelector=app%3Dweb", tally),
                                 cluster.watch(REPLICA_SETS, replica_set_event),
                                 cluster.watch(f"{DEPLOYMENTS}?fieldSelector=metadata.name%3Dweb", deployment_event)],
                    create, timeout)
    cpu = cpu_used(pids, before)
    return Phase(milestones.at["Deployment availableReplicas"], milestones.show(), tally.show(), cpu)


def cpu_used(pids: dict[str, int], before: dict[str, float]) -> dict[str, float]:
    return {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}


def show_cpu(phase: Phase) -> str:
    total = sum(phase.cpu.values())
    return (f"CPU {total:.1f} s in {phase.seconds:.1f} s ({total / phase.seconds:.2f} cores): " +
            ", ".join(f"{name} {seconds:.1f} s ({seconds / phase.seconds:.0%})" for name, seconds in phase.cpu.items()))


async def measure(home: MkpyHome, own: dict[str, subprocess.Popen[bytes]],
                  args: argparse.Namespace) -> tuple[Phase, Phase]:
    cluster = Cluster(home, own)
    try:
        await cluster.wait_for_service_account()
        bare = await bare_pods(cluster, args.replicas, args.concurrency, args.timeout)
        print(f"(a) {args.replicas} bare pods Running and Ready: {bare.seconds:.2f} s  [{bare.milestones}]", flush=True)
        print(f"    pods at 25/50/75/100%: {bare.progress}", flush=True)
        print(f"    {show_cpu(bare)}", flush=True)
        gone = await delete_bare_pods(cluster, args.replicas, args.concurrency)
        print(f"    deleted and gone in {gone:.1f} s", flush=True)
        await asyncio.sleep(SETTLE_SECONDS)
        deployed = await deployment_phase(cluster, args.replicas, args.timeout)
        print(f"(b) Deployment of {args.replicas} replicas available: {deployed.seconds:.2f} s  "
              f"[{deployed.milestones}]", flush=True)
        print(f"    pods at 25/50/75/100%: {deployed.progress}", flush=True)
        print(f"    {show_cpu(deployed)}", flush=True)
        return bare, deployed
    finally:
        cluster.pool.close()


def start_without_leader_election(home: MkpyHome) -> dict[str, subprocess.Popen[bytes]]:
    """The scheduler and the controller manager as `mkpy up` runs them, but with `--leader-elect=false` and
    no /healthz port, logging where `mkpy logs` would."""
    kubeconfigs, pki = home.cluster_dir / "kubeconfigs", home.cluster_dir / "pki"
    argv = {"scheduler": ["scheduler", f"--kubeconfig={kubeconfigs / 'scheduler.conf'}"],
            "kcm": ["kcm", f"--kubeconfig={kubeconfigs / 'controller-manager.conf'}", f"--root-ca-file={pki / 'ca.crt'}"]}
    started = {}
    for name, args in argv.items():
        with open(home.cluster_dir / "logs" / f"{name}.log", "ab") as log:
            started[name] = subprocess.Popen([home.mkpy, *args, "--leader-elect=false", "--secure-port=0"],
                                             env=home.env, stdout=log, stderr=subprocess.STDOUT)
    return started


def stop(own: dict[str, subprocess.Popen[bytes]]) -> None:
    for process in own.values():
        process.terminate()
    for process in own.values():
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=1000, help="pods in each phase")
    parser.add_argument("--nodes", type=int, default=50, help="simulated nodes")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight for the bare pods")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each phase may take")
    parser.add_argument("--no-leader-election", action="store_true",
                        help="run the scheduler and the controller manager with --leader-elect=false")
    args = parser.parse_args()
    what = (f"{args.replicas}-replica Deployment available / {args.replicas} bare pods Ready, on {args.nodes} "
            "simulated nodes")
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-") as root:
        home = MkpyHome(root, CLUSTER)
        own: dict[str, subprocess.Popen[bytes]] = {}
        try:
            without = ["--without", "scheduler", "--without", "kcm"] if args.no_leader_election else []
            home("up", "--nodes", "0", "--simulated-nodes", str(args.nodes), *without, "--no-switch-context")
            if args.no_leader_election:
                own = start_without_leader_election(home)
            asyncio.run(wait_nodes_ready(home.kubeconfig, args.nodes))
            # not uvloop: asyncio.run turns a SIGINT into a cancellation, so the cluster is deleted below
            bare, deployed = asyncio.run(measure(home, own, args))
        except ComponentExited as exited:
            print(exited, flush=True)
            print(f"[MISS] {what}: not measured, the {exited.name} exited during the run "
                  f"(target <= {TARGET_RATIO:g})", flush=True)
            return
        finally:
            stop(own)
            home.delete()
    ratio = deployed.seconds / bare.seconds
    print(f"Deployment {deployed.seconds:.2f} s / bare pods {bare.seconds:.2f} s = {ratio:.2f}")
    verdict(what, ratio, TARGET_RATIO, at_least=False)


if __name__ == "__main__":
    main()

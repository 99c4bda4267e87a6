"""Benchmark (issue 6): simulated nodes at scale — 100 fake-runtime nodes in one process and 5,000 pods.

Targets, each measured in the same run:
* **rate of pods reaching Running ÷ rate of creates ≥ 0.8**: 5,000 pods with `nodeName` preset (spread over
  the nodes) are created through the API as fast as 32 concurrent clients go; the create rate is pods over
  the time from the first request to the last answer, the Running rate pods over the time from the first
  request to the last pod seen Running by a watch. 1.0 means the nodes keep up with the apiserver.
* **extra RSS per simulated node ≤ 1 MiB**: the simulated-nodes process's RSS with 100 nodes minus its RSS
  with 1 node, divided by 99 (both idle, both measured here);
* **idle CPU of 100 simulated nodes ≤ 5% of one core**: the process's user+system time over 30 s with
  nothing to do but heartbeats.

It also prints what the pods cost each process of the cluster (and the benchmark's own), in CPU per pod from
the first create to the last pod Running: the Running rate cannot exceed what the busiest of them manages.

    python -m bench.simulated_nodes [--nodes 100] [--pods 5000] [--idle 30]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from bench.common import MkpyHome, cpu_seconds, rss_mb, verdict

CLUSTER = "simnodes"
RATE_TARGET = 0.8
RSS_TARGET_MIB = 1.0
CPU_TARGET = 0.05  # of one core
CONCURRENCY = 32


def component_pids(home: MkpyHome) -> dict[str, int]:
    """Every running component of the cluster by name (etcd, apiserver, simulated-nodes, ...)."""
    return {path.stem: int(path.read_text()) for path in sorted((home.cluster_dir / "run").glob("*.pid"))}


def simulated_pid(home: MkpyHome) -> int:
    return component_pids(home)["simulated-nodes"]


async def wait_nodes_ready(kubeconfig: Path, count: int) -> None:
    from minikube_py.client import resources
    from minikube_py.client.kubeconfig import load_kubeconfig
    from minikube_py.client.rest import RESTClient

    async with RESTClient(load_kubeconfig(str(kubeconfig))) as client:
        while True:
            nodes = (await client.list(resources.NODES))["items"]
            ready = sum(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or [])
                        for n in nodes)
            if ready >= count:
                return
            await asyncio.sleep(0.5)


async def create_and_watch(kubeconfig: Path, node_names: list[str], count: int) -> tuple[float, float]:
    """(creates per second, pods Running per second)."""
    from minikube_py.client import resources
    from minikube_py.client.kubeconfig import load_kubeconfig
    from minikube_py.client.rest import RESTClient

    async with RESTClient(load_kubeconfig(str(kubeconfig))) as client:
        namespace = f"bench-{uuid.uuid4().hex[:6]}"
        await client.create(resources.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": namespace}})
        listed = await client.list(resources.PODS, namespace)
        running: set[str] = set()
        done = asyncio.Event()

        async def watch() -> None:
            async for event in client.watch(resources.PODS, namespace,
                                            resource_version=listed["metadata"]["resourceVersion"]):
                if (event.object.get("status") or {}).get("phase") == "Running":
                    running.add(event.object["metadata"]["name"])
                    if len(running) == count:
                        done.set()
                        return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.2)
        names = iter(range(count))
        began = time.perf_counter()

        async def creator() -> None:
            for index in names:
                body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{index:05d}"},
                        "spec": {"nodeName": node_names[index % len(node_names)],
                                 "containers": [{"name": "main", "image": "busybox"}]}}
                await client.create(resources.PODS, body, namespace)

        await asyncio.gather(*(creator() for _ in range(CONCURRENCY)))
        created = time.perf_counter()
        await asyncio.wait_for(done.wait(), 600)
        all_running = time.perf_counter()
        watcher.cancel()
        return count / (created - began), count / (all_running - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-") as root:
        home = MkpyHome(root, CLUSTER)
        kubeconfig = home.kubeconfig
        try:
            home("up", "--nodes", "0", "--simulated-nodes", "1", "--no-switch-context")
            asyncio.run(wait_nodes_ready(kubeconfig, 1))
            time.sleep(3)
            rss_one = rss_mb(simulated_pid(home))
            home("up", "--simulated-nodes", str(args.nodes), "--no-switch-context")
            asyncio.run(wait_nodes_ready(kubeconfig, args.nodes))
            time.sleep(5)
            pid = simulated_pid(home)
            rss_all = rss_mb(pid)
            cpu_before = cpu_seconds(pid)
            time.sleep(args.idle)
            idle_cpu = (cpu_seconds(pid) - cpu_before) / args.idle
            names = [f"{CLUSTER}-sim-{i:03d}" for i in range(1, args.nodes + 1)]
            pids = component_pids(home)
            before = {name: cpu_seconds(pid) for name, pid in pids.items()} | {"benchmark": time.process_time()}
            create_rate, running_rate = asyncio.run(create_and_watch(kubeconfig, names, args.pods))
            after = {name: cpu_seconds(pid) for name, pid in pids.items()} | {"benchmark": time.process_time()}
        finally:
            home.delete()
    per_node_mib = (rss_all - rss_one) / (args.nodes - 1) * 1e6 / 2**20
    print(f"simulated-nodes RSS: {rss_one:.1f} MB with 1 node, {rss_all:.1f} MB with {args.nodes}")
    print(f"idle CPU of {args.nodes} simulated nodes over {args.idle:.0f} s: {idle_cpu * 100:.1f}% of one core")
    print(f"{args.pods} pods: {create_rate:.0f} creates/s, {running_rate:.0f} pods Running/s")
    spent = sorted(((after[name] - before[name]) * 1000 / args.pods, name) for name in after)
    print("CPU per pod, first create to last Running: "
          + ", ".join(f"{name} {ms:.2f} ms" for ms, name in reversed(spent) if ms >= 0.005))
    verdict("pods Running rate / create rate", running_rate / create_rate, RATE_TARGET, at_least=True)
    verdict("extra RSS per simulated node", per_node_mib, RSS_TARGET_MIB, at_least=False, unit=" MiB")
    verdict(f"idle CPU of {args.nodes} simulated nodes", idle_cpu * 100, CPU_TARGET * 100, at_least=False,
            unit="% of a core")


if __name__ == "__main__":
    main()

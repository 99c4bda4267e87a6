"""Benchmark (issue 7): controller reaction — a ReplicaSet scaled from 0 to 100, until all 100 pods exist.

Target: **p99 over 10 repetitions ≤ 1 s** from the scale request to the 100th pod seen ADDED by a watch.
For comparison, in the same run, the time one client takes to create the same 100 pods itself (32 at a
time): the controller's figure over that one is what the controller costs beyond the writes it must make.

The cluster is `mkpy up --nodes 0` in a private MKPY_HOME: the pods stay Pending, unscheduled, so scaling back
to 0 deletes them at once and each repetition starts from nothing.

    python -m bench.controller_reaction [--replicas 100] [--repetitions 10]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import MkpyHome, verdict

CLUSTER = "reaction"
TARGET_SECONDS = 1.0
CONCURRENCY = 32


def replica_set(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "react"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "react"}},
                     "template": {"metadata": {"labels": {"app": "react"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


async def count_pods(client: Any, label: str, expected: int, ready: asyncio.Event) -> float:
    """Watch pods with `label` from now; the moment the `expected`-th one is added."""
    from minikube_py.client import resources

    listed = await client.list(resources.PODS, "default", label_selector=label, limit=1)
    seen = 0
    async for event in client.watch(resources.PODS, "default", label_selector=label,
                                    resource_version=listed["metadata"]["resourceVersion"]):
        ready.set()
        if event.type == "ADDED":
            seen += 1
            if seen == expected:
                return time.perf_counter()
    raise RuntimeError("the watch ended early")


async def timed(client: Any, label: str, expected: int, act: Any) -> float:
    ready = asyncio.Event()
    watcher = asyncio.create_task(count_pods(client, label, expected, ready))
    await asyncio.sleep(0.2)  # the watch is open (events only arrive once something happens)
    began = time.perf_counter()
    await act()
    done = await asyncio.wait_for(watcher, 60)
    return done - began


async def wait_gone(client: Any, label: str) -> None:
    from minikube_py.client import resources

    while (await client.list(resources.PODS, "default", label_selector=label))["items"]:
        await asyncio.sleep(0.1)


async def measure(kubeconfig: Path, replicas: int, repetitions: int) -> tuple[list[float], list[float]]:
    from minikube_py.client import resources
    from minikube_py.client.kubeconfig import load_kubeconfig
    from minikube_py.client.rest import RESTClient

    async with RESTClient(load_kubeconfig(str(kubeconfig))) as client:
        await client.create(resources.REPLICA_SETS, replica_set(0), "default")
        controller, direct = [], []
        for _ in range(repetitions):
            async def scale(count: int) -> None:
                await client.patch(resources.REPLICA_SETS, "react", {"spec": {"replicas": count}}, "default")
            controller.append(await timed(client, "app=react", replicas, lambda: scale(replicas)))
            await scale(0)
            await wait_gone(client, "app=react")

            async def create_directly() -> None:
                names = iter(range(replicas))

                async def creator() -> None:
                    for index in names:
                        body = {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": f"direct-{index}", "labels": {"app": "direct"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
                        await client.create(resources.PODS, body, "default")
                await asyncio.gather(*(creator() for _ in range(CONCURRENCY)))
            direct.append(await timed(client, "app=direct", replicas, create_directly))
            for index in range(replicas):
                await client.delete(resources.PODS, f"direct-{index}", "default")
            await wait_gone(client, "app=direct")
        return controller, direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--repetitions", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-") as root:
        home = MkpyHome(root, CLUSTER)
        try:
            home("up", "--nodes", "0", "--no-switch-context")
            controller, direct = asyncio.run(measure(home.kubeconfig, args.replicas, args.repetitions))
        finally:
            home.delete()
    controller.sort()
    direct.sort()
    p99 = controller[min(len(controller) - 1, int(0.99 * len(controller)))]
    print(f"ReplicaSet 0 -> {args.replicas}, {args.repetitions} times: p50 {controller[len(controller) // 2]:.3f} s, "
          f"p99 {p99:.3f} s; one client creating the same pods: p50 {direct[len(direct) // 2]:.3f} s")
    print(f"controller / direct (p50): {controller[len(controller) // 2] / direct[len(direct) // 2]:.2f}")
    verdict(f"ReplicaSet 0 -> {args.replicas} pods created, p99", p99, TARGET_SECONDS, at_least=False, unit=" s")


if __name__ == "__main__":
    main()

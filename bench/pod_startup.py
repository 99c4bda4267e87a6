"""Benchmark (issue 6): pod startup on one containerd node, against the same containerd driven directly.

Kubernetes' pod-startup SLO is 5 s at p99 from creation to Running as seen by a watch. Targets here:
**p99 ≤ 2 s** and **p99 ≤ direct p99 + 1 s**, where "direct" is the floor measured in the same run.

* **mkpy**: `mkpy up --nodes 1` in a private MKPY_HOME; N busybox pods (`sleep 3600`) created at once through
  the API (no nodeName: the scheduler binds them); each pod's latency runs from just before its create
  request to the watch event that shows it Running.
* **direct**: the same node's containerd, N pods started at once over CRI by this script
  (`RunPodSandbox`, `CreateContainer`, `StartContainer`, with the configs the kubelet would build); each
  latency runs until `StartContainer` returned.

What mkpy adds beyond the floor is the apiserver, etcd, the scheduler, the kubelet's watch, sync and
status patch, and the watch back to the client.

    python -m bench.pod_startup [--pods 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.common import verdict

CLUSTER = "podstartup"
P99_TARGET = 2.0  # seconds
OVER_DIRECT_TARGET = 1.0  # seconds


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


async def through_mkpy(kubeconfig: Path, count: int) -> list[float]:
    from minikube_py.client import resources
    from minikube_py.client.kubeconfig import load_kubeconfig
    from minikube_py.client.rest import RESTClient

    async with RESTClient(load_kubeconfig(str(kubeconfig))) as client:
        namespace = f"bench-{uuid.uuid4().hex[:6]}"
        await client.create(resources.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": namespace}})
        listed = await client.list(resources.PODS, namespace)
        sent: dict[str, float] = {}
        running: dict[str, float] = {}

        async def watch() -> None:
            async for event in client.watch(resources.PODS, namespace,
                                            resource_version=listed["metadata"]["resourceVersion"]):
                name = event.object.get("metadata", {}).get("name", "")
                if (event.object.get("status") or {}).get("phase") == "Running" and name not in running:
                    running[name] = time.perf_counter()
                    if len(running) == count:
                        return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.2)  # the watch is open before the first create

        async def create(name: str) -> None:
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                    "spec": {"terminationGracePeriodSeconds": 0,
                             "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}}
            sent[name] = time.perf_counter()
            await client.create(resources.PODS, body, namespace)

        await asyncio.gather(*(create(f"p{i:03d}") for i in range(count)))
        await asyncio.wait_for(watcher, 120)
        latencies = [running[name] - sent[name] for name in sent]
        await client.delete(resources.NAMESPACES, namespace)
        return latencies


async def direct(socket: str, count: int, logs_dir: Path, cgroup_root: str) -> list[float]:
    from minikube_py.kubelet import containerconfig
    from minikube_py.kubelet.cri.client import RuntimeClient
    from minikube_py.kubelet.images.builtin import BUSYBOX_IMAGE

    async with RuntimeClient(socket) as runtime:
        image = await runtime.image_status(BUSYBOX_IMAGE)
        assert image is not None, "the node has no busybox image"

        async def start(index: int) -> tuple[float, str]:
            pod = {"metadata": {"name": f"direct-{index:03d}", "namespace": "bench", "uid": str(uuid.uuid4())},
                   "spec": {}}
            container = {"name": "main", "image": "busybox", "command": ["sleep", "3600"]}
            began = time.perf_counter()
            sandbox_config = containerconfig.sandbox_config(pod, 0, logs_dir, cgroup_root)
            Path(sandbox_config.log_directory, "main").mkdir(parents=True, exist_ok=True)
            sandbox = await runtime.run_pod_sandbox(sandbox_config)
            config = containerconfig.container_config(pod, container, image_ref=image.id, restart_count=0, env={},
                                                      command=container["command"], args=[], mounts=[], init=False)
            container_id = await runtime.create_container(sandbox, config, sandbox_config)
            await runtime.start_container(container_id)
            return time.perf_counter() - began, sandbox

        results = await asyncio.gather(*(start(i) for i in range(count)))
        for _, sandbox in results:
            await runtime.stop_pod_sandbox(sandbox)
            await runtime.remove_pod_sandbox(sandbox)
        return [latency for latency, _ in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=30)
    args = parser.parse_args()
    from minikube_py.kubelet.runtime.containerd import available

    can_run, why = available()
    if not can_run:
        sys.exit(f"pod_startup needs containerd: {why}")
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-") as root:
        env = {**os.environ, "HOME": root, "MKPY_HOME": f"{root}/mkpy", "KUBECONFIG": f"{root}/kube/config"}
        mkpy = [str(Path(sys.executable).parent / "mkpy")]
        subprocess.run([*mkpy, "up", "--name", CLUSTER, "--nodes", "1", "--no-switch-context"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        try:
            os.environ["MKPY_HOME"] = env["MKPY_HOME"]
            from minikube_py.cli import nodes
            from minikube_py.cli.cluster import Cluster
            from minikube_py.cli.supervisor import Supervised

            cluster = Cluster.load(CLUSTER)
            node_set = nodes.load(cluster)
            assert node_set is not None
            node = node_set.nodes[0]
            time.sleep(1.0)  # let the node settle after start
            mkpy_latencies = asyncio.run(through_mkpy(cluster.kubeconfig_path, args.pods))
            # The kubelet would remove the direct pods as orphans (they have pod labels but no API object).
            Supervised(f"kubelet-{node.name}", cluster.dir).stop()
            direct_latencies = asyncio.run(direct(str(nodes.runtime_socket(cluster, node)), args.pods,
                                                  Path(root) / "direct-logs", nodes.cgroup_root(cluster, node)))
        finally:
            subprocess.run([*mkpy, "delete", "--name", CLUSTER], env=env, stdout=subprocess.DEVNULL)
    for label, values in (("mkpy (create → Running via watch)", mkpy_latencies),
                          ("direct CRI (RunPodSandbox → StartContainer)", direct_latencies)):
        print(f"{label:<46} p50 {percentile(values, 0.5):.2f} s   p99 {percentile(values, 0.99):.2f} s   "
              f"max {max(values):.2f} s")
    p99, direct_p99 = percentile(mkpy_latencies, 0.99), percentile(direct_latencies, 0.99)
    verdict(f"pod startup p99 ({args.pods} pods, one containerd node)", p99, P99_TARGET, at_least=False, unit=" s")
    verdict("pod startup p99 - direct CRI p99", p99 - direct_p99, OVER_DIRECT_TARGET, at_least=False, unit=" s")


if __name__ == "__main__":
    main()

"""Benchmark (issue 8): how long a new node waits for the cloud controller manager. Target: **from the node's
registration to the removal of its `node.cloudprovider.kubernetes.io/uninitialized` taint, p99 over 20 nodes
≤ 1 s**.

A kubelet started with `--cloud-provider=external` registers its Node with that NoSchedule taint; the CCM's
cloud-node controller sees the Node through its informer, asks the cloud for the instance's metadata (the local
cloud reads its state file), writes providerID, labels and the taint list without the taint in one update,
then patches the addresses. Until then no pod can be scheduled there.

How. `mkpy up --nodes 0` in a private MKPY_HOME and HOME (the control plane and the CCM, settled), then, while
the benchmark watches Nodes, a second `mkpy up --simulated-nodes 1` (a sanity line: one node alone) and a
third `mkpy up --simulated-nodes 21` (20 more nodes registering at once; `mkpy up` launches each as a VM of
the local cloud before starting the simulated kubelets, which register with `--cloud-provider=external` like
real ones). For every new node the watch records when it first saw the Node (the ADDED event, tainted) and the
first event in which the taint is gone; both timestamps come from the same watch, so its delivery delay
cancels out. The cluster is deleted at the end, whatever happens.

`--extra-config` is passed to the first `mkpy up`, to try the CCM with other flags, e.g.
`--extra-config ccm.concurrent-node-syncs=4` (kube's flag: cloud-node workers, default 1) or
`--extra-config ccm.configure-cloud-routes=false` (no route controller).

    python -m bench.ccm_node_init [--nodes 20] [--extra-config COMPONENT.FLAG=VALUE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import MkpyHome, cpu_seconds, percentile, verdict
from minikube_py.ccm.controllers.node import has_uninitialized_taint

CLUSTER = "ccmnodeinit"
P99_TARGET = 1.0  # seconds
TIMEOUT = 120.0  # seconds the nodes have to register and be initialized
COMPONENTS = ("etcd", "apiserver", "kcm", "ccm", "scheduler", "simulated-nodes")


class CpuUse:
    """CPU seconds each cluster process and the whole machine used from construction to `report()` (a process
    started meanwhile, such as a restarted simulated-nodes, counts from its start)."""

    def __init__(self, home: MkpyHome) -> None:
        self._run = home.cluster_dir / "run"
        self._began = time.perf_counter()
        self._machine = machine_busy_seconds()
        self._before = {name: (pid, cpu_seconds(pid)) for name in COMPONENTS if (pid := self._pid(name))}

    def _pid(self, name: str) -> int | None:
        try:
            pid = int((self._run / f"{name}.pid").read_text())
            cpu_seconds(pid)
        except (OSError, ValueError):
            return None
        return pid

    def report(self) -> str:
        elapsed = time.perf_counter() - self._began
        used = {}
        for name in COMPONENTS:
            pid = self._pid(name)
            if pid is not None:
                before_pid, before = self._before.get(name, (None, 0.0))
                used[name] = cpu_seconds(pid) - (before if before_pid == pid else 0.0)
        machine = (machine_busy_seconds() - self._machine) / elapsed
        return (f"CPU in {elapsed:.1f} s: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in used.items())
                + f"; the whole machine {machine:.2f} of {os.cpu_count()} cores busy")


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy (not idle, not waiting for I/O) since boot."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


async def add_nodes(home: MkpyHome, simulated: int) -> tuple[dict[str, float], dict[str, float], float, str]:
    """Run `mkpy up --simulated-nodes simulated` while watching Nodes. For each node that appears: when the
    watch first saw it, when it first saw it without the uninitialized taint (perf_counter seconds after the
    `mkpy up` started); how long `mkpy up` took; the CPU the cluster used until the last node was initialized."""
    from minikube_py.client import resources
    from minikube_py.client.kubeconfig import load_kubeconfig
    from minikube_py.client.rest import RESTClient

    async with RESTClient(load_kubeconfig(str(home.kubeconfig))) as client:
        listed = await client.list(resources.NODES)
        existing = {node["metadata"]["name"] for node in listed["items"]}
        wanted = simulated - sum(1 for name in existing if "-sim-" in name)
        registered: dict[str, float] = {}
        initialized: dict[str, float] = {}

        async def watch() -> None:
            async for event in client.watch(resources.NODES, resource_version=listed["metadata"]["resourceVersion"]):
                name = event.object.get("metadata", {}).get("name", "")
                if event.type not in ("ADDED", "MODIFIED") or name in existing:
                    continue
                now = time.perf_counter() - began
                registered.setdefault(name, now)
                if not has_uninitialized_taint(event.object):
                    initialized.setdefault(name, now)
                    if len(initialized) == wanted:
                        return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.2)  # the watch is open before the first node registers
        began = time.perf_counter()
        cpu = CpuUse(home)
        up = await asyncio.create_subprocess_exec(
            home.mkpy, "up", "--simulated-nodes", str(simulated), "--name", home.cluster, "--no-switch-context",
            env=home.env, stdout=subprocess.DEVNULL)
        try:
            await asyncio.wait_for(watcher, TIMEOUT)
            used = cpu.report()
        except TimeoutError:
            raise RuntimeError(f"after {TIMEOUT:g} s: {len(registered)} of {wanted} nodes registered, "
                               f"{len(initialized)} initialized") from None
        finally:
            if await up.wait() != 0:
                raise RuntimeError(f"mkpy up --simulated-nodes {simulated} failed (exit {up.returncode})")
        return registered, initialized, time.perf_counter() - began, used


def report(label: str, registered: dict[str, float], initialized: dict[str, float], up_seconds: float,
           used: str) -> float:
    """Print one phase's figures; its p99 (registered → taint removed)."""
    latencies = [initialized[name] - registered[name] for name in registered]
    p99 = percentile(latencies, 99)
    print(f"{label:<22} registered → taint removed: p50 {percentile(latencies, 50):.3f} s   p99 {p99:.3f} s   "
          f"max {max(latencies):.3f} s   (nodes registered {min(registered.values()):.2f}–"
          f"{max(registered.values()):.2f} s after `mkpy up` began, initialized by "
          f"{max(initialized.values()):.2f} s; `mkpy up` took {up_seconds:.2f} s)", flush=True)
    if len(latencies) > 1:
        in_order = sorted(registered, key=registered.__getitem__)
        print("    each, in order of registration: " + " ".join(
            f"{initialized[name] - registered[name]:.2f}" for name in in_order), flush=True)
    print(f"    {used}", flush=True)
    return p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=20, help="nodes added at once in the measured phase")
    parser.add_argument("--extra-config", action="append", default=[], metavar="COMPONENT.FLAG=VALUE",
                        help="passed to the first `mkpy up` (repeatable)")
    args = parser.parse_args()
    extra_config = [option for value in args.extra_config for option in ("--extra-config", value)]
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-") as root:
        home = MkpyHome(root, CLUSTER)
        try:
            home("up", "--nodes", "0", *extra_config, "--no-switch-context")
            flags = f" with {' '.join(args.extra_config)}" if args.extra_config else ""
            print(f"ccm_node_init: control plane up{flags}; load average {os.getloadavg()[0]:.2f}", flush=True)
            report("1 node (sanity)", *asyncio.run(add_nodes(home, 1)))
            p99 = report(f"{args.nodes} nodes at once", *asyncio.run(add_nodes(home, 1 + args.nodes)))
            print(f"ccm_node_init: load average {os.getloadavg()[0]:.2f}; CCM log: "
                  f"{Path(home.cluster_dir, 'logs', 'ccm.log')} (removed with the cluster)", flush=True)
        finally:
            home.delete()
    verdict(f"ccm: node registered → uninitialized taint removed, p99 of {args.nodes} nodes", p99, P99_TARGET,
            at_least=False, unit=" s")


if __name__ == "__main__":
    main()

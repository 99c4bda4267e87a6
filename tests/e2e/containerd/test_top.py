"""`kubectl top` on real containerd nodes (the two-node cluster of conftest.py).

The whole way: the real kubectl → the apiserver's metrics.k8s.io (apiserver/metrics.py) → each kubelet's
`/stats/summary` → CRI ContainerStats → containerd, which reads the containers' cgroups. CPU use is a rate
between two samples, so the first answers may still lack a pod that just started: the test waits for it.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import KubeCluster, wait_until
from tests.e2e.containerd.pods import run_pod, wait_running

pytestmark = pytest.mark.e2e

BUSY_MILLICORES = 100  # a shell spinning in a loop uses most of a core, even on a busy two-core machine


def table(cluster: KubeCluster, *args: str) -> dict[str, dict[str, str]] | None:
    """`kubectl top ...` as {name: {column: value}}; None while kubectl says metrics are not available."""
    result = cluster.kubectl("top", *args, check=False)
    if result.returncode != 0:
        assert "not available" in result.stderr, result.describe()
        return None
    header, *rows = [line.split() for line in result.stdout.splitlines()]
    return {row[0]: dict(zip(header, row, strict=True)) for row in rows}


def millicores(value: str) -> int:
    """kubectl prints CPU as `250m` (or whole cores, `2`)."""
    return int(value[:-1]) if value.endswith("m") else int(value) * 1000


def test_kubectl_top_shows_a_busy_pod_and_the_node_it_runs_on(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "spinner", "while :; do :; done")
    node = wait_running(nodes_cluster, ns, "spinner")["spec"]["nodeName"]

    def spinning() -> dict[str, str] | None:
        pods = table(nodes_cluster, "pod", "-n", ns) or {}
        spinner = pods.get("spinner")
        return spinner if spinner and millicores(spinner["CPU(cores)"]) >= BUSY_MILLICORES else None

    spinner = wait_until(spinning, "kubectl top pod to show the spinner using CPU", timeout=60)
    assert millicores(spinner["CPU(cores)"]) <= 1100  # one shell is one thread: at most one core
    assert spinner["MEMORY(bytes)"].endswith("Mi")

    nodes = wait_until(lambda: table(nodes_cluster, "node"), "kubectl top node", timeout=30)
    assert sorted(nodes) == ["nodes", "nodes-m02"]
    assert millicores(nodes[node]["CPU(cores)"]) >= BUSY_MILLICORES  # the node's figure includes the spinner
    for row in nodes.values():
        assert row["CPU(%)"].endswith("%") and row["MEMORY(%)"].endswith("%")
        assert row["MEMORY(bytes)"].endswith("Mi")

    containers = table(nodes_cluster, "pod", "spinner", "-n", ns, "--containers")
    assert containers is not None and containers["spinner"]["NAME"] == "main"

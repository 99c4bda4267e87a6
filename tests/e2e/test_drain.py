"""`kubectl drain` against a PodDisruptionBudget: the real kubectl evicts through `pods/eviction`, the
disruption controller in `mkpy kcm` keeps the budget's status, and a simulated node's kubelet finishes the
deletions.

Drain is refused (kubectl retries on 429 and gives up at `--timeout`) while the budget allows no disruption,
and goes through once the budget allows both pods to go.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KubeCluster, Mkpy, namespace_manifest, unique, wait_until

REFUSED = "Cannot evict pod as it would violate the pod's disruption budget"


@pytest.fixture(scope="module")
def node_cluster(mkpy: Mkpy) -> Iterator[KubeCluster]:
    name = unique("drain")
    try:
        yield mkpy.up(name, "--nodes", "0", "--simulated-nodes", "1", "--no-switch-context")
    finally:
        mkpy.delete(name)


def bare_pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}


def budget_status(cluster: KubeCluster, namespace: str) -> dict[str, Any]:
    return dict(cluster.kubectl_json("get", "pdb", "web", "-n", namespace).get("status") or {})


def ready_pods(cluster: KubeCluster, namespace: str) -> int:
    pods = cluster.kubectl_json("get", "pods", "-n", namespace)["items"]
    return sum(1 for pod in pods for c in pod.get("status", {}).get("conditions", [])
               if c["type"] == "Ready" and c["status"] == "True")


def test_drain_waits_for_the_disruption_budget(node_cluster: KubeCluster) -> None:
    cluster = node_cluster
    node = cluster.kubectl_json("get", "nodes")["items"][0]["metadata"]["name"]
    namespace = unique("drain")
    cluster.apply_manifest(namespace_manifest(namespace))
    cluster.apply_manifest("---\n".join(yaml.safe_dump(bare_pod(name, node)) for name in ("a", "b")), namespace)
    cluster.apply_manifest(yaml.safe_dump({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}), namespace)
    wait_until(lambda: ready_pods(cluster, namespace) == 2, "both pods running and ready")
    wait_until(lambda: budget_status(cluster, namespace).get("currentHealthy") == 2, "the budget counting 2 pods")

    table = cluster.kubectl("get", "pdb", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert table[1].split()[:4] == ["web", "2", "N/A", "0"]

    refused = cluster.kubectl("drain", node, "--ignore-daemonsets", "--force", "--timeout=5s",
                              expect_failure=True, timeout=60)
    assert REFUSED in refused.output
    assert "(will retry after 5s)" in refused.output
    assert ready_pods(cluster, namespace) == 2  # nothing was evicted

    cluster.kubectl("patch", "pdb", "web", "-n", namespace, "--type=merge", "-p", '{"spec":{"minAvailable":0}}')
    wait_until(lambda: budget_status(cluster, namespace).get("disruptionsAllowed") == 2, "two disruptions allowed")
    drained = cluster.kubectl("drain", node, "--ignore-daemonsets", "--force", "--timeout=60s", timeout=90)
    assert "pod/a evicted" in drained.output and "pod/b evicted" in drained.output
    assert f"node/{node} drained" in drained.output
    assert cluster.kubectl_json("get", "pods", "-n", namespace)["items"] == []
    cluster.kubectl("uncordon", node)

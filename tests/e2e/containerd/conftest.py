"""One cluster of two real containerd nodes for the tests in this package: `mkpy up --nodes 2` on this machine
(root, with containerd installed by scripts/setup-containerd, as CI does), deleted when the package is done."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minikube_py.kubelet.runtime.containerd import available
from tests.e2e.conftest import KubeCluster, Mkpy, namespace_manifest, unique

CLUSTER = "nodes"  # its nodes are "nodes" and "nodes-m02"


@pytest.fixture(scope="package")
def nodes_cluster(mkpy: Mkpy) -> Iterator[KubeCluster]:
    can_run, why = available()
    assert can_run, f"these tests need containerd: {why}"
    try:
        yield mkpy.up(CLUSTER, "--nodes", "2")
    finally:
        mkpy.delete(CLUSTER)


@pytest.fixture()
def ns(nodes_cluster: KubeCluster) -> str:
    name = unique("run")
    nodes_cluster.apply_manifest(namespace_manifest(name))
    return name

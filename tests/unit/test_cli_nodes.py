"""A cluster's node plan (minikube_py/cli/nodes.py) without starting anything: no pod CIDR is planned for a node
(the controller manager's node-ipam allocates them), bridge names stay unique and short, and a nodes.json from an
older mkpy, which did plan one, still loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from minikube_py.cli import nodes
from minikube_py.cli.cluster import Cluster


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MKPY_HOME", str(tmp_path / "mkpy-home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)


def test_a_nodes_json_that_planned_pod_cidrs_still_loads() -> None:
    cluster = Cluster.create_or_load("old")
    (cluster.dir / "nodes.json").write_text(json.dumps({"cluster_cidr": "10.201.0.0/16", "nodes": [
        {"name": "old", "runtime": "containerd", "pod_cidr": "10.201.0.0/24", "kubelet_port": 20001,
         "healthz_port": 20002, "simulated": False}]}))
    loaded = nodes.load(cluster)
    assert loaded is not None
    assert loaded.nodes == [nodes.Node("old", "containerd", 20001, 20002)]
    nodes.save(cluster, loaded)
    assert "pod_cidr" not in (cluster.dir / "nodes.json").read_text()


def test_no_component_is_told_a_pod_cidr(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster.create_or_load("plain")
    monkeypatch.setattr("minikube_py.kubelet.runtime.containerd.available", lambda: (False, "not here"))
    node_set, _ = nodes.plan(cluster, 2, 1)
    assert "pod_cidr" not in (cluster.dir / "nodes.json").read_text()
    real, _, simulated = node_set.nodes
    argvs = [nodes.kubelet_argv(cluster, real), nodes.runtime_argv(cluster, real)]
    assert not [arg for argv in argvs for arg in argv if arg.startswith("--pod-cidr")]
    hollow_config = Path(nodes._hollow_nodes_argv(cluster, [simulated])[-1].removeprefix("--config="))
    assert [set(entry) for entry in json.loads(hollow_config.read_text())["nodes"]] == [
        {"name", "kubeconfig", "socket", "root_dir", "cloud_provider"}]


def test_bridge_names_are_short_stable_and_unique_per_node_and_cluster() -> None:
    first, second = Cluster.create_or_load("first"), Cluster.create_or_load("second")
    node, other = nodes.Node("mkpy", "containerd", 1, 2), nodes.Node("mkpy-m02", "containerd", 3, 4)
    names = {nodes.bridge_name(cluster, each) for cluster in (first, second) for each in (node, other)}
    assert len(names) == 4
    assert all(re.fullmatch(r"mk[0-9a-f]{11}", name) for name in names)  # a Linux interface name: ≤ 15 bytes
    assert nodes.bridge_name(first, node) == nodes.bridge_name(Cluster.create_or_load("first"), node)

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


def test_a_fake_runtime_node_keeps_its_kubelet_files_in_memory_and_delete_removes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = tmp_path / "shm"
    memory.mkdir()
    monkeypatch.setattr(nodes, "MEMORY_ROOT", memory)
    monkeypatch.setattr(nodes, "_is_tmpfs", lambda path: path == memory)
    monkeypatch.setattr("minikube_py.kubelet.runtime.containerd.available", lambda: (False, "not here"))
    cluster = Cluster.create_or_load("mem")
    node_set, _ = nodes.plan(cluster, 1, 2)
    fake, simulated, _ = node_set.nodes
    real = nodes.Node("mem-m09", "containerd", 1, 2)
    assert nodes.kubelet_root_dir(cluster, real) == nodes.node_dir(cluster, real) / "kubelet"
    for node in (fake, simulated):
        root = nodes.kubelet_root_dir(cluster, node)
        assert root.is_relative_to(memory) and root.parts[-2:] == (node.name, "kubelet")
    assert f"--root-dir={nodes.kubelet_root_dir(cluster, fake)}" in nodes.kubelet_argv(cluster, fake)
    hollow_config = Path(nodes._hollow_nodes_argv(cluster, [simulated])[-1].removeprefix("--config="))
    assert json.loads(hollow_config.read_text())["nodes"][0]["root_dir"] == str(
        nodes.kubelet_root_dir(cluster, simulated))
    (nodes.kubelet_root_dir(cluster, simulated) / "pods").mkdir(parents=True)
    nodes.remove_host_state(cluster)
    assert list(memory.iterdir()) == []


def test_without_a_tmpfs_the_kubelet_files_stay_in_the_node_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodes, "MEMORY_ROOT", tmp_path)  # a directory, not a tmpfs mount point
    cluster = Cluster.create_or_load("disk")
    node = nodes.Node("disk-sim-001", "fake", 1, 2, simulated=True)
    assert nodes.kubelet_root_dir(cluster, node) == nodes.node_dir(cluster, node) / "kubelet"

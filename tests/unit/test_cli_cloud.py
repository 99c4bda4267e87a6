"""`mkpy cloud`: the local cloud's console over a cluster directory in a temporary MKPY_HOME.

The cluster is only its directory (cluster.json, nodes.json, the cloud config and state): no etcd, apiserver
or kubelet runs. Stopping and terminating act on tiny Python sleepers standing in for a node's kubelet and
runtime; starting real node processes is left to tests/e2e (here the start itself is replaced).
"""

from __future__ import annotations

import sys

import click
import pytest
import yaml
from click.testing import CliRunner

from minikube_py.ccm.cloud.local.config import parse
from minikube_py.ccm.cloud.local.instances import launch_instances
from minikube_py.ccm.cloud.local.state import CloudStateStore
from minikube_py.cli import cloud as cloud_module
from minikube_py.cli import nodes
from minikube_py.cli.cloud import cloud, cloud_config_path, launch, state_path, write_cloud_config
from minikube_py.cli.cluster import Cluster

NODES = [nodes.Node("mkpy", "fake", 20001, 20002),
         nodes.Node("mkpy-m02", "fake", 20003, 20004),
         nodes.Node("mkpy-sim-001", "fake", 20005, 20006, simulated=True)]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MKPY_HOME", str(tmp_path / "mkpy-home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)


@pytest.fixture
def cluster():
    """A cluster "mkpy" with two real nodes and a simulated one, each launched as a VM."""
    created = Cluster.create_or_load("mkpy")
    nodes.save(created, nodes.NodeSet("10.200.0.0/16", list(NODES)))
    config = parse(write_cloud_config(created).read_text())
    launch_instances(config, CloudStateStore(config.state_file), [node.name for node in NODES])
    return created


@pytest.fixture
def powered_on(monkeypatch):
    """Replaces booting a node's processes; the nodes booted."""
    booted = []
    monkeypatch.setattr(cloud_module, "_power_on", lambda cluster, node_set, node: booted.append(node.name))
    return booted


def mkpy_cloud(*args: str):
    return CliRunner().invoke(cloud, list(args), prog_name="mkpy cloud")


def instance_state(cluster: Cluster, node: str) -> str:
    return CloudStateStore(state_path(cluster)).read()["instances"].get(node, {}).get("state", "")


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines()]


def fails_with_one_line(result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.startswith("Error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


# the cloud config ------------------------------------------------------------------------------------------

def test_the_cloud_config_names_the_cluster_its_state_and_a_loopback_network_of_its_own():
    created = Cluster.create_or_load("dev")
    config = parse(write_cloud_config(created).read_text())
    assert (config.cluster_name, config.state_file) == ("dev", state_path(created))
    first, second = str(config.load_balancer_cidr).split(".")[:2]
    assert first == "127" and 100 <= int(second) <= 199 and config.load_balancer_cidr.prefixlen == 24


def test_the_cloud_config_is_written_once_and_edits_are_kept():
    created = Cluster.create_or_load("dev")
    path = write_cloud_config(created)
    edited = path.read_text().replace("local-b", "local-c")
    path.write_text(edited)
    assert write_cloud_config(created).read_text() == edited


def test_the_load_balancer_network_is_deterministic_and_never_another_clusters():
    first = Cluster.create_or_load("a")
    chosen = parse(write_cloud_config(first).read_text()).load_balancer_cidr
    cloud_config_path(first).unlink()
    assert parse(write_cloud_config(first).read_text()).load_balancer_cidr == chosen
    second = Cluster.create_or_load("b")
    wanted = cloud_module._choose_load_balancer_cidr(second)
    text = yaml.safe_load(cloud_config_path(first).read_text())
    cloud_config_path(first).write_text(yaml.safe_dump({**text, "loadBalancerCIDR": str(wanted)}))
    assert parse(write_cloud_config(second).read_text()).load_balancer_cidr != wanted


# the tables ------------------------------------------------------------------------------------------------

def test_instances_lists_every_vm_with_its_zone_and_state(cluster):
    result = mkpy_cloud("instances")
    assert result.exit_code == 0, result.output
    assert rows(result.output) == [
        ["NAME", "PROVIDER-ID", "TYPE", "ZONE", "REGION", "STATE"],
        ["mkpy", "local://mkpy/mkpy", "local.standard", "local-a", "local", "running"],
        ["mkpy-m02", "local://mkpy/mkpy-m02", "local.standard", "local-b", "local", "running"],
        ["mkpy-sim-001", "local://mkpy/mkpy-sim-001", "local.standard", "local-a", "local", "running"]]


def test_lbs_and_routes_list_the_state(cluster):
    with CloudStateStore(state_path(cluster)).edit() as state:
        state["loadBalancers"]["a1b2"] = {
            "name": "a1b2", "service": "default/web", "address": "127.100.0.1",
            "ports": [{"protocol": "TCP", "port": 80}, {"protocol": "TCP", "port": 443}],
            "backends": ["127.0.0.1:30080", "127.0.0.1:30443"], "nodes": ["mkpy"]}
        state["loadBalancers"]["c3d4"] = {"name": "c3d4", "service": "default/idle", "address": "127.100.0.2",
                                          "ports": [{"protocol": "TCP", "port": 8080}], "backends": [], "nodes": []}
        state["routes"]["mkpy-uid1"] = {"targetNode": "mkpy-m02", "destinationCIDR": "10.200.1.0/24"}
    assert rows(mkpy_cloud("lbs").output) == [
        ["NAME", "SERVICE", "ADDRESS", "PORTS", "BACKENDS"],
        ["a1b2", "default/web", "127.100.0.1", "80/TCP,443/TCP", "127.0.0.1:30080,127.0.0.1:30443"],
        ["c3d4", "default/idle", "127.100.0.2", "8080/TCP", "<none>"]]
    assert rows(mkpy_cloud("routes").output) == [["NAME", "NODE", "CIDR"],
                                                 ["mkpy-uid1", "mkpy-m02", "10.200.1.0/24"]]


def test_an_empty_cloud_says_so():
    Cluster.create_or_load("dev")
    for command, what in (("instances", "instances"), ("lbs", "load balancers"), ("routes", "routes")):
        result = mkpy_cloud(command, "--name", "dev")
        assert (result.exit_code, result.output) == (0, f'no {what} in the cloud of cluster "dev"\n')


@pytest.mark.parametrize("args", [["instances"], ["lbs"], ["routes"], ["instance", "stop", "mkpy"],
                                  ["instance", "start", "mkpy"], ["instance", "terminate", "mkpy"]])
def test_an_unknown_cluster_is_one_line(args):
    fails_with_one_line(mkpy_cloud(*args, "--name", "nope"), 'cluster "nope" does not exist')


def test_an_unreadable_state_is_one_line(cluster):
    state_path(cluster).write_text("{broken")
    fails_with_one_line(mkpy_cloud("instances"), f"cloud state {state_path(cluster)}")


# the console's actions -------------------------------------------------------------------------------------

def sleeper(cluster: Cluster, component: str, node: nodes.Node):
    """A process standing in for a node's kubelet or runtime, recognised by the supervisor as that component."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)", str(cluster.dir),
            str(nodes.runtime_socket(cluster, node))]
    return next(c for c in nodes.components(cluster, nodes.load(cluster)) if c.name == component).process(
        cluster).start(argv)


def test_stop_ends_the_nodes_kubelet_and_runtime_and_marks_the_vm_stopped(cluster):
    node = NODES[1]
    kubelet, runtime = sleeper(cluster, "kubelet-mkpy-m02", node), sleeper(cluster, "fake-cri-mkpy-m02", node)
    other = sleeper(cluster, "kubelet-mkpy", NODES[0])
    try:
        result = mkpy_cloud("instance", "stop", "mkpy-m02")
        assert result.exit_code == 0, result.output
        assert kubelet.wait(timeout=5) is not None and runtime.wait(timeout=5) is not None
        assert other.poll() is None
    finally:
        for process in (kubelet, runtime, other):
            process.kill()
            process.wait()
    assert instance_state(cluster, "mkpy-m02") == "stopped"
    assert instance_state(cluster, "mkpy") == "running"
    fails_with_one_line(mkpy_cloud("instance", "stop", "mkpy-m02"), "cannot stop instance mkpy-m02: it is stopped")


def test_start_boots_a_stopped_vm_only(cluster, powered_on):
    fails_with_one_line(mkpy_cloud("instance", "start", "mkpy"), "cannot start instance mkpy: it is running")
    assert mkpy_cloud("instance", "stop", "mkpy").exit_code == 0
    result = mkpy_cloud("instance", "start", "mkpy")
    assert result.exit_code == 0, result.output
    assert powered_on == ["mkpy"]
    assert instance_state(cluster, "mkpy") == "running"


def test_start_boots_the_runtime_then_the_kubelet_of_that_node_only(cluster, monkeypatch):
    booted = []
    monkeypatch.setattr("minikube_py.cli.lifecycle.bring_up",
                        lambda console, cluster, component: booted.append(component.name))
    assert mkpy_cloud("instance", "stop", "mkpy-m02").exit_code == 0
    assert mkpy_cloud("instance", "start", "mkpy-m02").exit_code == 0
    assert booted == ["fake-cri-mkpy-m02", "kubelet-mkpy-m02"]


def test_a_failed_boot_leaves_the_vm_stopped_to_start_again(cluster, monkeypatch):
    def fail(cluster, node_set, node):
        raise click.ClickException("kubelet-mkpy exited with code 1")

    assert mkpy_cloud("instance", "stop", "mkpy").exit_code == 0
    monkeypatch.setattr(cloud_module, "_power_on", fail)
    fails_with_one_line(mkpy_cloud("instance", "start", "mkpy"), "kubelet-mkpy exited with code 1")
    assert instance_state(cluster, "mkpy") == "stopped"


def test_terminate_ends_the_vm_for_good_and_removes_the_node_from_the_cluster(cluster, powered_on):
    assert mkpy_cloud("instance", "stop", "mkpy-m02").exit_code == 0
    result = mkpy_cloud("instance", "terminate", "mkpy-m02")
    assert result.exit_code == 0, result.output
    assert instance_state(cluster, "mkpy-m02") == "terminated"
    assert [node.name for node in nodes.load(cluster).nodes] == ["mkpy", "mkpy-sim-001"]
    assert ["mkpy-m02", "local://mkpy/mkpy-m02", "local.standard", "local-b", "local", "terminated"] in rows(
        mkpy_cloud("instances").output)
    fails_with_one_line(mkpy_cloud("instance", "start", "mkpy-m02"), "cannot start instance mkpy-m02: it is terminated")
    fails_with_one_line(mkpy_cloud("instance", "terminate", "mkpy-m02"), "it is terminated")
    assert powered_on == []


@pytest.mark.parametrize("action", ["stop", "terminate"])
def test_a_simulated_node_cannot_be_stopped_or_terminated_alone(cluster, action):
    fails_with_one_line(mkpy_cloud("instance", action, "mkpy-sim-001"), "mkpy-sim-001 is a simulated node")
    assert instance_state(cluster, "mkpy-sim-001") == "running"
    assert nodes.load(cluster).find("mkpy-sim-001") is not None


@pytest.mark.parametrize("action", ["stop", "start", "terminate"])
def test_an_unknown_node_is_one_line_listing_the_instances(cluster, action):
    fails_with_one_line(mkpy_cloud("instance", action, "ghost"),
                        'has no instance "ghost" (instances: mkpy, mkpy-m02, mkpy-sim-001)')


def test_up_launches_new_nodes_and_keeps_the_state_of_known_ones(cluster, powered_on):
    assert mkpy_cloud("instance", "stop", "mkpy-m02").exit_code == 0
    states = launch(cluster, ["mkpy", "mkpy-m02", "mkpy-m03"])
    assert states["mkpy-m02"] == "stopped"  # `mkpy up` does not boot a stopped VM
    assert states["mkpy-m03"] == states["mkpy"] == "running"
    assert instance_state(cluster, "ghost") == ""


def test_up_with_a_broken_cloud_config_is_one_line(cluster):
    cloud_config_path(cluster).write_text("zones: [\n")
    with pytest.raises(click.ClickException, match="cloud-config.yaml: cloud config is not YAML"):
        launch(cluster, ["mkpy"])

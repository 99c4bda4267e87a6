"""The kubelet next to the cloud controllers: the conditions it does not own survive its status reports, and
with `--cloud-provider=external` it annotates its `--node-ip` and leaves the Node's addresses to the cloud
controller once there are any (kube 1.32's NodeAddress setter). The Node lives in tests/kubelet/test_node.py's
NodeClient, which applies patches with the apiserver's own code; the last test runs against the real apiserver."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest

from minikube_py.client import resources
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.kubelet import nodestatus
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.node import NodeAgent
from tests.harness import ControlPlane
from tests.kubelet.test_node import NodeClient, RuntimeNetwork, marked_unknown, registered

ANNOTATION = "alpha.kubernetes.io/provided-node-ip"
NETWORK_AVAILABLE = {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated",
                     "message": "RouteController created a route", "lastHeartbeatTime": "2030-01-01T00:00:00Z",
                     "lastTransitionTime": "2030-01-01T00:00:00Z"}
CLOUD_ADDRESSES = [{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "ExternalIP", "address": "203.0.113.5"},
                   {"type": "Hostname", "address": "sim-1.cloud.internal"}]


def written_by_others(client: NodeClient, conditions: list[dict[str, Any]] = (), **status: Any) -> dict[str, Any]:
    """Another writer (the route controller, the cloud node controller) changes the Node's status; the Node
    as the kubelet's watch then sees it."""
    client.node["status"]["conditions"] += copy.deepcopy(list(conditions))
    client.node["status"].update(copy.deepcopy(status))
    return copy.deepcopy(client.node)


def condition_types(node: dict[str, Any]) -> list[str]:
    return [c["type"] for c in node["status"]["conditions"]]


# (a) conditions the kubelet does not own --------------------------------------------------------------------

async def test_a_status_report_keeps_the_conditions_other_writers_set(tmp_path: Path) -> None:
    agent, client, _ = await registered(tmp_path)
    agent.informer.indexer.add(marked_unknown(written_by_others(client, [NETWORK_AVAILABLE])))

    assert await agent.update_status() is True
    (patch,) = client.writes("patch")
    assert patch.options["patch_type"] == "strategic"
    assert [c["type"] for c in patch.body["status"]["conditions"]] == [
        "MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]  # only its own
    network = next(c for c in client.node["status"]["conditions"] if c["type"] == "NetworkUnavailable")
    assert network == NETWORK_AVAILABLE
    assert sorted(condition_types(client.node)) == [
        "DiskPressure", "MemoryPressure", "NetworkUnavailable", "PIDPressure", "Ready"]


async def test_a_condition_added_by_someone_else_is_no_reason_for_a_status_report(tmp_path: Path) -> None:
    agent, client, _ = await registered(tmp_path)
    agent.informer.indexer.add(written_by_others(client, [NETWORK_AVAILABLE]))
    assert await agent.update_status() is False
    assert client.writes("patch") == []


# (b) --cloud-provider=external: provided-node-ip and the cloud's addresses ----------------------------------

@pytest.mark.parametrize("cloud_provider, node_ip, annotation, addresses", [
    ("external", "192.168.5.7", "192.168.5.7",
     [{"type": "InternalIP", "address": "192.168.5.7"}, {"type": "Hostname", "address": "sim-1"}]),
    ("external", "", None, [{"type": "Hostname", "address": "sim-1"}]),  # the cloud will tell the IPs
    ("external", "0.0.0.0", None,
     [{"type": "InternalIP", "address": "0.0.0.0"}, {"type": "Hostname", "address": "sim-1"}]),
    ("", "192.168.5.7", None,
     [{"type": "InternalIP", "address": "192.168.5.7"}, {"type": "Hostname", "address": "sim-1"}]),
])
async def test_the_registered_node_carries_the_provided_node_ip_only_with_an_external_cloud_provider(
        tmp_path: Path, cloud_provider: str, node_ip: str, annotation: str | None,
        addresses: list[dict[str, str]]) -> None:
    _, client, _ = await registered(tmp_path, cloud_provider=cloud_provider, node_ip=node_ip)
    annotations = client.node["metadata"]["annotations"]
    assert annotations.get(ANNOTATION) == annotation
    assert annotations["volumes.kubernetes.io/controller-managed-attach-detach"] == "true"
    assert client.node["status"]["addresses"] == addresses


async def test_an_external_kubelet_leaves_the_addresses_the_cloud_controller_set(tmp_path: Path) -> None:
    agent, client, _ = await registered(tmp_path, cloud_provider="external", node_ip="192.168.5.7")
    agent.informer.indexer.add(written_by_others(client, addresses=CLOUD_ADDRESSES))
    assert await agent.update_status() is False  # the new addresses are not a difference to report

    assert await agent.update_status(force=True) is True
    (patch,) = client.writes("patch")
    assert "addresses" not in patch.body["status"]
    assert client.node["status"]["addresses"] == CLOUD_ADDRESSES


async def test_a_kubelet_without_cloud_provider_reports_its_own_addresses_again(tmp_path: Path) -> None:
    agent, client, _ = await registered(tmp_path, node_ip="192.168.5.7")
    agent.informer.indexer.add(written_by_others(client, addresses=CLOUD_ADDRESSES[:1]))
    assert await agent.update_status() is True
    assert client.node["status"]["addresses"][0] == {"type": "InternalIP", "address": "192.168.5.7"}


def test_until_the_node_has_addresses_an_external_kubelet_reports_them() -> None:
    config = KubeletConfig(node_name="sim-1", cloud_provider="external", node_ip="192.168.5.7")
    machine = nodestatus.MachineInfo(1, 1 << 30, 1 << 30, "m", "u", "b", "k", "os")
    observed = nodestatus.Observed(node_ip="192.168.5.7")
    without = nodestatus.node_status(config, machine, observed, {"addresses": []}, "2030-01-01T00:00:00Z")
    assert without["addresses"] == [{"type": "InternalIP", "address": "192.168.5.7"},
                                    {"type": "Hostname", "address": "sim-1"}]
    assert "addresses" not in nodestatus.node_status(config, machine, observed, {"addresses": CLOUD_ADDRESSES},
                                                     "2030-01-01T00:00:00Z")


@pytest.mark.parametrize("cloud_provider, node_ip, expected", [
    ("external", "192.168.5.7", "192.168.5.7"),  # added to a Node registered before --node-ip was given
    ("", "192.168.5.7", None),  # no longer external: the stale annotation goes
])
async def test_re_registration_brings_the_annotation_up_to_date(tmp_path: Path, cloud_provider: str, node_ip: str,
                                                                expected: str | None) -> None:
    _, client, _ = await registered(tmp_path, cloud_provider="external")
    client.node["metadata"]["annotations"][ANNOTATION] = "10.9.9.9"  # from an earlier run, with another IP
    client.actions.clear()

    await registered(tmp_path, client, cloud_provider=cloud_provider, node_ip=node_ip)  # the kubelet restarts
    assert client.node["metadata"]["annotations"].get(ANNOTATION) == expected
    (patch,) = client.writes("patch")
    assert patch.body["metadata"]["annotations"] == {ANNOTATION: expected}


# against the real apiserver ---------------------------------------------------------------------------------

async def test_the_apiserver_merges_the_kubelets_status_patch_next_to_the_route_controllers_condition(
        control_plane: ControlPlane, tmp_path: Path) -> None:
    name = f"cloud-{uuid.uuid4().hex[:6]}"
    async with RESTClient(load_kubeconfig(str(control_plane.kubeconfig))) as client:
        config = KubeletConfig(node_name=name, root_dir=tmp_path, cloud_provider="external", node_ip="192.168.5.7")

        network = RuntimeNetwork(ready=True)

        async def observe() -> nodestatus.Observed:
            return network.observed(config.node_ip)

        agent = NodeAgent(client, config, observe, network.update_runtime_config)
        try:
            registered_node = await agent.register()
            assert registered_node["metadata"]["annotations"][ANNOTATION] == "192.168.5.7"
            # the route controller's condition, and the cloud node controller's addresses
            await client.patch(resources.NODES, name, {"status": {"conditions": [NETWORK_AVAILABLE]}},
                               patch_type="strategic", subresource="status")
            await client.patch(resources.NODES, name, {"status": {"addresses": CLOUD_ADDRESSES}}, subresource="status")

            assert await agent.update_status(force=True) is True
            node = await client.get(resources.NODES, name)
            assert sorted(condition_types(node)) == [
                "DiskPressure", "MemoryPressure", "NetworkUnavailable", "PIDPressure", "Ready"]
            assert node["status"]["addresses"] == CLOUD_ADDRESSES
        finally:
            await client.delete(resources.NODES, name)

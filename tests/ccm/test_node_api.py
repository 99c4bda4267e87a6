"""The cloud-node and cloud-node-lifecycle controllers against a real apiserver, with the fake cloud: the test
plays the kubelet (a Node registered with the uninitialized taint, its Ready condition) and the cloud console
(instances removed, shut down, started again)."""

from __future__ import annotations

import uuid
from typing import Any

from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.context import CloudSettings
from minikube_py.ccm.controllers.node import UNINITIALIZED_TAINT_KEY, CloudNodeController
from minikube_py.ccm.controllers.nodelifecycle import SHUTDOWN_TAINT, CloudNodeLifecycleController
from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from tests.ccm.running import running, wait_for
from tests.harness import ControlPlane

SETTINGS = CloudSettings(node_monitor_period=0.2, node_status_update_frequency=0.3, cloud_call_timeout=2.0)


def kubelet_node(name: str) -> dict[str, Any]:
    """A Node as a kubelet with `--cloud-provider=external` registers it: tainted, Ready, with its own addresses
    (in the one create, as the kubelet sends them, so nothing races the cloud-node controller's addresses)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": [{"key": UNINITIALIZED_TAINT_KEY, "value": "true", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Test"}],
                       "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                     {"type": "Hostname", "address": name}]}}


async def set_ready(client: RESTClient, name: str, status: str) -> None:
    body = {"status": {"conditions": [{"type": "Ready", "status": status, "reason": "Test"}]}}
    await client.patch(resources.NODES, name, body, patch_type="strategic", subresource="status")


async def register(client: RESTClient, cloud: FakeCloud, name: str) -> None:
    cloud.add_instance(name, instance_type="fake.medium", zone="zone-b", region="region-2",
                       addresses=[{"type": "InternalIP", "address": "10.1.2.3"},
                                  {"type": "InternalIP", "address": "10.1.2.4"}])
    await client.create(resources.NODES, kubelet_node(name))


async def node_or_none(client: RESTClient, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(resources.NODES, name)
    except errors.NotFound:
        return None


def taint_keys(node: dict[str, Any] | None) -> list[str]:
    return [taint["key"] for taint in ((node or {}).get("spec") or {}).get("taints") or []]


async def events_about(client: RESTClient, name: str) -> list[tuple[str, str, str]]:
    listed = await client.list(resources.CORE_EVENTS, "default")
    return [(e["type"], e["reason"], e["message"]) for e in listed["items"]
            if e["involvedObject"].get("kind") == "Node" and e["involvedObject"].get("name") == name]


async def test_a_node_is_initialized_from_the_cloud_then_deleted_when_its_instance_is_gone(
        control_plane: ControlPlane) -> None:
    cloud = FakeCloud()
    name = f"ccm-{uuid.uuid4().hex[:6]}"
    async with running(control_plane, cloud, CloudNodeController, CloudNodeLifecycleController,
                       settings=SETTINGS) as client:
        await register(client, cloud, name)

        async def initialized() -> dict[str, Any] | None:
            node = await client.get(resources.NODES, name)
            addresses = (node.get("status") or {}).get("addresses") or []
            done = UNINITIALIZED_TAINT_KEY not in taint_keys(node) and len(addresses) == 3
            return node if done else None

        node = await wait_for(initialized, 10, "the node to be initialized")
        assert node["spec"]["providerID"] == f"fake://{name}"
        labels = node["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == labels["beta.kubernetes.io/instance-type"] == "fake.medium"
        assert labels["topology.kubernetes.io/zone"] == labels["failure-domain.beta.kubernetes.io/zone"] == "zone-b"
        assert labels["topology.kubernetes.io/region"] == "region-2"
        # the whole list was replaced: both cloud InternalIPs, the kubelet's 127.0.0.1 gone, its Hostname kept
        assert node["status"]["addresses"] == [{"type": "InternalIP", "address": "10.1.2.3"},
                                               {"type": "InternalIP", "address": "10.1.2.4"},
                                               {"type": "Hostname", "address": name}]
        await wait_for(lambda: _has(events_about(client, name), "Synced"), 10, "the Synced event")

        cloud.instances_by_name[name].addresses = [{"type": "InternalIP", "address": "10.1.2.9"}]

        async def refreshed() -> bool:
            node = await client.get(resources.NODES, name)
            return node["status"]["addresses"][0] == {"type": "InternalIP", "address": "10.1.2.9"}

        await wait_for(refreshed, 10, "the periodic address refresh")

        cloud.remove_instance(name)
        await set_ready(client, name, "True")
        assert await node_or_none(client, name) is not None  # a Ready node is never deleted
        await set_ready(client, name, "False")

        async def deleted() -> bool:
            return await node_or_none(client, name) is None

        await wait_for(deleted, 10, "the node of the removed instance to be deleted")
        message = f"Deleting node {name} because it does not exist in the cloud provider"
        assert ("Normal", "DeletingNode", message) in await wait_for(
            lambda: _has(events_about(client, name), "DeletingNode"), 10, "the DeletingNode event")


async def test_a_shut_down_instance_taints_its_node_until_it_is_ready_again(control_plane: ControlPlane) -> None:
    cloud = FakeCloud()
    name = f"ccm-{uuid.uuid4().hex[:6]}"
    async with running(control_plane, cloud, CloudNodeController, CloudNodeLifecycleController,
                       settings=SETTINGS) as client:
        await register(client, cloud, name)

        async def untainted() -> bool:
            return taint_keys(await client.get(resources.NODES, name)) == []

        await wait_for(untainted, 10, "the node to be initialized")

        cloud.shutdown.add(name)
        await set_ready(client, name, "False")

        async def shutdown_tainted() -> bool:
            return taint_keys(await client.get(resources.NODES, name)) == [SHUTDOWN_TAINT["key"]]

        await wait_for(shutdown_tainted, 10, "the shutdown taint")

        cloud.shutdown.discard(name)
        await set_ready(client, name, "True")
        await wait_for(untainted, 10, "the shutdown taint to go once the node is Ready")
        assert await node_or_none(client, name) is not None
        await client.delete(resources.NODES, name)


async def _has(events: Any, reason: str) -> list[tuple[str, str, str]] | None:
    found = await events
    return found if any(event[1] == reason for event in found) else None

"""The route controller against a real apiserver, with the fake cloud: a Node with a pod CIDR gets its route
and NetworkUnavailable=False (merged next to the kubelet's conditions, not replacing them); once the Node is
deleted, its route goes."""

from __future__ import annotations

import uuid
from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.context import CloudSettings
from minikube_py.ccm.controllers.route import RouteController
from minikube_py.client import resources
from tests.ccm.running import running, wait_for
from tests.harness import ControlPlane

SETTINGS = CloudSettings(configure_cloud_routes=True, cluster_cidr="10.244.0.0/16", route_reconciliation_period=0.5,
                         cloud_call_timeout=2.0)


def new_node(name: str, pod_cidr: str) -> dict[str, Any]:
    now = time_string()
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}]}}


def conditions(node: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in node["status"].get("conditions") or []}


async def test_a_node_with_a_pod_cidr_gets_a_route_and_network_available_and_loses_the_route_when_deleted(
        control_plane: ControlPlane) -> None:
    name = f"route-{uuid.uuid4().hex[:6]}"
    cloud = FakeCloud()
    cloud.add_instance(name)
    async with running(control_plane, cloud, RouteController, settings=SETTINGS) as client:
        created = await client.create(resources.NODES, new_node(name, "10.244.77.0/24"))

        route_name = f"kubernetes-{created['metadata']['uid']}"
        route = await wait_for(lambda: cloud.route_table.get(route_name), 10, "the node's route")
        assert (route.target_node, route.destination_cidr) == (name, "10.244.77.0/24")

        async def network_available() -> dict[str, Any] | None:
            node = await client.get(resources.NODES, name)
            return node if conditions(node).get("NetworkUnavailable") == ("False", "RouteCreated") else None
        node = await wait_for(network_available, 10, "NetworkUnavailable=False on the node")
        assert conditions(node)["Ready"] == ("True", "KubeletReady")  # merged by type, not replaced

        await client.delete(resources.NODES, name)
        await wait_for(lambda: route_name not in cloud.route_table, 10, "the route of the deleted node to go")
        assert ("delete_route", ("kubernetes", route_name)) in cloud.calls


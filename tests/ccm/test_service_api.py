"""The service controller against a real apiserver, with the fake cloud in this process: a LoadBalancer
Service gets an ingress and the cleanup finalizer, a new node reaches the load balancer, and changing the
type to ClusterIP or deleting the Service releases the load balancer."""

from __future__ import annotations

from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.cloud.interface import default_load_balancer_name
from minikube_py.ccm.context import CloudSettings
from minikube_py.ccm.controllers.service import LOAD_BALANCER_CLEANUP_FINALIZER, ServiceController
from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from tests.ccm.running import running, wait_for
from tests.harness import ControlPlane


def load_balancer_service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "selector": {"app": name},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}


async def create_ready_node(client: RESTClient, name: str) -> None:
    await client.create(resources.NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    now = time_string()
    await client.patch(resources.NODES, name, {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now,
         "lastTransitionTime": now}]}}, subresource="status")


async def get_service(client: RESTClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(resources.SERVICES, name, namespace)
    except errors.NotFound:
        return None


def ingress(svc: dict[str, Any] | None) -> list[Any]:
    return ((svc or {}).get("status") or {}).get("loadBalancer", {}).get("ingress") or []


def finalizers(svc: dict[str, Any] | None) -> list[str]:
    return (svc or {}).get("metadata", {}).get("finalizers") or []


async def test_load_balancer_services_are_ensured_updated_and_released(control_plane: ControlPlane,
                                                                       namespace: str) -> None:
    cloud = FakeCloud()
    nodes = [f"{namespace}-a", f"{namespace}-b"]
    async with running(control_plane, cloud, ServiceController,
                       settings=CloudSettings(node_sync_period=1.0)) as client:
        try:
            await create_ready_node(client, nodes[0])
            web = await client.create(resources.SERVICES, load_balancer_service("web"), namespace)
            web_lb = default_load_balancer_name(web)

            async def web_has_a_load_balancer() -> dict[str, Any] | None:
                svc = await get_service(client, namespace, "web")
                return svc if ingress(svc) and LOAD_BALANCER_CLEANUP_FINALIZER in finalizers(svc) else None
            svc = await wait_for(web_has_a_load_balancer, 10, "web's ingress and finalizer")
            assert [i["ip"] for i in ingress(svc)] == [i["ip"] for i in cloud.balancers[web_lb]["ingress"]]
            assert nodes[0] in cloud.balancer_nodes[web_lb]

            await create_ready_node(client, nodes[1])
            await wait_for(lambda: nodes[1] in cloud.balancer_nodes.get(web_lb, []), 10, "the new node as a backend")

            # as `kubectl patch -p '{"spec":{"type":"ClusterIP"}}'`: the apiserver drops the LoadBalancer-only fields
            await client.patch(resources.SERVICES, "web", {"spec": {"type": "ClusterIP"}}, namespace)

            async def web_is_released() -> bool:
                svc = await get_service(client, namespace, "web")
                return web_lb not in cloud.balancers and not finalizers(svc) and not ingress(svc)
            await wait_for(web_is_released, 10, "web's load balancer, finalizer and ingress to go")

            api = await client.create(resources.SERVICES, load_balancer_service("api"), namespace)
            api_lb = default_load_balancer_name(api)
            await wait_for(lambda: api_lb in cloud.balancers, 10, "api's load balancer")
            await client.delete(resources.SERVICES, "api", namespace)

            async def api_is_gone() -> bool:
                return await get_service(client, namespace, "api") is None and api_lb not in cloud.balancers
            await wait_for(api_is_gone, 10, "the deleted api Service and its load balancer to go")

            expected = {("web", "EnsuringLoadBalancer"), ("web", "EnsuredLoadBalancer"), ("web", "UpdatedLoadBalancer"),
                        ("web", "DeletingLoadBalancer"), ("web", "DeletedLoadBalancer"), ("api", "DeletedLoadBalancer")}

            async def all_events_written() -> bool:  # the recorder writes events in the background
                events = await client.list(resources.CORE_EVENTS, namespace)
                return expected <= {(e["involvedObject"]["name"], e["reason"]) for e in events["items"]}
            await wait_for(all_events_written, 10, f"the events {sorted(expected)}")
        finally:
            for name in nodes:
                try:
                    await client.delete(resources.NODES, name)
                except errors.NotFound:
                    pass

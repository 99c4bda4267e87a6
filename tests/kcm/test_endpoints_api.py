"""The Endpoints and EndpointSlice controllers against a real apiserver, run in this process.

The test plays the kubelet: it creates pods already bound to a node (`spec.nodeName`) and writes their status
(Running, an IP, the Ready condition) through `pods/status`, as a kubelet would after starting them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.endpoints import EndpointsController
from minikube_py.kcm.controllers.endpointslice import EndpointSliceController
from minikube_py.kcm.controllers.endpointslicereconciler import MANAGED_BY_LABEL, SERVICE_NAME_LABEL
from minikube_py.kcm.controllers.endpointutil import ZONE_LABEL
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for


def pod(name: str, node: str, port: int) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "ports": [{"name": "web", "containerPort": port}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [container]}}


def running_status(ip: str, ready: bool) -> dict[str, Any]:
    condition = {"type": "Ready", "status": "True" if ready else "False",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    return {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "conditions": [condition]}}


async def test_services_get_endpoints_and_slices_that_follow_their_pods(control_plane: ControlPlane,
                                                                        namespace: str) -> None:
    settings = ControllerSettings(max_endpoints_per_slice=2)
    async with running(control_plane, EndpointsController, EndpointSliceController, settings=settings) as client:
        node = f"node-{namespace}"
        await client.create(resources.NODES, {"apiVersion": "v1", "kind": "Node",
                                              "metadata": {"name": node, "labels": {ZONE_LABEL: "zone-a"}}})
        kubernetes_before = await _versions(client)
        await client.create(resources.SERVICES, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "web"}]}},
            namespace)
        for index, (ready, port) in enumerate([(True, 8080), (True, 8080), (False, 8080), (True, 9090)]):
            name = f"web-{index}"
            await client.create(resources.PODS, pod(name, node, port), namespace)
            await client.patch(resources.PODS, name, running_status(f"10.244.0.{index + 10}", ready), namespace,
                               subresource="status")

        async def endpoints_published() -> dict[str, Any] | None:
            endpoints = await client.get(resources.ENDPOINTS, "web", namespace)
            addresses = sum(len(s.get("addresses", [])) + len(s.get("notReadyAddresses", []))
                            for s in endpoints.get("subsets") or [])
            return endpoints if addresses == 4 else None

        endpoints = await wait_for(endpoints_published, 20, "the Endpoints of all four pods")
        subsets = {s["ports"][0]["port"]: s for s in endpoints["subsets"]}
        assert [a["targetRef"]["name"] for a in subsets[8080]["addresses"]] == ["web-0", "web-1"]
        assert [a["targetRef"]["name"] for a in subsets[8080]["notReadyAddresses"]] == ["web-2"]
        assert [a["ip"] for a in subsets[9090]["addresses"]] == ["10.244.0.13"]
        assert subsets[9090]["addresses"][0]["nodeName"] == node
        assert endpoints["metadata"]["labels"] == {"team": "a"}

        slices = await wait_for(lambda: _slices(client, namespace, 4), 20, "EndpointSlices for all four pods")
        by_port = sorted((s["ports"][0]["port"], len(s["endpoints"])) for s in slices)
        assert by_port == [(8080, 1), (8080, 2), (9090, 1)]  # at most 2 endpoints a slice, one slice set a port
        endpoint = next(e for s in slices for e in s["endpoints"] if e["targetRef"]["name"] == "web-2")
        assert endpoint["conditions"] == {"ready": False, "serving": False, "terminating": False}
        assert endpoint["zone"] == "zone-a" and endpoint["nodeName"] == node
        assert all(s["metadata"]["ownerReferences"][0]["name"] == "web" for s in slices)

        await client.patch(resources.PODS, "web-2", running_status("10.244.0.12", True), namespace,
                           subresource="status")

        async def all_ready() -> bool:
            current = await client.get(resources.ENDPOINTS, "web", namespace)
            return all("notReadyAddresses" not in s for s in current.get("subsets") or [])

        await wait_for(all_ready, 20, "web-2 to become a ready address")
        await wait_for(lambda: _slices(client, namespace, 4, ready=4), 20, "web-2 to become a ready endpoint")

        # a sync that finds nothing to change (only the Service's annotations changed) writes nothing
        writes = _count_writes(client)  # the controllers share the test's client
        await client.patch(resources.SERVICES, "web", {"metadata": {"annotations": {"touched": "yes"}}}, namespace)
        await asyncio.sleep(1.0)
        assert writes == []

        await client.delete(resources.SERVICES, "web", namespace)

        async def endpoints_gone() -> bool:
            try:
                await client.get(resources.ENDPOINTS, "web", namespace)
            except errors.NotFound:
                return True
            return False

        await wait_for(endpoints_gone, 20, "the Endpoints of the deleted Service to be deleted")
        assert await _versions(client) == kubernetes_before  # the apiserver's own objects were never written
        await client.delete(resources.NODES, node)


async def _slices(client: RESTClient, namespace: str, endpoints: int, ready: int | None = None
                  ) -> list[dict[str, Any]] | None:
    listed = await client.list(resources.ENDPOINT_SLICES, namespace,
                               label_selector=f"{SERVICE_NAME_LABEL}=web,{MANAGED_BY_LABEL}")
    slices = listed["items"]
    published = [e for s in slices for e in s.get("endpoints") or []]
    if len(published) != endpoints or (ready is not None and sum(e["conditions"]["ready"] for e in published) != ready):
        return None
    return slices


def _count_writes(client: RESTClient) -> list[str]:
    """Record every create and update made through `client` from now on."""
    writes: list[str] = []
    for verb in ("create", "update"):
        def wrapper(original: Any, verb: str = verb) -> Any:
            async def write(resource: Any, body: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
                writes.append(f"{verb} {resource.plural}")
                return await original(resource, body, *args, **kwargs)
            return write
        setattr(client, verb, wrapper(getattr(client, verb)))
    return writes


async def _versions(client: RESTClient) -> tuple[str, str]:
    endpoints = await client.get(resources.ENDPOINTS, "kubernetes", "default")
    endpoint_slice = await client.get(resources.ENDPOINT_SLICES, "kubernetes", "default")
    return endpoints["metadata"]["resourceVersion"], endpoint_slice["metadata"]["resourceVersion"]

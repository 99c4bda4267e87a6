"""Node lifecycle and taint eviction against a real apiserver: the test plays two kubelets (a Node and a
Lease each), then one of them stops renewing its Lease. The controllers run in this process with a 2 s grace
period instead of 40 s, so a node dies, loses its pods and comes back in a few seconds."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx

from minikube_py.api.timestamps import micro_time_string, time_string
from minikube_py.client import resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.nodelifecycle import NodeLifecycleController
from minikube_py.kcm.controllers.tainteviction import TaintEvictionController
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for

SETTINGS = ControllerSettings(node_monitor_period=0.2, node_monitor_grace_period=2.0)
UNREACHABLE = "node.kubernetes.io/unreachable"


def node(name: str, zone: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}}


def pod(name: str, node_name: str, *tolerations: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node_name, "tolerations": list(tolerations), "automountServiceAccountToken": False,
                     "containers": [{"name": "c", "image": "busybox"}]}}


def ready_status() -> dict[str, Any]:
    now = time_string()
    return {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}]}}


async def post_kubelet_status(client: RESTClient, name: str) -> None:
    await client.patch(resources.NODES, name, ready_status(), subresource="status")


async def renew(client: RESTClient, name: str) -> None:
    spec = {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": micro_time_string()}
    await client.patch(resources.LEASES, name, {"spec": spec}, "kube-node-lease")


@contextlib.asynccontextmanager
async def kubelets(client: RESTClient, names: set[str]) -> AsyncIterator[None]:
    """Renew the Leases of `names` every 0.3 s (the set may change meanwhile), as live kubelets do."""
    async def loop() -> None:
        while True:
            for name in list(names):
                await renew(client, name)
            await asyncio.sleep(0.3)
    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def create_pod(api: httpx.Client, namespace: str, body: dict[str, Any]) -> None:
    began = time.monotonic()
    while (r := api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)).status_code != 201:
        assert time.monotonic() - began < 10, r.text  # the default ServiceAccount may not exist yet
        time.sleep(0.2)
    status = {"status": {"phase": "Running",
                         "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": time_string()}]}}
    assert api.patch(f"/api/v1/namespaces/{namespace}/pods/{body['metadata']['name']}/status", json=status,
                     headers={"Content-Type": "application/merge-patch+json"}).status_code == 200


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def taints(api: httpx.Client, name: str) -> list[tuple[str, str]]:
    return [(t["key"], t["effect"]) for t in api.get(f"/api/v1/nodes/{name}").json().get("spec", {}).get("taints") or []]


async def test_a_node_that_stops_renewing_its_lease_is_tainted_and_its_pods_evicted(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    suffix = namespace[2:]
    alive, dying = f"alive-{suffix}", f"dying-{suffix}"
    lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    for name in (alive, dying):  # their own zone: nodes other tests left behind do not disrupt it
        assert api.post("/api/v1/nodes", json=node(name, f"zone-{suffix}")).status_code == 201
        assert api.patch(f"/api/v1/nodes/{name}/status", json=ready_status(),
                         headers={"Content-Type": "application/merge-patch+json"}).status_code == 200
        lease = {"metadata": {"name": name}, "spec": {"holderIdentity": name, "renewTime": micro_time_string()}}
        assert api.post(lease_path, json=lease).status_code == 201
    create_pod(api, namespace, pod("quick", dying, {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                                                    "tolerationSeconds": 1}))
    create_pod(api, namespace, pod("stays", dying, {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}))
    create_pod(api, namespace, pod("elsewhere", alive))
    pods = f"/api/v1/namespaces/{namespace}/pods"
    try:
        async with running(control_plane, NodeLifecycleController, TaintEvictionController, settings=SETTINGS) as client:
            live = {alive}
            async with kubelets(client, live):
                down = await wait_for(lambda: condition(api.get(f"/api/v1/nodes/{dying}").json(), "Ready")
                                      .get("reason") == "NodeStatusUnknown", 10, "the silent node to go Unknown")
                assert down
                dead = api.get(f"/api/v1/nodes/{dying}").json()
                assert condition(dead, "Ready")["message"] == "Kubelet stopped posting node status."
                assert condition(dead, "MemoryPressure")["reason"] == "NodeStatusNeverUpdated"
                await wait_for(lambda: {(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")} <= set(taints(api, dying)),
                               10, "the unreachable taints")
                stamped = [t for t in api.get(f"/api/v1/nodes/{dying}").json()["spec"]["taints"]
                           if t["effect"] == "NoExecute"]
                assert datetime.fromisoformat(stamped[0]["timeAdded"].replace("Z", "+00:00")) <= datetime.now(UTC)

                evicted = await wait_for(lambda: _deleting(api.get(f"{pods}/quick").json()), 10,
                                         "the pod tolerating 1 s to be evicted")
                assert condition(evicted, "DisruptionTarget")["reason"] == "DeletionByTaintManager"
                stays = api.get(f"{pods}/stays").json()
                assert not stays["metadata"].get("deletionTimestamp")
                assert condition(stays, "Ready")["status"] == "False"
                elsewhere = api.get(f"{pods}/elsewhere").json()
                assert condition(elsewhere, "Ready")["status"] == "True"
                assert taints(api, alive) == []
                await wait_for(lambda: _events(api, namespace) >= {
                    ("quick", "TaintManagerEviction", f"Marking for deletion Pod {namespace}/quick"),
                    ("stays", "NodeNotReady", "Node is not ready")}, 10, "the pods' events")

                await post_kubelet_status(client, dying)  # the kubelet is back
                live.add(dying)
                await wait_for(lambda: not any(key == UNREACHABLE for key, _ in taints(api, dying)), 10,
                               "the taints to go once the node is Ready again")
                assert condition(api.get(f"/api/v1/nodes/{dying}").json(), "Ready")["status"] == "True"
    finally:
        for name in (alive, dying):
            api.delete(f"/api/v1/nodes/{name}")
            api.delete(f"{lease_path}/{name}")


def _deleting(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod once its deletion has begun (nobody runs it, so it waits there for a kubelet)."""
    return pod if pod.get("metadata", {}).get("deletionTimestamp") or pod.get("code") == 404 else None


def _events(api: httpx.Client, namespace: str) -> set[tuple[str, str, str]]:
    items = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
    return {(e["involvedObject"]["name"], e["reason"], e["message"]) for e in items}

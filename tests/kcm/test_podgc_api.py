"""The pod GC against a real apiserver: a deleted Node's pods are marked Failed and removed, and pods on
live nodes stay. The controller runs in this process with short periods (kube's 20 s pass and 40 s
quarantine are settings of the ControllerContext), so the test takes seconds, not a minute."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from minikube_py.client.events import EventBroadcaster
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.resources import PODS
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.context import ControllerContext, ControllerSettings
from minikube_py.kcm.controllers.podgc import NODE_GONE_MESSAGE, PodGCController
from tests.harness import ControlPlane


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def pod(name: str, node_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "busybox"}]}}


async def test_pods_of_a_deleted_node_are_failed_and_removed(control_plane: ControlPlane, api: httpx.Client,
                                                             namespace: str) -> None:
    suffix = namespace[2:]
    doomed_node, live_node = f"doomed-{suffix}", f"live-{suffix}"
    for name in (doomed_node, live_node):
        assert api.post("/api/v1/nodes", json=node(name)).status_code == 201
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("orphan", doomed_node)).status_code == 201
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("kept", live_node)).status_code == 201
    assert api.delete(f"/api/v1/nodes/{doomed_node}").status_code == 200

    async with RESTClient(load_kubeconfig(str(control_plane.kubeconfig))) as client:
        informers = SharedInformerFactory(client)
        watched: list[dict[str, Any]] = []
        informers.informer_for(PODS).add_event_handler(_Recorder(watched))
        ctx = ControllerContext(client=client, recorder=EventBroadcaster(client).new_core_recorder("podgc"),
                                informers=informers,
                                settings=ControllerSettings(pod_gc_period=0.2, orphan_quarantine=1.0))
        gc = PodGCController(ctx)
        informers.start()
        task = asyncio.create_task(gc.run())
        try:
            began = time.monotonic()
            while api.get(f"/api/v1/namespaces/{namespace}/pods/orphan").status_code != 404:
                assert time.monotonic() - began < 15, "the orphaned pod was not removed"
                await asyncio.sleep(0.1)
            assert time.monotonic() - began >= 1.0  # not before the quarantine
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await informers.stop()
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/kept").status_code == 200
    last = [p for p in watched if p["metadata"]["name"] == "orphan"][-1]
    assert last["status"]["phase"] == "Failed"
    condition = next(c for c in last["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (condition["reason"], condition["message"]) == ("DeletionByPodGC", NODE_GONE_MESSAGE)


class _Recorder:
    """Keeps every version of every pod the informer delivers (the last one of a deleted pod included)."""

    def __init__(self, seen: list[dict[str, Any]]) -> None:
        self.seen = seen

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.seen.append(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.seen.append(new)

    def on_delete(self, obj: Any) -> None:
        pass

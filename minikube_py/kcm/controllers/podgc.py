"""The pod garbage collector (kube's `podgc`): deletes pods nobody else will ever clean up.

Every `pod_gc_period` seconds (20 s, as kube) it looks at all pods in the cache and force-deletes
(grace period 0):
* pods bound to a node that no longer exists: the node has to stay missing for `orphan_quarantine` (40 s)
  and be missing from the apiserver itself, not only from the cache, so a node that is being re-registered or
  a cache that lags never costs running pods;
* pods being deleted that were never scheduled (no kubelet will ever confirm their deletion);
* pods being deleted on a node that is not Ready and tainted `node.kubernetes.io/out-of-service` (an admin's
  statement that the node is gone for good);
* the oldest terminated pods (phase Succeeded or Failed) beyond `terminated_pod_gc_threshold` (12,500).

A pod that has not finished is first marked as failed, through `pods/status`, with phase Failed and the
condition `DisruptionTarget` (reason `DeletionByPodGC`) saying why, so whoever owns it (a Job) sees what
happened. The controller has no work queue: each pass reads the whole cache, as kube's does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.kcm.context import ControllerContext

OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"
TERMINATED_PHASES = ("Succeeded", "Failed")
NODE_GONE_MESSAGE = "PodGC: node no longer exists"
OUT_OF_SERVICE_MESSAGE = "PodGC: node is out-of-service"

log = logging.getLogger(__name__)


class PodGCController:
    name = "pod-garbage-collector-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.clock = ctx.clock
        self.settings = ctx.settings
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self._missing_since: dict[str, float] = {}  # node name -> when its pods were first seen without it

    async def run(self, workers: int = 1) -> None:
        await asyncio.gather(self.pods.wait_for_cache_sync(), self.nodes.wait_for_cache_sync())
        while True:
            try:
                await self.gc()
            except errors.APIStatusError as err:
                log.warning("pod GC pass failed, trying again next period: %s", err)
            await self.clock.sleep(self.settings.pod_gc_period)

    async def gc(self) -> None:
        """One pass over every pod in the cache."""
        pods = self.pods.lister().list()
        nodes = {node["metadata"]["name"]: node for node in self.nodes.lister().list()}
        if self.settings.terminated_pod_gc_threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_out_of_service(pods, nodes)
        await self.gc_orphaned(pods, nodes)
        await self.gc_unscheduled_terminating(pods)

    async def gc_terminated(self, pods: list[dict[str, Any]]) -> None:
        terminated = [pod for pod in pods if _phase(pod) in TERMINATED_PHASES and not _deleting(pod)]
        excess = len(terminated) - self.settings.terminated_pod_gc_threshold
        if excess <= 0:
            return
        log.info("garbage collecting %d terminated pods over the threshold", excess)
        terminated.sort(key=lambda pod: pod["metadata"].get("creationTimestamp", ""))
        for pod in terminated[:excess]:
            await self.delete(pod)

    async def gc_out_of_service(self, pods: list[dict[str, Any]], nodes: dict[str, dict[str, Any]]) -> None:
        gone = {name for name, node in nodes.items() if _out_of_service(node) and not _ready(node)}
        for pod in pods:
            if _deleting(pod) and _node_name(pod) in gone:
                await self.delete(pod, OUT_OF_SERVICE_MESSAGE)

    async def gc_orphaned(self, pods: list[dict[str, Any]], nodes: dict[str, dict[str, Any]]) -> None:
        missing = {_node_name(pod) for pod in pods} - set(nodes) - {""}
        now = self.clock.now()
        self._missing_since = {name: self._missing_since.get(name, now) for name in missing}
        quarantined = [name for name, since in self._missing_since.items()
                       if now - since >= self.settings.orphan_quarantine]
        for name in quarantined:
            if not await self._node_exists(name):
                del self._missing_since[name]
                for pod in pods:
                    if _node_name(pod) == name:
                        log.info("deleting pod %s: its node %s no longer exists", _key(pod), name)
                        await self.delete(pod, NODE_GONE_MESSAGE)

    async def gc_unscheduled_terminating(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            if _deleting(pod) and not _node_name(pod):
                await self.delete(pod)

    async def delete(self, pod: dict[str, Any], reason: str = "") -> None:
        """Force-delete `pod`, first marking it Failed (with `reason` as its DisruptionTarget condition)."""
        meta = pod["metadata"]
        try:
            if _phase(pod) not in TERMINATED_PHASES:
                await self.client.patch(resources.PODS, meta["name"], _failed_status(reason), meta["namespace"],
                                        patch_type="strategic", subresource="status")
            await self.client.delete(resources.PODS, meta["name"], meta["namespace"], grace_period_seconds=0,
                                     preconditions={"uid": meta["uid"]})
        except (errors.NotFound, errors.Conflict):
            pass  # already gone, or replaced by a new pod of the same name that is not ours to delete

    async def _node_exists(self, name: str) -> bool:
        """Asked of the apiserver, not the cache: a pod is never deleted because of a stale cache."""
        try:
            await self.client.get(resources.NODES, name)
        except errors.NotFound:
            return False
        return True


def _failed_status(reason: str) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Failed"}
    if reason:
        status["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                                 "message": reason, "lastTransitionTime": time_string()}]
    return {"status": status}


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def _node_name(pod: dict[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName", ""))


def _deleting(obj: dict[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _out_of_service(node: dict[str, Any]) -> bool:
    return any(taint.get("key") == OUT_OF_SERVICE_TAINT for taint in (node.get("spec") or {}).get("taints") or [])

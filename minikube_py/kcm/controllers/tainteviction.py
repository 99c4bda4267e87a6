"""The taint-eviction controller (kube's `tainteviction`, a controller of its own since 1.29): a NoExecute taint
on a node evicts the pods running there that do not tolerate it.

Whoever taints a node NoExecute (an admin, or the node lifecycle controller marking a node not-ready or
unreachable) relies on this controller to clear it. For each pod bound to a tainted node it decides:
* a NoExecute taint the pod does not tolerate → the pod is deleted at once;
* every taint tolerated, forever (no `tolerationSeconds`) → the pod stays;
* every taint tolerated, some only for `tolerationSeconds` → the pod is deleted once the shortest of those
  has passed, counted from when this controller first saw the pod on the tainted node. If the taints go
  away first (the node is Ready again), the scheduled deletion is cancelled.
Pods get 300 s tolerations of the not-ready and unreachable taints from the DefaultTolerationSeconds
admission plugin, which is why a dead node's pods go after five minutes.

Handlers only enqueue keys: a node whose NoExecute taints changed (`sync_node`, which remembers the node's
taints and re-examines all its pods), a pod that was bound, changed its tolerations or went away
(`sync_pod`). A scheduled deletion is an entry in `evictions` plus the pod's key added to the eviction
queue after the delay; `evict(key)` deletes the pod if its entry is still due. Cancelling only drops the
entry, so a key that comes up later finds nothing to do. An eviction first adds the condition
`DisruptionTarget` (reason `DeletionByTaintManager`) to the pod's status, so its owner (a Job) can tell a
disruption from a failure, then deletes the pod gracefully.

Events as kube's, on the pod: TaintManagerEviction "Marking for deletion Pod NS/NAME" and
"Cancelling deletion of Pod NS/NAME".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minikube_py.api import taints as taint_helpers
from minikube_py.api.taints import Taint, Toleration
from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.nodelifecycle import NODE_NAME_INDEX, pod_node_name_index

DISRUPTION_CONDITION = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                        "message": "Taint manager: deleting due to NoExecute taint"}

log = logging.getLogger(__name__)


@dataclass
class ScheduledEviction:
    created_at: float  # clock.now() when the deletion was first scheduled
    fire_at: float
    done: bool = False  # deleted: not scheduled again until the pod is gone or the entry cancelled


class TaintEvictionController:
    name = "taint-eviction-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.pods = ctx.informers.informer_for(resources.PODS, indexers={NODE_NAME_INDEX: pod_node_name_index})
        self.node_queue = RateLimitingQueue(name="noexec_taint_node", clock=ctx.clock)
        self.pod_queue = RateLimitingQueue(name="noexec_taint_pod", clock=ctx.clock)
        self.eviction_queue = RateLimitingQueue(name="taint_eviction", clock=ctx.clock)
        self.tainted_nodes: dict[str, list[Taint]] = {}  # node name -> its NoExecute taints
        self.evictions: dict[str, ScheduledEviction] = {}  # pod key -> its scheduled deletion
        self.nodes.add_event_handler(FuncHandler(on_add=lambda node: self._node_changed(None, node),
                                                 on_update=self._node_changed, on_delete=self._node_deleted))
        self.pods.add_event_handler(FuncHandler(on_add=lambda pod: self._pod_changed(None, pod),
                                                on_update=self._pod_changed, on_delete=self._pod_deleted))

    async def run(self, workers: int) -> None:
        await asyncio.gather(self.nodes.wait_for_cache_sync(), self.pods.wait_for_cache_sync())
        try:
            await asyncio.gather(
                run_workers(self.node_queue, self.sync_node, workers, name="noexec_taint_node", logger=log),
                run_workers(self.pod_queue, self.sync_pod, workers, name="noexec_taint_pod", logger=log),
                run_workers(self.eviction_queue, self.evict, workers, name="taint_eviction", logger=log))
        finally:
            for queue in (self.node_queue, self.pod_queue, self.eviction_queue):
                queue.shut_down()

    # event handlers: only keys go on the queues ----------------------------------------------------------

    def _node_changed(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        if old is None or _no_execute_taints(old) != _no_execute_taints(new):
            self.node_queue.add(new["metadata"]["name"])

    def _node_deleted(self, node: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        self.node_queue.add(meta_namespace_key(node))

    def _pod_changed(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        if old is None or _scheduling(old) != _scheduling(new):
            self.pod_queue.add(meta_namespace_key(new))

    def _pod_deleted(self, pod: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        self.pod_queue.add(meta_namespace_key(pod))

    # syncs ---------------------------------------------------------------------------------------------

    async def sync_node(self, name: str) -> None:
        node = self.nodes.indexer.get_by_key(name)
        taints = _no_execute_taints(node) if node is not None else []
        # remembered before the pods are listed: a pod bound later is handled by its own sync_pod
        if taints:
            self.tainted_nodes[name] = taints
        else:
            self.tainted_nodes.pop(name, None)
        pods = self.pods.indexer.by_index(NODE_NAME_INDEX, name) if node is not None else []
        now = self.clock.now()
        for pod in pods:
            key = meta_namespace_key(pod)
            if taints:
                self.process_pod_on_node(key, taint_helpers.pod_tolerations(pod), taints, now)
            else:
                self.cancel(key)

    async def sync_pod(self, key: str) -> None:
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            self.cancel(key)
            return
        taints = self.tainted_nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        if taints:
            self.process_pod_on_node(key, taint_helpers.pod_tolerations(pod), taints, self.clock.now())

    def process_pod_on_node(self, key: str, tolerations: Sequence[Toleration], taints: list[Taint], now: float) -> None:
        used = matching_tolerations(taints, tolerations)
        if used is None:
            self.cancel(key)
            self.schedule(key, now, now)  # not tolerated: at once
            return
        seconds = min_toleration_seconds(used)
        if seconds is None:
            self.cancel(key)  # tolerated forever
            return
        scheduled = self.evictions.get(key)
        start = now
        if scheduled is not None and not scheduled.done:
            if scheduled.created_at < now:
                return  # an earlier decision stands, as in kube
            start = scheduled.created_at
            self.cancel(key)
        self.schedule(key, start, start + seconds)

    def schedule(self, key: str, created_at: float, fire_at: float) -> None:
        if key in self.evictions:
            return
        self.evictions[key] = ScheduledEviction(created_at, fire_at)
        self.eviction_queue.add_after(key, fire_at - self.clock.now())

    def cancel(self, key: str) -> None:
        scheduled = self.evictions.pop(key, None)
        if scheduled is not None and not scheduled.done:
            self._event(key, f"Cancelling deletion of Pod {key}")

    async def evict(self, key: str) -> None:
        scheduled = self.evictions.get(key)
        if scheduled is None or scheduled.done:
            return
        delay = scheduled.fire_at - self.clock.now()
        if delay > 0:
            self.eviction_queue.add_after(key, delay)  # rescheduled later than the key was queued
            return
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            self.evictions.pop(key, None)
            return
        log.info("deleting pod %s: its node is tainted NoExecute", key)
        self._event(key, f"Marking for deletion Pod {key}")
        await self.add_condition_and_delete(pod)  # a failure is retried with backoff
        scheduled.done = True

    async def add_condition_and_delete(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        current = next((c for c in (pod.get("status") or {}).get("conditions") or []
                        if c.get("type") == DISRUPTION_CONDITION["type"]), {})
        try:
            if any(current.get(field) != value for field, value in DISRUPTION_CONDITION.items()):
                condition = {**DISRUPTION_CONDITION, "lastTransitionTime": time_string(self.clock.wall())}
                await self.client.patch(resources.PODS, meta["name"], {"status": {"conditions": [condition]}},
                                        meta["namespace"], patch_type="strategic", subresource="status")
            await self.client.delete(resources.PODS, meta["name"], meta["namespace"],
                                     preconditions={"uid": meta["uid"]})
        except (errors.NotFound, errors.Conflict):
            pass  # gone already, or replaced by another pod of that name

    def _event(self, key: str, message: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        self.recorder.event({"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
                            "Normal", "TaintManagerEviction", message)


def matching_tolerations(taints: list[Taint], tolerations: Sequence[Toleration]) -> list[Toleration] | None:
    """For each taint the first toleration that tolerates it; None when some taint is not tolerated."""
    used = []
    for taint in taints:
        match = next((t for t in tolerations if taint_helpers.tolerates(t, taint)), None)
        if match is None:
            return None
        used.append(match)
    return used


def min_toleration_seconds(tolerations: list[Toleration]) -> float | None:
    """How long the pod may stay: the shortest tolerationSeconds (0 if any is 0 or less); None for ever."""
    if not tolerations:
        return 0.0
    bounded = [t.toleration_seconds for t in tolerations if t.toleration_seconds is not None]
    if not bounded:
        return None
    return float(max(min(bounded), 0))


def _no_execute_taints(node: dict[str, Any]) -> list[Taint]:
    taints = taint_helpers.parse_taints((node.get("spec") or {}).get("taints"))[0]
    return [taint for taint in taints if taint.effect == taint_helpers.NO_EXECUTE]


def _scheduling(pod: dict[str, Any]) -> tuple[Any, Any]:
    spec = pod.get("spec") or {}
    return spec.get("nodeName"), spec.get("tolerations")

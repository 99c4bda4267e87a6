"""The StatefulSet controller's loop: informers, event handlers, and `sync(key)` (kube's StatefulSetController).

Handlers only enqueue a set's key:
* a StatefulSet added, changed or deleted → its key;
* a pod added, changed or deleted → its controlling set's key; an orphan pod → every set in its namespace
  whose selector matches it, to adopt it. A pod that just turned Ready also enqueues its set again after
  `minReadySeconds`, when it counts as available.
ControllerRevisions and PersistentVolumeClaims are only read from their informers' caches.

`sync(key)`:
1. orphan ControllerRevisions matching the selector are adopted (after re-reading the set from the
   apiserver, so a stale cache never adopts for a deleted set);
2. the namespace's pods are claimed (podcontrol.claim_pods): a matching orphan is adopted only if its name
   is `<set>-<ordinal>`; a pod of ours that stopped matching, or whose name is not a member's, is
   released; pods controlled by someone else are never touched;
3. one pass of the algorithm (control.py) creates, repairs and deletes pods and returns the status;
4. the status is written when it changed (a Conflict or a failed pod write requeues the key with backoff).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from minikube_py.api.selectors import LabelSelector
from minikube_py.client import resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.statefulset import identity, revisions
from minikube_py.kcm.controllers.statefulset.control import StatefulSetControl, SyncFailed
from minikube_py.kcm.controllers.statefulset.statefulpod import StatefulPodControl

log = logging.getLogger(__name__)


class StatefulSetController:
    name = "statefulset-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.clock = ctx.clock
        self.sets = ctx.informers.informer_for(resources.STATEFUL_SETS)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.revisions = ctx.informers.informer_for(resources.CONTROLLER_REVISIONS)
        self.claims = ctx.informers.informer_for(resources.PERSISTENT_VOLUME_CLAIMS)
        self.queue = RateLimitingQueue(name="statefulset", clock=ctx.clock)
        pod_control = StatefulPodControl(ctx.client, ctx.recorder, self.claims.lister())
        self.control = StatefulSetControl(ctx.client, pod_control, lambda: self.clock.wall().timestamp())
        self.sets.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new),
                                                on_delete=self._enqueue))
        self.pods.add_event_handler(FuncHandler(on_add=self._pod_added, on_update=self._pod_updated,
                                                on_delete=self._pod_deleted))

    async def run(self, workers: int) -> None:
        await asyncio.gather(*(informer.wait_for_cache_sync()
                               for informer in (self.sets, self.pods, self.revisions, self.claims)))
        try:
            await run_workers(self.queue, self.sync, workers, name="statefulset", logger=log)
        finally:
            self.queue.shut_down()

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def _enqueue(self, sts: dict[str, Any] | DeletedFinalStateUnknown, *_: Any) -> None:
        self.queue.add(meta_namespace_key(sts))

    def _owner(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The cached set controlling `pod`, if any."""
        return podcontrol.resolve_controller_ref(self.sets.indexer, pod["metadata"]["namespace"],
                                                 podcontrol.controller_of(pod), "StatefulSet")

    def _pod_added(self, pod: dict[str, Any], *_: Any) -> None:
        if identity.is_terminating(pod):
            self._pod_deleted(pod)
            return
        sts = self._owner(pod)
        if sts is not None:
            self._enqueue(sts)
        elif podcontrol.controller_of(pod) is None:
            self._enqueue_matching(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync: nothing changed
        for pod in (old, new):
            sts = self._owner(pod)
            if sts is not None:
                self._enqueue(sts)
        sts = self._owner(new)
        min_ready = int(((sts or {}).get("spec") or {}).get("minReadySeconds") or 0)
        if sts is not None and min_ready and not podcontrol.is_ready(old) and podcontrol.is_ready(new):
            self.queue.add_after(meta_namespace_key(sts), min_ready)  # it counts as available then
        if podcontrol.controller_of(new) is None:
            self._enqueue_matching(new)

    def _pod_deleted(self, pod: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        sts = self._owner(pod)
        if sts is not None:
            self._enqueue(sts)

    def _enqueue_matching(self, pod: dict[str, Any]) -> None:
        for sts in self.sets.lister().list(pod["metadata"]["namespace"]):
            if LabelSelector.from_api((sts.get("spec") or {}).get("selector")).matches(pod["metadata"].get("labels")):
                self._enqueue(sts)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, _ = split_meta_namespace_key(key)
        cached = self.sets.indexer.get_by_key(key)
        if cached is None:
            return
        sts = copy.deepcopy(cached)
        sts.setdefault("apiVersion", "apps/v1")
        sts.setdefault("kind", "StatefulSet")
        selector = LabelSelector.from_api((sts.get("spec") or {}).get("selector"))
        known = revisions.owned_or_orphan(self.revisions.lister().list(namespace), sts, selector)
        await self._adopt_orphan_revisions(sts, known)
        pods = await podcontrol.claim_pods(
            self.client, sts, selector, self.pods.lister().list(namespace),
            lambda: podcontrol.owner_is_current(self.client, resources.STATEFUL_SETS, sts),
            member=lambda pod: identity.is_member_of(sts, pod))
        failure: SyncFailed | None = None
        try:
            status = await self.control.update_stateful_set(sts, pods, known)
        except SyncFailed as error:
            failure, status = error, error.status
        await self.update_status(sts, status)
        if failure is not None:
            raise failure.cause
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and status["availableReplicas"] != identity.replicas(sts):
            self.queue.add_after(key, min_ready)

    async def _adopt_orphan_revisions(self, sts: dict[str, Any], known: list[dict[str, Any]]) -> None:
        orphans = [r for r in known if podcontrol.controller_of(r) is None]
        if not orphans:
            return
        if not await podcontrol.owner_is_current(self.client, resources.STATEFUL_SETS, sts):
            raise RuntimeError(f"can't adopt ControllerRevisions: StatefulSet {meta_namespace_key(sts)} "
                               "is gone or being deleted")
        for revision in orphans:
            await podcontrol.adopt(self.client, resources.CONTROLLER_REVISIONS, sts, revision)

    async def update_status(self, sts: dict[str, Any], status: dict[str, Any]) -> None:
        # kube leaves zero counts and empty revisions out (omitempty); these three are always there
        wanted = {k: v for k, v in status.items() if v or k in ("replicas", "availableReplicas", "collisionCount")}
        if wanted == (sts.get("status") or {}):
            return
        sts["status"] = wanted
        await self.client.update(resources.STATEFUL_SETS, sts, sts["metadata"]["namespace"], subresource="status")

"""The Deployment controller's loop: informers, event handlers that only enqueue keys, and `sync(key)`.

Handlers enqueue a Deployment's key when
* the Deployment is added, changed or deleted;
* one of its ReplicaSets (found by the ReplicaSet's controllerRef) is added, changed or deleted; an orphan
  ReplicaSet wakes every Deployment in its namespace whose selector matches it, so one can adopt it;
* the last pod of a Recreate Deployment is gone (its new ReplicaSet may start only then).

`sync(key)` reads the Deployment from the cache and claims its ReplicaSets (`podcontrol.claim`: adopt matching
orphans, release owned ones that no longer match), then does one of, in this order of precedence:
* a selector that selects everything (the apiserver refuses one, so only a broken object has it) → a
  `SelectingAll` warning event and `status.observedGeneration` brought up to date, nothing else: adopting
  every pod of the namespace would be worse than doing nothing;
* being deleted → only the status is brought up to date;
* paused, or scaled (an active ReplicaSet's `desired-replicas` annotation differs from `spec.replicas`) →
  `sync.sync`: ReplicaSets resized in proportion, no rollout;
* otherwise the strategy's rollout: `rolling.rollout_rolling` or `recreate.rollout_recreate`.

Writes that fail (a Conflict with a newer object, a refused create) raise out of `sync`, and the worker
loop requeues the key with exponential backoff; after `MAX_RETRIES` failures in a row it is dropped until
the next event.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections import defaultdict
from typing import Any

from minikube_py.api.selectors import LabelSelector
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.deployment import recreate, rolling, sync
from minikube_py.kcm.controllers.deployment.util import Obj, spec

SELECTING_ALL_MESSAGE = "This deployment is selecting all pods. A non-empty selector is required."
MAX_RETRIES = 15  # failed syncs in a row before a key is dropped (until its next event)

log = logging.getLogger(__name__)


class DeploymentController:
    name = "deployment-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.deployments = ctx.informers.informer_for(resources.DEPLOYMENTS)
        self.replica_sets = ctx.informers.informer_for(resources.REPLICA_SETS)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.queue = RateLimitingQueue(name="deployment", clock=ctx.clock)
        self.deployments.add_event_handler(FuncHandler(on_add=self.enqueue,
                                                       on_update=lambda old, new: self.enqueue(new),
                                                       on_delete=self.enqueue))
        self.replica_sets.add_event_handler(FuncHandler(on_add=self._rs_added, on_update=self._rs_updated,
                                                        on_delete=self._rs_deleted))
        self.pods.add_event_handler(FuncHandler(on_delete=self._pod_deleted))

    async def run(self, workers: int) -> None:
        await asyncio.gather(self.deployments.wait_for_cache_sync(), self.replica_sets.wait_for_cache_sync(),
                             self.pods.wait_for_cache_sync())
        try:
            await run_workers(self.queue, self.sync, workers, name="deployment", max_retries=MAX_RETRIES,
                              logger=log)
        finally:
            self.queue.shut_down()

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def enqueue(self, d: Obj | DeletedFinalStateUnknown, *_: Any) -> None:
        self.queue.add(meta_namespace_key(d))

    def _resolve(self, namespace: str, ref: dict[str, Any] | None) -> Obj | None:
        """The cached Deployment `ref` (a controllerRef) points to, if it is still that object."""
        return podcontrol.resolve_controller_ref(self.deployments.indexer, namespace, ref, "Deployment")

    def _deployments_selecting(self, rs: Obj) -> list[Obj]:
        labels = rs["metadata"].get("labels")
        return [d for d in self.deployments.lister().list(rs["metadata"].get("namespace"))
                if spec(d).get("selector") and selector_of(d).matches(labels)]

    def _rs_added(self, rs: Obj, *_: Any) -> None:
        if rs["metadata"].get("deletionTimestamp"):
            self._rs_deleted(rs)  # a restarted controller sees ReplicaSets already being deleted as adds
            return
        ref = podcontrol.controller_of(rs)
        if ref is not None:
            d = self._resolve(rs["metadata"]["namespace"], ref)
            if d is not None:
                self.enqueue(d)
            return
        for d in self._deployments_selecting(rs):
            self.enqueue(d)

    def _rs_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync: nothing changed
        old_ref, new_ref = podcontrol.controller_of(old), podcontrol.controller_of(new)
        namespace = new["metadata"]["namespace"]
        if old_ref != new_ref and old_ref is not None:
            d = self._resolve(namespace, old_ref)
            if d is not None:
                self.enqueue(d)  # released: its former owner should know
        if new_ref is not None:
            d = self._resolve(namespace, new_ref)
            if d is not None:
                self.enqueue(d)
            return
        if old_ref != new_ref or old["metadata"].get("labels") != new["metadata"].get("labels"):
            for d in self._deployments_selecting(new):
                self.enqueue(d)

    def _rs_deleted(self, rs: Obj | DeletedFinalStateUnknown) -> None:
        if isinstance(rs, DeletedFinalStateUnknown):
            rs = rs.obj
        d = self._resolve(rs["metadata"]["namespace"], podcontrol.controller_of(rs))
        if d is not None:
            self.enqueue(d)

    def _pod_deleted(self, pod: Obj | DeletedFinalStateUnknown) -> None:
        """A Recreate Deployment waits for its old pods to be gone: wake it when the last one goes."""
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        namespace = pod["metadata"]["namespace"]
        rs = podcontrol.resolve_controller_ref(self.replica_sets.indexer, namespace, podcontrol.controller_of(pod),
                                               "ReplicaSet")
        if rs is None:
            return
        d = self._resolve(namespace, podcontrol.controller_of(rs))
        if d is None or (spec(d).get("strategy") or {}).get("type") != "Recreate":
            return
        owned = [r for r in self.replica_sets.lister().list(namespace)
                 if (podcontrol.controller_of(r) or {}).get("uid") == d["metadata"]["uid"]]
        if not any(self.pod_map(d, owned).values()):
            self.enqueue(d)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.deployments.indexer.get_by_key(key)
        if cached is None:
            return  # deleted: its ReplicaSets go with it (the garbage collector follows ownerReferences)
        d = copy.deepcopy(cached)
        d.setdefault("apiVersion", "apps/v1")
        d.setdefault("kind", "Deployment")
        if selector_of(d).empty:
            await self.refuse_selecting_all(d)
            return
        rs_list = await self.replica_sets_for(d)
        if d["metadata"].get("deletionTimestamp"):
            await sync.sync_status_only(self, d, rs_list)
            return
        await sync.check_paused_conditions(self, d)
        if spec(d).get("paused") or await sync.is_scaling_event(self, d, rs_list):
            await sync.sync(self, d, rs_list)
        elif (spec(d).get("strategy") or {}).get("type") == "Recreate":
            await recreate.rollout_recreate(self, d, rs_list, self.pod_map(d, rs_list))
        else:
            await rolling.rollout_rolling(self, d, rs_list)

    async def refuse_selecting_all(self, d: Obj) -> None:
        """Warn about an everything-selector and only acknowledge the generation (kube ignores a failed write
        here: the next change of the Deployment brings it back)."""
        self.recorder.event(d, "Warning", "SelectingAll", SELECTING_ALL_MESSAGE)
        generation = int(d["metadata"].get("generation") or 0)
        status = d.setdefault("status", {})
        if int(status.get("observedGeneration") or 0) < generation:
            status["observedGeneration"] = generation
            with contextlib.suppress(errors.APIStatusError):
                await self.update_status(d)

    async def replica_sets_for(self, d: Obj) -> list[Obj]:
        """Copies of the ReplicaSets `d` controls, after adopting matching orphans and releasing its own that
        stopped matching."""
        candidates = self.replica_sets.lister().list(d["metadata"]["namespace"])
        claimed = await podcontrol.claim(self.client, resources.REPLICA_SETS, d, selector_of(d), candidates,
                                         lambda: podcontrol.owner_is_current(self.client, resources.DEPLOYMENTS, d))
        return copy.deepcopy(claimed)

    def pod_map(self, d: Obj, rs_list: list[Obj]) -> dict[str, list[Obj]]:
        """The pods matching `d`'s selector, by the uid of the ReplicaSet of `rs_list` that controls them."""
        uids = {rs["metadata"]["uid"] for rs in rs_list}
        by_rs: dict[str, list[Obj]] = defaultdict(list)
        for pod in self.pods.lister().list(d["metadata"]["namespace"], selector_of(d)):
            uid = (podcontrol.controller_of(pod) or {}).get("uid")
            if uid in uids:
                by_rs[uid].append(pod)
        return by_rs

    async def update_status(self, d: Obj) -> None:
        """Write `d`'s status (and its revision annotation, which kube also records through the status
        subresource), keeping the new resourceVersion so that a later write in the same sync does not
        conflict with this one."""
        written = await self.client.update(resources.DEPLOYMENTS, d, d["metadata"]["namespace"], subresource="status")
        d["metadata"]["resourceVersion"] = written["metadata"].get("resourceVersion")


def selector_of(obj: Obj) -> LabelSelector:
    return LabelSelector.from_api(spec(obj).get("selector"))


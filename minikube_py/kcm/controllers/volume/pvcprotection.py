"""The PVC protection controller (kube's `persistentvolumeclaim-protection-controller`).

`kubectl delete pvc data` while a pod still mounts the claim must not pull the storage from under it. The
claim carries the finalizer `kubernetes.io/pvc-protection` (protection.py), so the delete only marks it
Terminating; this controller removes the finalizer once no pod uses the claim, and the apiserver then
deletes it. A pod uses a claim when it is scheduled to a node (the kubelet refuses to start a pod whose
claim is being deleted, so an unscheduled pod never will) and names the claim in a `persistentVolumeClaim`
volume, or in an `ephemeral` volume as long as it is not shut down (deleted with grace period 0). As in
kube, a finished pod still holds its claims until the pod itself is deleted.

Handlers enqueue a claim that is being deleted with the finalizer (or alive without it: the finalizer is put
back), and every claim of a pod that may have stopped using it (deleted, finished, or unscheduled).
`sync(key)` looks for a user in the pods cache first; only when it finds none does it list the namespace's
pods from the apiserver, since a pod created a moment ago may not be in the cache yet.
"""

from __future__ import annotations

import logging
from typing import Any

from minikube_py.client import resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.volume.podindex import (
    POD_CLAIM_INDEX,
    add_pod_claim_index,
    ephemeral_claim_name,
    is_terminated,
    pod_claim_keys,
)
from minikube_py.kcm.controllers.volume.protection import (
    PVC_PROTECTION_FINALIZER,
    is_deletion_candidate,
    needs_finalizer,
    set_finalizer,
)

log = logging.getLogger(__name__)


class PVCProtectionController:
    name = "persistentvolumeclaim-protection-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.claims = ctx.informers.informer_for(resources.PERSISTENT_VOLUME_CLAIMS)
        self.pods = ctx.informers.informer_for(resources.PODS)
        add_pod_claim_index(self.pods)
        self.queue = RateLimitingQueue(name="pvcprotection", clock=ctx.clock)
        self.claims.add_event_handler(
            FuncHandler(on_add=self._claim_changed, on_update=lambda _, new: self._claim_changed(new))
        )
        self.pods.add_event_handler(
            FuncHandler(
                on_add=lambda pod: self._pod_changed(None, pod, deleted=False),
                on_update=lambda old, new: self._pod_changed(old, new, deleted=False),
                on_delete=lambda pod: self._pod_changed(None, pod, deleted=True),
            )
        )

    async def run(self, workers: int = 1) -> None:
        await self.claims.wait_for_cache_sync()
        await self.pods.wait_for_cache_sync()
        try:
            await run_workers(self.queue, self.sync, workers, name="pvcprotection", logger=log)
        finally:
            self.queue.shut_down()

    def _claim_changed(self, claim: dict[str, Any], *_: Any) -> None:
        if needs_finalizer(claim, PVC_PROTECTION_FINALIZER) or is_deletion_candidate(
            claim, PVC_PROTECTION_FINALIZER
        ):
            self.queue.add(meta_namespace_key(claim))

    def _pod_changed(
        self, old: dict[str, Any] | None, new: dict[str, Any] | DeletedFinalStateUnknown, deleted: bool
    ) -> None:
        pod = new.obj if isinstance(new, DeletedFinalStateUnknown) else new
        if deleted or is_terminated(pod) or not (pod.get("spec") or {}).get("nodeName"):
            for key in pod_claim_keys(pod):
                self.queue.add(key)
        if old is not None and old["metadata"].get("uid") != pod["metadata"].get("uid"):
            for key in pod_claim_keys(old):  # a pod replaced by another of the same name: the old one is gone
                self.queue.add(key)

    async def sync(self, key: str) -> None:
        claim = self.claims.indexer.get_by_key(key)
        if claim is None:
            return
        if is_deletion_candidate(claim, PVC_PROTECTION_FINALIZER):
            if not await self._in_use(claim):
                await set_finalizer(
                    self.client, resources.PERSISTENT_VOLUME_CLAIMS, claim, PVC_PROTECTION_FINALIZER, False
                )
                log.info("removed protection finalizer from claim %s: no pod uses it", key)
                return
            log.info("keeping claim %s: a pod uses it", key)
        if needs_finalizer(claim, PVC_PROTECTION_FINALIZER):
            await set_finalizer(
                self.client, resources.PERSISTENT_VOLUME_CLAIMS, claim, PVC_PROTECTION_FINALIZER, True
            )

    async def _in_use(self, claim: dict[str, Any]) -> bool:
        cached = self.pods.indexer.by_index(POD_CLAIM_INDEX, meta_namespace_key(claim))
        if any(uses_claim(pod, claim) for pod in cached):
            return True
        namespace, _ = split_meta_namespace_key(meta_namespace_key(claim))
        live = (await self.client.list(resources.PODS, namespace))["items"]
        return any(uses_claim(pod, claim) for pod in live)


def uses_claim(pod: dict[str, Any], claim: dict[str, Any]) -> bool:
    """Whether the pod holds the claim (see the module docstring)."""
    if not (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("namespace") != claim[
        "metadata"
    ].get("namespace"):
        return False
    name = claim["metadata"]["name"]
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("persistentVolumeClaim")
        if source and source.get("claimName") == name:
            return True
        if (
            volume.get("ephemeral")
            and not _shut_down(pod)
            and ephemeral_claim_name(pod, volume) == name
            and _owned_by(claim, pod)
        ):
            return True
    return False


def _shut_down(pod: dict[str, Any]) -> bool:
    """Deleted with no grace left: the kubelet is done with it, or it was force-deleted."""
    meta = pod["metadata"]
    return bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0


def _owned_by(claim: dict[str, Any], pod: dict[str, Any]) -> bool:
    """An ephemeral volume's claim is the pod's only if the pod controls it (not a same-named stranger)."""
    return any(
        ref.get("controller") and ref.get("uid") == pod["metadata"].get("uid")
        for ref in claim["metadata"].get("ownerReferences") or []
    )

"""The persistent-volume binder (kube's `persistentvolume-binder-controller`): claims meet volumes.

Two queues, as in kube, each with exactly one worker (two claim syncs at once could hand one volume to two
claims): `sync_claim(key)` for PersistentVolumeClaims and `sync_volume(name)` for PersistentVolumes. Informer
events enqueue keys; a deleted claim enqueues its volume (to release it at once) and a deleted volume its
claim (to mark it Lost at once); every `--pvclaimbinder-sync-period` (15 s) every claim and volume is
enqueued again, which is how a claim that found nothing notices a volume created since.

A claim without `pv.kubernetes.io/bind-completed` is pending:

    spec.volumeName set   → bind to that volume if it is free and fits (else Warning VolumeMismatch or
                            FailedBinding, stay Pending), finish a binding the volume already points to
    a volume fits         → bind (matching.py: class, access modes, size, selector, volumeMode; smallest)
    no class at all       → give it the default StorageClass, if there is one (kube's retroactive default)
    WaitForFirstConsumer  → stay Pending, event WaitForFirstConsumer (mkpy's scheduler does not bind volumes)
    a class               → provision (provisioning.py), then bind to the new volume on the next sync
    no class              → stay Pending, event FailedBinding

A bound claim whose volume is gone, or whose volume points at another claim, becomes Lost (Warning
ClaimLost / ClaimMisbound). A volume is Available while unclaimed (or only pre-bound by name), Bound while its
claim points back at it, and Released once its claim is gone: then its reclaim policy runs (reclaim.py).
The writes and their order are in binding.py; what a sync reads comes from the informers overlaid with the
controller's own writes (localcache.py), so a binding in flight is never mistaken for a free volume.

Failed writes (a Conflict with a newer object, say) raise out of the sync and the worker retries the key
with backoff; every step is idempotent, so a retry finishes what the failed sync started.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from minikube_py.api.defaults.storage import default_class
from minikube_py.api.storage import BIND_COMPLETED_ANNOTATION, storage_class_name
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.volume.binding import (
    AVAILABLE,
    BOUND,
    FAILED,
    LOST,
    PENDING,
    RELEASED,
    VolumeWrites,
)
from minikube_py.kcm.controllers.volume.hostpath import HostPathPlugin
from minikube_py.kcm.controllers.volume.localcache import LocalCache
from minikube_py.kcm.controllers.volume.matching import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    claim_has_class,
    claim_key,
    claim_ref_key,
    find_best_match,
    is_volume_bound_to_claim,
    unsatisfied_by,
    volume_mode_mismatch,
)
from minikube_py.kcm.controllers.volume.podindex import POD_CLAIM_INDEX, add_pod_claim_index, is_terminated
from minikube_py.kcm.controllers.volume.provisioning import NORMAL, WARNING, ClaimProvisioner
from minikube_py.kcm.controllers.volume.reclaim import DELETE, VolumeReclaimer

log = logging.getLogger(__name__)
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class BindingError(Exception):
    """A claim or its class is in a state the binder cannot act on; retried, as the state may change."""


class PersistentVolumeController:
    name = "persistentvolume-binder-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.sync_period = ctx.settings.pv_claim_binder_sync_period
        self.volume_informer = ctx.informers.informer_for(resources.PERSISTENT_VOLUMES)
        self.claim_informer = ctx.informers.informer_for(resources.PERSISTENT_VOLUME_CLAIMS)
        self.class_informer = ctx.informers.informer_for(resources.STORAGE_CLASSES)
        self.pod_informer = ctx.informers.informer_for(resources.PODS)
        add_pod_claim_index(self.pod_informer)
        self.volumes = LocalCache(self.volume_informer.indexer)
        self.claims = LocalCache(self.claim_informer.indexer)
        self.writes = VolumeWrites(ctx.client, ctx.recorder, self.volumes, self.claims)
        plugin = HostPathPlugin(
            ctx.settings.hostpath_provisioner_dir, ctx.settings.enable_hostpath_provisioner
        )
        self.provisioner = ClaimProvisioner(
            ctx.client, ctx.recorder, self.writes, self.class_informer.indexer, self.volumes, plugin
        )
        self.reclaimer = VolumeReclaimer(ctx.client, self.writes, self.claims, plugin)
        self.claim_queue = RateLimitingQueue(name="claims", clock=ctx.clock)
        self.volume_queue = RateLimitingQueue(name="volumes", clock=ctx.clock)
        self.volume_informer.add_event_handler(
            FuncHandler(
                on_add=self._enqueue_volume,
                on_update=lambda _, new: self._enqueue_volume(new),
                on_delete=self._volume_deleted,
            )
        )
        self.claim_informer.add_event_handler(
            FuncHandler(
                on_add=self._enqueue_claim,
                on_update=lambda _, new: self._enqueue_claim(new),
                on_delete=self._claim_deleted,
            )
        )

    async def run(self, workers: int = 1) -> None:
        """One worker per queue, whatever `workers` says (see the module docstring)."""
        for informer in (self.volume_informer, self.claim_informer, self.class_informer, self.pod_informer):
            await informer.wait_for_cache_sync()
        try:
            await asyncio.gather(
                run_workers(self.claim_queue, self.sync_claim, 1, name="claims", logger=log),
                run_workers(self.volume_queue, self.sync_volume, 1, name="volumes", logger=log),
                self._resync(),
            )
        finally:
            self.claim_queue.shut_down()
            self.volume_queue.shut_down()

    # triggers ---------------------------------------------------------------------------------------------

    def _enqueue_volume(self, volume: dict[str, Any], *_: Any) -> None:
        self.volume_queue.add(meta_namespace_key(volume))

    def _enqueue_claim(self, claim: dict[str, Any], *_: Any) -> None:
        self.claim_queue.add(meta_namespace_key(claim))

    def _volume_deleted(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        volume = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.volumes.forget(meta_namespace_key(obj))
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref:
            self.claim_queue.add(claim_ref_key(ref))

    def _claim_deleted(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        claim = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.claims.forget(meta_namespace_key(obj))
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name:
            self.volume_queue.add(volume_name)

    async def _resync(self) -> None:
        while True:
            await self.clock.sleep(self.sync_period)
            for claim in self.claim_informer.indexer.list():
                self._enqueue_claim(claim)
            for volume in self.volume_informer.indexer.list():
                self._enqueue_volume(volume)

    # claims -----------------------------------------------------------------------------------------------

    async def sync_claim(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        if BIND_COMPLETED_ANNOTATION in (claim["metadata"].get("annotations") or {}):
            await self._sync_bound_claim(claim)
        elif (claim.get("spec") or {}).get("volumeName"):
            await self._sync_claim_naming_volume(claim)
        else:
            await self._sync_unbound_claim(claim)

    async def _sync_unbound_claim(self, claim: dict[str, Any]) -> None:
        delay_binding = self._delay_binding(claim)
        volume = find_best_match(claim, self.volumes.list(), delay_binding)
        if volume is not None:
            await self.writes.bind(volume, claim)
            return
        if await self._assign_default_class(claim):
            return  # the update brings the claim back with its class
        if delay_binding and ANN_SELECTED_NODE not in (claim["metadata"].get("annotations") or {}):
            self._wait_for_first_consumer(claim)
        elif storage_class_name(claim):
            await self.provisioner.provision(claim)
            return
        else:
            self.recorder.event(
                claim,
                NORMAL,
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            )
        await self.writes.update_claim_status(claim, PENDING, None)

    async def _sync_claim_naming_volume(self, claim: dict[str, Any]) -> None:
        """A pending claim that asks for one volume by name."""
        name = claim["spec"]["volumeName"]
        volume = self.volumes.get(name)
        if volume is None:
            await self.writes.update_claim_status(claim, PENDING, None)  # it may be created later
            return
        if not (volume.get("spec") or {}).get("claimRef"):
            problem = unsatisfied_by(volume, claim)
            if not problem:
                await self.writes.bind(volume, claim)
                return
            self.recorder.event(
                claim, WARNING, "VolumeMismatch", f'Cannot bind to requested volume "{name}": {problem}'
            )
        elif is_volume_bound_to_claim(volume, claim):
            await self.writes.bind(volume, claim)
            return
        else:
            self.recorder.event(
                claim, WARNING, "FailedBinding", f'volume "{name}" already bound to a different claim.'
            )
            if ANN_BOUND_BY_CONTROLLER in (claim["metadata"].get("annotations") or {}):
                other = claim_ref_key(volume["spec"]["claimRef"])
                raise BindingError(
                    f'invalid binding of claim "{claim_key(claim)}" to volume "{name}": volume already '
                    f'claimed by "{other}"'
                )
        await self.writes.update_claim_status(claim, PENDING, None)

    async def _sync_bound_claim(self, claim: dict[str, Any]) -> None:
        name = (claim.get("spec") or {}).get("volumeName")
        volume = self.volumes.get(name) if name else None
        if volume is None:
            message = (
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
                if name
                else "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            )
            await self.writes.update_claim_status_with_event(claim, LOST, WARNING, "ClaimLost", message)
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or ref.get("uid") == claim["metadata"].get("uid"):
            await self.writes.bind(volume, claim)  # finishes a binding, or confirms it
            return
        await self.writes.update_claim_status_with_event(
            claim,
            LOST,
            WARNING,
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        )

    def _delay_binding(self, claim: dict[str, Any]) -> bool:
        """Whether the claim's class waits for the first pod using it (WaitForFirstConsumer)."""
        name = storage_class_name(claim)
        storage_class = self.class_informer.indexer.get_by_key(name) if name else None
        if storage_class is None:
            return False
        mode = storage_class.get("volumeBindingMode")
        if not mode:
            raise BindingError(f'VolumeBindingMode not set for StorageClass "{name}"')
        return mode == WAIT_FOR_FIRST_CONSUMER

    def _wait_for_first_consumer(self, claim: dict[str, Any]) -> None:
        pods = self.pod_informer.indexer.by_index(POD_CLAIM_INDEX, claim_key(claim))
        waiting = sorted(
            p["metadata"]["name"]
            for p in pods
            if not is_terminated(p) and not (p.get("spec") or {}).get("nodeName")
        )
        if not waiting:
            self.recorder.event(
                claim,
                NORMAL,
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            )
        elif len(waiting) == 1:
            self.recorder.event(
                claim, NORMAL, "WaitForPodScheduled", f"waiting for pod {waiting[0]} to be scheduled"
            )
        else:
            self.recorder.event(
                claim, NORMAL, "WaitForPodScheduled", f"waiting for pods {','.join(waiting)} to be scheduled"
            )

    async def _assign_default_class(self, claim: dict[str, Any]) -> bool:
        """Give a claim that names no class the default StorageClass (one may have appeared since it was made)."""
        if claim_has_class(claim):
            return False
        default = default_class(self.class_informer.indexer.list())
        if default is None:
            return False
        changed = copy.deepcopy(claim)
        changed.setdefault("spec", {})["storageClassName"] = default["metadata"]["name"]
        await self.writes.update_claim(changed)
        return True

    # volumes ----------------------------------------------------------------------------------------------

    async def sync_volume(self, key: str) -> None:
        volume = self.volumes.get(key)
        if volume is None:
            return
        volume = await self.reclaimer.ensure_deletion_finalizer(volume)
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or not ref.get("uid"):
            # free, or only reserved by name for a claim that has not come for it yet
            await self.writes.update_volume_phase(volume, AVAILABLE)
            return
        claim = await self._claim_of(volume, ref)
        if claim is None:
            await self._release(volume)
            return
        bound_to = (claim.get("spec") or {}).get("volumeName")
        if not bound_to:
            self._claim_not_bound_yet(volume, claim)
        elif bound_to == volume["metadata"]["name"]:
            await self.writes.update_volume_phase(volume, BOUND)
        elif (
            ANN_DYNAMICALLY_PROVISIONED in (volume["metadata"].get("annotations") or {})
            and volume["spec"].get("persistentVolumeReclaimPolicy") == DELETE
        ):
            await self._release(volume)  # provisioned for a claim that got another volume: not needed
        else:
            await self.writes.unbind_volume(volume)

    async def _claim_of(self, volume: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any] | None:
        """The claim the volume is bound to, None if it is gone. The cache may not have a new claim yet, or may
        still hold an older claim of the same name, so the apiserver decides before a volume is released."""
        claim = self.claims.get(claim_ref_key(ref))
        if claim is None and (volume.get("status") or {}).get("phase") in (RELEASED, FAILED):
            return None
        if claim is None or claim["metadata"].get("uid") != ref["uid"]:
            try:
                claim = await self.client.get(
                    resources.PERSISTENT_VOLUME_CLAIMS, ref.get("name", ""), ref.get("namespace", "")
                )
            except errors.NotFound:
                return None
        return claim if claim["metadata"].get("uid") == ref["uid"] else None

    def _claim_not_bound_yet(self, volume: dict[str, Any], claim: dict[str, Any]) -> None:
        if volume_mode_mismatch(claim, volume):
            self.recorder.event(
                volume,
                WARNING,
                "VolumeMismatch",
                "Cannot bind PersistentVolume to requested PersistentVolumeClaim "
                f'"{claim["metadata"]["name"]}" due to incompatible volumeMode.',
            )
            self.recorder.event(
                claim,
                WARNING,
                "VolumeMismatch",
                f'Cannot bind PersistentVolume "{volume["metadata"]["name"]}" to requested '
                "PersistentVolumeClaim due to incompatible volumeMode.",
            )
            return
        # the claim's sync finishes the binding (of a volume just provisioned for it, say)
        self.claim_queue.add(claim_key(claim))

    async def _release(self, volume: dict[str, Any]) -> None:
        if (volume.get("status") or {}).get("phase") not in (RELEASED, FAILED):  # Failed stays visible
            log.info(
                "volume %s is released; reclaim policy %s",
                volume["metadata"]["name"],
                volume["spec"].get("persistentVolumeReclaimPolicy"),
            )
            volume = await self.writes.update_volume_phase(volume, RELEASED)
        await self.reclaimer.reclaim(volume)

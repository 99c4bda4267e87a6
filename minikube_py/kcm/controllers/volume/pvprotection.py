"""The PV protection controller (kube's `persistentvolume-protection-controller`).

A PersistentVolume carries the finalizer `kubernetes.io/pv-protection` (protection.py), so deleting one that
a claim is bound to only marks it Terminating. This controller removes the finalizer once the volume is no
longer Bound (its claim was deleted and the binder released it, or it was never bound), and the apiserver
deletes it. It also puts the finalizer back on a live volume that lacks it.

Handlers enqueue a volume that is being deleted with the finalizer, or alive without it; `sync(name)` reads
the volume's phase, which the binder keeps (binder.py).
"""

from __future__ import annotations

import logging
from typing import Any

from minikube_py.client import resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.volume.protection import (
    PV_PROTECTION_FINALIZER,
    is_deletion_candidate,
    needs_finalizer,
    set_finalizer,
)

log = logging.getLogger(__name__)


class PVProtectionController:
    name = "persistentvolume-protection-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.volumes = ctx.informers.informer_for(resources.PERSISTENT_VOLUMES)
        self.queue = RateLimitingQueue(name="pvprotection", clock=ctx.clock)
        self.volumes.add_event_handler(
            FuncHandler(on_add=self._volume_changed, on_update=lambda _, new: self._volume_changed(new))
        )

    async def run(self, workers: int = 1) -> None:
        await self.volumes.wait_for_cache_sync()
        try:
            await run_workers(self.queue, self.sync, workers, name="pvprotection", logger=log)
        finally:
            self.queue.shut_down()

    def _volume_changed(self, volume: dict[str, Any], *_: Any) -> None:
        if needs_finalizer(volume, PV_PROTECTION_FINALIZER) or is_deletion_candidate(
            volume, PV_PROTECTION_FINALIZER
        ):
            self.queue.add(meta_namespace_key(volume))

    async def sync(self, key: str) -> None:
        volume = self.volumes.indexer.get_by_key(key)
        if volume is None:
            return
        if is_deletion_candidate(volume, PV_PROTECTION_FINALIZER):
            if (volume.get("status") or {}).get("phase") != "Bound":
                await set_finalizer(
                    self.client, resources.PERSISTENT_VOLUMES, volume, PV_PROTECTION_FINALIZER, False
                )
                log.info("removed protection finalizer from volume %s: it is not bound", key)
                return
            log.info("keeping volume %s: it is bound", key)
        if needs_finalizer(volume, PV_PROTECTION_FINALIZER):
            await set_finalizer(
                self.client, resources.PERSISTENT_VOLUMES, volume, PV_PROTECTION_FINALIZER, True
            )

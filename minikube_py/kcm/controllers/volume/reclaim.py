"""What happens to a volume whose claim is gone: its `persistentVolumeReclaimPolicy` (kube's `reclaimVolume`).

The binder marks such a volume Released and calls `reclaim(volume)`:

* `Retain`: nothing. The volume stays Released, with its data and its claimRef, until an admin deletes it
  or clears the claimRef to make it Available again.
* `Delete`: the volume's storage is deleted by the plugin that provisioned it (`pv.kubernetes.io/
  provisioned-by`), or, for a hand-made volume, by the plugin its source belongs to: here only host-path
  (hostpath.py), which removes the directory only when it lies below the provisioner's directory. Then the
  finalizer `kubernetes.io/pv-controller` comes off and the PV object is deleted. A failure marks the
  volume Failed with the Warning `VolumeFailedDelete` (once, when the phase changes) and is retried; a
  volume of an external provisioner is left to it.
* `Recycle` (deprecated in kube): mkpy has no recycler, so the volume is Failed with `VolumeFailedRecycle`.
* anything else: Failed with `VolumeUnknownReclaimPolicy`.

Before deleting anything, the volume is read again from the apiserver and checked to be still released
against the claims cache: a sync may have waited behind a binding that changed it.

`ensure_deletion_finalizer` keeps kube's HonorPVReclaimPolicy bookkeeping on every sync of an in-tree
provisioned volume: the `kubernetes.io/pv-controller` finalizer is on while the policy is Delete and off
otherwise, so deleting a PV object first never leaks its directory.

Usage rules: called from the volume worker only (one volume at a time).
"""

from __future__ import annotations

import logging
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.volume.binding import FAILED, VolumeWrites
from minikube_py.kcm.controllers.volume.hostpath import PLUGIN_NAME, HostPathError, HostPathPlugin
from minikube_py.kcm.controllers.volume.localcache import LocalCache
from minikube_py.kcm.controllers.volume.matching import ANN_DYNAMICALLY_PROVISIONED, claim_ref_key
from minikube_py.kcm.controllers.volume.protection import with_finalizer
from minikube_py.kcm.controllers.volume.provisioning import (
    IN_TREE_PREFIX,
    PV_DELETION_IN_TREE_FINALIZER,
    WARNING,
)

log = logging.getLogger(__name__)
RETAIN, DELETE, RECYCLE = "Retain", "Delete", "Recycle"


class DeleterError(Exception):
    """No plugin here can delete the volume's storage."""


class VolumeReclaimer:
    def __init__(
        self, client: RESTClient, writes: VolumeWrites, claims: LocalCache, plugin: HostPathPlugin
    ) -> None:
        self.client = client
        self.writes = writes
        self.claims = claims
        self.plugin = plugin

    async def reclaim(self, volume: dict[str, Any]) -> None:
        policy = _policy(volume)
        if policy == RETAIN:
            log.debug("volume %s is released and retained", volume["metadata"]["name"])
        elif policy == DELETE:
            await self._delete(volume)
        elif policy == RECYCLE:
            await self.writes.update_volume_phase_with_event(
                volume, FAILED, WARNING, "VolumeFailedRecycle", "No recycler plugin found for the volume!"
            )
        else:
            await self.writes.update_volume_phase_with_event(
                volume,
                FAILED,
                WARNING,
                "VolumeUnknownReclaimPolicy",
                "Volume has unrecognized PersistentVolumeReclaimPolicy",
            )

    async def ensure_deletion_finalizer(self, volume: dict[str, Any]) -> dict[str, Any]:
        """The volume with the in-tree deletion finalizer added or removed as its policy wants."""
        provisioner = str((volume["metadata"].get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED, ""))
        if not provisioner.startswith(IN_TREE_PREFIX):
            return volume
        has = PV_DELETION_IN_TREE_FINALIZER in (volume["metadata"].get("finalizers") or [])
        wants = _policy(volume) == DELETE
        if has == wants or (wants and volume["metadata"].get("deletionTimestamp")):
            return volume  # a finalizer cannot be added to an object being deleted
        return await self.writes.update_volume(with_finalizer(volume, PV_DELETION_IN_TREE_FINALIZER, wants))

    def is_released(self, volume: dict[str, Any]) -> bool:
        """Bound to a claim that no longer exists (or that now uses another volume)."""
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or not ref.get("uid"):
            return False
        claim = self.claims.get(claim_ref_key(ref))
        if claim is None or claim["metadata"].get("uid") != ref["uid"]:
            return True
        volume_name = (claim.get("spec") or {}).get("volumeName")
        return bool(volume_name) and volume_name != volume["metadata"]["name"]

    async def _delete(self, volume: dict[str, Any]) -> None:
        name = volume["metadata"]["name"]
        try:
            fresh = await self.client.get(resources.PERSISTENT_VOLUMES, name)
        except errors.NotFound:
            return
        if not self.is_released(fresh):
            log.info("volume %s no longer needs deletion", name)
            return
        try:
            deleted = await self._delete_storage(fresh)
        except (DeleterError, HostPathError) as error:
            log.warning("deleting volume %s failed: %s", name, error)
            await self.writes.update_volume_phase_with_event(
                fresh, FAILED, WARNING, "VolumeFailedDelete", str(error)
            )
            raise
        if not deleted:
            return  # an external provisioner deletes it
        log.info("volume %s deleted", name)
        await self._remove_deletion_finalizer(name)
        try:
            await self.client.delete(resources.PERSISTENT_VOLUMES, name)
        except errors.NotFound:
            pass

    async def _delete_storage(self, volume: dict[str, Any]) -> bool:
        """Delete the volume's storage with its plugin; False when that plugin is someone else's."""
        provisioned_by = str(
            (volume["metadata"].get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED, "")
        )
        spec = volume.get("spec") or {}
        if provisioned_by and provisioned_by != PLUGIN_NAME:
            if not provisioned_by.startswith(IN_TREE_PREFIX):
                return False
            raise DeleterError(f"no volume plugin matched name: {provisioned_by}")
        if not provisioned_by and spec.get("csi"):
            return False
        if not provisioned_by and not spec.get("hostPath"):
            raise DeleterError(
                f'error getting deleter volume plugin for volume "{volume["metadata"]["name"]}": '
                "no deletable volume plugin matched"
            )
        await self.plugin.delete(volume)
        return True

    async def _remove_deletion_finalizer(self, name: str) -> None:
        try:
            volume = await self.client.get(resources.PERSISTENT_VOLUMES, name)
        except errors.NotFound:
            return  # gone already: an earlier sync of the volume took this finalizer off and deleted it
        if PV_DELETION_IN_TREE_FINALIZER in (volume["metadata"].get("finalizers") or []):
            await self.writes.update_volume(with_finalizer(volume, PV_DELETION_IN_TREE_FINALIZER, False))


def _policy(volume: dict[str, Any]) -> str:
    return str((volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "")

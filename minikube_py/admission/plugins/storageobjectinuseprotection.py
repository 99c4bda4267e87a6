"""StorageObjectInUseProtection: new claims and volumes carry a finalizer, so deleting one in use waits.

Mutating, on create of a PersistentVolumeClaim or a PersistentVolume: adds the finalizer
`kubernetes.io/pvc-protection` (claims) or `kubernetes.io/pv-protection` (volumes) unless it is there
already. Deleting such an object then only sets its `deletionTimestamp` (it reads `Terminating`): the KCM's
pvc-protection controller removes the claim's finalizer once no pod that has not terminated uses the claim,
and its pv-protection controller removes the volume's once it is no longer bound, and the object goes. So
storage a pod is still writing to is never pulled from under it.

Without those controllers running, deleted claims and volumes stay Terminating: disable this plugin
(`--disable-admission-plugins=StorageObjectInUseProtection`) or remove the finalizer by hand.
"""

from __future__ import annotations

from typing import Any

from ..interface import CREATE, Attributes

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"
_FINALIZERS = {
    "persistentvolumeclaims": PVC_PROTECTION_FINALIZER,
    "persistentvolumes": PV_PROTECTION_FINALIZER,
}


class StorageObjectInUseProtection:
    name = "StorageObjectInUseProtection"

    def handles(self, operation: str) -> bool:
        return operation == CREATE

    async def admit(self, attributes: Attributes) -> None:
        finalizer = _FINALIZERS.get(attributes.resource)
        if attributes.group or finalizer is None or attributes.subresource:
            return
        obj = attributes.object
        if not isinstance(obj, dict):
            return
        metadata: dict[str, Any] = obj.setdefault("metadata", {})
        finalizers = metadata.get("finalizers") or []
        if finalizer not in finalizers:
            metadata["finalizers"] = [*finalizers, finalizer]

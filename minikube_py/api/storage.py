"""The names storage objects are known by across components: which StorageClass a claim or a volume belongs
to, and the annotations the binder, the scheduler, admission and the printers all read.

A PersistentVolumeClaim or PersistentVolume names its class in `spec.storageClassName`, or, from before that
field existed, in the annotation `volume.beta.kubernetes.io/storage-class`, which wins when both are there
(kube's `GetPersistentVolumeClaimClass` and `GetPersistentVolumeClass`). "" means no class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
# On a claim once the binder has set up its binding (the scheduler waits for it on Immediate claims).
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"


def storage_class_name(obj: Mapping[str, Any]) -> str:
    """The class a claim or a volume belongs to ("" for none)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str((obj.get("spec") or {}).get("storageClassName") or "")

"""Finalizers that hold storage objects while they are in use (kube's `protectionutil`).

A claim carries `kubernetes.io/pvc-protection` and a volume `kubernetes.io/pv-protection` from birth (the
StorageObjectInUseProtection admission plugin adds them). Deleting such an object only sets its
`deletionTimestamp`; the object stays until its protection controller (pvcprotection.py, pvprotection.py)
decides it is no longer used and removes the finalizer. Both controllers also put a missing finalizer back
on a live object (one created before the admission plugin was on). The binder uses `with_finalizer` for its
own `kubernetes.io/pv-controller` finalizer on the volumes it provisions.

Usage rules: `with_finalizer` returns a copy; `set_finalizer` writes one with an update, which carries the
resourceVersion, so a concurrent change makes it fail with Conflict and the key is retried.
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.client import errors
from minikube_py.client.rest import RESTClient

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"


def is_deletion_candidate(obj: dict[str, Any], finalizer: str) -> bool:
    """Being deleted and still held by `finalizer`: the controller must decide whether to let it go."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])


def needs_finalizer(obj: dict[str, Any], finalizer: str) -> bool:
    """Alive and without `finalizer`."""
    meta = obj["metadata"]
    return not meta.get("deletionTimestamp") and finalizer not in (meta.get("finalizers") or [])


def with_finalizer(obj: dict[str, Any], finalizer: str, present: bool) -> dict[str, Any]:
    """A copy of `obj` with `finalizer` added (at the end) or removed."""
    changed = copy.deepcopy(obj)
    finalizers = [f for f in changed["metadata"].get("finalizers") or [] if f != finalizer]
    if present:
        finalizers.append(finalizer)
    changed["metadata"]["finalizers"] = finalizers
    return changed


async def set_finalizer(
    client: RESTClient, resource: Resource, obj: dict[str, Any], finalizer: str, present: bool
) -> None:
    """Add or remove `finalizer` on the object (an object deleted meanwhile needs nothing more)."""
    try:
        await client.update(resource, with_finalizer(obj, finalizer, present))
    except errors.NotFound:
        pass

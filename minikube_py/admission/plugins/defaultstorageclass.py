"""DefaultStorageClass: a claim that names no StorageClass gets the cluster's default one.

Mutating, on PersistentVolumeClaim create: when the claim has no `spec.storageClassName` (absent or null) and
no legacy `volume.beta.kubernetes.io/storage-class` annotation, the default StorageClass's name is written
into `spec.storageClassName`, so the persistent-volume binder provisions it with that class. The default is
the class annotated `storageclass.kubernetes.io/is-default-class: "true"`, the newest one when several are
(`api/defaults/storage.py`); without one the claim is left as it is. An explicit `storageClassName: ""` asks
for no class at all (only volumes without a class may bind it) and is kept.

Like kube's plugin it reads the classes from the apiserver's cache, so a default class created a moment
before the claim may not be seen yet.
"""

from __future__ import annotations

from ...api.defaults.storage import default_class
from ...api.storage import BETA_STORAGE_CLASS_ANNOTATION
from ..interface import CREATE, Attributes, ClusterState

STORAGE_GROUP = "storage.k8s.io"


class DefaultStorageClass:
    name = "DefaultStorageClass"

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def handles(self, operation: str) -> bool:
        return operation == CREATE

    async def admit(self, attributes: Attributes) -> None:
        if attributes.group or attributes.resource != "persistentvolumeclaims" or attributes.subresource:
            return
        claim = attributes.object
        if not isinstance(claim, dict) or _has_class(claim):
            return
        default = default_class(self.state.list(STORAGE_GROUP, "storageclasses"))
        if default is None:
            return
        spec = claim.get("spec")
        if not isinstance(spec, dict):
            spec = claim["spec"] = {}
        spec["storageClassName"] = default["metadata"]["name"]


def _has_class(claim: dict[str, object]) -> bool:
    metadata, spec = claim.get("metadata"), claim.get("spec")
    if isinstance(metadata, dict) and BETA_STORAGE_CLASS_ANNOTATION in (metadata.get("annotations") or {}):
        return True
    return isinstance(spec, dict) and spec.get("storageClassName") is not None

"""PersistentVolumeClaimResize: a claim may only grow if its StorageClass says its volumes can be expanded.

Validating, on PersistentVolumeClaim update (not its subresources). It runs after validation, which lets
only a Bound claim change `spec.resources.requests.storage`, and never down to `status.capacity`. This
plugin looks only at requests that make the claim bigger than it was, and refuses them (403 Forbidden)
unless

* the claim was Bound before the update (`Only bound persistent volume claims can be expanded`: validation
  has refused the others already, so over the API this is a second line of defence), and
* it names a StorageClass, the same before and after (the legacy `volume.beta.kubernetes.io/storage-class`
  annotation first, then `spec.storageClassName`), that class exists and has `allowVolumeExpansion: true`
  (`only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must
  support resize`).

Keeping the size or shrinking it (a user backing out of a failed expansion) is left to validation.

Like kube's plugin it reads the classes from the apiserver's cache. An admitted resize only records the new
request: expanding the volume is the job of the KCM's expand controller and the kubelet in kube, and mkpy
has neither, so `status.capacity` stays as it was.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ...api.quantity import parse_list
from ...api.storage import storage_class_name
from ..interface import UPDATE, Attributes, ClusterState, forbidden
from .defaultstorageclass import STORAGE_GROUP

NOT_BOUND = "Only bound persistent volume claims can be expanded"
NOT_EXPANDABLE = (
    "only dynamically provisioned pvc can be resized and "
    "the storageclass that provisions the pvc must support resize"
)


class PersistentVolumeClaimResize:
    name = "PersistentVolumeClaimResize"

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def handles(self, operation: str) -> bool:
        return operation == UPDATE

    async def validate(self, attributes: Attributes) -> None:
        if attributes.group or attributes.resource != "persistentvolumeclaims" or attributes.subresource:
            return
        claim, old = attributes.object, attributes.old_object
        if not isinstance(claim, dict) or not isinstance(old, dict):
            return
        if _requested_storage(claim) <= _requested_storage(old):
            return
        if (old.get("status") or {}).get("phase") != "Bound":
            raise forbidden(attributes, NOT_BOUND)
        if not self._expandable(storage_class_name(claim), storage_class_name(old)):
            raise forbidden(attributes, NOT_EXPANDABLE)

    def _expandable(self, class_name: str, old_class_name: str) -> bool:
        """Whether the claim's class, unchanged by the update, exists and allows volume expansion."""
        if not class_name or class_name != old_class_name:
            return False
        storage_class = self.state.get(STORAGE_GROUP, "storageclasses", "", class_name)
        return storage_class is not None and storage_class.get("allowVolumeExpansion") is True


def _requested_storage(claim: dict[str, Any]) -> Fraction:
    """`spec.resources.requests.storage`; an absent one is zero, as a missing Quantity is in kube."""
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests")
    return parse_list(requests if isinstance(requests, dict) else None).get("storage", Fraction(0))

"""From a pod's persistentVolumeClaim volume to the PersistentVolume behind it (the part of kube's volume
manager that turns a claim into a volume spec: the desired-state-of-world populator).

`VolumeManager.set_up` (volumes.py) calls `bound_volume` the first time it meets a pod's claim volume:

    pv = await bound_volume(client, "default", "data")   # GET the claim, then GET its volume

The claim must exist, be Bound to a named volume and not be on its way out (deleted without the
`kubernetes.io/pvc-protection` finalizer that keeps it usable by the pods already holding it); the volume
must point back at this very claim (`spec.claimRef.uid`), and have a source this kubelet can mount:
`hostPath` or `local`. Each refusal is a `ClaimError` with kube's message; `unprocessed_message` puts a
pod's refusals together into the FailedMount event kube's kubelet shows, and the pod worker tries again.

Usage rules: the client is the kubelet's own (identity `system:node:<name>`), so the Node authorizer lets it
read only the claims of pods bound to this node and the volumes bound to those claims; a refusal from the
authorizer (a pod the apiserver's graph has not seen yet) is one more reason to try again later.
"""

from __future__ import annotations

from typing import Any, Protocol

from minikube_py.client import errors, resources
from minikube_py.client.resources import Resource

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
MOUNTABLE_SOURCES = ("hostPath", "local")
# PersistentVolumeSpec fields that say how a volume is used, not where its data lives.
_NOT_SOURCES = frozenset(
    {
        "accessModes",
        "capacity",
        "claimRef",
        "persistentVolumeReclaimPolicy",
        "storageClassName",
        "mountOptions",
        "volumeMode",
        "nodeAffinity",
        "volumeAttributesClassName",
    }
)


class ObjectReader(Protocol):
    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """The object, or an `errors.APIStatusError` (NotFound, Forbidden, ...) or `errors.TransportError`."""
        ...


class ClaimError(Exception):
    """The claim cannot be used yet (or its volume can never be mounted here); the message is kube's."""


async def bound_volume(client: ObjectReader | None, namespace: str, claim_name: str) -> dict[str, Any]:
    """The PersistentVolume bound to the claim `namespace/claim_name`, once it can be mounted."""
    claim = await _fetch(
        client,
        resources.PERSISTENT_VOLUME_CLAIMS,
        claim_name,
        namespace,
        f"error processing PVC {namespace}/{claim_name}: failed to fetch PVC from API server",
    )
    why = _unusable(claim)
    if why:
        raise ClaimError(f"error processing PVC {namespace}/{claim_name}: {why}")
    pv_name = claim["spec"]["volumeName"]
    pv = await _fetch(
        client,
        resources.PERSISTENT_VOLUMES,
        pv_name,
        None,
        f"error processing PVC {namespace}/{claim_name}: failed to fetch PV {pv_name} from API server",
    )
    why = _not_bound_to(pv, claim)
    if why:
        raise ClaimError(f"error processing PVC {namespace}/{claim_name}: {why}")
    source = volume_source(pv)
    if source not in MOUNTABLE_SOURCES:
        raise ClaimError(
            f'failed to get Plugin from volumeSpec for volume "{pv_name}" err=no volume plugin '
            f"matched: this kubelet mounts hostPath and local persistent volumes, not {source}"
        )
    return pv


def volume_source(pv: dict[str, Any]) -> str:
    """The field of the PV's spec that holds its source (`hostPath`, `local`, `nfs`, `csi`, ...)."""
    spec = pv.get("spec") or {}
    return next((key for key in spec if key not in _NOT_SOURCES), "no volume source")


def unprocessed_message(failures: dict[str, str]) -> str:
    """The FailedMount message for the pod volumes (name -> why) whose claims could not be used: the volume
    lists and the reasons sorted, the lists in Go's `%v` form, as kube's volume manager words it."""
    names = " ".join(sorted(failures))
    reasons = "; ".join(sorted(set(failures.values())))
    return (
        f"Unable to attach or mount volumes: unmounted volumes=[{names}], unattached volumes=[], "
        f"failed to process volumes=[{names}]: {reasons}"
    )


async def _fetch(
    client: ObjectReader | None, resource: Resource, name: str, namespace: str | None, failure: str
) -> dict[str, Any]:
    if client is None:
        raise ClaimError(f"{failure}: this kubelet has no API client")
    try:
        return await client.get(resource, name, namespace)
    except (errors.APIStatusError, errors.TransportError) as error:
        raise ClaimError(f"{failure}: {error}") from None


def _unusable(claim: dict[str, Any]) -> str:
    metadata, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    if metadata.get("deletionTimestamp") and PVC_PROTECTION_FINALIZER not in (
        metadata.get("finalizers") or ()
    ):
        return "PVC is being deleted"
    if (claim.get("status") or {}).get("phase") != "Bound":
        return "PVC is not bound"
    if not spec.get("volumeName"):
        return "PVC has empty pvc.Spec.VolumeName"
    return ""


def _not_bound_to(pv: dict[str, Any], claim: dict[str, Any]) -> str:
    name = (pv.get("metadata") or {}).get("name", "")
    claim_ref = (pv.get("spec") or {}).get("claimRef")
    if not claim_ref:
        return f"found PV object {name} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim"
    claim_uid = (claim.get("metadata") or {}).get("uid", "")
    if claim_ref.get("uid", "") != claim_uid:
        return (
            f"found PV object {name} but its pv.Spec.ClaimRef.UID {claim_ref.get('uid', '')} does not point "
            f"to claim.UID {claim_uid}"
        )
    return ""

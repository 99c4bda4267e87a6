"""The binder's writes: binding a volume and a claim to each other, and their phases.

A binding is a pair of pointers, `volume.spec.claimRef` and `claim.spec.volumeName`, which no single write
can set together. `bind` therefore writes in a fixed order, each step skipped when already done:

    1. the volume's claimRef (+ pv.kubernetes.io/bound-by-controller unless the user pre-bound it)
    2. the volume's phase: Bound
    3. the claim's volumeName (+ bound-by-controller if the binder chose the volume) and
       pv.kubernetes.io/bind-completed
    4. the claim's status: phase Bound, accessModes and capacity of the volume

If any write fails (a Conflict with a newer object, the object gone), the error goes back to the worker and
the next sync finds the half-made binding and finishes it from where it stopped. `unbind_volume` undoes
step 1 for a volume the binder bound to a claim that ended up elsewhere.

Usage rules: every method writes only when something changes, returns the object as the apiserver saved it
(or the input when nothing was written) and remembers it in the LocalCache; inputs are never mutated.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from minikube_py.api.quantity import parse_list
from minikube_py.api.storage import BIND_COMPLETED_ANNOTATION
from minikube_py.client import resources
from minikube_py.client.events import CoreEventRecorder, object_reference
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.volume.localcache import LocalCache
from minikube_py.kcm.controllers.volume.matching import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BOUND_BY_CONTROLLER,
    ANN_STORAGE_PROVISIONER,
    is_volume_bound_to_claim,
    volume_storage,
)

log = logging.getLogger(__name__)
BOUND = "Bound"  # volume and claim phases
PENDING = "Pending"
AVAILABLE = "Available"
RELEASED = "Released"
FAILED = "Failed"
LOST = "Lost"


class VolumeWrites:
    def __init__(
        self, client: RESTClient, recorder: CoreEventRecorder, volumes: LocalCache, claims: LocalCache
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.volumes = volumes
        self.claims = claims

    async def bind(self, volume: dict[str, Any], claim: dict[str, Any]) -> None:
        volume = await self._bind_volume_to_claim(volume, claim)
        volume = await self.update_volume_phase(volume, BOUND)
        claim = await self._bind_claim_to_volume(claim, volume)
        await self.update_claim_status(claim, BOUND, volume)

    async def unbind_volume(self, volume: dict[str, Any]) -> None:
        """Take back the binder's binding (claimRef and annotation), or only the uid of a user's pre-binding."""
        changed = copy.deepcopy(volume)
        annotations = changed["metadata"].get("annotations") or {}
        if ANN_BOUND_BY_CONTROLLER in annotations:
            del changed["spec"]["claimRef"]
            del annotations[ANN_BOUND_BY_CONTROLLER]
        else:
            changed["spec"]["claimRef"].pop("uid", None)
        saved = await self.update_volume(changed)
        await self.update_volume_phase(saved, AVAILABLE)

    async def update_volume(self, volume: dict[str, Any]) -> dict[str, Any]:
        saved = await self.client.update(resources.PERSISTENT_VOLUMES, volume)
        self.volumes.remember(saved)
        return saved

    async def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        saved = await self.client.update(resources.PERSISTENT_VOLUME_CLAIMS, claim)
        self.claims.remember(saved)
        return saved

    async def update_volume_phase(
        self, volume: dict[str, Any], phase: str, message: str = ""
    ) -> dict[str, Any]:
        if (volume.get("status") or {}).get("phase") == phase:
            return volume
        changed = copy.deepcopy(volume)
        status = changed.setdefault("status", {})
        status["phase"] = phase
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        saved = await self.client.update(resources.PERSISTENT_VOLUMES, changed, subresource="status")
        self.volumes.remember(saved)
        log.info("volume %s entered phase %s", volume["metadata"]["name"], phase)
        return saved

    async def update_volume_phase_with_event(
        self, volume: dict[str, Any], phase: str, type: str, reason: str, message: str
    ) -> dict[str, Any]:
        """Set the phase and record the event, both only when the phase changes (not on every sync)."""
        if (volume.get("status") or {}).get("phase") == phase:
            return volume
        saved = await self.update_volume_phase(volume, phase, message)
        self.recorder.event(saved, type, reason, message)
        return saved

    async def update_claim_status(
        self, claim: dict[str, Any], phase: str, volume: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The claim's phase, with the volume's access modes and capacity (or none without a volume)."""
        status = copy.deepcopy(claim.get("status") or {})
        status["phase"] = phase
        if volume is None:
            status.pop("accessModes", None)
            status.pop("capacity", None)
        else:
            status["accessModes"] = list((volume.get("spec") or {}).get("accessModes") or [])
            if (claim.get("status") or {}).get("phase") != phase:
                status["capacity"] = _claim_capacity(claim, volume)
        if status == (claim.get("status") or {}):
            return claim
        saved = await self.client.update(
            resources.PERSISTENT_VOLUME_CLAIMS, {**claim, "status": status}, subresource="status"
        )
        self.claims.remember(saved)
        log.info(
            "claim %s/%s entered phase %s", claim["metadata"]["namespace"], claim["metadata"]["name"], phase
        )
        return saved

    async def update_claim_status_with_event(
        self, claim: dict[str, Any], phase: str, type: str, reason: str, message: str
    ) -> None:
        if (claim.get("status") or {}).get("phase") == phase:
            return
        saved = await self.update_claim_status(claim, phase, None)
        self.recorder.event(saved, type, reason, message)

    async def set_claim_provisioner(self, claim: dict[str, Any], provisioner: str) -> dict[str, Any]:
        """Name who is to provision the claim, in the annotation (and its beta twin) provisioners watch for."""
        if (claim["metadata"].get("annotations") or {}).get(ANN_STORAGE_PROVISIONER) == provisioner:
            return claim
        changed = copy.deepcopy(claim)
        annotations = changed["metadata"].setdefault("annotations", {})
        annotations[ANN_BETA_STORAGE_PROVISIONER] = provisioner
        annotations[ANN_STORAGE_PROVISIONER] = provisioner
        return await self.update_claim(changed)

    async def _bind_volume_to_claim(self, volume: dict[str, Any], claim: dict[str, Any]) -> dict[str, Any]:
        changed = copy.deepcopy(volume)
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        meta = claim["metadata"]
        target = (meta["name"], meta.get("namespace"), meta.get("uid"))
        if (ref.get("name"), ref.get("namespace"), ref.get("uid")) != target:
            changed.setdefault("spec", {})["claimRef"] = claim_reference(claim)
        if not is_volume_bound_to_claim(volume, claim):  # the binder chose it: the user did not pre-bind it
            changed["metadata"].setdefault("annotations", {}).setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
        if changed == volume:
            return volume
        log.info(
            "binding volume %s to claim %s/%s",
            volume["metadata"]["name"],
            meta.get("namespace"),
            meta["name"],
        )
        return await self.update_volume(changed)

    async def _bind_claim_to_volume(self, claim: dict[str, Any], volume: dict[str, Any]) -> dict[str, Any]:
        changed = copy.deepcopy(claim)
        annotations = changed["metadata"].setdefault("annotations", {})
        if (claim.get("spec") or {}).get("volumeName") != volume["metadata"]["name"]:
            changed.setdefault("spec", {})["volumeName"] = volume["metadata"]["name"]
            annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
        annotations.setdefault(BIND_COMPLETED_ANNOTATION, "yes")
        if changed["metadata"] == claim["metadata"] and changed.get("spec") == claim.get("spec"):
            return claim
        return await self.update_claim(changed)


def claim_reference(claim: dict[str, Any]) -> dict[str, Any]:
    """The ObjectReference a volume's claimRef holds (kind, namespace, name, uid, apiVersion, resourceVersion)."""
    return object_reference({"kind": "PersistentVolumeClaim", "apiVersion": "v1", **claim})


def _claim_capacity(claim: dict[str, Any], volume: dict[str, Any]) -> dict[str, Any]:
    """The capacity a claim becoming Bound reports: the volume's, unless it already shows that amount."""
    capacity = (volume.get("spec") or {}).get("capacity") or {}
    if "storage" not in capacity:
        name = volume["metadata"]["name"]
        raise ValueError(f'PersistentVolume "{name}" is without a storage capacity')
    current = (claim.get("status") or {}).get("capacity") or {}
    if parse_list(current).get("storage") == volume_storage(volume):
        return dict(current)
    return dict(capacity)

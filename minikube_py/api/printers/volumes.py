"""Printers for storage: core/v1 PersistentVolumes and PersistentVolumeClaims.

Access modes print abbreviated and in a fixed order (`RWO,ROX,RWX,RWOP`); the storage class comes from the
legacy `volume.beta.kubernetes.io/storage-class` annotation when present, else `spec.storageClassName`;
an object being deleted reads `Terminating`. A claim shows capacity and access modes only once bound
(`spec.volumeName` set). Quantities print as stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, being_deleted, object_name
from minikube_py.api.storage import storage_class_name

_ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def access_modes(modes: list[str] | None) -> str:
    return ",".join(short for mode, short in _ACCESS_MODES if mode in (modes or []))


def _phase(obj: dict[str, Any]) -> str:
    if being_deleted(obj):
        return "Terminating"
    return str((obj.get("status") or {}).get("phase", ""))


def _storage(resources: dict[str, str] | None) -> str:
    """The `storage` quantity; an absent one prints as Go's zero Quantity, `0`."""
    return (resources or {}).get("storage", "0")


def _persistent_volume_cells(volume: dict[str, Any], now: datetime) -> list[Cell]:
    spec, status = volume.get("spec") or {}, volume.get("status") or {}
    claim = spec.get("claimRef")
    return [
        object_name(volume), _storage(spec.get("capacity")),
        access_modes(spec.get("accessModes")), spec.get("persistentVolumeReclaimPolicy", ""), _phase(volume),
        f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else "", storage_class_name(volume),
        spec.get("volumeAttributesClassName") or "<unset>", status.get("reason", ""), age(volume, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _persistent_volume_claim_cells(claim: dict[str, Any], now: datetime) -> list[Cell]:
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    # Capacity and access modes are the bound volume's, so an unbound claim shows neither.
    capacity, modes = "", ""
    if spec.get("volumeName"):
        capacity, modes = _storage(status.get("capacity")), access_modes(status.get("accessModes"))
    return [
        object_name(claim), _phase(claim), spec.get("volumeName", ""), capacity, modes, storage_class_name(claim),
        spec.get("volumeAttributesClassName") or "<unset>", age(claim, now),
        spec.get("volumeMode") or "<unset>",
    ]


PERSISTENT_VOLUME = Printer(
    (
        NAME,
        Column("Capacity", "capacity is the description of the persistent volume's resources and capacity. "
                           "More info: "
                           "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
        Column("Access Modes", "accessModes contains all ways the volume can be mounted. More info: "
                               "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
        Column("Reclaim "
               "Policy", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when "
                         "released from its claim. Valid options are Retain (default for manually created "
                         "PersistentVolumes), Delete (default for dynamically provisioned "
                         "PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the "
                         "volume plugin underlying this PersistentVolume. More info: "
                         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
        Column("Status", "phase indicates if a volume is available, bound to a claim, or released by a "
                         "claim. More info: "
                         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"),
        Column("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and "
                        "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the "
                        "authoritative bind between PV and PVC. More info: "
                        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
        Column("StorageClass", "StorageClass of the pv"),
        Column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        Column("Reason", "reason is a brief CamelCase string that describes any failure and is meant for "
                         "machine parsing and tidy display in the CLI."),
        AGE,
        Column("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted "
                             "filesystem or to remain in raw block state. Value of Filesystem is implied "
                             "when not included in spec.", priority=1),
    ),
    _persistent_volume_cells,
)

PERSISTENT_VOLUME_CLAIM = Printer(
    (
        NAME,
        Column("Status", "phase represents the current phase of PersistentVolumeClaim."),
        Column("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
        Column("Capacity", "capacity represents the actual resources of the underlying volume."),
        Column("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has. "
                               "More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes"
                               "#access-modes-1"),
        Column("StorageClass", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        AGE,
        Column("VolumeMode", "volumeMode defines what type of volume is required by the claim. Value of "
                             "Filesystem is implied when not included in claim spec.", priority=1),
    ),
    _persistent_volume_claim_cells,
)

PRINTERS = {
    ("", "v1", "PersistentVolume"): PERSISTENT_VOLUME,
    ("", "v1", "PersistentVolumeClaim"): PERSISTENT_VOLUME_CLAIM,
}

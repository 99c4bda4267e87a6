"""The StorageClass printer (storage.k8s.io/v1): PROVISIONER, RECLAIMPOLICY, VOLUMEBINDINGMODE,
ALLOWVOLUMEEXPANSION.

The NAME cell of a class annotated as a default reads `standard (default)`, as kube's printer writes it (every
annotated class does, even when several are: the printer does not pick one). Unset pointers print as the
values the API would default them to (`Delete`, `Immediate`, `false`); ALLOWVOLUMEEXPANSION is a bool cell in
a column kube declares as a string.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.defaults.storage import is_default_class
from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, object_name


def _storage_class_cells(storage_class: dict[str, Any], now: datetime) -> list[Cell]:
    name = object_name(storage_class)
    if is_default_class(storage_class):
        name += " (default)"
    return [
        name,
        storage_class.get("provisioner", ""),
        _unset_as(storage_class.get("reclaimPolicy"), "Delete"),
        _unset_as(storage_class.get("volumeBindingMode"), "Immediate"),
        storage_class.get("allowVolumeExpansion") is True,
        age(storage_class, now),
    ]


def _unset_as(value: Any, default: str) -> str:
    return default if value is None else str(value)


STORAGE_CLASS = Printer(
    (
        NAME,
        Column("Provisioner", "provisioner indicates the type of the provisioner."),
        Column(
            "ReclaimPolicy",
            "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
            "PersistentVolumes of this storage class. Defaults to Delete.",
        ),
        Column(
            "VolumeBindingMode",
            "volumeBindingMode indicates how PersistentVolumeClaims should be "
            "provisioned and bound.  When unset, VolumeBindingImmediate is used. This "
            "field is only honored by servers that enable the VolumeScheduling "
            "feature.",
        ),
        Column(
            "AllowVolumeExpansion",
            "allowVolumeExpansion shows whether the storage class allow volume expand.",
        ),
        AGE,
    ),
    _storage_class_cells,
)

PRINTERS = {("storage.k8s.io", "v1", "StorageClass"): STORAGE_CLASS}

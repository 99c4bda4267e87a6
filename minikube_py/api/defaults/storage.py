"""StorageClasses (storage.k8s.io/v1): their defaults, and which class is the cluster's default.

`storage_class` is kube's `SetDefaults_StorageClass`: a class without `reclaimPolicy` deletes the volumes it
provisions once their claims are gone (`Delete`), and one without `volumeBindingMode` binds and provisions as
soon as a claim is created (`Immediate`). Both fields are pointers in the v1 API, so only a missing (or null)
value is defaulted: an explicit `""` stays and is refused by validation.

The default class is the one annotated `storageclass.kubernetes.io/is-default-class: "true"` (or the beta
annotation). Several may carry it (an admin adding a new default before removing the old one): kube then
picks the newest by `creationTimestamp`, the name breaking ties (`default_class`, kube's
`GetDefaultClass`). The DefaultStorageClass admission plugin and the StorageClass printer both read these.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from minikube_py.api.timestamps import parse_time

IS_DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
_NEVER = datetime.min.replace(tzinfo=UTC)


def storage_class(obj: dict[str, Any]) -> None:
    for key, value in (("reclaimPolicy", "Delete"), ("volumeBindingMode", "Immediate")):
        if obj.get(key) is None:
            obj[key] = value


def is_default_class(storage_class: dict[str, Any]) -> bool:
    annotations = (storage_class.get("metadata") or {}).get("annotations") or {}
    return "true" in (
        annotations.get(IS_DEFAULT_CLASS_ANNOTATION),
        annotations.get(BETA_IS_DEFAULT_CLASS_ANNOTATION),
    )


def default_class(classes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The default StorageClass among `classes`: the newest one marked default, or None."""
    return min((c for c in classes if is_default_class(c)), key=_newest_first, default=None)


def _newest_first(storage_class: dict[str, Any]) -> tuple[float, str]:
    metadata = storage_class.get("metadata") or {}
    try:
        created = parse_time(str(metadata.get("creationTimestamp")))
    except ValueError:
        created = _NEVER
    return -created.timestamp(), str(metadata.get("name", ""))

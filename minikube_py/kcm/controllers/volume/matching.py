"""Which PersistentVolume a claim may bind to: kube's `findBestMatchForClaim` and the helpers around it.

The persistent-volume binder (binder.py) asks `find_best_match(claim, volumes, delay_binding)` for a pending
claim. A volume fits when its class (`spec.storageClassName`, or the legacy beta annotation) equals the
claim's, its `volumeMode` equals the claim's (both default to Filesystem), it offers every access mode the
claim asks for, its `storage` capacity covers the request, the claim's `selector` matches its labels, and it
is Available and unclaimed. Among fitting volumes, those with the fewest access modes are searched first
(a ReadWriteOnce claim takes an RWO volume before an RWO+RWX one), and within those the smallest wins. A
volume pre-bound to the claim (its `claimRef` names it) is taken whatever its phase, if big enough; with
`delay_binding` (a WaitForFirstConsumer class) only such pre-bound volumes are returned.

The annotation keys and the class/reference helpers live here too, as kube keeps them in its storage
helpers, so the binder, the provisioner and the tests speak the same names.

Usage rules: pure functions over API dicts, never mutating them.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from minikube_py.api.quantity import parse_list
from minikube_py.api.selectors import LabelSelector
from minikube_py.api.storage import BETA_STORAGE_CLASS_ANNOTATION, storage_class_name

ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"  # the binder (not the user) made the binding
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"  # on a PV: the plugin that created it
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"  # on a claim: who is to provision it
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"  # set by a scheduler that delays binding
FILESYSTEM = "Filesystem"


def claim_key(claim: dict[str, Any]) -> str:
    return f"{claim['metadata'].get('namespace', '')}/{claim['metadata']['name']}"


def claim_ref_key(ref: dict[str, Any]) -> str:
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}"


def claim_has_class(claim: dict[str, Any]) -> bool:
    """Whether the claim names a class at all; an explicit `storageClassName: ""` counts (it asks for none)."""
    annotations = claim["metadata"].get("annotations") or {}
    return (
        BETA_STORAGE_CLASS_ANNOTATION in annotations
        or (claim.get("spec") or {}).get("storageClassName") is not None
    )


def requested_storage(claim: dict[str, Any]) -> Fraction:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests")
    return parse_list(requests).get("storage", Fraction(0))


def volume_storage(volume: dict[str, Any]) -> Fraction:
    return parse_list((volume.get("spec") or {}).get("capacity")).get("storage", Fraction(0))


def volume_mode_mismatch(claim: dict[str, Any], volume: dict[str, Any]) -> bool:
    wanted = (claim.get("spec") or {}).get("volumeMode") or FILESYSTEM
    return wanted != ((volume.get("spec") or {}).get("volumeMode") or FILESYSTEM)


def access_modes_fit(claim: dict[str, Any], volume: dict[str, Any]) -> bool:
    """Whether the volume offers every access mode the claim asks for."""
    offered = set((volume.get("spec") or {}).get("accessModes") or ())
    return set((claim.get("spec") or {}).get("accessModes") or ()) <= offered


def is_volume_bound_to_claim(volume: dict[str, Any], claim: dict[str, Any]) -> bool:
    """Whether the volume is bound or pre-bound to this claim: its claimRef names it (and its uid, if set)."""
    ref = (volume.get("spec") or {}).get("claimRef")
    meta = claim["metadata"]
    if not ref or ref.get("name") != meta["name"] or ref.get("namespace") != meta.get("namespace"):
        return False
    return not ref.get("uid") or ref["uid"] == meta.get("uid")


def unsatisfied_by(volume: dict[str, Any], claim: dict[str, Any]) -> str:
    """Why the volume a claim names in `spec.volumeName` cannot serve it ("" when it can)."""
    if volume["metadata"].get("deletionTimestamp"):
        return f'the volume is marked for deletion "{volume["metadata"]["name"]}"'
    if volume_storage(volume) < requested_storage(claim):
        return "requested PV is too small"
    if storage_class_name(volume) != storage_class_name(claim):
        return "storageClassName does not match"
    if volume_mode_mismatch(claim, volume):
        return "incompatible volumeMode"
    if not access_modes_fit(claim, volume):
        return "incompatible accessMode"
    return ""


def find_best_match(
    claim: dict[str, Any], volumes: Iterable[dict[str, Any]], delay_binding: bool = False
) -> dict[str, Any] | None:
    """The volume the claim should bind to, or None; by access-mode set, fewest modes first."""
    by_modes: dict[frozenset[str], list[dict[str, Any]]] = {}
    for volume in sorted(volumes, key=lambda v: v["metadata"]["name"]):
        modes = frozenset((volume.get("spec") or {}).get("accessModes") or ())
        by_modes.setdefault(modes, []).append(volume)
    wanted = set((claim.get("spec") or {}).get("accessModes") or ())
    for modes in sorted((m for m in by_modes if wanted <= m), key=lambda m: (len(m), sorted(m))):
        match = _find_matching_volume(claim, by_modes[modes], delay_binding)
        if match is not None:
            return match
    return None


def _find_matching_volume(
    claim: dict[str, Any], volumes: list[dict[str, Any]], delay_binding: bool
) -> dict[str, Any] | None:
    requested = requested_storage(claim)
    selector_spec = (claim.get("spec") or {}).get("selector")
    selector = LabelSelector.from_api(selector_spec) if selector_spec is not None else None
    smallest: dict[str, Any] | None = None
    for volume in volumes:
        size = volume_storage(volume)
        if volume_mode_mismatch(claim, volume) or volume["metadata"].get("deletionTimestamp"):
            continue
        if is_volume_bound_to_claim(volume, claim):
            if size >= requested:
                return volume  # pre-bound, by the user or by a provisioner: nothing else is considered
            continue
        if delay_binding or not _available_for(volume, claim, selector) or size < requested:
            continue
        if smallest is None or size < volume_storage(smallest):
            smallest = volume
    return smallest


def _available_for(volume: dict[str, Any], claim: dict[str, Any], selector: LabelSelector | None) -> bool:
    if (volume.get("status") or {}).get("phase") != "Available" or (volume.get("spec") or {}).get("claimRef"):
        return False
    if selector is not None and not selector.matches(volume["metadata"].get("labels")):
        return False
    return storage_class_name(volume) == storage_class_name(claim)

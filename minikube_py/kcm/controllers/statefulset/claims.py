"""A StatefulSet's PersistentVolumeClaims: one per claim template and ordinal, and who owns them.

`spec.volumeClaimTemplates` gives each pod storage of its own that outlives the pod: template `data` of set
`web` becomes claim `data-web-0` for pod `web-0`, labelled with the set's `selector.matchLabels`, and the
pod's volume `data` names it. The controller creates the claims before the pod and never changes them after.

What happens to the claims when the set is deleted or scaled down is the
`persistentVolumeClaimRetentionPolicy` (`whenDeleted`, `whenScaled`: `Retain` or `Delete`, both `Retain` by
default). The controller never deletes a claim itself: it sets ownerReferences and lets the garbage
collector delete a claim once its owner is gone:

    whenScaled  whenDeleted   a claim of a pod in range      a claim of a pod scaled away
    Retain      Retain        no reference                   no reference
    Retain      Delete        controlled by the set          controlled by the set
    Delete      Retain        no reference                   controlled by the pod
    Delete      Delete        controlled by the set          controlled by the pod

A claim whose reference to our set or pod carries another uid (a previous set or pod of the same name) is
left alone ("stale"), and so is a claim controlled by someone else, except that our own references are
then removed.
"""

from __future__ import annotations

import copy
from typing import Any

RETAIN, DELETE = "Retain", "Delete"
SET_KIND, POD_KIND = ("apps/v1", "StatefulSet"), ("v1", "Pod")


def claim_name(sts: dict[str, Any], template: dict[str, Any], ordinal: int) -> str:
    return f"{(template.get('metadata') or {}).get('name', '')}-{sts['metadata']['name']}-{ordinal}"


def claims_for(sts: dict[str, Any], ordinal: int) -> dict[str, dict[str, Any]]:
    """The claims pod `ordinal` needs, by template (= volume) name, as they are created."""
    spec = sts.get("spec") or {}
    match_labels = (spec.get("selector") or {}).get("matchLabels") or {}
    result = {}
    for template in spec.get("volumeClaimTemplates") or []:
        meta = copy.deepcopy(template.get("metadata") or {})
        meta["name"] = claim_name(sts, template, ordinal)
        meta["namespace"] = sts["metadata"]["namespace"]
        meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
        result[template["metadata"]["name"]] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                                "metadata": meta, "spec": copy.deepcopy(template.get("spec") or {})}
    return result


def retention_policy(sts: dict[str, Any]) -> tuple[str, str]:
    """(whenScaled, whenDeleted); Retain for whatever is not set."""
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return policy.get("whenScaled") or RETAIN, policy.get("whenDeleted") or RETAIN


def wanted_owners(sts: dict[str, Any], scaled_down: bool) -> tuple[bool, bool]:
    """Whether the claim of a pod should be controlled by (the set, the pod) under the set's policy."""
    when_scaled, when_deleted = retention_policy(sts)
    if scaled_down and when_scaled == DELETE:
        return False, True
    return when_deleted == DELETE, False


def owner_refs_up_to_date(claim: dict[str, Any], sts: dict[str, Any], pod: dict[str, Any],
                          scaled_down: bool) -> bool:
    """Whether `claim`'s ownerReferences are as the policy wants (or are not ours to fix)."""
    if _has_stale_ref(claim, sts, SET_KIND) or _has_stale_ref(claim, pod, POD_KIND):
        return True  # made for an earlier set or pod of this name: leave it to the garbage collector
    ours = [_find_ref(claim, sts), _find_ref(claim, pod)]
    if _unexpected_controller(claim, sts, pod):
        return not any(ours)  # someone else controls it: ours must go, nothing is added
    if any(ref is not None and not ref.get("controller") for ref in ours):
        return False
    return (ours[0] is not None, ours[1] is not None) == wanted_owners(sts, scaled_down)


def updated_owner_refs(claim: dict[str, Any], sts: dict[str, Any], pod: dict[str, Any],
                       scaled_down: bool) -> list[dict[str, Any]]:
    """`claim`'s ownerReferences with ours rewritten to match the policy."""
    refs = [ref for ref in claim["metadata"].get("ownerReferences") or []
            if not _names(ref, sts, SET_KIND) and not _names(ref, pod, POD_KIND)]
    if _unexpected_controller(claim, sts, pod):
        return refs
    by_set, by_pod = wanted_owners(sts, scaled_down)
    if by_set:
        refs.append(_controller_ref(sts, SET_KIND))
    if by_pod:
        refs.append(_controller_ref(pod, POD_KIND))
    return refs


def _controller_ref(owner: dict[str, Any], kind: tuple[str, str]) -> dict[str, Any]:
    return {"apiVersion": kind[0], "kind": kind[1], "name": owner["metadata"]["name"],
            "uid": owner["metadata"].get("uid", ""), "controller": True, "blockOwnerDeletion": True}


def _names(ref: dict[str, Any], owner: dict[str, Any], kind: tuple[str, str]) -> bool:
    """Whether `ref` points at an object of this kind and `owner`'s name (whatever its uid)."""
    return (ref.get("apiVersion"), ref.get("kind")) == kind and ref.get("name") == owner["metadata"]["name"]


def _find_ref(claim: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any] | None:
    uid = owner["metadata"].get("uid")
    return next((ref for ref in claim["metadata"].get("ownerReferences") or [] if uid and ref.get("uid") == uid),
                None)


def _has_stale_ref(claim: dict[str, Any], owner: dict[str, Any], kind: tuple[str, str]) -> bool:
    ref = next((ref for ref in claim["metadata"].get("ownerReferences") or [] if _names(ref, owner, kind)), None)
    return ref is not None and ref.get("uid") != owner["metadata"].get("uid")


def _unexpected_controller(claim: dict[str, Any], sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    """Another controller manages the claim (only matters when the policy wants references)."""
    if retention_policy(sts) == (RETAIN, RETAIN):
        return False
    for ref in claim["metadata"].get("ownerReferences") or []:
        if _names(ref, sts, SET_KIND) or _names(ref, pod, POD_KIND):
            continue
        if ref.get("controller"):
            return True
    return False


def is_stale_for_new_pod(claim: dict[str, Any], sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    """A claim still owned by an earlier pod of this name blocks the pod's creation until it is deleted."""
    return retention_policy(sts)[0] == DELETE and _has_stale_ref(claim, pod, POD_KIND)

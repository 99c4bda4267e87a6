"""What every controller that owns pods does the same way (kube's `controller_utils` and ref manager).

* `controller_ref(owner)`: the ownerReference a controller puts on what it creates (`controller: true`,
  `blockOwnerDeletion: true`), and `controller_of(obj)` to read it back.
* `pod_from_template(template, owner)`: a new pod from a pod template: `generateName` `<owner>-`, the
  template's labels, annotations and spec, owned by `owner`.
* `claim_pods(...)`: ownership kept in step with the selector. A pod this owner controls that no longer
  matches is released (its ownerReference removed); an orphan that matches is adopted (given one), unless the
  owner is being deleted. Pods owned by another controller are never touched. Adoption first re-reads the
  owner from the apiserver (`can_adopt`), so a stale cache never adopts pods for an owner that is gone or
  was replaced by a new object of the same name.

Both patches are strategic merge patches on `metadata.ownerReferences` (merge key `uid`) that also carry the
pod's own uid, so they fail instead of touching a new pod that reuses the name.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from minikube_py.api.selectors import LabelSelector
from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference of `obj`'s managing controller, if it has one."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def pod_from_template(template: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    meta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {"generateName": f"{owner['metadata']['name']}-",
                                "namespace": owner["metadata"]["namespace"],
                                "ownerReferences": [controller_ref(owner)]}
    for field in ("labels", "annotations", "finalizers"):
        if meta.get(field):
            pod_meta[field] = copy.deepcopy(meta[field])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": copy.deepcopy(template.get("spec") or {})}


def is_active(pod: dict[str, Any]) -> bool:
    """Not finished and not being deleted: a pod that still counts as a replica."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


async def claim_pods(client: RESTClient, owner: dict[str, Any], selector: LabelSelector,
                     pods: list[dict[str, Any]], can_adopt: Callable[[], Awaitable[bool]]) -> list[dict[str, Any]]:
    """The pods `owner` controls after adopting matching orphans and releasing its pods that stopped matching."""
    uid = owner["metadata"]["uid"]
    claimed = []
    adoption_checked: bool | None = None
    for pod in pods:
        ref = controller_of(pod)
        matches = selector.matches(pod["metadata"].get("labels"))
        if ref is not None:
            if ref.get("uid") != uid:
                continue  # someone else's
            if matches:
                claimed.append(pod)
            elif not owner["metadata"].get("deletionTimestamp"):
                await _patch_owner_references(client, pod, [{"$patch": "delete", "uid": uid}])
            continue
        if not matches or owner["metadata"].get("deletionTimestamp") or pod["metadata"].get("deletionTimestamp"):
            continue
        if adoption_checked is None:
            adoption_checked = await can_adopt()
        if adoption_checked and await _patch_owner_references(client, pod, [controller_ref(owner)]):
            claimed.append(pod)
    return claimed


async def _patch_owner_references(client: RESTClient, pod: dict[str, Any], refs: list[dict[str, Any]]) -> bool:
    meta = pod["metadata"]
    patch = {"metadata": {"ownerReferences": refs, "uid": meta["uid"]}}
    try:
        await client.patch(resources.PODS, meta["name"], patch, meta["namespace"], patch_type="strategic")
    except (errors.NotFound, errors.Conflict, errors.Invalid):
        return False  # gone, replaced, or changed under us: the next sync sees the new state
    return True

"""What every controller that owns pods (or other objects) does the same way (kube's `controller_utils`,
`pod_util` and ref manager).

* `controller_ref(owner)`: the ownerReference a controller puts on what it creates (`controller: true`,
  `blockOwnerDeletion: true`), `controller_of(obj)` to read it back, and `resolve_controller_ref` to find
  the cached owner it names (only if the uid still matches: not a new object of the same name).
* `pod_from_template(template, owner)`: a new pod from a pod template: `generateName` `<owner>-`, the
  template's labels, annotations and spec, owned by `owner`.
* `PodControl`: creating (in slow-start batches) and deleting an owner's pods with kube's events
  (SuccessfulCreate "Created pod: NAME", FailedCreate "Error creating: MESSAGE", SuccessfulDelete "Deleted
  pod: NAME", FailedDelete "Error deleting: MESSAGE"), settling the owner's expectations for writes that
  failed. A create refused because the namespace is being deleted is dropped quietly; a pod already gone
  counts as deleted.
* a pod's state: `is_active` (not finished, not being deleted), `ready_since` (when its Ready condition
  turned True), `is_ready`, `is_available` (Ready for more than `minReadySeconds`, kube's IsPodAvailable).
* `claim(client, resource, owner, selector, objects, can_adopt)`: ownership kept in step with the selector,
  for pods (`claim_pods`), a Deployment's ReplicaSets or a DaemonSet's ControllerRevisions. An object this
  owner controls that no longer matches is released (its ownerReference removed); an orphan that matches is
  adopted (given one), unless the owner is being deleted. Objects owned by another controller are never
  touched. An optional `member` test narrows "matches" further. Adoption first re-reads the owner from the
  apiserver (`can_adopt`, usually `owner_is_current`), so a stale cache never adopts objects for an owner
  that is gone or was replaced by a new object of the same name. `adopt` is the single adoption, raising.

Both patches are strategic merge patches on `metadata.ownerReferences` (merge key `uid`) that also carry the
object's own uid, so they fail instead of touching a new object that reuses the name.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.api.selectors import LabelSelector
from minikube_py.api.timestamps import parse_time
from minikube_py.client import errors, resources
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.rest import RESTClient
from minikube_py.client.store import Indexer, meta_namespace_key
from minikube_py.kcm.controllers.expectations import ControllerExpectations

SLOW_START_INITIAL_BATCH = 1


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference of `obj`'s managing controller, if it has one."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def resolve_controller_ref(indexer: Indexer, namespace: str, ref: dict[str, Any] | None,
                           kind: str) -> dict[str, Any] | None:
    """The cached owner of `kind` that the controllerRef `ref` names, if it is still that object (same uid):
    how an event handler finds whom to wake for a changed pod (kube's resolveControllerRef)."""
    if ref is None or ref.get("kind") != kind:
        return None
    owner = indexer.get_by_key(f"{namespace}/{ref.get('name')}")
    return owner if owner is not None and owner["metadata"].get("uid") == ref.get("uid") else None


def pod_from_template(template: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    meta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {"generateName": f"{owner['metadata']['name']}-",
                                "namespace": owner["metadata"]["namespace"],
                                "ownerReferences": [controller_ref(owner)]}
    for field in ("labels", "annotations", "finalizers"):
        if meta.get(field):
            pod_meta[field] = copy.deepcopy(meta[field])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": copy.deepcopy(template.get("spec") or {})}


class PodControl:
    """Creates and deletes an owner's pods with kube's events, settling the owner's expectations for every
    write that will produce no informer event (kube's RealPodControl plus the bookkeeping around it).

    Both methods take the owner's expectations key and return the API errors of the writes that failed, so the
    caller can fail its sync; the caller records what it expects before calling them."""

    def __init__(self, client: RESTClient, recorder: CoreEventRecorder, expectations: ControllerExpectations) -> None:
        self.client = client
        self.recorder = recorder
        self.expectations = expectations

    async def create_pods(self, owner: dict[str, Any], key: str,
                          pods: list[dict[str, Any]]) -> list[errors.APIStatusError]:
        """Create `pods` in slow-start batches of 1, 2, 4, …; stop after the first batch with a failure, so a
        template the apiserver refuses fails once, not once per pod."""
        batch, done = SLOW_START_INITIAL_BATCH, 0
        while done < len(pods):
            chunk = pods[done:done + batch]
            results = await asyncio.gather(*(self._create_pod(owner, key, pod) for pod in chunk))
            done += len(chunk)
            failures = [error for error in results if error is not None]
            if failures:
                for _ in pods[done:]:  # never attempted: their adds will not come
                    self.expectations.creation_observed(key)
                return failures
            batch *= 2
        return []

    async def delete_pods(self, owner: dict[str, Any], key: str,
                          pods: list[dict[str, Any]]) -> list[errors.APIStatusError]:
        results = await asyncio.gather(*(self._delete_pod(owner, key, pod) for pod in pods))
        return [error for error in results if error is not None]

    async def _create_pod(self, owner: dict[str, Any], key: str, body: dict[str, Any]) -> errors.APIStatusError | None:
        try:
            pod = await self.client.create(resources.PODS, body, owner["metadata"]["namespace"])
        except errors.APIStatusError as error:
            self.expectations.creation_observed(key)
            if errors.is_namespace_terminating(error):
                return None  # the namespace is going away: nothing to retry
            self.recorder.event(owner, "Warning", "FailedCreate", f"Error creating: {error}")
            return error
        self.recorder.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
        return None

    async def _delete_pod(self, owner: dict[str, Any], key: str, pod: dict[str, Any]) -> errors.APIStatusError | None:
        meta = pod["metadata"]
        try:
            await self.client.delete(resources.PODS, meta["name"], meta["namespace"])
        except errors.APIStatusError as error:
            self.expectations.deletion_observed(key, meta_namespace_key(pod))
            if isinstance(error, errors.NotFound):
                return None  # already gone: what we wanted
            self.recorder.event(owner, "Warning", "FailedDelete", f"Error deleting: {error}")
            return error
        self.recorder.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")
        return None


def is_active(pod: dict[str, Any]) -> bool:
    """Not finished and not being deleted: a pod that still counts as a replica."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def ready_since(pod: dict[str, Any]) -> float | None:
    """When the pod's Ready condition turned True (epoch seconds), None if it is not Ready."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            if condition.get("status") != "True":
                return None
            stamp = condition.get("lastTransitionTime")
            return parse_time(stamp).timestamp() if stamp else 0.0
    return None


def is_ready(pod: dict[str, Any]) -> bool:
    return ready_since(pod) is not None


def is_available(pod: dict[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Ready for more than `min_ready_seconds` at `now` (epoch seconds), or Ready at all when that is 0."""
    since = ready_since(pod)
    return since is not None and (min_ready_seconds == 0 or since + min_ready_seconds < now)


async def owner_is_current(client: RESTClient, resource: Resource, owner: dict[str, Any]) -> bool:
    """Whether `owner` is still the live object of that name (same uid) and not being deleted: read fresh
    from the apiserver before adopting anything (kube's RecheckDeletionTimestamp, the `can_adopt` of claim)."""
    meta = owner["metadata"]
    try:
        fresh = await client.get(resource, meta["name"], meta["namespace"])
    except errors.NotFound:
        return False
    return fresh["metadata"]["uid"] == meta["uid"] and not fresh["metadata"].get("deletionTimestamp")


async def claim(client: RESTClient, resource: Resource, owner: dict[str, Any], selector: LabelSelector,
                objects: list[dict[str, Any]], can_adopt: Callable[[], Awaitable[bool]],
                member: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """The `objects` (of `resource`) that `owner` controls after adopting matching orphans and releasing its
    own that stopped matching. An object matches when `selector` selects it and, if given, `member(obj)`
    says it may belong to this owner at all (a StatefulSet's pods must be named after it)."""
    uid = owner["metadata"]["uid"]
    claimed = []
    adoption_checked: bool | None = None
    for obj in objects:
        ref = controller_of(obj)
        matches = selector.matches(obj["metadata"].get("labels")) and (member is None or member(obj))
        if ref is not None:
            if ref.get("uid") != uid:
                continue  # someone else's
            if matches:
                claimed.append(obj)
            elif not owner["metadata"].get("deletionTimestamp"):
                await _patch_owner_references(client, resource, obj, [{"$patch": "delete", "uid": uid}])
            continue
        if not matches or owner["metadata"].get("deletionTimestamp") or obj["metadata"].get("deletionTimestamp"):
            continue
        if adoption_checked is None:
            adoption_checked = await can_adopt()
        if adoption_checked and await _patch_owner_references(client, resource, obj, [controller_ref(owner)]):
            claimed.append(obj)
    return claimed


async def claim_pods(client: RESTClient, owner: dict[str, Any], selector: LabelSelector,
                     pods: list[dict[str, Any]], can_adopt: Callable[[], Awaitable[bool]],
                     member: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """`claim` for pods."""
    return await claim(client, resources.PODS, owner, selector, pods, can_adopt, member)


async def adopt(client: RESTClient, resource: Resource, owner: dict[str, Any], obj: dict[str, Any]) -> None:
    """Make `owner` the controller of the orphan `obj`; raises the API error if that fails."""
    await _patch(client, resource, obj, [controller_ref(owner)])


async def _patch_owner_references(client: RESTClient, resource: Resource, obj: dict[str, Any],
                                  refs: list[dict[str, Any]]) -> bool:
    try:
        await _patch(client, resource, obj, refs)
    except (errors.NotFound, errors.Conflict, errors.Invalid):
        return False  # gone, replaced, or changed under us: the next sync sees the new state
    return True


async def _patch(client: RESTClient, resource: Resource, obj: dict[str, Any], refs: list[dict[str, Any]]) -> None:
    meta = obj["metadata"]
    patch = {"metadata": {"ownerReferences": refs, "uid": meta["uid"]}}
    await client.patch(resource, meta["name"], patch, meta["namespace"], patch_type="strategic")

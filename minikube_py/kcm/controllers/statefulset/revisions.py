"""A StatefulSet's history: the ControllerRevisions it keeps of its pod template.

Each version of `spec.template` is stored in a ControllerRevision named `<set>-<hash>` (history.py builds
it), whose `data` is a strategic merge patch that puts that template back:

    {"spec": {"template": {<the template>, "$patch": "replace"}}}

`$patch: replace` makes the template replace the set's template whole instead of merging into it. So the
controller rebuilds "the set at revision R" by applying R's data to the set (`apply_revision`), and
`kubectl rollout undo statefulset/web --to-revision=2` is nothing but a PATCH of the set with revision 2's
data; the controller then sees a template equal to an old revision and re-numbers that revision as the
newest instead of creating a duplicate (`history.renumber_revision`). The set's annotations are copied onto
each revision (by history.new_revision), so `kubectl rollout history` shows a `kubernetes.io/change-cause`.

Two templates may hash to the same name. Creating one then fails with AlreadyExists on a revision with
other data: the set's `status.collisionCount` goes up by one, which changes the hash, and creation is tried
again (`create_revision`).

Usage rules: revisions are listed from the informer cache (`owned_or_orphan`): those matching the set's
selector that it controls or nobody does; orphans are adopted by the controller before use.
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api.selectors import LabelSelector
from minikube_py.api.strategicpatch import apply_strategic_merge_patch
from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers import history, podcontrol

MAX_COLLISIONS = 32  # far more than a 32-bit hash will ever need


def revision_data(sts: dict[str, Any]) -> dict[str, Any]:
    template = copy.deepcopy((sts.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def new_revision(sts: dict[str, Any], number: int, collision_count: int) -> dict[str, Any]:
    return history.new_revision(sts, revision_data(sts), number, collision_count)


def apply_revision(sts: dict[str, Any], revision: dict[str, Any]) -> dict[str, Any]:
    """The set as it was at `revision` (its template put back)."""
    return apply_strategic_merge_patch(sts, revision.get("data") or {}, "apps", "v1", "StatefulSet")


def owned_or_orphan(revisions: list[dict[str, Any]], sts: dict[str, Any],
                    selector: LabelSelector) -> list[dict[str, Any]]:
    uid = sts["metadata"]["uid"]
    found = []
    for revision in revisions:
        ref = podcontrol.controller_of(revision)
        if selector.matches(revision["metadata"].get("labels")) and (ref is None or ref.get("uid") == uid):
            found.append(revision)
    return found


async def create_revision(client: RESTClient, sts: dict[str, Any], number: int,
                          collision_count: int) -> tuple[dict[str, Any], int]:
    """Create revision `number` of the set's template (or find its twin already stored); the stored
    revision and the collision count that named it."""
    namespace = sts["metadata"]["namespace"]
    for _ in range(MAX_COLLISIONS):
        candidate = new_revision(sts, number, collision_count)
        try:
            return await client.create(resources.CONTROLLER_REVISIONS, candidate, namespace), collision_count
        except errors.AlreadyExists:
            existing = await client.get(resources.CONTROLLER_REVISIONS, candidate["metadata"]["name"], namespace)
            if existing.get("data") == candidate["data"]:
                return existing, collision_count
            collision_count += 1
    raise RuntimeError(f"no free ControllerRevision name for {namespace}/{sts['metadata']['name']} "
                       f"after {MAX_COLLISIONS} hash collisions")



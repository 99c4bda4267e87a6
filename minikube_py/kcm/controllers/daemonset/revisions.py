"""A DaemonSet's history: one ControllerRevision per version of its pod template (kube's `constructHistory`,
`snapshot`, `dedupCurHistories` and `cleanupHistory`).

Each revision holds, as `data`, the patch that would bring the DaemonSet back to that version:
`{"spec": {"template": <template>, "$patch": "replace"}}` (the `$patch` directive sits inside the template,
so a strategic merge patch replaces the template whole). That is exactly what `kubectl rollout undo` sends
back as a patch, and `kubectl rollout history` lists the revisions by their `revision` number. A revision
is named `<daemonset>-<hash>` (`history.template_hash`, with `status.collisionCount` mixed in), labelled with
the template's labels plus `controller-revision-hash: <hash>`, carries the DaemonSet's annotations (so
`kubernetes.io/change-cause` shows in the history) and is owned by the DaemonSet.

On every sync `construct_history` sorts the DaemonSet's revisions into the current one (its data matches the
template) and the old ones. The current one is created when missing, or renumbered to one more than the
highest old number (an undo makes an old version current again without duplicating it). If two revisions
match, the one with the highest number is kept: pods labelled with the other's hash are relabelled, then the
other is deleted. When the name `<daemonset>-<hash>` is already taken by a revision with other data (a hash
collision), `status.collisionCount` is bumped and the sync fails, so the next one computes a new name.
`cleanup_history` deletes the oldest old revisions beyond `spec.revisionHistoryLimit` (10 by default), never
one a pod still runs.

Usage rules: the pod label `controller-revision-hash` of the current revision is the version new pods get.
`construct_history` is given the revisions the DaemonSet controls: the controller claims them as it claims
its pods (podcontrol.claim: matching orphans adopted, its own that stopped matching released).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers import history
from minikube_py.kcm.controllers.daemonset.placement import REVISION_HASH_LABEL

Obj = dict[str, Any]
DaemonPods = Callable[[], Awaitable[list[Obj]]]


class StaleCollisionCount(Exception):
    """The DaemonSet's collisionCount changed since the cache saw it: retry once the cache catches up."""


def revision_data(ds: Obj) -> Obj:
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def matches(ds: Obj, revision: Obj) -> bool:
    """Whether the revision holds the DaemonSet's current template."""
    return revision.get("data") == revision_data(ds)


async def construct_history(client: RESTClient, ds: Obj, revisions: list[Obj],
                            daemon_pods: DaemonPods) -> tuple[Obj, list[Obj]]:
    """(current revision, old revisions), creating or renumbering the current one as needed."""
    current: list[Obj] = []
    old: list[Obj] = []
    for revision in revisions:
        if REVISION_HASH_LABEL not in (revision["metadata"].get("labels") or {}):
            revision = copy.deepcopy(revision)
            revision["metadata"].setdefault("labels", {})[REVISION_HASH_LABEL] = revision["metadata"]["name"]
            revision = await client.update(resources.CONTROLLER_REVISIONS, revision, ds["metadata"]["namespace"])
        (current if matches(ds, revision) else old).append(revision)
    number = history.next_revision(old)
    if not current:
        return await snapshot(client, ds, number), old
    cur = await _dedup(client, ds, current, daemon_pods)
    if int(cur.get("revision", 0)) < number:
        cur = await history.renumber_revision(client, cur, number)
    return cur, old


async def snapshot(client: RESTClient, ds: Obj, number: int) -> Obj:
    """Create the revision of the current template with `revision: number`."""
    meta = ds["metadata"]
    collision_count = (ds.get("status") or {}).get("collisionCount")
    body = history.new_revision(ds, revision_data(ds), number, collision_count, hash_label=REVISION_HASH_LABEL)
    try:
        return await client.create(resources.CONTROLLER_REVISIONS, body, meta["namespace"])
    except errors.AlreadyExists as taken:
        existing = await client.get(resources.CONTROLLER_REVISIONS, body["metadata"]["name"], meta["namespace"])
        if matches(ds, existing):
            return existing
        fresh = await client.get(resources.DAEMON_SETS, meta["name"], meta["namespace"])
        status = fresh.setdefault("status", {})
        if status.get("collisionCount") != collision_count:
            raise StaleCollisionCount(
                f"found a stale collision count ({collision_count}, expected {status.get('collisionCount')}) "
                f"of DaemonSet {meta['name']!r} while processing; will retry until it is updated") from taken
        status["collisionCount"] = (collision_count or 0) + 1
        await client.update(resources.DAEMON_SETS, fresh, meta["namespace"], subresource="status")
        raise


async def _dedup(client: RESTClient, ds: Obj, current: list[Obj], daemon_pods: DaemonPods) -> Obj:
    """Keep the highest-numbered of several revisions of the same template; relabel pods, delete the rest."""
    if len(current) == 1:
        return current[0]
    keep = max(reversed(current), key=lambda r: int(r.get("revision", 0)))
    keep_hash = keep["metadata"]["labels"][REVISION_HASH_LABEL]
    namespace = ds["metadata"]["namespace"]
    for pod in await daemon_pods():
        if (pod["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL) != keep_hash:
            patch = {"metadata": {"labels": {REVISION_HASH_LABEL: keep_hash}}}
            await client.patch(resources.PODS, pod["metadata"]["name"], patch, namespace, patch_type="merge")
    for revision in current:
        if revision["metadata"]["name"] != keep["metadata"]["name"]:
            await client.delete(resources.CONTROLLER_REVISIONS, revision["metadata"]["name"], namespace)
    return keep


async def cleanup_history(client: RESTClient, ds: Obj, old: list[Obj], pods: list[Obj]) -> None:
    """Delete the oldest old revisions beyond revisionHistoryLimit, except those pods still run."""
    limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
    excess = len(old) - (10 if limit is None else int(limit))
    if excess <= 0:
        return
    live = {(p["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL) for p in pods} - {None, ""}
    for revision in history.sort_revisions(old):
        if excess <= 0:
            return
        if (revision["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL) in live:
            continue
        await client.delete(resources.CONTROLLER_REVISIONS, revision["metadata"]["name"], ds["metadata"]["namespace"])
        excess -= 1

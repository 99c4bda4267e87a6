"""What every path of a Deployment's sync shares: finding (or creating) the new ReplicaSet, resizing
ReplicaSets, trimming the history, and the status.

* `get_all_replica_sets_and_sync_revision`: the new ReplicaSet (the one running the Deployment's template)
  and the old ones. The new one's revision is raised to one more than the highest old revision (so a
  ReplicaSet brought back by `kubectl rollout undo` becomes the latest revision again), it gets the
  Deployment's annotations, and the Deployment gets its revision. With `create`, a missing new ReplicaSet
  is made: named `<deployment>-<pod-template-hash>`, the hash of the template (and of
  `status.collisionCount`) added to its labels, selector and template labels so that the pods of different
  revisions never mix, the template otherwise copied verbatim (kubectl compares them to find the new one).
  Should the name be taken by a ReplicaSet with another template, `collisionCount` goes up and the next
  sync tries the next name.
* `scale_replica_set`: set a ReplicaSet's size and the `desired-replicas`/`max-replicas` annotations, with
  the event kubectl describe shows ("Scaled up replica set web-5d8f from 1 to 3").
* `sync`: a paused Deployment, or one whose size changed: no rollout, but ReplicaSets resized. With several
  active ReplicaSets (in the middle of a rollout) the new size is spread in proportion to each one's
  share (`util.proportion`), largest first, leftovers to the largest.
* `cleanup_deployment`: old ReplicaSets beyond `revisionHistoryLimit` deleted, oldest revisions first,
  only those already scaled to 0.
* `calculate_status`: the counts summed over the ReplicaSets, `observedGeneration`, and the Available
  condition (at least `replicas - maxUnavailable` pods available).

Each function takes the controller (`dc`: client, recorder, clock, queue) like a Go method's receiver.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.deployment import util
from minikube_py.kcm.controllers.deployment.util import Obj
from minikube_py.kcm.controllers.history import template_hash

if TYPE_CHECKING:
    from minikube_py.kcm.controllers.deployment.controller import DeploymentController


def now(dc: DeploymentController) -> str:
    return time_string(dc.clock.wall())


async def sync_status_only(dc: DeploymentController, d: Obj, rs_list: list[Obj]) -> None:
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, create=False)
    await sync_deployment_status(dc, [*old_rss, new_rs], new_rs, d)


async def sync(dc: DeploymentController, d: Obj, rs_list: list[Obj]) -> None:
    """Reconcile a paused or scaled Deployment: resize, never roll out."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, create=False)
    await scale(dc, d, new_rs, old_rss)
    if util.spec(d).get("paused"):
        await cleanup_deployment(dc, old_rss, d)
    await sync_deployment_status(dc, [*old_rss, new_rs], new_rs, d)


async def check_paused_conditions(dc: DeploymentController, d: Obj) -> None:
    """Mark pausing and resuming in the Progressing condition (status Unknown), so that the time spent paused
    never counts against the progress deadline."""
    if not util.has_progress_deadline(d):
        return
    status = d.setdefault("status", {})
    current = util.get_condition(status, util.PROGRESSING)
    if current is not None and current.get("reason") == util.TIMED_OUT:
        return  # a reported failure stays reported
    paused_noted = current is not None and current.get("reason") == util.PAUSED
    if util.spec(d).get("paused") and not paused_noted:
        condition = util.new_condition(util.PROGRESSING, "Unknown", util.PAUSED, "Deployment is paused", now(dc))
    elif not util.spec(d).get("paused") and paused_noted:
        condition = util.new_condition(util.PROGRESSING, "Unknown", util.RESUMED, "Deployment is resumed", now(dc))
    else:
        return
    util.set_condition(status, condition)
    await dc.update_status(d)


async def is_scaling_event(dc: DeploymentController, d: Obj, rs_list: list[Obj]) -> bool:
    """Whether the Deployment was resized since its active ReplicaSets were last scaled."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, create=False)
    for rs in util.active([*old_rss, new_rs]):
        desired = util.int_annotation(rs, util.DESIRED_REPLICAS)
        if desired is not None and desired != util.replicas(d):
            return True
    return False


# the new ReplicaSet ---------------------------------------------------------------------------------------


async def get_all_replica_sets_and_sync_revision(dc: DeploymentController, d: Obj, rs_list: list[Obj],
                                                 create: bool) -> tuple[Obj | None, list[Obj]]:
    old_rss = util.find_old_replica_sets(d, rs_list)
    return await get_new_replica_set(dc, d, rs_list, old_rss, create), old_rss


async def get_new_replica_set(dc: DeploymentController, d: Obj, rs_list: list[Obj], old_rss: list[Obj],
                              create: bool) -> Obj | None:
    existing = util.find_new_replica_set(d, rs_list)
    new_revision = util.max_revision(old_rss) + 1
    if existing is not None:
        await _sync_existing(dc, d, existing, new_revision)
        return existing
    if not create:
        return None
    return await _create_new(dc, d, old_rss, new_revision)


async def _sync_existing(dc: DeploymentController, d: Obj, rs: Obj, new_revision: int) -> None:
    """Bring an existing new ReplicaSet's annotations up to date, then the Deployment's revision."""
    updated = copy.deepcopy(rs)
    annotations_changed = util.set_new_replica_set_annotations(d, updated, new_revision, exists=True)
    min_ready = util.spec(d).get("minReadySeconds") or 0
    min_ready_changed = (util.spec(rs).get("minReadySeconds") or 0) != min_ready
    if annotations_changed or min_ready_changed:
        if min_ready_changed:
            updated["spec"]["minReadySeconds"] = min_ready
        await _update_replica_set(dc, rs, updated)
        return  # the Deployment follows in the sync this write triggers
    needs_update = util.set_deployment_revision(d, util.annotations(rs).get(util.REVISION, ""))
    status = d.setdefault("status", {})
    if util.has_progress_deadline(d) and util.get_condition(status, util.PROGRESSING) is None:
        util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.FOUND_NEW_RS,
                                                      f'Found new replica set "{rs["metadata"]["name"]}"', now(dc)))
        needs_update = True
    if needs_update:
        await dc.update_status(d)


def new_replica_set(d: Obj, rs_hash: str) -> Obj:
    """The new ReplicaSet for `d`'s template (with 0 replicas and no annotations yet)."""
    template = copy.deepcopy(util.spec(d).get("template") or {})
    labels = {**((template.get("metadata") or {}).get("labels") or {}), util.HASH_LABEL: rs_hash}
    template.setdefault("metadata", {})["labels"] = labels
    selector = copy.deepcopy(util.spec(d).get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), util.HASH_LABEL: rs_hash}
    rs_spec: Obj = {"replicas": 0, "selector": selector, "template": template}
    if util.spec(d).get("minReadySeconds"):
        rs_spec["minReadySeconds"] = util.spec(d)["minReadySeconds"]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{d['metadata']['name']}-{rs_hash}", "namespace": d["metadata"]["namespace"],
                         "labels": dict(labels), "ownerReferences": [podcontrol.controller_ref(d)]},
            "spec": rs_spec}


async def _create_new(dc: DeploymentController, d: Obj, old_rss: list[Obj], new_revision: int) -> Obj:
    status = d.setdefault("status", {})
    rs = new_replica_set(d, template_hash(util.spec(d).get("template") or {}, status.get("collisionCount")))
    rs["spec"]["replicas"] = util.new_rs_new_replicas(d, [*old_rss, rs], rs)
    util.set_new_replica_set_annotations(d, rs, new_revision, exists=False)
    name, count = rs["metadata"]["name"], rs["spec"]["replicas"]
    try:
        created = await dc.client.create(resources.REPLICA_SETS, rs, d["metadata"]["namespace"])
    except errors.AlreadyExists as error:
        return await _adopt_or_collide(dc, d, rs, error)
    except errors.APIStatusError as error:
        if not errors.is_namespace_terminating(error):
            await _report_create_failure(dc, d, name, error)
        raise
    if count > 0:
        dc.recorder.event(d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {count}")
    util.set_deployment_revision(d, str(new_revision))
    if util.has_progress_deadline(d):
        util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.NEW_RS_CREATED,
                                                      f'Created new replica set "{name}"', now(dc)))
    await dc.update_status(d)
    return created


async def _adopt_or_collide(dc: DeploymentController, d: Obj, rs: Obj, error: errors.AlreadyExists) -> Obj:
    """The name is taken: ours if it is owned by `d` and runs its template (a stale cache), else a hash
    collision, which bumps `status.collisionCount` so that the next sync tries another name."""
    meta = rs["metadata"]
    found = dc.replica_sets.indexer.get_by_key(f"{meta['namespace']}/{meta['name']}")
    if found is None:
        raise errors.new_not_found("replicasets.apps", meta["name"])  # not cached yet: retry later
    ref = podcontrol.controller_of(found) or {}
    if ref.get("uid") == d["metadata"]["uid"] and \
            util.equal_ignore_hash(util.spec(d).get("template") or {}, util.spec(found).get("template") or {}):
        return copy.deepcopy(found)
    status = d.setdefault("status", {})
    status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
    await dc.update_status(d)
    raise error


async def _report_create_failure(dc: DeploymentController, d: Obj, name: str, error: errors.APIStatusError) -> None:
    message = f'Failed to create new replica set "{name}": {error}'
    dc.recorder.event(d, "Warning", util.FAILED_RS_CREATE, message)
    if not util.has_progress_deadline(d):
        return
    status = d.setdefault("status", {})
    before = copy.deepcopy(status)
    util.set_condition(status, util.new_condition(util.PROGRESSING, "False", util.FAILED_RS_CREATE, message, now(dc)))
    if status != before:  # an unchanged write would wake this Deployment again at once
        try:
            await dc.update_status(d)
        except errors.APIStatusError:
            pass  # the create failure is what gets reported and retried


# resizing ----------------------------------------------------------------------------------------------


async def _update_replica_set(dc: DeploymentController, rs: Obj, updated: Obj) -> None:
    """PUT `updated` and keep the result in `rs` (a sync-local copy), so later steps see the new size."""
    written = await dc.client.update(resources.REPLICA_SETS, updated, rs["metadata"]["namespace"])
    rs.clear()
    rs.update(written)


async def scale_replica_set_and_record_event(dc: DeploymentController, rs: Obj, new_scale: int, d: Obj) -> bool:
    """Set `rs`'s size to `new_scale` unless it has it already; whether it changed."""
    if util.replicas(rs) == new_scale:
        return False
    return await scale_replica_set(dc, rs, new_scale, d, "up" if util.replicas(rs) < new_scale else "down")


async def scale_replica_set(dc: DeploymentController, rs: Obj, new_scale: int, d: Obj, operation: str) -> bool:
    """Set `rs`'s size to `new_scale` and record the Deployment's size on it; whether the size changed."""
    old_scale = util.replicas(rs)
    desired, most = util.replicas(d), util.replicas(d) + util.max_surge(d)
    if old_scale == new_scale and not util.replicas_annotations_need_update(rs, desired, most):
        return False
    updated = copy.deepcopy(rs)
    updated["spec"]["replicas"] = new_scale
    util.set_replicas_annotations(updated, desired, most)
    await _update_replica_set(dc, rs, updated)
    if old_scale == new_scale:
        return False
    dc.recorder.event(d, "Normal", "ScalingReplicaSet",
                      f"Scaled {operation} replica set {rs['metadata']['name']} from {old_scale} to {new_scale}")
    return True


async def scale(dc: DeploymentController, d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> None:
    """Resize the ReplicaSets to a changed `spec.replicas` without advancing a rollout."""
    only = _active_or_latest(new_rs, old_rss)
    if only is not None:
        await scale_replica_set_and_record_event(dc, only, util.replicas(d), d)
        return
    if util.is_saturated(d, new_rs):
        for old in util.active(old_rss):
            await scale_replica_set_and_record_event(dc, old, 0, d)
        return
    if not util.is_rolling_update(d):
        return
    active = util.active([*old_rss, new_rs])
    allowed = util.replicas(d) + util.max_surge(d) if util.replicas(d) > 0 else 0
    to_add = allowed - util.total_replicas(active)
    operation = ""
    if to_add > 0:  # grow the largest first, the newer of two equal ones
        active.sort(key=util.by_creation, reverse=True)
        active.sort(key=util.replicas, reverse=True)
        operation = "up"
    elif to_add < 0:  # shrink the largest first, the older of two equal ones
        active.sort(key=util.by_creation)
        active.sort(key=util.replicas, reverse=True)
        operation = "down"
    sizes, added = [], 0
    for rs in active:
        share = util.proportion(rs, d, to_add, added)
        sizes.append(util.replicas(rs) + share)
        added += share
    if active and to_add:
        sizes[0] = max(sizes[0] + to_add - added, 0)  # leftovers to the largest
    for rs, size in zip(active, sizes, strict=True):
        await scale_replica_set(dc, rs, size, d, operation)


def _active_or_latest(new_rs: Obj | None, old_rss: list[Obj]) -> Obj | None:
    """The one active ReplicaSet, or the newest if none is active; None when several are active."""
    candidates = util.active([new_rs, *old_rss])
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        return None
    if new_rs is not None:
        return new_rs
    return max(old_rss, key=util.by_creation, default=None)


async def cleanup_deployment(dc: DeploymentController, old_rss: list[Obj], d: Obj) -> None:
    """Delete the oldest old ReplicaSets beyond `revisionHistoryLimit` (only those already at 0)."""
    if not util.has_revision_history_limit(d):
        return
    cleanable = sorted((rs for rs in old_rss if not rs["metadata"].get("deletionTimestamp")), key=util.by_revision)
    surplus = len(cleanable) - int(util.spec(d)["revisionHistoryLimit"])
    for rs in cleanable[:max(surplus, 0)]:
        settled = int(util.status(rs).get("observedGeneration") or 0) >= int(rs["metadata"].get("generation") or 0)
        if util.status(rs).get("replicas") or util.replicas(rs) or not settled:
            continue
        try:
            await dc.client.delete(resources.REPLICA_SETS, rs["metadata"]["name"], rs["metadata"]["namespace"])
        except errors.NotFound:
            pass


# status ---------------------------------------------------------------------------------------------------


def calculate_status(all_rss: list[Obj | None], new_rs: Obj | None, d: Obj, now_stamp: str) -> Obj:
    available = util.total_status(all_rss, "availableReplicas")
    counts = {
        "observedGeneration": int(d["metadata"].get("generation") or 0),
        "replicas": util.total_status(all_rss, "replicas"),
        "updatedReplicas": util.total_status([new_rs], "replicas"),
        "readyReplicas": util.total_status(all_rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(util.total_replicas(all_rss) - available, 0),
    }
    status: Obj = {key: value for key, value in counts.items() if value}  # zero counts are left out, as in kube
    previous = util.status(d)
    if previous.get("collisionCount") is not None:
        status["collisionCount"] = previous["collisionCount"]
    if previous.get("conditions"):
        status["conditions"] = copy.deepcopy(previous["conditions"])
    if available >= util.replicas(d) - util.max_unavailable(d):
        condition = util.new_condition(util.AVAILABLE, "True", util.MINIMUM_REPLICAS_AVAILABLE,
                                       "Deployment has minimum availability.", now_stamp)
    else:
        condition = util.new_condition(util.AVAILABLE, "False", util.MINIMUM_REPLICAS_UNAVAILABLE,
                                       "Deployment does not have minimum availability.", now_stamp)
    util.set_condition(status, condition)
    return status


async def sync_deployment_status(dc: DeploymentController, all_rss: list[Obj | None], new_rs: Obj | None,
                                 d: Obj) -> None:
    status = calculate_status(all_rss, new_rs, d, now(dc))
    if status != util.status(d):
        d["status"] = status
        await dc.update_status(d)

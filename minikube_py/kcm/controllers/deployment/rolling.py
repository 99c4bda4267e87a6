"""The RollingUpdate strategy: replace pods a few at a time, never below `replicas - maxUnavailable`
available pods and never above `replicas + maxSurge` pods in total.

Each sync takes one step and writes the status:
1. scale the new ReplicaSet up as far as the surge allows (`util.new_rs_new_replicas`); if it grew, stop:
   its pods must become available before old ones can go;
2. otherwise scale old ReplicaSets down: first the pods that are not available anyway (they cost nothing
   in availability), then, oldest ReplicaSet first, as many as keep `replicas - maxUnavailable` available
   — counting the new ReplicaSet's unavailable pods against the budget, so a broken new template never
   eats the old, working pods;
3. once complete, trim the history beyond `revisionHistoryLimit`.

For example 10 replicas, maxSurge 3, maxUnavailable 2: the new ReplicaSet starts at 3 (13 pods) and the
old one drops to 8 (8 available is the minimum); then the new one grows to 5, and as its pods become
available the old one shrinks further, until the new one has 10 and the old one none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minikube_py.kcm.controllers.deployment import util
from minikube_py.kcm.controllers.deployment.progress import sync_rollout_status
from minikube_py.kcm.controllers.deployment.sync import (
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set_and_record_event,
)
from minikube_py.kcm.controllers.deployment.util import Obj

if TYPE_CHECKING:
    from minikube_py.kcm.controllers.deployment.controller import DeploymentController


async def rollout_rolling(dc: DeploymentController, d: Obj, rs_list: list[Obj]) -> None:
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, create=True)
    assert new_rs is not None  # created when missing
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    if await reconcile_new_replica_set(dc, [*old_rss, new_rs], new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if await reconcile_old_replica_sets(dc, [*old_rss, new_rs], util.active(old_rss), new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if util.deployment_complete(d, util.status(d)):
        await cleanup_deployment(dc, old_rss, d)
    await sync_rollout_status(dc, all_rss, new_rs, d)


async def reconcile_new_replica_set(dc: DeploymentController, all_rss: list[Obj], new_rs: Obj, d: Obj) -> bool:
    """Grow (or, past `replicas`, shrink) the new ReplicaSet; whether it changed."""
    if util.replicas(new_rs) == util.replicas(d):
        return False
    if util.replicas(new_rs) > util.replicas(d):
        return await scale_replica_set_and_record_event(dc, new_rs, util.replicas(d), d)
    return await scale_replica_set_and_record_event(dc, new_rs, util.new_rs_new_replicas(d, all_rss, new_rs), d)


async def reconcile_old_replica_sets(dc: DeploymentController, all_rss: list[Obj], old_rss: list[Obj], new_rs: Obj,
                                     d: Obj) -> bool:
    """Shrink the old ReplicaSets as far as availability allows; whether any shrank."""
    if util.total_replicas(old_rss) == 0:
        return False
    min_available = util.replicas(d) - util.max_unavailable(d)
    new_unavailable = util.replicas(new_rs) - int(util.status(new_rs).get("availableReplicas") or 0)
    max_scaled_down = util.total_replicas(all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    old_rss = sorted(old_rss, key=util.by_creation)
    cleaned = await _cleanup_unhealthy_replicas(dc, old_rss, d, max_scaled_down)
    scaled = await _scale_down_old_replica_sets(dc, [*old_rss, new_rs], old_rss, d)
    return cleaned + scaled > 0


async def _cleanup_unhealthy_replicas(dc: DeploymentController, old_rss: list[Obj], d: Obj, most: int) -> int:
    """Remove up to `most` pods of old ReplicaSets that are not available (oldest ReplicaSet first)."""
    total = 0
    for rs in old_rss:
        if total >= most:
            break
        unhealthy = util.replicas(rs) - int(util.status(rs).get("availableReplicas") or 0)
        if util.replicas(rs) == 0 or unhealthy <= 0:
            continue
        count = min(most - total, unhealthy)
        await scale_replica_set_and_record_event(dc, rs, util.replicas(rs) - count, d)
        total += count
    return total


async def _scale_down_old_replica_sets(dc: DeploymentController, all_rss: list[Obj], old_rss: list[Obj],
                                       d: Obj) -> int:
    """Remove available old pods down to `replicas - maxUnavailable` available (oldest ReplicaSet first)."""
    min_available = util.replicas(d) - util.max_unavailable(d)
    available = util.total_status(all_rss, "availableReplicas")
    if available <= min_available:
        return 0
    budget, total = available - min_available, 0
    for rs in old_rss:
        if total >= budget:
            break
        if util.replicas(rs) == 0:
            continue
        count = min(util.replicas(rs), budget - total)
        await scale_replica_set_and_record_event(dc, rs, util.replicas(rs) - count, d)
        total += count
    return total

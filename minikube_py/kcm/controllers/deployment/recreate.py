"""The Recreate strategy: every old pod goes before any new one starts (for apps that cannot run two
versions at once).

Each sync: scale every old ReplicaSet to 0; while any old pod still exists (not Succeeded or Failed,
being deleted included), wait — the pod informer's delete handler wakes the Deployment when its last pod
is gone; then create the new ReplicaSet if needed and scale it to `replicas` at once.
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


async def rollout_recreate(dc: DeploymentController, d: Obj, rs_list: list[Obj],
                           pod_map: dict[str, list[Obj]]) -> None:
    # no new ReplicaSet yet: it must not scale up before the old ones are down
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, create=False)
    scaled_down = False
    for rs in util.active(old_rss):
        scaled_down = await scale_replica_set_and_record_event(dc, rs, 0, d) or scaled_down
    if scaled_down or old_pods_running(new_rs, old_rss, pod_map):
        await sync_rollout_status(dc, [*old_rss, new_rs], new_rs, d)
        return
    if new_rs is None:
        new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, create=True)
        assert new_rs is not None  # created when missing
    await scale_replica_set_and_record_event(dc, new_rs, util.replicas(d), d)
    if util.deployment_complete(d, util.status(d)):
        await cleanup_deployment(dc, old_rss, d)
    await sync_rollout_status(dc, [*old_rss, new_rs], new_rs, d)


def old_pods_running(new_rs: Obj | None, old_rss: list[Obj], pod_map: dict[str, list[Obj]]) -> bool:
    """Whether any old ReplicaSet still reports pods, or any pod of one still exists and has not finished."""
    if util.total_status(old_rss, "replicas") > 0:
        return True
    new_uid = new_rs["metadata"]["uid"] if new_rs is not None else None
    return any((pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
               for uid, pods in pod_map.items() if uid != new_uid for pod in pods)

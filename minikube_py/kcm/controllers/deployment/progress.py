"""Progress of a rollout: the Progressing and ReplicaFailure conditions, and the progress deadline.

During a rollout the status carries, besides the counts and Available (sync.calculate_status):
* Progressing True `ReplicaSetUpdated` ("ReplicaSet "web-5d8f" is progressing.") whenever a step forward is
  seen (more updated, ready or available pods, fewer old ones); its `lastUpdateTime` is the last progress;
* Progressing True `NewReplicaSetAvailable` once the rollout is complete (`util.deployment_complete`);
* Progressing False `ProgressDeadlineExceeded` when no progress was seen for `progressDeadlineSeconds`;
  `kubectl rollout status` then fails with "deployment "web" exceeded its progress deadline";
* ReplicaFailure copied from the new ReplicaSet's (else any old one's), e.g. pods refused by a quota.

A Deployment that makes no progress produces no events to wake it, so when nothing changed the key is
queued again for the moment its deadline passes (`requeue_stuck_deployment`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from minikube_py.client.store import meta_namespace_key
from minikube_py.kcm.controllers.deployment import util
from minikube_py.kcm.controllers.deployment.sync import calculate_status, now
from minikube_py.kcm.controllers.deployment.util import Obj

if TYPE_CHECKING:
    from minikube_py.kcm.controllers.deployment.controller import DeploymentController


async def sync_rollout_status(dc: DeploymentController, all_rss: list[Obj | None], new_rs: Obj | None,
                              d: Obj) -> None:
    stamp = now(dc)
    status = calculate_status(all_rss, new_rs, d, stamp)
    if not util.has_progress_deadline(d):
        util.remove_condition(status, util.PROGRESSING)
    current = util.get_condition(util.status(d), util.PROGRESSING)
    finished = status.get("replicas") == status.get("updatedReplicas") and current is not None \
        and current.get("reason") == util.NEW_RS_AVAILABLE
    if util.has_progress_deadline(d) and not finished:
        _estimate_progress(dc, d, status, new_rs, current, stamp)
    failure = _replica_failure(all_rss, new_rs)
    if failure is not None:
        util.set_condition(status, failure)
    else:
        util.remove_condition(status, util.REPLICA_FAILURE)
    if status == util.status(d):
        requeue_stuck_deployment(dc, d, status)
        return
    d["status"] = status
    await dc.update_status(d)


def _estimate_progress(dc: DeploymentController, d: Obj, status: Obj, new_rs: Obj | None, current: Obj | None,
                       stamp: str) -> None:
    subject = f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs else f'Deployment "{d["metadata"]["name"]}"'
    if util.deployment_complete(d, status):
        util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.NEW_RS_AVAILABLE,
                                                      f"{subject} has successfully progressed.", stamp))
    elif util.deployment_progressing(d, status):
        condition = util.new_condition(util.PROGRESSING, "True", util.RS_UPDATED, f"{subject} is progressing.", stamp)
        if current is not None:
            if current.get("status") == "True":
                condition["lastTransitionTime"] = current.get("lastTransitionTime")
            util.remove_condition(status, util.PROGRESSING)  # re-added even with the same reason: a new lastUpdateTime
        util.set_condition(status, condition)
    elif util.deployment_timed_out(d, status, dc.clock.wall().timestamp()):
        util.set_condition(status, util.new_condition(util.PROGRESSING, "False", util.TIMED_OUT,
                                                      f"{subject} has timed out progressing.", stamp))


def _replica_failure(all_rss: list[Obj | None], new_rs: Obj | None) -> Obj | None:
    """The new ReplicaSet's ReplicaFailure condition as a Deployment condition, else the first old one's."""
    for rs in [new_rs, *all_rss]:
        for condition in util.status(rs).get("conditions") or []:
            if condition.get("type") == util.REPLICA_FAILURE:
                converted = copy.deepcopy(condition)
                converted["lastUpdateTime"] = condition.get("lastTransitionTime")
                return converted
    return None


def requeue_stuck_deployment(dc: DeploymentController, d: Obj, status: Obj) -> None:
    """Queue `d` again for when its progress deadline passes, if it is mid-rollout and not yet failed."""
    current = util.get_condition(util.status(d), util.PROGRESSING)
    if not util.has_progress_deadline(d) or current is None:
        return
    if util.deployment_complete(d, status) or current.get("reason") == util.TIMED_OUT:
        return
    after = util.progress_deadline(d, current) - dc.clock.wall().timestamp()
    if after < 1:
        dc.queue.add_rate_limited(meta_namespace_key(d))
    else:
        dc.queue.add_after(meta_namespace_key(d), after + 1)  # a second more, so the deadline has surely passed

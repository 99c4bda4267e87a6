"""The arithmetic of a Deployment and its ReplicaSets, without any I/O (kube's `deployment/util`).

Everything here is a pure function of objects as plain dicts, so each rule can be tested on its own:

* fenceposts: `max_surge` / `max_unavailable` turn the RollingUpdate strategy's int-or-percent values into
  pod counts for `spec.replicas` (surge rounds up, unavailability rounds down; should both come out 0, one
  pod may be unavailable, or the rollout could never move);
* which ReplicaSet is *new*: the one whose pod template equals the Deployment's, ignoring the
  `pod-template-hash` label (`find_new_replica_set`, `equal_ignore_hash`); all the others are *old*;
* annotations: the revision number (`deployment.kubernetes.io/revision`) and the history of revisions an
  old ReplicaSet served before a rollback brought it back (`revision-history`), the size the Deployment had
  when a ReplicaSet was last scaled (`desired-replicas`, `max-replicas`, which proportional scaling reads),
  and the Deployment's own annotations copied onto its new ReplicaSet (`kubernetes.io/change-cause` is
  what `kubectl rollout history` prints);
* conditions (`set_condition` keeps `lastTransitionTime` while the status stays the same) and the
  predicates on a status: complete, progressing, timed out;
* sizes: how far the new ReplicaSet may grow (`new_rs_new_replicas`), and each ReplicaSet's share when a
  Deployment is scaled in the middle of a rollout (`proportion`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

from minikube_py.api.timestamps import parse_time
from minikube_py.kcm.controllers.intstr import scaled_value

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
MAX_REVISION_HISTORY_CHARS = 2000  # the revision-history annotation drops its oldest entries beyond this
MAX_INT32 = 2**31 - 1  # a progress deadline or history limit of this size means "none"
# What a new ReplicaSet never takes over from its Deployment's annotations.
ANNOTATIONS_NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY,
                                    DESIRED_REPLICAS, MAX_REPLICAS, "deprecated.deployment.rollback.to"})

# condition types and reasons, as kubectl shows them
AVAILABLE, PROGRESSING, REPLICA_FAILURE = "Available", "Progressing", "ReplicaFailure"
MINIMUM_REPLICAS_AVAILABLE, MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasAvailable", "MinimumReplicasUnavailable"
NEW_RS_CREATED, FOUND_NEW_RS, RS_UPDATED = "NewReplicaSetCreated", "FoundNewReplicaSet", "ReplicaSetUpdated"
NEW_RS_AVAILABLE, TIMED_OUT, FAILED_RS_CREATE = "NewReplicaSetAvailable", "ProgressDeadlineExceeded", "ReplicaSetCreateError"
PAUSED, RESUMED = "DeploymentPaused", "DeploymentResumed"

Obj = dict[str, Any]


# fields -------------------------------------------------------------------------------------------------


def spec(obj: Obj | None) -> Obj:
    return (obj or {}).get("spec") or {}


def status(obj: Obj | None) -> Obj:
    return (obj or {}).get("status") or {}


def annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def replicas(obj: Obj | None) -> int:
    """`spec.replicas` (1 when unset, as the apiserver defaults it)."""
    value = spec(obj).get("replicas")
    return 1 if value is None else int(value)


def is_rolling_update(d: Obj) -> bool:
    return (spec(d).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def has_progress_deadline(d: Obj) -> bool:
    deadline = spec(d).get("progressDeadlineSeconds")
    return deadline is not None and deadline != MAX_INT32


def has_revision_history_limit(d: Obj) -> bool:
    limit = spec(d).get("revisionHistoryLimit")
    return limit is not None and limit != MAX_INT32


# fenceposts ---------------------------------------------------------------------------------------------


def resolve_fenceposts(d: Obj) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as pod counts; never both 0."""
    rolling = (spec(d).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(d)
    surge = scaled_value(rolling.get("maxSurge"), desired, round_up=True)
    unavailable = scaled_value(rolling.get("maxUnavailable"), desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # rounding made both 0: allow one pod down rather than never moving
    return surge, unavailable


def max_surge(d: Obj) -> int:
    return resolve_fenceposts(d)[0] if is_rolling_update(d) else 0


def max_unavailable(d: Obj) -> int:
    if not is_rolling_update(d) or replicas(d) == 0:
        return 0
    return min(resolve_fenceposts(d)[1], replicas(d))


# new and old ReplicaSets --------------------------------------------------------------------------------


def _semantic(value: Any) -> Any:
    """`value` with empty maps and lists and nulls left out: Go's semantic equality does not tell them apart."""
    if isinstance(value, dict):
        pruned = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _without_hash(template: Obj) -> Obj:
    template = copy.deepcopy(template)
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(HASH_LABEL, None)
    return _semantic(template)


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    return _without_hash(a) == _without_hash(b)


def by_creation(rs: Obj) -> tuple[str, str]:
    return rs["metadata"].get("creationTimestamp") or "", rs["metadata"]["name"]


def find_new_replica_set(d: Obj, rs_list: list[Obj]) -> Obj | None:
    """The oldest ReplicaSet running the Deployment's current template, if there is one."""
    template = spec(d).get("template") or {}
    for rs in sorted(rs_list, key=by_creation):
        if equal_ignore_hash(spec(rs).get("template") or {}, template):
            return rs
    return None


def find_old_replica_sets(d: Obj, rs_list: list[Obj]) -> list[Obj]:
    new_rs = find_new_replica_set(d, rs_list)
    return [rs for rs in rs_list if rs is not new_rs]


def active(rss: Iterable[Obj | None]) -> list[Obj]:
    """The ReplicaSets that want pods."""
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def total_replicas(rss: Iterable[Obj | None]) -> int:
    return sum(replicas(rs) for rs in rss if rs is not None)


def total_status(rss: Iterable[Obj | None], field: str) -> int:
    return sum(int(status(rs).get(field) or 0) for rs in rss if rs is not None)


def by_revision(rs: Obj) -> tuple[int, str, str]:
    return (revision(rs), *by_creation(rs))


# annotations --------------------------------------------------------------------------------------------


def revision(obj: Obj) -> int:
    """The revision annotation as a number; 0 when missing or unreadable."""
    try:
        return int(annotations(obj).get(REVISION, "0"))
    except ValueError:
        return 0


def max_revision(rss: Iterable[Obj]) -> int:
    return max((revision(rs) for rs in rss), default=0)


def int_annotation(rs: Obj, key: str) -> int | None:
    try:
        return int(annotations(rs)[key])
    except (KeyError, ValueError):
        return None


def set_replicas_annotations(rs: Obj, desired: int, maximum: int) -> bool:
    """Record the Deployment's size on `rs`; whether anything changed."""
    notes = rs["metadata"].setdefault("annotations", {})
    wanted = {DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(maximum)}
    changed = any(notes.get(key) != value for key, value in wanted.items())
    notes.update(wanted)
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, maximum: int) -> bool:
    notes = annotations(rs)
    return notes.get(DESIRED_REPLICAS) != str(desired) or notes.get(MAX_REPLICAS) != str(maximum)


def set_new_replica_set_annotations(d: Obj, rs: Obj, new_revision: int, exists: bool) -> bool:
    """Copy the Deployment's annotations onto its new ReplicaSet and raise the ReplicaSet's revision to
    `new_revision` (remembering the one it had in the revision history); whether anything changed."""
    notes = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in annotations(d).items():
        if key not in ANNOTATIONS_NOT_COPIED and notes.get(key) != value:
            notes[key] = value
            changed = True
    old_text = notes.get(REVISION)
    try:
        old_revision = int(old_text) if old_text else 0
    except ValueError:
        return False  # someone wrote nonsense there: leave the numbering alone
    if old_revision < new_revision:
        notes[REVISION] = str(new_revision)
        changed = True
        if old_text:  # a rollback to this ReplicaSet: keep the revisions it served before
            notes[REVISION_HISTORY] = _append_history(notes.get(REVISION_HISTORY, ""), old_text)
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def _append_history(history: str, old_revision: str) -> str:
    entries = [entry for entry in history.split(",") if entry] + [old_revision]
    while len(",".join(entries)) > MAX_REVISION_HISTORY_CHARS and len(entries) > 1:
        entries.pop(0)
    return ",".join(entries)


def set_deployment_revision(d: Obj, value: str) -> bool:
    notes = d["metadata"].setdefault("annotations", {})
    if notes.get(REVISION) == value:
        return False
    notes[REVISION] = value
    return True


# conditions ---------------------------------------------------------------------------------------------


def new_condition(type_: str, status_: str, reason: str, message: str, now: str) -> Obj:
    return {"type": type_, "status": status_, "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def get_condition(status_: Obj, type_: str) -> Obj | None:
    return next((c for c in status_.get("conditions") or [] if c.get("type") == type_), None)


def set_condition(status_: Obj, condition: Obj) -> None:
    """Put `condition` in `status_` (last), unless one with the same status and reason is already there."""
    current = get_condition(status_, condition["type"])
    if current is not None and current.get("status") == condition["status"] \
            and current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status_, condition["type"])
    status_.setdefault("conditions", []).append(condition)


def remove_condition(status_: Obj, type_: str) -> None:
    kept = [c for c in status_.get("conditions") or [] if c.get("type") != type_]
    if kept:
        status_["conditions"] = kept
    else:
        status_.pop("conditions", None)


# the state of a rollout ---------------------------------------------------------------------------------


def deployment_complete(d: Obj, new_status: Obj) -> bool:
    """Every desired replica updated and available, no old one left, and this generation observed."""
    desired = replicas(d)
    return (int(new_status.get("updatedReplicas") or 0) == desired
            and int(new_status.get("replicas") or 0) == desired
            and int(new_status.get("availableReplicas") or 0) == desired
            and int(new_status.get("observedGeneration") or 0) >= int(d["metadata"].get("generation") or 0))


def deployment_progressing(d: Obj, new_status: Obj) -> bool:
    """Whether `new_status` shows any step forward from the Deployment's current status."""
    old = status(d)

    def count(s: Obj, field: str) -> int:
        return int(s.get(field) or 0)

    old_left = count(old, "replicas") - count(old, "updatedReplicas")
    new_left = count(new_status, "replicas") - count(new_status, "updatedReplicas")
    return (count(new_status, "updatedReplicas") > count(old, "updatedReplicas") or new_left < old_left
            or count(new_status, "readyReplicas") > count(old, "readyReplicas")
            or count(new_status, "availableReplicas") > count(old, "availableReplicas"))


def deployment_timed_out(d: Obj, new_status: Obj, now: float) -> bool:
    """Whether the last progress was reported longer than `progressDeadlineSeconds` ago."""
    if not has_progress_deadline(d):
        return False
    condition = get_condition(new_status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    return progress_deadline(d, condition) < now


def progress_deadline(d: Obj, condition: Obj) -> float:
    """When (epoch seconds) a rollout last reported at `condition` times out."""
    stamp = condition.get("lastUpdateTime")
    last = parse_time(stamp).timestamp() if stamp else 0.0
    return last + int(spec(d)["progressDeadlineSeconds"])


# sizes ---------------------------------------------------------------------------------------------------


def new_rs_new_replicas(d: Obj, all_rss: list[Obj], new_rs: Obj) -> int:
    """How many replicas the new ReplicaSet may have now: all of them for Recreate; for RollingUpdate as
    many as the surge allows, never more than the Deployment wants."""
    if not is_rolling_update(d):
        return replicas(d)
    most = replicas(d) + max_surge(d)
    current = total_replicas(all_rss)
    if current >= most:
        return replicas(new_rs)
    return replicas(new_rs) + min(most - current, replicas(d) - replicas(new_rs))


def is_saturated(d: Obj, rs: Obj | None) -> bool:
    """Whether `rs` holds every replica the Deployment wants, all available, and knows it."""
    if rs is None:
        return False
    desired = replicas(d)
    return (replicas(rs) == desired and int_annotation(rs, DESIRED_REPLICAS) == desired
            and int(status(rs).get("availableReplicas") or 0) == desired)


def proportion(rs: Obj, d: Obj, to_add: int, added: int) -> int:
    """The change in size `rs` gets when the Deployment grows (or shrinks) by `to_add` replicas in total,
    of which `added` were already handed out: its share by its size at the last scaling, clamped so that
    the running total never passes `to_add`."""
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _fraction(rs: Obj, d: Obj) -> int:
    if replicas(d) == 0:
        return -replicas(rs)  # scaling to zero: the whole of it goes
    deployment_replicas = replicas(d) + max_surge(d)
    annotated = int_annotation(rs, MAX_REPLICAS)
    if annotated is None:
        annotated = int(status(d).get("replicas") or 0)
    if annotated == 0:
        return 0
    return math.floor(replicas(rs) * deployment_replicas / annotated + 0.5) - replicas(rs)

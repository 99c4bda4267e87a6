"""How the Job controller reads its pods: failed or not, ready, terminating, when they finished.

The `batch.kubernetes.io/job-tracking` finalizer is on every pod a Job creates (and added to pods it
adopts): a pod cannot disappear before the controller has counted it in `status.succeeded`/`failed`, even
when someone deletes it or the pod GC removes it. The controller removes the finalizer once the pod is
counted (see tracking.py).

A pod counts as failed when its phase is Failed, or, under `podReplacementPolicy: TerminatingOrFailed` (the
default without a podFailurePolicy), as soon as it is being deleted without having succeeded: it is then
replaced at once instead of when it has finally stopped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from minikube_py.api.timestamps import parse_time

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"


def has_tracking_finalizer(pod: dict[str, Any]) -> bool:
    return TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def remove_finalizer_patch() -> dict[str, Any]:
    """A strategic merge patch taking the tracking finalizer (and only it) off a pod."""
    return {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_terminating(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp")) and phase(pod) not in ("Succeeded", "Failed")


def only_replace_failed_pods(job: dict[str, Any]) -> bool:
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def is_pod_failed(pod: dict[str, Any], job: dict[str, Any]) -> bool:
    if phase(pod) == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool(pod["metadata"].get("deletionTimestamp")) and phase(pod) != "Succeeded"


def finished_time(pod: dict[str, Any]) -> datetime:
    """When the pod finished: its last container's exit, else its Ready=False transition, else the moment
    its deletion began, else its creation."""
    status = pod.get("status") or {}
    exits = [((s.get("state") or {}).get("terminated") or {}).get("finishedAt")
             for s in status.get("containerStatuses") or []]
    if exits and all(exits):
        return max(parse_time(stamp) for stamp in exits)
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "False" and \
                condition.get("lastTransitionTime"):
            return parse_time(condition["lastTransitionTime"])
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        return parse_time(meta["deletionTimestamp"]) - timedelta(seconds=int(meta.get("deletionGracePeriodSeconds") or 0))
    return parse_time(meta["creationTimestamp"])

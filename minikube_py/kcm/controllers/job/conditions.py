"""A Job's conditions: how they are made, found and updated, and when a Job counts as finished.

In kube 1.32 a Job ends in two steps, so nothing reports it finished while its pods still run:
* first an interim condition says the outcome is decided: `FailureTarget` (with the failure's reason,
  `BackoffLimitExceeded`, `DeadlineExceeded`, `PodFailurePolicy`, `MaxFailedIndexesExceeded`,
  `FailedIndexes`) or `SuccessCriteriaMet` (`CompletionsReached` or `SuccessPolicy`);
* once every pod is terminated and counted, the terminal one follows with the same reason and message:
  `Failed` or `Complete`. Only these two make a Job finished (`finished_condition`); the TTL and CronJob
  controllers read them too.
`Suspended` (True/`JobSuspended`, False/`JobResumed`) tracks `spec.suspend`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.timestamps import time_string

COMPLETE = "Complete"
FAILED = "Failed"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
SUSPENDED = "Suspended"

BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
MAX_FAILED_INDEXES_EXCEEDED = ("MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed "
                                                           "indexes")
FAILED_INDEXES = ("FailedIndexes", "Job has failed indexes")
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
POD_FAILURE_POLICY = "PodFailurePolicy"
SUCCESS_POLICY = "SuccessPolicy"


def new_condition(type_: str, status: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    stamp = time_string(now)
    condition = {"type": type_, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp}
    # kube leaves empty strings out of the JSON
    condition.update({key: value for key, value in (("reason", reason), ("message", message)) if value})
    return condition


def find_condition(job: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


def has_true_condition(job: dict[str, Any], type_: str) -> bool:
    condition = find_condition(job, type_)
    return condition is not None and condition.get("status") == "True"


def ensure_condition_status(job: dict[str, Any], type_: str, status: str, reason: str, message: str,
                            now: datetime) -> bool:
    """Set the condition of `type_` (a missing one is only added when not False); whether it changed."""
    conditions = job.setdefault("status", {}).setdefault("conditions", [])
    fresh = new_condition(type_, status, reason, message, now)
    for index, condition in enumerate(conditions):
        if condition.get("type") == type_:
            if (condition.get("status"), condition.get("reason", ""), condition.get("message", "")) == (
                    status, reason, message):
                return False
            conditions[index] = fresh
            return True
    if status == "False":
        if not conditions:
            del job["status"]["conditions"]
        return False
    conditions.append(fresh)
    return True


def finished_condition(job: dict[str, Any]) -> dict[str, Any] | None:
    """The Complete or Failed condition that is True, if the Job has finished."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in (COMPLETE, FAILED) and condition.get("status") == "True":
            return condition
    return None


def finished_condition_type(job: dict[str, Any]) -> str | None:
    condition = finished_condition(job)
    return None if condition is None else str(condition["type"])

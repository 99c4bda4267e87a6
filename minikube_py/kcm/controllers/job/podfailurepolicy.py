"""`spec.podFailurePolicy`: what a failed pod means for its Job, decided by the first matching rule.

Each rule matches a failed pod by the exit code of one of its terminated containers (`onExitCodes`:
operator `In` or `NotIn` over `values`, optionally only for `containerName`; exit code 0 never matches) or
by one of its conditions (`onPodConditions`: a `type` with a `status`, e.g. `DisruptionTarget` True when the
pod was evicted or preempted). The rule's action:
* `FailJob`: the whole Job fails at once (reason `PodFailurePolicy`, the message names the pod and rule);
* `FailIndex`: the pod's index fails without further retries (with `backoffLimitPerIndex`);
* `Ignore`: the failure does not count against `backoffLimit` (the pod is simply replaced);
* `Count`: counted as usual, which is also what happens when no rule matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FAIL_JOB, FAIL_INDEX, IGNORE, COUNT = "FailJob", "FailIndex", "Ignore", "Count"


@dataclass(frozen=True)
class Match:
    fail_job_message: str | None  # set for a FailJob rule
    count_failed: bool  # False for an Ignore rule
    action: str | None  # the matched rule's action, None when no rule matched


NO_MATCH = Match(None, True, None)


def match_pod_failure_policy(policy: dict[str, Any] | None, pod: dict[str, Any]) -> Match:
    if not policy:
        return NO_MATCH
    meta, status = pod["metadata"], pod.get("status") or {}
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            container = _matching_container(status, rule["onExitCodes"])
            if container is None:
                continue
            exit_code = container["state"]["terminated"]["exitCode"]
            message = (f"Container {container['name']} for pod {meta['namespace']}/{meta['name']} failed with exit "
                       f"code {exit_code} matching {action} rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            condition = _matching_condition(status, rule["onPodConditions"])
            if condition is None:
                continue
            message = (f"Pod {meta['namespace']}/{meta['name']} has condition {condition['type']} matching {action} "
                       f"rule at index {index}")
        else:
            continue
        if action == IGNORE:
            return Match(None, False, IGNORE)
        if action in (COUNT, FAIL_INDEX):
            return Match(None, True, action)
        if action == FAIL_JOB:
            return Match(message, True, FAIL_JOB)
    return NO_MATCH


def _matching_container(status: dict[str, Any], requirement: dict[str, Any]) -> dict[str, Any] | None:
    for statuses in (status.get("containerStatuses"), status.get("initContainerStatuses")):
        for container in statuses or []:
            terminated = (container.get("state") or {}).get("terminated")
            if terminated is None:
                continue  # still running or terminating: no exit code yet
            name = requirement.get("containerName")
            code = int(terminated.get("exitCode", 0))
            if (name is None or name == container.get("name")) and code != 0 and _exit_code_matches(code, requirement):
                return dict(container)
    return None


def _exit_code_matches(code: int, requirement: dict[str, Any]) -> bool:
    values = requirement.get("values") or []
    if requirement.get("operator") == "In":
        return code in values
    if requirement.get("operator") == "NotIn":
        return code not in values
    return False


def _matching_condition(status: dict[str, Any], patterns: list[dict[str, Any]]) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        for pattern in patterns:
            if condition.get("type") == pattern.get("type") and condition.get("status") == pattern.get("status", "True"):
                return dict(condition)
    return None

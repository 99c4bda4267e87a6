"""PodDisruptionBudgets (policy/v1), PriorityClasses (scheduling.k8s.io/v1) and Leases (coordination.k8s.io/v1).

Three small kinds that steer eviction, preemption and leader election. PriorityClass values above one
billion are reserved for the two built-in system classes, so that no user workload can outrank the cluster's
own critical pods; a PriorityClass's value and preemption policy are fixed once created, because pods copied
them at admission.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.errors import FieldError, forbidden, invalid, not_supported, required
from minikube_py.api.validation.apps import int_or_percent
from minikube_py.api.validation.messages import as_dict, go_scalar, immutable, invalid_go
from minikube_py.api.validation.meta import validate_label_selector

HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}


def pod_disruption_budget(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs: list[FieldError] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errs.append(invalid_go("spec", "policy.PodDisruptionBudgetSpec{...}",
                               "minAvailable and maxUnavailable cannot be both set"))
    for key in ("minAvailable", "maxUnavailable"):
        if spec.get(key) is not None:
            errs += int_or_percent(spec[key], f"spec.{key}")
    errs += validate_label_selector(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in ("AlwaysAllow", "IfHealthyBudget"):
        errs.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, ["AlwaysAllow", "IfHealthyBudget"]))
    return errs


def priority_class(obj: dict[str, Any]) -> list[FieldError]:
    name = str(as_dict(obj.get("metadata")).get("name") or "")
    value = obj.get("value")
    errs: list[FieldError] = []
    if name.startswith("system-"):
        problem = _system_class_problem(name, value, obj.get("globalDefault") is True)
        if problem:
            errs.append(forbidden("metadata.name", "priority class names with 'system-' prefix are reserved for "
                                                   f"system use only. error: {problem}"))
    elif isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        errs.append(forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if "preemptionPolicy" in obj and policy is not None:
        if not policy:
            errs.append(required("preemptionPolicy"))
        elif policy not in ("PreemptLowerPriority", "Never"):
            errs.append(not_supported("preemptionPolicy", policy, ["PreemptLowerPriority", "Never"]))
    return errs


def _system_class_problem(name: str, value: Any, global_default: bool) -> str:
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_PRIORITY_CLASSES[name]:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def priority_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = priority_class(new)
    if new.get("value") != old.get("value"):
        errs.append(forbidden("value", "may not be changed in an update."))
    policy = new.get("preemptionPolicy")
    return errs + immutable("preemptionPolicy", policy, old.get("preemptionPolicy"), go_scalar(policy))


def lease(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errs.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return errs

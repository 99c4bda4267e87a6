"""apps/v1: Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions.

Every controller must own its pods: the selector is required, may not be empty, and must match the
template's labels (`spec.template.metadata.labels: Invalid value: map[string]string{...}: `selector` does not
match template `labels``). Controllers restart pods forever, so the template's `restartPolicy` must be
`Always`. On update the selector is immutable, because changing it would orphan the running pods; a
StatefulSet's spec is immutable except for the fields its controller can roll out.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, forbidden, invalid, not_supported, required
from minikube_py.api.validation.messages import (
    GoValue,
    as_dict,
    as_int,
    go_int_or_string,
    go_label_selector,
    go_string_map,
    immutable,
    invalid_go,
    invalid_value,
    nonnegative,
    not_supported_go,
    semantic,
)
from minikube_py.api.validation.meta import (
    selector_is_empty,
    selector_is_valid,
    selector_matches,
    validate_label_selector,
)
from minikube_py.api.validation.pod import pod_template, pod_template_metadata

_STATEFUL_SET_MUTABLE = ("replicas", "template", "updateStrategy", "minReadySeconds", "ordinals",
                         "persistentVolumeClaimRetentionPolicy")


def _selector(spec: dict[str, Any], controller: str) -> list[FieldError]:
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return [required("spec.selector")]
    errs = validate_label_selector(selector, "spec.selector")
    if selector_is_empty(selector):
        errs.append(invalid_go("spec.selector", go_label_selector(selector), f"empty selector is invalid for "
                                                                             f"{controller}"))
    return errs


def _template_labels(spec: dict[str, Any]) -> list[FieldError]:
    """The template's labels must satisfy the selector, or the controller would not see its own pods."""
    selector = spec.get("selector")
    if isinstance(selector, dict) and not selector_is_valid(selector):
        return [invalid_go("spec.selector", go_label_selector(selector), "invalid label selector")]
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    # A missing selector matches nothing, an empty one everything: only the former is reported here.
    if (isinstance(selector, dict) and selector_is_empty(selector)) or selector_matches(selector, labels):
        return []
    return [invalid_go("spec.template.metadata.labels", go_string_map(labels),
                       "`selector` does not match template `labels`")]


def _template_body(spec: dict[str, Any], controller: str, forbid_deadline: bool = True,
                   pod_spec: bool = True) -> list[FieldError]:
    """A valid pod template whose pods restart `Always` and run without a deadline. Without `pod_spec` only
    the template's metadata is checked (a StatefulSet's: its volume mounts may name claim templates, which
    are no volumes of the template; its pods are validated when they are created)."""
    template = as_dict(spec.get("template"))
    errs = pod_template(template, "spec.template") if pod_spec else pod_template_metadata(template, "spec.template")
    template_spec = as_dict(template.get("spec"))
    if template_spec.get("restartPolicy") != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", template_spec.get("restartPolicy") or "",
                                  ["Always"]))
    deadline = template_spec.get("activeDeadlineSeconds")
    if deadline is not None:
        detail = f"activeDeadlineSeconds in {controller} is not Supported"
        path = "spec.template.spec.activeDeadlineSeconds"
        errs.append(forbidden(path, detail) if forbid_deadline else invalid(path, deadline, detail))
    return errs


def _template(spec: dict[str, Any], controller: str) -> list[FieldError]:
    return _template_labels(spec) + _template_body(spec, controller)


def percent_value(value: Any) -> tuple[int, bool]:
    """The number in an `IntOrString` ("25%" → 25, True); unparseable values count as 0, as in kube."""
    if isinstance(value, str):
        digits = value.removesuffix("%")
        return (int(digits) if digits.isdigit() else 0), True
    return as_int(value), False


def int_or_percent(value: Any, path: str) -> list[FieldError]:
    """`ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`."""
    if isinstance(value, str):
        errs = [invalid_go(path, go_int_or_string(value), m) for m in names.is_valid_percent(value)]
    else:
        errs = nonnegative(path, as_int(value))
    number, is_percent = percent_value(value)
    if is_percent and number > 100:
        errs.append(invalid_go(path, go_int_or_string(value), "must not be greater than 100%"))
    return errs


def deployment(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs = nonnegative("spec.replicas", spec.get("replicas"))
    errs += _selector(spec, "deployment")
    errs += _template(spec, "ReplicaSet")
    errs += _deployment_strategy(as_dict(spec.get("strategy")))
    errs += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        errs += nonnegative("spec.progressDeadlineSeconds", deadline)
        if deadline <= as_int(spec.get("minReadySeconds")):
            errs.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs


def _strategy_repr(type_name: str, strategy: dict[str, Any], rolling: str) -> str:
    pointer = f"(*apps.{rolling})(nil)" if strategy.get("rollingUpdate") is None else f"&apps.{rolling}{{...}}"
    return f"apps.{type_name}{{Type:\"{strategy.get('type', '')}\", RollingUpdate:{pointer}}}"


def _deployment_strategy(strategy: dict[str, Any]) -> list[FieldError]:
    kind = strategy.get("type")
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            return [forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is "
                                                             "'Recreate'")]
        return []
    if kind != "RollingUpdate":
        return [not_supported_go("spec.strategy", _strategy_repr("DeploymentStrategy", strategy,
                                                                 "RollingUpdateDeployment"),
                                 ["Recreate", "RollingUpdate"])]
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, dict):
        return [required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")]
    path = "spec.strategy.rollingUpdate"
    errs = int_or_percent(rolling.get("maxUnavailable"), f"{path}.maxUnavailable")
    errs += int_or_percent(rolling.get("maxSurge"), f"{path}.maxSurge")
    if percent_value(rolling.get("maxUnavailable"))[0] == 0 and percent_value(rolling.get("maxSurge"))[0] == 0:
        errs.append(invalid_go(f"{path}.maxUnavailable", go_int_or_string(rolling.get("maxUnavailable")),
                               "may not be 0 when `maxSurge` is 0"))
    return errs


def selector_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """apps/v1 forbids changing a controller's selector (the older beta APIs allowed it)."""
    selector, previous = as_dict(new.get("spec")).get("selector"), as_dict(old.get("spec")).get("selector")
    if semantic(selector) == semantic(previous):
        return []
    return immutable("spec.selector", selector, previous, go_label_selector(selector))


def deployment_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return deployment(new) + selector_update(new, old)


def replica_set(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs = nonnegative("spec.replicas", spec.get("replicas"))
    errs += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    # kube's ReplicaSet validation really does say "deployment" here.
    return errs + _selector(spec, "deployment") + _template(spec, "ReplicaSet")


def replica_set_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return replica_set(new) + selector_update(new, old)


def stateful_set(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(invalid_value("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    errs += _stateful_set_strategy(as_dict(spec.get("updateStrategy")))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):
        value = as_dict(retention).get(key)
        if isinstance(retention, dict) and value not in ("Retain", "Delete"):
            errs.append(not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{key}", value or "",
                                      ["Retain", "Delete"]))
    if isinstance(spec.get("ordinals"), dict):
        errs += nonnegative("spec.ordinals.start", spec["ordinals"].get("start"))
    errs += nonnegative("spec.replicas", spec.get("replicas"))
    errs += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    return errs + _selector(spec, "statefulset") + _template_labels(spec) + \
        _template_body(spec, "StatefulSet", pod_spec=False)


def _stateful_set_strategy(strategy: dict[str, Any]) -> list[FieldError]:
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if not kind:
        return [required("spec.updateStrategy")]
    if kind == "OnDelete":
        if rolling is not None:
            return [invalid_go("spec.updateStrategy.rollingUpdate", "&apps.RollingUpdateStatefulSetStrategy{...}",
                               "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if kind == "RollingUpdate":
        return nonnegative("spec.updateStrategy.rollingUpdate.partition", as_dict(rolling).get("partition"))
    return [invalid_go("spec.updateStrategy", _strategy_repr("StatefulSetUpdateStrategy", strategy,
                                                             "RollingUpdateStatefulSetStrategy"),
                       "must be 'RollingUpdate' or 'OnDelete'")]


def stateful_set_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = stateful_set(new)
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    frozen_new = {k: v for k, v in new_spec.items() if k not in _STATEFUL_SET_MUTABLE}
    frozen_old = {k: v for k, v in old_spec.items() if k not in _STATEFUL_SET_MUTABLE}
    if semantic(frozen_new) != semantic(frozen_old):
        errs.append(forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                                      "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                                      "'minReadySeconds' are forbidden"))
    return errs


def daemon_set(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs = validate_label_selector(spec.get("selector"), "spec.selector") + _template_labels(spec)
    if isinstance(spec.get("selector"), dict) and selector_is_empty(spec["selector"]):
        errs.append(invalid_go("spec.selector", go_label_selector(spec["selector"]),
                               "empty selector is invalid for daemonset"))
    errs += _template_body(spec, "DaemonSet", forbid_deadline=False)
    errs += nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    errs += nonnegative("spec.templateGeneration", spec.get("templateGeneration"))
    errs += _daemon_set_strategy(as_dict(spec.get("updateStrategy")))
    return errs + nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))


def _daemon_set_strategy(strategy: dict[str, Any]) -> list[FieldError]:
    kind = strategy.get("type")
    if kind == "OnDelete":
        return []
    if kind != "RollingUpdate":
        return [not_supported_go("spec.updateStrategy", _strategy_repr("DaemonSetUpdateStrategy", strategy,
                                                                       "RollingUpdateDaemonSet"),
                                 ["RollingUpdate", "OnDelete"])]
    rolling = strategy.get("rollingUpdate")
    path = "spec.updateStrategy.rollingUpdate"
    if not isinstance(rolling, dict):
        return [required(path)]
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = int_or_percent(unavailable, f"{path}.maxUnavailable") + int_or_percent(surge, f"{path}.maxSurge")
    has_unavailable, has_surge = percent_value(unavailable)[0] != 0, percent_value(surge)[0] != 0
    if has_unavailable and has_surge:
        errs.append(invalid_go(f"{path}.maxSurge", go_int_or_string(surge), "may not be set when maxUnavailable is "
                                                                             "non-zero"))
    elif not has_unavailable and not has_surge:
        errs.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return errs


def daemon_set_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    generation = as_dict(new.get("spec")).get("templateGeneration")
    errs: list[FieldError] = []
    if isinstance(generation, int) and generation < as_int(as_dict(old.get("spec")).get("templateGeneration")):
        errs.append(invalid("spec.templateGeneration", generation, "must not be decremented"))
    return errs + daemon_set(new) + selector_update(new, old)


def controller_revision(obj: dict[str, Any]) -> list[FieldError]:
    errs = [] if obj.get("data") is not None else [required("data", "data is mandatory")]
    return errs + nonnegative("revision", obj.get("revision"))


def controller_revision_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = controller_revision(new)
    return errs + immutable("data", semantic(new.get("data")), semantic(old.get("data")),
                            GoValue("runtime.RawExtension{...}"))

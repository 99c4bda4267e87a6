"""HorizontalPodAutoscalers, validated in their stored autoscaling/v2 shape.

kube validates the internal (v2-like) HPA, so an autoscaling/v1 request whose `targetCPUUtilizationPercentage`
is 0 is reported at `spec.metrics[0].resource.target.averageUtilization`; the package converts v1 objects
before calling in here. Each metric names one source matching its `type`, and each target one kind of
threshold; `behavior` rules need at least one policy.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, forbidden, invalid, not_supported, required
from minikube_py.api.validation.messages import GoValue, as_dict, as_int, dict_items, invalid_value
from minikube_py.api.validation.meta import validate_label_selector
from minikube_py.api.validation.quantity import QuantityError, canonical, parse_quantity

_SOURCE_TYPES = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                 "ContainerResource": "containerResource"}
_SOURCE_TYPE_LIST = sorted(_SOURCE_TYPES)
_MAX_STABILIZATION_SECONDS = 3600
_MAX_PERIOD_SECONDS = 1800


def horizontal_pod_autoscaler(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs: list[FieldError] = []
    min_replicas, max_replicas = spec.get("minReplicas"), as_int(spec.get("maxReplicas"))
    if isinstance(min_replicas, int) and min_replicas < 1:
        errs.append(invalid("spec.minReplicas", min_replicas, "must be greater than or equal to 1"))
    if max_replicas < 1:
        errs.append(invalid("spec.maxReplicas", max_replicas, "must be greater than 0"))
    if isinstance(min_replicas, int) and max_replicas < min_replicas:
        errs.append(invalid("spec.maxReplicas", max_replicas, "must be greater than or equal to `minReplicas`"))
    errs += _object_reference(as_dict(spec.get("scaleTargetRef")), "spec.scaleTargetRef")
    for i, metric in enumerate(dict_items(spec.get("metrics"))):
        errs += _metric(metric, f"spec.metrics[{i}]")
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for key in ("scaleUp", "scaleDown"):
            if isinstance(behavior.get(key), dict):
                errs += _scaling_rules(behavior[key], f"spec.behavior.{key}")
    return errs


def _object_reference(ref: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("kind", "name"):
        value = ref.get(key)
        if not value:
            errs.append(required(f"{path}.{key}"))
        else:
            errs += [invalid_value(f"{path}.{key}", value, m) for m in names.is_valid_path_segment_name(str(value))]
    return errs


def _metric(metric: dict[str, Any], path: str) -> list[FieldError]:
    kind = metric.get("type") or ""
    errs: list[FieldError] = []
    if not kind:
        errs.append(required(f"{path}.type", "must specify a metric source type"))
    if kind not in _SOURCE_TYPES:
        errs.append(not_supported(f"{path}.type", kind, _SOURCE_TYPE_LIST))
    present = [key for key in ("object", "external", "pods", "resource", "containerResource")
               if isinstance(metric.get(key), dict)]
    if present:
        errs += _SOURCE_CHECKS[present[0]](metric[present[0]], f"{path}.{present[0]}")
    expected = _SOURCE_TYPES.get(kind)
    if expected is None:
        # kube reports an unknown type a second time from its switch over the types.
        errs.append(not_supported(f"{path}.type", kind, _SOURCE_TYPE_LIST))
    elif expected not in present:
        errs.append(required(f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        errs += [forbidden(f"{path}.{key}", "must populate the given metric source only")
                 for key in present if key != expected]
    return errs


def _target(target: dict[str, Any], path: str) -> list[FieldError]:
    kind = target.get("type") or ""
    errs: list[FieldError] = []
    if not kind:
        errs.append(required(f"{path}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(invalid_value(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None and not _positive(target[key]):
            errs.append(invalid_value(f"{path}.{key}", GoValue(_shown(target[key])), "must be positive"))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        errs.append(invalid(f"{path}.averageUtilization", utilization, "must be greater than 0"))
    return errs


def _positive(value: Any) -> bool:
    try:
        return parse_quantity(value) > 0
    except QuantityError:
        return False


def _shown(value: Any) -> str:
    try:
        return canonical(value)
    except QuantityError:
        return str(value)


def _resource(source: dict[str, Any], path: str, container: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    name = source.get("name")
    if not name:
        errs.append(required(f"{path}.name", "must specify a resource name"))
    if container:
        if not source.get("container"):
            errs.append(required(f"{path}.container", "must specify a container"))
        else:
            errs += [invalid_value(f"{path}.container", source["container"], m)
                     for m in names.is_dns1123_label(str(source["container"]))]
    target = as_dict(source.get("target"))
    errs += _target(target, f"{path}.target")
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(required(f"{path}.target.averageUtilization", "must set either a target raw value or a target "
                                                                  "utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(forbidden(f"{path}.target.averageValue", "may not set both a target raw value and a target "
                                                             "utilization"))
    return errs


def _container_resource(source: dict[str, Any], path: str) -> list[FieldError]:
    return _resource(source, path, container=True)


def _identifier(metric: dict[str, Any], path: str) -> list[FieldError]:
    name = metric.get("name")
    if not name:
        return [required(f"{path}.name", "must specify a metric name")]
    errs = [invalid_value(f"{path}.name", name, m) for m in names.is_valid_path_segment_name(str(name))]
    return errs + validate_label_selector(metric.get("selector"), f"{path}.selector")


def _pods(source: dict[str, Any], path: str) -> list[FieldError]:
    target = as_dict(source.get("target"))
    errs = _identifier(as_dict(source.get("metric")), f"{path}.metric") + _target(target, f"{path}.target")
    if target.get("averageValue") is None:
        errs.append(required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    return errs


def _object(source: dict[str, Any], path: str) -> list[FieldError]:
    target = as_dict(source.get("target"))
    errs = _object_reference(as_dict(source.get("describedObject")), f"{path}.describedObject")
    errs += _identifier(as_dict(source.get("metric")), f"{path}.metric") + _target(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    return errs


def _external(source: dict[str, Any], path: str) -> list[FieldError]:
    target = as_dict(source.get("target"))
    errs = _identifier(as_dict(source.get("metric")), f"{path}.metric") + _target(target, f"{path}.target")
    value, average = target.get("value"), target.get("averageValue")
    if value is None and average is None:
        errs.append(required(f"{path}.target.averageValue", "must set either a target value for metric or a per-pod "
                                                            "target"))
    if value is not None and average is not None:
        errs.append(forbidden(f"{path}.target.value", "may not set both a target value for metric and a per-pod "
                                                      "target"))
    return errs


_SOURCE_CHECKS = {"object": _object, "external": _external, "pods": _pods, "resource": _resource,
                  "containerResource": _container_resource}


def _scaling_rules(rules: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if isinstance(window, int) and window > _MAX_STABILIZATION_SECONDS:
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window, "must be less than or equal to "
                                                                          f"{_MAX_STABILIZATION_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in ("Disabled", "Max", "Min"):
        errs.append(not_supported(f"{path}.selectPolicy", select, ["Disabled", "Max", "Min"]))
    policies = dict_items(rules.get("policies"))
    if not policies:
        errs.append(required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        at = f"{path}.policies[{i}]"
        if policy.get("type") not in ("Pods", "Percent"):
            errs.append(not_supported(f"{at}.type", policy.get("type") or "", ["Percent", "Pods"]))
        for key in ("value", "periodSeconds"):
            if as_int(policy.get(key)) <= 0:
                errs.append(invalid(f"{at}.{key}", as_int(policy.get(key)), "must be greater than zero"))
        if as_int(policy.get("periodSeconds")) > _MAX_PERIOD_SECONDS:
            errs.append(invalid(f"{at}.periodSeconds", policy["periodSeconds"], "must be less than or equal to "
                                                                                f"{_MAX_PERIOD_SECONDS}"))
    return errs

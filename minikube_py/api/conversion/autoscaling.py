"""autoscaling/v1 HorizontalPodAutoscalers ↔ the autoscaling/v2 ones they are stored as.

v1 carries a single CPU utilization target. Everything else a v2 object holds travels through v1 in four
annotations, written and read exactly as kube does: other metrics and current metrics in v1's older metric
shape (`targetAverageValue`, `metricName`, ...), conditions, and `behavior` encoded with Go field names
(`{"ScaleUp":{"StabilizationWindowSeconds":0,...}}`), because kube marshals its internal type there. Reading
v1 back drops those annotations. A v1 HPA without any target gets v2's explicit 80% CPU target.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from minikube_py.api.conversion.shape import Object, as_dict, head, put
from minikube_py.api.gofmt import go_json

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP_ANNOTATIONS = (METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION, BEHAVIOR_ANNOTATION)
DEFAULT_CPU_UTILIZATION = 80


def _ref(value: Any) -> Object:
    ref = as_dict(value)
    return {"kind": ref.get("kind", ""), "name": ref.get("name", ""), **(
        {"apiVersion": ref["apiVersion"]} if ref.get("apiVersion") else {})}


def _identifier(metric: Any) -> Object:
    out: Object = {"name": as_dict(metric).get("name", "")}
    put(out, "selector", as_dict(metric).get("selector"))
    return out


def _v2_target(kind: str, value: Any = None, average: Any = None, utilization: Any = None) -> Object:
    out: Object = {"type": kind}
    for key, field in (("value", value), ("averageValue", average), ("averageUtilization", utilization)):
        if field is not None:
            out[key] = field
    return out


def _v1_resource(source: Object, prefix: str, holder: str) -> Object:
    """A v2 resource source or status as v1's `targetAverage*`/`currentAverage*` fields."""
    values = as_dict(source.get(holder))
    out: Object = {"name": source.get("name", "")}
    put(out, f"{prefix}AverageUtilization", values.get("averageUtilization"))
    if prefix == "current":
        out["currentAverageValue"] = values.get("averageValue") or "0"
    else:
        put(out, "targetAverageValue", values.get("averageValue"))
    if "container" in source:
        out["container"] = source.get("container", "")
    return out


def _v2_resource(source: Object, prefix: str) -> Object:
    """v1's `targetAverage*`/`currentAverage*` fields as a v2 `target` or `current`."""
    utilization, average = source.get(f"{prefix}AverageUtilization"), source.get(f"{prefix}AverageValue")
    if prefix == "target":
        holder = _v2_target("AverageValue" if utilization is None else "Utilization", None, average, utilization)
    else:
        # v1's current average value is not a pointer: it always comes back, "0" when it was unknown.
        holder = {"averageValue": average or "0", **({} if utilization is None else
                                                       {"averageUtilization": utilization})}
    out: Object = {"name": source.get("name", ""), prefix: holder}
    if "container" in source:
        out["container"] = source.get("container", "")
    return out


def _spec_to_v1(kind: str, source: Object) -> Object:
    target, metric = as_dict(source.get("target")), as_dict(source.get("metric"))
    if kind in ("resource", "containerResource"):
        return _v1_resource(source, "target", "target")
    out: Object = {"target": _ref(source.get("describedObject"))} if kind == "object" else {}
    out["metricName"] = metric.get("name", "")
    if kind == "pods":
        out["targetAverageValue"] = target.get("averageValue") or "0"
        put(out, "selector", metric.get("selector"))
    elif kind == "object":
        out["targetValue"] = target.get("value") or "0"
        put(out, "selector", metric.get("selector"))
        put(out, "averageValue", target.get("averageValue"))
    else:
        put(out, "metricSelector", metric.get("selector"))
        put(out, "targetValue", target.get("value"))
        put(out, "targetAverageValue", target.get("averageValue"))
    return out


def _spec_to_v2(kind: str, source: Object) -> Object:
    if kind in ("resource", "containerResource"):
        return _v2_resource(source, "target")
    selector = source.get("metricSelector") if kind == "external" else source.get("selector")
    metric = _identifier({"name": source.get("metricName", ""), "selector": selector})
    if kind == "pods":
        return {"metric": metric, "target": _v2_target("AverageValue", None, source.get("targetAverageValue", "0"))}
    if kind == "object":
        average = source.get("averageValue")
        target = _v2_target("Value" if average is None else "AverageValue", source.get("targetValue", "0"), average)
        return {"describedObject": _ref(source.get("target")), "target": target, "metric": metric}
    value = source.get("targetValue")
    return {"metric": metric, "target": _v2_target("Value" if value is not None else "AverageValue", value,
                                                   source.get("targetAverageValue"))}


def _status_to_v1(kind: str, source: Object) -> Object:
    current, metric = as_dict(source.get("current")), as_dict(source.get("metric"))
    if kind in ("resource", "containerResource"):
        return _v1_resource(source, "current", "current")
    out: Object = {"target": _ref(source.get("describedObject"))} if kind == "object" else {}
    out["metricName"] = metric.get("name", "")
    if kind == "pods":
        out["currentAverageValue"] = current.get("averageValue") or "0"
        put(out, "selector", metric.get("selector"))
    elif kind == "object":
        out["currentValue"] = current.get("value") or "0"
        put(out, "selector", metric.get("selector"))
        put(out, "averageValue", current.get("averageValue"))
    else:
        put(out, "metricSelector", metric.get("selector"))
        out["currentValue"] = current.get("value") or "0"
        put(out, "currentAverageValue", current.get("averageValue"))
    return out


def _status_to_v2(kind: str, source: Object) -> Object:
    if kind in ("resource", "containerResource"):
        return _v2_resource(source, "current")
    selector = source.get("metricSelector") if kind == "external" else source.get("selector")
    metric = _identifier({"name": source.get("metricName", ""), "selector": selector})
    if kind == "pods":
        return {"metric": metric, "current": {"averageValue": source.get("currentAverageValue", "0")}}
    current = {"value": source.get("currentValue", "0")}
    average_key = "averageValue" if kind == "object" else "currentAverageValue"
    if source.get(average_key) is not None:
        current["averageValue"] = source[average_key]
    if kind == "object":
        return {"metric": metric, "current": current, "describedObject": _ref(source.get("target"))}
    return {"metric": metric, "current": current}


_SOURCES = ("object", "pods", "resource", "containerResource", "external")


def _convert_metric(metric: Any, convert: Callable[[str, Object], Object]) -> Object:
    metric = as_dict(metric)
    out: Object = {"type": metric.get("type", "")}
    for kind in _SOURCES:
        if isinstance(metric.get(kind), dict):
            out[kind] = convert(kind, metric[kind])
    return out


def _is_cpu_utilization(metric: Object) -> bool:
    resource = as_dict(metric.get("resource"))
    return (metric.get("type") == "Resource" and resource.get("name") == "cpu"
            and as_dict(resource.get("target")).get("averageUtilization") is not None)


def _condition(condition: Any) -> Object:
    condition = as_dict(condition)
    out: Object = {"type": condition.get("type", ""), "status": condition.get("status", ""),
                   "lastTransitionTime": condition.get("lastTransitionTime")}
    put(out, "reason", condition.get("reason"))
    put(out, "message", condition.get("message"))
    return out


def _behavior_to_annotation(behavior: Object) -> str:
    def rules(value: Any) -> Object | None:
        if not isinstance(value, dict):
            return None
        policies = value.get("policies")
        return {"StabilizationWindowSeconds": value.get("stabilizationWindowSeconds"),
                "SelectPolicy": value.get("selectPolicy"),
                "Policies": None if not isinstance(policies, list) else [
                    {"Type": as_dict(p).get("type", ""), "Value": as_dict(p).get("value", 0),
                     "PeriodSeconds": as_dict(p).get("periodSeconds", 0)} for p in policies]}

    return go_json({"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))},
                   sort_keys=False)


def _lower_keys(value: Any) -> Object:
    # Go's json.Unmarshal matches field names case-insensitively.
    return {str(k).lower(): v for k, v in as_dict(value).items()}


def _behavior_from_annotation(text: str) -> Object | None:
    try:
        behavior = _lower_keys(json.loads(text))
    except ValueError:
        return None
    out: Object = {}
    for key in ("scaleUp", "scaleDown"):
        rules = behavior.get(key.lower())
        if not isinstance(rules, dict):
            continue
        rules = _lower_keys(rules)
        converted: Object = {}
        for name in ("stabilizationWindowSeconds", "selectPolicy"):
            if rules.get(name.lower()) is not None:
                converted[name] = rules[name.lower()]
        if isinstance(rules.get("policies"), list):
            converted["policies"] = [{"type": p.get("type", ""), "value": p.get("value", 0),
                                      "periodSeconds": p.get("periodseconds", 0)}
                                     for p in map(_lower_keys, rules["policies"])]
        out[key] = converted
    return out or None


def _json_list(annotations: Object, key: str) -> list[Any] | None:
    try:
        value = json.loads(annotations[key]) if key in annotations else None
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _without_round_trip(metadata: Object) -> Object:
    annotations = {k: v for k, v in as_dict(metadata.get("annotations")).items() if k not in _ROUND_TRIP_ANNOTATIONS}
    out = dict(metadata)
    out.pop("annotations", None)
    if annotations:
        out["annotations"] = annotations
    return out


def hpa_to_v1(hpa: Object) -> Object:
    out = head("autoscaling/v1", "HorizontalPodAutoscaler", hpa)
    spec, status = as_dict(hpa.get("spec")), as_dict(hpa.get("status"))
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    annotations: Object = {}
    others = [_convert_metric(m, _spec_to_v1) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS_ANNOTATION] = go_json(others, sort_keys=False)
    if status.get("currentMetrics"):
        annotations[CURRENT_METRICS_ANNOTATION] = go_json(
            [_convert_metric(m, _status_to_v1) for m in status["currentMetrics"]], sort_keys=False)
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR_ANNOTATION] = _behavior_to_annotation(spec["behavior"])
    if status.get("conditions"):
        annotations[CONDITIONS_ANNOTATION] = go_json([_condition(c) for c in status["conditions"]],
                                                     sort_keys=False)
    metadata = _without_round_trip(as_dict(hpa.get("metadata")))
    if annotations:
        metadata["annotations"] = {**as_dict(metadata.get("annotations")), **annotations}
    out["metadata"] = metadata
    out["spec"] = _spec_v1(spec, metrics)
    out["status"] = _status_v1(status)
    return out


def _spec_v1(spec: Object, metrics: list[Object]) -> Object:
    out: Object = {"scaleTargetRef": _ref(spec.get("scaleTargetRef"))}
    put(out, "minReplicas", spec.get("minReplicas"))
    out["maxReplicas"] = spec.get("maxReplicas", 0)
    # The first CPU resource metric decides, even when it targets a raw value rather than a utilization.
    cpu = next((m for m in metrics if m.get("type") == "Resource" and as_dict(m.get("resource")).get("name") == "cpu"),
               None)
    if cpu is not None:
        put(out, "targetCPUUtilizationPercentage",
             as_dict(as_dict(cpu.get("resource")).get("target")).get("averageUtilization"))
    return out


def _status_v1(status: Object) -> Object:
    out: Object = {}
    put(out, "observedGeneration", status.get("observedGeneration"))
    put(out, "lastScaleTime", status.get("lastScaleTime"))
    out["currentReplicas"] = status.get("currentReplicas", 0)
    out["desiredReplicas"] = status.get("desiredReplicas", 0)
    for metric in status.get("currentMetrics") or []:
        resource = as_dict(as_dict(metric).get("resource"))
        if as_dict(metric).get("type") == "Resource" and resource.get("name") == "cpu":
            put(out, "currentCPUUtilizationPercentage", as_dict(resource.get("current")).get("averageUtilization"))
    return out


def hpa_to_v2(hpa: Object) -> Object:
    out = head("autoscaling/v2", "HorizontalPodAutoscaler", hpa)
    spec, status = as_dict(hpa.get("spec")), as_dict(hpa.get("status"))
    annotations = as_dict(as_dict(hpa.get("metadata")).get("annotations"))
    metrics: list[Object] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics = [_cpu_metric(spec["targetCPUUtilizationPercentage"])]
    others = _json_list(annotations, METRICS_ANNOTATION)
    if others is not None:
        # kube puts the annotation's metrics first and the CPU target last.
        metrics = [_convert_metric(m, _spec_to_v2) for m in others] + metrics
    if not metrics:
        metrics = [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
    new_spec: Object = {"scaleTargetRef": _ref(spec.get("scaleTargetRef"))}
    put(new_spec, "minReplicas", spec.get("minReplicas"))
    new_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    new_spec["metrics"] = metrics
    behavior = _behavior_from_annotation(annotations[BEHAVIOR_ANNOTATION]) if BEHAVIOR_ANNOTATION in annotations \
        else None
    if behavior is not None:
        new_spec["behavior"] = behavior
    out["metadata"] = _without_round_trip(as_dict(hpa.get("metadata")))
    out["spec"] = new_spec
    out["status"] = _status_v2(status, annotations)
    return out


def _cpu_metric(utilization: Any) -> Object:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _status_v2(status: Object, annotations: Object) -> Object:
    out: Object = {}
    for key in ("observedGeneration", "lastScaleTime", "currentReplicas"):
        put(out, key, status.get(key))
    out["desiredReplicas"] = status.get("desiredReplicas", 0)
    current: list[Object] = []
    if status.get("currentCPUUtilizationPercentage") is not None:
        utilization = status["currentCPUUtilizationPercentage"]
        current = [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": utilization}}}]
    from_annotation = _json_list(annotations, CURRENT_METRICS_ANNOTATION)
    if from_annotation is not None:
        current = [_convert_metric(m, _status_to_v2) for m in from_annotation]
    put(out, "currentMetrics", current)
    conditions = _json_list(annotations, CONDITIONS_ANNOTATION)
    if conditions is not None:
        put(out, "conditions", [_condition(c) for c in conditions])
    return out

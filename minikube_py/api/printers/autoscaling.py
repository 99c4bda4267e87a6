"""The HorizontalPodAutoscaler printer, for autoscaling/v2 and its autoscaling/v1 view.

TARGETS pairs each metric's current value with its target, `<unknown>` until the autoscaler has measured
it: `cpu: 42%/80%` for utilization, `memory: 100Mi/200Mi` for an average value, `5/10` or `5/10 (avg)` for
object and external metrics; the first two metrics are shown and `+ N more...` counts the rest.
Quantities print as stored.

Kube prints both versions from one internal object. An autoscaling/v1 object carries only the CPU
target (`targetCPUUtilizationPercentage`) and measurement; `_as_v2` turns them into the one v2 Resource
metric they mean before printing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, first_with_more, object_name

_SHOWN_METRICS = 2
_UNKNOWN = "<unknown>"


def _quantity(value: str | None) -> str:
    """A quantity as Go prints a possibly-nil `*resource.Quantity`."""
    return "<nil>" if value is None else str(value)


def _percent(value: int | None, missing: str) -> str:
    return missing if value is None else f"{value}%"


def _resource_target(source: dict[str, Any], current: dict[str, Any] | None) -> str:
    """`<name>: <current>/<target>` for Resource and ContainerResource metrics."""
    target, name = source.get("target") or {}, source.get("name", "")
    if target.get("averageValue") is not None:
        now_value = _quantity((current or {}).get("averageValue")) if current is not None else _UNKNOWN
        return f"{name}: {now_value}/{target['averageValue']}"
    measured = _percent((current or {}).get("averageUtilization"), _UNKNOWN)
    return f"{name}: {measured}/{_percent(target.get('averageUtilization'), '<auto>')}"


def _value_target(source: dict[str, Any], current: dict[str, Any] | None) -> str:
    """`<current>/<target>` for Object and External metrics, `(avg)` for a per-pod average target."""
    target = source.get("target") or {}
    if target.get("averageValue") is not None:
        now_value = (current or {}).get("averageValue") or _UNKNOWN
        return f"{now_value}/{target['averageValue']} (avg)"
    now_value = _quantity((current or {}).get("value")) if current is not None else _UNKNOWN
    return f"{now_value}/{_quantity(target.get('value'))}"


def _metric(spec: dict[str, Any], status: dict[str, Any] | None) -> str:
    metric_type = spec.get("type", "")
    field = metric_type[0].lower() + metric_type[1:] if metric_type else ""
    source = spec.get(field) or {}
    # kube reads the status at the same position only when it is of the same type; `current` is None
    # when it is not, `{}` when the autoscaler reported the type without values.
    reported = (status or {}).get(field)
    current = None if reported is None else reported.get("current") or {}
    if metric_type in ("Resource", "ContainerResource"):
        return _resource_target(source, current)
    if metric_type in ("Object", "External"):
        return _value_target(source, current)
    if metric_type == "Pods":
        now_value = _quantity(current.get("averageValue")) if current is not None else _UNKNOWN
        return f"{now_value}/{_quantity((source.get('target') or {}).get('averageValue'))}"
    return "<unknown type>"


def format_metrics(metrics: list[dict[str, Any]], current_metrics: list[dict[str, Any]]) -> str:
    """TARGETS: each metric with the status at the same position, as kube pairs them."""
    if not metrics:
        return "<none>"
    shown = [_metric(spec, current_metrics[index] if index < len(current_metrics) else None)
             for index, spec in enumerate(metrics)]
    return first_with_more(shown, _SHOWN_METRICS, ", ")


def _hpa_cells(hpa: dict[str, Any], now: datetime) -> list[Cell]:
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    target = spec.get("scaleTargetRef") or {}
    min_replicas = spec.get("minReplicas")
    return [
        object_name(hpa), f"{target.get('kind', '')}/{target.get('name', '')}",
        format_metrics(spec.get("metrics") or [], status.get("currentMetrics") or []),
        "<unset>" if min_replicas is None else str(min_replicas), spec.get("maxReplicas", 0),
        status.get("currentReplicas", 0), age(hpa, now),
    ]


def _cpu_metric(key: str, value: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "Resource", "resource": {"name": "cpu", key: value}}]


def _as_v2(hpa: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HPA with its CPU target and measurement as v2 metrics."""
    spec, status = dict(hpa.get("spec") or {}), dict(hpa.get("status") or {})
    target = spec.pop("targetCPUUtilizationPercentage", None)
    measured = status.pop("currentCPUUtilizationPercentage", None)
    if target is not None:
        spec["metrics"] = _cpu_metric("target", {"type": "Utilization", "averageUtilization": target})
    if measured is not None:
        status["currentMetrics"] = _cpu_metric("current", {"averageUtilization": measured})
    return {**hpa, "spec": spec, "status": status}


def _hpa_v1_cells(hpa: dict[str, Any], now: datetime) -> list[Cell]:
    return _hpa_cells(_as_v2(hpa), now)


_COLUMNS = (
    NAME,
    Column("Reference", "scaleTargetRef points to the target resource to scale, and is used to the pods for "
                        "which metrics should be collected, as well as to actually change the replica "
                        "count."),
    Column("Targets", "metrics contains the specifications for which to use to calculate the desired replica "
                      "count (the maximum replica count across all metrics will be used).  The desired "
                      "replica count is calculated multiplying the ratio between the target value and the "
                      "current value by the current number of pods.  Ergo, metrics used must decrease as the "
                      "pod count is increased, and vice-versa.  See the individual metric source types for "
                      "more information about how each type of metric must respond."),
    Column("MinPods", "minReplicas is the lower limit for the number of replicas to which the autoscaler can "
                      "scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha "
                      "feature gate HPAScaleToZero is enabled and at least one Object or External metric is "
                      "configured.  Scaling is active as long as at least one metric value is available."),
    Column("MaxPods", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can "
                      "scale up. It cannot be less that minReplicas."),
    Column("Replicas", "currentReplicas is current number of replicas of pods managed by this autoscaler, as "
                       "last seen by the autoscaler."),
    AGE,
)

PRINTERS = {
    ("autoscaling", "v2", "HorizontalPodAutoscaler"): Printer(_COLUMNS, _hpa_cells),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"): Printer(_COLUMNS, _hpa_v1_cells),
}

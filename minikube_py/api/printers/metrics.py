"""The NodeMetrics and PodMetrics printers (metrics.k8s.io/v1beta1), for `kubectl get nodemetrics|podmetrics`.

metrics-server prints NAME, one column per resource (`cpu`, `memory`) and WINDOW; a pod's row adds up its
containers' usage. (`kubectl top` prints its own table from the objects instead.)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.metrics import usage, usage_amounts
from minikube_py.api.printers.base import NAME, Cell, Column, Printer
from minikube_py.api.printers.format import object_name

_COLUMNS = (
    NAME,
    Column("cpu", "CPU used over the window, in cores.", format="quantity"),
    Column("memory", "The memory working set at the end of the window.", format="quantity"),
    Column("Window", "How long the usage was measured over.", format="duration"),
)


def _cells(name: str, used: dict[str, Any], window: str) -> list[Cell]:
    return [name, str(used.get("cpu", "")), str(used.get("memory", "")), window]


def _node_cells(metrics: dict[str, Any], now: datetime) -> list[Cell]:
    return _cells(object_name(metrics), metrics.get("usage") or {}, str(metrics.get("window", "")))


def _pod_cells(metrics: dict[str, Any], now: datetime) -> list[Cell]:
    containers = [usage_amounts(c.get("usage") or {}) for c in metrics.get("containers") or []]
    total = usage(sum(cpu for cpu, _ in containers), sum(memory for _, memory in containers))
    return _cells(object_name(metrics), total, str(metrics.get("window", "")))


PRINTERS = {
    ("metrics.k8s.io", "v1beta1", "NodeMetrics"): Printer(_COLUMNS, _node_cells),
    ("metrics.k8s.io", "v1beta1", "PodMetrics"): Printer(_COLUMNS, _pod_cells),
}

"""Resource metrics for the autoscaler: what each pod uses now, read from `metrics.k8s.io/v1beta1` PodMetrics.

The apiserver serves the metrics-server API (apiserver/metrics.py): a `PodMetricsList` per namespace and
label selector, each pod with its containers' `usage` (`cpu`, `memory`), the `timestamp` of the sample and
the `window` it was averaged over. The autoscaler needs, per pod, one number in milli-units (kube's
`MilliValue`: 250m CPU is 250, 64Mi of memory is 67108864000), the sum over the pod's containers.

As kube's metrics client: a pod with no containers, or with a container that reports no value for the
resource, has no metric (it is "missing" to the replica calculator), and an empty list is an error. A
`ContainerResource` metric counts one named container of each pod; a pod without it has no metric.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minikube_py.api.selectors import LabelSelector
from minikube_py.api.timestamps import parse_time
from minikube_py.api.validation.quantity import QuantityError, parse_quantity
from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient

POD_METRICS = resources.builtin("metrics.k8s.io", "v1beta1", "pods")
_DURATION_PART = re.compile(r"([0-9.]+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class MetricsError(Exception):
    """The metrics could not be read; the message is the one kube's metrics client gives."""


@dataclass(frozen=True)
class PodMetric:
    value: int  # milli-units, summed over the pod's containers
    timestamp: datetime
    window: float  # seconds


async def resource_metrics(client: RESTClient, resource: str, namespace: str, selector: LabelSelector,
                           container: str = "") -> dict[str, PodMetric]:
    """Pod name -> its use of `resource` (`cpu`, `memory`), of one `container` of it when named."""
    try:
        listed = await client.list(POD_METRICS, namespace, label_selector=selector.to_string())
    except errors.APIStatusError as err:
        raise MetricsError(f"unable to fetch metrics from resource metrics API: {err}") from None
    items = listed.get("items") or []
    if not items:
        raise MetricsError("no metrics returned from resource metrics API")
    found = {}
    for item in items:
        metric = _pod_metric(item, resource, container)
        if metric is not None:
            found[item["metadata"]["name"]] = metric
    return found


def _pod_metric(item: dict[str, Any], resource: str, container: str) -> PodMetric | None:
    containers = [c for c in item.get("containers") or [] if not container or c.get("name") == container]
    if not containers:
        return None
    total = 0
    for entry in containers:
        usage = entry.get("usage") or {}
        if resource not in usage:
            return None
        try:
            total += milli_value(usage[resource])
        except QuantityError:
            return None
    return PodMetric(total, parse_time(str(item.get("timestamp"))), go_duration_seconds(str(item.get("window") or "0s")))


def milli_value(quantity: object) -> int:
    """A quantity in thousandths, rounded up (kube's `Quantity.MilliValue`)."""
    return math.ceil(parse_quantity(quantity) * 1000)


def go_duration_seconds(text: str) -> float:
    """Seconds in a Go duration string (`30s`, `1m0.5s`, `250ms`)."""
    return sum(float(number) * _UNITS[unit] for number, unit in _DURATION_PART.findall(text))

"""Conversion between API versions that share one stored object.

Where it sits: decode → defaults → validation → **to_storage** → etcd → **from_storage** → encode. Two kinds
are served at a version other than the one kept in etcd:

* events.k8s.io/v1 Events are stored as core/v1 Events (`regarding` ↔ `involvedObject`, `note` ↔ `message`,
  `reportingController` ↔ `reportingComponent`, `deprecatedX` ↔ `x`).
* autoscaling/v1 HorizontalPodAutoscalers are stored as autoscaling/v2. v1 only knows a CPU utilization target,
  so everything else survives a v1 round trip in annotations, exactly as kube does it:
  `autoscaling.alpha.kubernetes.io/metrics` (other metrics, in v1's older metric shape), `.../current-metrics`,
  `.../conditions` and `.../behavior` (which kube writes with Go field names, `{"ScaleUp":...}`). An HPA
  created through v1 without a target gets v2's explicit 80% CPU target.

Usage rules: both functions take and return whole objects as JSON-like dicts, never modify their argument,
and return it unchanged (the same dict) when `resource.storage_version` is empty. Fields come out in the
order and with the always-present zero values Go would serialize.
"""

from __future__ import annotations

from collections.abc import Callable

from minikube_py.api.conversion.autoscaling import hpa_to_v1, hpa_to_v2
from minikube_py.api.conversion.events import event_from_core, event_to_core
from minikube_py.api.conversion.shape import Object
from minikube_py.api.kinds import Resource

_CONVERTERS: dict[str, tuple[Callable[[Object], Object], Callable[[Object], Object]]] = {
    "events.events.k8s.io": (event_to_core, event_from_core),
    "horizontalpodautoscalers.autoscaling": (hpa_to_v2, hpa_to_v1),
}


def to_storage(resource: Resource, obj: Object) -> Object:
    """`obj` (at `resource.api_version`) as it is kept in etcd."""
    if not resource.storage_version:
        return obj
    if resource.custom:  # a CRD's conversion strategy None: only apiVersion changes
        return {**obj, "apiVersion": resource.storage_version}
    return _CONVERTERS[resource.group_resource][0](obj)


def from_storage(resource: Resource, obj: Object) -> Object:
    """A stored object as `resource.api_version` presents it."""
    if not resource.storage_version:
        return obj
    if resource.custom:
        return {**obj, "apiVersion": resource.api_version}
    return _CONVERTERS[resource.group_resource][1](obj)

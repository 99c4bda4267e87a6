"""The resource metrics API, metrics.k8s.io/v1beta1: NodeMetrics and PodMetrics (metrics-server's API).

`kubectl top` and the HorizontalPodAutoscaler read how much CPU and memory nodes and pods use from here;
the apiserver computes the figures from the kubelets' stats (`apiserver/metrics.py`). This module is the
object model only, no I/O:

* `node_metrics` and `pod_metrics` build the objects. They carry the node's or pod's name, namespace and
  labels, so label and field selectors apply to them as to the node or pod; `timestamp` and `window` say
  over which interval `[timestamp - window, timestamp]` the usage was measured;
* `usage` writes a usage map as metrics-server does: CPU in nanocores (`1234567n`), memory (the working
  set) in KiB (`10240Ki`); `usage_amounts` reads one back as numbers;
* `DEFINITIONS` are the kinds' OpenAPI definitions, in the JSON Schema form `api/schemas.py` loads the
  upstream ones in: kubernetes-validate ships only kube-apiserver's own types, and a real cluster gets
  these from metrics-server's OpenAPI. They make `/openapi/v3/apis/metrics.k8s.io/v1beta1` and
  `kubectl explain nodemetrics` work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .validation.quantity import QuantityError, parse_quantity

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"


def usage(nanocores: int, memory_bytes: int) -> dict[str, str]:
    return {"cpu": f"{nanocores}n", "memory": f"{memory_bytes // 1024}Ki"}


def usage_amounts(quantities: Mapping[str, Any]) -> tuple[int, int]:
    """(nanocores, memory bytes) of a usage map; a missing or malformed quantity counts as 0."""
    def amount(name: str, scale: int) -> int:
        try:
            return int(parse_quantity(quantities.get(name, "0")) * scale)
        except QuantityError:
            return 0
    return amount("cpu", 10**9), amount("memory", 1)


def _metadata(obj: dict[str, Any], created: str) -> dict[str, Any]:
    """The node's or pod's identity; like metrics-server, creationTimestamp is when the answer was made."""
    meta = obj["metadata"]
    found: dict[str, Any] = {"name": meta["name"]}
    if meta.get("namespace"):
        found["namespace"] = meta["namespace"]
    found["creationTimestamp"] = created
    if meta.get("labels"):
        found["labels"] = meta["labels"]
    return found


def node_metrics(node: dict[str, Any], nanocores: int, memory_bytes: int, *, timestamp: str, window: str,
                 created: str) -> dict[str, Any]:
    return {"kind": "NodeMetrics", "apiVersion": API_VERSION, "metadata": _metadata(node, created),
            "timestamp": timestamp, "window": window, "usage": usage(nanocores, memory_bytes)}


def pod_metrics(pod: dict[str, Any], containers: list[tuple[str, int, int]], *, timestamp: str, window: str,
                created: str) -> dict[str, Any]:
    """`containers`: (name, nanocores, memory bytes) of each container."""
    return {"kind": "PodMetrics", "apiVersion": API_VERSION, "metadata": _metadata(pod, created),
            "timestamp": timestamp, "window": window,
            "containers": [{"name": name, "usage": usage(cpu, memory)} for name, cpu, memory in containers]}


def metrics_list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """`NodeMetricsList` or `PodMetricsList`; like metrics-server's, without a resourceVersion."""
    return {"kind": f"{kind}List", "apiVersion": API_VERSION, "metadata": {}, "items": items}


# OpenAPI definitions ------------------------------------------------------------------------------------

_PREFIX = "io.k8s.metrics.pkg.apis.metrics.v1beta1."
_OWN = "#/$defs/" + _PREFIX
_META = "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1."
_QUANTITY = "#/$defs/io.k8s.apimachinery.pkg.api.resource.Quantity"


def _string(description: str) -> dict[str, Any]:
    return {"description": description, "type": ["string", "null"]}


def _kind(kind: str, properties: dict[str, Any], required: list[str], description: str) -> dict[str, Any]:
    return {"description": description, "type": ["object", "null"], "required": required,
            "properties": {
                "apiVersion": _string("The versioned schema of this object: metrics.k8s.io/v1beta1."),
                "kind": _string(f"The type of this object: {kind}."),
                **properties},
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": kind, "version": VERSION}]}


def _list(kind: str) -> dict[str, Any]:
    items = {"description": f"The {kind} objects.", "type": "array", "items": {"$ref": _OWN + kind}}
    metadata = {"$ref": _META + "ListMeta", "description": "Standard list metadata."}
    return _kind(f"{kind}List", {"metadata": metadata, "items": items}, ["items"], f"A list of {kind} objects.")


_USAGE = {"description": "What was used over the window: `cpu` in cores (a rate), `memory` as the working set "
                         "in bytes.",
          "type": ["object", "null"], "additionalProperties": {"$ref": _QUANTITY}}
_MEASURED = {
    "metadata": {"$ref": _META + "ObjectMeta", "description": "The name, namespace and labels of what was measured."},
    "timestamp": {"$ref": _META + "Time", "description": "The end of the interval the usage was measured over."},
    "window": _string("The length of that interval, a duration such as `15.012s`."),
}
_CONTAINERS = {"description": "The usage of each of the pod's containers, all measured over the same window.",
               "type": ["array", "null"], "items": {"$ref": _OWN + "ContainerMetrics"},
               "x-kubernetes-list-type": "atomic"}

DEFINITIONS: dict[str, dict[str, Any]] = {
    _PREFIX + "NodeMetrics": _kind("NodeMetrics", {**_MEASURED, "usage": _USAGE}, ["timestamp", "window", "usage"],
                                   "How much CPU and memory one node uses."),
    _PREFIX + "NodeMetricsList": _list("NodeMetrics"),
    _PREFIX + "PodMetrics": _kind("PodMetrics", {**_MEASURED, "containers": _CONTAINERS},
                                  ["timestamp", "window", "containers"],
                                  "How much CPU and memory the containers of one pod use."),
    _PREFIX + "PodMetricsList": _list("PodMetrics"),
    _PREFIX + "ContainerMetrics": {
        "description": "How much CPU and memory one container uses.", "type": ["object", "null"],
        "required": ["name", "usage"],
        "properties": {"name": _string("The container's name, as in the pod's spec."), "usage": _USAGE}},
}

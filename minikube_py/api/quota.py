"""Quota arithmetic: what an object counts against a ResourceQuota, and a quota's status recomputed.

Shared by the two halves of quota enforcement: the ResourceQuota admission plugin (which charges a quota as
objects are created, admission/plugins/resourcequota.py) and the controller manager's resource quota
controller (which recounts and gives usage back, kcm/controllers/resourcequota.py).

What an object uses (`usage`): a pod `pods`, `count/pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory`,
`limits.cpu`, `limits.memory`, ephemeral storage, hugepages and `requests.<extended resource>` (from its
totals, as long as it is not finished); a service `services`, `services.loadbalancers`,
`services.nodeports`; a claim `persistentvolumeclaims`, `requests.storage` and the per-StorageClass
variants; every object `count/<resource>[.<group>]`, and configmaps, secrets, replicationcontrollers and
resourcequotas their legacy names. Scopes (`Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`,
and `scopeSelector` on `PriorityClass`) apply to pods; a quota with scopes counts nothing else (`matches`).

`quota_status` recomputes a quota's status: `hard` from its spec, `used` summed over the objects it counts,
read from anything that lists objects (the apiserver's watch caches, a controller's informer caches).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Protocol

from .quantity import ResourceList, add, parse_list, pod_limits, pod_requests, render

_COMPUTE = {"cpu": ("cpu", "requests.cpu"), "memory": ("memory", "requests.memory"),
            "ephemeral-storage": ("ephemeral-storage", "requests.ephemeral-storage")}
_LEGACY_COUNTS = {"configmaps", "secrets", "replicationcontrollers", "resourcequotas", "services",
                  "persistentvolumeclaims"}
_STORAGE_CLASS = ".storageclass.storage.k8s.io/"
_ONE = Fraction(1)


def count_name(group: str, resource: str) -> str:
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def pod_compute(pod: Mapping[str, Any]) -> ResourceList:
    used: ResourceList = {"pods": _ONE}
    requests, limits = pod_requests(pod), pod_limits(pod)
    for name, keys in _COMPUTE.items():
        if name in requests:
            used.update(dict.fromkeys(keys, requests[name]))
        if name in limits:
            used[f"limits.{name}"] = limits[name]
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            used[name] = used[f"requests.{name}"] = amount
        elif "/" in name and not name.startswith("kubernetes.io/"):
            used[f"requests.{name}"] = amount
    return used


def _pod_usage(pod: Mapping[str, Any]) -> ResourceList:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return {}  # finished pods hold no compute resources, only their place in storage (count/pods)
    return pod_compute(pod)


def _service_usage(service: Mapping[str, Any]) -> ResourceList:
    spec = service.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    used = {"services.loadbalancers": Fraction(kind == "LoadBalancer")}
    node_ports = kind == "NodePort" or (kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True))
    used["services.nodeports"] = Fraction(len(spec.get("ports") or []) if node_ports else 0)
    return used


def _claim_usage(claim: Mapping[str, Any]) -> ResourceList:
    spec = claim.get("spec") or {}
    storage = parse_list((spec.get("resources") or {}).get("requests")).get("storage")
    used: ResourceList = {}
    if storage is not None:
        used["requests.storage"] = storage
    if spec.get("storageClassName"):
        prefix = spec["storageClassName"] + _STORAGE_CLASS
        used[prefix + "persistentvolumeclaims"] = _ONE
        if storage is not None:
            used[prefix + "requests.storage"] = storage
    return used


def usage(group: str, resource: str, obj: Mapping[str, Any]) -> ResourceList:
    """Everything `obj` counts against a quota, by quota resource name."""
    used: ResourceList = {count_name(group, resource): _ONE}
    if not group and resource in _LEGACY_COUNTS:
        used[resource] = _ONE
    if not group and resource == "pods":
        used = add(used, _pod_usage(obj))
    elif not group and resource == "services":
        used = add(used, _service_usage(obj))
    elif not group and resource == "persistentvolumeclaims":
        used = add(used, _claim_usage(obj))
    return used


def tracked_resource(name: str) -> tuple[str, str] | None:
    """The (group, resource) whose objects a quota resource name counts, or None for an unknown name."""
    if name.startswith("count/"):
        plural, _, group = name.removeprefix("count/").partition(".")
        return group, plural
    if name in _LEGACY_COUNTS:
        return "", name
    if name.startswith("services."):
        return "", "services"
    if name == "requests.storage" or _STORAGE_CLASS in name:
        return "", "persistentvolumeclaims"
    return "", "pods"  # compute resources: cpu, limits.memory, hugepages-2Mi, requests.nvidia.com/gpu, ...


def _terminating(pod: Mapping[str, Any]) -> bool:
    return (pod.get("spec") or {}).get("activeDeadlineSeconds") is not None


def _scope_matches(scope: str, operator: str, values: list[str], pod: Mapping[str, Any]) -> bool:
    if scope == "PriorityClass":
        name = (pod.get("spec") or {}).get("priorityClassName") or ""
        return {"In": name in values, "NotIn": name not in values, "Exists": bool(name),
                "DoesNotExist": not name}.get(operator, False)
    best_effort = not pod_requests(pod) and not pod_limits(pod)
    truth = {"Terminating": _terminating(pod), "NotTerminating": not _terminating(pod),
             "BestEffort": best_effort, "NotBestEffort": not best_effort}.get(scope, False)
    return truth if operator in ("Exists", "In", "") else not truth


def matches(quota: Mapping[str, Any], group: str, resource: str, obj: Mapping[str, Any]) -> bool:
    """Whether the quota's scopes select `obj` (a quota without scopes selects everything)."""
    spec = quota.get("spec") or {}
    scopes = [(s, "Exists", []) for s in spec.get("scopes") or []]
    scopes += [(r.get("scopeName", ""), r.get("operator", ""), list(r.get("values") or []))
               for r in (spec.get("scopeSelector") or {}).get("matchExpressions") or []]
    if not scopes:
        return True
    if group or resource != "pods":
        return False
    return all(_scope_matches(scope, op, values, obj) for scope, op, values in scopes)


def _binary(hard: Mapping[str, Any], name: str) -> bool:
    value = hard.get(name)
    return isinstance(value, str) and value.strip().endswith("i")


def render_list(amounts: Mapping[str, Fraction], hard: Mapping[str, Any]) -> dict[str, str]:
    return {name: render(amount, _binary(hard, name)) for name, amount in sorted(amounts.items())}


class ObjectLister(Protocol):
    """Where `quota_status` finds the objects a quota counts (a `ClusterState` is one)."""

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]: ...


def quota_status(state: ObjectLister, quota: Mapping[str, Any]) -> dict[str, Any]:
    """The quota's status as kube's quota controller computes it: `hard` from the spec, `used` summed over
    the objects of the quota's namespace that `state` lists."""
    hard = dict((quota.get("spec") or {}).get("hard") or {})
    namespace = quota["metadata"]["namespace"]
    used: ResourceList = dict.fromkeys(hard, Fraction(0))
    for group, resource in {tracked_resource(name) for name in hard} - {None}:
        for obj in state.list(group, resource, namespace):
            if matches(quota, group, resource, obj):
                used = add(used, {k: v for k, v in usage(group, resource, obj).items() if k in hard})
    return {"hard": hard, "used": render_list(used, hard)}

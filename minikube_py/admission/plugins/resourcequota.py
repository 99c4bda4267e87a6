"""ResourceQuota: a namespace's ResourceQuotas cap what its objects may use; usage is charged at admission.

The last plugin of the chain (validating), on creates in a namespace that has quotas. For each quota whose
scopes match the new object, as kube's quota admission does:

1. a pod must request/limit cpu and memory in every container when the quota limits them: else 403
   `failed quota: q: must specify limits.cpu for: web; requests.cpu for: web`;
2. the object's usage (`usage`) is added to the quota's `status.used`; if that passes `status.hard` for any
   resource the object uses: 403 `exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`;
3. otherwise the new `status.used` is written (`ClusterState.update` of the quota's status: a read-modify-write
   retried on conflicts, so two racing creates cannot both take the last unit). Dry-run requests are checked
   but not charged.

What an object uses: a pod `pods`, `count/pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory`,
`limits.cpu`, `limits.memory`, ephemeral storage, hugepages and `requests.<extended resource>` (from its
totals, as long as it is not finished); a service `services`, `services.loadbalancers`,
`services.nodeports`; a claim `persistentvolumeclaims`, `requests.storage` and the per-StorageClass
variants; every object `count/<resource>[.<group>]`, and configmaps, secrets, replicationcontrollers and
resourcequotas their legacy names. Scopes (`Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`,
and `scopeSelector` on `PriorityClass`) apply to pods; a quota with scopes counts nothing else.

`quota_status` recomputes a quota's status (hard from spec, used from the watch caches); kube's quota
controller does that in kube-controller-manager, mkpy's stand-in runs in the apiserver
(`apiserver/controllers.py`) when a quota is created or changed and when the objects it counts change,
which also gives back what deleted objects and refused creates were charged.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from ...api.quantity import ResourceList, add, parse_list, pod_limits, pod_requests, render
from ...api.validation.quantity import canonical
from ..interface import CREATE, Attributes, ClusterState, forbidden

_COMPUTE = {"cpu": ("cpu", "requests.cpu"), "memory": ("memory", "requests.memory"),
            "ephemeral-storage": ("ephemeral-storage", "requests.ephemeral-storage")}
# what a quota on cpu or memory forces every container to state (kube's "validation set")
_MUST_SPECIFY = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
_LEGACY_COUNTS = {"configmaps", "secrets", "replicationcontrollers", "resourcequotas", "services",
                  "persistentvolumeclaims"}
_STORAGE_CLASS = ".storageclass.storage.k8s.io/"
_ONE = Fraction(1)


def count_name(group: str, resource: str) -> str:
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def _pod_compute(pod: Mapping[str, Any]) -> ResourceList:
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
    return _pod_compute(pod)


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


def quota_status(state: ClusterState, quota: Mapping[str, Any]) -> dict[str, Any]:
    """The quota's status as kube's quota controller computes it: `hard` from the spec, `used` summed over
    the objects of the namespace in the watch caches."""
    hard = dict((quota.get("spec") or {}).get("hard") or {})
    namespace = quota["metadata"]["namespace"]
    used: ResourceList = dict.fromkeys(hard, Fraction(0))
    for group, resource in {tracked_resource(name) for name in hard} - {None}:
        for obj in state.list(group, resource, namespace):
            if matches(quota, group, resource, obj):
                used = add(used, {k: v for k, v in usage(group, resource, obj).items() if k in hard})
    return {"hard": hard, "used": render_list(used, hard)}


def _prettify(amounts: Mapping[str, Any]) -> str:
    return ",".join(f"{name}={value}" for name, value in sorted(amounts.items()))


def missing_requests(quota: Mapping[str, Any], pod: Mapping[str, Any]) -> str:
    """kube's `must specify ...` for containers that leave out a cpu/memory request or limit the quota caps."""
    hard = (quota.get("status") or {}).get("hard") or (quota.get("spec") or {}).get("hard") or {}
    required = [name for name in _MUST_SPECIFY if name in hard]
    missing: dict[str, list[str]] = {}
    spec = pod.get("spec") or {}
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        has = _pod_compute({"spec": {"containers": [{"resources": resources}]}})
        for name in required:
            if name not in has:
                missing.setdefault(name, []).append(str(container.get("name")))
    if not missing:
        return ""
    return "must specify " + "; ".join(f"{name} for: {','.join(sorted(set(names)))}"
                                       for name, names in sorted(missing.items()))


class ResourceQuota:
    name = "ResourceQuota"

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def handles(self, operation: str) -> bool:
        return operation == CREATE

    async def validate(self, attributes: Attributes) -> None:
        obj = attributes.object
        if attributes.subresource or not attributes.namespace or not isinstance(obj, dict):
            return
        quotas = sorted(self.state.list("", "resourcequotas", attributes.namespace),
                        key=lambda q: q["metadata"]["name"])
        for quota in quotas:
            if matches(quota, attributes.group, attributes.resource, obj):
                await self._charge(attributes, quota, usage(attributes.group, attributes.resource, obj))

    async def _charge(self, attributes: Attributes, quota: dict[str, Any], delta: ResourceList) -> None:
        name = quota["metadata"]["name"]
        if attributes.resource == "pods" and not attributes.group:
            why = missing_requests(quota, attributes.object or {})
            if why:
                raise forbidden(attributes, f"failed quota: {name}: {why}")
        requested = {k: v for k, v in delta.items() if v and k in ((quota.get("spec") or {}).get("hard") or {})}
        if not requested:
            return
        if attributes.dry_run:
            self._check(attributes, quota, requested)
            return

        def charge(live: dict[str, Any]) -> dict[str, Any]:
            status = self._check(attributes, live, requested)
            live["status"] = status
            return live

        await self.state.update("", "resourcequotas", attributes.namespace, name, charge, subresource="status")

    def _check(self, attributes: Attributes, quota: dict[str, Any], requested: ResourceList) -> dict[str, Any]:
        """The quota's status with `requested` added; raises the 403 when that passes a hard limit. A quota the
        stand-in controller has not filled in yet gets its status computed here first."""
        status = quota.get("status") or {}
        if status.get("hard") != (quota.get("spec") or {}).get("hard"):
            status = quota_status(self.state, quota)
        hard, used = status["hard"], parse_list(status.get("used"))
        new = add(used, {k: v for k, v in requested.items() if k in hard})
        limits = parse_list(hard)
        exceeded = sorted(k for k in requested if k in hard and new[k] > limits.get(k, Fraction(0)))
        if exceeded:
            raise forbidden(attributes, "exceeded quota: {}, requested: {}, used: {}, limited: {}".format(
                quota["metadata"]["name"], _prettify(render_list({k: requested[k] for k in exceeded}, hard)),
                _prettify(render_list({k: used.get(k, Fraction(0)) for k in exceeded}, hard)),
                _prettify({k: canonical(hard[k]) for k in exceeded})))
        return {"hard": hard, "used": {**status.get("used", {}), **render_list(new, hard)}}

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

What an object uses and how a quota's status is recomputed is shared with the controller manager's resource
quota controller, which gives usage back as objects go: `api/quota.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from ...api.quantity import ResourceList, add, parse_list
from ...api.quota import matches, pod_compute, quota_status, render_list, usage
from ...api.validation.quantity import canonical
from ..interface import CREATE, Attributes, ClusterState, forbidden

# what a quota on cpu or memory forces every container to state (kube's "validation set")
_MUST_SPECIFY = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")


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
        has = pod_compute({"spec": {"containers": [{"resources": resources}]}})
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
        quota controller has not filled in yet gets its status computed here first."""
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

"""LimitRanger: default and bound the resources of pods and claims from the namespace's LimitRanges.

Mutating, on pod create: each container (and init container) that does not request or limit a resource
gets the `defaultRequest`/`default` of the namespace's `type: Container` limits, and the pod is annotated
`kubernetes.io/limit-ranger: LimitRanger plugin set: cpu request for container web; ...` naming what was
filled in, as kube does. (LimitRange defaulting already fills `default` from `max` and `defaultRequest` from
`default` or `min`.)

Validating, on pod create and on PersistentVolumeClaim create and update, against every LimitRange of the
namespace:
* `type: Container`: each container's request and limit within `min`/`max`, and limit ÷ request at most
  `maxLimitRequestRatio`;
* `type: Pod`: the same for the pod's totals (containers summed, init containers as the pod holds them);
* `type: PersistentVolumeClaim`: the claim's storage request within `min`/`max`.
Every violation is reported in one 403, in kube's words (`pods "web" is forbidden: maximum cpu usage per
Container is 500m, but limit is 1`; several are listed in brackets). Pod updates are not checked: container
resources cannot change after create.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from ...api.quantity import ResourceList, parse_list, pod_limits, pod_requests, render
from ...api.validation.quantity import canonical
from ..interface import CREATE, UPDATE, Attributes, ClusterState, forbidden

ANNOTATION = "kubernetes.io/limit-ranger"
_PLAIN = Mapping[str, Any]  # a requests/limits map as the object holds it (quantity strings)
_BYTES = frozenset({"memory", "ephemeral-storage", "storage"})


class LimitRanger:
    name = "LimitRanger"

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE)

    def _kind(self, attributes: Attributes) -> str:
        """"pod", "claim" or "" (nothing to do) for this request."""
        if attributes.group or attributes.subresource or not isinstance(attributes.object, dict):
            return ""
        if attributes.resource == "pods" and attributes.operation == CREATE:
            return "pod"
        return "claim" if attributes.resource == "persistentvolumeclaims" else ""

    def _limits(self, attributes: Attributes) -> list[dict[str, Any]]:
        """Every limit item of the namespace's LimitRanges."""
        return [item for lr in self.state.list("", "limitranges", attributes.namespace)
                for item in (lr.get("spec") or {}).get("limits") or [] if isinstance(item, dict)]

    async def admit(self, attributes: Attributes) -> None:
        if self._kind(attributes) != "pod":
            return
        requests: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        for item in self._limits(attributes):
            if item.get("type") == "Container":
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
        if requests or limits:
            _default_pod(attributes.object or {}, requests, limits)

    async def validate(self, attributes: Attributes) -> None:
        kind = self._kind(attributes)
        if not kind:
            return
        problems: list[str] = []
        for item in self._limits(attributes):
            if kind == "pod":
                problems += _check_pod(item, attributes.object or {})
            elif item.get("type") == "PersistentVolumeClaim":
                requests = ((attributes.object or {}).get("spec") or {}).get("resources", {}).get("requests")
                problems += _check_claim(item, requests or {})
        if problems:
            raise forbidden(attributes, problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]")


def _default_pod(pod: dict[str, Any], requests: _PLAIN, limits: _PLAIN) -> None:
    spec = pod.get("spec") or {}
    notes: list[str] = []
    for key, label in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                notes += _default_container(container, label, requests, limits)
    if notes:
        annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _default_container(container: dict[str, Any], label: str, requests: _PLAIN, limits: _PLAIN) -> list[str]:
    if not isinstance(container.get("resources"), dict):
        container["resources"] = {}
    resources = container["resources"]
    notes = []
    for which, defaults in (("requests", requests), ("limits", limits)):
        current = resources.get(which) or {}
        missing = sorted(name for name in defaults if name not in current)
        if missing:
            resources[which] = {**current, **{name: defaults[name] for name in missing}}
            notes.append(f"{', '.join(missing)} {which[:-1]} for {label} {container.get('name')}")
    return notes


def _check_pod(item: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
    kind = item.get("type")
    if kind == "Container":
        spec = pod.get("spec") or {}
        problems = []
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or []:
                resources = container.get("resources") or {}
                problems += _check_bounds(item, "Container", resources.get("requests") or {},
                                          resources.get("limits") or {})
        return problems
    if kind == "Pod":
        return _check_bounds(item, "Pod", _as_strings(pod_requests(pod)), _as_strings(pod_limits(pod)))
    return []


def _as_strings(amounts: ResourceList) -> dict[str, str]:
    """A pod's totals as quantities again, for the messages (bytes in binary form when they are whole Ki)."""
    return {name: render(amount, binary=name in _BYTES) for name, amount in amounts.items()}


def _check_bounds(item: Mapping[str, Any], kind: str, requests: _PLAIN, limits: _PLAIN) -> list[str]:
    checks: list[tuple[str, Callable[[str, str, Any, _PLAIN, _PLAIN], str]]] = [
        ("min", _min), ("max", _max), ("maxLimitRequestRatio", _ratio)]
    return [problem for field, check in checks for name, bound in (item.get(field) or {}).items()
            if (problem := check(kind, name, bound, requests, limits))]


def _amount(values: _PLAIN, name: str) -> Fraction | None:
    return parse_list({name: values[name]}).get(name) if name in values else None


def _min(kind: str, name: str, bound: Any, requests: _PLAIN, limits: _PLAIN) -> str:
    enforced, request, limit = parse_list({name: bound}).get(name), _amount(requests, name), _amount(limits, name)
    if enforced is None:
        return ""
    prefix = f"minimum {name} usage per {kind} is {canonical(bound)}"
    if request is None:
        return f"{prefix}.  No request is specified"
    if request < enforced:
        return f"{prefix}, but request is {canonical(requests[name])}"
    if limit is not None and limit < enforced:
        return f"{prefix}, but limit is {canonical(limits[name])}"
    return ""


def _max(kind: str, name: str, bound: Any, requests: _PLAIN, limits: _PLAIN) -> str:
    enforced, request, limit = parse_list({name: bound}).get(name), _amount(requests, name), _amount(limits, name)
    if enforced is None:
        return ""
    prefix = f"maximum {name} usage per {kind} is {canonical(bound)}"
    if limit is None:
        return f"{prefix}.  No limit is specified"
    if limit > enforced:
        return f"{prefix}, but limit is {canonical(limits[name])}"
    if request is not None and request > enforced:
        return f"{prefix}, but request is {canonical(requests[name])}"
    return ""


def _ratio(kind: str, name: str, bound: Any, requests: _PLAIN, limits: _PLAIN) -> str:
    enforced, request, limit = parse_list({name: bound}).get(name), _amount(requests, name), _amount(limits, name)
    if enforced is None:
        return ""
    prefix = f"{name} max limit to request ratio per {kind} is {canonical(bound)}"
    if not request:
        return f"{prefix}, but no request is specified or request is 0"
    if not limit:
        return f"{prefix}, but no limit is specified or limit is 0"
    ratio = limit / request
    return f"{prefix}, but provided ratio is {float(ratio):f}" if ratio > enforced else ""


def _check_claim(item: Mapping[str, Any], requests: _PLAIN) -> list[str]:
    kind = "PersistentVolumeClaim"
    problems = [_min(kind, name, bound, requests, {}) for name, bound in (item.get("min") or {}).items()]
    for name, bound in (item.get("max") or {}).items():
        enforced, request = parse_list({name: bound}).get(name), _amount(requests, name)
        prefix = f"maximum {name} usage per {kind} is {canonical(bound)}"
        if enforced is None:
            continue
        if request is None:
            problems.append(f"{prefix}.  No request is specified")
        elif request > enforced:
            problems.append(f"{prefix}, but request is {canonical(requests[name])}")
    return [p for p in problems if p]

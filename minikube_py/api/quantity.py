"""Resource lists as numbers: a pod's total requests and limits, and adding and printing amounts.

Admission (LimitRanger's Pod limits, ResourceQuota's usage) and later the scheduler need what kube's
`resourcehelper.PodRequests`/`PodLimits` compute: the resources a pod holds while it runs. A resource list
here is a dict from resource name to an exact `Fraction` (parsed with `validation.quantity`); `render` prints
an amount back in kube's canonical form, binary (`128Mi`) when the amount came from binary quantities.

Usage rules: values that are not quantities are skipped (validation reports them); the functions never
mutate the pod.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from .validation.quantity import QuantityError, canonical, parse_quantity

ResourceList = dict[str, Fraction]


def parse_list(quantities: Mapping[str, Any] | None) -> ResourceList:
    """A `requests`/`limits`/`hard` map as exact amounts; entries that are not quantities are left out."""
    parsed: ResourceList = {}
    for name, value in (quantities or {}).items():
        try:
            parsed[name] = parse_quantity(value)
        except QuantityError:
            continue
    return parsed


def add(total: ResourceList, more: Mapping[str, Fraction]) -> ResourceList:
    """`total + more`, resource by resource (a new dict)."""
    result = dict(total)
    for name, amount in more.items():
        result[name] = result.get(name, Fraction(0)) + amount
    return result


def _max_into(total: ResourceList, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        if amount > total.get(name, Fraction(0)):
            total[name] = amount


def _container_list(container: Mapping[str, Any], which: str,
                    missing: Mapping[str, Fraction] | None = None) -> ResourceList:
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    value = resources.get(which)
    amounts = parse_list(value if isinstance(value, dict) else None)
    for name, amount in (missing or {}).items():
        amounts.setdefault(name, amount)
    return amounts


def _containers(spec: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    return [c for c in spec.get(key) or [] if isinstance(c, dict)]


def _pod_total(pod: Mapping[str, Any], which: str, missing: Mapping[str, Fraction] | None = None) -> ResourceList:
    """Regular containers run together (sum); each classic init container runs alone, next to the sidecars
    started before it (max); sidecars (init containers with restartPolicy Always) run with everything; the
    pod's overhead comes on top."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    total: ResourceList = {}
    for container in _containers(spec, "containers"):
        total = add(total, _container_list(container, which, missing))
    sidecars: ResourceList = {}
    peak: ResourceList = {}
    for container in _containers(spec, "initContainers"):
        own = _container_list(container, which, missing)
        if container.get("restartPolicy") == "Always":
            sidecars = add(sidecars, own)
            _max_into(peak, sidecars)
        else:
            _max_into(peak, add(sidecars, own))
    total = add(total, sidecars)
    _max_into(total, peak)
    overhead = spec.get("overhead")
    return add(total, parse_list(overhead if isinstance(overhead, dict) else None))


def pod_requests(pod: Mapping[str, Any], missing: Mapping[str, Fraction] | None = None) -> ResourceList:
    """What the pod asks for while it runs (kube's `resourcehelper.PodRequests`). With `missing`, a container
    that does not request one of its resources counts as requesting the amount given there (kube's
    `NonMissingContainerRequests`: the scheduler's non-zero requests)."""
    return _pod_total(pod, "requests", missing)


def pod_limits(pod: Mapping[str, Any]) -> ResourceList:
    """The pod's limits the same way; a resource some container leaves unlimited is only as high as the
    containers that do limit it say (as in kube)."""
    return _pod_total(pod, "limits")


def render(amount: Fraction, binary: bool = False) -> str:
    """`amount` as kube prints a quantity (`Quantity.String()`): `500m`, `2`, `1Gi` when `binary`."""
    if binary and amount.denominator == 1 and amount % 1024 == 0:
        return canonical(f"{int(amount) // 1024}Ki")
    nanos = math.ceil(amount * 10**9)
    return canonical(f"{nanos}n")


def is_binary(values: Iterable[Any]) -> bool:
    """Whether the first of these quantities that is a string uses a binary suffix (`Ki`…`Ei`): kube keeps
    the format of the first operand when it adds quantities."""
    for value in values:
        if isinstance(value, str):
            return value.strip().endswith("i")
    return False

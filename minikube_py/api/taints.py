"""Taints and tolerations: parsing them out of API objects and deciding which tolerations tolerate which taints.

A node's `spec.taints` repel pods; a pod's `spec.tolerations` let it through. Three components ask the same
question, so the answer lives here once: the scheduler's TaintToleration and NodeUnschedulable plugins (may the
pod go to this node?), the controller manager's taint-eviction controller (must a running pod leave a NoExecute
node, and after how long?), and the kubelet's admission (does the pod tolerate its node's NoExecute taints?).

Matching follows kube's `Toleration.ToleratesTaint`: a toleration with an effect only matches taints of that
effect, one with a key only taints with that key; operator `Exists` matches any value, `Equal` (or none) needs
the same value, and an empty key with `Exists` tolerates everything.

Usage rules: parse once (`parse_taints`, `parse_tolerations`) and match the parsed values many times. Parsing
never raises: entries that are not well formed are left out and described in the returned error list (paths
like `spec.taints[1].effect`), so a node with a broken taint can be set aside with a clear message instead of
crashing the caller. The parsed values are immutable.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from minikube_py.api.gofmt import go_quote
from minikube_py.api.selectors import validate_label_key

NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
DO_NOT_SCHEDULE = frozenset((NO_SCHEDULE, NO_EXECUTE))  # the effects that keep new pods off a node
EQUAL, EXISTS = "Equal", "Exists"

# Well-known taints the node lifecycle controller and the kubelet set.
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        """`{key: value}`, the form scheduler messages print ("had untolerated taint {key: value}")."""
        return f"{{{self.key}: {self.value}}}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = EQUAL
    value: str = ""
    effect: str = ""  # "" tolerates every effect
    toleration_seconds: int | None = None  # NoExecute only: how long the pod may stay once tainted


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether this one toleration tolerates `taint`."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == EXISTS:
        return True
    return toleration.value == taint.value


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    for toleration in tolerations:
        if tolerates(toleration, taint):
            return True
    return False


def find_untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration],
                           effect_filter: Collection[str] | None = None) -> Taint | None:
    """The first taint (among those whose effect is in `effect_filter`, all when None) that no toleration
    tolerates, or None when the pod tolerates them all."""
    for taint in taints:
        if effect_filter is not None and taint.effect not in effect_filter:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


# --- parsing ------------------------------------------------------------------------------------------------


def _unsupported(path: str, value: Any, supported: Iterable[str]) -> str:
    shown = ", ".join(go_quote(s) for s in supported)
    return f"{path}: Unsupported value: {_show(value)}: supported values: {shown}"


def _show(value: Any) -> str:
    return go_quote(value) if isinstance(value, str) else repr(value)


def _string_field(raw: dict[str, Any], name: str, path: str, errors: list[str]) -> str:
    """`raw[name]` as a string ("" when absent); anything else is an error."""
    value = raw.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(f"{path}.{name}: Invalid value: {_show(value)}: must be a string")
        return ""
    return value


def _key_errors(key: str, path: str) -> list[str]:
    return [f"{path}.key: Invalid value: {go_quote(key)}: {problem}" for problem in validate_label_key(key)]


def parse_taint(raw: Any, path: str) -> tuple[Taint | None, list[str]]:
    """One `spec.taints[i]` entry, or None and what is wrong with it."""
    if not isinstance(raw, dict):
        return None, [f"{path}: Invalid value: {_show(raw)}: must be an object"]
    errors: list[str] = []
    key = _string_field(raw, "key", path, errors)
    value = _string_field(raw, "value", path, errors)
    effect = _string_field(raw, "effect", path, errors)
    if not key:
        errors.append(f"{path}.key: Required value")
    else:
        errors += _key_errors(key, path)
    if not effect:
        errors.append(f"{path}.effect: Required value")
    elif effect not in TAINT_EFFECTS:
        errors.append(_unsupported(f"{path}.effect", effect, TAINT_EFFECTS))
    return (None, errors) if errors else (Taint(key, value, effect), [])


def parse_taints(raw: Any, path: str = "spec.taints") -> tuple[list[Taint], list[str]]:
    """A node's `spec.taints` (None means none): the well-formed taints and the errors of the others."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{path}: Invalid value: {_show(raw)}: must be a list"]
    taints: list[Taint] = []
    errors: list[str] = []
    for i, item in enumerate(raw):
        taint, problems = parse_taint(item, f"{path}[{i}]")
        if taint is not None:
            taints.append(taint)
        errors += problems
    return taints, errors


def _toleration_seconds(raw: dict[str, Any], path: str, errors: list[str]) -> int | None:
    seconds = raw.get("tolerationSeconds")
    if seconds is None or (isinstance(seconds, int) and not isinstance(seconds, bool)):
        return seconds
    errors.append(f"{path}.tolerationSeconds: Invalid value: {_show(seconds)}: must be an integer")
    return None


def parse_toleration(raw: Any, path: str) -> tuple[Toleration | None, list[str]]:
    """One `spec.tolerations[i]` entry, or None and what is wrong with it."""
    if not isinstance(raw, dict):
        return None, [f"{path}: Invalid value: {_show(raw)}: must be an object"]
    errors: list[str] = []
    key = _string_field(raw, "key", path, errors)
    operator = _string_field(raw, "operator", path, errors) or EQUAL
    value = _string_field(raw, "value", path, errors)
    effect = _string_field(raw, "effect", path, errors)
    seconds = _toleration_seconds(raw, path, errors)
    if operator not in (EQUAL, EXISTS):
        errors.append(_unsupported(f"{path}.operator", operator, (EQUAL, EXISTS)))
    if effect and effect not in TAINT_EFFECTS:
        errors.append(_unsupported(f"{path}.effect", effect, TAINT_EFFECTS))
    if errors:
        return None, errors
    return Toleration(key, operator, value, effect, seconds), []


def parse_tolerations(raw: Any, path: str = "spec.tolerations") -> tuple[list[Toleration], list[str]]:
    """A pod's `spec.tolerations`: the well-formed ones and the errors of the others (which tolerate nothing)."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{path}: Invalid value: {_show(raw)}: must be a list"]
    tolerations: list[Toleration] = []
    errors: list[str] = []
    for i, item in enumerate(raw):
        toleration, problems = parse_toleration(item, f"{path}[{i}]")
        if toleration is not None:
            tolerations.append(toleration)
        errors += problems
    return tolerations, errors


def pod_tolerations(pod: dict[str, Any]) -> list[Toleration]:
    """The pod's well-formed tolerations (validation already refused the others at the apiserver)."""
    spec = pod.get("spec")
    return parse_tolerations(spec.get("tolerations") if isinstance(spec, dict) else None)[0]

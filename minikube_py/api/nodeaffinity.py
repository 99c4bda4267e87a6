"""Node selectors: which nodes a pod's `nodeSelector` and node affinity accept, and how much it prefers each.

A `NodeSelector` (`requiredDuringSchedulingIgnoredDuringExecution`) is a list of terms ORed together; each
`NodeSelectorTerm` ANDs its `matchExpressions` (on node labels: In, NotIn, Exists, DoesNotExist, Gt, Lt) and
its `matchFields` (on node fields: only `metadata.name`, with In or NotIn and exactly one value). Preferred
terms (`preferredDuringSchedulingIgnoredDuringExecution`) add their weight to a node's score when they match.
This is kube's `component-helpers/scheduling/corev1/nodeaffinity`, shared by the scheduler's NodeAffinity
plugin, the kubelet's admission (does this pod belong here?) and the DaemonSet controller.

Semantics kept from kube: a term with neither expressions nor fields matches nothing; NotIn and DoesNotExist
match nodes without the label; Gt/Lt compare integers and fail on labels that are not integers; field
requirements are ignored for a node without a name; preferred terms of weight 0 are ignored.

Usage rules: build once per pod (`RequiredNodeAffinity.of(pod)`, `NodeSelector.from_api`,
`PreferredSchedulingTerms.from_api`) and match against many nodes. Building never raises: a malformed term is
recorded in `errors` (with its field path) and matches no node, while the well-formed terms keep working, as
kube's "lazy error" selector does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api import selectors
from minikube_py.api.gofmt import go_quote
from minikube_py.api.selectors import (
    LabelRequirement,
    LabelSelector,
    validate_label_key,
    validate_label_value,
)

OBJECT_NAME_FIELD = "metadata.name"
LABEL_OPERATORS = {"In": selectors.IN, "NotIn": selectors.NOT_IN, "Exists": selectors.EXISTS,
                   "DoesNotExist": selectors.DOES_NOT_EXIST, "Gt": selectors.GREATER_THAN,
                   "Lt": selectors.LESS_THAN}
FIELD_OPERATORS = ("In", "NotIn")

Labels = Mapping[str, str]
Fields = Mapping[str, str]
_Matcher = Callable[[Mapping[str, str]], bool]
_INT64 = re.compile(r"[+-]?[0-9]+")
_NO_FIELDS: dict[str, str] = {}


def node_fields(node: Mapping[str, Any]) -> dict[str, str]:
    """The fields `matchFields` may name (kube's `extractNodeFields`): only the node's name, when it has one."""
    name = (node.get("metadata") or {}).get("name")
    return {OBJECT_NAME_FIELD: name} if name else {}


def node_labels(node: Mapping[str, Any]) -> Labels:
    return (node.get("metadata") or {}).get("labels") or {}


# --- building one requirement -------------------------------------------------------------------------------


def _go_strings(values: Any) -> str:
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}"


def _values(raw: Mapping[str, Any], path: str, errors: list[str]) -> tuple[str, ...] | None:
    values = raw.get("values")
    if values is None:
        return ()
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        errors.append(f"{path}.values: Invalid value: {values!r}: must be a list of strings")
        return None
    return tuple(values)


def _operator_errors(operator: str, values: tuple[str, ...], path: str) -> list[str]:
    shown = _go_strings(values)
    if operator in ("In", "NotIn") and not values:
        return [f"{path}.values: Invalid value: {shown}: for 'in', 'notin' operators, values set can't be empty"]
    if operator in ("Exists", "DoesNotExist") and values:
        return [f"{path}.values: Invalid value: {shown}: values set must be empty for exists and does not exist"]
    if operator in ("Gt", "Lt"):
        errors = [] if len(values) == 1 else [
            f"{path}.values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one value is required"]
        return errors + [f"{path}.values[{i}]: Invalid value: {go_quote(v)}: for 'Gt', 'Lt' operators, the value "
                         "must be an integer" for i, v in enumerate(values) if not _is_int64(v)]
    return []


def _is_int64(text: str) -> bool:
    """Whether Go's ParseInt(text, 10, 64) accepts `text`."""
    return bool(_INT64.fullmatch(text)) and -(2**63) <= int(text) < 2**63


def _label_matcher(raw: Any, path: str, errors: list[str]) -> _Matcher | None:
    """One `matchExpressions[i]` entry as a predicate over node labels, or None (and errors) when malformed."""
    if not isinstance(raw, dict):
        errors.append(f"{path}: Invalid value: {raw!r}: must be an object")
        return None
    key, operator = raw.get("key"), raw.get("operator")
    before = len(errors)
    if not isinstance(operator, str) or operator not in LABEL_OPERATORS:
        supported = ", ".join(go_quote(op) for op in LABEL_OPERATORS)
        errors.append(f"{path}.operator: Unsupported value: {go_quote(str(operator))}: supported values: {supported}")
    if not isinstance(key, str):
        errors.append(f"{path}.key: Invalid value: {key!r}: must be a string")
    else:
        errors += [f"{path}.key: Invalid value: {go_quote(key)}: {p}" for p in validate_label_key(key)]
    values = _values(raw, path, errors)
    if values is None or len(errors) > before or not isinstance(key, str):
        return None
    errors += _operator_errors(operator, values, path)
    if operator in ("In", "NotIn"):
        errors += [f"{path}.values[{i}]: Invalid value: {go_quote(v)}: {'; '.join(problems)}"
                   for i, v in enumerate(values) if (problems := validate_label_value(v))]
    if len(errors) > before:
        return None
    return LabelRequirement(key, LABEL_OPERATORS[operator], values).matcher()


def _field_matcher(raw: Any, path: str, errors: list[str]) -> _Matcher | None:
    """One `matchFields[i]` entry as a predicate over node fields, or None (and errors) when malformed."""
    if not isinstance(raw, dict):
        errors.append(f"{path}: Invalid value: {raw!r}: must be an object")
        return None
    key, operator = raw.get("key"), raw.get("operator")
    values = _values(raw, path, errors)
    if operator not in FIELD_OPERATORS:
        supported = ", ".join(go_quote(op) for op in FIELD_OPERATORS)
        errors.append(f"{path}.operator: Unsupported value: {go_quote(str(operator))}: supported values: {supported}")
        return None
    if values is None:
        return None
    if len(values) != 1:
        errors.append(f"{path}.values: Invalid value: {_go_strings(values)}: must have one element")
        return None
    if not isinstance(key, str):
        errors.append(f"{path}.key: Invalid value: {key!r}: must be a string")
        return None
    wanted = values[0]
    if operator == "In":
        return lambda fields: fields.get(key, "") == wanted
    return lambda fields: fields.get(key, "") != wanted


# --- terms and selectors ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One parsed term: label predicates, field predicates (each None when the term lists none), and errors."""

    label_matchers: tuple[_Matcher, ...] | None
    field_matchers: tuple[_Matcher, ...] | None
    node_names: set[str] | None = None  # what `metadata.name In [...]` requirements allow (None: no such ones)
    errors: tuple[str, ...] = ()

    @classmethod
    def from_api(cls, raw: Any, path: str) -> NodeSelectorTerm:
        errors: list[str] = []
        if not isinstance(raw, dict):
            return cls(None, None, None, (f"{path}: Invalid value: {raw!r}: must be an object",))
        labels = _matchers(raw, "matchExpressions", path, errors, _label_matcher)
        fields = _matchers(raw, "matchFields", path, errors, _field_matcher)
        return cls(labels, fields, _named_nodes(raw.get("matchFields")), tuple(errors))

    @property
    def empty(self) -> bool:
        """A term that lists nothing, which kube treats as matching no node."""
        return self.label_matchers is None and self.field_matchers is None and not self.errors

    def matches(self, labels: Labels, fields: Fields) -> bool:
        if self.errors or (self.label_matchers is None and self.field_matchers is None):
            return False
        if self.label_matchers is not None:
            for matcher in self.label_matchers:
                if not matcher(labels):
                    return False
        if self.field_matchers is not None and fields:
            for matcher in self.field_matchers:
                if not matcher(fields):
                    return False
        return True


def _matchers(raw: Mapping[str, Any], name: str, path: str, errors: list[str],
              build: Callable[[Any, str, list[str]], _Matcher | None]) -> tuple[_Matcher, ...] | None:
    items = raw.get(name)
    if not items:
        return None
    if not isinstance(items, list):
        errors.append(f"{path}.{name}: Invalid value: {items!r}: must be a list")
        return None
    built = [build(item, f"{path}.{name}[{i}]", errors) for i, item in enumerate(items)]
    return tuple(m for m in built if m is not None)


def _named_nodes(raw: Any) -> set[str] | None:
    """The names a term's `metadata.name In [...]` requirements allow, intersected (they are ANDed)."""
    names: set[str] | None = None
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and item.get("key") == OBJECT_NAME_FIELD and item.get("operator") == "In":
            values = {v for v in item.get("values") or [] if isinstance(v, str)}
            names = values if names is None else names & values
    return names


@dataclass(frozen=True)
class NodeSelector:
    """A parsed `v1.NodeSelector`: a node matches when any well-formed, non-empty term matches it."""

    terms: tuple[NodeSelectorTerm, ...]
    errors: tuple[str, ...] = ()
    uses_fields: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "uses_fields", any(term.field_matchers for term in self.terms))

    @classmethod
    def from_api(cls, raw: Any, path: str = "nodeSelectorTerms") -> NodeSelector:
        """`raw` is the NodeSelector object; `path` names its `nodeSelectorTerms` in error messages."""
        if not isinstance(raw, dict):
            return cls((), (f"{path}: Invalid value: {raw!r}: must be a NodeSelector object",))
        raw_terms = raw.get("nodeSelectorTerms") or []
        if not isinstance(raw_terms, list):
            return cls((), (f"{path}: Invalid value: {raw_terms!r}: must be a list",))
        terms = tuple(NodeSelectorTerm.from_api(term, f"{path}[{i}]") for i, term in enumerate(raw_terms))
        return cls(terms, tuple(e for term in terms for e in term.errors))

    def matches(self, node: Mapping[str, Any]) -> bool:
        fields = node_fields(node) if self.uses_fields else _NO_FIELDS
        return self.matches_labels(node_labels(node), fields)

    def matches_labels(self, labels: Labels, fields: Fields) -> bool:
        for term in self.terms:
            if term.matches(labels, fields):
                return True
        return False


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    term: NodeSelectorTerm
    weight: int


@dataclass(frozen=True)
class PreferredSchedulingTerms:
    """Parsed preferred terms; `score(node)` is the sum of the weights of the terms the node matches."""

    terms: tuple[PreferredSchedulingTerm, ...]
    errors: tuple[str, ...] = ()

    @classmethod
    def from_api(cls, raw: Any, path: str = "preferredDuringSchedulingIgnoredDuringExecution"
                 ) -> PreferredSchedulingTerms:
        if raw is None:
            return cls(())
        if not isinstance(raw, list):
            return cls((), (f"{path}: Invalid value: {raw!r}: must be a list",))
        terms, errors = [], []
        for i, item in enumerate(raw):
            at = f"{path}[{i}]"
            weight = item.get("weight") if isinstance(item, dict) else None
            if not isinstance(weight, int) or isinstance(weight, bool):
                errors.append(f"{at}.weight: Invalid value: {weight!r}: must be an integer")
                continue
            term = NodeSelectorTerm.from_api(item.get("preference") or {}, f"{at}.preference")
            errors += term.errors
            if weight != 0 and not term.empty and not term.errors:
                terms.append(PreferredSchedulingTerm(term, weight))
        return cls(tuple(terms), tuple(errors))

    def score(self, node: Mapping[str, Any]) -> int:
        labels, fields = node_labels(node), node_fields(node)
        return sum(t.weight for t in self.terms if t.term.matches(labels, fields))


# --- what a pod requires ------------------------------------------------------------------------------------

_REQUIRED_PATH = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
_PREFERRED_PATH = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, dict) else {}


def _node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    affinity = _spec(pod).get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    return node_affinity if isinstance(node_affinity, dict) else {}


@dataclass(frozen=True)
class RequiredNodeAffinity:
    """A pod's hard node constraints: `spec.nodeSelector` AND the required node affinity (each None if absent)."""

    label_selector: LabelSelector | None
    node_selector: NodeSelector | None
    errors: tuple[str, ...] = ()

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> RequiredNodeAffinity:
        raw_selector = _spec(pod).get("nodeSelector")
        label_selector, errors = None, []
        if isinstance(raw_selector, dict) and raw_selector:
            label_selector = LabelSelector.from_set({k: str(v) for k, v in raw_selector.items()})
        elif raw_selector:
            errors.append(f"spec.nodeSelector: Invalid value: {raw_selector!r}: must be an object")
            label_selector = selectors.NOTHING
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        node_selector = NodeSelector.from_api(required, _REQUIRED_PATH) if required is not None else None
        errors += node_selector.errors if node_selector else ()
        return cls(label_selector, node_selector, tuple(errors))

    def matches(self, node: Mapping[str, Any]) -> bool:
        if self.label_selector is not None and not self.label_selector.matches(node_labels(node)):
            return False
        return self.node_selector is None or self.node_selector.matches(node)


def preferred_scheduling_terms(pod: Mapping[str, Any]) -> PreferredSchedulingTerms | None:
    """The pod's preferred node affinity terms, or None when it has none."""
    raw = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
    return None if raw is None else PreferredSchedulingTerms.from_api(raw, _PREFERRED_PATH)

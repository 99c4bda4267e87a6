"""The scheduling parts of a PodSpec: tolerations, affinity, topology spread, readiness and scheduling gates.

Split out of `pod.py` because these are what the scheduler reads, and what its labs make students write.
Also holds the two update rules that concern them: tolerations may only be added to a Pod, scheduling gates
may only be removed.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from minikube_py.api.validation.messages import as_dict, as_list, dict_items, invalid_value, semantic
from minikube_py.api.validation.meta import validate_label_name, validate_label_selector

TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def tolerations(items: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, toleration in enumerate(items):
        at = f"{path}[{i}]"
        key, operator = toleration.get("key") or "", toleration.get("operator") or ""
        value, effect = toleration.get("value") or "", toleration.get("effect") or ""
        if key:
            errs += validate_label_name(key, f"{at}.key")
        if not key and operator != "Exists":
            errs.append(invalid_value(f"{at}.operator", operator, "operator must be Exists when `key` is empty, "
                                                                  'which means "match all values and all keys"'))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid_value(f"{at}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` "
                                                              "is set"))
        if operator in ("Equal", ""):
            problems = names.is_valid_label_value(str(value))
            if problems:
                errs.append(invalid_value(f"{at}.operator", value, ";".join(problems)))
        elif operator == "Exists":
            if value:
                errs.append(invalid_value(f"{at}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(f"{at}.operator", operator, ["Equal", "Exists"]))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{at}.effect", effect, TAINT_EFFECTS))
    return errs


def only_added_tolerations(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    current = dict_items(new.get("tolerations"))
    for previous in dict_items(old.get("tolerations")):
        # Only tolerationSeconds of an existing toleration may change (the eviction grace of NoExecute).
        if not any(semantic(dict(previous, tolerationSeconds=t.get("tolerationSeconds"))) == semantic(t)
                   for t in current):
            return [forbidden("spec.tolerations", "existing toleration can not be modified except its "
                                                  "tolerationSeconds")]
    return tolerations(current, "spec.tolerations")


def only_removed_gates(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    before = {g.get("name") for g in dict_items(old.get("schedulingGates"))}
    return [forbidden(f"spec.schedulingGates[{i}].name", f"only deletion is allowed, but found new scheduling gate "
                                                         f"'{gate.get('name')}'")
            for i, gate in enumerate(dict_items(new.get("schedulingGates"))) if gate.get("name") not in before]


def gates_and_spread(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, gate in enumerate(dict_items(spec.get("readinessGates"))):
        kind = str(gate.get("conditionType") or "")
        errs += [invalid_value(f"{path}.readinessGates[{i}].conditionType", kind, m)
                 for m in names.is_qualified_name(kind)]
    seen: set[str] = set()
    for i, gate in enumerate(dict_items(spec.get("schedulingGates"))):
        name = str(gate.get("name") or "")
        errs += [invalid_value(f"{path}.schedulingGates[{i}]", name, m) for m in names.is_qualified_name(name)]
        if name in seen:
            errs.append(duplicate(f"{path}.schedulingGates[{i}]", name))
        seen.add(name)
    constraints = dict_items(spec.get("topologySpreadConstraints"))
    for i, constraint in enumerate(constraints):
        errs += _spread(constraint, constraints[i + 1:], f"{path}.topologySpreadConstraints[{i}]")
    return errs


def _spread(constraint: dict[str, Any], rest: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    skew = constraint.get("maxSkew")
    if not isinstance(skew, int) or skew <= 0:
        errs.append(invalid(f"{path}.maxSkew", skew if isinstance(skew, int) else 0, "must be greater than zero"))
    key, action = constraint.get("topologyKey") or "", constraint.get("whenUnsatisfiable") or ""
    if not key:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    if action not in ("DoNotSchedule", "ScheduleAnyway"):
        errs.append(not_supported(f"{path}.whenUnsatisfiable", action, ["DoNotSchedule", "ScheduleAnyway"]))
    if any(r.get("topologyKey") == key and r.get("whenUnsatisfiable") == action for r in rest):
        errs.append(duplicate(f"{path}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}"))
    domains = constraint.get("minDomains")
    if isinstance(domains, int):
        if domains <= 0:
            errs.append(invalid(f"{path}.minDomains", domains, "must be greater than zero"))
        if action != "DoNotSchedule":
            errs.append(invalid(f"{path}.minDomains", domains, "can only use minDomains if "
                                                               f"whenUnsatisfiable=DoNotSchedule, not {action}"))
    return errs + validate_label_selector(constraint.get("labelSelector"), f"{path}.labelSelector")


def affinity(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    node = spec.get("nodeAffinity")
    if isinstance(node, dict):
        errs += _node_affinity(node, f"{path}.nodeAffinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        if isinstance(spec.get(kind), dict):
            errs += _pod_affinity(spec[kind], f"{path}.{kind}")
    return errs


def _node_affinity(node: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    required_terms = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required_terms, dict):
        at = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = dict_items(required_terms.get("nodeSelectorTerms"))
        if not terms:
            errs.append(required(at, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs += _node_selector_term(term, f"{at}[{i}]")
    for i, preferred in enumerate(dict_items(node.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        at = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        errs += _weight(preferred, at)
        errs += _node_selector_term(as_dict(preferred.get("preference")), f"{at}.preference")
    return errs


def _weight(term: dict[str, Any], path: str) -> list[FieldError]:
    weight = term.get("weight")
    if isinstance(weight, int) and 1 <= weight <= 100:
        return []
    return [invalid(f"{path}.weight", weight if isinstance(weight, int) else 0, "must be in the range 1-100")]


def _node_selector_term(term: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, expr in enumerate(dict_items(term.get("matchExpressions"))):
        at = f"{path}.matchExpressions[{j}]"
        operator, values = expr.get("operator") or "", as_list(expr.get("values"))
        if operator in ("In", "NotIn") and not values:
            errs.append(required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist") and values:
            errs.append(forbidden(f"{at}.values", "may not be specified when `operator` is 'Exists' or "
                                                  "'DoesNotExist'"))
        elif operator in ("Gt", "Lt") and len(values) != 1:
            errs.append(required(f"{at}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
        elif operator not in _NODE_OPERATORS:
            errs.append(invalid_value(f"{at}.operator", operator, "not a valid selector operator"))
        errs += validate_label_name(str(expr.get("key") or ""), f"{at}.key")
    for j, expr in enumerate(dict_items(term.get("matchFields"))):
        at = f"{path}.matchFields[{j}]"
        if expr.get("key") != "metadata.name":
            errs.append(not_supported(f"{at}.key", expr.get("key") or "", ["metadata.name"]))
        if expr.get("operator") in ("In", "NotIn") and len(as_list(expr.get("values"))) != 1:
            errs.append(required(f"{at}.values", "must be only one value when `operator` is 'In' or 'NotIn' for "
                                                 "node field selector"))
    return errs


def _pod_affinity(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, term in enumerate(dict_items(spec.get("requiredDuringSchedulingIgnoredDuringExecution"))):
        errs += _pod_affinity_term(term, f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]")
    for i, weighted in enumerate(dict_items(spec.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        at = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        errs += _weight(weighted, at)
        errs += _pod_affinity_term(as_dict(weighted.get("podAffinityTerm")), f"{at}.podAffinityTerm")
    return errs


def _pod_affinity_term(term: dict[str, Any], path: str) -> list[FieldError]:
    errs = validate_label_selector(term.get("labelSelector"), f"{path}.labelSelector")
    errs += validate_label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for name in as_list(term.get("namespaces")):
        errs += [invalid_value(f"{path}.namespace", name, m) for m in names.is_dns1123_label(str(name))]
    key = term.get("topologyKey") or ""
    if not key:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    else:
        errs += validate_label_name(key, f"{path}.topologyKey")
    return errs

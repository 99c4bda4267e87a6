"""rbac.authorization.k8s.io/v1: Roles, ClusterRoles and their bindings.

RBAC names only need to fit in a URL path segment (so `system:controller:...` is fine). A rule lists verbs
and either API groups plus resources or, for ClusterRoles only, non-resource URLs. A binding's `roleRef` can
never change: granting different permissions means a new binding, so that nobody can silently re-point a
binding others rely on.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, not_supported, required
from minikube_py.api.validation.messages import (
    as_dict,
    as_list,
    dict_items,
    go_string_slice,
    go_struct,
    invalid_go,
    invalid_value,
)
from minikube_py.api.validation.meta import validate_label_selector

RBAC_GROUP = "rbac.authorization.k8s.io"


def _rule(rule: dict[str, Any], namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not as_list(rule.get("verbs")):
        errs.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = as_list(rule.get("nonResourceURLs"))
    if urls:
        shown = go_string_slice(urls)
        if namespaced:
            errs.append(invalid_go(f"{path}.nonResourceURLs", shown, "namespaced rules cannot apply to non-resource "
                                                                     "URLs"))
        if any(as_list(rule.get(k)) for k in ("apiGroups", "resources", "resourceNames")):
            errs.append(invalid_go(f"{path}.nonResourceURLs", shown, "rules cannot apply to both regular resources "
                                                                     "and non-resource URLs"))
        return errs
    if not as_list(rule.get("apiGroups")):
        errs.append(required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not as_list(rule.get("resources")):
        errs.append(required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errs


def role(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(dict_items(obj.get("rules"))):
        errs += _rule(rule, True, f"rules[{i}]")
    return errs


def cluster_role(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(dict_items(obj.get("rules"))):
        errs += _rule(rule, False, f"rules[{i}]")
    aggregation = obj.get("aggregationRule")
    if isinstance(aggregation, dict):
        selectors = dict_items(aggregation.get("clusterRoleSelectors"))
        if not selectors:
            errs.append(required("aggregationRule.clusterRoleSelectors", "at least one clusterRoleSelector required "
                                                                         "if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors):
            errs += validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]")
    return errs


def _binding(obj: dict[str, Any], kinds: list[str], namespaced: bool) -> list[FieldError]:
    ref = as_dict(obj.get("roleRef"))
    errs: list[FieldError] = []
    if ref.get("apiGroup") != RBAC_GROUP:
        errs.append(not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [RBAC_GROUP]))
    if ref.get("kind") not in kinds:
        errs.append(not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    name = ref.get("name")
    if not name:
        errs.append(required("roleRef.name"))
    else:
        errs += [invalid_value("roleRef.name", name, m) for m in names.is_valid_path_segment_name(str(name))]
    for i, subject in enumerate(dict_items(obj.get("subjects"))):
        errs += _subject(subject, namespaced, f"subjects[{i}]")
    return errs


def _subject(subject: dict[str, Any], namespaced: bool, path: str) -> list[FieldError]:
    name, group, kind = subject.get("name") or "", subject.get("apiGroup") or "", subject.get("kind") or ""
    errs = [] if name else [required(f"{path}.name")]
    if kind == "ServiceAccount":
        if name:
            errs += [invalid_value(f"{path}.name", name, m) for m in names.name_is_dns_subdomain(str(name))]
        if group:
            errs.append(not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            errs.append(not_supported(f"{path}.apiGroup", group, [RBAC_GROUP]))
    else:
        errs.append(not_supported(f"{path}.kind", kind, ["ServiceAccount", "User", "Group"]))
    return errs


def role_binding(obj: dict[str, Any]) -> list[FieldError]:
    return _binding(obj, ["Role", "ClusterRole"], namespaced=True)


def cluster_role_binding(obj: dict[str, Any]) -> list[FieldError]:
    return _binding(obj, ["ClusterRole"], namespaced=False)


def _role_ref_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    ref = as_dict(new.get("roleRef"))
    if ref == as_dict(old.get("roleRef")):
        return []
    shown = go_struct("rbac.RoleRef", {"APIGroup": ref.get("apiGroup", ""), "Kind": ref.get("kind", ""),
                                       "Name": ref.get("name", "")})
    return [invalid_go("roleRef", shown, "cannot change roleRef")]


def role_binding_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return role_binding(new) + _role_ref_update(new, old)


def cluster_role_binding_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return cluster_role_binding(new) + _role_ref_update(new, old)

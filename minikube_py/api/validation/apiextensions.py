"""CustomResourceDefinitions (apiextensions.k8s.io/v1).

A CRD's name is derived, not chosen: it must be `<spec.names.plural>.<spec.group>`, because it names the new
REST resource. Exactly one version is the storage version, every version needs a schema, and the names must
be usable in URLs and as kinds. Once created, the group and plural (the resource's identity) never change,
and neither may the scope or kind once the CRD is established and objects may exist. Status (`storedVersions`)
is set by `defaults.prepare_for_create` before this runs, as kube's registry does.
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
    immutable,
    invalid_go,
    invalid_value,
)

_VERSIONS_REPR = "[]apiextensions.CustomResourceDefinitionVersion{...}"


def crd_name_rule(obj: dict[str, Any]) -> names.NameRule:
    """The CRD's name rule: a DNS subdomain equal to `plural.group`."""
    spec = as_dict(obj.get("spec"))
    expected = f"{as_dict(spec.get('names')).get('plural', '')}.{spec.get('group', '')}"

    def rule(name: str, prefix: bool) -> list[str]:
        problems = names.name_is_dns_subdomain(name, prefix)
        return problems + ([] if name == expected else ['must be spec.names.plural+"."+spec.group'])

    return rule


def custom_resource_definition(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs = _group(str(spec.get("group") or ""))
    scope = spec.get("scope")
    if not scope:
        errs.append(required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    errs += _versions(dict_items(spec.get("versions")))
    errs += _names(as_dict(spec.get("names")))
    conversion = as_dict(spec.get("conversion"))
    if conversion.get("strategy") not in (None, "None", "Webhook"):
        errs.append(not_supported("spec.conversion.strategy", conversion["strategy"], ["None", "Webhook"]))
    if not dict_items(spec.get("versions")):
        errs.append(required("spec.versions", "must have at least one version"))
    return errs + _stored_versions(obj)


def _group(group: str) -> list[FieldError]:
    if not group:
        return [required("spec.group")]
    problems = names.is_dns1123_subdomain(group)
    if problems:
        return [invalid_value("spec.group", group, ",".join(problems))]
    if "." not in group:
        return [invalid_value("spec.group", group, "should be a domain with at least one dot")]
    return []


def _versions(versions: list[dict[str, Any]]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[Any] = set()
    unique = True
    for i, version in enumerate(versions):
        name = str(version.get("name") or "")
        unique = unique and name not in seen
        seen.add(name)
        problems = names.is_dns1035_label(name)
        if problems:
            errs.append(invalid_value(f"spec.versions[{i}].name", name, ",".join(problems)))
        schema = as_dict(version.get("schema")).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            errs.append(required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"))
        else:
            # imported here: crdschema itself builds on this validation package's helpers
            from minikube_py.api.crdschema import structural_errors

            errs += structural_errors(schema, f"spec.versions[{i}].schema.openAPIV3Schema",
                                      status_subresource="status" in as_dict(version.get("subresources")))
    if not unique:
        errs.append(invalid_go("spec.versions", _VERSIONS_REPR, "must contain unique version names"))
    if sum(1 for v in versions if v.get("storage") is True) != 1:
        errs.append(invalid_go("spec.versions", _VERSIONS_REPR, "must have exactly one version marked as storage "
                                                                "version"))
    return errs


def _names(crd_names: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("plural", "singular"):
        value = str(crd_names.get(key) or "")
        problems = names.is_dns1035_label(value) if value else []
        if problems:
            errs.append(invalid_value(f"spec.names.{key}", value, ",".join(problems)))
    for key in ("kind", "listKind"):
        value = str(crd_names.get(key) or "")
        problems = names.is_dns1035_label(value.lower()) if value else []
        if problems:
            errs.append(invalid_value(f"spec.names.{key}", value, "may have mixed case, but should otherwise match: "
                                                                  + ",".join(problems)))
    for key in ("shortNames", "categories"):
        for i, value in enumerate(as_list(crd_names.get(key))):
            problems = names.is_dns1035_label(str(value))
            if problems:
                errs.append(invalid_value(f"spec.names.{key}[{i}]", value, ",".join(problems)))
    if crd_names.get("kind") and crd_names.get("kind") == crd_names.get("listKind"):
        errs.append(invalid_value("spec.names.listKind", crd_names["listKind"], "kind and listKind may not be the "
                                                                                "same"))
    errs += [required(f"spec.names.{key}") for key in ("plural", "singular", "kind", "listKind")
             if not crd_names.get(key)]
    return errs


def _stored_versions(obj: dict[str, Any]) -> list[FieldError]:
    stored = [str(v) for v in as_list(as_dict(obj.get("status")).get("storedVersions"))]
    versions = dict_items(as_dict(obj.get("spec")).get("versions"))
    if not stored:
        return [invalid_go("status.storedVersions", go_string_slice(stored), "must have at least one stored "
                                                                             "version")]
    declared = {v.get("name") for v in versions}
    errs = [invalid_value(f"status.storedVersions[{i}]", v, "must appear in spec.versions")
            for i, v in enumerate(stored) if v not in declared]
    storage = next((v.get("name") for v in versions if v.get("storage") is True), None)
    if storage is not None and storage not in stored:
        errs.append(invalid_go("status.storedVersions", go_string_slice(stored), f"must have the storage version "
                                                                                 f"{storage}"))
    return errs


def _established(obj: dict[str, Any]) -> bool:
    conditions = dict_items(as_dict(obj.get("status")).get("conditions"))
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def custom_resource_definition_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = custom_resource_definition(new)
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    pairs = [("spec.group", new_spec.get("group"), old_spec.get("group")),
             ("spec.names.plural", as_dict(new_spec.get("names")).get("plural"),
              as_dict(old_spec.get("names")).get("plural"))]
    if _established(old):
        pairs = [("spec.scope", new_spec.get("scope"), old_spec.get("scope")),
                 ("spec.names.kind", as_dict(new_spec.get("names")).get("kind"),
                  as_dict(old_spec.get("names")).get("kind"))] + pairs
    for path, value, previous in pairs:
        errs += immutable(path, value, previous)
    return errs

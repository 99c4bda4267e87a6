"""The structural checks apiextensions-apiserver adds to schema validation, and ObjectMeta's own fields.

* `list_type_errors` — `listtype.ValidateListSetsAndMaps`: an `x-kubernetes-list-type: set` holds no value
  twice, a `map` list holds objects with unique `x-kubernetes-list-map-keys` (`Duplicate value: ...` on the
  second occurrence of each);
* `embedded_errors` — `objectmeta.Validate`: an `x-kubernetes-embedded-resource` object nested in a custom
  resource needs `apiVersion` and `kind` and a valid `metadata` (the root object's metadata is checked by
  the registry like any object's);
* `strip_unknown_meta` — what decoding into `metav1.ObjectMeta` and back does to `metadata`: unknown fields
  go, and their paths are reported (`metadata.foo`) for `fieldValidation`.

Field paths are built like Go's `field.Path`: `spec.items[0]`, `spec.byName[web]` for map entries.
"""

from __future__ import annotations

from typing import Any

from .. import names
from ..errors import FieldError
from ..validation.meta import validate_object_meta
from . import gofmt as go
from .model import Node

OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
})
OWNER_REFERENCE_FIELDS = frozenset({"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"})
MANAGED_FIELDS_ENTRY_FIELDS = frozenset({"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1",
                                         "subresource"})
_NESTED_META = {"ownerReferences": OWNER_REFERENCE_FIELDS, "managedFields": MANAGED_FIELDS_ENTRY_FIELDS}


# x-kubernetes-list-type ----------------------------------------------------------------------------------


def list_type_errors(node: Node, obj: Any, path: str | None = None) -> list[FieldError]:
    """`ValidateListSetsAndMaps(path, schema, obj)` for an object."""
    if not isinstance(obj, dict):
        return []
    errs: list[FieldError] = []
    if node.additional is not None:
        for k, v in obj.items():
            errs += _list_types_at(go.key(path, k), node.additional, v)
    if node.properties:
        for k, v in obj.items():
            if k in node.properties:
                errs += _list_types_at(go.child(path, k), node.properties[k], v)
    return errs


def _list_types_at(path: str, node: Node, value: Any) -> list[FieldError]:
    if isinstance(value, list):
        return _list_types_array(path, node, value)
    if isinstance(value, dict):
        return list_type_errors(node, value, path)
    return []


def _list_types_array(path: str, node: Node, items: list[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if node.list_type == "set":
        errs += [go.duplicate(go.index(path, i), items[i]) for i in _non_unique(items)]
    elif node.list_type == "map":
        errs += _list_map_errors(path, node, items)
    if node.items is not None:
        for i, item in enumerate(items):
            errs += _list_types_at(go.index(path, i), node.items, item)
    return errs


def _identity(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", go.go_json(value))
    return go.scalar_key(value)


def _non_unique(values: list[Any]) -> list[int]:
    """The index of the second occurrence of each value that occurs more than once."""
    seen: dict[Any, int] = {}
    found = []
    for i, value in enumerate(values):
        identity = _identity(value)
        seen[identity] = seen.get(identity, 0) + 1
        if seen[identity] == 2:
            found.append(i)
    return found


_UNSPECIFIED = ("unspecified", None)


def _list_map_errors(path: str, node: Node, items: list[Any]) -> list[FieldError]:
    for i, item in enumerate(items):
        if item is not None and not isinstance(item, dict):
            return [go.invalid(go.index(path, i), item, "must be an object for an array of list-type map")]
    if len(items) <= 1:
        return []
    keys = node.list_map_keys
    if len(keys) == 1:
        field = keys[0]
        values = [item[field] if isinstance(item, dict) and field in item else _UNSPECIFIED for item in items]
        identities = [_UNSPECIFIED if v is _UNSPECIFIED else _identity(v) for v in values]
        return [go.duplicate(go.index(path, i), {} if values[i] is _UNSPECIFIED else {field: values[i]})
                for i in _non_unique_identities(identities)]
    composite = [{k: item[k] for k in keys if k in item} if isinstance(item, dict) else {} for item in items]
    return [go.duplicate(go.index(path, i), composite[i]) for i in _non_unique(composite)]


def _non_unique_identities(identities: list[Any]) -> list[int]:
    seen: dict[Any, int] = {}
    found = []
    for i, identity in enumerate(identities):
        seen[identity] = seen.get(identity, 0) + 1
        if seen[identity] == 2:
            found.append(i)
    return found


# x-kubernetes-embedded-resource --------------------------------------------------------------------------


def embedded_errors(node: Node | None, value: Any, path: str | None = None,
                    resource_root: bool = False) -> list[FieldError]:
    """`objectmeta.Validate(path, value, schema, isResourceRoot)`; the root object's metadata is left to the
    registry (kube passes isResourceRoot=false for custom resources)."""
    if node is None:
        return []
    errs: list[FieldError] = []
    if isinstance(value, dict):
        if node.embedded or resource_root:
            errs += _embedded_resource(path, value)
        for k, v in value.items():
            if k in node.properties:
                errs += embedded_errors(node.properties[k], v, go.child(path, k))
            elif node.has_additional:
                errs += embedded_errors(node.additional, v, go.key(path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            errs += embedded_errors(node.items, v, go.index(path, i))
    return errs


def _embedded_resource(path: str | None, obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if "apiVersion" not in obj:
        errs.append(go.required(go.child(path, "apiVersion"), "must not be empty"))
    if "kind" not in obj:
        errs.append(go.required(go.child(path, "kind"), "must not be empty"))
    for k, v in obj.items():
        where = go.child(path, k)
        if k == "apiVersion":
            if not isinstance(v, str):
                errs.append(go.invalid(where, v, "must be a string"))
            elif not v:
                errs.append(go.invalid(where, v, "must not be empty"))
            elif v.count("/") > 1:
                errs.append(go.invalid(where, v, f"unexpected GroupVersion string: {v}"))
        elif k == "kind":
            if not isinstance(v, str):
                errs.append(go.invalid(where, v, "must be a string"))
            elif not v:
                errs.append(go.invalid(where, v, "must not be empty"))
            else:
                problems = names.is_dns1035_label(v.lower())
                if problems:
                    errs.append(go.invalid(where, v, "may have mixed case, but should otherwise match: "
                                           + ",".join(problems)))
        elif k == "metadata":
            problem = object_meta_decode_error(v)
            if problem:
                errs.append(go.invalid(where, v, problem))
            else:
                meta = dict(v) if isinstance(v, dict) else {}
                if not meta.get("name"):
                    meta["name"] = "fakename"  # kube sets one to avoid an error
                errs += validate_object_meta(meta, bool(meta.get("namespace")), names.name_is_path_segment,
                                             where, kube_finalizers=False)
    return errs


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if go.is_number(value):
        return "number"
    return "array" if isinstance(value, list) else "object"


def object_meta_decode_error(meta: Any) -> str | None:
    """The error of decoding `meta` into `metav1.ObjectMeta` (Go's encoding/json wording), or None."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return f"json: cannot unmarshal {_json_kind(meta)} into Go value of type v1.ObjectMeta"

    def wrong(field: str, value: Any, go_type: str) -> str:
        shown = _json_kind(value)
        if shown == "number" and go_type == "int64":
            shown = f"number {go.go_number(value)}"
        return f"json: cannot unmarshal {shown} into Go struct field ObjectMeta.{field} of type {go_type}"

    for field, value in meta.items():
        if value is None or field not in OBJECT_META_FIELDS:
            continue
        if field in ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
                     "creationTimestamp", "deletionTimestamp"):
            if not isinstance(value, str):
                return wrong(field, value, "string")
        elif field in ("generation", "deletionGracePeriodSeconds"):
            if not go.is_int(value):
                return wrong(field, value, "int64")
        elif field in ("labels", "annotations"):
            if not isinstance(value, dict):
                return wrong(field, value, "map[string]string")
            for item in value.values():
                if item is not None and not isinstance(item, str):
                    return wrong(field, item, "string")
        elif field == "finalizers":
            if not isinstance(value, list):
                return wrong(field, value, "[]string")
            for item in value:
                if item is not None and not isinstance(item, str):
                    return wrong(field, item, "string")
        elif not isinstance(value, list):
            return wrong(field, value, f"[]v1.{'OwnerReference' if field == 'ownerReferences' else 'ManagedFieldsEntry'}")
    return None


# ObjectMeta's unknown fields -----------------------------------------------------------------------------


def strip_unknown_meta(meta: Any, prefix: str) -> list[str]:
    """Drop the keys of `meta` that `metav1.ObjectMeta` has no field for; return their paths."""
    if not isinstance(meta, dict):
        return []
    unknown: list[str] = []
    for k in list(meta):
        if k not in OBJECT_META_FIELDS:
            del meta[k]
            unknown.append(f"{prefix}.{k}")
        elif k in _NESTED_META and isinstance(meta[k], list):
            for i, entry in enumerate(meta[k]):
                if isinstance(entry, dict):
                    for field in [f for f in entry if f not in _NESTED_META[k]]:
                        del entry[field]
                        unknown.append(f"{prefix}.{k}[{i}].{field}")
    return unknown

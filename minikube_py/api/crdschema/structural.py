"""Is a CRD version's `openAPIV3Schema` acceptable? apiextensions-apiserver 1.32's checks, in its order.

`structural_errors(schema, path)` returns what `validateCustomResourceDefinitionValidation` reports for one
version (CEL rules are only checked for their static shape, not compiled):

1. with the status subresource, the root may only hold some keywords (`type` must be `object`);
2. `nullable` is forbidden at the root;
3. the schema must be *structural* (`schema.ValidateStructural`), errors sorted by their text as kube does:
   every node specifies its `type` (unless `x-kubernetes-int-or-string` or
   `x-kubernetes-preserve-unknown-fields`), arrays specify `items`, no `additionalProperties` at the root,
   `metadata` at the root may only restrict `name` and `generateName`, `allOf`/`anyOf`/`oneOf`/`not` only
   add value validations to fields the schema already specifies (no `type`, `description`, `default`,
   `nullable`, `additionalProperties`, extensions or `metadata` inside them);
4. only when the schema is structural: every `default` validates against its own schema and has no fields
   that pruning would drop (`structuraldefaulting.ValidateDefaults`);
5. the OpenAPI checks (`ValidateCustomResourceDefinitionOpenAPISchema`): supported types, no `$ref`, `id`,
   `patternProperties`, `dependencies`, `definitions`, `additionalItems`, array `items` or `uniqueItems`;
   `properties` and `additionalProperties` exclude each other; no defaults in top-level `metadata`,
   `apiVersion` and `kind`; consistent `x-kubernetes-list-type`/`-list-map-keys`/`-map-type`;
6. a schema kube cannot even convert (`NewStructural` fails, e.g. on `$schema`) reports that alone, and only
   when nothing else was found.

Field paths follow `field.Path`: `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ..errors import FieldError
from . import gofmt as go
from . import openapi
from .checks import embedded_errors, object_meta_decode_error
from .model import compile_node
from .pruning import META_FIELDS, prune_value
from .re2 import go_compile_error

OPENAPI_V3_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
VALIDATION_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]
ROOT, ITEM, FIELD = 0, 1, 2
_EMPTY_TYPE = {ROOT: "must not be empty at the root", ITEM: "must not be empty for specified array items",
               FIELD: "must not be empty for specified object fields"}

# JSONSchemaProps' fields in Go's order, with their JSON names, and those allowed at the root with status
_GO_FIELDS = [
    ("id", "ID"), ("$schema", "Schema"), ("$ref", "Ref"), ("description", "Description"), ("type", "Type"),
    ("nullable", "Nullable"), ("format", "Format"), ("title", "Title"), ("default", "Default"),
    ("maximum", "Maximum"), ("exclusiveMaximum", "ExclusiveMaximum"), ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"), ("maxLength", "MaxLength"), ("minLength", "MinLength"),
    ("pattern", "Pattern"), ("maxItems", "MaxItems"), ("minItems", "MinItems"), ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"), ("enum", "Enum"), ("maxProperties", "MaxProperties"),
    ("minProperties", "MinProperties"), ("required", "Required"), ("items", "Items"), ("allOf", "AllOf"),
    ("oneOf", "OneOf"), ("anyOf", "AnyOf"), ("not", "Not"), ("properties", "Properties"),
    ("additionalProperties", "AdditionalProperties"), ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"), ("additionalItems", "AdditionalItems"), ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"), ("example", "Example"),
    ("x-kubernetes-preserve-unknown-fields", "XPreserveUnknownFields"),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"), ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"), ("x-kubernetes-list-type", "XListType"),
    ("x-kubernetes-map-type", "XMapType"), ("x-kubernetes-validations", "XValidations"),
]
KEYWORDS = frozenset(k for k, _ in _GO_FIELDS)  # what JSONSchemaProps has (decoding drops anything else)
ALLOWED_AT_ROOT_WITH_STATUS = ["Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
                               "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
                               "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs",
                               "Example", "XPreserveUnknownFields", "XValidations"]


def structural_errors(schema: dict[str, Any], path: str, *, status_subresource: bool = False) -> list[FieldError]:
    """The errors kube reports for one CRD version's `openAPIV3Schema` found at `path`
    (`spec.versions[0].schema.openAPIV3Schema`); [] when it is acceptable."""
    if not isinstance(schema, dict):
        return []
    errs: list[FieldError] = []
    if status_subresource:
        errs += _status_root(schema, path)
    if schema.get("nullable") is True:
        errs.append(go.forbidden(f"{path}.nullable", "nullable cannot be true at the root"))
    init_error = _conversion_error(schema)
    if init_error is None:
        found = _invariants(schema, ROOT, path) + _completeness(schema, path)
        found.sort(key=lambda e: e.describe())
        errs += found if found else _defaults(schema, path, inside_meta=False, resource_root=True)
    errs += _openapi(schema, path, _Context(), is_root=True)
    if not errs and init_error:
        errs.append(go.invalid(path, "", init_error))
    return errs


# helpers over raw schema dicts ---------------------------------------------------------------------------


def _type(d: Any) -> str:
    t = d.get("type") if isinstance(d, dict) else None
    return t if isinstance(t, str) else ""


def _props(d: dict[str, Any]) -> dict[str, dict[str, Any]]:
    props = d.get("properties")
    return {str(k): v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}


def _items(d: dict[str, Any]) -> dict[str, Any] | None:
    items = d.get("items")
    return items if isinstance(items, dict) else None


def _subs(d: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = d.get(key)
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def _flag(d: dict[str, Any], key: str) -> bool:
    return d.get(key) is True


def _set(value: Any) -> bool:
    """Non-zero the way Go sees the converted field (False, "", null and empty containers are zero)."""
    return value is not None and value is not False and value != "" and value != [] and value != {}


def _prop_path(path: str, name: str) -> str:
    return f"{path}.properties[{name}]"


# NewStructural -------------------------------------------------------------------------------------------


_UNSUPPORTED = [("id", "id"), ("$schema", "schema"), ("$ref", "$ref"), ("patternProperties", "patternProperties"),
                ("dependencies", "dependencies"), ("additionalItems", "additionalItems"),
                ("definitions", "definitions")]


def _conversion_error(d: dict[str, Any]) -> str | None:
    """Why `NewStructural` can't convert the schema (then kube skips the structural checks)."""
    for key, name in _UNSUPPORTED:
        value = d.get(key)
        if (key == "additionalItems" and value is not None) or (key != "additionalItems" and _set(value)):
            return f"OpenAPIV3Schema '{name}' is not supported"
    nested = [d["not"]] if isinstance(d.get("not"), dict) else []
    nested += _subs(d, "allOf") + _subs(d, "anyOf") + _subs(d, "oneOf")
    for sub in nested:
        found = _conversion_error(sub)
        if found:
            return found
    if d.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    if isinstance(d.get("items"), list) and d["items"]:
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    children = ([_items(d)] if _items(d) else []) + list(_props(d).values())
    if isinstance(d.get("additionalProperties"), dict):
        children.append(d["additionalProperties"])
    for child in children:
        found = _conversion_error(child)
        if found:
            return found
    return None


# ValidateStructural --------------------------------------------------------------------------------------


def _bare(d: Any, type_name: str) -> bool:
    return isinstance(d, dict) and d.get("type") == type_name and not any(
        _set(v) for k, v in d.items() if k in KEYWORDS and k not in ("type", "example", "externalDocs"))


def _int_or_string_any_of(d: dict[str, Any]) -> bool:
    any_of = d.get("anyOf")
    return isinstance(any_of, list) and len(any_of) == 2 and _bare(any_of[0], "integer") and _bare(any_of[1], "string")


def _int_or_string_all_of(d: dict[str, Any]) -> bool:
    all_of = d.get("allOf")
    return isinstance(all_of, list) and len(all_of) >= 1 and isinstance(all_of[0], dict) \
        and _int_or_string_any_of(all_of[0])


def _invariants(d: dict[str, Any], level: int, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    t = _type(d)
    items = _items(d)
    if t == "array" and items is None:
        errs.append(go.required(f"{path}.items", "must be specified"))
    if items is not None:
        errs += _invariants(items, ITEM, f"{path}.items")
    props = _props(d)
    for name, prop in props.items():
        errs += _invariants(prop, FIELD, _prop_path(path, name))
    additional = d.get("additionalProperties")
    if isinstance(additional, dict | bool):
        if level == ROOT:
            errs.append(go.forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(additional, dict):
            errs += _invariants(additional, FIELD, f"{path}.additionalProperties")
    int_or_string = _flag(d, "x-kubernetes-int-or-string")
    preserve = _flag(d, "x-kubernetes-preserve-unknown-fields")
    embedded = _flag(d, "x-kubernetes-embedded-resource")
    if int_or_string and preserve:
        errs.append(go.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", True,
                               "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        errs.append(go.invalid(f"{path}.x-kubernetes-embedded-resource", True,
                               "must be false if x-kubernetes-int-or-string is true"))
    errs += _value_validation(d, _int_or_string_any_of(d), _int_or_string_all_of(d), level, path)
    check_metadata = level == ROOT or embedded
    if embedded and t != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        errs.append(go.required(f"{path}.type", detail) if not t else go.invalid(f"{path}.type", t, detail))
    elif not t and not int_or_string and not preserve:
        errs.append(go.required(f"{path}.type", _EMPTY_TYPE[level]))
    if embedded and isinstance(additional, dict | bool):
        errs.append(go.forbidden(f"{path}.additionalProperties",
                                 "must not be used if x-kubernetes-embedded-resource is set"))
    if level == ROOT and t and t != "object":
        errs.append(go.invalid(f"{path}.type", t, "must be object at the root"))
    for meta_string in ("kind", "apiVersion"):
        if meta_string in props and check_metadata and _type(props[meta_string]) != "string":
            errs.append(go.invalid(f"{_prop_path(path, meta_string)}.type", _type(props[meta_string]),
                                   "must be string"))
    if "metadata" in props:
        errs += _metadata_invariants(props["metadata"], check_metadata, level, _prop_path(path, "metadata"))
    if embedded and not preserve and not props:
        errs.append(go.required(f"{path}.properties", "must not be empty if x-kubernetes-embedded-resource is "
                                                      "true without x-kubernetes-preserve-unknown-fields"))
    return errs


def _metadata_invariants(d: dict[str, Any], check_metadata: bool, level: int, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if check_metadata and _type(d) != "object":
        errs.append(go.invalid(f"{path}.type", _type(d), "must be object"))
    if level == ROOT:
        props = set(_props(d))
        restricted = props <= {"name", "generateName"}
        rest = {k: v for k, v in d.items() if k in KEYWORDS and k not in ("type", "default", "example",
                                                                          "externalDocs")
                and not (k == "properties" and restricted)}
        if any(_set(v) for v in rest.values()):
            errs.append(go.forbidden(path, "must not specify anything other than name and generateName, but "
                                           "metadata is implicitly specified"))
    return errs


def _value_validation(d: dict[str, Any], skip_any_of: bool, skip_first_all_of_any_of: bool, level: int,
                      path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not skip_any_of:
        for i, sub in enumerate(_subs(d, "anyOf")):
            errs += _nested(sub, False, level, f"{path}.anyOf[{i}]")
    for i, sub in enumerate(_subs(d, "allOf")):
        errs += _nested(sub, skip_first_all_of_any_of and i == 0, level, f"{path}.allOf[{i}]")
    for i, sub in enumerate(_subs(d, "oneOf")):
        errs += _nested(sub, False, level, f"{path}.oneOf[{i}]")
    if isinstance(d.get("not"), dict):
        errs += _nested(d["not"], False, level, f"{path}.not")
    pattern = d.get("pattern")
    if isinstance(pattern, str) and pattern:
        problem = go_compile_error(pattern)
        if problem:
            errs.append(go.invalid(f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: "
                                                               f"{problem}"))
    return errs


_NESTED_FORBIDDEN = [
    ("type", "must be empty to be structural"), ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"), ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"), ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
]


def _nested(d: dict[str, Any], skip_any_of: bool, level: int, path: str) -> list[FieldError]:
    """`validateNestedValueValidation`: what allOf/anyOf/oneOf/not may not say."""
    errs = _value_validation(d, skip_any_of, False, level, path)
    items = _items(d)
    if items is not None:
        errs += _nested(items, False, level, f"{path}.items")
    props = _props(d)
    for name, prop in props.items():
        errs += _nested(prop, False, FIELD, _prop_path(path, name))
    for key, detail in _NESTED_FORBIDDEN:
        value = d.get(key)
        present = {"additionalProperties": isinstance(value, dict) or value is True,
                   "default": value is not None,
                   "x-kubernetes-list-type": isinstance(value, str),
                   "x-kubernetes-map-type": isinstance(value, str)}.get(key, _set(value))
        if present:
            errs.append(go.forbidden(f"{path}.{key}", detail))
    if "metadata" in props:
        errs.append(go.forbidden(_prop_path(path, "metadata"), "must not be specified in a nested context"))
    return errs


def _completeness(d: dict[str, Any], path: str) -> list[FieldError]:
    """`validateStructuralCompleteness`: what the root's allOf/anyOf/oneOf/not name must exist in the schema."""
    return _value_validation_completeness(d, d, path, path)


def _value_validation_completeness(v: dict[str, Any], s: dict[str, Any], s_path: str,
                                   v_path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if isinstance(v.get("not"), dict):
        errs += _nested_completeness(v["not"], s, s_path, f"{v_path}.not")
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(_subs(v, key)):
            errs += _nested_completeness(sub, s, s_path, f"{v_path}.{key}[{i}]")
    return errs


def _nested_completeness(v: dict[str, Any], s: dict[str, Any] | None, s_path: str,
                         v_path: str) -> list[FieldError]:
    if s is None:
        return [go.required(s_path, f"because it is defined in {v_path}")]
    errs = _value_validation_completeness(v, s, s_path, v_path)
    if _items(v) is not None:
        errs += _nested_completeness(_items(v), _items(s), f"{s_path}.items", f"{v_path}.items")  # type: ignore[arg-type]
    s_props = _props(s)
    for name, prop in _props(v).items():
        if name not in s_props:
            errs.append(go.required(_prop_path(s_path, name), f"because it is defined in {_prop_path(v_path, name)}"))
        else:
            errs += _nested_completeness(prop, s_props[name], _prop_path(s_path, name), _prop_path(v_path, name))
    return errs


# ValidateDefaults ----------------------------------------------------------------------------------------


def _defaults(d: dict[str, Any], path: str, inside_meta: bool, resource_root: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    embedded = resource_root or _flag(d, "x-kubernetes-embedded-resource")
    if embedded:
        inside_meta = False
    default = d.get("default")
    if default is not None:
        node = compile_node(d, for_defaults=True)
        where = f"{path}.default"
        if inside_meta:
            errs += openapi.to_field_errors(where, openapi.validate(node, default, "", None))
        else:
            pruned = copy.deepcopy(default)
            prune_value(pruned, node, [], [], embedded=embedded)
            if not go.go_deep_equal(pruned, default):
                errs.append(go.invalid(where, default, "must not have unknown fields"))
            coerce = _coerce_error(default, node, where, embedded)
            if coerce is not None:
                errs.append(coerce)
            else:
                meta_errs = embedded_errors(node, default, where, resource_root=embedded)
                errs += meta_errs or openapi.to_field_errors(where, openapi.validate(node, default, "", None))
    items = _items(d)
    if items is not None:
        errs += _defaults(items, f"{path}.items", inside_meta)
    for name, prop in _props(d).items():
        errs += _defaults(prop, _prop_path(path, name), inside_meta or (embedded and name in META_FIELDS))
    return errs


def _coerce_error(value: Any, node: Any, path: str, embedded: bool) -> FieldError | None:
    """`objectmeta.Coerce` without dropping: apiVersion and kind of embedded resources must be strings and their
    metadata must decode."""
    if node is None:
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if embedded or node.embedded:
                if k in ("apiVersion", "kind") and not isinstance(v, str):
                    return go.invalid(go.child(path, k), v, "must be a string")
                if k == "metadata":
                    problem = object_meta_decode_error(v)
                    if problem:
                        return go.invalid(go.child(path, "metadata"), v, problem)
            if k in node.properties:
                found = _coerce_error(v, node.properties[k], go.child(path, k), False)
            elif node.has_additional:
                found = _coerce_error(v, node.additional, go.key(path, k), False)
            else:
                found = None
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _coerce_error(item, node.items, go.index(path, i), False)
            if found is not None:
                return found
    return None


# ValidateCustomResourceDefinitionOpenAPISchema -----------------------------------------------------------


class _Context:
    """`specStandardValidatorV3`'s state along the walk."""

    __slots__ = ("allow_defaults", "reason", "inside_meta")

    def __init__(self, allow_defaults: bool = True, reason: str = "", inside_meta: bool = False) -> None:
        self.allow_defaults, self.reason, self.inside_meta = allow_defaults, reason, inside_meta

    def without_defaults(self, reason: str) -> _Context:
        return _Context(False, reason, self.inside_meta)

    def in_meta(self) -> _Context:
        return _Context(self.allow_defaults, self.reason, True)


def _standard(d: dict[str, Any], path: str, ctx: _Context) -> list[FieldError]:
    errs: list[FieldError] = []
    t = _type(d)
    if t and t not in OPENAPI_V3_TYPES:
        errs.append(go.not_supported(f"{path}.type", t, OPENAPI_V3_TYPES))
    if d.get("default") is not None and not ctx.allow_defaults:
        errs.append(go.forbidden(f"{path}.default", "must not be set" + (f" {ctx.reason}" if ctx.reason else "")))
    if _set(d.get("id")):
        errs.append(go.forbidden(f"{path}.id", "id is not supported"))
    if d.get("additionalItems") is not None:
        errs.append(go.forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if _set(d.get("patternProperties")):
        errs.append(go.forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if _set(d.get("definitions")):
        errs.append(go.forbidden(f"{path}.definitions", "definitions is not supported"))
    if d.get("dependencies") is not None:
        errs.append(go.forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if d.get("$ref") is not None:
        errs.append(go.forbidden(f"{path}.$ref", "$ref is not supported"))
    if t == "null":
        errs.append(go.forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(d.get("items"), list) and d["items"]:
        errs.append(go.forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if ctx.inside_meta and _flag(d, "x-kubernetes-embedded-resource"):
        errs.append(go.forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"))
    return errs


def _openapi(d: dict[str, Any], path: str, ctx: _Context, is_root: bool) -> list[FieldError]:
    errs = _standard(d, path, ctx)
    if d.get("uniqueItems") is True:
        errs.append(go.forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true since the runtime "
                                                        "complexity becomes quadratic"))
    props = _props(d)
    additional = d.get("additionalProperties")
    if isinstance(additional, dict | bool):
        if props and (additional is False or isinstance(additional, dict)):
            errs.append(go.forbidden(f"{path}.additionalProperties",
                                     "additionalProperties and properties are mutual exclusive"))
        sub = ctx.without_defaults("inside additionalProperties applying to object metadata") \
            if ctx.inside_meta else ctx
        if isinstance(additional, dict):
            errs += _openapi(additional, f"{path}.additionalProperties", sub, False)
    for name, prop in props.items():
        sub = ctx
        if (is_root or _flag(d, "x-kubernetes-embedded-resource")) and name in META_FIELDS:
            sub = sub.in_meta()
            if is_root:
                sub = sub.without_defaults(f"in top-level {name}")
        errs += _openapi(prop, _prop_path(path, name), sub, False)
    if isinstance(d.get("not"), dict):
        errs += _openapi(d["not"], f"{path}.not", ctx, False)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, sub_schema in enumerate(_subs(d, key)):
            errs += _openapi(sub_schema, f"{path}.{key}[{i}]", ctx, False)
    definitions = d.get("definitions")
    if isinstance(definitions, dict):
        for name, sub_schema in definitions.items():
            if isinstance(sub_schema, dict):
                errs += _openapi(sub_schema, f"{path}.definitions[{name}]", ctx, False)
    items = d.get("items")
    if isinstance(items, dict):
        errs += _openapi(items, f"{path}.items", ctx, False)
    elif isinstance(items, list):
        for i, sub_schema in enumerate(items):
            if isinstance(sub_schema, dict):
                errs += _openapi(sub_schema, f"{path}.items[{i}]", ctx, False)
    dependencies = d.get("dependencies")
    if isinstance(dependencies, dict):
        for name, dependency in dependencies.items():
            if isinstance(dependency, dict):
                errs += _openapi(dependency, f"{path}.dependencies[{name}]", ctx, False)
    if d.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(go.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"))
    errs += _extension_errors(d, path)
    errs += _map_list_keys_map_set(d, path)
    errs += _validation_rules(d, path)
    return errs


def _required_or_invalid(path: str, value: str, detail: str) -> FieldError:
    return go.required(path, detail) if not value else go.invalid(path, value, detail)


def _extension_errors(d: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    t = _type(d)
    map_type = d.get("x-kubernetes-map-type")
    if map_type is not None and t != "object":
        errs.append(_required_or_invalid(f"{path}.type", t, "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(go.not_supported(f"{path}.x-kubernetes-map-type", map_type, ["atomic", "granular"]))
    list_type = d.get("x-kubernetes-list-type")
    items = _items(d)
    if list_type is not None and t != "array":
        errs.append(_required_or_invalid(f"{path}.type", t, "must be array if x-kubernetes-list-type is specified"))
    elif list_type == "set" and items is not None:
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        item_list_type = items.get("x-kubernetes-list-type")
        if _type(items) == "array" and item_list_type is not None and item_list_type != "atomic":
            errs.append(go.invalid(f"{path}.items.x-kubernetes-list-type", item_list_type, detail))
        elif _type(items) == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # kube shows the items' list type here, not their map type
            errs.append(go.invalid(f"{path}.items.x-kubernetes-map-type", item_list_type, detail))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(go.not_supported(f"{path}.x-kubernetes-list-type", list_type, ["atomic", "set", "map"]))
    keys = d.get("x-kubernetes-list-map-keys")
    keys = [str(k) for k in keys] if isinstance(keys, list) else []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errs.append(go.required(f"{path}.x-kubernetes-list-type", detail))
        elif list_type != "map":
            errs.append(go.invalid(f"{path}.x-kubernetes-list-type", list_type, detail))
    if list_type == "map":
        if not keys:
            errs.append(go.required(f"{path}.x-kubernetes-list-map-keys",
                                    "must not be empty if x-kubernetes-list-type is map"))
        if d.get("items") is None:
            errs.append(go.required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
        if isinstance(d.get("items"), list):
            shown = go.GoRendered("&apiextensions.JSONSchemaPropsOrArray{Schema:(*apiextensions.JSONSchemaProps)(nil),"
                                  " JSONSchemas:[]apiextensions.JSONSchemaProps{...}}")
            errs.append(go.invalid(f"{path}.items", shown,
                                   "must only have a single schema if x-kubernetes-list-type is map"))
        if items is not None and _type(items) != "object":
            errs.append(go.invalid(f"{path}.items.type", _type(items),
                                   "must be object if parent array's x-kubernetes-list-type is map"))
        if items is not None and _type(items) == "object":
            item_props = _props(items)
            rendered = go.GoRendered(go.go_string_slice(keys))
            seen: set[str] = set()
            for k in keys:
                if k in item_props:
                    if _type(item_props[k]) in ("array", "object"):
                        # kube shows the items' type here, not the key's
                        errs.append(go.invalid(f"{path}.items.properties[{k}].type", _type(items),
                                               "must be a scalar type if parent array's x-kubernetes-list-type is map"))
                else:
                    errs.append(go.invalid(f"{path}.x-kubernetes-list-map-keys", rendered,
                                           "entries must all be names of item properties"))
                if k in seen:
                    errs.append(go.invalid(f"{path}.x-kubernetes-list-map-keys", rendered,
                                           "must not contain duplicate entries"))
                seen.add(k)
    return errs


def _map_list_keys_map_set(d: dict[str, Any], path: str) -> list[FieldError]:
    items = _items(d)
    list_type = d.get("x-kubernetes-list-type")
    if items is None or list_type not in ("set", "map"):
        return []
    errs: list[FieldError] = []
    if items.get("nullable") is True:
        errs.append(go.forbidden(f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is "
                                                           f"{list_type}"))
    if list_type == "map":
        required = items.get("required") if isinstance(items.get("required"), list) else []
        item_props = _props(items)
        keys = d.get("x-kubernetes-list-map-keys")
        for k in keys if isinstance(keys, list) else []:
            prop = item_props.get(str(k))
            if prop is None:
                continue
            where = f"{path}.items.properties[{k}]"
            if k not in required and prop.get("default") is None:
                errs.append(go.required(f"{where}.default", "this property is in x-kubernetes-list-map-keys, so it "
                                                            "must have a default or be a required property"))
            if prop.get("nullable") is True:
                errs.append(go.forbidden(f"{where}.nullable", "this property is in x-kubernetes-list-map-keys, so it "
                                                              "cannot be nullable"))
    return errs


_NEWLINES = re.compile(r"[\n\r]+")


def _validation_rules(d: dict[str, Any], path: str) -> list[FieldError]:
    """The static checks of `x-kubernetes-validations` (the CEL expressions themselves are not compiled)."""
    rules = d.get("x-kubernetes-validations")
    if not isinstance(rules, list):
        return []
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        rule = rule if isinstance(rule, dict) else {}
        base = f"{path}.x-kubernetes-validations[{i}]"
        text = rule.get("rule") if isinstance(rule.get("rule"), str) else ""
        message = rule.get("message") if isinstance(rule.get("message"), str) else ""
        expression = rule.get("messageExpression") if isinstance(rule.get("messageExpression"), str) else ""
        if not text.strip():
            errs.append(go.required(f"{base}.rule", "rule is not specified"))
        elif message and not message.strip():
            errs.append(go.invalid(f"{base}.message", message, "message must be non-empty if specified"))
        elif _NEWLINES.search(message.strip()):
            errs.append(go.invalid(f"{base}.message", message, "message must not contain line breaks"))
        elif _NEWLINES.search(text.strip()) and not message.strip():
            errs.append(go.required(f"{base}.message", "message must be specified if rule contains line breaks"))
        if expression and not expression.strip():
            errs.append(go.required(f"{base}.messageExpression", "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in VALIDATION_REASONS:
            errs.append(go.not_supported(f"{base}.reason", reason, VALIDATION_REASONS))
        field_path = rule.get("fieldPath") if isinstance(rule.get("fieldPath"), str) else ""
        if field_path and not field_path.strip():
            errs.append(go.invalid(f"{base}.fieldPath", field_path, "fieldPath must be non-empty if specified"))
        if _NEWLINES.search(field_path):
            errs.append(go.invalid(f"{base}.fieldPath", field_path, "fieldPath must not contain line breaks"))
    return errs


# the status subresource ----------------------------------------------------------------------------------


def _status_root(d: dict[str, Any], path: str) -> list[FieldError]:
    for key, go_name in _GO_FIELDS:
        value = d.get(key)
        zero = value is None or value is False or value == ""
        if zero:
            continue
        if go_name == "Type":
            if value != "object":
                return [go.invalid(f"{path}.type", value, 'only "object" is allowed as the type at the root of the '
                                                          'schema if the status subresource is enabled')]
            continue
        if go_name not in ALLOWED_AT_ROOT_WITH_STATUS:
            allowed = "[" + " ".join(ALLOWED_AT_ROOT_WITH_STATUS) + "]"
            return [go.invalid(path, go.GoRendered("apiextensions.JSONSchemaProps{...}"),
                               f"only {allowed} fields are allowed at the root of the schema if the status "
                               "subresource is enabled")]
    return []

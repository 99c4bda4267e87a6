"""Field trees: each kind's schema compiled once into the shape a typed decode checks a body against.

kube-apiserver decodes a request body into the kind's Go struct; which keys are known, which values fit,
and what the Go type of every field is come from that struct. Here the same facts come from the upstream
definitions (`api/schemas.py`), compiled per kind into a tree of `Node`s the first time the kind is checked:
a struct knows its fields by JSON name, a list or map its element, a scalar its Go type. References are
resolved at compile time (recursive types such as `JSONSchemaProps` become cycles in the tree), so a check
never looks anything up by name.

Usage rule: trees are shared and cached for the life of the process; never mutate one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from .. import schemas

# Node kinds, named after what the body must hold there.
STRUCT, LIST, MAP, ANY = "struct", "list", "map", "any"
STRING, BOOL, INT32, INT64, FLOAT, BYTES = "string", "bool", "int32", "int64", "float64", "bytes"
QUANTITY, INT_OR_STRING, TIME, MICRO_TIME = "quantity", "int-or-string", "time", "micro-time"

# Types whose Go code decodes the raw JSON itself, so nothing inside them is checked.
_RAW = frozenset({
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
})
_SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": QUANTITY,
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": INT_OR_STRING,
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": TIME,
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": MICRO_TIME,
}
_INTEGERS = {"int32": INT32, "int64": INT64}


@dataclass(eq=False)
class Node:
    """One place in a body: what it must hold (`kind`) and the Go type kube decodes it into."""

    kind: str
    go_type: str
    fields: dict[str, Node] = field(default_factory=dict)  # STRUCT: by JSON name
    element: Node | None = None  # LIST items, MAP values
    preserve_unknown_fields: bool = False  # STRUCT: `x-kubernetes-preserve-unknown-fields`


@functools.cache
def kind_tree(group: str, version: str, kind: str) -> Node | None:
    """The compiled tree of a built-in kind, or None for a kind without an upstream definition."""
    name = schemas.definition_name(group, version, kind)
    return _definition(name) if name else None


# Every definition compiled so far, by name. A struct is stored before its fields are compiled, so that a
# type that contains itself (JSONSchemaProps) compiles to a cycle instead of recursing forever.
_compiled: dict[str, Node] = {}


def _definition(name: str) -> Node:
    node = _compiled.get(name)
    if node is not None:
        return node
    schema = schemas.definitions()[name]
    if name in _RAW:
        node = Node(ANY, go_type(name))
    elif name in _SPECIAL:
        node = Node(_SPECIAL[name], go_type(name))
    elif _is_object(schema) and "additionalProperties" not in schema:
        node = _compiled[name] = Node(STRUCT, go_type(name))
        _fill_struct(node, schema)
    else:
        node = _compile(schema)
    _compiled[name] = node
    return node


def _fill_struct(node: Node, schema: dict[str, Any]) -> None:
    node.preserve_unknown_fields = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    node.fields = {key: _compile(sub) for key, sub in (schema.get("properties") or {}).items()}


def _compile(schema: dict[str, Any]) -> Node:
    ref = schema.get("$ref")
    if ref:
        return _definition(schemas.ref_name(ref))
    types = _types(schema)
    if "array" in types:
        element = _compile(schema.get("items") or {})
        return Node(LIST, "[]" + element.go_type, element=element)
    if "object" in types:
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            element = _compile(values)
            return Node(MAP, "map[string]" + element.go_type, element=element)
        node = Node(STRUCT, "struct")
        _fill_struct(node, schema)
        return node
    return _scalar(types, schema.get("format"))


def _scalar(types: set[str], format: str | None) -> Node:
    if "string" in types:
        return Node(BYTES, "[]uint8") if format == "byte" else Node(STRING, "string")
    if "integer" in types:
        kind = _INTEGERS.get(format or "", INT64)
        return Node(kind, kind if format else "int")
    if "number" in types:
        return Node(FLOAT, "float64")
    if "boolean" in types:
        return Node(BOOL, "bool")
    return Node(ANY, "interface {}")


def _types(schema: dict[str, Any]) -> set[str]:
    value = schema.get("type")
    if value is None:
        return set()
    return {value} if isinstance(value, str) else set(value)


def _is_object(schema: dict[str, Any]) -> bool:
    return "object" in _types(schema) or "properties" in schema


def go_type(name: str) -> str:
    """Go's name for a definition's type: `io.k8s.api.core.v1.PodSpec` → `v1.PodSpec`."""
    package, _, type_name = name.rpartition(".")
    return f"{package.rpartition('.')[2]}.{type_name}"

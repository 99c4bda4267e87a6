"""A CRD version's `openAPIV3Schema`, compiled once into a tree of `Node`s.

One tree serves the three things kube does with a custom resource's schema:

* the *structural* part (`properties`, `items`, `additionalProperties`, `type`, `nullable`, `default` and
  the `x-kubernetes-*` extensions) drives pruning, defaulting, list-type and embedded-resource checks, as
  apiextensions-apiserver's `Structural` does;
* the whole schema, value validations and `allOf`/`anyOf`/`oneOf`/`not` included, drives the kube-openapi
  validator, converted as apiextensions does (`ConvertJSONSchemaProps`): `x-kubernetes-int-or-string` means
  `type: [integer, string]` and unsupported formats are dropped.

`compile_node(schema, for_defaults=True)` builds the variant kube uses to check a schema's own `default`
values (`Structural.ToKubeOpenAPI`): int-or-string keeps an empty type there and formats are kept.

Compilation never fails: a keyword of the wrong JSON type is ignored (request decoding reports those), a
schema that is not an object compiles to an empty node.
"""

from __future__ import annotations

import re
from typing import Any

from . import formats
from .re2 import PatternError, PatternUnsupported, compile_go

NO_DEFAULT: Any = object()  # `default` absent (JSON null counts as absent, as Go's nil interface)


class Node:
    """One schema node. Attributes mirror the schema's keywords; absent numbers are None."""

    __slots__ = (
        "type", "types", "nullable", "format", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum",
        "max_length", "min_length", "pattern", "pattern_re", "pattern_error", "max_items", "min_items",
        "unique_items", "multiple_of", "enum", "max_properties", "min_properties", "required", "all_of",
        "one_of", "any_of", "not_", "properties", "additional", "additional_allows", "items", "default",
        "preserve_unknown", "embedded", "int_or_string", "list_type", "list_map_keys", "map_type",
    )

    def __init__(self) -> None:
        self.type = ""
        self.types: tuple[str, ...] = ()
        self.nullable = False
        self.format = ""
        self.maximum: float | None = None
        self.exclusive_maximum = False
        self.minimum: float | None = None
        self.exclusive_minimum = False
        self.max_length: int | None = None
        self.min_length: int | None = None
        self.pattern = ""
        self.pattern_re: re.Pattern[str] | None = None
        self.pattern_error = ""
        self.max_items: int | None = None
        self.min_items: int | None = None
        self.unique_items = False
        self.multiple_of: float | None = None
        self.enum: list[Any] | None = None
        self.max_properties: int | None = None
        self.min_properties: int | None = None
        self.required: list[str] = []
        self.all_of: list[Node] = []
        self.one_of: list[Node] = []
        self.any_of: list[Node] = []
        self.not_: Node | None = None
        self.properties: dict[str, Node] = {}
        self.additional: Node | None = None       # additionalProperties' schema
        self.additional_allows: bool | None = None  # None: no additionalProperties; True/False: allowed or not
        self.items: Node | None = None
        self.default: Any = NO_DEFAULT
        self.preserve_unknown = False
        self.embedded = False
        self.int_or_string = False
        self.list_type: str | None = None
        self.list_map_keys: list[str] = []
        self.map_type: str | None = None

    @property
    def has_additional(self) -> bool:
        """`Structural.AdditionalProperties != nil`."""
        return self.additional_allows is not None


def compile_node(schema: Any, for_defaults: bool = False) -> Node:
    node = Node()
    if not isinstance(schema, dict):
        return node
    d = schema
    node.type = _str(d.get("type"))
    node.int_or_string = d.get("x-kubernetes-int-or-string") is True
    if node.int_or_string and not for_defaults:
        node.types = ("integer", "string")
    elif node.type:
        node.types = (node.type,)
    node.nullable = d.get("nullable") is True
    raw_format = _str(d.get("format"))
    node.format = raw_format if for_defaults else formats.supported(raw_format)
    node.maximum = _float(d.get("maximum"))
    node.minimum = _float(d.get("minimum"))
    node.exclusive_maximum = d.get("exclusiveMaximum") is True
    node.exclusive_minimum = d.get("exclusiveMinimum") is True
    node.max_length = _int(d.get("maxLength"))
    node.min_length = _int(d.get("minLength"))
    node.max_items = _int(d.get("maxItems"))
    node.min_items = _int(d.get("minItems"))
    node.max_properties = _int(d.get("maxProperties"))
    node.min_properties = _int(d.get("minProperties"))
    node.unique_items = d.get("uniqueItems") is True
    node.multiple_of = _float(d.get("multipleOf"))
    node.pattern = _str(d.get("pattern"))
    if node.pattern:
        try:
            node.pattern_re = compile_go(node.pattern)
        except PatternError as exc:
            node.pattern_error = str(exc)
        except PatternUnsupported:
            node.pattern_re = None  # valid in Go, not expressible here: not checked
    if isinstance(d.get("enum"), list):
        node.enum = list(d["enum"])
    required = d.get("required")
    node.required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    node.all_of = _nodes(d.get("allOf"), for_defaults)
    node.one_of = _nodes(d.get("oneOf"), for_defaults)
    node.any_of = _nodes(d.get("anyOf"), for_defaults)
    if isinstance(d.get("not"), dict):
        node.not_ = compile_node(d["not"], for_defaults)
    if isinstance(d.get("properties"), dict):
        node.properties = {str(k): compile_node(v, for_defaults) for k, v in d["properties"].items()}
    additional = d.get("additionalProperties")
    if isinstance(additional, dict):
        node.additional_allows, node.additional = True, compile_node(additional, for_defaults)
    elif isinstance(additional, bool):
        node.additional_allows = additional
    if isinstance(d.get("items"), dict):
        node.items = compile_node(d["items"], for_defaults)
    if d.get("default") is not None:
        node.default = d["default"]
    node.preserve_unknown = d.get("x-kubernetes-preserve-unknown-fields") is True
    node.embedded = d.get("x-kubernetes-embedded-resource") is True
    list_type = d.get("x-kubernetes-list-type")
    node.list_type = list_type if isinstance(list_type, str) else None
    keys = d.get("x-kubernetes-list-map-keys")
    node.list_map_keys = [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []
    map_type = d.get("x-kubernetes-map-type")
    node.map_type = map_type if isinstance(map_type, str) else None
    return node


def _nodes(value: Any, for_defaults: bool) -> list[Node]:
    return [compile_node(v, for_defaults) for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _float(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None


def _int(value: Any) -> int | None:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    return None

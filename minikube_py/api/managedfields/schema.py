"""The shape of an object as server-side apply sees it: which parts are leaves, which merge key by key.

Field ownership needs to know, for every field of an object, what kind of value it holds:

* a *scalar* (string, number, bool, int-or-string, quantity, time) is a leaf: owned and compared whole;
* a *struct* (`properties` in the schema) and a *map* (`additionalProperties`, e.g. labels) are granular:
  each key is a field of its own, unless the schema says `x-kubernetes-map-type: atomic` (a label
  selector is one value, owned by one manager);
* a *list* is atomic (replaced whole) unless `x-kubernetes-list-type` says `set` (items identified by
  their value) or `map` (items identified by the `x-kubernetes-list-map-keys` fields, like containers by
  `name` or ports by `containerPort` and `protocol`);
* *untyped* content (a RawExtension, a CRD field with `x-kubernetes-preserve-unknown-fields`) is
  deduced from the value: objects are granular, lists atomic.

`type_of_kind(group, version, kind)` builds this from the upstream definitions of a built-in kind;
`type_of_crd(node)` from a CRD version's compiled schema, with the real ObjectMeta under `metadata` as kube
does. Types are built lazily (definitions refer to each other, JSONSchemaProps even to itself).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import schemas
from ..crdschema.model import Node

SCALAR, STRUCT, MAP, LIST, UNTYPED = "scalar", "struct", "map", "list", "untyped"
ATOMIC, SET, ASSOCIATIVE = "atomic", "set", "map"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Type:
    """One node of the shape. `fields`/`element` are computed on first use.

    `is_leaf`: owned and compared as one value (scalars and everything atomic)."""

    __slots__ = ("shape", "atomic", "list_type", "keys", "key_defaults", "is_leaf", "_fields", "_element",
                 "_build", "_holds_item_lists")

    def __init__(self, shape: str, *, atomic: bool = False, list_type: str = ATOMIC, keys: tuple[str, ...] = (),
                 key_defaults: dict[str, Any] | None = None,
                 build: Callable[[], tuple[dict[str, Type], Type | None]] | None = None) -> None:
        self.shape = shape
        self.atomic = atomic
        self.list_type = list_type
        self.keys = keys
        self.key_defaults = key_defaults or {}
        self.is_leaf = shape == SCALAR or atomic or (shape == LIST and list_type == ATOMIC)
        self._fields: dict[str, Type] | None = None
        self._element: Type | None = None
        self._build = build
        self._holds_item_lists: bool | None = None

    def _built(self) -> None:
        if self._fields is None:
            fields, element = self._build() if self._build else ({}, None)
            self._fields, self._element = fields, element

    @property
    def fields(self) -> dict[str, Type]:
        """A struct's fields by name."""
        self._built()
        assert self._fields is not None
        return self._fields

    @property
    def element(self) -> Type:
        """A map's value type, a list's item type; untyped where the schema does not say."""
        self._built()
        return self._element or UNTYPED_TYPE

    def child(self, name: str) -> Type:
        """The type of field or map key `name`."""
        fields = self._fields if self._fields is not None else self.fields  # (built on first use)
        if self.shape == STRUCT:
            found = fields.get(name)
            if found is not None:
                return found
        return self._element or UNTYPED_TYPE

    @property
    def holds_item_lists(self) -> bool:
        """Whether a value of this type can have a set or a list-map in it, whose items may break the list's
        rules (a duplicate, a missing key): only such values need walking to find that out. A type that
        contains itself (JSONSchemaProps) is taken to have one while its answer is being worked out, so the
        types on such a cycle may say yes when they have none (never no when they have one)."""
        if self._holds_item_lists is None:
            self._holds_item_lists = True
            self._holds_item_lists = not self.is_leaf and self.shape != UNTYPED and (  # untyped lists are atomic
                self.shape == LIST or any(t.holds_item_lists for t in (*self.fields.values(), self.element)))
        return self._holds_item_lists

    def as_atomic(self) -> Type:
        return Type(self.shape, atomic=True, list_type=self.list_type, keys=self.keys,
                    key_defaults=self.key_defaults, build=self._build)


UNTYPED_TYPE = Type(UNTYPED)
SCALAR_TYPE = Type(SCALAR)


def resolve(typ: Type, value: Any) -> Type:
    """An untyped node's type for this value: objects granular, lists atomic, the rest scalars."""
    if typ.shape != UNTYPED or typ.atomic:
        return typ
    if isinstance(value, dict):
        return _UNTYPED_MAP
    if isinstance(value, list):
        return _UNTYPED_LIST
    return SCALAR_TYPE


_UNTYPED_MAP = Type(MAP, build=lambda: ({}, UNTYPED_TYPE))
_UNTYPED_LIST = Type(LIST, list_type=ATOMIC)

# Key fields of list-maps that kube defaults, so an applied item without them still has its identity
# (an applied container port without `protocol` is the port with protocol TCP).
KEY_DEFAULTS = {"protocol": "TCP"}


# built-in kinds: the upstream definitions ---------------------------------------------------------------


def type_of_kind(group: str, version: str, kind: str) -> Type | None:
    name = schemas.definition_name(group, version, kind)
    return None if name is None else _definition(name)


@functools.cache
def _definition(name: str) -> Type:
    return _from_json_schema(schemas.definitions().get(name, {}))


def _from_json_schema(s: dict[str, Any]) -> Type:
    ref = s.get("$ref") or _single_all_of(s)
    if ref:
        base = _definition(schemas.ref_name(ref))
        return base.as_atomic() if s.get("x-kubernetes-map-type") == "atomic" else base
    types = s.get("type")
    types = set(types) if isinstance(types, list) else {types}
    atomic = s.get("x-kubernetes-map-type") == "atomic"
    props = s.get("properties")
    if isinstance(props, dict):
        return Type(STRUCT, atomic=atomic,
                    build=lambda: ({k: _from_json_schema(v) for k, v in props.items()}, None))
    additional = s.get("additionalProperties")
    if isinstance(additional, dict):
        return Type(MAP, atomic=atomic, build=lambda: ({}, _from_json_schema(additional)))
    if "array" in types:
        items = s.get("items") if isinstance(s.get("items"), dict) else {}
        return _list(s.get("x-kubernetes-list-type"), s.get("x-kubernetes-list-map-keys"),
                     lambda: _from_json_schema(items))
    if "object" in types:
        return UNTYPED_TYPE.as_atomic() if atomic else UNTYPED_TYPE
    return SCALAR_TYPE


def _single_all_of(s: dict[str, Any]) -> str | None:
    all_of = s.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        return all_of[0].get("$ref")
    return None


def _list(list_type: Any, keys: Any, element: Callable[[], Type]) -> Type:
    if list_type == ASSOCIATIVE and isinstance(keys, list) and keys:
        key_names = tuple(str(k) for k in keys)
        return Type(LIST, list_type=ASSOCIATIVE, keys=key_names,
                    key_defaults={k: KEY_DEFAULTS[k] for k in key_names if k in KEY_DEFAULTS},
                    build=lambda: ({}, element()))
    if list_type == SET:
        return Type(LIST, list_type=SET, build=lambda: ({}, element()))
    return Type(LIST, list_type=ATOMIC, build=lambda: ({}, element()))


# custom resources: a CRD version's schema ----------------------------------------------------------------


def type_of_crd(root: Node) -> Type:
    """The shape of a custom resource: its schema, with ObjectMeta under `metadata`."""
    def fields() -> tuple[dict[str, Type], Type | None]:
        own = {k: _from_node(v) for k, v in root.properties.items()}
        own["metadata"] = _definition(OBJECT_META)
        own["apiVersion"] = own["kind"] = SCALAR_TYPE
        return own, None
    return Type(STRUCT, build=fields)


def _from_node(node: Node) -> Type:
    atomic = node.map_type == "atomic"
    if node.int_or_string:
        return SCALAR_TYPE
    if node.properties:
        additional = node.additional
        return Type(STRUCT, atomic=atomic, build=lambda: (
            {k: _from_node(v) for k, v in node.properties.items()},
            _from_node(additional) if additional is not None else None))
    if node.additional is not None:
        additional_node = node.additional
        return Type(MAP, atomic=atomic, build=lambda: ({}, _from_node(additional_node)))
    if node.type == "array":
        items = node.items
        return _list(node.list_type, node.list_map_keys,
                     lambda: _from_node(items) if items is not None else UNTYPED_TYPE)
    if node.type == "object" or node.preserve_unknown or not node.type:
        return UNTYPED_TYPE.as_atomic() if atomic else UNTYPED_TYPE
    return SCALAR_TYPE

"""Patch metadata: how each field of a kind merges, read from the upstream schema.

Strategic merge patch needs two facts about a field, which Kubernetes writes on its Go types as struct tags
(`patchStrategy:"merge" patchMergeKey:"name"`) and publishes in its schema as `x-kubernetes-patch-strategy`
and `x-kubernetes-patch-merge-key`:

* the patch strategy: `merge` (lists merge; maps always merge), `replace` (the patch value replaces the old
  one) or none (lists are atomic: the patch value replaces them), possibly with `retainKeys` added, which the
  merge itself ignores (it only honours a `$retainKeys` directive the client sends);
* the merge key of a list of objects: the field that identifies an element (`name` for containers,
  `containerPort` for ports, `mountPath` for volumeMounts).

kube-apiserver finds them by walking the Go type of the patched object (apimachinery's
`PatchMetaFromStruct`): field by field through structs, into the element type of slices. A `TypeSchema` is
one such Go type as the schema describes it: a struct with fields, a map, a slice of some element type, or a
scalar. The walk fails where Go's fails, and those errors reach the client: a field the struct doesn't have,
a lookup inside a map (`map[string]string` labels are fine because their values are scalars and never
looked into), a list directive on a field that is not a list. Types without fields in the schema
(`RawExtension`, `Quantity`, `Time`, `IntOrString`) are Go structs with no JSON fields, so looking inside
them fails too, exactly as in kube.

Everything is compiled lazily and cached: each named definition becomes one `TypeSchema` shared by every
kind that uses it, and each field is resolved on first use, so a patch costs dictionary lookups only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import schemas
from . import errors

STRUCT, MAP, SLICE = "struct", "map", "slice"
MERGE, REPLACE, RETAIN_KEYS = "merge", "replace", "retainKeys"
_SCALAR_KINDS = {"string": "string", "integer": "int64", "boolean": "bool", "number": "float64"}


@dataclass(frozen=True)
class PatchMeta:
    """How one field merges: its patch strategy (`merge`, `replace` or "" for atomic) and merge key."""

    strategy: str = ""
    merge_key: str = ""


@dataclass(eq=False)
class TypeSchema:
    """One Go type of the API as strategic merge patch walks it: kind is struct, map, slice or a scalar."""

    kind: str
    name: str = ""
    properties: Mapping[str, Any] = field(default_factory=dict)
    element: TypeSchema | None = None
    resolve: Callable[[str], TypeSchema] | None = None
    _fields: dict[str, tuple[TypeSchema, PatchMeta]] = field(default_factory=dict, repr=False)

    def lookup_struct(self, key: str) -> tuple[TypeSchema, PatchMeta]:
        """The type and patch metadata of the field `key` of this struct."""
        if self.kind != STRUCT:
            raise errors.not_a_struct(self.kind)
        found = self._fields.get(key)
        if found is None:
            if key not in self.properties:
                raise errors.field_not_found(self.name, key)
            assert self.resolve is not None, "structs come from named_types()"
            raw = self.properties[key]
            found = self._fields[key] = (_type_of(raw, self.resolve), _patch_meta(raw))
        return found

    def lookup_slice(self, key: str) -> tuple[TypeSchema, PatchMeta]:
        """The element type and patch metadata of the list field `key` of this struct."""
        field_type, meta = self.lookup_struct(key)
        if field_type.element is None:
            raise errors.not_a_slice()
        return field_type.element, meta


def named_types(definitions: Mapping[str, Mapping[str, Any]]) -> Callable[[str], TypeSchema]:
    """A cached lookup from a definition name to its type, for one set of definitions."""

    @functools.cache
    def named(name: str) -> TypeSchema:
        properties = definitions[name].get("properties", {})
        return TypeSchema(STRUCT, name.rsplit(".", 1)[-1], properties, resolve=named)

    return named


@functools.cache
def schema_for_kind(group: str, version: str, kind: str) -> TypeSchema | None:
    """The type of a built-in kind, or None for a kind without an upstream schema (custom resources)."""
    name = schemas.definition_name(group, version, kind)
    return None if name is None else _upstream_types()(name)


@functools.cache
def _upstream_types() -> Callable[[str], TypeSchema]:
    return named_types(schemas.definitions())


def _type_of(raw: Mapping[str, Any], resolve: Callable[[str], TypeSchema]) -> TypeSchema:
    """The type a property schema describes: a reference, an array, a map or a scalar."""
    if "$ref" in raw:
        return resolve(schemas.ref_name(raw["$ref"]))
    json_types = raw.get("type", [])
    json_types = [json_types] if isinstance(json_types, str) else json_types
    if "array" in json_types:
        return TypeSchema(SLICE, element=_type_of(raw.get("items", {}), resolve))
    if "object" in json_types:
        return TypeSchema(MAP)
    return TypeSchema(next((_SCALAR_KINDS[t] for t in json_types if t in _SCALAR_KINDS), "interface"))


def _patch_meta(raw: Mapping[str, Any]) -> PatchMeta:
    strategies = raw.get("x-kubernetes-patch-strategy", "").split(",")
    strategy = next((s for s in strategies if s != RETAIN_KEYS), "")
    return PatchMeta(strategy, raw.get("x-kubernetes-patch-merge-key", ""))

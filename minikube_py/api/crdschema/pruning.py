"""Pruning: what apiextensions-apiserver's decoder does to a custom resource before anything else sees it.

A structural schema says exactly which fields exist, so everything else is dropped
(`pruning.PruneWithOptions`, then `PruneNonNullableNullsWithoutDefaults`, then ObjectMeta coercion):

* a field not in `properties` is dropped, unless its object has `additionalProperties` (then its value is
  pruned by that schema) or `x-kubernetes-preserve-unknown-fields: true` (then it stays as it is, while the
  fields the schema does specify are still pruned below it);
* `apiVersion`, `kind` and `metadata` are never pruned at the root or in an
  `x-kubernetes-embedded-resource`; `metadata` instead loses what `metav1.ObjectMeta` has no field for;
* a `null` in a field that is neither `nullable` nor defaulted is dropped (defaulting has already replaced
  the defaulted ones).

The paths of the dropped fields are returned (`spec.foo`, `spec.items[0].bar`, `metadata.foo`), sorted per
stage as kube does, for `fieldValidation` (Strict → 400 `unknown field "spec.foo"`, Warn → warnings).
"""

from __future__ import annotations

from typing import Any

from . import gofmt as go
from .checks import strip_unknown_meta
from .model import NO_DEFAULT, Node

META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def prune_object(obj: dict[str, Any], root: Node) -> list[str]:
    """Prune a whole custom resource in place; the paths of what was dropped."""
    unknown = strip_unknown_meta(obj.get("metadata"), "metadata")
    pruned: list[str] = []
    prune_value(obj, root, [], pruned, embedded=True)
    prune_nulls(obj, root)
    coerced: list[str] = []
    _coerce_embedded(obj, root, None, coerced)
    return unknown + sorted(pruned) + sorted(coerced)


def _join(parent: list[str], part: str, is_index: bool = False) -> list[str]:
    if is_index:
        return [*parent, part]
    return [*parent, ".", part] if parent else [part]


def prune_value(value: Any, node: Node | None, parent: list[str], unknown: list[str], embedded: bool = False) -> None:
    """`pruning.prune`: drop what `node` does not specify from `value`; `parent` is the path so far (as parts),
    `unknown` collects the dropped paths; `embedded` treats `value` as a resource root."""
    if node is not None and node.preserve_unknown:
        _skip_prune(value, node, parent, unknown, embedded)
        return
    if isinstance(value, dict):
        if node is None:
            for k in list(value):
                unknown.append("".join(_join(parent, k)))
                del value[k]
            return
        is_embedded = embedded or node.embedded
        for k in list(value):
            if is_embedded and k in META_FIELDS:
                continue
            if k in node.properties:
                prune_value(value[k], node.properties[k], _join(parent, k), unknown)
            elif node.has_additional:
                prune_value(value[k], node.additional, _join(parent, k), unknown)
            else:
                if k not in META_FIELDS or parent:
                    unknown.append("".join(_join(parent, k)))
                del value[k]
    elif isinstance(value, list):
        items = node.items if node is not None else None
        for i, item in enumerate(value):
            prune_value(item, items, _join(parent, f"[{i}]", True), unknown)


def _skip_prune(value: Any, node: Node | None, parent: list[str], unknown: list[str],
                embedded: bool = False) -> None:
    if node is None:
        return
    if isinstance(value, dict):
        for k in list(value):
            if (embedded or node.embedded) and k in META_FIELDS:
                continue
            if k in node.properties:
                prune_value(value[k], node.properties[k], _join(parent, k), unknown)
            elif node.has_additional:
                prune_value(value[k], node.additional, _join(parent, k), unknown)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _skip_prune(item, node.items, _join(parent, f"[{i}]", True), unknown)


def prune_nulls(value: Any, node: Node | None) -> None:
    """`PruneNonNullableNullsWithoutDefaults`: drop map entries that are null where the schema says the field
    is neither nullable nor defaulted."""
    if isinstance(value, dict):
        for k in list(value):
            schema = _schema_for_field(k, node)
            if value[k] is None and schema is not None and not schema.nullable and schema.default is NO_DEFAULT:
                del value[k]
            else:
                prune_nulls(value[k], schema)
    elif isinstance(value, list):
        items = node.items if node is not None else None
        for item in value:
            prune_nulls(item, items)


def _schema_for_field(field: str, node: Node | None) -> Node | None:
    if node is None:
        return None
    if field in node.properties:
        return node.properties[field]
    return node.additional if node.has_additional else None


def _coerce_embedded(value: Any, node: Node | None, path: str | None, unknown: list[str]) -> None:
    """`objectmeta.Coerce` below the root: the metadata of embedded resources loses its unknown fields."""
    if node is None:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if node.embedded and k == "metadata":
                unknown += strip_unknown_meta(v, go.child(path, "metadata"))
            if k in node.properties:
                _coerce_embedded(v, node.properties[k], go.child(path, k), unknown)
            elif node.has_additional:
                _coerce_embedded(v, node.additional, go.key(path, k), unknown)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _coerce_embedded(item, node.items, go.index(path, i), unknown)

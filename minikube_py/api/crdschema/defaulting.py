"""Defaulting from a structural schema (`structuraldefaulting.Default`).

kube applies a schema's `default`s whenever it decodes a custom resource: from a request body (before
pruning and validation) and from etcd (so objects stored before a default was added get it when read).
The walk:

* in an object, every property that has a default and is missing, or is `null` without being `nullable`,
  gets a copy of the default; then every present field is defaulted further, by its property's schema or
  by `additionalProperties` (where a non-nullable `null` becomes that schema's default);
* in an array, each non-nullable `null` item becomes the items' default, and each item is defaulted.

A default is applied before its value is walked, so the defaults of nested properties land inside a
defaulted object (`spec: {default: {}}` plus `spec.replicas: {default: 1}` gives `spec: {replicas: 1}`).
"""

from __future__ import annotations

import copy
from typing import Any

from .model import NO_DEFAULT, Node


def _default_of(node: Node) -> Any:
    return None if node.default is NO_DEFAULT else copy.deepcopy(node.default)


def _non_nullable_null(value: Any, node: Node | None) -> bool:
    return value is None and node is not None and not node.nullable


def apply_defaults(value: Any, node: Node | None) -> None:
    if node is None:
        return
    if isinstance(value, dict):
        for k, prop in node.properties.items():
            if prop.default is NO_DEFAULT:
                continue
            if k not in value or _non_nullable_null(value[k], prop):
                value[k] = copy.deepcopy(prop.default)
        for k in list(value):
            if k in node.properties:
                apply_defaults(value[k], node.properties[k])
            elif node.has_additional:
                if _non_nullable_null(value[k], node.additional):
                    value[k] = _default_of(node.additional)  # type: ignore[arg-type]
                apply_defaults(value[k], node.additional)
    elif isinstance(value, list):
        for i in range(len(value)):
            if _non_nullable_null(value[i], node.items):
                value[i] = _default_of(node.items)  # type: ignore[arg-type]
            apply_defaults(value[i], node.items)

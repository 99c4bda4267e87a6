"""Objects seen through their shape (`schema.Type`): their field sets, what changed, merging and removing.

* `field_set(obj, typ)` is what an applied configuration claims: every leaf it sets and every list item
  it names (structs and maps themselves are not claimed, only what is in them);
* `compare(old, new, typ)` says which paths an update added, removed and modified (a struct or map that
  appears or disappears counts too, so an Update manager that creates the labels map owns it);
* `merge(live, config, typ)` is server-side apply's merge: structs and granular maps key by key, list-maps
  item by item (matched by key), sets by value, everything atomic replaced; a `null` removes;
* `remove(obj, paths, typ)` deletes the named fields and list items (with everything below them).

List items are identified as FieldsV1 does (`fieldpath`); an item of a list-map without its key fields,
or two items with the same identity, is a `ShapeError`.
"""

from __future__ import annotations

import copy
from typing import Any

from .fieldpath import FieldSet, Path, field, index_element, key_element, value_element
from .schema import ASSOCIATIVE, LIST, SET, Type, resolve


class ShapeError(ValueError):
    """A value that does not fit its shape (duplicate list items, missing key fields)."""


class Flat:
    """An object taken apart: leaf paths with their values, and the other paths that exist."""

    __slots__ = ("leaves", "inner", "items")

    def __init__(self) -> None:
        self.leaves: dict[Path, Any] = {}
        self.inner: set[Path] = set()
        self.items: set[Path] = set()  # list items (also in `inner` or `leaves`)


def flatten(obj: Any, typ: Type) -> Flat:
    flat = Flat()
    _walk(obj, typ, (), flat)
    return flat


def _flatten_field(obj: Any, typ: Type, name: str) -> Flat:
    flat = Flat()
    if isinstance(obj, dict) and name in obj:
        _walk(obj[name], resolve(typ, obj).child(name), (field(name),), flat)
    return flat


def _walk(value: Any, typ: Type, path: Path, flat: Flat) -> None:
    typ = resolve(typ, value)
    if typ.is_leaf:
        if path:
            flat.leaves[path] = value
        return
    if path:
        flat.inner.add(path)
    if typ.shape == LIST:
        if isinstance(value, list):
            for item, element in zip(value, item_elements(value, typ), strict=True):
                flat.items.add(path + (element,))
                _walk(item, typ.element, path + (element,), flat)
        return
    if isinstance(value, dict):
        for key, sub in value.items():
            _walk(sub, typ.child(key), path + (field(key),), flat)


def item_elements(items: list[Any], typ: Type) -> list[str]:
    """The path element of each item of a granular list; ShapeError on a duplicate or a keyless item."""
    elements = [_item_element(item, typ) for item in items]
    if len(set(elements)) != len(elements):
        seen: set[str] = set()
        for element in elements:
            if element in seen:
                raise ShapeError(f"duplicate entries for key {element[2:]}")
            seen.add(element)
    return elements


def _item_element(item: Any, typ: Type) -> str:
    if typ.list_type == SET:
        return value_element(item)
    if typ.list_type == ASSOCIATIVE:
        if not isinstance(item, dict):
            raise ShapeError(f"associative list with keys {list(typ.keys)} has an element that is not an object")
        keys = {}
        for name in typ.keys:
            if name in item and item[name] is not None:
                keys[name] = item[name]
            elif name in typ.key_defaults:
                keys[name] = typ.key_defaults[name]
            else:
                raise ShapeError(f'associative list with keys has an element that omits key field "{name}" '
                                 f"(and doesn't have default value)")
        return key_element(keys)
    return index_element(0)  # not reached: atomic lists are leaves


def field_set(obj: Any, typ: Type) -> FieldSet:
    """The paths an applied configuration sets: its leaves and list items."""
    flat = flatten(obj, typ)
    return set(flat.leaves) | flat.items


class Comparison:
    __slots__ = ("added", "removed", "modified")

    def __init__(self, added: FieldSet, removed: FieldSet, modified: FieldSet) -> None:
        self.added, self.removed, self.modified = added, removed, modified

    @property
    def changed(self) -> FieldSet:
        """Added or modified: what a writer now owns, and takes from everybody else."""
        return self.added | self.modified


def compare(old: Any, new: Any, typ: Type, *, only: str | None = None) -> Comparison:
    """What changed from `old` to `new`; with `only`, just in that top-level field of the two objects (the
    same paths a whole comparison would give under it, for less work)."""
    if only is None:
        before, after = flatten(old, typ), flatten(new, typ)
    else:
        before, after = _flatten_field(old, typ, only), _flatten_field(new, typ, only)
    added = (after.leaves.keys() - before.leaves.keys()) | (after.inner - before.inner)
    removed = (before.leaves.keys() - after.leaves.keys()) | (before.inner - after.inner)
    modified = {p for p, v in after.leaves.items() if p in before.leaves and not _same(before.leaves[p], v)}
    return Comparison(added, removed, modified)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def merge(live: Any, config: Any, typ: Type) -> Any:
    """`config` applied onto `live`: what config sets wins, what it leaves out stays."""
    typ = resolve(typ, config)
    if typ.is_leaf:
        return copy.deepcopy(config)
    if typ.shape == LIST:
        if not isinstance(config, list):
            return copy.deepcopy(config)
        return _merge_items(live if isinstance(live, list) else [], config, typ)
    if not isinstance(config, dict):
        return copy.deepcopy(config)
    out = dict(live) if isinstance(live, dict) else {}
    for key, value in config.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value, typ.child(key))
    return out


def _merge_items(live: list[Any], config: list[Any], typ: Type) -> list[Any]:
    """Items matched by identity are merged; the live order is kept for items config does not name, and
    the items config names come in config's order (new ones where config puts them)."""
    try:
        live_ids = item_elements(live, typ)
    except ShapeError:  # a live list that breaks its own rules is replaced, as an atomic list would be
        return copy.deepcopy(config)
    config_ids = item_elements(config, typ)
    live_by_id = dict(zip(live_ids, live, strict=True))
    config_by_id = dict(zip(config_ids, config, strict=True))
    shared = [i for i in config_ids if i in live_by_id]
    out, done, next_shared = [], set(), 0
    li = ci = 0
    while li < len(live_ids) or ci < len(config_ids):
        if li < len(live_ids) and ci < len(config_ids) and live_ids[li] == config_ids[ci]:
            ident = live_ids[li]
            out.append(merge(live[li], config[ci], typ.element))
            done.add(ident)
            next_shared += next_shared < len(shared) and shared[next_shared] == ident
            li, ci = li + 1, ci + 1
            continue
        if li < len(live_ids):
            ident = live_ids[li]
            if ident not in config_by_id:
                out.append(live[li])
                li += 1
                continue
            if ident in done or ci >= len(config_ids) or \
                    (next_shared < len(shared) and shared[next_shared] != ident):
                li += 1
                continue
        ident = config_ids[ci]
        out.append(merge(live_by_id.get(ident), config[ci], typ.element))
        done.add(ident)
        next_shared += next_shared < len(shared) and shared[next_shared] == ident
        ci += 1
    return out


def remove(obj: Any, paths: FieldSet, typ: Type) -> None:
    """Delete each path's field or list item from `obj`, in place (shortest paths first)."""
    for path in sorted(paths, key=len):
        _remove_one(obj, path, typ)


def _remove_one(obj: Any, path: Path, typ: Type) -> None:
    node, node_type = obj, typ
    for depth, element in enumerate(path):
        node_type = resolve(node_type, node)
        last = depth == len(path) - 1
        if element.startswith("f:"):
            if not isinstance(node, dict) or element[2:] not in node:
                return
            if last:
                del node[element[2:]]
                return
            node, node_type = node[element[2:]], node_type.child(element[2:])
            continue
        if not isinstance(node, list) or node_type.is_leaf or node_type.shape != LIST:
            return
        try:
            position = item_elements(node, node_type).index(element)
        except (ShapeError, ValueError):
            return
        if last:
            del node[position]
            return
        node, node_type = node[position], node_type.element

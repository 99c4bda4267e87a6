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

`compare` gives what taking both objects apart into all their paths and diffing the two sets would give,
without doing that: it walks the two side by side, collects whole only what is on one side, and does not
go into a struct or map that is the same on both sides, since nothing below it changed. It does go into
the ones that may hold a set or list-map (`Type.holds_item_lists`), however unchanged: a duplicate or
keyless item there must still be a ShapeError, as it is when the objects are taken apart whole.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from .fieldpath import FieldSet, Path, field, index_element, key_element, value_element
from .schema import ASSOCIATIVE, LIST, SET, Type, resolve


class ShapeError(ValueError):
    """A value that does not fit its shape (duplicate list items, missing key fields)."""


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
    out: FieldSet = set()
    _collect(obj, typ, (), out, inner=False)
    return out


def _collect(value: Any, typ: Type, path: Path, out: FieldSet, *, inner: bool) -> None:
    """Add to `out` the paths of `value` (at `path`) and of everything in it: leaves, list items, and with
    `inner` structs and maps too."""
    typ = resolve(typ, value)
    if typ.is_leaf:
        if path:
            out.add(path)
        return
    if path and (inner or not path[-1].startswith("f:")):  # a path not ending in a field name is a list item
        out.add(path)
    for name, sub in _members(value, typ).items():
        element, sub_type = _member(typ, name)
        sub_type = resolve(sub_type, sub)
        if sub_type.is_leaf:  # most members are: no call for them
            out.add(path + (element,))
        else:
            _collect(sub, sub_type, path + (element,), out, inner=inner)


def _members(value: Any, typ: Type) -> dict[str, Any]:
    """The fields or keys of a struct or map by name (the value itself), the items of a list by path
    element."""
    if typ.shape == LIST:
        return dict(zip(item_elements(value, typ), value, strict=True)) if isinstance(value, list) else {}
    return value if isinstance(value, dict) else {}


def _member(typ: Type, name: str) -> tuple[str, Type]:
    """The path element and type of a member `_members` names."""
    if typ.shape == LIST:
        return name, typ.element
    return field(name), typ.child(name)


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
    if only is not None:
        old, new = _only(old, only), _only(new, only)
    diff = Comparison(set(), set(), set())
    _compare(old, new, typ, (), diff)
    return diff


def _only(obj: Any, name: str) -> dict[str, Any]:
    return {name: obj[name]} if isinstance(obj, dict) and name in obj else {}


def _compare(old: Any, new: Any, typ: Type, path: Path, diff: Comparison) -> None:
    """Compare the values at `path`: a leaf whose value changed is modified; a leaf that became a struct,
    map or list (or the other way round) is removed and added again, with everything in the new value
    added; the members of two structs, maps or lists are compared one by one, a member on one side only
    being added or removed with everything in it."""
    old_type, new_type = resolve(typ, old), resolve(typ, new)
    if old_type.is_leaf and new_type.is_leaf:
        if path and not _same(old, new):
            diff.modified.add(path)
    elif old_type.is_leaf or new_type.is_leaf:
        _collect(old, old_type, path, diff.removed, inner=True)
        _collect(new, new_type, path, diff.added, inner=True)
    elif new_type.holds_item_lists or not _equal(old, new):  # both granular: the same type
        before, after = _members(old, new_type), _members(new, new_type)
        for name, value in after.items():
            element, sub_type = _member(new_type, name)
            below = path + (element,)
            if name not in before:
                _collect(value, sub_type, below, diff.added, inner=True)
            elif sub_type.is_leaf:  # (a leaf whatever the values: most members are, no call for them)
                if not _same(before[name], value):
                    diff.modified.add(below)
            else:
                _compare(before[name], value, sub_type, below, diff)
        for name, value in before.items():
            if name not in after:
                element, sub_type = _member(new_type, name)
                _collect(value, sub_type, path + (element,), diff.removed, inner=True)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _equal(a: Any, b: Any) -> bool:
    """Whether two values are the same JSON, so that comparing them member by member would find nothing.
    `==` is fast (it runs in C) but takes 1, 1.0 and True for one value where `_same` does not, so values
    `==` finds equal are also compared encoded. (A NaN is the one value this would wrongly call unchanged,
    as `_same` never finds it equal to itself; but one side of every comparison is read from storage or is
    a kind's zero object, and JSON has no NaN.)"""
    if a != b:
        return False
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except orjson.JSONEncodeError:  # not JSON (an integer too large): compared member by member
        return False


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

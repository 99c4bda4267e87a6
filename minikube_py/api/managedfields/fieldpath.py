"""Field paths, sets of them, and their wire form `FieldsV1`.

A path names one field of an object as a tuple of *path elements*, each a string in FieldsV1's notation:

* `f:<name>`: a field of a struct or a key of a map (`f:spec`, `f:replicas`, `f:app` under labels);
* `k:<json>`: the item of a list-map with these key values (`k:{"name":"nginx"}`,
  `k:{"containerPort":80,"protocol":"TCP"}`, keys sorted);
* `v:<json>`: the item of a set with this value (`v:"example.com/finalizer"`);
* `i:<n>`: an item by position (only lists that have no identity for items).

A field set is a plain Python `set` of such tuples. On the wire (`metadata.managedFields[].fieldsV1`) it is
a tree: each element is a key, a member is `{}`, and a member that also has members below it carries a
`".": {}` entry, e.g. `{"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}` owns the labels map and
its `app` key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

Path = tuple[str, ...]
FieldSet = set[Path]

_KINDS = ("f:", "k:", "v:", "i:")


def field(name: str) -> str:
    return "f:" + name


def key_element(keys: dict[str, Any]) -> str:
    return "k:" + orjson.dumps(keys, option=orjson.OPT_SORT_KEYS).decode()


def value_element(value: Any) -> str:
    return "v:" + orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def index_element(i: int) -> str:
    return f"i:{i}"


def with_named_parents(paths: Iterable[Path]) -> FieldSet:
    """`paths` plus every ancestor that ends in a field name: owning `spec.replicas` keeps `spec` itself
    from being pruned."""
    out = set(paths)
    for path in list(out):
        for end in range(1, len(path)):
            if path[end - 1].startswith("f:"):
                out.add(path[:end])
    return out


def under(paths: Iterable[Path], prefix: Path) -> FieldSet:
    n = len(prefix)
    return {p for p in paths if p[:n] == prefix}


# FieldsV1 --------------------------------------------------------------------------------------------------


class FieldsV1Error(ValueError):
    """A `fieldsV1` value that is not a well-formed field tree."""


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The wire form of a field set, keys in kube's order (`.` first, fields, keys, values, indexes).

    The paths (never empty) are added in sorted order, so that every node gets its members in kube's
    order, which is the strings' order but for list indexes, and a path comes before the paths below it:
    a member is made as `{}` and gets its `"."` when the first member below it comes."""
    root: dict[str, Any] = {}
    indexed = []  # nodes with list items by position: `i:10` sorts before `i:9` and `k:` after `i:` as strings
    for path in sorted(paths):
        node = root
        for element in path:
            child = node.get(element)  # (not setdefault: that would make a dict for every element)
            if child is None:
                child = node[element] = {}
                if element[0] == "i":
                    indexed.append(node)
            elif not child:  # a member, so far without members below it
                child["."] = {}
            node = child
    for node in indexed:
        _order_indexes(node)
    return root


def _order_indexes(node: dict[str, Any]) -> None:
    """Put `node`'s members in kube's order (`.` stays first; doing it twice changes nothing)."""
    members = sorted((element for element in node if element != "."), key=_order)
    ordered = {element: node.pop(element) for element in members}
    node.update(ordered)


def _order(element: str) -> tuple[int, int, str]:
    order = _ORDERS.get(element)
    if order is None:
        kind = _KINDS.index(element[:2])
        order = (kind, int(element[2:]) if kind == 3 else 0, element)
        if len(_ORDERS) < MAX_REMEMBERED_ORDERS:  # list items' keys vary without bound
            _ORDERS[element] = order
    return order


MAX_REMEMBERED_ORDERS = MAX_REMEMBERED_ELEMENTS = 10_000
_ORDERS: dict[str, tuple[int, int, str]] = {}  # path element -> its sort key (most elements recur)
_WELL_FORMED: set[str] = set()  # path elements `from_fields_v1` has checked


def from_fields_v1(tree: Any) -> FieldSet:
    """The field set of a wire-form tree; raises FieldsV1Error for anything else."""
    out: FieldSet = set()
    _collect(tree, (), out)
    return out


def in_fields_v1(tree: dict[str, Any], path: Path) -> bool:
    """Whether the field set of a well-formed wire-form tree holds `path`: one lookup per element, where
    `from_fields_v1` would take the whole tree apart."""
    node = tree
    for element in path:
        node = node.get(element)
        if node is None:
            return False
    return bool(path) and (not node or "." in node)


def _collect(tree: Any, path: Path, out: FieldSet) -> None:
    if not isinstance(tree, dict):
        raise FieldsV1Error(f"expected an object at {path_string(path) or 'the root'}")
    if not tree and path:
        out.add(path)
        return
    for key, sub in tree.items():
        if key == ".":
            if path:
                out.add(path)
            continue
        if key not in _WELL_FORMED:
            _check_element(key)
        if isinstance(sub, dict) and not sub:  # a leaf (most members are): no call for it
            out.add(path + (key,))
        else:
            _collect(sub, path + (key,), out)


def _check_element(key: Any) -> None:
    """FieldsV1Error unless `key` is a path element; the ones that are are remembered (most recur)."""
    if not isinstance(key, str) or key[:2] not in _KINDS or len(key) < 3:
        raise FieldsV1Error(f"unknown path element {key!r}")
    if key.startswith("i:") and not key[2:].isdigit():
        raise FieldsV1Error(f"unknown path element {key!r}")
    if key[:2] in ("k:", "v:"):
        try:
            orjson.loads(key[2:])
        except orjson.JSONDecodeError:
            raise FieldsV1Error(f"unknown path element {key!r}") from None
    if len(_WELL_FORMED) < MAX_REMEMBERED_ELEMENTS:
        _WELL_FORMED.add(key)


# readable paths (conflict messages) -------------------------------------------------------------------------


def path_string(path: Path) -> str:
    """A path as kube prints it: `.spec.template.spec.containers[name="nginx"].image`."""
    parts = []
    for element in path:
        kind, rest = element[:2], element[2:]
        if kind == "f:":
            parts.append("." + rest)
        elif kind == "k:":
            keys = orjson.loads(rest)
            parts.append("[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in keys.items()) + "]")
        elif kind == "v:":
            parts.append(f"[={rest}]")
        else:
            parts.append(f"[{rest}]")
    return "".join(parts)

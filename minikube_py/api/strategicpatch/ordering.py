"""Where the elements of a merged list go.

A merged list holds elements the patch mentions and elements only the live object has. kube orders it in
three steps (apimachinery's `normalizeElementOrder`):

1. split it into the elements the *order list* mentions and the server-only rest (`partition`); the order
   list is the patch list itself, or `$setElementOrder/<field>` when the client sent one (kubectl always
   does for merging lists, listing every element it wants, in its order);
2. sort the mentioned elements by their position in the order list, and the server-only elements by their
   position in the live list;
3. interleave the two: take the next server-only element while it stood, in the live list, before the
   next mentioned element; otherwise take the mentioned element. A new element (not in the live list)
   therefore goes before the server-only elements still waiting: right after the mentioned element before
   it, or first of all when the patch mentions only new elements.

Elements are identified by their merge key value (lists of maps) or by value (lists of scalars), compared
the way Go compares them (`values.go_equal`).

Before any of that, `validate_order` checks that the patch list mentions its elements in the order of
`$setElementOrder` (ignoring deletions), and `element_type` that a list holds one type of element.

One corner differs from kube on purpose: when a patch both deletes (`$patch: delete`) and adds elements of
a list that also has `$setElementOrder` and server-only elements, Go's in-place slice edits leave the added
elements inside kube's copy of the live list, which moves the server-only elements before them. We order
by the live list as it was.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from . import errors
from .directives import DELETE, DIRECTIVE
from .values import MAP_TYPE, go_equal, go_key


def element_type(*lists: list[Any]) -> type:
    """The one Python type of every element of `lists`; mixed types, lists of lists or no elements fail."""
    found: type | None = None
    for value in chain(*lists):
        if found is None:
            found = type(value)
            if found is list:
                raise errors.no_list_of_lists()
        elif type(value) is not found:
            raise errors.mixed_element_types(list(lists))
    if found is None:
        raise errors.no_elements()
    return found


def validate_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list must mention its elements (deletions aside) in the order `$setElementOrder` gives."""
    if not order or not patch_list:
        return
    items = [item for item in _maps(patch_list) if item.get(DIRECTIVE) != DELETE] if merge_key else patch_list
    at_item = at_order = 0
    while at_item < len(items) and at_order < len(order):
        if isinstance(items[at_item], dict) and DIRECTIVE in items[at_item]:
            at_item += 1
            continue
        if _same_element(items[at_item], order[at_order], merge_key):
            at_item += 1
        at_order += 1
    if at_item < len(items):
        raise errors.order_mismatch(patch_list, order)


def partition(merged: list[Any], order: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """The elements of `merged` that `order` mentions, and the others, each in their merged order."""
    if not merge_key:
        mentioned = {go_key(value) for value in order}
        flags = [go_key(value) in mentioned for value in merged]
    else:
        flags = []
        for item in merged:
            _require_merge_key(merge_key, [item])
            flags.append(find_by_key(order, merge_key, item[merge_key]) >= 0)
    return ([value for value, flag in zip(merged, flags, strict=True) if flag],
            [value for value, flag in zip(merged, flags, strict=True) if not flag])


def normalize(mentioned: list[Any], server_only: list[Any], order: list[Any], live: list[Any],
              merge_key: str, is_map: bool) -> list[Any]:
    """The final list: mentioned elements sorted by `order`, server-only ones by `live`, interleaved."""
    mentioned = _sort_by(mentioned, order, merge_key, is_map)
    server_only = _sort_by(server_only, live, merge_key, is_map)
    result = []
    while mentioned and server_only:
        server_at = _position(live, server_only[0], merge_key, is_map)
        mentioned_at = _position(live, mentioned[0], merge_key, is_map)
        if 0 <= server_at < mentioned_at:
            result.append(server_only.pop(0))
        else:
            result.append(mentioned.pop(0))
    return result + server_only + mentioned


def find_by_key(items: list[Any], merge_key: str, value: Any) -> int:
    """The index of the first map in `items` whose merge key has `value`, or -1."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise errors.not_a_map(index)
        if merge_key in item and go_equal(item[merge_key], value):
            return index
    return -1


def _sort_by(items: list[Any], order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    if is_map:
        _require_merge_key(merge_key, items, order)

    def rank(item: Any) -> int:
        position = _position(order, item, merge_key, is_map)
        return position if position >= 0 else len(order)

    return sorted(items, key=rank)


def _position(items: list[Any], wanted: Any, merge_key: str, is_map: bool) -> int:
    """The index of the element of `items` that is `wanted`: same merge key value, or same value."""
    identity = _identity(wanted, merge_key, is_map)
    for index, item in enumerate(items):
        if go_equal(_identity(item, merge_key, is_map), identity):
            return index
    return -1


def _identity(item: Any, merge_key: str, is_map: bool) -> Any:
    if not is_map:
        return item
    return item.get(merge_key) if isinstance(item, dict) else None


def _same_element(item: Any, wanted: Any, merge_key: str) -> bool:
    if not merge_key:
        return go_equal(item, wanted)
    _maps([item, wanted])
    _require_merge_key(merge_key, [item, wanted])
    return go_equal(item[merge_key], wanted[merge_key])


def _maps(items: list[Any]) -> list[dict[str, Any]]:
    for item in items:
        if not isinstance(item, dict):
            raise errors.bad_arg_type(MAP_TYPE, item)
    return items


def _require_merge_key(merge_key: str, *lists: list[Any]) -> None:
    for item in chain(*lists):
        if not isinstance(item, dict):
            raise errors.bad_arg_type(MAP_TYPE, item)
        if merge_key not in item:
            raise errors.no_merge_key(item, merge_key)

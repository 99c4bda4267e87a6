"""The directives a strategic merge patch may carry, besides plain values.

JSON has no way to say "delete this list element" or "keep only these keys", so strategic merge patch
reserves keys that start with `$`:

* `"$patch": "replace"` in a map: the rest of this map replaces the old one instead of merging into it;
  in a list element: the other elements of the patch list replace the whole list.
* `"$patch": "delete"` in a map: the map becomes empty; in a list element: delete the element(s) of the
  old list with this merge key value (`{"name": "sidecar", "$patch": "delete"}`).
* `"$retainKeys": [...]` in a map: drop every key of the old map that is not listed (kubectl sends it for
  fields with the retainKeys strategy, e.g. `deployment.spec.strategy` when switching to `Recreate`).
* `"$deleteFromPrimitiveList/<field>": [...]`: remove these values from a merging list of scalars
  (`metadata.finalizers`).
* `"$setElementOrder/<field>": [...]`: the order the merged list should have (see `ordering`).

A value the patch adds where the object has nothing is taken as it is, minus any `$patch` maps inside it
(`strip_directives`) and, at that point, minus its null fields (`discard_nulls`).
"""

from __future__ import annotations

from typing import Any

from . import errors
from .values import go_equal, go_key

DIRECTIVE = "$patch"
REPLACE, DELETE, MERGE = "replace", "delete", "merge"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"


def map_directive(patch: dict[str, Any]) -> dict[str, Any]:
    """The result of a patch map holding `$patch`: the map itself for replace, nothing for delete."""
    directive = patch[DIRECTIVE]
    if directive == REPLACE:
        del patch[DIRECTIVE]
        return patch
    if directive == DELETE:
        return {}
    raise errors.bad_patch_type(directive, patch)


def apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """Honour `$retainKeys`: every key the patch sets must be listed; unlisted keys leave `original`."""
    if RETAIN_KEYS not in patch:
        return
    retained = patch.pop(RETAIN_KEYS)
    if not isinstance(retained, list):
        raise errors.bad_format_for_retain_keys()
    kept = {go_key(key) for key in retained}
    for key, value in patch.items():
        is_directive = key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER))
        if value is not None and not is_directive and go_key(key) not in kept:
            raise errors.bad_format_for_retain_keys()
    for key in [key for key in original if go_key(key) not in kept]:
        del original[key]


def apply_list_directives(original: list[Any], patch: list[dict[str, Any]],
                          merge_key: str) -> tuple[list[Any], list[dict[str, Any]]]:
    """Carry out the `$patch` elements of a patch list of maps.

    Returns the old list without the deleted elements and the patch without its `$patch` elements; when
    one of them says replace, the patch elements become the old list and nothing is left to merge.
    """
    plain, replace = [], False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in item:
                raise errors.no_merge_key(item, merge_key)
            original = [old for old in original
                        if not (merge_key in old and go_equal(old[merge_key], item[merge_key]))]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise errors.merge_directive_in_list()
        else:
            raise errors.bad_patch_type(directive, item)
    return (plain, []) if replace else (original, plain)


def extract_field(key: str, prefix: str) -> str:
    """`$setElementOrder/containers` → `containers`; a key that doesn't have the form is a 400."""
    head, slash, field = key.partition("/")
    if not slash or head != prefix:
        if prefix == SET_ELEMENT_ORDER:
            raise errors.bad_format_for_set_element_order_list()
        raise errors.bad_format_for_primitive_list()
    return field


def strip_directives(value: Any) -> tuple[Any, bool]:
    """`value` without the maps that hold `$patch`, and whether `value` itself is kept (it isn't if it is one)."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for key in list(value):
            stripped, keep = strip_directives(value[key])
            if keep:
                value[key] = stripped
            else:
                del value[key]
        return value, True
    if isinstance(value, list):
        return [stripped for stripped, keep in map(strip_directives, value) if keep], True
    return value, True


def discard_nulls(value: Any) -> None:
    """Drop null fields from every map in `value`: a new value has nothing to delete."""
    if isinstance(value, dict):
        for key in [key for key, item in value.items() if item is None]:
            del value[key]
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            discard_nulls(item)

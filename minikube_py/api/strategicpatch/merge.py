"""The merge itself: a strategic merge patch applied to an object, field by field (apimachinery's `mergeMap`).

Walking the patch and the object together, with the object's type alongside (`patchmeta.TypeSchema`):

* a map in the patch merges into the map of the object, key by key;
* `null` deletes the key;
* a key the object doesn't have, or whose value has another JSON type, takes the patch value;
* a list merges only if its field's strategy is `merge`: lists of maps by merge key (an element the patch
  mentions is merged into the element with the same key, new ones are added, the rest stay), lists of
  scalars as a set union. Any other list is atomic: the patch list replaces it;
* a map field with strategy `replace` (a PodDisruptionBudget's selector) is replaced, not merged;
* scalars are replaced.

Directives (`directives`) are handled on the way in: `$patch` on a map, `$retainKeys` and every
`$setElementOrder/<field>` before the map's other keys, `$deleteFromPrimitiveList/<field>` as it comes up.
The functions change the dicts and lists they are given (the caller passes copies).
"""

from __future__ import annotations

from typing import Any

from . import directives, errors, ordering
from .directives import DELETE_FROM_PRIMITIVE_LIST, DIRECTIVE, SET_ELEMENT_ORDER
from .patchmeta import MERGE, REPLACE, PatchMeta, TypeSchema
from .values import SLICE_TYPE, go_key


def merge_map(original: dict[str, Any], patch: dict[str, Any], schema: TypeSchema) -> dict[str, Any]:
    """Merge `patch` into `original` (a map of type `schema`) and return the result."""
    if DIRECTIVE in patch:
        return directives.map_directive(patch)
    directives.apply_retain_keys(original, patch)
    for key in [key for key in patch if key.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise errors.bad_arg_type(SLICE_TYPE, order)
        _merge_ordered_list(original, patch, directives.extract_field(key, SET_ELEMENT_ORDER), order, schema)
    for key, value in patch.items():
        _merge_field(original, key, value, schema)
    return original


def merge_list(original: list[Any], patch: list[Any], element: TypeSchema, merge_key: str,
               is_delete_list: bool) -> list[Any]:
    """Merge the lists of a `merge` field: maps by merge key, scalars as a set (or remove a delete list)."""
    if not original and not patch:
        return original
    element_type = ordering.element_type(original, patch)
    if element_type is not dict:
        if is_delete_list:
            deleted = {go_key(value) for value in patch}
            return [value for value in original if go_key(value) not in deleted]
        merged = list({go_key(value): value for value in original + patch}.values())
    else:
        if not merge_key:
            raise errors.no_merge_key_declared(element.kind)
        original, patch = directives.apply_list_directives(original, patch, merge_key)
        merged = _merge_by_key(original, patch, merge_key, element)
    mentioned, server_only = ordering.partition(merged, patch, merge_key)
    return ordering.normalize(mentioned, server_only, patch, original, merge_key, element_type is dict)


def _merge_field(original: dict[str, Any], key: str, value: Any, schema: TypeSchema) -> None:
    """Merge one key of a patch map into `original`."""
    is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
    if is_delete_list:
        key = directives.extract_field(key, DELETE_FROM_PRIMITIVE_LIST) or key
    if value is None:
        original.pop(key, None)
    elif key not in original or type(original[key]) is not type(value):
        if not is_delete_list:
            _take_patch_value(original, key, value)
    elif isinstance(value, dict):
        original[key] = _merge_map_field(original[key], value, *schema.lookup_struct(key))
    elif isinstance(value, list):
        original[key] = _merge_list_field(original[key], value, *schema.lookup_slice(key), is_delete_list)
    else:
        original[key] = value


def _merge_map_field(original: dict[str, Any], patch: dict[str, Any], field: TypeSchema,
                     meta: PatchMeta) -> dict[str, Any]:
    return patch if meta.strategy == REPLACE else merge_map(original, patch, field)


def _merge_list_field(original: list[Any], patch: list[Any], element: TypeSchema, meta: PatchMeta,
                      is_delete_list: bool) -> list[Any]:
    if meta.strategy == MERGE or is_delete_list:
        return merge_list(original, patch, element, meta.merge_key, is_delete_list)
    return patch


def _take_patch_value(original: dict[str, Any], key: str, value: Any) -> None:
    directives.discard_nulls(value)
    value, keep = directives.strip_directives(value)
    if keep:
        original[key] = value
    else:
        original.pop(key, None)


def _merge_by_key(original: list[Any], patch: list[dict[str, Any]], merge_key: str,
                  element: TypeSchema) -> list[Any]:
    """Merge each patch element into the old element with its merge key value, or append it."""
    merged = list(original)
    for item in patch:
        if merge_key not in item:
            raise errors.no_merge_key(item, merge_key)
        index = ordering.find_by_key(merged, merge_key, item[merge_key])
        if index < 0:
            merged.append(item)
        else:
            merged[index] = merge_map(merged[index], item, element)
    return merged


def _merge_ordered_list(original: dict[str, Any], patch: dict[str, Any], field: str, order: list[Any],
                        schema: TypeSchema) -> None:
    """Merge the list `field` (if the patch has it) and put it in the order of its `$setElementOrder`."""
    live, change = _list_field(original, field), _list_field(patch, field)
    element, meta = schema.lookup_slice(field)
    ordering.validate_order(change or [], order, meta.merge_key)
    if live is not None and change is not None:
        merged = _merge_list_field(live, change, element, meta, False)
    elif live is not None:
        merged = live
    elif change is not None:
        merged = directives.strip_directives(change)[0]
    else:
        return
    mentioned, server_only = ordering.partition(merged, order, meta.merge_key)
    is_map = ordering.element_type(live or [], change or []) is dict
    original[field] = ordering.normalize(mentioned, server_only, order, live or [], meta.merge_key, is_map)
    patch.pop(field, None)


def _list_field(fields: dict[str, Any], field: str) -> list[Any] | None:
    """The list under `field`, or None if there is none; anything else there is an error."""
    if field not in fields:
        return None
    value = fields[field]
    if not isinstance(value, list):
        raise errors.bad_arg_type(SLICE_TYPE, value)
    return value

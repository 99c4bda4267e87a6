"""Small accessors the defaulting code uses to walk and fill JSON-like dicts.

Defaulting runs after decoding, so fields have the right JSON types; these helpers still never raise on a
wrong type (they treat it as absent and leave it alone), so that a malformed object reaches validation, which
reports it, instead of crashing the request.

`set_default` follows Go's notion of "unset": a missing key or `null`, and for strings also `""`, because kube
defaults string fields with `if x == ""`. Numbers and booleans that are present are never overwritten, even
when zero or false, because in the v1 API those are pointers and an explicit zero is a choice.
"""

from __future__ import annotations

import copy
from typing import Any


def set_default(obj: dict[str, Any], key: str, value: Any) -> None:
    current = obj.get(key)
    if current is None or (current == "" and isinstance(value, str)):
        obj[key] = copy.deepcopy(value)


def child(obj: dict[str, Any], key: str, create: bool = True) -> dict[str, Any]:
    """`obj[key]` as a dict, created empty when missing (unless `create` is false: then a throwaway `{}`)."""
    value = obj.get(key)
    if isinstance(value, dict):
        return value
    if value is None and create:
        obj[key] = {}
        return obj[key]  # type: ignore[no-any-return]
    return {}


def dicts(obj: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The dict items of the list at `obj[key]` (none when the key is missing or not a list)."""
    value = obj.get(key)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]

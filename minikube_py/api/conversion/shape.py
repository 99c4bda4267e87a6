"""Building converted objects the way Go serializes them: which zero values show and which are left out.

Shared by the event and autoscaling converters. Go's encoding/json drops `omitempty` fields holding a zero
value but always writes the others, so converters use `put` for the former and plain assignment (with the
zero value spelled out) for the latter. What they take from the source object is copied (`copy_json`), so
the converted object shares nothing with it.
"""

from __future__ import annotations

from typing import Any

from ..jsoncopy import copy_json

Object = dict[str, Any]


def as_dict(value: Any) -> Object:
    return value if isinstance(value, dict) else {}


def put(out: Object, key: str, value: Any) -> None:
    """Set an `omitempty` field: Go leaves out nil, "", 0, false and empty collections."""
    if value not in (None, "", 0, False, [], {}):
        out[key] = copy_json(value)


def head(api_version: str, kind: str, obj: Object) -> Object:
    out: Object = {"kind": kind, "apiVersion": api_version}
    if "metadata" in obj:
        out["metadata"] = copy_json(obj["metadata"])
    return out

"""Scalar values as Go decodes them: which JSON values fit a Go type, and the error text when one does not.

A typed decode fails on the first value that does not fit its field. The wording of that failure is part of
kube's API (users read it in `kubectl` errors), so these checks return Go's messages: the JSON value's
description for `json: cannot unmarshal <value> into ...`, or the whole message of a type that decodes itself
(Quantity, IntOrString, Time, base64 `[]byte`). Each function returns None when the value fits.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ..validation.quantity import QUANTITY_PATTERN, QuantityError, parse_quantity

_INT_RANGE = {"int32": 1 << 31, "int64": 1 << 63}
_QUANTITY_ERROR = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"


def json_kind(value: Any) -> str:
    """How Go names a JSON value in a type error: `string`, `number`, `bool`, `array`, `object`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    return "array" if isinstance(value, list) else "object"


def integer_mismatch(value: Any, go_type: str) -> str | None:
    """The JSON value's description if it is not a whole number in the range of `go_type` (int32, int64)."""
    if type(value) is int:
        limit = _INT_RANGE.get(go_type, 1 << 63)
        return None if -limit <= value < limit else f"number {value}"
    if type(value) is float:
        return f"number {value!r}"
    return json_kind(value)


def quantity_error(value: Any) -> str | None:
    """`resource.Quantity` takes a string or a number in kube's quantity syntax."""
    try:
        parse_quantity(value)
    except (QuantityError, ValueError, ZeroDivisionError):
        return _QUANTITY_ERROR
    return None


def int_or_string_error(value: Any) -> str | None:
    """`intstr.IntOrString`: a JSON string, else whatever decodes into an int32."""
    if isinstance(value, str):
        return None
    mismatch = integer_mismatch(value, "int32")
    return f"json: cannot unmarshal {mismatch} into Go value of type int32" if mismatch else None


_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error(text: str) -> str | None:
    """A `[]byte` field holds standard padded base64; Go names the first offending input byte.

    Line breaks are skipped; `=` may only pad the last group of four; nothing may follow the padding.
    """
    count = 0  # base64 characters of the current group of four
    for index, char in enumerate(text):
        if char in "\r\n":
            continue
        if char in _BASE64:
            count = (count + 1) % 4
            continue
        if char != "=" or count < 2:
            return _corrupt(index)
        return _padding_error(text, index, count)
    return None if count == 0 else _corrupt(len(text) - count)


def _padding_error(text: str, index: int, count: int) -> str | None:
    rest = [i for i in range(index + 1, len(text)) if text[i] not in "\r\n"]
    if count == 2:
        if not rest:
            return _corrupt(len(text))
        if text[rest[0]] != "=":
            return _corrupt(rest[0] - 1)
        rest = rest[1:]
    return _corrupt(rest[0]) if rest else None


def _corrupt(offset: int) -> str:
    return f"illegal base64 data at input byte {offset}"


RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
# Each layout element with the text it matches, in order; Go reports the first element that fails.
_ELEMENTS = (("2006", r"\d{4}"), ("-", "-"), ("01", r"\d\d"), ("-", "-"), ("02", r"\d\d"), ("T", "T"),
             ("15", r"\d\d"), (":", ":"), ("04", r"\d\d"), (":", ":"), ("05", r"\d\d(?:[.,]\d+)?"),
             ("Z07:00", r"Z|[+-]\d\d:\d\d"))
_RANGES = ((2, 1, 12, "month"), (4, 1, 31, "day"), (6, 0, 23, "hour"), (8, 0, 59, "minute"), (10, 0, 59, "second"))
_ELEMENT_PATTERNS = tuple((element, re.compile(pattern)) for element, pattern in _ELEMENTS)


def time_error(value: Any, layout: str = RFC3339) -> str | None:
    """`metav1.Time` (RFC 3339) and `MicroTime`: a JSON string that parses as a timestamp."""
    if not isinstance(value, str):
        return f"json: cannot unmarshal {json_kind(value)} into Go value of type string"
    return _time_string_error(value, layout)


@functools.lru_cache(maxsize=1024)  # objects carry the same few timestamps (creation, managedFields, status)
def _time_string_error(value: str, layout: str) -> str | None:
    rest, parts = value, []
    for element, pattern in _ELEMENT_PATTERNS:
        match = pattern.match(rest)
        if not match:
            return f'parsing time "{value}" as "{layout}": cannot parse "{rest}" as "{element}"'
        parts.append(match.group())
        rest = rest[match.end():]
    if rest:
        return f'parsing time "{value}": extra text: "{rest}"'
    for index, low, high, name in _RANGES:
        if not low <= int(parts[index][:2]) <= high:
            return f'parsing time "{value}": {name} out of range'
    return None

"""JSON values as kube's strategic merge patch sees them: Go types, Go equality and Go's `%v`.

kube-apiserver decodes a patch into Go's `map[string]interface{}`, so every value has one of seven Go types:
`map[string]interface {}`, `[]interface {}`, `string`, `int64` (JSON integers are kept as integers),
`float64`, `bool` and `nil`. Three consequences matter for a faithful reimplementation:

* equality is Go's interface equality: values of different types are never equal (`1` is not `1.0` and
  `true` is not `1`, unlike in Python), and comparing or hashing two maps or lists makes Go panic;
* the error texts quote values with Go's `%v` (`map[name:web ports:[map[containerPort:80]]]`), with the keys
  of a map sorted;
* type errors name Go types (`expected a []interface {}, but received a string`).

This module holds those three rules so that the merge code can speak Python and still answer like kube.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..errors import APIError, internal
from ..gofmt import go_v

MAP_TYPE = "map[string]interface {}"
SLICE_TYPE = "[]interface {}"
_GO_TYPES: dict[type, str] = {dict: MAP_TYPE, list: SLICE_TYPE, str: "string", int: "int64",
                              float: "float64", bool: "bool"}


def go_type(value: Any) -> str:
    """The Go type name of a decoded JSON value; Go prints a missing (nil) type as `%!s(<nil>)`."""
    return "%!s(<nil>)" if value is None else _GO_TYPES[type(value)]


def go_key(value: Any) -> Hashable:
    """A hashable identity under which two values are equal exactly when Go's `==` says so."""
    if isinstance(value, dict | list):
        raise uncomparable(value)
    return type(value), value


def go_equal(left: Any, right: Any) -> bool:
    """Go's `==` on two `interface{}` values: same type and same value; maps and lists panic."""
    if type(left) is not type(right):
        return False
    return go_key(left) == go_key(right)


def uncomparable(value: Any) -> APIError:
    """What kube answers where Go panics on comparing a map or a list (the panic is recovered as a 500)."""
    return internal(f"runtime error: hash of unhashable type {go_type(value)}")


def go_string(value: Any) -> str:
    """`fmt.Sprintf("%s", value)`: strings as they are, other scalars in Go's `%!s(type=value)` form."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_string(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_string(item) for item in value) + "]"
    if value is None:
        return "%!s(<nil>)"
    return f"%!s({go_type(value)}={go_v(value)})"



"""Go's view of decoded JSON values, and the `field.Error`s kube builds from them.

kube-apiserver holds a custom resource as Go's `map[string]interface{}`: every value is a `map[string]
interface {}`, a `[]interface {}`, a `string`, an `int64` (JSON integers stay integers), a `float64`, a
`bool` or `nil`. The error texts users read are Go renderings of those values, so this module reproduces:

* `go_deep_equal` — `reflect.DeepEqual` (an `int64` is never equal to a `float64`, nor a bool to a number);
* `field.Path` rendering (`child`, `key`, `index`).

The `field.Error` builders and `render_value` (how `ErrorBody()` prints a bad value) live in `api/errors.py`,
shared with the built-in kinds' validation, and are re-exported here.

A FieldError's `message` is what Go's `ErrorBody()` returns, so `FieldError.describe()` equals Go's
`Error()` ("<field>: <body>").
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    FieldError,
    GoRendered,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    render_value,
    required,
    too_long,
    too_many,
    type_invalid,
)
from ..gofmt import (
    INT64_MAX,
    INT64_MIN,
    go_float,
    go_json,
    go_number,
    go_quote,
    go_sharp_v,
    go_v,
    is_float,
    is_int,
    is_number,
)

# re-exported: the CRD schema code reaches Go's renderings and the field.Error builders through `go.`
__all__ = ["INT64_MAX", "INT64_MIN", "FieldError", "GoRendered", "duplicate", "forbidden", "go_float", "go_json",
           "go_number", "go_quote", "go_sharp_v", "go_v", "invalid", "is_float", "is_int", "is_number",
           "not_supported", "render_value", "required", "too_long", "too_many", "type_invalid"]

def go_string_slice(values: list[str]) -> str:
    """`%#v` of a `[]string`."""
    return "[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}"


def go_deep_equal(a: Any, b: Any) -> bool:
    """`reflect.DeepEqual` on two decoded JSON values."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, dict):
        return isinstance(b, dict) and len(a) == len(b) and all(k in b and go_deep_equal(v, b[k])
                                                                for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(go_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_number(a) and is_number(b):
        return is_int(a) == is_int(b) and a == b
    return type(a) is type(b) and a == b


def scalar_key(value: Any) -> tuple[str, Any]:
    """The identity of a scalar as a key of Go's `map[interface{}]...` (type and value)."""
    if isinstance(value, bool):
        return ("bool", value)
    if is_int(value):
        return ("int64", value)
    if is_number(value):
        return ("float64", float(value))
    if value is None:
        return ("nil", None)
    return ("string", value)


# field.Path rendering ------------------------------------------------------------------------------------


def child(path: str | None, name: str) -> str:
    """`path.Child(name)`; None is Go's nil path (the root)."""
    return f"{path}.{name}" if path else name


def key(path: str | None, name: str) -> str:
    """`path.Key(name)`: `spec.labels[app]`."""
    return f"{path or ''}[{name}]"


def index(path: str | None, i: int) -> str:
    return f"{path or ''}[{i}]"


def shown(path: str | None) -> str:
    """`path.String()`: Go prints a nil path as `<nil>`."""
    return "<nil>" if path is None else path

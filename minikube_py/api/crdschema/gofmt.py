"""Go's view of decoded JSON values, and the `field.Error`s kube builds from them.

kube-apiserver holds a custom resource as Go's `map[string]interface{}`: every value is a `map[string]
interface {}`, a `[]interface {}`, a `string`, an `int64` (JSON integers stay integers), a `float64`, a
`bool` or `nil`. The error texts users read are Go renderings of those values, so this module reproduces:

* `render_value` — how `field.Error.ErrorBody()` prints a bad value (`"x"`, `5`, `1e+06`, `true`, `"null"`,
  `map[string]interface {}{"a":1}`);
* `go_deep_equal` — `reflect.DeepEqual` (an `int64` is never equal to a `float64`, nor a bool to a number);
* the `field.Required/Invalid/TypeInvalid/NotSupported/Forbidden/TooLong/TooMany/Duplicate` builders with
  apimachinery 1.32's wording (`Too many: 3: must have at most 2 items`).

A FieldError's `message` is what Go's `ErrorBody()` returns, so `FieldError.describe()` equals Go's
`Error()` ("<field>: <body>").
"""

from __future__ import annotations

from typing import Any

from ..errors import FieldError
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

__all__ = ["INT64_MAX", "INT64_MIN", "go_float", "go_json", "go_number", "go_quote", "go_sharp_v", "go_v", "is_float", "is_int",
           "is_number"]

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


# field.Error builders ------------------------------------------------------------------------------------


def render_value(value: Any) -> str:
    """How `field.Error.ErrorBody()` prints a bad value."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if is_number(value):
        return go_number(value)
    if isinstance(value, GoRendered):
        return value.text
    return go_sharp_v(value)


class GoRendered:
    """A bad value whose Go rendering is given as text (a struct or a typed slice)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _body(kind: str, value: Any, detail: str) -> str:
    body = f"{kind}: {render_value(value)}"
    return f"{body}: {detail}" if detail else body


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else ""))


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, "Forbidden" + (f": {detail}" if detail else ""))


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, _body("Invalid value", value, detail))


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueTypeInvalid", path, _body("Invalid value", value, detail))


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return FieldError("FieldValueNotSupported", path, _body("Unsupported value", value, detail))


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", path, _body("Duplicate value", value, ""))


def too_long(path: str, limit: int) -> FieldError:
    detail = f"may not be more than {limit} bytes" if limit >= 0 else "value is too long"
    return FieldError("FieldValueTooLong", path, f"Too long: {detail}")


def too_many(path: str, actual: int, limit: int) -> FieldError:
    detail = f"must have at most {limit} items" if limit >= 0 else "has too many items"
    body = f"Too many: {actual}: {detail}" if actual >= 0 else f"Too many: {detail}"
    return FieldError("FieldValueTooMany", path, body)


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

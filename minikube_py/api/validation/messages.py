"""Error builders that print values the way kube's Go validation does.

kube formats the bad value of a field error with Go's `%#v` when it is not a plain scalar, so users see
`map[string]string{"app":"web"}` or `v1.LabelSelector{MatchLabels:..., MatchExpressions:...}` in kubectl's
output. The `go_*` functions reproduce those renderings for the types that appear in messages; `invalid_go`,
`not_found`, `too_long`, ... build the `FieldError`s that `api/errors.py` has no helper for, with kube 1.32's
wording. Scalars go through `api/errors.py`'s own helpers.
"""

from __future__ import annotations

import json
from typing import Any

from minikube_py.api.errors import FieldError, invalid
from minikube_py.api.gofmt import go_quote

IMMUTABLE = "field is immutable"
NEGATIVE = "must be greater than or equal to 0"


def go_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    return str(value)


def go_string_map(value: Any) -> str:
    if not isinstance(value, dict):
        return "map[string]string(nil)"
    # Go prints map keys sorted.
    body = ", ".join(f"{go_quote(str(k))}:{go_quote(str(v))}" for k, v in sorted(value.items()))
    return f"map[string]string{{{body}}}"


def go_string_slice(value: Any, type_name: str = "[]string") -> str:
    if not isinstance(value, list):
        return f"{type_name}(nil)"
    return f"{type_name}{{{', '.join(go_quote(str(v)) for v in value)}}}"


def go_int_or_string(value: Any) -> str:
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}"
    number = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return f"intstr.IntOrString{{Type:0, IntVal:{number}, StrVal:\"\"}}"


def _go_requirement(req: dict[str, Any]) -> str:
    return (f"v1.LabelSelectorRequirement{{Key:{go_quote(str(req.get('key', '')))}, "
            f"Operator:{go_quote(str(req.get('operator', '')))}, Values:{go_string_slice(req.get('values'))}}}")


def go_label_selector(selector: Any) -> str:
    """A `*metav1.LabelSelector` as kube prints it (`null` when unset)."""
    if not isinstance(selector, dict):
        return "null"
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        shown = ", ".join(_go_requirement(e) for e in expressions if isinstance(e, dict))
        rendered = f"[]v1.LabelSelectorRequirement{{{shown}}}"
    else:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    return (f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, "
            f"MatchExpressions:{rendered}}}")


def go_struct(type_name: str, fields: dict[str, Any]) -> str:
    """A flat struct of scalars: `core.ServicePort{Name:"", Protocol:"TCP", Port:80}`."""
    body = ", ".join(f"{name}:{value if isinstance(value, GoValue) else go_scalar(value)}"
                     for name, value in fields.items())
    return f"{type_name}{{{body}}}"


class GoValue(str):
    """A value already rendered Go-style: printed as is instead of being quoted."""


def invalid_go(path: str, rendered: str, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, f"Invalid value: {rendered}: {detail}")


def invalid_value(path: str, value: Any, detail: str) -> FieldError:
    """`invalid` with Go's quoting of strings (escapes included) and `null` for unset pointers."""
    if isinstance(value, GoValue):
        return invalid_go(path, value, detail)
    if isinstance(value, str):
        return invalid_go(path, go_quote(value), detail)
    return invalid(path, value, detail)


def not_supported_go(path: str, rendered: str, supported: list[str]) -> FieldError:
    options = ", ".join(go_quote(s) for s in supported)
    return FieldError("FieldValueNotSupported", path, f"Unsupported value: {rendered}: supported values: {options}")


def duplicate_go(path: str, rendered: str) -> FieldError:
    return FieldError("FieldValueDuplicate", path, f"Duplicate value: {rendered}")


def not_found(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError("FieldValueNotFound", path, f"Not found: {go_scalar(value)}" + (f": {detail}" if detail else ""))


def too_long(path: str, limit: int) -> FieldError:
    return FieldError("FieldValueTooLong", path, f"Too long: may not be more than {limit} bytes")


def too_many(path: str, actual: int, limit: int) -> FieldError:
    return FieldError("FieldValueTooMany", path, f"Too many: {actual}: must have at most {limit} items")


def nonnegative(path: str, value: Any) -> list[FieldError]:
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, NEGATIVE)]
    return []


def immutable(path: str, new: Any, old: Any, rendered: str | None = None) -> list[FieldError]:
    """kube's `ValidateImmutableField`: reports the new value when it differs from the old one."""
    if new == old:
        return []
    return [invalid_go(path, rendered if rendered is not None else go_scalar(new), IMMUTABLE)]


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dict_items(value: Any) -> list[dict[str, Any]]:
    return [item for item in as_list(value) if isinstance(item, dict)]


def as_int(value: Any) -> int:
    """The integer kube would decode for a field (absent, null or a wrong type read as Go's zero)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def semantic(value: Any) -> Any:
    """A JSON value normalized for kube's `Semantic.DeepEqual`: unset, empty and null are all the same."""
    if isinstance(value, dict):
        kept = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def diff(old: Any, new: Any, path: str) -> list[str]:
    """One `-`/`+` line pair per changed leaf, to show users which field an immutable update touched."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines: list[str] = []
        for key in list(old) + [k for k in new if k not in old]:
            lines += diff(old.get(key), new.get(key), f"{path}.{key}")
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new, strict=True)) for line in diff(a, b, f"{path}[{i}]")]
    if old == new:
        return []
    return [f"- {path}: {json.dumps(old)}", f"+ {path}: {json.dumps(new)}"]

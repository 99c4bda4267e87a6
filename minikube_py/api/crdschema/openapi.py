"""Schema validation of a custom resource, as kube-openapi's `validate.SchemaValidator` does it for kube 1.32.

apiextensions-apiserver hands each object to kube-openapi's validator (a fork of go-openapi's) and turns
the result into field errors (`kubeOpenAPIResultToFieldErrors`). Users see both layers in one line:

    spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"

`field` and `Invalid value: "string"` come from the conversion; the detail is kube-openapi's own message
(`<path> in body must be of type ...`). How the validator walks a value decides which errors appear:

* each schema node runs, in order, the type, allOf/anyOf/oneOf/not, string, format, number, array, enum and
  object validators that apply to the value's JSON kind; they do not stop at the first failure (a string
  in an integer field with an `enum` reports the type error *and* the enum error);
* a value of the wrong kind is only checked by the validators of its own kind (no `minimum` on a string);
* object properties are checked before `required`; additionalProperties schemas before properties;
* paths are `spec.items[0].name` for properties and items and `spec.labels.app` for map entries;
* errors with the same message are reported once (`Result.AddErrors`);
* `anyOf`/`oneOf` report the alternative that matched the most (`MatchCount`), `not` and the combinators
  report `"<path>" must validate ...` as an error without a field (`<nil>: Invalid value: "": ...`).

Ratcheting (`CRDValidationRatcheting`, on by default since 1.30): on update, an invalid value that is equal
to the value at the same place in the old object does not fail the update. Places correlate through
object properties and `x-kubernetes-list-type: map` keys only (`CorrelatedObject`).
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import FieldError
from . import formats
from . import gofmt as go
from .model import Node

IN = "body"

# kube-openapi error codes (errors/schema.go); "" marks a plain error (no field)
INVALID_TYPE, REQUIRED, TOO_LONG, TOO_SHORT, PATTERN, ENUM, MULTIPLE_OF, MAX, MIN, UNIQUE, MAX_ITEMS, \
    MIN_ITEMS, TOO_FEW_PROPERTIES, TOO_MANY_PROPERTIES, UNALLOWED_PROPERTY, MULTIPLE_OF_POSITIVE = range(601, 617)


class OAError:
    """An `errors.Validation` (code > 0) or a plain `errors.Error` (code 0)."""

    __slots__ = ("code", "name", "message", "value", "valid", "values")

    def __init__(self, code: int, name: str, message: str, value: Any = None, valid: Any = None,
                 values: list[Any] | None = None) -> None:
        self.code, self.name, self.message = code, name, message
        self.value, self.valid, self.values = value, valid, values


class Result:
    __slots__ = ("errors", "match_count")

    def __init__(self, *errors: OAError) -> None:
        self.errors: list[OAError] = []
        self.match_count = 0
        self.add(*errors)

    @property
    def valid(self) -> bool:
        return not self.errors

    def add(self, *errors: OAError) -> None:
        for error in errors:
            if all(error.message != seen.message for seen in self.errors):
                self.errors.append(error)

    def merge(self, *others: Result | None) -> Result:
        for other in others:
            if other is not None:
                self.add(*other.errors)
                self.match_count += other.match_count
        return self

    def inc(self) -> None:
        self.match_count += 1


# ratcheting ----------------------------------------------------------------------------------------------


class Correlation:
    """apiserver's `CorrelatedObject`: a value of the new object, the old value at the same place, and the
    schema there."""

    __slots__ = ("value", "old", "node", "children", "map_list", "equal")

    def __init__(self, value: Any, old: Any, node: Node | None) -> None:
        self.value, self.old, self.node = value, old, node
        self.children: dict[Any, Correlation | None] = {}
        self.map_list: _MapList | None = None
        self.equal: bool | None = None

    def key(self, field: str) -> Correlation | None:
        if self.node is None:
            return None
        if field in self.children:
            return self.children[field]
        if not (isinstance(self.value, dict) and isinstance(self.old, dict)):
            return None
        if field not in self.value or field not in self.old:
            return None
        schema = self.node.properties.get(field) or self.node.additional
        if schema is None:
            return None
        found = self.children[field] = Correlation(self.value[field], self.old[field], schema)
        return found

    def index(self, i: int) -> Correlation | None:
        if self.node is None:
            return None
        if i in self.children:
            return self.children[i]
        if not isinstance(self.value, list) or i >= len(self.value):
            return None
        old = self._old_at(i)
        if old is None or self.node.items is None:
            return None
        found = self.children[i] = Correlation(self.value[i], old, self.node.items)
        return found

    def _old_at(self, i: int) -> Any:
        if not isinstance(self.old, list) or self.node is None or self.node.list_type != "map":
            return None  # atomic lists and sets don't correlate item by item
        if self.map_list is None:
            self.map_list = _MapList(self.node, self.old)
        return self.map_list.get(self.value[i])

    def deep_equal(self) -> bool:
        """`CachedDeepEqual`: equal, where maps are compared through the schema (a key without a schema makes
        them unequal)."""
        if self.equal is None:
            self.equal = self._deep_equal()
        return self.equal

    def _deep_equal(self) -> bool:
        new, old = self.value, self.old
        if new is None or old is None:
            return new is None and old is None
        if isinstance(new, list) != isinstance(old, list) or isinstance(new, dict) != isinstance(old, dict):
            return False
        if isinstance(new, list):
            if len(new) != len(old):
                return False
            for i in range(len(new)):
                item = self.index(i)
                if item is None:
                    return go.go_deep_equal(old, new) if self.map_list is None else False
                if not item.deep_equal():
                    return False
            return True
        if isinstance(new, dict):
            if len(new) != len(old):
                return False
            for k in new:
                item = self.key(k)
                if item is None or not item.deep_equal():
                    return False
            return True
        return go.go_deep_equal(old, new)


class _MapList:
    """The old items of an `x-kubernetes-list-type: map` list, found by the key fields of a new item."""

    def __init__(self, node: Node, items: list[Any]) -> None:
        self.keys = node.list_map_keys if node.type == "array" else []
        self.keyed: dict[Any, Any] = {}
        self.unkeyed = list(items)

    def key_for(self, item: Any) -> Any:
        if not isinstance(item, dict) or not self.keys:
            return None
        parts = []
        for k in self.keys:
            value = item.get(k, _MISSING)
            if value is _MISSING or not (isinstance(value, str | bool) or go.is_number(value)):
                return None
            parts.append(go.scalar_key(value))
        return tuple(parts)

    def get(self, item: Any) -> Any:
        wanted = self.key_for(item)
        if wanted is None:
            return None
        if wanted in self.keyed:
            return self.keyed[wanted]
        while self.unkeyed:
            candidate = self.unkeyed.pop(0)
            found = self.key_for(candidate)
            if found is None:
                continue
            self.keyed.setdefault(found, candidate)
            if found == wanted:
                return candidate
        return None


_MISSING = object()


# the validator -------------------------------------------------------------------------------------------


def validate(node: Node, data: Any, path: str, corr: Correlation | None) -> Result:
    """`SchemaValidator.Validate`, or the ratcheting validator's when the value correlates with an old one."""
    result = _validate(node, data, path, corr)
    if corr is not None and result.errors and corr.deep_equal():
        quiet = Result()  # errors become warnings, which kube drops
        quiet.match_count = result.match_count
        return quiet
    return result


def _kind(data: Any) -> str:
    if isinstance(data, bool):
        return "bool"
    if isinstance(data, str):
        return "string"
    if go.is_int(data):
        return "int"
    if go.is_number(data):
        return "float"
    if isinstance(data, list):
        return "slice"
    return "map" if isinstance(data, dict) else "other"


def _validate(node: Node, data: Any, path: str, corr: Correlation | None) -> Result:
    result = Result()
    if data is None:
        result.merge(_type(node, None, path), _enum(node, None, path))
        return result
    kind = _kind(data)
    steps: list[Result | None] = []
    if node.types or node.format:
        steps.append(_type(node, data, path))
    steps.append(_combinators(node, data, path))
    if kind == "string":
        steps.append(_string(node, data, path))
        if node.format and formats.normalize(node.format) in formats.SUPPORTED:
            steps.append(_format(node, data, path))
    if kind in ("int", "float"):
        steps.append(_number(node, data, path))
    if kind == "slice":
        steps.append(_slice(node, data, path, corr))
    steps.append(_enum(node, data, path))
    if kind == "map":
        steps.append(_object(node, data, path, corr))
    for step in steps:
        result.merge(step)
        result.inc()
    result.inc()
    return result


def _invalid_type(path: str, type_name: str, value: str) -> OAError:
    return OAError(INVALID_TYPE, path, f"{path} in {IN} must be of type {type_name}: {go.go_quote(value)}", value)


def _schema_info(data: Any) -> tuple[str, str]:
    kind = _kind(data)
    return {"bool": ("boolean", ""), "string": ("string", ""), "int": ("integer", "int64"),
            "float": ("number", "float64"), "slice": ("array", ""), "map": ("object", "")}.get(kind, ("", ""))


def is_json_integer(number: float) -> bool:
    """swag's `IsFloat64AJSONInteger`: within ±(2^53-1), and equal to its integer part up to 1e-9 (absolute
    below 1, relative above)."""
    limit = float((1 << 53) - 1)
    if math.isnan(number) or math.isinf(number) or not -limit <= number <= limit:
        return False
    whole = float(math.trunc(number))
    if number == whole:
        return True
    if abs(number) <= 1:
        return abs(number - whole) < 1e-9
    return abs(number - whole) / abs(number) < 1e-9


def _type(node: Node, data: Any, path: str) -> Result:
    ok = Result()
    ok.inc()
    types = node.types
    if data is None:
        if types and "null" not in types and not node.nullable:
            return Result(_invalid_type(path, ",".join(types), "null"))
        return ok
    kind = _kind(data)
    sch_type, sch_format = _schema_info(data)
    float_int = sch_type == "number" and is_json_integer(float(data)) and "integer" in types
    int_float = sch_type == "integer" and "number" in types
    if kind not in ("string", "slice") and node.format and not (
            sch_type in types or sch_format == node.format or float_int or int_float):
        return Result(_invalid_type(path, node.format, sch_format))
    if not ("number" in types or "integer" in types) and node.format and kind in ("string", "slice"):
        return ok
    if not (sch_type in types or float_int or int_float):
        return Result(_invalid_type(path, ",".join(types), sch_type))
    return ok


def _plain(message: str) -> OAError:
    return OAError(0, "", message)


def _combinators(node: Node, data: Any, path: str) -> Result:
    main = Result()
    quoted = go.go_quote(path)
    if node.any_of:
        best: Result | None = None
        first_success: Result | None = None
        for sub in node.any_of:
            result = _validate(sub, data, path, None)
            if result.valid:
                best, first_success = None, first_success or result
                break
            if best is None or result.match_count > best.match_count:
                best = result
        if first_success is None:
            main.add(_plain(f"{quoted} must validate at least one schema (anyOf)"))
        main.merge(best if best is not None else first_success)
    if node.one_of:
        best, first_success, validated = None, None, 0
        for sub in node.one_of:
            result = _validate(sub, data, path, None)
            if result.valid:
                validated += 1
                best, first_success = None, first_success or result
                continue
            if validated == 0 and (best is None or result.match_count > best.match_count):
                best = result
        if validated != 1:
            detail = "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
            main.add(_plain(f"{quoted} must validate one and only one schema (oneOf). {detail}"))
            main.merge(best)
        else:
            main.merge(first_success)
    if node.all_of:
        validated = 0
        for sub in node.all_of:
            result = _validate(sub, data, path, None)
            validated += result.valid
            main.merge(result)
        if validated != len(node.all_of):
            detail = ". None validated" if validated == 0 else ""
            main.add(_plain(f"{quoted} must validate all the schemas (allOf){detail}"))
    if node.not_ is not None and _validate(node.not_, data, path, None).valid:
        main.add(_plain(f"{quoted} must not validate the schema (not)"))
    main.inc()
    return main


def _string(node: Node, data: str, path: str) -> Result | None:
    length = len(data)  # Go counts runes
    if node.max_length is not None and length > node.max_length:
        return Result(OAError(TOO_LONG, path, f"{path} in {IN} should be at most {node.max_length} chars long",
                              data, node.max_length))
    if node.min_length is not None and length < node.min_length:
        return Result(OAError(TOO_SHORT, path, f"{path} in {IN} should be at least {node.min_length} chars long",
                              data, node.min_length))
    if node.pattern_error:
        return Result(OAError(PATTERN, path, f"{path} in {IN} should match '{node.pattern}, but pattern is "
                                             f"invalid: {node.pattern_error}'", data))
    if node.pattern_re is not None and not node.pattern_re.search(data):
        return Result(OAError(PATTERN, path, f"{path} in {IN} should match '{node.pattern}'", data))
    return None


def _format(node: Node, data: str, path: str) -> Result | None:
    if formats.valid(node.format, data):
        return None
    return Result(_invalid_type(path, node.format, data))


def _go_int(number: float) -> int:
    """Go's `int64(f)` (truncation toward zero)."""
    if math.isnan(number) or math.isinf(number):
        return go.INT64_MIN
    return max(go.INT64_MIN, min(go.INT64_MAX, math.trunc(number)))


def _number(node: Node, data: int | float, path: str) -> Result:
    result, multiple, minimum, maximum = Result(), Result(), Result(), Result()
    integer = go.is_int(data)
    if node.multiple_of is not None:
        if integer:
            factor: int | float = _go_int(node.multiple_of)
            if factor <= 0:
                multiple.add(_not_positive(path, factor))
            elif data % factor:  # Go: data/factor*factor != data
                multiple.add(_not_multiple(path, factor, data))
        else:
            factor = node.multiple_of
            value = float(data)
            if factor <= 0:
                multiple.add(_not_positive(path, factor))
            elif not is_json_integer(1 / factor * value if factor < 1 else value / factor):
                multiple.add(_not_multiple(path, factor, data))
    if node.maximum is not None:
        bound = _go_int(node.maximum) if integer else node.maximum
        exclusive = node.exclusive_maximum
        if (data >= bound) if exclusive else (data > bound):
            op = "less than" if exclusive else "less than or equal to"
            maximum.add(OAError(MAX, path, f"{path} in {IN} should be {op} {go.go_number(bound)}", data))
    if node.minimum is not None:
        bound = _go_int(node.minimum) if integer else node.minimum
        exclusive = node.exclusive_minimum
        if (data <= bound) if exclusive else (data < bound):
            op = "greater than" if exclusive else "greater than or equal to"
            minimum.add(OAError(MIN, path, f"{path} in {IN} should be {op} {go.go_number(bound)}", data))
    result.merge(multiple, minimum, maximum)
    result.inc()
    return result


def _not_positive(path: str, factor: int | float) -> OAError:
    return OAError(MULTIPLE_OF_POSITIVE, path,
                   f"factor MultipleOf declared for {path} must be positive: {go.go_number(factor)}", factor)


def _not_multiple(path: str, factor: int | float, data: int | float) -> OAError:
    return OAError(MULTIPLE_OF, path, f"{path} in {IN} should be a multiple of {go.go_number(factor)}", data)


def _slice(node: Node, data: list[Any], path: str, corr: Correlation | None) -> Result:
    result = Result()
    if node.items is not None:
        for i, item in enumerate(data):
            result.merge(validate(node.items, item, f"{path}[{i}]", corr.index(i) if corr else None))
    size = len(data)
    if node.min_items is not None and size < node.min_items:
        result.add(OAError(MIN_ITEMS, path, f"{path} in {IN} should have at least {node.min_items} items", size,
                           node.min_items))
    if node.max_items is not None and size > node.max_items:
        result.add(OAError(MAX_ITEMS, path, f"{path} in {IN} should have at most {node.max_items} items", size,
                           node.max_items))
    if node.unique_items and any(go.go_deep_equal(data[i], data[j]) for j in range(size) for i in range(j)):
        result.add(OAError(UNIQUE, path, f"{path} in {IN} shouldn't contain duplicates"))
    result.inc()
    return result


def _go_convert(data: Any, target: Any) -> tuple[bool, Any]:
    """Go's `reflect.Value.Convert` between the types of two decoded JSON values: (convertible, result)."""
    if isinstance(target, bool) or isinstance(data, bool):
        return (isinstance(target, bool) and isinstance(data, bool)), data
    if isinstance(target, str):
        if isinstance(data, str):
            return True, data
        if go.is_int(data):  # string(rune(n))
            valid = 0 <= data <= 0x10FFFF and not 0xD800 <= data <= 0xDFFF
            return True, chr(data) if valid else "\ufffd"
        return False, None
    if go.is_number(target):
        if not go.is_number(data):
            return False, None
        if go.is_int(target):
            return True, data if go.is_int(data) else _go_int(float(data))
        return True, float(data)
    if isinstance(target, dict):
        return isinstance(data, dict), data
    if isinstance(target, list):
        return isinstance(data, list), data
    return False, None


def _enum(node: Node, data: Any, path: str) -> Result | None:
    if not node.enum:
        return None
    if data is not None:
        for allowed in node.enum:
            if allowed is None:
                continue
            convertible, converted = _go_convert(data, allowed)
            if convertible and go.go_deep_equal(converted, allowed):
                return None
    return Result(OAError(ENUM, path, f"{path} in {IN} should be one of {go.go_v(node.enum)}", data,
                          values=node.enum))


def _object(node: Node, data: dict[str, Any], path: str, corr: Correlation | None) -> Result:
    result = Result()
    size = len(data)
    if node.min_properties is not None and size < node.min_properties:
        result.add(OAError(TOO_FEW_PROPERTIES, path,
                           f"{path} in {IN} should have at least {node.min_properties} properties", size,
                           node.min_properties))
    if node.max_properties is not None and size > node.max_properties:
        result.add(OAError(TOO_MANY_PROPERTIES, path,
                           f"{path} in {IN} should have at most {node.max_properties} properties", size,
                           node.max_properties))
    if node.additional_allows is False:
        for k in data:
            if k not in node.properties:
                result.add(OAError(UNALLOWED_PROPERTY, path, f"{path}.{k} in {IN} is a forbidden property", k))
    elif node.additional is not None:
        for k, value in data.items():
            if k not in node.properties:
                result.merge(validate(node.additional, value, f"{path}.{k}", _child(corr, path, k)))
    for name, prop in node.properties.items():
        if name in data:
            result.merge(validate(prop, data[name], f"{path}.{name}" if path else name, _child(corr, path, name)))
    for name in node.required:
        if name not in data:
            result.add(OAError(REQUIRED, f"{path}.{name}", f"{path}.{name} in {IN} is required"))
    return result


def _child(corr: Correlation | None, path: str, field: str) -> Correlation | None:
    if corr is None or (path == "" and field in ("kind", "apiVersion")):
        return None
    return corr.key(field)


# kube-openapi errors → field errors ----------------------------------------------------------------------


def to_field_errors(prefix: str | None, result: Result) -> list[FieldError]:
    """`kubeOpenAPIResultToFieldErrors(fldPath, result)`; `prefix` None is Go's nil path."""
    out: list[FieldError] = []
    for error in result.errors:
        if not error.code:
            out.append(go.invalid(go.shown(prefix), "", error.message))
            continue
        path = prefix
        if error.name and error.name != ".":
            path = go.child(prefix, error.name.removeprefix("."))
        where = go.shown(path)
        value = "" if error.value is None else error.value
        if error.code == REQUIRED:
            out.append(go.required(where))
        elif error.code == ENUM:
            supported = [v if isinstance(v, str) else go.go_json(v) for v in error.values or []]
            out.append(go.not_supported(where, error.value, supported))
        elif error.code == TOO_LONG:
            out.append(go.too_long(where, error.valid if isinstance(error.valid, int) else -1))
        elif error.code in (MAX_ITEMS, TOO_MANY_PROPERTIES):
            actual = error.value if isinstance(error.value, int) else -1
            out.append(go.too_many(where, actual, error.valid if isinstance(error.valid, int) else -1))
        elif error.code == INVALID_TYPE:
            out.append(go.type_invalid(where, value, error.message))
        else:
            out.append(go.invalid(where, value, error.message))
    return out

"""The typed decode: a request body checked against its kind's field tree, as kube's strict JSON decoding does.

kube-apiserver decodes every body into the kind's Go struct. Doing so it (1) drops keys the struct does not
have, reporting each as `unknown field "<path>"` when asked to be strict, (2) reports keys that appear twice
in one JSON object as `duplicate field "<path>"` (the last one wins), and (3) fails on the first value
that does not fit its Go type (`json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas
of type int32`). `decode` reproduces the three on a parsed body, in place, so that what is stored is what kube
would have stored: no unknown fields, and `null` fields left out (the Go zero value they decode to is what an
omitted field means).

Paths in strict errors name map keys and list indices (`spec.containers[0].foo`, `metadata.labels.app`);
the path in a type error names struct fields only, after the Go struct that holds the field, as Go does.

Duplicate keys are invisible once JSON is parsed into dicts, so bodies that are checked are parsed with
`loads_marking_duplicates`, which marks every object that had repeated keys.

`decode_touched` is `decode` for the result of a merge or strategic merge patch: it decodes only the fields
the patch document reached, since the rest of the object is the live object, decoded when it was written.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from . import scalars
from .tree import (
    ANY,
    BOOL,
    BYTES,
    FLOAT,
    INT32,
    INT64,
    INT_OR_STRING,
    LIST,
    MAP,
    MICRO_TIME,
    QUANTITY,
    STRING,
    STRUCT,
    TIME,
    Node,
)

MAX_STRICT_ERRORS = 100  # kube stops collecting there
# Types with their own Go decoding: their errors are their own messages, not `json: cannot unmarshal`.
_SELF_DECODING = frozenset({QUANTITY, INT_OR_STRING, TIME, MICRO_TIME})
_ZERO = {STRING: "", BOOL: False, INT32: 0, INT64: 0, FLOAT: 0, QUANTITY: "0", INT_OR_STRING: 0}


class DecodeError(Exception):
    """The body does not fit the kind's types; the message is Go's."""


class _Duplicated(dict[str, Any]):
    """A JSON object in which some keys appeared more than once (their last value kept)."""

    order: tuple[str, ...] = ()  # every key as it appeared, repeats included

    def occurrences(self) -> Iterator[tuple[str, bool, bool]]:
        """(key, is a repeat, is its last appearance) for each key in body order."""
        left = Counter(self.order)
        seen: set[str] = set()
        for key in self.order:
            left[key] -= 1
            yield key, key in seen, left[key] == 0
            seen.add(key)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _Duplicated(obj)
    marked.order = tuple(key for key, _ in pairs)
    return marked


def loads_marking_duplicates(raw: bytes | str) -> Any:
    """Parse JSON like `json.loads`, marking objects with repeated keys for `decode` to report."""
    return json.loads(raw, object_pairs_hook=_object)


def has_duplicates(value: Any) -> bool:
    """Whether any object in a document parsed by `loads_marking_duplicates` had repeated keys: a cheap
    test that spares clean documents (nearly all of them) the walk that names each repeat."""
    if isinstance(value, dict):
        return isinstance(value, _Duplicated) or any(has_duplicates(item) for item in value.values()
                                                     if isinstance(item, dict | list))
    if isinstance(value, list):
        return any(has_duplicates(item) for item in value if isinstance(item, dict | list))
    return False


def untyped_strict_errors(value: Any, path: str = "", known_keys: frozenset[str] | None = None) -> list[str]:
    """Strict errors of a document decoded without a kind (a patch): repeated keys at any depth, and keys of
    the top-level objects missing from `known_keys` when it is given."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, repeat, last in _occurrences(value):
            sub_path = f"{path}.{key}" if path else key
            if repeat:
                found.append(f"duplicate field {json.dumps(sub_path, ensure_ascii=False)}")
            if known_keys is not None and key not in known_keys:
                found.append(f"unknown field {json.dumps(sub_path, ensure_ascii=False)}")
            elif last:
                found += untyped_strict_errors(value[key], sub_path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += untyped_strict_errors(item, f"{path}[{index}]", known_keys)
    return list(dict.fromkeys(found))


def _occurrences(obj: dict[str, Any]) -> Iterator[tuple[str, bool, bool]]:
    if isinstance(obj, _Duplicated):
        return obj.occurrences()
    return ((key, False, True) for key in obj)


def decode(tree: Node, body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Check and prune `body` against `tree`: the pruned body and its strict errors, in body order.

    Raises DecodeError for the first value that does not fit its type.
    """
    decoder = _Decoder()
    return decoder.struct(tree, body, "", "", ""), decoder.errors


def decode_touched(tree: Node, patched: dict[str, Any], patch: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`decode` for `patched`, the live object with the merge or strategic merge patch `patch` applied.

    Only the fields `patch` names are decoded, each as `decode` decodes it; where the patch and `patched`
    both hold a JSON object for a struct field, only the keys the patch names inside it are, and so on down.
    The other fields are the live object's and are kept as they are: a merge leaves them alone (a strategic
    merge may reorder a list by `$setElementOrder` or take values out of it, which keeps it clean).

    The result is `decode(tree, patched)`'s (the same pruned object, strict errors in the same order, the
    same DecodeError) whenever the live object is clean, as the live object of a built-in kind is: it was
    decoded when it was written. Unknown fields the live object holds anyway are not reported.
    """
    decoder = _Decoder()
    return decoder.touched(tree, patched, patch, ""), decoder.errors


class _Decoder:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def strict(self, kind: str, path: str) -> None:
        text = f"{kind} {json.dumps(path, ensure_ascii=False)}"
        if len(self.errors) < MAX_STRICT_ERRORS and text not in self.errors:
            self.errors.append(text)

    def value(self, node: Node, value: Any, path: str, go_path: str, struct: str) -> Any:
        kind = node.kind
        if kind == STRUCT:
            return self.struct(node, value, path, go_path, struct)
        if kind == LIST:
            return self.list(node, value, path, go_path, struct)
        if kind == MAP:
            return self.map(node, value, path, go_path, struct)
        problem = _scalar_problem(node, value)
        if problem is None:
            return value
        if kind in _SELF_DECODING or (kind == BYTES and isinstance(value, str)):
            raise DecodeError(problem)
        raise DecodeError(_type_error(problem, node, go_path, struct))

    def struct(self, node: Node, value: Any, path: str, go_path: str, struct: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise DecodeError(_type_error(scalars.json_kind(value), node, go_path, struct))
        if isinstance(value, _Duplicated):
            return self.repeated_keys(node, value, path, go_path, struct)
        for key in list(value):
            self.field(node, value, key, path, go_path)
        return value

    def field(self, node: Node, obj: dict[str, Any], key: str, path: str, go_path: str) -> None:
        """One key of a struct: unknown keys and nulls leave the object, known values are checked."""
        field = node.fields.get(key)
        if field is None:
            if not node.preserve_unknown_fields:
                self.strict("unknown field", f"{path}.{key}" if path else key)
                del obj[key]
        elif obj[key] is None:
            del obj[key]
        else:
            obj[key] = self.value(field, obj[key], f"{path}.{key}" if path else key,
                                  f"{go_path}.{key}" if go_path else key, node.go_type.rpartition(".")[2])

    def touched(self, node: Node, obj: dict[str, Any], patch: dict[str, Any], path: str) -> dict[str, Any]:
        """The fields of struct `obj` that `patch` names, checked in `obj`'s order as `struct` checks them.

        A strategic merge patch's directives (`$patch`, `$retainKeys`, `$setElementOrder/<field>`, ...) are
        consumed by the merge, so they are not keys of `obj` and are passed over; a `$` key the merge does
        not know stays in `obj` as a field and is reported like any unknown field. Only struct fields lead
        here from the top, so `path` is also Go's path.
        """
        for key in [key for key in obj if key in patch]:
            field, value, change = node.fields.get(key), obj[key], patch[key]
            if field is not None and field.kind == STRUCT and isinstance(value, dict) and isinstance(change, dict):
                self.touched(field, value, change, f"{path}.{key}" if path else key)
            else:
                self.field(node, obj, key, path, path)
        return obj

    def list(self, node: Node, value: Any, path: str, go_path: str, struct: str) -> list[Any]:
        if not isinstance(value, list):
            raise DecodeError(_type_error(scalars.json_kind(value), node, go_path, struct))
        element = node.element
        assert element is not None
        for index, item in enumerate(value):
            value[index] = self.element(element, item, f"{path}[{index}]", go_path, struct)
        return value

    def map(self, node: Node, value: Any, path: str, go_path: str, struct: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise DecodeError(_type_error(scalars.json_kind(value), node, go_path, struct))
        if isinstance(value, _Duplicated):
            return self.repeated_keys(node, value, path, go_path, struct)
        element = node.element
        assert element is not None
        for key, item in value.items():
            value[key] = self.element(element, item, f"{path}.{key}", go_path, struct)
        return value

    def repeated_keys(self, node: Node, marked: _Duplicated, path: str, go_path: str, struct: str) -> dict[str, Any]:
        """A struct or map with repeated keys: each repeat is reported where it appears, and the value that
        was kept (the last) is checked at its place."""
        obj = dict(marked)
        for key, repeat, last in marked.occurrences():
            if repeat:
                self.strict("duplicate field", f"{path}.{key}" if path else key)
            if not last:
                continue
            if node.kind == STRUCT:
                self.field(node, obj, key, path, go_path)
            else:
                assert node.element is not None
                obj[key] = self.element(node.element, obj[key], f"{path}.{key}", go_path, struct)
        return obj

    def element(self, node: Node, item: Any, path: str, go_path: str, struct: str) -> Any:
        """A list item or map value: `null` decodes to the element type's zero value."""
        if item is None:
            return {} if node.kind == STRUCT else _ZERO.get(node.kind)
        return self.value(node, item, path, go_path, struct)


def _scalar_problem(node: Node, value: Any) -> str | None:
    kind = node.kind
    if kind == STRING:
        return None if isinstance(value, str) else scalars.json_kind(value)
    if kind in (INT32, INT64):
        return scalars.integer_mismatch(value, kind)
    if kind == BOOL:
        return None if isinstance(value, bool) else scalars.json_kind(value)
    if kind == FLOAT:
        return None if type(value) in (int, float) else scalars.json_kind(value)
    if kind == BYTES:
        return scalars.base64_error(value) if isinstance(value, str) else scalars.json_kind(value)
    if kind == QUANTITY:
        return scalars.quantity_error(value)
    if kind == INT_OR_STRING:
        return scalars.int_or_string_error(value)
    if kind in (TIME, MICRO_TIME):
        return scalars.time_error(value, scalars.RFC3339 if kind == TIME else scalars.RFC3339_MICRO)
    assert kind == ANY
    return None


def _type_error(described: str, node: Node, go_path: str, struct: str) -> str:
    if struct:
        return f"json: cannot unmarshal {described} into Go struct field {struct}.{go_path} of type {node.go_type}"
    return f"json: cannot unmarshal {described} into Go value of type {node.go_type}"

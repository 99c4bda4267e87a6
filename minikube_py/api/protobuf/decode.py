"""Kubernetes protobuf request bodies → the JSON object kube would have produced for them.

Where it sits: request decoding in the apiserver. kubectl's typed clients (`create namespace|deployment|…`,
`auth can-i`, `auth whoami`, `create token`) POST and PUT `application/vnd.kubernetes.protobuf`; the body
decoding calls `decode_protobuf_body(raw)` for that content type and carries on exactly as for a JSON body
(defaults, validation, admission, storage). Answers stay JSON.

The envelope (apimachinery runtime/serializer/protobuf): the magic `k8s\\0`, then a `runtime.Unknown`
{1: typeMeta {1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding, 4: contentType}, where `raw` is the
object encoded with the k8s.io/api message of that kind (see `schema.py`). Like kube, only typeMeta and
raw are read.

How Go's wire becomes kube's JSON, field by field:

* absent on the wire → absent in JSON: nil pointers, empty slices and maps, whatever a client left out;
* gogo-protobuf writes every non-pointer field even when zero, so a zero scalar (`""`, `0`, `false`) of a
  non-pointer `omitempty` field is dropped, as Go's JSON drops it; a pointer keeps its zero (`replicas: 0`)
  and so does a field without omitempty (`allowed: false`: Go writes it);
* an embedded message is an object, `{}` when empty (Go writes non-pointer structs always); `,inline`
  ones (Volume's VolumeSource, Probe's ProbeHandler) are merged into their parent;
* bytes → base64 strings; a whole-number double → an int (Go prints `1`, not `1.0`);
* hand-written JSON forms: Time → RFC 3339 in seconds and MicroTime with microseconds, a zero Time →
  absent (Go writes null, which means the same); Quantity → its string; IntOrString → the int or the
  string (a zero one is a zero scalar); RawExtension, FieldsV1, apiextensions JSON → the JSON in raw;
  ExtraValue → its list; JSONSchemaPropsOr{Array,Bool,StringArray} → the schema or the array/bool;
* unknown field numbers are skipped, as gogo-protobuf skips them.

A body that is not a well-formed envelope, names a kind we do not serve, or does not decode with its
kind's schema → APIError 400 BadRequest worded like kube's. Nothing else escapes.
"""

from __future__ import annotations

import base64
import math
import struct
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .. import errors
from .schema import Field, Schema, load_schema
from .wire import FIXED64, LENGTH_DELIMITED, VARINT, ProtobufError, iter_fields, unpack_varints

MAGIC = b"k8s\x00"
# kube's objects nest under 20 messages deep; the limit keeps a hostile body from exhausting the stack.
MAX_DEPTH = 100
_WIRE_TYPES = {"bool": VARINT, "int32": VARINT, "int64": VARINT, "double": FIXED64}  # the rest: 2
_GO_ZERO_TIME = -62135596800  # 0001-01-01T00:00:00Z, Go's zero time.Time (JSON null) in Unix seconds
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def decode_protobuf_body(raw: bytes) -> dict[str, Any]:
    """Decode an `application/vnd.kubernetes.protobuf` body into the object, with apiVersion and kind set."""
    try:
        api_version, kind, data = _unwrap(raw)
    except ProtobufError as exc:
        raise errors.bad_request(f"the object provided is unrecognized: {exc}") from None
    schema = load_schema()
    message = schema.message_for(api_version, kind)
    if message is None:
        raise errors.bad_request(f'the object provided is unrecognized: no kind "{kind}" is registered '
                                 f'for version "{api_version}"')
    try:
        obj = _decode_message(schema, data, message, depth=0)
    except ProtobufError as exc:
        version = api_version.rpartition("/")[2]
        raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}') from None
    return {"apiVersion": api_version, "kind": kind, **obj}


# --- the envelope ----------------------------------------------------------------------------------------------

def _unwrap(raw: bytes) -> tuple[str, str, bytes]:
    """The envelope's (apiVersion, kind, raw object bytes)."""
    if not raw:
        raise ProtobufError("empty data")
    if not raw.startswith(MAGIC):
        expected = " ".join(str(b) for b in MAGIC)
        raise ProtobufError(f"provided data does not appear to be a protobuf message, expected prefix [{expected}]")
    if len(raw) == len(MAGIC):
        raise ProtobufError("empty body")
    unknown = _envelope_fields(raw[len(MAGIC):], {1: "TypeMeta", 2: "Raw"}, text=False)
    type_meta = _envelope_fields(unknown.get("TypeMeta", b""), {1: "APIVersion", 2: "Kind"}, text=True)
    api_version, kind = type_meta.get("APIVersion", ""), type_meta.get("Kind", "")
    shown = f'runtime.TypeMeta{{APIVersion:"{api_version}", Kind:"{kind}"}}'
    if not kind:
        raise ProtobufError(f"Object 'Kind' is missing in '{shown}'")
    if not api_version:
        raise ProtobufError(f"Object 'apiVersion' is missing in '{shown}'")
    return api_version, kind, unknown.get("Raw", b"")


def _envelope_fields(data: bytes, names: dict[int, str], *, text: bool) -> dict[str, Any]:
    """The length-delimited fields `names` of runtime.Unknown or runtime.TypeMeta, as str (text) or bytes."""
    found: dict[str, Any] = {}
    for number, wire_type, value in iter_fields(data):
        if number not in names:
            continue
        if wire_type != LENGTH_DELIMITED or not isinstance(value, bytes):
            raise ProtobufError(f"proto: wrong wireType = {wire_type} for field {names[number]}")
        found[names[number]] = value.decode("utf-8", errors="replace") if text else value
    return found


# --- messages --------------------------------------------------------------------------------------------------

def _decode_message(schema: Schema, data: bytes, name: str, depth: int) -> Any:
    """One message: a JSON object, or the hand-written JSON form of a special message."""
    if depth > MAX_DEPTH:
        raise ProtobufError(f"messages nested deeper than {MAX_DEPTH} levels")
    fields = schema.messages[name]
    values: dict[int, Any] = {}
    for number, wire_type, raw in iter_fields(data):
        field = fields.get(number)
        if field is not None:
            _add_value(schema, values, number, field, wire_type, raw, depth)
    special = schema.specials.get(name)
    if special:
        return SPECIAL_FORMS[special](values)
    return _to_json(fields, values)


def _add_value(schema: Schema, values: dict[int, Any], number: int, field: Field, wire_type: int,
               raw: int | bytes, depth: int) -> None:
    """Record one occurrence of a field: repeated fields and maps accumulate, singular ones are replaced."""
    if field.map:
        key, item = _map_entry(schema, field, wire_type, raw, depth)
        values.setdefault(number, {})[key] = item
    elif field.repeated and wire_type == LENGTH_DELIMITED and _WIRE_TYPES.get(field.type) == VARINT:
        assert isinstance(raw, bytes)  # a packed run of numbers
        values.setdefault(number, []).extend(_scalar(field.type, v) for v in unpack_varints(raw))
    elif field.repeated:
        values.setdefault(number, []).append(_element(schema, field, wire_type, raw, depth))
    else:
        values[number] = _element(schema, field, wire_type, raw, depth)


def _element(schema: Schema, field: Field, wire_type: int, raw: int | bytes, depth: int) -> Any:
    """One value of the field's type: a scalar or an embedded message."""
    if wire_type != _WIRE_TYPES.get(field.type, LENGTH_DELIMITED):
        raise ProtobufError(f"proto: wrong wireType = {wire_type} for field {field.json_name}")
    if field.is_scalar:
        return _scalar(field.type, raw)
    assert isinstance(raw, bytes)
    return _decode_message(schema, raw, field.type, depth + 1)


def _map_entry(schema: Schema, field: Field, wire_type: int, raw: int | bytes, depth: int) -> tuple[str, Any]:
    """A map entry {1: key, 2: value}; a missing value is the zero of the value type, as in Go."""
    if wire_type != LENGTH_DELIMITED or not isinstance(raw, bytes):
        raise ProtobufError(f"proto: wrong wireType = {wire_type} for field {field.json_name}")
    entry = {number: (entry_wire_type, value) for number, entry_wire_type, value in iter_fields(raw)}
    key = _element(schema, _MAP_KEY, *entry[1], depth) if 1 in entry else ""
    if 2 in entry:
        return key, _element(schema, field, *entry[2], depth)
    if field.is_scalar:
        return key, _ZERO[field.type]
    return key, _decode_message(schema, b"", field.type, depth + 1)


_MAP_KEY = Field("key", "string")
_ZERO: dict[str, Any] = {"string": "", "bytes": b"", "bool": False, "int32": 0, "int64": 0, "double": 0}


def _to_json(fields: dict[int, Field], values: dict[int, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in values.items():
        field = fields[number]
        if field.inline:
            obj.update(value)
        elif _keeps(field, value):
            obj[field.json_name] = _base64(value) if field.type == "bytes" else value
    return obj


def _keeps(field: Field, value: Any) -> bool:
    """Whether Go's JSON would write this decoded value (see the module docstring)."""
    if value is None:
        return False
    return field.pointer or not field.omitempty or isinstance(value, dict) or bool(value)


def _base64(value: bytes | list[bytes] | dict[str, bytes]) -> Any:
    if isinstance(value, dict):
        return {k: base64.b64encode(v).decode() for k, v in value.items()}
    if isinstance(value, list):
        return [base64.b64encode(v).decode() for v in value]
    return base64.b64encode(value).decode()


# --- scalars ---------------------------------------------------------------------------------------------------

def _scalar(type_: str, raw: int | bytes) -> Any:
    """A scalar whose wire type already matched: varints are bool/int32/int64, the rest are bytes."""
    if isinstance(raw, int):
        if type_ == "bool":
            return raw != 0
        return _signed(raw, 32 if type_ == "int32" else 64)
    if type_ == "string":
        return raw.decode("utf-8", errors="replace")  # Go's JSON writes invalid UTF-8 as U+FFFD too
    if type_ == "double":
        return _double(raw)
    return raw  # bytes, base64-encoded when the object is built


def _signed(value: int, bits: int) -> int:
    """Go's intN(uint64): keep the low bits, two's complement."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _double(raw: bytes) -> float | int:
    (value,) = struct.unpack("<d", raw)
    if not math.isfinite(value):
        raise ProtobufError(f"json: unsupported value: {value}")
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


# --- messages with hand-written JSON forms (values are keyed by field number) ----------------------------------

def _time(values: dict[int, Any]) -> str | None:
    """metav1.Time {1: seconds, 2: nanos}: RFC 3339 in seconds (kube drops the nanos); empty is zero."""
    seconds = values.get(1, 0)
    if not values or seconds == _GO_ZERO_TIME:
        return None
    return _utc(seconds, 0).isoformat(timespec="seconds").replace("+00:00", "Z")


def _micro_time(values: dict[int, Any]) -> str | None:
    """metav1.MicroTime {1: seconds, 2: nanos}: RFC 3339 with microseconds (nanos truncated)."""
    seconds, micros = values.get(1, 0), int(values.get(2, 0) / 1000)
    if not values or (seconds == _GO_ZERO_TIME and micros == 0):
        return None
    return _utc(seconds, micros).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _utc(seconds: int, micros: int) -> datetime:
    try:
        return _EPOCH + timedelta(seconds=seconds, microseconds=micros)
    except OverflowError:
        raise ProtobufError("Time.MarshalJSON: year outside of range [0,9999]") from None


def _quantity(values: dict[int, Any]) -> str:
    """resource.Quantity {1: string}; a zero Quantity is "0"."""
    return str(values.get(1, "0"))


def _int_or_string(values: dict[int, Any]) -> int | str:
    """intstr.IntOrString {1: type (0 int, 1 string), 2: intVal, 3: strVal}."""
    kind = values.get(1, 0)
    if kind == 0:
        return int(values.get(2, 0))
    if kind == 1:
        return str(values.get(3, ""))
    raise ProtobufError("impossible IntOrString.Type")


def _raw_json(values: dict[int, Any]) -> Any:
    """RawExtension, FieldsV1, apiextensions JSON {1: raw}: the JSON value in raw; empty is null."""
    raw = values.get(1)
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ProtobufError(f"raw is not valid JSON: {exc}") from None


def _items(values: dict[int, Any]) -> list[Any]:
    """A Go slice type wrapped as {1: items} (authentication's and authorization's ExtraValue)."""
    return list(values.get(1, []))


def _schema_or_array(values: dict[int, Any]) -> Any:
    """JSONSchemaPropsOrArray {1: schema, 2: jSONSchemas}: the array if any, else the schema."""
    return values.get(2) or values.get(1)


def _schema_or_bool(values: dict[int, Any]) -> Any:
    """JSONSchemaPropsOrBool {1: allows, 2: schema}: the schema if set, else the bool."""
    return values[2] if 2 in values else bool(values.get(1, False))


def _schema_or_string_array(values: dict[int, Any]) -> Any:
    """JSONSchemaPropsOrStringArray {1: schema, 2: property}: the strings if any, else the schema."""
    return values.get(2) or values.get(1)


SPECIAL_FORMS = {
    "time": _time,
    "microtime": _micro_time,
    "quantity": _quantity,
    "intorstring": _int_or_string,
    "rawjson": _raw_json,
    "items": _items,
    "schemaorarray": _schema_or_array,
    "schemaorbool": _schema_or_bool,
    "schemaorstringarray": _schema_or_string_array,
}

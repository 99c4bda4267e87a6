"""The protobuf wire format, read: varints, field keys and the wire types kube's messages use.

Where it sits: the lowest layer of protobuf body decoding. `decode.py` walks a message with `iter_fields`
and interprets each value with the schema; nothing here knows about kinds or JSON.

A message is a sequence of fields, each a varint key `number << 3 | wire type` followed by its value:
wire type 0 a varint, 1 eight little-endian bytes (double), 2 a varint length and that many bytes (strings,
bytes, embedded messages, map entries, packed repeated numbers), 5 four bytes. Groups (3, 4) are a proto2
relic kube never writes, and 6 and 7 do not exist.

Malformed input raises `ProtobufError` with the words gogo-protobuf (kube's decoder) would use, so a
400 answer reads like kube's.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
MAX_FIELD_NUMBER = (1 << 29) - 1
_UINT64 = (1 << 64) - 1


class ProtobufError(ValueError):
    """The body is not a protobuf message kube could decode; the message says why."""


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` (bits past 64 dropped, as Go's uint64 does) and the position after it."""
    value = shift = 0
    while True:
        if shift >= 64:
            raise ProtobufError("proto: integer overflow")
        if pos >= len(data):
            raise ProtobufError("unexpected EOF")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & _UINT64, pos
        shift += 7


def _take(data: bytes, pos: int, size: int) -> tuple[bytes, int]:
    end = pos + size
    if end > len(data):
        raise ProtobufError("unexpected EOF")
    return data[pos:end], end


def iter_fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Each field of a message as (number, wire type, value): an int for varints, bytes otherwise."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if not 0 < number <= MAX_FIELD_NUMBER:
            raise ProtobufError(f"proto: illegal tag {number} (wire type {wire_type})")
        value: int | bytes
        if wire_type == VARINT:
            value, pos = read_varint(data, pos)
        elif wire_type == FIXED64:
            value, pos = _take(data, pos, 8)
        elif wire_type == LENGTH_DELIMITED:
            size, pos = read_varint(data, pos)
            value, pos = _take(data, pos, size)
        elif wire_type == FIXED32:
            value, pos = _take(data, pos, 4)
        else:
            raise ProtobufError(f"proto: illegal wireType {wire_type}")
        yield number, wire_type, value


def unpack_varints(data: bytes) -> list[int]:
    """The numbers of a packed repeated field (one length-delimited run of varints)."""
    values, pos = [], 0
    while pos < len(data):
        value, pos = read_varint(data, pos)
        values.append(value)
    return values

"""SPDY/3.1 frames: what kubectl, the kubelet and containerd exchange after `Upgrade: SPDY/3.1`.

SPDY multiplexes many streams over one connection. Every frame starts with 8 bytes:

    control frame:  1 | version (15 bits, = 3) | type (16 bits) | flags (8) | length (24) | payload
    data frame:     0 | stream id (31 bits)                      | flags (8) | length (24) | data

The control frames used here: SYN_STREAM (open a stream, with headers), SYN_REPLY (accept it), RST_STREAM
(abort it), SETTINGS, PING (echo it back), GOAWAY (no new streams), HEADERS and WINDOW_UPDATE (read and
ignored, as Go's spdystream does: it implements no flow control). The FIN flag (1) on SYN_STREAM,
SYN_REPLY or DATA half-closes the stream: the sender will send nothing more on it.

Header blocks (`u32 count, {u32 len, name, u32 len, value}...`, names in lower case) are zlib-compressed
with one compressor per direction for the whole connection, flushed with Z_SYNC_FLUSH after each block, and
a preset dictionary of common HTTP words that the SPDY/3 specification fixes (`DICTIONARY`; both sides must
use it byte for byte: its Adler-32 travels in the zlib header).

`FrameCodec` turns frames into bytes and bytes into frames. Its `feed` accepts the byte stream in pieces of
any size, because frames arrive split across TCP reads and, for kubectl's port-forward tunnel, across
WebSocket messages.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
CANCEL = 5  # the RST_STREAM status we send

Headers = dict[str, str]


def _dictionary() -> bytes:
    """The SPDY/3 header compression dictionary: each word as `u32 length + word`, then a tail of status
    lines, dates and media types written together."""
    words = (
        "options head post put delete trace accept accept-charset accept-encoding accept-language "
        "accept-ranges age allow authorization cache-control connection content-base content-encoding "
        "content-language content-length content-location content-md5 content-range content-type date etag "
        "expect expires from host if-match if-modified-since if-none-match if-range if-unmodified-since "
        "last-modified location max-forwards pragma proxy-authenticate proxy-authorization range referer "
        "retry-after server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate "
        "method get status"
    ).split() + ["200 OK"] + "version HTTP/1.1 url public set-cookie keep-alive origin".split()
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    )
    return b"".join(struct.pack(">I", len(word)) + word.encode() for word in words) + tail.encode()


DICTIONARY = _dictionary()


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3.1; the connection cannot go on."""


# frames ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    fin: bool = False
    associated_id: int = 0
    priority: int = 0


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Ping:
    id: int


@dataclass(frozen=True)
class GoAway:
    last_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class Ignored:
    """A frame we read and do not act on (SETTINGS, HEADERS, WINDOW_UPDATE, unknown types)."""

    type: int


Frame = DataFrame | SynStream | SynReply | RstStream | Ping | GoAway | Ignored


def _control(frame_type: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload)) + payload


def encode_header_block(headers: Headers) -> bytes:
    """The uncompressed header block: names in lower case, sorted (Go writes them sorted too)."""
    items = sorted((name.lower(), value) for name, value in headers.items())
    out = [struct.pack(">I", len(items))]
    for name, value in items:
        raw_name, raw_value = name.encode(), value.encode()
        out += [struct.pack(">I", len(raw_name)), raw_name, struct.pack(">I", len(raw_value)), raw_value]
    return b"".join(out)


def decode_header_block(block: bytes) -> Headers:
    """The headers of an uncompressed block. Several values of one name are NUL-separated in SPDY; they are
    kept that way. Raises ProtocolError for a truncated block."""
    try:
        (count,), at, headers = struct.unpack_from(">I", block), 4, {}
        for _ in range(count):
            (length,) = struct.unpack_from(">I", block, at)
            name, at = block[at + 4:at + 4 + length].decode(), at + 4 + length
            (length,) = struct.unpack_from(">I", block, at)
            value, at = block[at + 4:at + 4 + length].decode(), at + 4 + length
            headers[name.lower()] = value
    except (struct.error, UnicodeDecodeError) as err:
        raise ProtocolError(f"malformed SPDY header block: {err}") from None
    if at != len(block):
        raise ProtocolError("malformed SPDY header block: trailing or missing bytes")
    return headers


class FrameCodec:
    """Encoding and incremental decoding of one connection's frames (each direction's zlib state)."""

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(zdict=DICTIONARY)
        self._decompressor = zlib.decompressobj(zdict=DICTIONARY)
        self._buffer = bytearray()

    def _compress(self, headers: Headers) -> bytes:
        block = encode_header_block(headers)
        return self._compressor.compress(block) + self._compressor.flush(zlib.Z_SYNC_FLUSH)

    def _decompress(self, data: bytes) -> Headers:
        try:
            block = self._decompressor.decompress(data)
        except zlib.error as err:
            raise ProtocolError(f"cannot decompress SPDY headers: {err}") from None
        return decode_header_block(block)

    def encode(self, frame: Frame) -> bytes:
        match frame:
            case DataFrame(stream_id, data, fin):
                return struct.pack(">II", stream_id & 0x7FFFFFFF, (int(fin) << 24) | len(data)) + data
            case SynStream(stream_id, headers, fin, associated_id, priority):
                head = struct.pack(">IIBB", stream_id, associated_id, (priority & 7) << 5, 0)
                return _control(SYN_STREAM, FLAG_FIN if fin else 0, head + self._compress(headers))
            case SynReply(stream_id, headers, fin):
                return _control(SYN_REPLY, FLAG_FIN if fin else 0,
                                struct.pack(">I", stream_id) + self._compress(headers))
            case RstStream(stream_id, status):
                return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))
            case Ping(ping_id):
                return _control(PING, 0, struct.pack(">I", ping_id))
            case GoAway(last_stream_id, status):
                return _control(GOAWAY, 0, struct.pack(">II", last_stream_id, status))
        raise TypeError(f"cannot encode {frame!r}")

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by `data` (none while a frame is still incomplete)."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            first, flags_length = struct.unpack_from(">II", self._buffer)
            length = flags_length & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            flags = flags_length >> 24
            if first & 0x80000000:
                frames.append(self._control_frame(first, flags, payload))
            else:
                frames.append(DataFrame(first & 0x7FFFFFFF, payload, bool(flags & FLAG_FIN)))
        return frames

    def _control_frame(self, first: int, flags: int, payload: bytes) -> Frame:
        version, frame_type = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        fin = bool(flags & FLAG_FIN)
        try:
            if frame_type == SYN_STREAM:
                stream_id, associated, priority = struct.unpack_from(">IIB", payload)
                return SynStream(stream_id & 0x7FFFFFFF, self._decompress(payload[10:]), fin,
                                 associated & 0x7FFFFFFF, priority >> 5)
            if frame_type == SYN_REPLY:
                (stream_id,) = struct.unpack_from(">I", payload)
                return SynReply(stream_id & 0x7FFFFFFF, self._decompress(payload[4:]), fin)
            if frame_type == RST_STREAM:
                stream_id, status = struct.unpack_from(">II", payload)
                return RstStream(stream_id & 0x7FFFFFFF, status)
            if frame_type == PING:
                return Ping(struct.unpack_from(">I", payload)[0])
            if frame_type == GOAWAY:
                last, status = struct.unpack_from(">II", payload)
                return GoAway(last & 0x7FFFFFFF, status)
            if frame_type == HEADERS:
                self._decompress(payload[4:])  # keeps the decompressor in step with the peer's compressor
        except struct.error:
            raise ProtocolError(f"truncated SPDY control frame of type {frame_type}") from None
        return Ignored(frame_type)

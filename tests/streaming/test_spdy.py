"""SPDY/3.1 framing: the dictionary, header blocks, every frame type, frames split at any byte."""

from __future__ import annotations

import struct
import zlib

import pytest

from minikube_py.streaming import spdy


def test_dictionary_is_the_one_the_spdy3_specification_fixes() -> None:
    # length and Adler-32 (the DICTID every SPDY/3 peer puts in its zlib header) of the spec's dictionary
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2


def test_header_block_names_are_lowercased_and_sorted() -> None:
    block = spdy.encode_header_block({"StreamType": "error", "port": "80"})
    assert block == (struct.pack(">I", 2) + struct.pack(">I", 4) + b"port" + struct.pack(">I", 2) + b"80"
                     + struct.pack(">I", 10) + b"streamtype" + struct.pack(">I", 5) + b"error")
    assert spdy.decode_header_block(block) == {"port": "80", "streamtype": "error"}


def test_truncated_header_block_is_a_protocol_error() -> None:
    with pytest.raises(spdy.ProtocolError, match="malformed"):
        spdy.decode_header_block(struct.pack(">II", 1, 10) + b"abc")


FRAMES = [
    spdy.SynStream(1, {"streamtype": "error", "port": "8080", "requestid": "0"}),
    spdy.SynStream(3, {"streamtype": "stdin"}, fin=True, priority=0),
    spdy.SynReply(1, {}),
    spdy.SynReply(3, {"x": "y"}, fin=True),
    spdy.DataFrame(1, b"hello"),
    spdy.DataFrame(3, b"", fin=True),
    spdy.RstStream(5, spdy.CANCEL),
    spdy.Ping(7),
    spdy.GoAway(9, 0),
]


def test_every_frame_survives_a_round_trip_through_two_codecs() -> None:
    sender, receiver = spdy.FrameCodec(), spdy.FrameCodec()
    wire = b"".join(sender.encode(frame) for frame in FRAMES)
    assert receiver.feed(wire) == FRAMES


def test_frames_split_at_every_byte_decode_the_same() -> None:
    """kubectl's port-forward tunnel writes one frame in several WebSocket messages (2+2+4 bytes...)."""
    sender, receiver = spdy.FrameCodec(), spdy.FrameCodec()
    wire = b"".join(sender.encode(frame) for frame in FRAMES)
    decoded = []
    for i in range(len(wire)):
        decoded += receiver.feed(wire[i:i + 1])
    assert decoded == FRAMES


def test_control_frame_layout_on_the_wire() -> None:
    assert spdy.FrameCodec().encode(spdy.Ping(1)) == bytes.fromhex("80030006 00000004 00000001")
    assert spdy.FrameCodec().encode(spdy.DataFrame(3, b"ab", fin=True)) == bytes.fromhex("00000003 01000002 6162")


def test_header_compression_uses_the_dictionary_and_sync_flushes() -> None:
    frame = spdy.FrameCodec().encode(spdy.SynStream(1, {"streamtype": "data"}))
    compressed = frame[18:]
    # zlib header with FDICT set, then the dictionary's Adler-32; Z_SYNC_FLUSH ends with 00 00 ff ff
    assert compressed[1] & 0x20 and struct.unpack(">I", compressed[2:6])[0] == zlib.adler32(spdy.DICTIONARY)
    assert compressed.endswith(b"\x00\x00\xff\xff")
    plain = zlib.decompressobj(zdict=spdy.DICTIONARY).decompress(compressed)
    assert spdy.decode_header_block(plain) == {"streamtype": "data"}


def test_unknown_and_flow_control_frames_are_read_and_ignored() -> None:
    settings = struct.pack(">HHI", 0x8003, spdy.SETTINGS, 4) + struct.pack(">I", 0)
    window = struct.pack(">HHI", 0x8003, spdy.WINDOW_UPDATE, 8) + struct.pack(">II", 1, 100)
    assert spdy.FrameCodec().feed(settings + window) == [spdy.Ignored(spdy.SETTINGS), spdy.Ignored(spdy.WINDOW_UPDATE)]


def test_other_spdy_versions_are_refused() -> None:
    with pytest.raises(spdy.ProtocolError, match="version 2"):
        spdy.FrameCodec().feed(struct.pack(">HHI", 0x8002, spdy.PING, 4) + b"\0\0\0\1")


def test_headers_compressed_by_a_different_dictionary_are_refused() -> None:
    compressor = zlib.compressobj(zdict=b"not the spdy dictionary")
    block = compressor.compress(spdy.encode_header_block({"a": "b"})) + compressor.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIBB", 1, 0, 0, 0) + block
    with pytest.raises(spdy.ProtocolError, match="decompress"):
        spdy.FrameCodec().feed(struct.pack(">HHI", 0x8003, spdy.SYN_STREAM, len(payload)) + payload)

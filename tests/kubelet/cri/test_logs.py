"""The CRI log format and `read_log`, which serves container logs the way `kubectl logs` shows them."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from minikube_py.kubelet.cri import logs
from minikube_py.kubelet.cri.logs import LogLine, format_line, format_timestamp, parse_line, read_log

T0 = datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def write(path: Path, *lines: bytes) -> None:
    with open(path, "ab") as file:
        file.write(b"".join(lines))


async def collect(path: Path, **options) -> bytes:
    return b"".join([chunk async for chunk in read_log(path, **options)])


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "0.log"
    write(
        path,
        format_line("stdout", b"one", at(0)),
        format_line("stderr", b"two", at(1)),
        format_line("stdout", b"three", at(2)),
    )
    return path


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "POLL_INTERVAL", 0.01)


# --- the format ---


def test_a_line_is_time_stream_tag_and_content() -> None:
    assert format_line("stdout", b"hi", T0) == b"2024-01-02T03:04:05.123456000Z stdout F hi\n"
    assert format_line("stderr", b"to", T0, partial=True) == b"2024-01-02T03:04:05.123456000Z stderr P to\n"


def test_format_and_parse_round_trip() -> None:
    cases = [("stdout", b"hi there", False), ("stderr", b"", True), ("stdout", b" x ", False)]
    for stream, content, partial in cases:
        assert parse_line(format_line(stream, content, T0, partial)) == LogLine(T0, stream, partial, content)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-02T03:04:05.123456789Z", T0),
        ("2024-01-02T03:04:05.1Z", datetime(2024, 1, 2, 3, 4, 5, 100000, tzinfo=UTC)),
        ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T04:04:05.123456+01:00", T0),
    ],
    ids=["nanoseconds", "trimmed fraction", "no fraction", "an offset"],
)
def test_parse_accepts_the_timestamps_runtimes_write(text: str, expected: datetime) -> None:
    assert parse_line(f"{text} stdout F x".encode()).time == expected


def test_extra_tags_after_the_first_are_ignored() -> None:
    assert parse_line(b"2024-01-02T03:04:05Z stdout P:future x").partial


@pytest.mark.parametrize(
    "line",
    [b"", b"garbage", b"2024-01-02T03:04:05Z stdout F", b"2024-01-02 03:04:05Z stdout F x",
     b"2024-01-02T03:04:05Z stdfoo F x", b"2024-01-02T03:04:05Z stdout X x", b"yesterday stdout F x"],
    ids=["empty", "no fields", "no content separator", "space in time", "bad stream", "bad tag", "bad time"],
)
def test_malformed_lines_are_refused(line: bytes) -> None:
    with pytest.raises(ValueError):
        parse_line(line)


def test_format_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="single line"):
        format_line("stdout", b"two\nlines", T0)
    with pytest.raises(ValueError, match="stdout or stderr"):
        format_line("stdin", b"x", T0)


def test_timestamps_print_in_utc_with_nine_digits() -> None:
    local = datetime(2024, 1, 2, 4, 4, 5, tzinfo=UTC).astimezone(timezone(timedelta(hours=2)))
    assert format_timestamp(local) == "2024-01-02T04:04:05.000000000Z"


# --- reading ---


async def test_read_prints_the_contents_of_both_streams_in_order(log: Path) -> None:
    assert await collect(log) == b"one\ntwo\nthree\n"


async def test_partial_lines_are_joined(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    write(
        path,
        format_line("stdout", b"a long ", at(0), partial=True),
        format_line("stderr", b"interleaved", at(1)),
        format_line("stdout", b"line", at(2)),
    )
    assert await collect(path) == b"interleaved\na long line\n"
    assert await collect(path, timestamps=True) == (
        f"{format_timestamp(at(1))} interleaved\n{format_timestamp(at(0))} a long line\n".encode()
    )


async def test_a_line_left_partial_at_the_end_is_printed_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    write(path, format_line("stdout", b"done", at(0)), format_line("stdout", b"cut", at(1), partial=True))
    assert await collect(path) == b"done\ncut"


async def test_garbage_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    write(path, b"not a log line\n", format_line("stdout", b"ok", at(0)), b"\n", b"\xff\xfe\n")
    assert await collect(path) == b"ok\n"


async def test_timestamps_prefix_each_line(log: Path) -> None:
    assert (await collect(log, timestamps=True)).splitlines()[0] == b"2024-01-02T03:04:05.123456000Z one"


@pytest.mark.parametrize(("tail", "expected"), [(0, b""), (2, b"two\nthree\n"), (10, b"one\ntwo\nthree\n")])
async def test_tail_lines_keeps_the_last_n(log: Path, tail: int, expected: bytes) -> None:
    assert await collect(log, tail_lines=tail) == expected


async def test_since_drops_older_lines(log: Path) -> None:
    assert await collect(log, since=at(1)) == b"two\nthree\n"
    assert await collect(log, since=at(1), tail_lines=1) == b"three\n"


async def test_limit_bytes_cuts_the_output(log: Path) -> None:
    assert await collect(log, limit_bytes=6) == b"one\ntw"
    assert await collect(log, limit_bytes=100) == b"one\ntwo\nthree\n"


@pytest.mark.parametrize(
    ("options", "message"),
    [({"tail_lines": -1}, "tail_lines"), ({"limit_bytes": 0}, "limit_bytes"),
     ({"since": datetime(2024, 1, 1)}, "timezone-aware")],
    ids=["negative tail", "zero limit", "naive since"],
)
async def test_bad_options_are_refused(log: Path, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await collect(log, **options)


async def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await collect(tmp_path / "missing.log")


# --- following ---


async def test_follow_picks_up_appended_lines_and_stops_when_told(log: Path) -> None:
    stopped = False
    reader = read_log(log, follow=True, tail_lines=1, stop_following=lambda: stopped)

    assert await anext(reader) == b"three\n"
    pending = asyncio.ensure_future(anext(reader))
    await asyncio.sleep(0.05)
    assert not pending.done()
    write(log, format_line("stdout", b"four", at(3)))
    assert await asyncio.wait_for(pending, 2) == b"four\n"

    write(log, format_line("stdout", b"last", at(4)))
    stopped = True
    assert [chunk async for chunk in reader] == [b"last\n"]


async def test_follow_continues_in_the_new_file_after_a_rotation(log: Path) -> None:
    stopped = False
    reader = read_log(log, follow=True, stop_following=lambda: stopped)
    assert [await anext(reader) for _ in range(3)] == [b"one\n", b"two\n", b"three\n"]

    # What the kubelet and containerd do: rename the file, the runtime writes a last line to the old one,
    # then reopens its log at the same path (ReopenContainerLog) and writes there.
    rotated = log.with_name("0.log.20240102-030406")
    os.rename(log, rotated)
    write(rotated, format_line("stdout", b"late in the old file", at(3)))
    await asyncio.sleep(0.03)
    write(log, format_line("stdout", b"first in the new file", at(4)))

    assert await asyncio.wait_for(anext(reader), 2) == b"late in the old file\n"
    assert await asyncio.wait_for(anext(reader), 2) == b"first in the new file\n"
    stopped = True
    assert [chunk async for chunk in reader] == []


async def test_follow_without_stop_condition_waits_until_the_consumer_stops(log: Path) -> None:
    open_files = len(os.listdir("/proc/self/fd"))
    reader = read_log(log, follow=True, tail_lines=0)
    pending = asyncio.ensure_future(anext(reader))
    await asyncio.sleep(0.05)
    assert not pending.done()
    assert len(os.listdir("/proc/self/fd")) == open_files + 1

    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    await reader.aclose()
    assert len(os.listdir("/proc/self/fd")) == open_files

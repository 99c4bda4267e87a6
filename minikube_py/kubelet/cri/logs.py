"""Container log files in the CRI format, and reading them the way `kubectl logs` shows them.

A runtime writes each container's stdout and stderr to the file at its `log_path`
(`<pod log dir>/<container>/<restart count>.log`), one line per line of output:

    2024-01-02T03:04:05.123456789Z stdout F hello world
    2024-01-02T03:04:05.200000000Z stderr P a very long line is cut into
    2024-01-02T03:04:05.200000100Z stderr F  several partial pieces

i.e. `<RFC 3339 time with nanoseconds> <stream> <tag> <content>`, where tag `F` ends a line and `P` marks
a piece of a line that continues in the next `P`/`F` entry of the same stream. The kubelet, not the
runtime, serves these files to `kubectl logs` (through the apiserver): `read_log` does that job, with the
same options (tail, since, timestamps, follow, limit-bytes). When following, it survives log rotation:
the kubelet renames a full file aside and asks the runtime (ReopenContainerLog) to start a new one at the
same path; the reader finishes the old file and continues with the new one.

Python datetimes hold microseconds, so times read back lose the last three of containerd's nine digits.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

STREAMS = ("stdout", "stderr")
FULL, PARTIAL = b"F", b"P"
POLL_INTERVAL = 0.1  # seconds between looks at a followed file that has no new data
_CHUNK_BYTES = 64 * 1024

_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


@dataclass(frozen=True)
class LogLine:
    """One entry of a log file; `content` excludes the newline, `partial` means the line continues."""

    time: datetime
    stream: str
    partial: bool
    content: bytes


def format_timestamp(when: datetime) -> str:
    """`when` as RFC 3339 in UTC with nine fractional digits, as the kubelet prints it for --timestamps."""
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}000Z"


def parse_timestamp(text: str) -> datetime:
    """Parses an RFC 3339 time with up to nine fractional digits (what runtimes write) into a UTC datetime."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    seconds, fraction, offset = match.groups()
    micros = (fraction or "").ljust(6, "0")[:6]
    return datetime.fromisoformat(f"{seconds}.{micros}{offset}").astimezone(UTC)


def format_line(stream: str, content: bytes, when: datetime, partial: bool = False) -> bytes:
    """One log file line for `content` (which must not contain a newline) written at `when`."""
    if stream not in STREAMS:
        raise ValueError(f"log stream must be stdout or stderr, not {stream!r}")
    if b"\n" in content:
        raise ValueError("log content must be a single line: split it at newlines first")
    tag = PARTIAL if partial else FULL
    return b"%s %s %s %s\n" % (format_timestamp(when).encode(), stream.encode(), tag, content)


def parse_line(line: bytes) -> LogLine:
    """Parses one log file line (with or without its newline); raises ValueError when it is malformed."""
    fields = line.removesuffix(b"\n").split(b" ", 3)
    if len(fields) != 4:
        raise ValueError(f"not a CRI log line: {line[:100]!r}")
    timestamp, stream_field, tags, content = fields
    stream = stream_field.decode(errors="replace")
    # The tag field may carry more ":"-separated tags in future CRI versions; the first is F or P.
    tag = tags.split(b":")[0]
    if stream not in STREAMS or tag not in (FULL, PARTIAL):
        raise ValueError(f"not a CRI log line: {line[:100]!r}")
    return LogLine(parse_timestamp(timestamp.decode(errors="replace")), stream, tag == PARTIAL, content)


async def read_log(
    path: str | os.PathLike[str],
    *,
    tail_lines: int | None = None,
    since: datetime | None = None,
    timestamps: bool = False,
    follow: bool = False,
    limit_bytes: int | None = None,
    stop_following: Callable[[], bool] | None = None,
) -> AsyncIterator[bytes]:
    """Yields the log at `path` as `kubectl logs` prints it: one chunk per line, partial pieces joined.

    tail_lines: only the last N lines (then, when following, everything new). since: only lines written at
    or after that (timezone-aware) time. timestamps: prefix each line with its time. limit_bytes: stop after
    that many bytes of output. follow: keep waiting for new lines, across rotations, until
    `stop_following()` (e.g. "the container has exited") returns true and the file has been read to its
    end; without `stop_following`, until the consumer stops iterating. Malformed lines are skipped.
    Raises FileNotFoundError when there is no log file.
    """
    if tail_lines is not None and tail_lines < 0:
        raise ValueError(f"tail_lines must be >= 0, not {tail_lines}")
    if limit_bytes is not None and limit_bytes < 1:
        raise ValueError(f"limit_bytes must be >= 1, not {limit_bytes}")
    if since is not None and since.tzinfo is None:
        raise ValueError("since must be a timezone-aware datetime")
    remaining = limit_bytes
    lines = _joined_lines(_raw_lines(path, follow, stop_following))
    async for line in _selected(lines, tail_lines, since):
        chunk = line.content if line.partial else line.content + b"\n"
        if timestamps:
            chunk = format_timestamp(line.time).encode() + b" " + chunk
        if remaining is not None:
            chunk = chunk[:remaining]
            remaining -= len(chunk)
        yield chunk
        if remaining == 0:
            return


class _CaughtUp:
    """Marker in the stream of raw lines: everything written so far has been read."""


_CAUGHT_UP = _CaughtUp()


async def _raw_lines(
    path: str | os.PathLike[str], follow: bool, stop_following: Callable[[], bool] | None
) -> AsyncIterator[bytes | _CaughtUp]:
    """The lines of the file at `path`, then, when following, new lines and those of the files after it."""
    file = open(path, "rb")
    unterminated = b""
    stopping = False
    try:
        while True:
            chunk = file.read(_CHUNK_BYTES)
            if chunk:
                *complete, unterminated = (unterminated + chunk).split(b"\n")
                for line in complete:
                    yield line
                continue
            if not follow:
                break
            yield _CAUGHT_UP
            successor = _reopen_if_rotated(file, path)
            if successor is not None:
                # The runtime may have written to the old file after our last read: finish it first.
                for line in (unterminated + file.read()).split(b"\n"):
                    if line:
                        yield line
                file.close()
                file, unterminated = successor, b""
                continue
            if stopping:
                break
            # Check the stop condition first and read once more after it became true, so lines written
            # just before the container exited are not lost.
            stopping = stop_following is not None and stop_following()
            if not stopping:
                await asyncio.sleep(POLL_INTERVAL)
        if unterminated:
            yield unterminated
    finally:
        file.close()


def _reopen_if_rotated(file: BinaryIO, path: str | os.PathLike[str]) -> BinaryIO | None:
    """A new file at `path` if the one we read was renamed away and a new one created, else None."""
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return None  # renamed, and the runtime has not reopened its log yet
    ours = os.fstat(file.fileno())
    if (current.st_dev, current.st_ino) == (ours.st_dev, ours.st_ino):
        return None
    return open(path, "rb")


async def _joined_lines(raw: AsyncIterator[bytes | _CaughtUp]) -> AsyncIterator[LogLine | _CaughtUp]:
    """Parses raw lines, joins each stream's partial pieces into whole lines and drops malformed ones.

    A joined line carries the time of its first piece. Pieces still open at the end come out as a line with
    `partial` set (a container that died mid-line).
    """
    open_pieces: dict[str, list[LogLine]] = {}
    async for item in raw:
        if isinstance(item, _CaughtUp):
            yield item
            continue
        try:
            line = parse_line(item)
        except ValueError:
            continue
        pieces = open_pieces.setdefault(line.stream, [])
        pieces.append(line)
        if not line.partial:
            yield _join(open_pieces.pop(line.stream))
    for pieces in open_pieces.values():
        yield _join(pieces)


def _join(pieces: list[LogLine]) -> LogLine:
    first, last = pieces[0], pieces[-1]
    return LogLine(first.time, first.stream, last.partial, b"".join(piece.content for piece in pieces))


async def _selected(
    lines: AsyncIterator[LogLine | _CaughtUp], tail_lines: int | None, since: datetime | None
) -> AsyncIterator[LogLine]:
    """Applies `since` and `tail_lines`: the tail is taken from what was written before the first catch-up."""
    backlog: deque[LogLine] | None = deque(maxlen=tail_lines) if tail_lines is not None else None
    async for item in lines:
        if isinstance(item, _CaughtUp):
            if backlog is not None:
                for line in backlog:
                    yield line
                backlog = None
            continue
        if since is not None and item.time < since:
            continue
        if backlog is not None:
            backlog.append(item)
        else:
            yield item
    for line in backlog or ():
        yield line

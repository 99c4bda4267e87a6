"""The two timestamp forms of the API: `metav1.Time` (RFC 3339, whole seconds, `2024-01-02T03:04:05Z`) and
`metav1.MicroTime` (with microseconds, `2024-01-02T03:04:05.123456Z`), always in UTC.

Every component writes its timestamps through these, so the forms never drift apart. "Now" as a Time is
asked for several times per API write (creationTimestamp, managedFields, conditions), so it is formatted
once per second.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_formatted_second: tuple[int, str] = (-1, "")


def time_string(moment: datetime | None = None) -> str:
    """A metav1.Time for `moment` (default: now)."""
    if moment is not None:
        return moment.strftime(_TIME_FORMAT)
    global _formatted_second
    second = int(time.time())
    if _formatted_second[0] != second:
        _formatted_second = (second, time.strftime(_TIME_FORMAT, time.gmtime(second)))
    return _formatted_second[1]


def micro_time_string(moment: datetime | None = None) -> str:
    """A metav1.MicroTime for `moment` (default: now)."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str) -> datetime:
    """A Time or MicroTime as an aware datetime; ValueError when it is neither."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment

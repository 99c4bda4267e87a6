"""The two timestamp forms of the API: `metav1.Time` (RFC 3339, whole seconds, `2024-01-02T03:04:05Z`) and
`metav1.MicroTime` (with microseconds, `2024-01-02T03:04:05.123456Z`), always in UTC.

Every component writes its timestamps through these, so the forms never drift apart.
"""

from __future__ import annotations

from datetime import UTC, datetime


def time_string(moment: datetime | None = None) -> str:
    """A metav1.Time for `moment` (default: now)."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time_string(moment: datetime | None = None) -> str:
    """A metav1.MicroTime for `moment` (default: now)."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str) -> datetime:
    """A Time or MicroTime as an aware datetime; ValueError when it is neither."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment

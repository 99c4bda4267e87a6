"""Cron schedules: parse a CronJob's `spec.schedule` and find its next activation time.

A schedule is what kube's CronJob controller hands to its cron library (robfig/cron's standard parser):
* five fields, `minute hour day-of-month month day-of-week`, each a comma-separated list of `*` (or `?`),
  `N`, `A-B`, with an optional `/step` (`*/15`, `1-30/2`, and `5/10` meaning "from 5 to the end, every 10");
  months and weekdays may be named (`JAN`, `mon`), weekdays run 0 (Sunday) to 6;
* a macro: `@yearly` (or `@annually`), `@monthly`, `@weekly`, `@daily` (or `@midnight`), `@hourly`, or
  `@every <Go duration>` (`@every 1h30m`), which the API also accepts.

Day-of-month and day-of-week combine as in classic cron: when either field starts with `*` (without a
step above 1), a day must match both; otherwise a day matching either one is enough (`0 0 1 * MON`: the 1st
and every Monday).

`Schedule.next(after)` is the first activation strictly after `after` (whole seconds; activations fall on
second 0), computed on the wall clock of the schedule's time zone (`spec.timeZone`, UTC when unset), so
`0 9 * * *` in `Europe/Paris` stays at 09:00 local across DST changes. As in robfig/cron: an activation
inside a spring-forward gap is skipped, one inside a fall-back hour happens twice, and the search gives up
after five years, returning None (a schedule such as `0 0 30 2 *` parses but never fires).

A `TZ=` or `CRON_TZ=` prefix is refused, as kube's validation refuses it in `spec.schedule`: the zone belongs
in `spec.timeZone`. Errors are `CronError`s worded as the cron library words them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Protocol

YEARS_SEARCHED = 5

_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class CronError(ValueError):
    """A schedule that cannot be parsed."""


class Schedule(Protocol):
    def next(self, after: datetime) -> datetime | None:
        """The first activation strictly after `after` (aware, UTC), or None if there is none in reach."""
        ...


@dataclass(frozen=True)
class _Field:
    low: int
    high: int
    names: dict[str, int]


_MINUTE, _HOUR, _DOM, _MONTH, _DOW = (_Field(0, 59, {}), _Field(0, 23, {}), _Field(1, 31, {}),
                                      _Field(1, 12, _MONTHS), _Field(0, 6, _DAYS))
_ALL_MINUTES, _ALL_HOURS = frozenset(range(60)), frozenset(range(24))
_ALL_DAYS, _ALL_MONTHS, _ALL_WEEKDAYS = frozenset(range(1, 32)), frozenset(range(1, 13)), frozenset(range(7))


@dataclass(frozen=True)
class SpecSchedule:
    """A five-field schedule: the allowed values of each field, and whether the day fields were `*`."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    dom_star: bool
    dow_star: bool
    zone: tzinfo = UTC

    def next(self, after: datetime) -> datetime | None:
        t = after.astimezone(self.zone)
        t = _shift(t, timedelta(seconds=1, microseconds=-t.microsecond))  # the upcoming whole second
        year_limit = t.year + YEARS_SEARCHED
        truncated = False  # the first unit that does not match resets the smaller ones to their start
        while t.year <= year_limit:
            if t.month not in self.months:
                if not truncated:
                    truncated, t = True, self._wall(t.year, t.month, 1)
                year, month = divmod(t.year * 12 + t.month, 12)  # the month after t's, 1-based
                t = self._wall(year, month + 1, 1)
                continue
            if not self._day_matches(t):
                if not truncated:
                    truncated, t = True, self._wall(t.year, t.month, t.day)
                following = date(t.year, t.month, t.day) + timedelta(days=1)
                t = self._wall(following.year, following.month, following.day, t.hour)
                t = _back_to_midnight(t)
                continue
            if t.hour not in self.hours:
                if not truncated:
                    truncated, t = True, self._normalize(t.replace(minute=0, second=0))
                t = _shift(t, timedelta(hours=1))
                continue
            if t.minute not in self.minutes:
                if not truncated:
                    truncated, t = True, self._normalize(t.replace(second=0))
                t = _shift(t, timedelta(minutes=1))
                continue
            if t.second != 0:
                truncated, t = True, _shift(t, timedelta(seconds=60 - t.second))
                continue
            return t.astimezone(UTC)
        return None

    def _day_matches(self, t: datetime) -> bool:
        dom = t.day in self.days_of_month
        dow = (t.isoweekday() % 7) in self.days_of_week
        return dom and dow if self.dom_star or self.dow_star else dom or dow

    def _wall(self, year: int, month: int, day: int, hour: int = 0) -> datetime:
        return self._normalize(datetime(year, month, day, hour, tzinfo=self.zone))

    def _normalize(self, t: datetime) -> datetime:
        """A wall time that does not exist (a DST gap) becomes the instant it stands for, read back locally."""
        return t.astimezone(UTC).astimezone(self.zone)


@dataclass(frozen=True)
class ConstantDelaySchedule:
    """`@every <duration>`: activations every `delay` whole seconds (at least one) after the last one."""

    delay: int

    def next(self, after: datetime) -> datetime | None:
        return (after + timedelta(seconds=self.delay, microseconds=-after.microsecond)).astimezone(UTC)


def parse(spec: str, zone: tzinfo = UTC) -> Schedule:
    """The schedule `spec` describes, activating on the wall clock of `zone`; CronError if it is not one."""
    spec = spec.strip()
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        raise CronError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    if spec.startswith("@"):
        return _descriptor(spec, zone)
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    (minutes, _), (hours, _), (doms, dom_star), (months, _), (dows, dow_star) = (
        _field(text, bounds) for text, bounds in zip(fields, (_MINUTE, _HOUR, _DOM, _MONTH, _DOW), strict=True))
    return SpecSchedule(minutes, hours, doms, months, dows, dom_star, dow_star, zone)


def _descriptor(spec: str, zone: tzinfo) -> Schedule:
    every_day = (_ALL_DAYS, _ALL_MONTHS, _ALL_WEEKDAYS, True, True)
    macros = {
        "@yearly": (frozenset({1}), frozenset({1}), _ALL_WEEKDAYS, False, True),
        "@monthly": (frozenset({1}), _ALL_MONTHS, _ALL_WEEKDAYS, False, True),
        "@weekly": (_ALL_DAYS, _ALL_MONTHS, frozenset({0}), True, False),
        "@daily": every_day,
    }
    macros["@annually"], macros["@midnight"] = macros["@yearly"], macros["@daily"]
    if spec in macros:
        doms, months, dows, dom_star, dow_star = macros[spec]
        return SpecSchedule(frozenset({0}), frozenset({0}), doms, months, dows, dom_star, dow_star, zone)
    if spec == "@hourly":
        return SpecSchedule(frozenset({0}), _ALL_HOURS, *every_day, zone=zone)
    if spec.startswith("@every "):
        seconds = _go_duration(spec, spec[len("@every "):])
        return ConstantDelaySchedule(max(int(seconds), 1))
    raise CronError(f"unrecognized descriptor: {spec}")


def _go_duration(spec: str, text: str) -> float:
    """Seconds in a Go duration string (`1h30m`, `90s`, `1.5h`)."""
    body = text.lstrip("+-")
    sign = -1.0 if text.startswith("-") else 1.0
    if body == "0":
        return 0.0
    parts = _DURATION_PART.findall(body)
    if not body or "".join(number + unit for number, unit in parts) != body:
        raise CronError(f'failed to parse duration {spec}: time: invalid duration "{text}"')
    return sign * sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def _field(text: str, bounds: _Field) -> tuple[frozenset[int], bool]:
    """The values one field allows, and whether it counts as a `*` (for the day-of-month/week rule)."""
    values: set[int] = set()
    star = False
    for expr in (part for part in text.split(",") if part):
        allowed, is_star = _range(expr, bounds)
        values |= allowed
        star = star or is_star
    return frozenset(values), star


def _range(expr: str, bounds: _Field) -> tuple[set[int], bool]:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    star = low_high[0] in ("*", "?")
    if star:
        start, end = bounds.low, bounds.high
    else:
        if len(low_high) > 2:
            raise CronError(f"too many hyphens: {expr}")
        start = _value(low_high[0], bounds)
        end = start if len(low_high) == 1 else _value(low_high[1], bounds)
    if len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _number(range_and_step[1])
        if len(low_high) == 1:
            end = bounds.high  # "N/step" runs from N to the end
        star = star and step <= 1
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def _value(text: str, bounds: _Field) -> int:
    return bounds.names[text.lower()] if text.lower() in bounds.names else _number(text)


def _number(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _shift(t: datetime, delta: timedelta) -> datetime:
    """`t` moved by `delta` of real (elapsed) time, read on `t`'s wall clock."""
    zone = t.tzinfo
    return (t.astimezone(UTC) + delta).astimezone(zone)


def _back_to_midnight(t: datetime) -> datetime:
    """A day that starts at 01:00 because of DST is entered at its first hour, as the cron library does."""
    if t.hour == 0:
        return t
    offset = 24 - t.hour if t.hour > 12 else -t.hour
    return _shift(t, timedelta(hours=offset))

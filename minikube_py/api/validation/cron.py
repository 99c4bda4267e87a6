"""Cron schedules, checked the way kube's CronJob validation checks them (robfig/cron's standard parser).

Five fields (minute hour day-of-month month day-of-week) with `*`, `?`, lists, ranges, steps and month/day
names, or a descriptor (`@hourly`, `@every 1h30m`). `schedule_errors` returns the parser's own message, which
kube puts verbatim into `spec.schedule: Invalid value: "...": <message>`. Only parsing is done here; the
CronJob controller computes run times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int]


_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_FIELDS = (_Bounds(0, 59, {}), _Bounds(0, 23, {}), _Bounds(1, 31, {}), _Bounds(1, 12, _MONTHS),
           _Bounds(0, 6, _DAYS))
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_DURATION = re.compile(r"[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+|0")
_MAX_INT64 = 2**63 - 1


class CronError(ValueError):
    pass


def schedule_errors(schedule: str) -> list[str]:
    try:
        _parse(schedule)
    except CronError as exc:
        return [str(exc)]
    return []


def _parse(spec: str) -> None:
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        # The zone itself is checked by the caller's timeZone rules; only strip it here.
        spec = spec[spec.find(" "):].strip() if " " in spec else ""
    if spec.startswith("@"):
        _descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, bounds in zip(fields, _FIELDS, strict=True):
        for expr in (part for part in text.split(",") if part):
            _range(expr, bounds)


def _descriptor(spec: str) -> None:
    if spec in _DESCRIPTORS:
        return
    if spec.startswith("@every "):
        duration = spec[len("@every "):]
        if not _DURATION.fullmatch(duration):
            raise CronError(f'failed to parse duration {spec}: time: invalid duration "{duration}"')
        return
    raise CronError(f"unrecognized descriptor: {spec}")


def _number(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if abs(value) > _MAX_INT64:
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _value(text: str, bounds: _Bounds) -> int:
    return bounds.names[text.lower()] if text.lower() in bounds.names else _number(text)


def _range(expr: str, bounds: _Bounds) -> None:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _value(low_high[0], bounds)
        if len(low_high) > 2:
            raise CronError(f"too many hyphens: {expr}")
        end = start if len(low_high) == 1 else _value(low_high[1], bounds)
    if len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _number(range_and_step[1])
        if len(low_high) == 1:
            # "N/step" means "from N to the end, every step".
            end = bounds.high
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")

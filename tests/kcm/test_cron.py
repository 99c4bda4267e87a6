"""The cron schedule parser: fields, macros, names, errors, and next activations in a time zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from minikube_py.api import cron

NEW_YORK = ZoneInfo("America/New_York")


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def runs(spec: str, start: datetime, count: int = 3, zone: ZoneInfo | None = None) -> list[datetime]:
    schedule = cron.parse(spec, zone or UTC)
    times, t = [], start
    for _ in range(count):
        t = schedule.next(t)  # type: ignore[assignment]
        times.append(t)
    return times


@pytest.mark.parametrize(("spec", "start", "expected"), [
    ("*/15 * * * *", at(2024, 1, 1, 0, 7, 30), [at(2024, 1, 1, 0, 15), at(2024, 1, 1, 0, 30), at(2024, 1, 1, 0, 45)]),
    ("5-10/2,30 1 * * *", at(2024, 1, 1), [at(2024, 1, 1, 1, 5), at(2024, 1, 1, 1, 7), at(2024, 1, 1, 1, 9)]),
    ("50/5 * * * *", at(2024, 1, 1, 0, 56), [at(2024, 1, 1, 1, 50), at(2024, 1, 1, 1, 55), at(2024, 1, 1, 2, 50)]),
    ("0 9 * feb,MAR mon-FRI", at(2024, 1, 15), [at(2024, 2, 1, 9), at(2024, 2, 2, 9), at(2024, 2, 5, 9)]),
    ("@hourly", at(2024, 1, 1, 0, 0, 0), [at(2024, 1, 1, 1), at(2024, 1, 1, 2), at(2024, 1, 1, 3)]),
    ("@daily", at(2024, 1, 1, 12), [at(2024, 1, 2), at(2024, 1, 3), at(2024, 1, 4)]),
    ("@midnight", at(2024, 1, 1, 12), [at(2024, 1, 2), at(2024, 1, 3), at(2024, 1, 4)]),
    ("@weekly", at(2024, 1, 2), [at(2024, 1, 7), at(2024, 1, 14), at(2024, 1, 21)]),
    ("@monthly", at(2024, 1, 2), [at(2024, 2, 1), at(2024, 3, 1), at(2024, 4, 1)]),
    ("@yearly", at(2024, 1, 2), [at(2025, 1, 1), at(2026, 1, 1), at(2027, 1, 1)]),
    ("@annually", at(2024, 1, 2), [at(2025, 1, 1), at(2026, 1, 1), at(2027, 1, 1)]),
    ("@every 1h30m", at(2024, 1, 1, 0, 0, 0), [at(2024, 1, 1, 1, 30), at(2024, 1, 1, 3), at(2024, 1, 1, 4, 30)]),
    ("0 0 29 2 *", at(2024, 3, 1), [at(2028, 2, 29), at(2032, 2, 29), at(2036, 2, 29)]),
])
def test_next_activations(spec: str, start: datetime, expected: list[datetime]) -> None:
    assert runs(spec, start) == expected


def test_a_day_matches_either_day_field_when_neither_is_a_star() -> None:
    # the 1st of the month OR a Monday
    assert runs("0 0 1 * MON", at(2024, 1, 2)) == [at(2024, 1, 8), at(2024, 1, 15), at(2024, 1, 22)]
    assert runs("0 0 1 * MON", at(2024, 1, 29, 1), 2) == [at(2024, 2, 1), at(2024, 2, 5)]


def test_a_day_must_match_both_fields_when_one_is_a_star() -> None:
    assert runs("0 0 * * MON", at(2024, 1, 1, 1), 2) == [at(2024, 1, 8), at(2024, 1, 15)]


def test_a_stepped_star_is_no_longer_a_star_for_the_day_rule() -> None:
    # */2 in day-of-month: odd days OR Mondays (Jan 8 2024 is a Monday)
    assert runs("0 0 */2 * MON", at(2024, 1, 5, 1), 3) == [at(2024, 1, 7), at(2024, 1, 8), at(2024, 1, 9)]


def test_a_schedule_that_never_fires_has_no_next_time() -> None:
    assert cron.parse("0 0 30 2 *").next(at(2024, 1, 1)) is None


def test_activations_follow_the_wall_clock_of_the_time_zone() -> None:
    paris = ZoneInfo("Europe/Paris")
    assert runs("0 9 * * *", at(2024, 1, 1), 1, paris) == [at(2024, 1, 1, 8)]
    assert runs("0 9 * * *", at(2024, 7, 1), 1, paris) == [at(2024, 7, 1, 7)]


def test_a_time_in_the_spring_forward_gap_is_skipped_that_day() -> None:
    # 2024-03-10 02:30 does not exist in New York
    assert runs("30 2 * * *", at(2024, 3, 9, 12), 2, NEW_YORK) == [at(2024, 3, 11, 6, 30), at(2024, 3, 12, 6, 30)]


def test_a_time_in_the_repeated_fall_back_hour_runs_twice() -> None:
    assert runs("30 1 * * *", at(2024, 11, 2, 12), 3, NEW_YORK) == [
        at(2024, 11, 3, 5, 30), at(2024, 11, 3, 6, 30), at(2024, 11, 4, 6, 30)]


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty spec string"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("*/2/3 * * * *", "too many slashes: */2/3"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
    ("TZ=UTC 0 * * * *", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
    ("CRON_TZ=Europe/Paris 0 * * * *", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
])
def test_invalid_schedules_are_refused_with_the_cron_library_message(spec: str, message: str) -> None:
    with pytest.raises(cron.CronError) as caught:
        cron.parse(spec)
    assert str(caught.value) == message


def test_every_is_at_least_a_second_and_whole_seconds() -> None:
    assert cron.parse("@every 10ms").next(at(2024, 1, 1)) == at(2024, 1, 1, 0, 0, 1)
    assert cron.parse("@every 2.5s").next(at(2024, 1, 1)) == at(2024, 1, 1, 0, 0, 2)

"""Time as the client machinery sees it: a monotonic clock, the wall clock, and sleeping, behind one Protocol.

Everything in `client/` that waits or measures (work-queue delays, rate limiters, leader election, event
series) takes a `Clock` instead of calling `time` and `asyncio.sleep` directly, so unit tests inject a
`FakeClock` and move time by hand: no real sleeps, and the same outcome on every run.

Usage rules:
* `now()` is monotonic seconds, for durations and deadlines only; `wall()` is the UTC wall clock, for the
  timestamps written into API objects (Lease renewTime, Event eventTime).
* `FakeClock.advance(seconds)` wakes every sleeper whose deadline has passed, in deadline order; the woken
  tasks run the next time the test yields to the event loop (`await asyncio.sleep(0)`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds; only differences between two readings mean anything."""
        ...

    def wall(self) -> datetime:
        """The current wall-clock time, timezone-aware in UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once `seconds` have passed on this clock (at once for zero or less)."""
        ...


class RealClock:
    """The process's clocks: `time.monotonic`, `datetime.now(UTC)` and `asyncio.sleep`."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


class FakeClock:
    """A clock that moves only when told to; `sleep` parks the caller until `advance` passes its deadline."""

    def __init__(self, start: float = 1000.0,
                 wall_start: datetime = datetime(2024, 1, 1, tzinfo=UTC)) -> None:
        self._now = start
        self._wall_start = wall_start
        self._start = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        return self._wall_start + timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        await future

    def advance(self, seconds: float) -> None:
        """Move time forward and wake the sleepers whose deadlines are now due."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go backwards (advance by {seconds})")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleepers(self) -> int:
        """How many tasks are parked in `sleep` (cancelled sleeps excluded), so a test can wait for them."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

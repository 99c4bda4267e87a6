"""Work queues with kube's guarantees, the buffer between event handlers and a controller's workers.

Event handlers `add` keys ("namespace/name"); workers `get` a key, sync it, then call `done(key)`. Three
layers, as in client-go's `util/workqueue`:
* `WorkQueue`: FIFO with de-duplication. A key queued many times is handed out once; a key being processed
  is never handed to a second worker, and re-adds during processing are parked ("dirty") until `done`, then
  queued again, so the latest state is always synced once more after the change.
* `DelayingQueue`: `add_after(key, delay)` holds the key in a heap and a waiter task adds it when its time
  comes on the injected clock (an earlier deadline for a key already waiting wins).
* `RateLimitingQueue`: `add_rate_limited(key)` asks a `RateLimiter` for the delay; `forget(key)` after a
  successful sync resets the key's backoff; `num_requeues(key)` counts its failures.

Usage rules:
* `get()` returns `(item, False)`, or `(None, True)` once the queue is shut down and empty; items still
  queued at shutdown are handed out first (as in kube). Every item from `get` must be given back with `done`.
* After `shut_down()` adds are ignored; `shut_down_with_drain()` also waits until every item being processed
  is `done`. All methods except `get` and `shut_down_with_drain` are synchronous and run on the event loop.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable

from minikube_py.client.clock import Clock, RealClock
from minikube_py.client.ratelimiter import RateLimiter, default_controller_rate_limiter


class WorkQueue:
    """FIFO of hashable items with de-duplication and at most one worker per item."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._shutting_down = False
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drained: list[asyncio.Future[None]] = []

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, item: Hashable) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return  # queued again by done()
        self._queue.append(item)
        self._wake_one_getter()

    async def get(self) -> tuple[Hashable | None, bool]:
        """Wait for an item; `(item, False)`, or `(None, True)` when shut down with nothing left."""
        while not self._queue and not self._shutting_down:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one_getter()  # we were woken for an item we will not take: pass it on
                raise
        if not self._queue:
            return None, True
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        return item, False

    def done(self, item: Hashable) -> None:
        """The worker finished `item`; if it was re-added meanwhile, it is queued now."""
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one_getter()
        elif not self._processing:
            for future in self._drained:
                if not future.done():
                    future.set_result(None)
            self._drained.clear()

    def shut_down(self) -> None:
        """Ignore new adds; workers get the items still queued, then `(None, True)`."""
        self._shutting_down = True
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

    async def shut_down_with_drain(self) -> None:
        """`shut_down`, then wait until every item handed out has been given back with `done`."""
        self.shut_down()
        while self._processing:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drained.append(future)
            await future

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def _wake_one_getter(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return


class DelayingQueue(WorkQueue):
    """A `WorkQueue` that can also add an item once a delay has passed on its clock."""

    def __init__(self, name: str = "", clock: Clock | None = None) -> None:
        super().__init__(name)
        self.clock = clock or RealClock()
        self._waiting: list[tuple[float, int, Hashable]] = []  # heap; stale entries skipped when popped
        self._ready_at: dict[Hashable, float] = {}
        self._order = itertools.count()
        self._kick = asyncio.Event()
        self._waiter: asyncio.Task[None] | None = None

    def add_after(self, item: Hashable, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self.clock.now() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready_at:
            return
        self._ready_at[item] = ready_at
        heapq.heappush(self._waiting, (ready_at, next(self._order), item))
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_task(self._wait_loop(),
                                                                   name=f"workqueue-{self.name}-delays")
        self._kick.set()

    def shut_down(self) -> None:
        super().shut_down()
        if self._waiter is not None:
            self._waiter.cancel()
        self._waiting.clear()
        self._ready_at.clear()

    async def _wait_loop(self) -> None:
        while not self._shutting_down:
            self._kick.clear()
            now = self.clock.now()
            self._add_ready(now)
            delay = self._waiting[0][0] - now if self._waiting else None
            await self._sleep_or_kick(delay)

    def _add_ready(self, now: float) -> None:
        while self._waiting and self._waiting[0][0] <= now:
            ready_at, _, item = heapq.heappop(self._waiting)
            if self._ready_at.get(item) == ready_at:
                del self._ready_at[item]
                self.add(item)

    async def _sleep_or_kick(self, delay: float | None) -> None:
        """Wait until `delay` passes on the clock (never, if None) or `add_after` kicks us."""
        kicked = asyncio.ensure_future(self._kick.wait())
        waits: set[asyncio.Future[object]] = {kicked}
        if delay is not None:
            waits.add(asyncio.ensure_future(self.clock.sleep(delay)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in waits:
                future.cancel()


class RateLimitingQueue(DelayingQueue):
    """A `DelayingQueue` whose retry delays come from a `RateLimiter` (kube's default when none is given)."""

    def __init__(self, rate_limiter: RateLimiter | None = None, name: str = "",
                 clock: Clock | None = None) -> None:
        super().__init__(name, clock)
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(self.clock)

    def add_rate_limited(self, item: Hashable) -> None:
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.rate_limiter.num_requeues(item)

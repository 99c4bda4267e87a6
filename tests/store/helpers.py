"""Small helpers for the storage tests: bounded waits on watch streams and on conditions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from minikube_py.store.interface import WatchEvent

WAIT = 5.0  # seconds; every wait in these tests is bounded by this


async def changes(events: AsyncIterator[WatchEvent], count: int) -> list[WatchEvent]:
    """The next `count` PUT/DELETE events, skipping progress notifications."""
    found: list[WatchEvent] = []
    async with asyncio.timeout(WAIT):
        async for event in events:
            if event.type != "PROGRESS":
                found.append(event)
            if len(found) == count:
                return found
    raise AssertionError(f"the watch ended after {found}")


async def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll `condition` (cheap, synchronous) until it holds; fail with `what` after WAIT seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)

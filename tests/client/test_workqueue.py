"""Work queues: de-duplication, one worker per item, deferred re-adds, shutdown, delays and rate limiting."""

from __future__ import annotations

import asyncio

import pytest

from minikube_py.client.clock import FakeClock
from minikube_py.client.ratelimiter import ItemExponentialFailureRateLimiter
from minikube_py.client.workqueue import DelayingQueue, RateLimitingQueue, WorkQueue


async def settle() -> None:
    """Let every runnable task run until it blocks again."""
    for _ in range(20):
        await asyncio.sleep(0)


async def drain(queue: WorkQueue) -> list:
    """Get (and finish) everything queued right now."""
    items = []
    while len(queue):
        item, _ = await queue.get()
        items.append(item)
        queue.done(item)
    return items


@pytest.mark.parametrize(("adds", "expected"), [
    (["a", "b", "c"], ["a", "b", "c"]),
    (["a", "b", "a", "a", "b"], ["a", "b"]),
    ([], []),
], ids=["items come out in the order they were added", "an item added many times is queued once",
        "an empty queue hands out nothing"])
async def test_add_and_get(adds: list[str], expected: list[str]) -> None:
    queue = WorkQueue()
    for item in adds:
        queue.add(item)
    assert len(queue) == len(expected)
    assert await drain(queue) == expected


async def test_an_item_being_processed_is_not_handed_to_a_second_worker() -> None:
    queue = WorkQueue()
    queue.add("a")
    item, _ = await queue.get()
    queue.add("a")
    assert len(queue) == 0
    second = asyncio.create_task(queue.get())
    await settle()
    assert not second.done()
    queue.done(item)
    assert await asyncio.wait_for(second, 1) == ("a", False)


async def test_readds_while_processing_are_deferred_and_collapsed_until_done() -> None:
    queue = WorkQueue()
    queue.add("a")
    item, _ = await queue.get()
    for _ in range(3):
        queue.add("a")
    queue.add("b")
    queue.done(item)
    assert await drain(queue) == ["b", "a"]


async def test_done_without_readd_does_not_requeue() -> None:
    queue = WorkQueue()
    queue.add("a")
    item, _ = await queue.get()
    queue.done(item)
    assert len(queue) == 0


async def test_a_waiting_get_wakes_on_add() -> None:
    queue = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await settle()
    queue.add("x")
    assert await asyncio.wait_for(getter, 1) == ("x", False)


async def test_a_cancelled_getter_passes_its_wakeup_to_the_next() -> None:
    queue = WorkQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await settle()
    queue.add("x")
    first.cancel()
    assert await asyncio.wait_for(second, 1) == ("x", False)


async def test_shut_down_hands_out_queued_items_then_reports_shutdown_and_ignores_adds() -> None:
    queue = WorkQueue()
    queue.add("a")
    waiting = WorkQueue()
    blocked = asyncio.create_task(waiting.get())
    await settle()
    queue.shut_down()
    waiting.shut_down()
    queue.add("b")
    assert await queue.get() == ("a", False)
    assert await queue.get() == (None, True)
    assert await asyncio.wait_for(blocked, 1) == (None, True)
    assert queue.shutting_down


async def test_shut_down_with_drain_waits_for_items_in_processing() -> None:
    queue = WorkQueue()
    queue.add("a")
    item, _ = await queue.get()
    drained = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    assert not drained.done()
    queue.done(item)
    await asyncio.wait_for(drained, 1)


async def test_shut_down_with_drain_returns_at_once_when_nothing_is_processing() -> None:
    queue = WorkQueue()
    await asyncio.wait_for(queue.shut_down_with_drain(), 1)


async def test_add_after_adds_the_item_once_its_delay_has_passed_on_the_clock() -> None:
    clock = FakeClock()
    queue = DelayingQueue(clock=clock)
    queue.add_after("a", 2.0)
    queue.add_after("b", 1.0)
    await settle()
    assert len(queue) == 0
    clock.advance(1.0)
    await settle()
    assert await drain(queue) == ["b"]
    clock.advance(1.0)
    await settle()
    assert await drain(queue) == ["a"]
    queue.shut_down()


@pytest.mark.parametrize(("first", "second", "ready_after"), [
    (5.0, 1.0, 1.0),
    (1.0, 5.0, 1.0),
], ids=["a shorter delay for a waiting item brings it forward", "a longer delay does not push it back"])
async def test_the_earliest_deadline_of_a_waiting_item_wins(first: float, second: float,
                                                             ready_after: float) -> None:
    clock = FakeClock()
    queue = DelayingQueue(clock=clock)
    queue.add_after("a", first)
    queue.add_after("a", second)
    await settle()
    clock.advance(ready_after)
    await settle()
    assert await drain(queue) == ["a"]
    clock.advance(10)
    await settle()
    assert len(queue) == 0  # the superseded deadline does not add it twice
    queue.shut_down()


async def test_add_after_with_no_delay_adds_at_once() -> None:
    queue = DelayingQueue(clock=FakeClock())
    queue.add_after("a", 0)
    assert len(queue) == 1


async def test_shut_down_drops_waiting_items_and_stops_the_waiter() -> None:
    clock = FakeClock()
    queue = DelayingQueue(clock=clock)
    queue.add_after("a", 1.0)
    await settle()
    queue.shut_down()
    await settle()
    clock.advance(5)
    await settle()
    assert len(queue) == 0
    assert clock.sleepers == 0


async def test_rate_limited_adds_back_off_exponentially_until_forgotten() -> None:
    clock = FakeClock()
    queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock)
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 2
    await settle()
    clock.advance(1.0)
    await settle()
    assert await drain(queue) == ["a"]
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.add_rate_limited("a")
    await settle()
    clock.advance(1.0)
    await settle()
    assert len(queue) == 1
    queue.shut_down()


async def test_the_default_rate_limiting_queue_retries_a_first_failure_after_5ms() -> None:
    clock = FakeClock()
    queue = RateLimitingQueue(clock=clock)
    queue.add_rate_limited("a")
    await settle()
    clock.advance(0.004)
    await settle()
    assert len(queue) == 0
    clock.advance(0.001)
    await settle()
    assert len(queue) == 1
    queue.shut_down()

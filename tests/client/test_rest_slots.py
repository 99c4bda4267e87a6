"""The REST client's request slots: at most N requests on the wire, first come first served, except that
background requests (an event sink's) wait as long as any other request waits."""

from __future__ import annotations

import asyncio

from minikube_py.client import rest
from minikube_py.client.rest import Slots


async def queue_up(slots: Slots, order: list[str], name: str, background: bool = False) -> None:
    async with slots.held(background):
        order.append(name)
        await asyncio.sleep(0)


async def test_a_waiting_foreground_request_goes_before_background_ones_that_came_first() -> None:
    slots, order = Slots(1), []
    async with slots.held():
        tasks = [asyncio.create_task(queue_up(slots, order, name, background))
                 for name, background in [("event-1", True), ("status", False), ("event-2", True),
                                          ("token", False)]]
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == ["status", "token", "event-1", "event-2"]


async def test_a_background_request_takes_a_free_slot_at_once_but_not_one_others_wait_for() -> None:
    slots, order = Slots(2), []
    async with slots.held(background=True):  # one free slot left: taken at once
        async with slots.held():
            waiting = asyncio.create_task(queue_up(slots, order, "waits"))
            await asyncio.sleep(0)
            late = asyncio.create_task(queue_up(slots, order, "background", background=True))
            await asyncio.sleep(0)
            assert order == []
    await asyncio.gather(waiting, late)
    assert order == ["waits", "background"]


async def test_a_cancelled_waiter_leaves_no_slot_taken() -> None:
    slots, order = Slots(1), []
    async with slots.held():
        gone = asyncio.create_task(queue_up(slots, order, "gone"))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
    await asyncio.wait_for(queue_up(slots, order, "next"), 1)
    assert order == ["next"]


async def test_a_waiter_cancelled_as_it_is_handed_the_slot_passes_it_on() -> None:
    slots, order = Slots(1), []
    holder = slots.held()
    await holder.__aenter__()
    first = asyncio.create_task(queue_up(slots, order, "first"))
    second = asyncio.create_task(queue_up(slots, order, "second"))
    await asyncio.sleep(0)
    await holder.__aexit__(None, None, None)  # hands the slot to "first"...
    first.cancel()  # ...which is cancelled before it runs
    await asyncio.wait_for(second, 1)
    assert order == ["second"]


async def test_requests_in_background_marks_the_calling_task_only() -> None:
    seen: list[bool] = []

    async def sink() -> None:
        rest.requests_in_background()
        seen.append(rest._background.get())

    await asyncio.create_task(sink())  # a task runs in a copy of its creator's context
    seen.append(rest._background.get())
    assert seen == [True, False]

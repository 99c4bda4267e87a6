"""The worker loop: syncs keys, forgets on success, retries failures with backoff, survives raising syncs."""

from __future__ import annotations

import asyncio
import logging

import pytest

from minikube_py.client.clock import FakeClock
from minikube_py.client.controller import run_workers
from minikube_py.client.ratelimiter import ItemExponentialFailureRateLimiter
from minikube_py.client.workqueue import RateLimitingQueue


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def queue_with(clock: FakeClock, *keys: str) -> RateLimitingQueue:
    queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 60.0), name="test", clock=clock)
    for key in keys:
        queue.add(key)
    return queue


class Syncer:
    """Records the keys it synced; raises for a key while its failure budget lasts."""

    def __init__(self, failures: dict[str, int] | None = None) -> None:
        self.failures = dict(failures or {})
        self.synced: list[str] = []

    async def __call__(self, key: str) -> None:
        self.synced.append(key)
        if self.failures.get(key, 0) > 0:
            self.failures[key] -= 1
            raise RuntimeError(f"boom for {key}")


async def test_each_key_is_synced_and_forgotten_and_workers_stop_at_shutdown() -> None:
    clock = FakeClock()
    queue = queue_with(clock, "ns/a", "ns/b")
    sync = Syncer()
    workers = asyncio.create_task(run_workers(queue, sync, 2, name="test"))
    await settle()
    assert sorted(sync.synced) == ["ns/a", "ns/b"]
    assert queue.num_requeues("ns/a") == 0
    queue.shut_down()
    await asyncio.wait_for(workers, 1)


async def test_a_failing_sync_is_logged_and_retried_with_backoff_without_killing_the_worker(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    queue = queue_with(clock, "ns/a")
    sync = Syncer({"ns/a": 2})
    workers = asyncio.create_task(run_workers(queue, sync, name="test"))
    await settle()
    assert sync.synced == ["ns/a"]
    assert queue.num_requeues("ns/a") == 1
    assert "error syncing 'ns/a', requeuing: boom for ns/a" in caplog.text
    clock.advance(1.0)  # first retry after base_delay
    await settle()
    assert sync.synced == ["ns/a", "ns/a"]
    clock.advance(1.9)  # the second retry waits 2 s
    await settle()
    assert len(sync.synced) == 2
    clock.advance(0.1)
    await settle()
    assert sync.synced == ["ns/a"] * 3
    assert queue.num_requeues("ns/a") == 0  # success forgets the backoff
    queue.shut_down()
    await asyncio.wait_for(workers, 1)


async def test_a_key_is_dropped_after_max_retries(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    queue = queue_with(clock, "ns/a")
    sync = Syncer({"ns/a": 100})
    workers = asyncio.create_task(run_workers(queue, sync, name="test", max_retries=2))
    for _ in range(5):
        await settle()
        clock.advance(10)
    await settle()
    assert sync.synced == ["ns/a"] * 3  # the first try and two retries
    assert queue.num_requeues("ns/a") == 0
    assert "dropping 'ns/a' out of the queue after 2 retries" in caplog.text
    queue.shut_down()
    await asyncio.wait_for(workers, 1)


async def test_a_key_readded_during_its_sync_is_synced_again_afterwards_by_one_worker() -> None:
    clock = FakeClock()
    queue = queue_with(clock, "ns/a")
    running: list[str] = []
    overlaps: list[str] = []
    synced: list[str] = []
    release = asyncio.Event()

    async def sync(key: str) -> None:
        if key in running:
            overlaps.append(key)
        running.append(key)
        synced.append(key)
        if len(synced) == 1:
            queue.add(key)  # an event arrives while we sync
            await release.wait()
        running.remove(key)

    workers = asyncio.create_task(run_workers(queue, sync, 4, name="test"))
    await settle()
    assert synced == ["ns/a"]  # three idle workers, yet the re-added key waits for the first
    release.set()
    await settle()
    queue.shut_down()
    await asyncio.wait_for(workers, 1)
    assert overlaps == []
    assert synced == ["ns/a", "ns/a"]


async def test_cancelling_the_workers_gives_back_the_key_in_hand() -> None:
    clock = FakeClock()
    queue = queue_with(clock, "ns/a")

    async def sync(key: str) -> None:
        await asyncio.Event().wait()

    workers = asyncio.create_task(run_workers(queue, sync, name="test"))
    await settle()
    workers.cancel()
    with pytest.raises(asyncio.CancelledError):
        await workers
    await asyncio.wait_for(queue.shut_down_with_drain(), 1)


async def test_the_logger_given_is_used(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    queue = queue_with(clock, "ns/a")
    logger = logging.getLogger("custom.controller")
    workers = asyncio.create_task(run_workers(queue, Syncer({"ns/a": 1}), name="x", logger=logger))
    await settle()
    assert any(record.name == "custom.controller" and record.levelno == logging.ERROR
               for record in caplog.records)
    queue.shut_down()
    await asyncio.wait_for(workers, 1)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"workers": 0}, "workers must be at least 1"),
    ({"max_retries": -1}, "max_retries must not be negative"),
], ids=["zero workers is refused", "negative max retries is refused"])
async def test_bad_arguments_are_a_clear_value_error(kwargs: dict, message: str) -> None:
    queue = queue_with(FakeClock())
    with pytest.raises(ValueError, match=message):
        await run_workers(queue, Syncer(), name="test", **kwargs)

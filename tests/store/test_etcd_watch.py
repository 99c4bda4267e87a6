"""Contract tests of EtcdStorage.watch against a real etcd: events with (or without) previous values, prefix
versus exact key, compaction, progress notifications, and that leaving a watch cancels it on the server."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import urllib.request

import grpc
import pytest
from aetcd import rpc

from minikube_py.store.errors import CompactedError
from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.etcd_server import EtcdServer

from .helpers import WAIT, changes, wait_until


async def test_watch_from_a_revision_replays_create_modify_and_delete(storage: EtcdStorage, prefix: str) -> None:
    created = await storage.create(prefix + "a", b"1")
    modified = await storage.update(prefix + "a", b"2", expected_revision=created)
    deleted = (await storage.delete(prefix + "a")).mod_revision

    async with storage.watch(prefix, start_revision=created) as events:
        put, update, delete = await changes(events, 3)

    assert (put.type, put.revision, put.created, put.prev) == ("PUT", created, True, None)
    assert put.kv is not None and put.kv.value == b"1"
    assert (update.type, update.revision, update.created) == ("PUT", modified, False)
    assert update.kv is not None and update.prev is not None
    assert (update.kv.value, update.prev.value, update.prev.mod_revision) == (b"2", b"1", created)
    assert (delete.type, delete.revision, delete.kv) == ("DELETE", deleted, None)
    assert delete.prev is not None and (delete.prev.key, delete.prev.value) == (prefix + "a", b"2")
    assert {event.key for event in (put, update, delete)} == {prefix + "a"}


async def test_a_watch_without_previous_values_still_names_each_key(storage: EtcdStorage, prefix: str) -> None:
    created = await storage.create(prefix + "a", b"1")
    modified = await storage.update(prefix + "a", b"2", expected_revision=created)
    deleted = (await storage.delete(prefix + "a")).mod_revision

    async with storage.watch(prefix, start_revision=created, prev_kv=False) as events:
        put, update, delete = await changes(events, 3)

    assert [(e.type, e.revision, e.key, e.prev) for e in (put, update, delete)] == [
        ("PUT", created, prefix + "a", None), ("PUT", modified, prefix + "a", None),
        ("DELETE", deleted, prefix + "a", None)]
    assert update.kv is not None and update.kv.value == b"2"


async def test_watch_from_now_sees_only_later_writes(storage: EtcdStorage, prefix: str) -> None:
    await storage.create(prefix + "before", b"")

    async with storage.watch(prefix, start_revision=0) as events:
        after = await storage.create(prefix + "after", b"")
        (event,) = await changes(events, 1)

    assert event.revision == after
    assert event.kv is not None and event.kv.key == prefix + "after"


@pytest.mark.parametrize(("watched", "seen"), [
    ("a", ["a"]),
    ("a/", ["a/1", "a/2"]),
], ids=["a key without a trailing slash is watched exactly", "a key with a trailing slash is a prefix"])
async def test_watch_scope(storage: EtcdStorage, prefix: str, watched: str, seen: list[str]) -> None:
    start = await storage.current_revision() + 1
    for name in ["a", "ab", "a/1", "a/2", "b"]:
        await storage.create(prefix + name, b"")
    marker = await storage.update(prefix + seen[-1], b"marker", expected_revision=None)

    async with storage.watch(prefix + watched, start_revision=start) as events:
        found = await changes(events, len(seen) + 1)

    assert [event.kv.key[len(prefix):] for event in found if event.kv] == seen + [seen[-1]]
    assert found[-1].revision == marker


async def test_watch_from_a_compacted_revision_raises_compacted(storage: EtcdStorage, prefix: str) -> None:
    old = await storage.create(prefix + "a", b"1")
    now = await storage.update(prefix + "a", b"2", expected_revision=old)
    await storage.compact(now)

    with pytest.raises(CompactedError) as caught:
        async with storage.watch(prefix, start_revision=old) as events:
            await changes(events, 1)

    assert (caught.value.requested, caught.value.compacted) == (old, now)


async def test_an_idle_watch_gets_progress_notifications_at_the_current_revision(
        storage: EtcdStorage, prefix: str) -> None:
    current = await storage.current_revision()

    async with storage.watch(prefix, start_revision=current + 1) as events:
        async with asyncio.timeout(WAIT):
            event = await anext(aiter(events))

    assert event.type == "PROGRESS"
    assert event.revision >= current


async def test_hundreds_of_concurrent_watches_each_see_a_write(storage: EtcdStorage, prefix: str) -> None:
    start = await storage.current_revision() + 1
    async with contextlib.AsyncExitStack() as stack:
        watches = [await stack.enter_async_context(storage.watch(prefix, start_revision=start))
                   for _ in range(200)]
        revision = await storage.create(prefix + "a", b"")

        seen = await asyncio.gather(*(changes(events, 1) for events in watches))

    assert {found[0].revision for found in seen} == {revision}


async def test_leaving_a_watch_cancels_it_on_the_server(
        etcd_server: EtcdServer, storage: EtcdStorage, prefix: str) -> None:
    baseline = server_watchers(etcd_server)

    async def consume() -> None:
        async with storage.watch(prefix, start_revision=0) as events:
            async for _ in events:
                pass

    # Cancelling the consuming task is how the apiserver ends a watch when its client goes away.
    consumers = [asyncio.create_task(consume()) for _ in range(20)]
    await wait_until(lambda: server_watchers(etcd_server) == baseline + 20, "20 watchers on the server")
    for task in consumers:
        task.cancel()
    await asyncio.gather(*consumers, return_exceptions=True)

    await wait_until(lambda: server_watchers(etcd_server) == baseline, "the server to drop the watchers")


def server_watchers(server: EtcdServer) -> int:
    """How many watchers the etcd member has, from its metrics."""
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=1.0) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("etcd_debugging_mvcc_watcher_total "):
                return int(float(line.split()[1]))
    raise AssertionError("etcd reports no etcd_debugging_mvcc_watcher_total metric")



async def test_events_that_arrive_while_the_loop_is_busy_are_all_handed_out_in_one_turn(
        etcd_server: EtcdServer, storage: EtcdStorage, prefix: str) -> None:
    """A busy apiserver's loop must not fall behind etcd: while the loop is blocked, the watch keeps reading
    (a thread of its own), and afterwards every queued event comes out of the iterator without a loop turn
    per event."""
    writes = 200

    def write_from_another_thread() -> None:
        channel = grpc.insecure_channel(etcd_server.endpoint.removeprefix("http://"))
        kv = rpc.KVStub(channel)
        for i in range(writes):
            kv.Put(rpc.PutRequest(key=f"{prefix}{i:03d}".encode(), value=b"x"))
        channel.close()

    async with storage.watch(prefix, start_revision=0) as events:
        writer = threading.Thread(target=write_from_another_thread)
        writer.start()
        writer.join()  # the event loop is blocked all this time
        time.sleep(0.5)  # still blocked: the last events reach the watch's thread meanwhile

        turns = 0

        async def count_turns() -> None:
            nonlocal turns
            while True:
                await asyncio.sleep(0)
                turns += 1

        counter = asyncio.create_task(count_turns())
        try:
            seen = await asyncio.wait_for(changes(events, writes), WAIT)
        finally:
            counter.cancel()

    assert [event.kv.key for event in seen if event.kv is not None] == [f"{prefix}{i:03d}" for i in range(writes)]
    assert turns <= 2, f"the {writes} events took {turns} loop turns"


async def test_a_watch_is_read_by_its_own_thread_without_a_grpc_spin_thread(
        storage: EtcdStorage, prefix: str) -> None:
    """A streaming call of gRPC's synchronous API is normally read by the channel's spin thread, which hands
    each response to the consumer's thread: a second thread hop per event. The watch is made as a
    server-streaming call on a single-threaded channel, so its own thread waits on the stream directly."""
    before = set(threading.enumerate())
    async with storage.watch(prefix, start_revision=0) as events:
        revision = await storage.create(prefix + "a", b"")
        (event,) = await changes(events, 1)
        started = [thread.name for thread in set(threading.enumerate()) - before]

    assert event.revision == revision
    assert len(started) == 1 and started[0].startswith("etcd watch"), started

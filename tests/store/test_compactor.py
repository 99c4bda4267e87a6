"""The compactor against a real etcd: it compacts at the revision recorded on the previous tick, only one of
several compactors sharing an etcd compacts per tick, and the periodic task runs on its own."""

from __future__ import annotations

import pytest

from minikube_py.store.compactor import COMPACT_REVISION_KEY, Compactor
from minikube_py.store.errors import CompactedError, KeyNotFoundError
from minikube_py.store.etcd import EtcdStorage

from .helpers import wait_until


@pytest.fixture(autouse=True)
async def no_compaction_record(storage: EtcdStorage) -> None:
    """Start every test as on a fresh cluster: no compactor has recorded a revision yet."""
    try:
        await storage.delete(COMPACT_REVISION_KEY)
    except KeyNotFoundError:
        pass


async def test_a_tick_compacts_at_the_revision_recorded_on_the_previous_tick(
        storage: EtcdStorage, prefix: str) -> None:
    compactor = Compactor(storage, interval=0)
    before = await storage.create(prefix + "a", b"1")

    assert await compactor.compact_now() is None  # the first tick only records a revision
    recorded = compactor.observed_revision
    assert recorded is not None and recorded > before
    await storage.update(prefix + "a", b"2", expected_revision=None)

    assert await compactor.compact_now() == recorded
    with pytest.raises(CompactedError):
        await storage.list(prefix, revision=recorded - 1)
    assert [kv.value for kv in (await storage.list(prefix, revision=recorded)).items] == [b"1"]
    assert compactor.observed_revision == await storage.current_revision()


async def test_of_two_compactors_sharing_etcd_only_one_compacts_per_tick(storage: EtcdStorage) -> None:
    first, second = Compactor(storage, interval=0), Compactor(storage, interval=0)

    first_ticks, second_ticks = [], []
    for _ in range(3):
        first_ticks.append(await first.compact_now())
        second_ticks.append(await second.compact_now())

    assert first_ticks[0] is None  # nothing was recorded before
    assert first_ticks[1] is not None and first_ticks[2] is not None and first_ticks[1] < first_ticks[2]
    assert second_ticks == [None, None, None]  # it only adopts the first compactor's record
    assert second.observed_revision == first.observed_revision


async def test_the_periodic_task_compacts_every_interval(storage: EtcdStorage) -> None:
    compactor = Compactor(storage, interval=0.05)
    compactor.start()
    try:
        await wait_until(lambda: compactor.compacted_revision is not None, "a periodic compaction")
    finally:
        await compactor.stop()

"""Contract tests of EtcdStorage's reads and writes against a real etcd: get, list, paging, create, update,
delete and their preconditions."""

from __future__ import annotations

import pytest

from minikube_py.store.errors import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
)
from minikube_py.store.etcd import EtcdStorage


async def test_get_returns_the_stored_value_with_its_revisions(storage: EtcdStorage, prefix: str) -> None:
    revision = await storage.create(prefix + "a", b'{"n": 1}')

    kv = await storage.get(prefix + "a")

    assert kv is not None
    assert (kv.key, kv.value, kv.create_revision, kv.mod_revision) == (prefix + "a", b'{"n": 1}', revision, revision)


async def test_get_of_a_missing_key_is_none(storage: EtcdStorage, prefix: str) -> None:
    assert await storage.get(prefix + "missing") is None


async def test_list_returns_only_keys_under_the_prefix_in_key_order(storage: EtcdStorage, prefix: str) -> None:
    for name in ["b", "a", "c/nested"]:
        await storage.create(prefix + name, name.encode())
    await storage.create(prefix.rstrip("/") + "x/sibling", b"not under the prefix")

    result = await storage.list(prefix)

    assert [kv.key for kv in result.items] == [prefix + "a", prefix + "b", prefix + "c/nested"]
    assert (result.more, result.remaining) == (False, 0)
    assert result.revision == await storage.current_revision()
    assert await storage.count(prefix) == 3


async def test_paging_at_a_pinned_revision_does_not_see_later_writes(storage: EtcdStorage, prefix: str) -> None:
    for i in range(5):
        await storage.create(f"{prefix}{i}", b"old")

    first = await storage.list(prefix, limit=2)
    await storage.create(prefix + "3a", b"created after page 1")
    await storage.update(prefix + "3", b"new", expected_revision=None)
    second = await storage.list(prefix, limit=2, start_key=first.items[-1].key + "\0", revision=first.revision)
    third = await storage.list(prefix, limit=2, start_key=second.items[-1].key + "\0", revision=first.revision)

    assert [kv.key[len(prefix):] for kv in first.items] == ["0", "1"]
    assert (first.more, first.remaining) == (True, 3)
    assert [(kv.key[len(prefix):], kv.value) for kv in second.items] == [("2", b"old"), ("3", b"old")]
    assert (second.revision, second.more, second.remaining) == (first.revision, True, 1)
    assert [kv.key[len(prefix):] for kv in third.items] == ["4"]
    assert (third.more, third.remaining) == (False, 0)
    assert await storage.count(prefix) == 6


async def test_list_at_a_compacted_revision_raises_compacted(storage: EtcdStorage, prefix: str) -> None:
    old = await storage.create(prefix + "a", b"1")
    now = await storage.update(prefix + "a", b"2", expected_revision=old)
    await storage.compact(now)

    with pytest.raises(CompactedError) as caught:
        await storage.list(prefix, revision=old)

    assert (caught.value.requested, caught.value.compacted) == (old, now)
    assert [kv.value for kv in (await storage.list(prefix, revision=now)).items] == [b"2"]


async def test_list_at_a_future_revision_raises_future_revision(storage: EtcdStorage, prefix: str) -> None:
    future = await storage.current_revision() + 1000

    with pytest.raises(FutureRevisionError) as caught:
        await storage.list(prefix, revision=future)

    assert caught.value.requested == future


async def test_create_of_an_existing_key_raises_key_exists(storage: EtcdStorage, prefix: str) -> None:
    await storage.create(prefix + "a", b"first")

    with pytest.raises(KeyExistsError):
        await storage.create(prefix + "a", b"second")

    kv = await storage.get(prefix + "a")
    assert kv is not None and kv.value == b"first"


async def test_update_at_the_current_revision_returns_the_new_revision(storage: EtcdStorage, prefix: str) -> None:
    created = await storage.create(prefix + "a", b"1")

    updated = await storage.update(prefix + "a", b"2", expected_revision=created)

    kv = await storage.get(prefix + "a")
    assert kv is not None and (kv.value, kv.create_revision, kv.mod_revision) == (b"2", created, updated)


async def test_update_with_a_stale_revision_raises_conflict_with_the_current_value(
        storage: EtcdStorage, prefix: str) -> None:
    stale = await storage.create(prefix + "a", b"1")
    current = await storage.update(prefix + "a", b"2", expected_revision=stale)

    with pytest.raises(ConflictError) as caught:
        await storage.update(prefix + "a", b"3", expected_revision=stale)

    assert caught.value.current is not None
    assert (caught.value.current.value, caught.value.current.mod_revision) == (b"2", current)


@pytest.mark.parametrize("expected_revision", [None, 1], ids=["unconditionally", "at a revision"])
async def test_update_of_a_missing_key_raises_key_not_found(
        storage: EtcdStorage, prefix: str, expected_revision: int | None) -> None:
    with pytest.raises(KeyNotFoundError):
        await storage.update(prefix + "missing", b"x", expected_revision=expected_revision)

    assert await storage.get(prefix + "missing") is None


async def test_delete_at_the_current_revision_returns_the_deleted_value(storage: EtcdStorage, prefix: str) -> None:
    created = await storage.create(prefix + "a", b"1")

    deleted = await storage.delete(prefix + "a", expected_revision=created)

    assert (deleted.key, deleted.value, deleted.create_revision) == (prefix + "a", b"1", created)
    assert deleted.mod_revision == await storage.current_revision()  # the delete's own revision
    assert await storage.get(prefix + "a") is None


async def test_delete_with_a_stale_revision_raises_conflict_and_keeps_the_key(
        storage: EtcdStorage, prefix: str) -> None:
    stale = await storage.create(prefix + "a", b"1")
    await storage.update(prefix + "a", b"2", expected_revision=stale)

    with pytest.raises(ConflictError) as caught:
        await storage.delete(prefix + "a", expected_revision=stale)

    assert caught.value.current is not None and caught.value.current.value == b"2"
    assert await storage.get(prefix + "a") is not None


@pytest.mark.parametrize("expected_revision", [None, 1], ids=["unconditionally", "at a revision"])
async def test_delete_of_a_missing_key_raises_key_not_found(
        storage: EtcdStorage, prefix: str, expected_revision: int | None) -> None:
    with pytest.raises(KeyNotFoundError):
        await storage.delete(prefix + "missing", expected_revision=expected_revision)

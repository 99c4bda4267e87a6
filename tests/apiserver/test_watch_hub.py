"""The watch caches' one etcd watch (`WatchHub`), against the session's etcd: changes reach the cache of their
resource, and a cache can tell it is fresh even when the latest writes went to other resources."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from minikube_py.apiserver.cacher import Cacher, WatchHub
from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.interface import KeyValue
from tests.store.helpers import wait_until

RESOURCES = ("pods/", "configmaps/", "services/specs/", "services/endpoints/")


@pytest.fixture()
async def caches(storage: EtcdStorage) -> AsyncIterator[dict[str, Cacher]]:
    """A hub on a root no other test writes under, with a cache per resource of RESOURCES, all ready."""
    root = f"/hub-{uuid.uuid4().hex[:8]}/"
    await storage.create(root + "pods/ns/before", b"{}")  # listed, not watched
    hub = WatchHub(storage, root)
    hub.start()
    found = {resource: Cacher(hub, root + resource) for resource in RESOURCES}
    for cache in found.values():
        cache.start()
    await wait_until(lambda: all(cache.ready for cache in found.values()), "every cache ready")
    yield found
    for cache in found.values():
        await cache.stop()
    await hub.stop()


def keys(cache: Cacher) -> set[str]:
    return {key.removeprefix(cache.prefix) for key in cache.objects}


async def test_each_change_reaches_the_cache_of_its_resource(storage: EtcdStorage, caches: dict[str, Cacher]) -> None:
    for resource, cache in caches.items():
        await storage.create(cache.prefix + f"ns/{resource.replace('/', '-')}", b"{}")
    last = await storage.current_revision()
    assert await caches["pods/"].wait_fresh(last)
    assert keys(caches["pods/"]) == {"ns/before", "ns/pods-"}
    assert keys(caches["configmaps/"]) == {"ns/configmaps-"}
    assert keys(caches["services/specs/"]) == {"ns/services-specs-"}  # not confused with the endpoints
    assert keys(caches["services/endpoints/"]) == {"ns/services-endpoints-"}


async def test_a_quiet_resource_is_fresh_once_writes_elsewhere_have_arrived(storage: EtcdStorage,
                                                                           caches: dict[str, Cacher]) -> None:
    pods = caches["pods/"]
    applied = pods.applied_revision
    for index in range(5):
        await storage.create(caches["configmaps/"].prefix + f"ns/c{index}", b"{}")
    latest = await storage.current_revision()
    # no pod changed, so no event will ever come for the pods' cache; the hub's order says it is current
    assert await pods.wait_fresh(latest)
    assert pods.applied_revision == applied
    assert len(caches["configmaps/"].objects) == 5


async def test_a_write_the_hub_cannot_see_leaves_the_read_to_etcd(storage: EtcdStorage,
                                                                  caches: dict[str, Cacher]) -> None:
    outside = await storage.create(f"/elsewhere-{uuid.uuid4().hex[:8]}", b"{}")  # `etcdctl put` by hand
    assert not await caches["pods/"].wait_fresh(outside)


class Raw:
    """A store whose objects are their stored bytes."""

    def decode(self, kv: KeyValue) -> dict[str, Any]:
        return orjson.loads(kv.value)


async def test_an_object_is_encoded_once_per_change_and_a_value_from_etcd_is_not_remembered(
        storage: EtcdStorage, caches: dict[str, Cacher]) -> None:
    configmaps, store = caches["configmaps/"], Raw()
    key = configmaps.prefix + "ns/c"
    revision = await storage.create(key, b'{"v": 1}')
    assert await configmaps.wait_fresh(revision)
    cached = configmaps.objects[key]
    assert configmaps.encoded(store, cached) is configmaps.encoded(store, cached)  # the same bytes, kept
    await storage.delete(key)
    from_etcd = KeyValue(key, b'{"v": 1}', cached.create_revision, cached.mod_revision)  # read just before
    assert await configmaps.wait_fresh(await storage.current_revision())
    assert orjson.loads(configmaps.encoded(store, from_etcd)) == {"v": 1}
    assert key not in configmaps._encoded  # a deleted key leaves nothing behind


async def test_a_cache_hands_out_the_changes_since_a_revision_while_its_window_holds_them(
        storage: EtcdStorage, caches: dict[str, Cacher]) -> None:
    pods = caches["pods/"]
    window = Cacher(pods.hub, pods.prefix.replace("pods/", "secrets/"), history_size=3)
    window.start()
    await wait_until(lambda: window.ready, "the secrets' cache ready")
    def changed_since(revision: int) -> list[str] | None:
        changes = window.changes_since(revision)
        return None if changes is None else [change.key for change in changes]

    try:
        since = window.applied_revision
        assert changed_since(since) == []
        first = await storage.create(window.prefix + "ns/a", b"{}")
        await storage.create(window.prefix + "ns/b", b"{}")
        await storage.create(pods.prefix + "ns/c", b"{}")  # another resource's change
        await storage.update(window.prefix + "ns/a", b"{}", expected_revision=None)
        assert await window.wait_fresh(await storage.current_revision())
        assert changed_since(since) == [window.prefix + "ns/a", window.prefix + "ns/b", window.prefix + "ns/a"]
        assert changed_since(first) == [window.prefix + "ns/b", window.prefix + "ns/a"]
        # the oldest change leaves the window: it can no longer say what changed since before it
        await storage.delete(window.prefix + "ns/b")
        assert await window.wait_fresh(await storage.current_revision())
        assert changed_since(since) is None
        assert changed_since(first) == [window.prefix + "ns/b", window.prefix + "ns/a", window.prefix + "ns/b"]
        assert changed_since(window.applied_revision) == []
    finally:
        await window.stop()


async def test_each_change_carries_what_the_key_held_before_from_the_cache_not_from_etcd(
        storage: EtcdStorage, caches: dict[str, Cacher]) -> None:
    pods = caches["pods/"]
    asked: list[bool] = []
    watch = storage.watch

    def spying_watch(prefix: str, **options: Any) -> Any:
        asked.append(options.get("prev_kv", True))
        return watch(prefix, **options)

    storage.watch = spying_watch  # type: ignore[method-assign]
    try:
        await pods.hub.stop()  # the hub's next watch goes through the spy
        pods.hub.start()
        await wait_until(lambda: pods.ready and asked, "the hub watching again")
    finally:
        del storage.watch
    assert asked == [False]
    watcher = pods.watch(pods.prefix, pods.revision)
    assert watcher is not None
    created = await storage.create(pods.prefix + "ns/p", b'{"v": 1}')
    await storage.update(pods.prefix + "ns/p", b'{"v": 2}', expected_revision=created)
    await storage.delete(pods.prefix + "ns/p")
    await storage.delete(pods.prefix + "ns/before")
    seen = [await watcher.queue.get() for _ in range(4)]
    watcher.close()
    assert [(event.type, event.key.removeprefix(pods.prefix)) for event in seen] == [
        ("PUT", "ns/p"), ("PUT", "ns/p"), ("DELETE", "ns/p"), ("DELETE", "ns/before")]
    previous = [event.prev and (event.prev.value, event.prev.mod_revision) for event in seen]
    assert previous == [None, (b'{"v": 1}', created), (b'{"v": 2}', created + 1), (b"{}", previous[3][1])]
    assert seen[3].prev is not None and seen[3].prev.key == pods.prefix + "ns/before"  # listed, not watched

"""Updates and deletes that start from the watch cache's copy (kube's `cachedExistingObject`): no read from
etcd when the copy is current, and the same outcome as a read from etcd when it is not. Against the session's etcd, on a
prefix of its own, with the cache's objects set by hand so that each test decides how stale they are."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import orjson
import pytest

from minikube_py.api import errors
from minikube_py.api.kinds import default_registry
from minikube_py.apiserver.registry.deletion import DeleteOptions
from minikube_py.apiserver.registry.generic import ResourceStore
from minikube_py.apiserver.registry.strategy import strategy_for
from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.interface import KeyValue

NS = "ns"


class CountingStorage:
    """The storage, counting its reads."""

    def __init__(self, inner: EtcdStorage) -> None:
        self.inner, self.gets = inner, 0

    async def get(self, key: str) -> KeyValue | None:
        self.gets += 1
        return await self.inner.get(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclasses.dataclass
class Cache:
    ready: bool = True
    objects: dict[str, KeyValue] = dataclasses.field(default_factory=dict)


@pytest.fixture()
def counted(storage: EtcdStorage) -> CountingStorage:
    return CountingStorage(storage)


@pytest.fixture()
def configmaps(counted: CountingStorage) -> ResourceStore:
    res = default_registry().lookup("", "v1", "configmaps")
    assert res is not None
    res = dataclasses.replace(res, storage_prefix=f"cached-{uuid.uuid4().hex[:8]}/configmaps")
    store = ResourceStore(res, counted, strategy_for(res))  # type: ignore[arg-type]
    store.cache = Cache()
    return store


async def put(store: ResourceStore, name: str, data: dict[str, str], uid: str = "u-1",
              **metadata: Any) -> KeyValue:
    """Write the ConfigMap straight to etcd; its KeyValue as a cache would hold it."""
    key = store.key(NS, name)
    body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": data,
                         "metadata": {"name": name, "namespace": NS, "uid": uid, **metadata}})
    current = await store.storage.get(key)
    if current is None:
        revision = await store.storage.create(key, body)
    else:
        revision = await store.storage.update(key, body, expected_revision=current.mod_revision)
    kv = await store.storage.get(key)
    assert kv is not None and kv.mod_revision == revision
    return kv


def cache_of(store: ResourceStore) -> Cache:
    assert isinstance(store.cache, Cache)
    return store.cache


def add(key: str, value: str) -> Any:
    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("data", {})[key] = value
        return obj
    return mutate


async def test_a_current_copy_in_the_cache_spares_the_read(configmaps: ResourceStore,
                                                           counted: CountingStorage) -> None:
    cache_of(configmaps).objects[configmaps.key(NS, "c")] = await put(configmaps, "c", {"a": "1"})
    counted.gets = 0
    updated = await configmaps.guaranteed_update(NS, "c", add("b", "2"))
    assert updated["data"] == {"a": "1", "b": "2"}
    assert counted.gets == 0
    assert (await configmaps.get(NS, "c"))["data"] == {"a": "1", "b": "2"}


async def test_a_stale_copy_loses_no_write(configmaps: ResourceStore) -> None:
    cache_of(configmaps).objects[configmaps.key(NS, "c")] = await put(configmaps, "c", {"a": "1"})
    await put(configmaps, "c", {"a": "1", "newer": "yes"})  # the cache has not seen this yet
    updated = await configmaps.guaranteed_update(NS, "c", add("b", "2"))
    assert updated["data"] == {"a": "1", "newer": "yes", "b": "2"}


async def test_a_precondition_is_checked_against_etcd_not_a_stale_copy(configmaps: ResourceStore) -> None:
    cache_of(configmaps).objects[configmaps.key(NS, "c")] = await put(configmaps, "c", {"a": "1"})
    latest = await put(configmaps, "c", {"a": "2"})
    updated = await configmaps.guaranteed_update(NS, "c", add("b", "2"), precondition=str(latest.mod_revision))
    assert updated["data"] == {"a": "2", "b": "2"}
    with pytest.raises(errors.APIError) as refused:  # and a stale precondition is still a 409
        await configmaps.guaranteed_update(NS, "c", add("c", "3"), precondition=str(latest.mod_revision))
    assert refused.value.code == 409


async def test_nothing_to_change_in_a_stale_copy_is_confirmed_with_etcd(configmaps: ResourceStore) -> None:
    cache_of(configmaps).objects[configmaps.key(NS, "c")] = await put(configmaps, "c", {"a": "1", "b": "2"})
    await put(configmaps, "c", {"a": "1"})
    updated = await configmaps.guaranteed_update(NS, "c", add("b", "2"))  # a no-op on the cached copy
    assert (await configmaps.get(NS, "c"))["data"] == {"a": "1", "b": "2"}
    assert updated["metadata"]["resourceVersion"] == (await configmaps.get(NS, "c"))["metadata"]["resourceVersion"]


async def test_an_object_deleted_since_the_copy_is_not_found_and_stays_deleted(configmaps: ResourceStore) -> None:
    key = configmaps.key(NS, "c")
    cache_of(configmaps).objects[key] = await put(configmaps, "c", {"a": "1"})
    await configmaps.storage.delete(key)
    with pytest.raises(errors.APIError) as missing:
        await configmaps.guaranteed_update(NS, "c", add("b", "2"))
    assert missing.value.code == 404
    assert await configmaps.storage.get(key) is None


async def test_a_cache_not_ready_is_not_used(configmaps: ResourceStore, counted: CountingStorage) -> None:
    stale = await put(configmaps, "c", {"a": "1"})
    await put(configmaps, "c", {"a": "2"})
    cache_of(configmaps).objects[configmaps.key(NS, "c")] = stale
    cache_of(configmaps).ready = False
    counted.gets = 0
    updated = await configmaps.guaranteed_update(NS, "c", add("b", "2"))
    assert updated["data"] == {"a": "2", "b": "2"}
    assert counted.gets == 1


async def test_a_delete_from_a_current_copy_spares_the_read(configmaps: ResourceStore,
                                                            counted: CountingStorage) -> None:
    cache_of(configmaps).objects[configmaps.key(NS, "c")] = await put(configmaps, "c", {"a": "1"})
    counted.gets = 0
    _, gone = await configmaps.delete(NS, "c", DeleteOptions())
    assert gone and counted.gets == 0
    assert await configmaps.storage.get(configmaps.key(NS, "c")) is None


async def test_a_delete_from_a_stale_copy_honours_a_finalizer_added_since(configmaps: ResourceStore) -> None:
    cache_of(configmaps).objects[configmaps.key(NS, "c")] = await put(configmaps, "c", {"a": "1"})
    await put(configmaps, "c", {"a": "1"}, finalizers=["example.com/keep"])
    now, gone = await configmaps.delete(NS, "c", DeleteOptions())
    assert not gone and now["metadata"]["deletionTimestamp"]
    assert (await configmaps.get(NS, "c"))["metadata"]["finalizers"] == ["example.com/keep"]


async def test_nothing_to_record_in_a_stale_copy_is_confirmed_with_etcd(configmaps: ResourceStore) -> None:
    key = configmaps.key(NS, "c")
    cache_of(configmaps).objects[key] = await put(configmaps, "c", {}, finalizers=["example.com/keep"],
                                                  deletionTimestamp="2026-01-01T00:00:00Z")
    await put(configmaps, "c", {}, finalizers=["example.com/keep"])  # etcd's copy is not being deleted
    _, gone = await configmaps.delete(NS, "c", DeleteOptions())
    assert not gone and (await configmaps.get(NS, "c"))["metadata"].get("deletionTimestamp")


async def test_a_delete_precondition_is_checked_against_etcd_not_a_stale_copy(configmaps: ResourceStore) -> None:
    key = configmaps.key(NS, "c")
    cache_of(configmaps).objects[key] = await put(configmaps, "c", {}, uid="old")
    await configmaps.storage.delete(key)
    await put(configmaps, "c", {}, uid="new")  # deleted and made again: the cache has not caught up
    _, gone = await configmaps.delete(NS, "c", DeleteOptions(precondition_uid="new"))
    assert gone
    await put(configmaps, "c", {}, uid="newer")
    with pytest.raises(errors.APIError) as refused:
        await configmaps.delete(NS, "c", DeleteOptions(precondition_uid="new"))
    assert refused.value.code == 409

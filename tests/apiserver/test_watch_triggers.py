"""The pods watch cache's indexed trigger (`spec.nodeName`): a watch whose field selector pins a node is
offered only the changes of pods that are or were on that node, and still sees them as before: ADDED when
a pod is bound to its node, DELETED when one leaves it. Against the session's etcd, on a prefix of its own;
one test goes through the whole apiserver."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest

from minikube_py.api.kinds import default_registry
from minikube_py.apiserver.cacher import Cacher, CacheWatcher, IndexedTrigger, WatchHub
from minikube_py.apiserver.registry.generic import ResourceStore
from minikube_py.apiserver.registry.listing import parse_list_options
from minikube_py.apiserver.registry.strategy import strategy_for
from minikube_py.apiserver.watch import watch_events
from minikube_py.store.etcd import EtcdStorage
from tests.apiserver.test_list_watch import Watcher, summary
from tests.apiserver.test_rest import pod, pods_url
from tests.store.helpers import wait_until

NS = "ns"


@pytest.fixture()
async def pods(storage: EtcdStorage) -> AsyncIterator[ResourceStore]:
    """The pods' store, on a prefix no other test writes under."""
    res = default_registry().lookup("", "v1", "pods")
    assert res is not None
    res = dataclasses.replace(res, storage_prefix=f"triggers-{uuid.uuid4().hex[:8]}/pods")
    yield ResourceStore(res, storage, strategy_for(res))


@pytest.fixture()
async def cache(storage: EtcdStorage, pods: ResourceStore) -> AsyncIterator[Cacher]:
    """The pods' watch cache, indexed by `spec.nodeName` as the apiserver's is."""
    hub = WatchHub(storage, pods.resource.key_prefix.removesuffix("pods/"))
    hub.start()
    found = Cacher(hub, pods.resource.key_prefix, IndexedTrigger("spec.nodeName", pods))
    found.start()
    await wait_until(lambda: found.ready, "the pods' cache ready")
    yield found
    await found.stop()
    await hub.stop()


def stored(name: str, node: str = "", **labels: str) -> bytes:
    spec = {"nodeName": node} if node else {}
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS,
                                                                         "labels": labels}, "spec": spec})


async def put(storage: EtcdStorage, pods: ResourceStore, name: str, node: str = "", **labels: str) -> int:
    key, value = pods.key(NS, name), stored(name, node, **labels)
    if await storage.get(key) is None:
        return await storage.create(key, value)
    return await storage.update(key, value, expected_revision=None)


async def settled(storage: EtcdStorage, cache: Cacher) -> None:
    assert await cache.wait_fresh(await storage.current_revision())


def offered(watcher: CacheWatcher) -> list[tuple[str, str]]:
    """The changes (not progress notifications) put in the watcher's queue: (type, pod name)."""
    found = []
    while not watcher.queue.empty():
        event = watcher.queue.get_nowait()
        if event is not None and event.type != "PROGRESS":
            found.append((event.type, event.key.rsplit("/", 1)[1]))
    return found


class Stream:
    """A watch as `watch.py` serves it to a client, read into `events` as (type, pod name)."""

    def __init__(self, pods: ResourceStore, cache: Cacher, **query: str) -> None:
        options = parse_list_options(pods.resource, query)
        self.events: list[tuple[str, str]] = []
        self._task = asyncio.create_task(self._read(watch_events(pods, cache, NS, options, None)))

    async def _read(self, lines: AsyncIterator[bytes]) -> None:
        async for line in lines:
            event = orjson.loads(line)
            self.events.append((event["type"], event["object"]["metadata"]["name"]))

    async def until(self, count: int) -> list[tuple[str, str]]:
        await wait_until(lambda: len(self.events) >= count, f"{count} events, have {self.events}")
        return self.events

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def test_a_node_watcher_is_offered_only_the_pods_of_its_node(storage: EtcdStorage, pods: ResourceStore,
                                                                    cache: Cacher) -> None:
    prefix = pods.prefix(NS)
    on_a = cache.watch(prefix, cache.revision, trigger_value="node-a")
    on_b = cache.watch(prefix, cache.revision, trigger_value="node-b")
    unbound = cache.watch(prefix, cache.revision, trigger_value="")  # the scheduler's `spec.nodeName=`
    everything = cache.watch(prefix, cache.revision)
    assert on_a and on_b and unbound and everything
    for name, node in (("p-a", "node-a"), ("p-b", "node-b"), ("p-none", "")):
        await put(storage, pods, name, node)
    await storage.delete(pods.key(NS, "p-b"))
    await settled(storage, cache)
    assert offered(on_a) == [("PUT", "p-a")]
    assert offered(on_b) == [("PUT", "p-b"), ("DELETE", "p-b")]
    assert offered(unbound) == [("PUT", "p-none")]
    assert offered(everything) == [("PUT", "p-a"), ("PUT", "p-b"), ("PUT", "p-none"), ("DELETE", "p-b")]
    on_a.close()
    assert cache.watchers == {on_b, unbound, everything}


async def test_a_node_watcher_sees_its_pods_added_modified_and_deleted(storage: EtcdStorage, pods: ResourceStore,
                                                                        cache: Cacher) -> None:
    stream = Stream(pods, cache, fieldSelector="spec.nodeName=node-a")
    await wait_until(lambda: any(w.trigger_value == "node-a" for w in cache.watchers), "the watch started")
    await put(storage, pods, "mine", "node-a")
    await put(storage, pods, "other", "node-b")
    await put(storage, pods, "mine", "node-a", changed="yes")
    await put(storage, pods, "other", "node-b", changed="yes")
    await storage.delete(pods.key(NS, "other"))
    await storage.delete(pods.key(NS, "mine"))
    assert await stream.until(3) == [("ADDED", "mine"), ("MODIFIED", "mine"), ("DELETED", "mine")]
    await stream.close()


async def test_a_pod_bound_or_moved_reaches_the_watchers_of_both_nodes(storage: EtcdStorage, pods: ResourceStore,
                                                                        cache: Cacher) -> None:
    on_a = Stream(pods, cache, fieldSelector="spec.nodeName=node-a")
    on_b = Stream(pods, cache, fieldSelector="spec.host=node-b")  # the legacy label pins the same field
    unbound = Stream(pods, cache, fieldSelector="spec.nodeName=")
    await wait_until(lambda: len(cache.watchers) == 3, "the watches started")
    assert sorted(w.trigger_value or "" for w in cache.watchers) == ["", "node-a", "node-b"]
    await put(storage, pods, "p")  # created unbound
    await put(storage, pods, "p", "node-a")  # bound to node-a
    await put(storage, pods, "p", "node-b")  # moved (only a raw write can do that) to node-b
    await storage.delete(pods.key(NS, "p"))
    assert await unbound.until(2) == [("ADDED", "p"), ("DELETED", "p")]
    assert await on_a.until(2) == [("ADDED", "p"), ("DELETED", "p")]
    assert await on_b.until(2) == [("ADDED", "p"), ("DELETED", "p")]
    for stream in (on_a, on_b, unbound):
        await stream.close()


@pytest.mark.parametrize("selector", ["", "spec.nodeName!=node-a", "status.phase!=Failed"])
async def test_a_watcher_without_a_pinned_node_gets_every_change(storage: EtcdStorage, pods: ResourceStore,
                                                                  cache: Cacher, selector: str) -> None:
    stream = Stream(pods, cache, fieldSelector=selector)
    await wait_until(lambda: len(cache.watchers) == 1, "the watch started")
    assert next(iter(cache.watchers)).trigger_value is None
    await put(storage, pods, "p-b", "node-b")
    await put(storage, pods, "p-c", "node-c")
    await put(storage, pods, "p-none")
    assert await stream.until(3) == [("ADDED", "p-b"), ("ADDED", "p-c"), ("ADDED", "p-none")]
    await stream.close()


async def test_a_node_watcher_from_a_resource_version_is_replayed_its_changes(
        storage: EtcdStorage, pods: ResourceStore, cache: Cacher) -> None:
    await put(storage, pods, "before", "node-a")
    since = await storage.current_revision()
    await put(storage, pods, "mine", "node-a")
    await put(storage, pods, "other", "node-b")
    await put(storage, pods, "bound")
    await put(storage, pods, "bound", "node-a")
    await put(storage, pods, "left", "node-b")
    await settled(storage, cache)
    replayed = cache.watch(pods.prefix(NS), since, trigger_value="node-a")
    assert replayed is not None
    assert offered(replayed) == [("PUT", "mine"), ("PUT", "bound")]
    replayed.close()
    stream = Stream(pods, cache, fieldSelector="spec.nodeName=node-a", resourceVersion=str(since))
    assert await stream.until(2) == [("ADDED", "mine"), ("ADDED", "bound")]
    await put(storage, pods, "mine", "node-b")  # after the replay: live changes follow
    assert await stream.until(3) == [("ADDED", "mine"), ("ADDED", "bound"), ("DELETED", "mine")]
    await stream.close()


async def test_a_change_the_trigger_cannot_read_goes_to_every_watcher(storage: EtcdStorage, pods: ResourceStore,
                                                                       cache: Cacher) -> None:
    on_a = cache.watch(pods.prefix(NS), cache.revision, trigger_value="node-a")
    on_b = cache.watch(pods.prefix(NS), cache.revision, trigger_value="node-b")
    assert on_a and on_b
    await storage.create(pods.key(NS, "junk"), b"not json")  # an `etcdctl put` by hand
    await put(storage, pods, "p-a", "node-a")
    await settled(storage, cache)  # the cache (and the hub) went on
    assert offered(on_a) == [("PUT", "junk"), ("PUT", "p-a")]
    assert offered(on_b) == [("PUT", "junk")]


def test_a_kubelets_watch_sees_its_pod_bound_and_deleted(api: httpx.Client, control_plane, namespace: str) -> None:
    rv = api.post(pods_url(namespace), json=pod("other")).json()["metadata"]["resourceVersion"]
    with control_plane.client() as watch_client:
        watcher = Watcher(watch_client, pods_url(namespace), {"resourceVersion": rv, "timeoutSeconds": "10",
                                                              "fieldSelector": "spec.nodeName=trigger-node"})
        api.post(pods_url(namespace), json=pod("p"))
        for name, node in (("other", "elsewhere"), ("p", "trigger-node")):
            binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
            assert api.post(pods_url(namespace, name) + "/binding", json=binding).status_code == 201
        api.delete(pods_url(namespace, "other"), params={"gracePeriodSeconds": "0"})
        api.delete(pods_url(namespace, "p"), params={"gracePeriodSeconds": "0"})
        events = watcher.wait_for(2)
        while events[-1]["type"] != "DELETED":
            events = watcher.wait_for(len(events) + 1)
    assert summary(events)[0] == ("ADDED", "p") and summary(events)[-1] == ("DELETED", "p")
    assert {name for _, name in summary(events)} == {"p"}

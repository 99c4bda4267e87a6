"""The reflector: paging, watching from the list's resourceVersion, bookmarks, relists on 410, backoff on
connection errors (with a scripted client), and against a real apiserver that restarts or compacts etcd."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import orjson
import pytest

from minikube_py.client import errors
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.reflector import PAGE_SIZE, Backoff, Reflector
from minikube_py.client.resources import CONFIGMAPS
from minikube_py.client.rest import RESTClient, WatchEvent
from minikube_py.client.store import Indexer
from minikube_py.store.etcd import EtcdStorage
from tests.client.test_rest import configmap
from tests.harness import ControlPlane

WAIT = 45.0  # seconds a test waits for the store to reach a state (an apiserver restart takes a few)


def cm(name: str, rv: int, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}, "data": data}


def gone() -> errors.Expired:
    return errors.Expired({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"})


def page(items: list[dict[str, Any]], rv: int, token: str = "") -> dict[str, Any]:
    return {"kind": "ConfigMapList", "metadata": {"resourceVersion": str(rv), "continue": token}, "items": items}


class FakeClient:
    """A scripted RESTClient: each list pops a page (or raises), each watch pops a list of events (a trailing
    exception is raised); with nothing left, calls block, so the reflector idles until cancelled."""

    def __init__(self, lists: Iterable[Any], watches: Iterable[list[Any]]) -> None:
        self.lists, self.watches = collections.deque(lists), collections.deque(watches)
        self.calls: list[tuple[str, str, str]] = []  # (verb, resourceVersion, continue token)
        self.watch_options: list[dict[str, Any]] = []
        self.idle = asyncio.Event()

    async def list(self, resource: Any, namespace: str | None = None, **options: Any) -> dict[str, Any]:
        self.calls.append(("list", options["resource_version"], options["continue_"]))
        assert options["limit"] in (PAGE_SIZE, 0)
        return await self._next(self.lists)

    async def watch(self, resource: Any, namespace: str | None = None, **options: Any) -> AsyncIterator[WatchEvent]:
        self.calls.append(("watch", options["resource_version"], ""))
        self.watch_options.append(options)
        for item in await self._next(self.watches):
            if isinstance(item, BaseException):
                raise item
            yield WatchEvent(*item)

    async def _next(self, script: collections.deque[Any]) -> Any:
        if not script:
            self.idle.set()
            await asyncio.Event().wait()
        item = script.popleft()
        if isinstance(item, BaseException):
            raise item
        return item


class RecordingStore(Indexer):
    """An indexer that counts replaces (one per list or relist)."""

    def __init__(self) -> None:
        super().__init__()
        self.replaced: list[str] = []

    def replace(self, items: Iterable[dict[str, Any]], resource_version: str = "") -> None:
        super().replace(items, resource_version)
        self.replaced.append(resource_version)


def no_wait_backoff(delays: list[float]) -> Backoff:
    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(0)

    return Backoff(sleep=sleep, rand=lambda: 0.0)


async def run_until_idle(client: FakeClient, store: Indexer, delays: list[float] | None = None) -> Reflector:
    reflector = Reflector(client, CONFIGMAPS, store, namespace="ns",  # type: ignore[arg-type]
                          backoff=no_wait_backoff(delays if delays is not None else []))
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(client.idle.wait(), 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return reflector


def names(store: Indexer) -> dict[str, str]:
    return {obj["metadata"]["name"]: obj["metadata"]["resourceVersion"] for obj in store.list()}


async def test_lists_every_page_then_watches_from_the_lists_resource_version() -> None:
    client = FakeClient([page([cm("a", 3)], 9, "next"), page([cm("b", 5)], 9)],
                        [[("ADDED", cm("c", 10)), ("MODIFIED", cm("a", 11)), ("DELETED", cm("b", 12))]])
    store = RecordingStore()
    reflector = await run_until_idle(client, store)
    assert client.calls[:3] == [("list", "0", ""), ("list", "", "next"), ("watch", "9", "")]
    assert names(store) == {"a": "11", "c": "10"} and store.replaced == ["9"]
    assert reflector.last_sync_resource_version == "12"
    assert client.watch_options[0]["allow_bookmarks"] and 300 <= client.watch_options[0]["timeout_seconds"] <= 600


async def test_list_items_get_the_kind_the_watch_events_carry() -> None:
    store = Indexer()
    await run_until_idle(FakeClient([page([cm("a", 3)], 3)], []), store)
    (obj,) = store.list()
    assert (obj["kind"], obj["apiVersion"]) == ("ConfigMap", "v1")


async def test_a_bookmark_moves_the_resource_version_the_next_watch_starts_from() -> None:
    bookmark = {"kind": "ConfigMap", "metadata": {"resourceVersion": "50"}}
    client = FakeClient([page([], 9)], [[("BOOKMARK", bookmark)], [("ADDED", cm("a", 51))]])
    store = RecordingStore()
    await run_until_idle(client, store)
    assert [call for call in client.calls if call[0] == "watch"] == [("watch", "9", ""), ("watch", "50", ""),
                                                                      ("watch", "51", "")]
    assert names(store) == {"a": "51"} and store.replaced == ["9"]


async def test_a_watch_ending_in_gone_relists_from_the_last_resource_version() -> None:
    client = FakeClient([page([cm("a", 3), cm("b", 4)], 9), page([cm("b", 20)], 21)],
                        [[("MODIFIED", cm("a", 15)), gone()]])
    store = RecordingStore()
    delays: list[float] = []
    await run_until_idle(client, store, delays)
    assert client.calls == [("list", "0", ""), ("watch", "9", ""), ("list", "15", ""), ("watch", "21", "")]
    assert names(store) == {"b": "20"} and store.replaced == ["9", "21"]
    assert delays == [0.8]  # every relist waits a backoff, so a flapping server is not hammered


async def test_a_list_at_a_compacted_resource_version_lists_the_latest_state_instead() -> None:
    client = FakeClient([page([], 9), gone(), page([cm("a", 30)], 30)], [[gone()]])
    store = RecordingStore()
    await run_until_idle(client, store)
    assert [call for call in client.calls if call[0] == "list"] == [("list", "0", ""), ("list", "9", ""),
                                                                    ("list", "", "")]
    assert names(store) == {"a": "30"}


async def test_an_expired_continue_token_falls_back_to_one_full_list() -> None:
    client = FakeClient([page([cm("a", 3)], 9, "next"), gone(), page([cm("a", 3), cm("b", 4)], 9)], [])
    store = RecordingStore()
    await run_until_idle(client, store)
    assert client.calls[:3] == [("list", "0", ""), ("list", "", "next"), ("list", "0", "")]
    assert names(store) == {"a": "3", "b": "4"}


async def test_refused_connections_retry_the_watch_with_growing_backoff_then_reset() -> None:
    refused = errors.ConnectError("connection refused")
    client = FakeClient([page([], 9)], [[refused], [refused], [refused], [("ADDED", cm("a", 10))], [refused]])
    delays: list[float] = []
    store = RecordingStore()
    await run_until_idle(client, store, delays)
    assert delays == [0.8, 1.6, 3.2, 0.8]  # reset by the healthy watch in between
    assert store.replaced == ["9"] and names(store) == {"a": "10"}  # no relist: the watch resumed


async def test_a_down_apiserver_costs_at_most_one_list_per_backoff_capped_at_30_seconds() -> None:
    refused = errors.ConnectError("connection refused")
    client = FakeClient([refused] * 8 + [page([], 9)], [])
    delays: list[float] = []
    await run_until_idle(client, RecordingStore(), delays)
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


async def test_a_watch_that_ends_at_once_with_nothing_relists() -> None:
    client = FakeClient([page([], 9), page([], 12)], [[]])
    await run_until_idle(client, RecordingStore())
    assert client.calls == [("list", "0", ""), ("watch", "9", ""), ("list", "9", ""), ("watch", "12", "")]


@pytest.mark.parametrize("failure", [
    errors.Forbidden({"code": 403, "reason": "Forbidden", "message": "no"}),
    ValueError("watch stream: not an event"),
    errors.InternalError({"code": 500, "reason": "InternalError", "message": "boom"}),
], ids=["a forbidden watch", "a garbled watch stream", "an internal error"])
async def test_other_watch_failures_relist_after_a_backoff(failure: Exception) -> None:
    client = FakeClient([page([cm("a", 3)], 9), page([cm("a", 3)], 9)], [[failure]])
    delays: list[float] = []
    store = RecordingStore()
    await run_until_idle(client, store, delays)
    assert store.replaced == ["9", "9"] and delays == [0.8]


def test_backoff_doubles_with_jitter_up_to_its_cap_and_resets() -> None:
    backoff = Backoff(1.0, 5.0, rand=lambda: 0.5)
    assert [backoff.next_delay() for _ in range(5)] == [1.5, 3.0, 5.0, 5.0, 5.0]
    backoff.reset()
    assert backoff.next_delay() == 1.5


# --- against a real apiserver ------------------------------------------------------------------------------

async def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def running(client: RESTClient, store: Indexer, namespace: str) -> tuple[Reflector, asyncio.Task[None]]:
    reflector = Reflector(client, CONFIGMAPS, store, namespace=namespace, label_selector="test=reflector")
    return reflector, asyncio.create_task(reflector.run())


async def stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def restarted(control_plane: ControlPlane, while_down: Callable[[], Awaitable[None]] | None = None) -> None:
    await asyncio.to_thread(control_plane.stop_apiserver)
    try:
        if while_down is not None:
            await while_down()
    finally:
        await asyncio.to_thread(control_plane.start_apiserver)


def data_of(store: Indexer) -> dict[str, dict[str, str]]:
    return {obj["metadata"]["name"]: obj.get("data", {}) for obj in store.list()}


async def test_a_watch_survives_an_apiserver_restart(control_plane: ControlPlane, namespace: str) -> None:
    async with RESTClient(load_kubeconfig(control_plane.kubeconfig)) as client:
        store = RecordingStore()
        labels = {"test": "reflector"}
        await client.create(CONFIGMAPS, configmap("before", labels), namespace)
        _, task = await running(client, store, namespace)
        try:
            await wait_for(lambda: "before" in data_of(store), "the initial list")
            await restarted(control_plane)
            await client.create(CONFIGMAPS, configmap("after", labels, v="1"), namespace)
            await client.delete(CONFIGMAPS, "before", namespace)
            await wait_for(lambda: data_of(store) == {"after": {"v": "1"}}, "changes made after the restart")
        finally:
            await stopped(task)


async def test_a_relist_after_compaction_brings_the_store_up_to_date(control_plane: ControlPlane,
                                                                     namespace: str) -> None:
    async with RESTClient(load_kubeconfig(control_plane.kubeconfig)) as client:
        store = RecordingStore()
        labels = {"test": "reflector"}
        for name in ("gone", "changed", "same"):
            await client.create(CONFIGMAPS, configmap(name, labels, v="1"), namespace)
        reflector, task = await running(client, store, namespace)
        try:
            await wait_for(lambda: len(store) == 3, "the initial list")
            seen = int(reflector.last_sync_resource_version)

            async def change_etcd_and_compact() -> None:  # as an operator with etcdctl would, apiserver down
                storage = await EtcdStorage.connect(control_plane.etcd_endpoints)
                try:
                    await storage.delete(f"/registry/configmaps/{namespace}/gone")
                    key = f"/registry/configmaps/{namespace}/changed"
                    stored = await storage.get(key)
                    assert stored is not None
                    obj = orjson.loads(stored.value)
                    obj["data"] = {"v": "2"}
                    await storage.update(key, orjson.dumps(obj), expected_revision=None)
                    await storage.compact(await storage.current_revision())
                finally:
                    await storage.close()

            await restarted(control_plane, change_etcd_and_compact)
            await wait_for(lambda: len(store.replaced) >= 2, "a relist")
            assert int(store.replaced[-1]) > seen
            assert data_of(store) == {"changed": {"v": "2"}, "same": {"v": "1"}}
            await client.create(CONFIGMAPS, configmap("later", labels), namespace)
            await wait_for(lambda: "later" in data_of(store), "the watch after the relist")
        finally:
            await stopped(task)

"""Shared informers against a real apiserver: handlers in order, indexes and listers, resync, independent
handlers, late handlers, the factory; tombstones on relist (scripted client); and bad usage."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from minikube_py.api.selectors import LabelSelector
from minikube_py.client import errors
from minikube_py.client.informer import FuncHandler, SharedIndexInformer, SharedInformerFactory
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.resources import CONFIGMAPS, NAMESPACES
from minikube_py.client.rest import RESTClient
from minikube_py.client.store import NAMESPACE_INDEX, DeletedFinalStateUnknown
from tests.client.test_reflector import FakeClient, cm, gone, no_wait_backoff, page, wait_for
from tests.client.test_rest import configmap
from tests.harness import ControlPlane

SELECTOR = "test=informer"
LABELS = {"test": "informer"}


def name_of(obj: Any) -> str:
    return obj.key.split("/")[-1] if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]


class Recorder:
    """A handler that records what it is told, as (verb, name, detail) tuples."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.events.append(("add", name_of(obj), is_in_initial_list))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", name_of(new), (old.get("data"), new.get("data"))))

    def on_delete(self, obj: Any) -> None:
        self.events.append(("delete", name_of(obj), type(obj).__name__))

    def of(self, verb: str) -> list[tuple[str, str, Any]]:
        return [event for event in self.events if event[0] == verb]


@pytest.fixture()
async def client(control_plane: ControlPlane) -> AsyncIterator[RESTClient]:
    async with RESTClient(load_kubeconfig(control_plane.kubeconfig)) as rest:
        yield rest


@pytest.fixture()
async def factory(client: RESTClient) -> AsyncIterator[SharedInformerFactory]:
    shared = SharedInformerFactory(client)
    yield shared
    await shared.stop()


def informer_in(factory: SharedInformerFactory, namespace: str, **options: Any) -> SharedIndexInformer:
    return factory.informer_for(CONFIGMAPS, namespace=namespace, label_selector=SELECTOR, **options)


async def started(factory: SharedInformerFactory) -> None:
    factory.start()
    assert await factory.wait_for_cache_sync(timeout=10), "informers did not sync"


async def cached(client: RESTClient, namespace: str, count: int) -> None:
    """Wait until the watch cache holds `count` of the test's ConfigMaps (those the informers select) in the
    namespace; not counting others, such as the `kube-root-ca.crt` the controller manager puts in every
    namespace, which may reach the cache first.

    An informer's first list asks for resourceVersion "0", whatever the cache holds, and the cache may trail a
    write that has just returned (as in kube): a test about that list waits for the cache first.
    """
    async with asyncio.timeout(10):
        while len((await client.list(CONFIGMAPS, namespace, resource_version="0",
                                     label_selector=SELECTOR))["items"]) < count:
            await asyncio.sleep(0.01)


async def test_handlers_see_the_initial_list_then_every_change_in_order(
        client: RESTClient, factory: SharedInformerFactory, namespace: str) -> None:
    await client.create(CONFIGMAPS, configmap("a", LABELS, v="1"), namespace)
    await cached(client, namespace, 1)
    informer = informer_in(factory, namespace)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    assert not informer.has_synced()
    await started(factory)
    assert informer.has_synced()
    await client.create(CONFIGMAPS, configmap("b", LABELS), namespace)
    await client.patch(CONFIGMAPS, "a", {"data": {"v": "2"}}, namespace)
    await client.delete(CONFIGMAPS, "b", namespace)
    await wait_for(lambda: len(recorder.events) == 4, "four notifications", 10)
    assert recorder.events == [("add", "a", True), ("add", "b", False), ("update", "a", ({"v": "1"}, {"v": "2"})),
                               ("delete", "b", "dict")]
    assert [obj["metadata"]["name"] for obj in informer.lister().list(namespace)] == ["a"]


async def test_custom_indexes_and_the_lister_follow_changes(client: RESTClient, factory: SharedInformerFactory,
                                                            namespace: str) -> None:
    def by_color(obj: dict[str, Any]) -> list[str]:
        return [obj["metadata"].get("labels", {}).get("color", "")]

    informer = informer_in(factory, namespace, indexers={"color": by_color})
    for name, color in (("a", "red"), ("b", "red"), ("c", "blue")):
        await client.create(CONFIGMAPS, configmap(name, {**LABELS, "color": color}), namespace)
    await started(factory)
    await wait_for(lambda: len(informer.indexer) == 3, "three objects")
    assert sorted(name_of(o) for o in informer.indexer.by_index("color", "red")) == ["a", "b"]
    await client.patch(CONFIGMAPS, "b", {"metadata": {"labels": {"color": "blue"}}}, namespace)
    await wait_for(lambda: len(informer.indexer.by_index("color", "blue")) == 2, "b to move to blue")
    assert [name_of(o) for o in informer.indexer.by_index("color", "red")] == ["a"]
    assert len(informer.indexer.by_index(NAMESPACE_INDEX, namespace)) == 3
    lister = informer.lister()
    assert sorted(name_of(o) for o in lister.list(namespace, LabelSelector.parse("color=blue"))) == ["b", "c"]
    assert lister.get("c", namespace)["metadata"]["labels"]["color"] == "blue"
    with pytest.raises(errors.NotFound):
        lister.get("zzz", namespace)


async def test_resync_redelivers_cached_objects_only_to_handlers_that_asked(
        client: RESTClient, factory: SharedInformerFactory, namespace: str) -> None:
    await client.create(CONFIGMAPS, configmap("a", LABELS, v="1"), namespace)
    await cached(client, namespace, 1)
    informer = informer_in(factory, namespace)
    resyncing, quiet = Recorder(), Recorder()
    informer.add_event_handler(resyncing, resync_period=1.0)
    informer.add_event_handler(quiet)
    await started(factory)
    await wait_for(lambda: len(resyncing.of("update")) >= 2, "two resyncs", 10)
    assert resyncing.of("update")[:2] == [("update", "a", ({"v": "1"}, {"v": "1"}))] * 2
    assert quiet.events == [("add", "a", True)]


async def test_a_slow_handler_does_not_hold_up_another(client: RESTClient, factory: SharedInformerFactory,
                                                       namespace: str) -> None:
    release = asyncio.Event()
    slow_seen: list[str] = []

    async def slow_add(obj: dict[str, Any]) -> None:
        await release.wait()
        slow_seen.append(name_of(obj))

    informer = informer_in(factory, namespace)
    fast = Recorder()
    informer.add_event_handler(FuncHandler(on_add=slow_add))
    informer.add_event_handler(fast)
    await started(factory)
    for name in ("a", "b", "c"):
        await client.create(CONFIGMAPS, configmap(name, LABELS), namespace)
    await wait_for(lambda: len(fast.events) == 3, "the fast handler to see three adds", 10)
    assert slow_seen == []
    release.set()
    await wait_for(lambda: slow_seen == ["a", "b", "c"], "the slow handler to catch up in order", 10)


async def test_a_handler_added_late_gets_the_current_contents_as_initial_adds(
        client: RESTClient, factory: SharedInformerFactory, namespace: str) -> None:
    for name in ("a", "b"):
        await client.create(CONFIGMAPS, configmap(name, LABELS), namespace)
    informer = informer_in(factory, namespace)
    await started(factory)
    await wait_for(lambda: len(informer.indexer) == 2, "two objects")
    late = Recorder()
    registration = informer.add_event_handler(late)
    await wait_for(registration.has_synced, "the late handler to sync", 10)
    assert sorted(late.events) == [("add", "a", True), ("add", "b", True)]
    await client.create(CONFIGMAPS, configmap("c", LABELS), namespace)
    await wait_for(lambda: ("add", "c", False) in late.events, "a later add", 10)


async def test_the_factory_shares_informers_and_stops_them(client: RESTClient, namespace: str) -> None:
    factory = SharedInformerFactory(client)
    first = informer_in(factory, namespace)
    assert informer_in(factory, namespace) is first
    assert factory.informer_for(CONFIGMAPS, namespace=namespace) is not first
    assert factory.lister(NAMESPACES) is factory.informer_for(NAMESPACES).lister()
    await started(factory)
    assert factory.lister(NAMESPACES).get(namespace)["metadata"]["name"] == namespace
    tasks = [task for task in asyncio.all_tasks() if task.get_name().startswith("informer-")]
    assert len(tasks) == 3
    late = factory.informer_for(CONFIGMAPS, label_selector="late=1")  # a running factory starts it at once
    assert await late.wait_for_cache_sync(timeout=10)
    await factory.stop()
    assert all(task.done() for task in tasks)
    with pytest.raises(RuntimeError, match="stopped"):
        factory.start()


async def test_objects_gone_at_a_relist_are_delivered_as_deleted_final_state_unknown() -> None:
    client = FakeClient([page([cm("a", 3, v="1"), cm("b", 4, v="1"), cm("c", 5)], 9),
                         page([cm("b", 20, v="2"), cm("c", 5), cm("d", 21)], 21)], [[gone()]])
    informer = SharedIndexInformer(client, CONFIGMAPS, namespace="ns")  # type: ignore[arg-type]
    informer.reflector.backoff = no_wait_backoff([])
    recorder = Recorder()
    informer.add_event_handler(recorder)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(client.idle.wait(), 5)
        await wait_for(lambda: len(recorder.events) == 6, "the relist's notifications", 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert recorder.events[3:] == [("update", "b", ({"v": "1"}, {"v": "2"})), ("add", "d", False),
                                   ("delete", "a", "DeletedFinalStateUnknown")]
    assert sorted(informer.indexer.list_keys()) == ["ns/b", "ns/c", "ns/d"]


async def test_a_failing_handler_is_logged_and_gets_the_next_notification(
        caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def flaky(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        seen.append(name_of(obj))
        if name_of(obj) == "a":
            raise RuntimeError("handler bug")

    informer = SharedIndexInformer(FakeClient([page([cm("a", 1), cm("b", 2)], 2)], []),  # type: ignore[arg-type]
                                   CONFIGMAPS)
    informer.add_event_handler(FuncHandler(on_add=flaky))
    task = asyncio.create_task(informer.run())
    try:
        await wait_for(lambda: seen == ["a", "b"], "both adds", 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert "handler bug" in caplog.text


BAD_USES: list[tuple[str, Callable[[SharedIndexInformer], Any], str]] = [
    ("running an informer twice", lambda informer: informer.run(), "already started"),
    ("adding indexers to a running informer", lambda informer: informer.add_indexers({"x": lambda o: []}),
     "already started"),
]


@pytest.mark.parametrize(("use", "message"), [case[1:] for case in BAD_USES], ids=[case[0] for case in BAD_USES])
async def test_bad_uses_of_a_running_informer_raise(use: Callable[[SharedIndexInformer], Any], message: str) -> None:
    informer = SharedIndexInformer(FakeClient([], []), CONFIGMAPS)  # type: ignore[arg-type]
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(0)
    try:
        with pytest.raises(RuntimeError, match=message):
            result = use(informer)
            if asyncio.iscoroutine(result):
                await result
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_a_resync_period_under_a_second_is_raised_to_one(caplog: pytest.LogCaptureFixture) -> None:
    informer = SharedIndexInformer(FakeClient([], []), CONFIGMAPS)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        registration = informer.add_event_handler(Recorder(), resync_period=0.01)
    assert registration.resync_period == 1.0 and "too small" in caplog.text


def test_func_handlers_take_the_initial_list_flag_only_if_they_want_it() -> None:
    calls: list[Any] = []
    FuncHandler(on_add=lambda obj: calls.append(obj)).on_add({"x": 1}, True)
    FuncHandler(on_add=lambda obj, initial: calls.append((obj, initial))).on_add({"y": 2}, False)
    FuncHandler().on_delete({"z": 3})
    assert calls == [{"x": 1}, ({"y": 2}, False)]

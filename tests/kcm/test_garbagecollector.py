"""The garbage collector without an apiserver: the graph built from events, and each decision of the
collector's workers against a recording client (no sleeps, a fake clock)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.api.kinds import Resource
from minikube_py.client import errors, resources
from minikube_py.client.discovery import Discovery
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.kcm.controllers.garbagecollector import GarbageCollector
from minikube_py.kcm.controllers.garbagecollector.builder import ADD, DELETE, UPDATE, GraphBuilder, GraphEvent
from minikube_py.kcm.controllers.garbagecollector.collector import _work
from minikube_py.kcm.controllers.garbagecollector.graph import Node, ObjectReference, references_diff
from minikube_py.kcm.controllers.garbagecollector.monitors import Monitors, deletable_resources
from tests.kcm.fakes import Action, RecordingClient, context

NS = "default"
WIDGETS = Resource("example.com", "v1", "Widget", "widgets", verbs=("get", "list", "watch", "delete", "patch"),
                   custom=True)
SERVED = [resources.CONFIGMAPS, resources.SECRETS, resources.NODES, resources.DEPLOYMENTS, WIDGETS]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[dict[str, Any], str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.events.append((obj, type, reason, message))


def ref(name: str, uid: str, kind: str = "ConfigMap", api_version: str = "v1", block: bool | None = None
        ) -> dict[str, Any]:
    owner: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    if block is not None:
        owner["blockOwnerDeletion"] = block
    return owner


def obj(name: str, uid: str, *owners: dict[str, Any], namespace: str = NS, finalizers: tuple[str, ...] = (),
        deleting: bool = False, rv: str = "7") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid, "resourceVersion": rv}
    if namespace:
        meta["namespace"] = namespace
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def event(type: str, o: dict[str, Any], kind: str = "ConfigMap", api_version: str = "v1",
          old: dict[str, Any] | None = None) -> GraphEvent:
    return GraphEvent(type, o, api_version, kind, old=old)


def queued(queue: Any) -> list[Node]:
    """What is on `queue` now, in order (taken off it)."""
    items = list(queue._queue)
    queue._queue.clear()
    queue._dirty.clear()
    return items


def collector(client: RecordingClient | None = None) -> tuple[GarbageCollector, RecordingClient, Recorder]:
    ctx, recording, _ = context()
    if client is not None:
        ctx.client = client  # type: ignore[assignment]
        recording = client
    gc = GarbageCollector(ctx)
    gc.objects.discovery = Discovery(resources=SERVED)
    recorder = Recorder()
    gc.builder.recorder = recorder  # type: ignore[assignment]
    return gc, recording, recorder


def observe(gc: GarbageCollector, *objects: dict[str, Any], kind: str = "ConfigMap") -> None:
    for o in objects:
        gc.builder.process(event(ADD, o, kind))
    queued(gc.attempt_to_delete)


def node(gc: GarbageCollector, uid: str) -> Node:
    return gc.builder.uid_to_node[uid]


# the graph ------------------------------------------------------------------------------------------------


def builder() -> tuple[GraphBuilder, Recorder]:
    ctx, _, _ = context()
    recorder = Recorder()
    return GraphBuilder(recorder, ctx.clock), recorder  # type: ignore[arg-type]


def test_an_owner_nobody_has_seen_becomes_a_virtual_node_queued_for_verification() -> None:
    graph, _ = builder()
    graph.process(event(ADD, obj("child", "c1", ref("parent", "p1"))))
    owner = graph.uid_to_node["p1"]
    assert owner.virtual and owner.identity == ObjectReference("v1", "ConfigMap", "parent", "p1", NS)
    assert owner.dependents == {graph.uid_to_node["c1"]}
    assert queued(graph.attempt_to_delete) == [owner]


def test_the_owner_showing_up_makes_its_virtual_node_real_and_keeps_its_dependents() -> None:
    graph, _ = builder()
    graph.process(event(ADD, obj("child", "c1", ref("parent", "p1"))))
    virtual = graph.uid_to_node["p1"]
    queued(graph.attempt_to_delete)
    graph.process(event(ADD, obj("parent", "p1")))
    assert graph.uid_to_node["p1"] is virtual and not virtual.virtual
    assert [d.identity.name for d in virtual.dependents] == ["child"]
    assert queued(graph.attempt_to_delete) == []  # the reference fits the object: nothing to check


def test_an_owner_seen_in_another_namespace_is_reported_on_the_dependent_and_the_dependent_checked() -> None:
    graph, recorder = builder()
    graph.process(event(ADD, obj("parent", "p1", namespace="other")))
    graph.process(event(ADD, obj("child", "c1", ref("parent", "p1"))))
    assert queued(graph.attempt_to_delete) == [graph.uid_to_node["c1"]]
    [(involved, type, reason, message)] = recorder.events
    assert (involved["name"], involved["namespace"], type, reason) == ("child", NS, "Warning",
                                                                        "OwnerRefInvalidNamespace")
    assert message == 'ownerRef [v1/ConfigMap, namespace: default, name: parent, uid: p1] does not exist in ' \
                      'namespace "default"'


def test_a_deleted_owner_queues_its_dependents_and_is_remembered_as_absent() -> None:
    graph, _ = builder()
    parent = obj("parent", "p1")
    graph.process(event(ADD, parent))
    graph.process(event(ADD, obj("child", "c1", ref("parent", "p1"))))
    queued(graph.attempt_to_delete)
    graph.process(event(DELETE, parent))
    assert "p1" not in graph.uid_to_node
    assert queued(graph.attempt_to_delete) == [graph.uid_to_node["c1"]]
    assert ObjectReference("v1", "ConfigMap", "parent", "p1", NS) in graph.absent_owners


def test_changed_references_move_the_dependent_and_an_unblocked_owner_is_queued() -> None:
    graph, _ = builder()
    graph.process(event(ADD, obj("a", "a1")))
    graph.process(event(ADD, obj("b", "b1")))
    old = obj("child", "c1", ref("a", "a1", block=True))
    graph.process(event(ADD, old))
    new = obj("child", "c1", ref("b", "b1"))
    graph.process(event(UPDATE, new, old=old))
    child = graph.uid_to_node["c1"]
    assert graph.uid_to_node["a1"].dependents == set() and graph.uid_to_node["b1"].dependents == {child}
    assert queued(graph.attempt_to_delete) == [graph.uid_to_node["a1"]]  # it may wait for `child` no more


@pytest.mark.parametrize("finalizer, queue", [("orphan", "attempt_to_orphan"),
                                              ("foregroundDeletion", "attempt_to_delete")])
def test_a_deletion_starting_with_a_propagation_finalizer_queues_the_owner(finalizer: str, queue: str) -> None:
    graph, _ = builder()
    parent = obj("parent", "p1")
    graph.process(event(ADD, parent))
    graph.process(event(ADD, obj("child", "c1", ref("parent", "p1"))))
    queued(graph.attempt_to_delete)
    graph.process(event(UPDATE, obj("parent", "p1", finalizers=(finalizer,), deleting=True), old=parent))
    owner = graph.uid_to_node["p1"]
    assert owner.being_deleted and owner.deleting_dependents == (finalizer == "foregroundDeletion")
    expected = [graph.uid_to_node["c1"], owner] if finalizer == "foregroundDeletion" else [owner]
    assert queued(getattr(graph, queue)) == expected


async def test_a_virtual_owner_absent_under_one_name_is_verified_under_the_other_name_a_dependent_gave() -> None:
    graph, _ = builder()
    graph.process(event(ADD, obj("a", "c1", ref("wrong-name", "p1"))))
    graph.process(event(ADD, obj("b", "c2", ref("right-name", "p1"))))
    owner = graph.uid_to_node["p1"]
    queued(graph.attempt_to_delete)
    graph.virtual_delete(ObjectReference("v1", "ConfigMap", "wrong-name", "p1", NS))
    assert graph.uid_to_node["p1"] is owner and owner.identity.name == "right-name"
    assert queued(graph.attempt_to_delete) == [graph.uid_to_node["c1"]]  # its owner is absent
    assert len(graph.attempt_to_delete._waiting) == 1  # the owner, under its other name, after a backoff


def test_references_diff_tells_added_removed_and_changed_references_by_uid() -> None:
    a, b, c = ref("a", "1"), ref("b", "2"), ref("c", "3")
    added, removed, changed = references_diff([a, b], [{**b, "blockOwnerDeletion": True}, c])
    assert (added, removed, changed) == ([c], [a], [(b, {**b, "blockOwnerDeletion": True})])


# deciding ---------------------------------------------------------------------------------------------------


async def test_a_dependent_whose_owner_is_gone_is_deleted_in_the_background_with_preconditions() -> None:
    gc, client, _ = collector()
    child = obj("child", "c1", ref("parent", "p1"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    assert await gc.attempt_to_delete_worker(node(gc, "c1")) is False
    [delete] = client.writes()
    assert (delete.verb, delete.resource, delete.name) == ("delete", "configmaps", "child")
    assert delete.options == {"preconditions": {"uid": "c1", "resourceVersion": "7"},
                              "propagation_policy": "Background"}
    assert ObjectReference("v1", "ConfigMap", "parent", "p1", NS) in gc.builder.absent_owners


async def test_an_owner_known_absent_is_not_asked_for_again() -> None:
    gc, client, _ = collector()
    children = [obj(f"child-{i}", f"c{i}", ref("parent", "p1")) for i in range(3)]
    for child in children:
        client.put(resources.CONFIGMAPS, child)
    observe(gc, *children)
    for i in range(3):
        await gc.attempt_to_delete_item(node(gc, f"c{i}"))
    owner_gets = [a for a in client.actions if a.verb == "get" and a.name == "parent"]
    assert len(owner_gets) == 1 and len(client.writes("delete")) == 3


async def test_an_owner_re_created_under_the_same_name_is_not_the_owner() -> None:
    gc, client, _ = collector()
    client.put(resources.CONFIGMAPS, obj("parent", "p2"))
    child = obj("child", "c1", ref("parent", "p1"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    await gc.attempt_to_delete_item(node(gc, "c1"))
    assert [a.name for a in client.writes("delete")] == ["child"]


async def test_a_dependent_with_a_live_owner_only_loses_its_dangling_reference() -> None:
    gc, client, _ = collector()
    client.put(resources.CONFIGMAPS, obj("alive", "a1"))
    child = obj("child", "c1", ref("alive", "a1"), ref("gone", "g1"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    await gc.attempt_to_delete_item(node(gc, "c1"))
    [patch] = client.writes()
    assert (patch.verb, patch.name, patch.options) == ("patch", "child", {"patch_type": "strategic"})
    assert patch.body == {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "g1"}], "uid": "c1"}}


async def test_a_dependent_whose_owners_all_live_is_left_alone() -> None:
    gc, client, _ = collector()
    client.put(resources.CONFIGMAPS, obj("alive", "a1"))
    child = obj("child", "c1", ref("alive", "a1"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    await gc.attempt_to_delete_item(node(gc, "c1"))
    assert client.writes() == []


async def test_a_custom_resource_loses_references_by_a_merge_patch_guarded_by_resource_version() -> None:
    class RefusesStrategic(RecordingClient):
        async def patch(self, resource: Resource, name: str, body: Any, namespace: str | None = None,
                        **options: Any) -> dict[str, Any]:
            if options.get("patch_type") == "strategic":
                self._record(Action("patch-refused", resource.plural, namespace or "", name, body, options))
                raise errors.UnsupportedMediaType({"code": 415, "message": "not supported"})
            return await super().patch(resource, name, body, namespace, **options)

    gc, client, _ = collector(RefusesStrategic())
    client.put(resources.CONFIGMAPS, obj("alive", "a1"))
    widget = obj("w", "w1", ref("alive", "a1"), ref("gone", "g1"), rv="42")
    client.put(WIDGETS, widget)
    observe(gc, widget, kind="Widget")
    node(gc, "w1").identity = ObjectReference("example.com/v1", "Widget", "w", "w1", NS)
    await gc.attempt_to_delete_item(node(gc, "w1"))
    patch = client.writes("patch")[-1]
    assert patch.options == {"patch_type": "merge"}
    assert patch.body == {"metadata": {"resourceVersion": "42", "ownerReferences": [ref("alive", "a1")]}}


async def test_a_virtual_owner_the_apiserver_does_not_have_leaves_the_graph_and_its_dependents_are_checked() -> None:
    gc, client, _ = collector()
    child = obj("child", "c1", ref("parent", "p1"))
    gc.builder.process(event(ADD, child))
    [virtual] = queued(gc.attempt_to_delete)
    assert await gc.attempt_to_delete_worker(virtual) is False
    assert "p1" not in gc.builder.uid_to_node
    assert queued(gc.attempt_to_delete) == [node(gc, "c1")]


async def test_a_virtual_owner_that_exists_is_checked_again_until_it_is_observed() -> None:
    gc, client, _ = collector()
    client.put(resources.CONFIGMAPS, obj("parent", "p1"))
    gc.builder.process(event(ADD, obj("child", "c1", ref("parent", "p1"))))
    [virtual] = queued(gc.attempt_to_delete)
    assert await gc.attempt_to_delete_worker(virtual) is True
    assert client.writes() == [] and virtual.virtual


async def test_a_cluster_scoped_owner_is_looked_up_without_a_namespace() -> None:
    gc, client, _ = collector()
    client.put(resources.NODES, obj("n1", "n-uid", namespace=""))
    child = obj("child", "c1", ref("n1", "n-uid", kind="Node"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    await gc.attempt_to_delete_item(node(gc, "c1"))
    assert client.writes() == []
    assert any(a.verb == "get" and (a.resource, a.namespace, a.name) == ("nodes", "", "n1") for a in client.actions)


async def test_a_cluster_scoped_dependent_of_a_namespaced_owner_is_reported_and_never_collected() -> None:
    gc, client, recorder = collector()
    dependent = obj("n1", "n-uid", ref("parent", "p1"), namespace="")
    client.put(resources.NODES, dependent)
    gc.builder.process(event(ADD, dependent, kind="Node"))
    queued(gc.attempt_to_delete)
    gc.builder.absent_owners.add(ObjectReference("v1", "ConfigMap", "parent", "p1", ""))
    assert await gc.attempt_to_delete_worker(node(gc, "n-uid")) is False  # not retried either
    assert client.writes() == []
    [(involved, type, reason, message)] = recorder.events
    assert (involved["kind"], involved["name"], reason) == ("Node", "n1", "OwnerRefInvalidNamespace")
    assert message == 'ownerRef [v1/ConfigMap, namespace: , name: parent, uid: p1] does not exist in namespace ""'


async def test_a_dependent_of_an_owner_of_an_unknown_kind_is_retried_not_deleted() -> None:
    gc, client, _ = collector()
    child = obj("child", "c1", ref("thing", "t1", kind="Gadget", api_version="nowhere.io/v1"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    gc.attempt_to_delete.add(node(gc, "c1"))
    await run_one(gc.attempt_to_delete, gc.attempt_to_delete_worker)
    assert client.writes() == [] and gc.attempt_to_delete.num_requeues(node(gc, "c1")) == 1


async def run_one(queue: Any, attempt: Any) -> None:
    """Let a worker take the one queued item and finish it."""
    task = asyncio.create_task(_work(queue, attempt))
    while len(queue) or queue._processing:
        await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    queue.shut_down()  # stops the queue's timer for the retry


# foreground --------------------------------------------------------------------------------------------------


def foreground_owner(gc: GarbageCollector, client: RecordingClient, *children: dict[str, Any]) -> Node:
    parent = obj("parent", "p1", finalizers=("foregroundDeletion",), deleting=True, rv="9")
    client.put(resources.CONFIGMAPS, parent)
    for child in children:
        client.put(resources.CONFIGMAPS, child)
    observe(gc, parent, *children)
    return node(gc, "p1")


async def test_an_owner_deleting_in_the_foreground_pushes_its_blocking_dependents_and_keeps_its_finalizer() -> None:
    gc, client, _ = collector()
    owner = foreground_owner(gc, client, obj("child", "c1", ref("parent", "p1", block=True)))
    await gc.attempt_to_delete_item(owner)
    assert client.writes() == []
    assert queued(gc.attempt_to_delete) == [node(gc, "c1")]


async def test_an_owner_whose_blocking_dependents_are_gone_loses_its_foreground_finalizer() -> None:
    gc, client, _ = collector()
    owner = foreground_owner(gc, client, obj("child", "c1", ref("parent", "p1", block=False)))
    await gc.attempt_to_delete_item(owner)
    [patch] = client.writes()
    assert (patch.verb, patch.name, patch.options) == ("patch", "parent", {"patch_type": "merge"})
    assert patch.body == {"metadata": {"resourceVersion": "9", "finalizers": []}}


async def test_a_finalizer_is_never_removed_from_an_object_re_created_under_the_same_name() -> None:
    gc, client, _ = collector()
    owner = foreground_owner(gc, client)
    client.put(resources.CONFIGMAPS, obj("parent", "p2", finalizers=("foregroundDeletion",), deleting=True))
    assert await gc.objects.remove_finalizer(owner.identity, "foregroundDeletion") is False
    assert client.writes() == []


async def test_a_dependent_of_a_foreground_owner_is_deleted_in_the_background_when_it_has_no_dependents() -> None:
    gc, client, _ = collector()
    foreground_owner(gc, client, obj("child", "c1", ref("parent", "p1", block=True)))
    await gc.attempt_to_delete_item(node(gc, "c1"))
    [delete] = client.writes()
    assert (delete.name, delete.options["propagation_policy"]) == ("child", "Background")


async def test_a_dependent_with_dependents_of_its_own_is_deleted_in_the_foreground_too() -> None:
    gc, client, _ = collector()
    foreground_owner(gc, client, obj("child", "c1", ref("parent", "p1", block=True)),
                     obj("grandchild", "g1", ref("child", "c1", block=True)))
    await gc.attempt_to_delete_item(node(gc, "c1"))
    [delete] = client.writes()
    assert (delete.name, delete.options["propagation_policy"]) == ("child", "Foreground")


async def test_in_a_cycle_of_foreground_deletions_the_dependent_unblocks_its_references_first() -> None:
    gc, client, _ = collector()
    foreground_owner(gc, client, obj("child", "c1", ref("parent", "p1", block=True)),
                     obj("grandchild", "g1", ref("child", "c1", block=True)))
    node(gc, "g1").deleting_dependents = True
    await gc.attempt_to_delete_item(node(gc, "c1"))
    unblock, delete = client.writes()
    assert unblock.body == {"metadata": {"ownerReferences": [ref("parent", "p1", block=False)], "uid": "c1"}}
    assert delete.options["propagation_policy"] == "Foreground"


async def test_a_dependent_keeps_the_propagation_its_own_finalizer_asks_for() -> None:
    gc, client, _ = collector()
    child = obj("child", "c1", ref("parent", "p1"), finalizers=("orphan",))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    await gc.attempt_to_delete_item(node(gc, "c1"))
    assert client.writes("delete")[0].options["propagation_policy"] == "Orphan"


async def test_an_object_being_deleted_without_waiting_for_dependents_is_left_alone() -> None:
    gc, client, _ = collector()
    child = obj("child", "c1", ref("parent", "p1"), deleting=True, finalizers=("example.com/hold",))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    await gc.attempt_to_delete_item(node(gc, "c1"))
    assert client.actions == []


# orphan ------------------------------------------------------------------------------------------------------


async def test_orphaning_removes_the_reference_from_every_dependent_then_the_finalizer() -> None:
    gc, client, _ = collector()
    parent = obj("parent", "p1", finalizers=("orphan",), deleting=True, rv="11")
    client.put(resources.CONFIGMAPS, parent)
    observe(gc, parent, obj("a", "c1", ref("parent", "p1")), obj("b", "c2", ref("parent", "p1")))
    assert await gc.attempt_to_orphan_worker(node(gc, "p1")) is False
    patches = client.writes("patch")
    assert sorted(p.name for p in patches[:2]) == ["a", "b"]
    assert all(p.body["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": "p1"}] for p in patches[:2])
    assert (patches[2].name, patches[2].body) == ("parent", {"metadata": {"resourceVersion": "11", "finalizers": []}})


async def test_a_failed_orphaning_keeps_the_finalizer_and_is_retried() -> None:
    gc, client, _ = collector()
    parent = obj("parent", "p1", finalizers=("orphan",), deleting=True)
    client.put(resources.CONFIGMAPS, parent)
    observe(gc, parent, obj("a", "c1", ref("parent", "p1")))
    client.failures[("patch", "configmaps")] = errors.Conflict({"code": 409, "message": "conflict"})
    assert await gc.attempt_to_orphan_worker(node(gc, "p1")) is True
    assert [a.name for a in client.actions if a.verb == "patch"] == ["a"]


# conflicts ---------------------------------------------------------------------------------------------------


class ConflictOnce(RecordingClient):
    """Answers the first delete with 409, as when the object changed since it was read."""

    def __init__(self) -> None:
        super().__init__()
        self.conflicted = False

    async def delete(self, resource: Resource, name: str, namespace: str | None = None,
                     **options: Any) -> dict[str, Any]:
        if not self.conflicted:
            self.conflicted = True
            self._record(Action("delete-conflict", resource.plural, namespace or "", name, None, options))
            raise errors.Conflict({"code": 409, "message": "the object has been modified"})
        return await super().delete(resource, name, namespace, **options)


async def test_a_stale_delete_whose_references_did_not_change_is_sent_again_with_the_uid_alone() -> None:
    gc, client, _ = collector(ConflictOnce())
    child = obj("child", "c1", ref("parent", "p1"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    await gc.attempt_to_delete_item(node(gc, "c1"))
    [conflict] = [a for a in client.actions if a.verb == "delete-conflict"]
    assert conflict.options["preconditions"] == {"uid": "c1", "resourceVersion": "7"}
    assert client.writes("delete")[0].options["preconditions"] == {"uid": "c1"}


async def test_a_stale_delete_whose_references_changed_is_retried_later_with_backoff() -> None:
    gc, client, _ = collector(ConflictOnce())
    child = obj("child", "c1", ref("parent", "p1"))
    client.put(resources.CONFIGMAPS, child)
    observe(gc, child)
    adopted = obj("child", "c1", ref("parent", "p1"), ref("new-parent", "n1"), rv="8")
    real_get = client.get

    async def get_after_conflict(resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return adopted if client.conflicted and name == "child" else await real_get(resource, name, namespace)

    client.get = get_after_conflict  # type: ignore[method-assign]
    gc.attempt_to_delete.add(node(gc, "c1"))
    await run_one(gc.attempt_to_delete, gc.attempt_to_delete_worker)
    assert client.writes("delete") == [] and gc.attempt_to_delete.num_requeues(node(gc, "c1")) == 1


# monitors ------------------------------------------------------------------------------------------------------


def test_every_preferred_resource_that_can_be_listed_watched_and_deleted_is_monitored_except_events() -> None:
    found = Discovery(
        resources=[resources.CONFIGMAPS,  # discover() hands out built-in resources as client.resources has them
                   Resource("", "v1", "Event", "events", verbs=("list", "watch", "delete")),
                   Resource("", "v1", "Binding", "bindings", verbs=("create",)),
                   Resource("apps", "v1", "Deployment", "deployments", verbs=("list", "watch", "delete")),
                   Resource("apps", "v1beta1", "Deployment", "deployments", verbs=("list", "watch", "delete"))],
        preferred_versions={"": "v1", "apps": "v1"})
    monitored = deletable_resources(found)
    assert sorted(monitored) == [("", "v1", "configmaps"), ("apps", "v1", "deployments")]
    assert monitored[("", "v1", "configmaps")] == resources.CONFIGMAPS  # shared with the other controllers


def test_monitors_follow_discovery_and_turn_informer_events_into_graph_changes() -> None:
    ctx, client, _ = context()
    graph, _ = builder()
    informers = SharedInformerFactory(client)  # type: ignore[arg-type]
    monitors = Monitors(informers, graph)
    served = Discovery(resources=[WIDGETS], preferred_versions={"example.com": "v1"})
    monitors.sync(served)
    informer = informers.informer_for(WIDGETS)
    [registration] = informer._registrations
    registration.handler.on_add(obj("w", "w1", ref("parent", "p1")), False)
    assert graph.uid_to_node["w1"].identity == ObjectReference("example.com/v1", "Widget", "w", "w1", NS)
    monitors.sync(Discovery(resources=[], preferred_versions={}, failed={"example.com/v1": "down"}))
    assert informer._registrations == [registration]  # a group that could not be read keeps its monitor
    monitors.sync(Discovery(resources=[], preferred_versions={}))
    assert informer._registrations == [] and monitors.resources() == []

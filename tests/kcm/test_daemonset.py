"""The DaemonSet controller's sync against hand-filled caches and a recording client (no sleeps)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.kcm.controllers.daemonset import DaemonSetController, revisions
from minikube_py.kcm.controllers.daemonset.placement import (
    REVISION_HASH_LABEL,
    Placement,
    add_daemon_tolerations,
    pin_to_node,
    target_node,
)
from minikube_py.kcm.controllers.intstr import scaled_value
from tests.kcm.fakes import RecordingClient, cache, context

NS = "default"
KEY = "default/agent"
OLD, LONG_AGO, JUST_NOW = "2023-12-31T00:00:00Z", "2023-12-31T23:00:00Z", "2023-12-31T23:59:59Z"
# the fake clock's wall time is 2024-01-01T00:00:00Z


class EventLog:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]


def daemon_set(*, node_selector: dict[str, str] | None = None, tolerations: list[Any] | None = None,
               strategy: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
               image: str = "agent:1", min_ready: int = 0, history_limit: int = 10) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "agent", "image": image}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": NS, "uid": "ds-uid", "generation": 2,
                         "annotations": {"deprecated.daemonset.template.generation": "2"}},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "minReadySeconds": min_ready,
                     "revisionHistoryLimit": history_limit,
                     "updateStrategy": strategy or {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec}},
            "status": status or {}}


def node(name: str, labels: dict[str, str] | None = None, taints: list[tuple[str, str]] | None = None,
         conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}, "resourceVersion": "1"},
            "spec": {"taints": [{"key": key, "effect": effect} for key, effect in taints or []]},
            "status": {"conditions": conditions or []}}


def pod(name: str, on: str, revision_hash: str = "", phase: str = "Running", ready_at: str | None = None,
        created: str = OLD, bound: bool = True, owner: str | None = "ds-uid") -> dict[str, Any]:
    labels = {"app": "agent"}
    if revision_hash:
        labels[REVISION_HASH_LABEL] = revision_hash
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": labels,
                            "creationTimestamp": created, "resourceVersion": "1"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": owner,
                                    "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "agent", "image": "agent:1"}]}
    if bound:
        spec["nodeName"] = on
    else:
        pin_to_node(spec, on)
    status: dict[str, Any] = {"phase": phase}
    if ready_at:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]
    return {"metadata": meta, "spec": spec, "status": status}


async def current_revision(ds: dict[str, Any], number: int = 1) -> dict[str, Any]:
    return await revisions.snapshot(RecordingClient(), ds, number)  # type: ignore[arg-type]


async def controller(ds: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = (),
                     history: list[dict[str, Any]] | None = None) -> tuple[DaemonSetController, Any, EventLog, Any]:
    """A controller whose caches hold `ds`, `nodes`, `pods` and (unless given) the current revision of `ds`."""
    ctx, client, clock = context()
    events = EventLog()
    ctx.recorder = events  # type: ignore[assignment]
    cache(ctx, resources.DAEMON_SETS, ds)
    cache(ctx, resources.NODES, *nodes)
    cache(ctx, resources.PODS, *pods)
    cache(ctx, resources.CONTROLLER_REVISIONS, *(history if history is not None else [await current_revision(ds)]))
    client.put(resources.DAEMON_SETS, ds)
    return DaemonSetController(ctx), client, events, clock


async def hash_of(ds: dict[str, Any]) -> str:
    return (await current_revision(ds))["metadata"]["labels"][REVISION_HASH_LABEL]


def created_for(client: Any) -> dict[str, dict[str, Any]]:
    """The pods the sync created, by the node they are pinned to."""
    return {target_node(a.body): a.body for a in client.writes("create") if a.resource == "pods"}


def status_written(client: Any) -> dict[str, Any]:
    return [a for a in client.writes("update") if a.resource == "daemonsets/status"][-1].body["status"]


# placement -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "template", "the_node", "expected"), [
    ("an untainted node runs the daemon", {}, node("n"), (True, True)),
    ("a node without the selected label does not", {"nodeSelector": {"disk": "ssd"}}, node("n"), (False, False)),
    ("an untolerated NoSchedule taint stops new pods but keeps the running one", {},
     node("n", taints=[("dedicated", "NoSchedule")]), (False, True)),
    ("an untolerated NoExecute taint removes the pod", {}, node("n", taints=[("dedicated", "NoExecute")]),
     (False, False)),
    ("PreferNoSchedule never keeps a daemon away", {}, node("n", taints=[("dedicated", "PreferNoSchedule")]),
     (True, True)),
    ("a tolerated taint is no obstacle", {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
     node("n", taints=[("dedicated", "NoExecute")]), (True, True)),
    ("daemon pods tolerate a not-ready node", {}, node("n", taints=[("node.kubernetes.io/not-ready", "NoExecute")]),
     (True, True)),
    ("and a cordoned one", {}, node("n", taints=[("node.kubernetes.io/unschedulable", "NoSchedule")]),
     (True, True)),
    ("only hostNetwork pods tolerate an unavailable network", {},
     node("n", taints=[("node.kubernetes.io/network-unavailable", "NoSchedule")]), (False, True)),
    ("hostNetwork pods do", {"hostNetwork": True},
     node("n", taints=[("node.kubernetes.io/network-unavailable", "NoSchedule")]), (True, True)),
    ("a template naming another node fits no other node", {"nodeName": "other"}, node("n"), (False, False)),
])
def test_which_nodes_should_run_the_daemon(case: str, template: dict[str, Any], the_node: dict[str, Any],
                                           expected: tuple[bool, bool]) -> None:
    ds = daemon_set()
    ds["spec"]["template"]["spec"].update(template)
    assert Placement.of(ds).should_run(the_node) == expected, case


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    """A pod spec fragment with these required node affinity terms."""
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return found


SSD = {"matchExpressions": [expression("disk", "In", "ssd", "nvme")]}


@pytest.mark.parametrize(("template", "the_node", "expected"), [
    pytest.param(required(SSD), node("n", {"disk": "nvme"}), (True, True), id="a node with a listed value runs it"),
    pytest.param(required(SSD), node("n", {"disk": "hdd"}), (False, False), id="a node with another value does not"),
    pytest.param(required(SSD), node("n"), (False, False), id="nor one without the label"),
    pytest.param(required({"matchExpressions": [expression("disk", "NotIn", "hdd")]}), node("n"), (True, True),
                 id="NotIn accepts a node without the label"),
    pytest.param(required({"matchExpressions": [expression("gpu", "Exists")]}), node("n", {"gpu": ""}),
                 (True, True), id="Exists needs only the key"),
    pytest.param(required({"matchExpressions": [expression("gpu", "DoesNotExist")]}), node("n", {"gpu": "a"}),
                 (False, False), id="DoesNotExist refuses a node with the key"),
    pytest.param(required({"matchExpressions": [expression("cores", "Gt", "8")]}), node("n", {"cores": "16"}),
                 (True, True), id="Gt compares as integers"),
    pytest.param(required({"matchExpressions": [expression("cores", "Gt", "8")]}), node("n", {"cores": "many"}),
                 (False, False), id="Gt refuses a label that is not an integer"),
    pytest.param(required({"matchExpressions": [expression("disk", "In", "ssd"), expression("zone", "In", "a")]}),
                 node("n", {"disk": "ssd", "zone": "b"}), (False, False),
                 id="the expressions of one term must all match"),
    pytest.param(required({"matchExpressions": [expression("zone", "In", "a")]}, SSD),
                 node("n", {"disk": "ssd", "zone": "b"}), (True, True), id="any one of the terms is enough"),
    pytest.param(required({"matchFields": [expression("metadata.name", "In", "n")]}), node("n"), (True, True),
                 id="a metadata.name field term selects the node by name"),
    pytest.param(required({"matchFields": [expression("metadata.name", "In", "other")]}), node("n"),
                 (False, False), id="and no other node"),
    pytest.param(required({}), node("n", {"disk": "ssd"}), (False, False), id="an empty term matches no node"),
    pytest.param(required(), node("n"), (False, False), id="no terms at all match no node"),
    pytest.param({**required(SSD), "nodeSelector": {"zone": "a"}}, node("n", {"disk": "ssd"}), (False, False),
                 id="the node selector must match as well"),
    pytest.param({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": SSD}]}}}, node("n", {"disk": "hdd"}), (True, True),
                 id="a preferred term never keeps a daemon away"),
])
def test_required_node_affinity_decides_which_nodes_run_the_daemon(template: dict[str, Any],
                                                                   the_node: dict[str, Any],
                                                                   expected: tuple[bool, bool]) -> None:
    ds = daemon_set()
    ds["spec"]["template"]["spec"].update(template)
    assert Placement.of(ds).should_run(the_node) == expected


async def test_a_daemon_pod_goes_only_to_the_nodes_its_affinity_requires_and_is_pinned_to_each() -> None:
    ds = daemon_set()
    ds["spec"]["template"]["spec"].update(required(SSD))
    nodes = [node("fast", {"disk": "ssd"}), node("slow", {"disk": "hdd"}), node("bare")]
    dsc, client, _, _ = await controller(ds, nodes)
    await dsc.sync(KEY)
    created = created_for(client)
    assert list(created) == ["fast"]
    terms = created["fast"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                             "values": ["fast"]}]}]}


def test_daemon_tolerations_replace_a_time_limited_one_and_are_not_duplicated() -> None:
    spec: dict[str, Any] = {"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                             "effect": "NoExecute", "tolerationSeconds": 300},
                                            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                             "effect": "NoSchedule"}]}
    add_daemon_tolerations(spec)
    add_daemon_tolerations(spec)
    keys = [t["key"] for t in spec["tolerations"]]
    assert keys == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable",
                    "node.kubernetes.io/unreachable", "node.kubernetes.io/disk-pressure",
                    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure"]
    assert "tolerationSeconds" not in spec["tolerations"][0]


def test_pinning_replaces_the_required_terms_and_keeps_the_preferred_ones() -> None:
    preferred = [{"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]
    spec: dict[str, Any] = {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["old"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}}}
    pin_to_node(spec, "n1")
    assert spec["affinity"]["nodeAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}
    assert target_node({"spec": spec}) == "n1"


@pytest.mark.parametrize(("value", "total", "expected"), [(2, 10, 2), ("25%", 10, 3), ("100%", 3, 3), (None, 5, 0)])
def test_max_unavailable_and_max_surge_scale_percentages_up(value: Any, total: int, expected: int) -> None:
    assert scaled_value(value, total, True) == expected


# creating and deleting daemon pods --------------------------------------------------------------------------


async def test_one_pod_is_created_per_eligible_node_and_left_to_the_scheduler() -> None:
    ds = daemon_set(node_selector={"role": "worker"})
    nodes = [node("n1", {"role": "worker"}), node("n2", {"role": "db"}),
             node("n3", {"role": "worker"}, taints=[("dedicated", "NoSchedule")]),
             node("n4", {"role": "worker"}, taints=[("dedicated", "PreferNoSchedule")])]
    dsc, client, events, _ = await controller(ds, nodes)
    await dsc.sync(KEY)
    created = created_for(client)
    assert sorted(created) == ["n1", "n4"]
    pod_meta, pod_spec = created["n1"]["metadata"], created["n1"]["spec"]
    assert pod_meta["generateName"] == "agent-" and pod_meta["ownerReferences"][0]["uid"] == "ds-uid"
    assert pod_meta["labels"] == {"app": "agent", REVISION_HASH_LABEL: await hash_of(ds), "pod-template-generation": "2"}
    assert "nodeName" not in pod_spec
    assert {t["key"] for t in pod_spec["tolerations"]} >= {"node.kubernetes.io/not-ready",
                                                           "node.kubernetes.io/unreachable"}
    assert sorted(events.reasons()) == ["SuccessfulCreate", "SuccessfulCreate"]
    assert events.events[0][2] == f"Created pod: {client.writes('create')[0].body['metadata']['name']}"
    assert status_written(client) == {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                      "desiredNumberScheduled": 2, "numberReady": 0, "numberUnavailable": 2,
                                      "observedGeneration": 2}


async def test_nothing_more_is_created_until_the_cache_has_seen_the_new_pods() -> None:
    ds = daemon_set()
    dsc, client, _, _ = await controller(ds, [node("n1"), node("n2")])
    await dsc.sync(KEY)
    client.actions.clear()
    await dsc.sync(KEY)
    assert client.writes("create") == []
    assert "observedGeneration" not in status_written(client)  # this sync did not act on generation 2
    for created in [pod("agent-1", "n1"), pod("agent-2", "n2")]:
        dsc._pod_added(created)
    assert dsc.expectations.satisfied(KEY)


async def test_a_noschedule_taint_keeps_the_running_pod_and_noexecute_deletes_it() -> None:
    ds = daemon_set()
    h = await hash_of(ds)
    nodes = [node("cordoned", taints=[("dedicated", "NoSchedule")]), node("evicting", taints=[("gpu", "NoExecute")])]
    dsc, client, events, _ = await controller(ds, nodes, [pod("stays", "cordoned", h), pod("goes", "evicting", h)])
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["goes"]
    assert client.writes("create") == []
    assert events.events == [("Normal", "SuccessfulDelete", "Deleted pod: goes")]
    assert status_written(client)["numberMisscheduled"] == 2


async def test_pods_for_nodes_that_are_gone_and_were_never_bound_are_deleted() -> None:
    ds = daemon_set()
    h = await hash_of(ds)
    dsc, client, _, _ = await controller(ds, [node("n1")], [pod("mine", "n1", h),
                                                            pod("lost", "vanished", h, bound=False),
                                                            pod("bound", "vanished", h)])
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["lost"]  # the bound one is the pod GC's


async def test_extra_pods_on_a_node_are_pruned_keeping_the_oldest() -> None:
    ds = daemon_set()
    h = await hash_of(ds)
    dsc, client, _, _ = await controller(ds, [node("n1")], [pod("newer", "n1", h, created="2023-12-31T12:00:00Z"),
                                                            pod("oldest", "n1", h)])
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["newer"]


async def test_a_matching_orphan_is_adopted_instead_of_creating_a_pod() -> None:
    ds = daemon_set()
    dsc, client, _, _ = await controller(ds, [node("n1")], [pod("orphan", "n1", owner=None)])
    await dsc.sync(KEY)
    adopted = [a for a in client.writes("patch") if a.name == "orphan"]
    assert adopted and adopted[0].body["metadata"]["ownerReferences"][0]["uid"] == "ds-uid"
    assert client.writes("create") == []


# failures ----------------------------------------------------------------------------------------------------


async def test_failed_pods_are_deleted_with_a_backoff_per_node() -> None:
    ds = daemon_set()
    h = await hash_of(ds)
    dsc, client, events, clock = await controller(ds, [node("n1")], [pod("crashed", "n1", h, phase="Failed")])
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["crashed"]
    assert events.events[0] == ("Warning", "FailedDaemonPod",
                                "Found failed daemon pod default/crashed on node n1, will try to kill it")
    dsc.pods.indexer.delete(pod("crashed", "n1", h))
    dsc._pod_deleted(pod("crashed", "n1", h))
    dsc.pods.indexer.add(pod("again", "n1", h, phase="Failed"))  # its replacement failed too
    client.actions.clear()
    await dsc.sync(KEY)  # within the 1 s backoff
    assert client.writes("delete") == [] and client.writes("create") == []
    assert dsc.queue._ready_at  # the DaemonSet comes back when the backoff ends
    clock.advance(1.5)
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["again"]


async def test_a_template_the_apiserver_refuses_fails_once_with_an_event_not_for_every_node() -> None:
    ds = daemon_set()
    dsc, client, events, _ = await controller(ds, [node(f"n{i}") for i in range(5)])
    client.failures[("create", "pods")] = errors.Invalid({"message": 'Pod "agent-" is invalid: spec.containers'})
    with pytest.raises(errors.Invalid):
        await dsc.sync(KEY)
    assert len([a for a in client.writes("create") if a.resource == "pods"]) == 1  # slow start's first batch
    assert events.events == [("Warning", "FailedCreate", 'Error creating: Pod "agent-" is invalid: spec.containers')]
    assert dsc.expectations.satisfied(KEY)  # nothing is awaited from writes that failed or never happened
    assert status_written(client)["desiredNumberScheduled"] == 5  # the status is still reported


async def test_a_selector_that_selects_everything_is_refused_with_an_event() -> None:
    ds = daemon_set()
    ds["spec"]["selector"] = {}
    dsc, client, events, _ = await controller(ds, [node("n1")])
    await dsc.sync(KEY)
    assert client.writes() == []
    assert events.events == [("Warning", "SelectingAll",
                              "This daemon set is selecting all pods. A non-empty selector is required.")]


async def test_a_status_write_conflict_is_retried_on_a_fresh_copy() -> None:
    ds = daemon_set()
    h = await hash_of(ds)
    dsc, client, _, _ = await controller(ds, [node("n1")], [pod("p", "n1", h, ready_at=LONG_AGO)])
    fresh = copy.deepcopy(ds)
    fresh["metadata"]["resourceVersion"] = "9"
    fresh["status"] = {"collisionCount": 1}
    client.put(resources.DAEMON_SETS, fresh)
    conflict = errors.Conflict({"message": "the object has been modified"})
    original_update = client.update
    calls = []

    async def update_once_conflicting(resource: Any, body: Any, namespace: Any = None, **options: Any) -> Any:
        calls.append(body)
        if len(calls) == 1:
            raise conflict
        return await original_update(resource, body, namespace, **options)
    client.update = update_once_conflicting
    await dsc.sync(KEY)
    assert len(calls) == 2
    assert calls[1]["metadata"]["resourceVersion"] == "9" and calls[1]["status"]["collisionCount"] == 1
    assert calls[1]["status"]["numberAvailable"] == 1 and calls[1]["status"]["observedGeneration"] == 2


# rolling updates -------------------------------------------------------------------------------------------


async def test_a_rolling_update_deletes_max_unavailable_old_pods_at_a_time() -> None:
    ds = daemon_set(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%", "maxSurge": 0}})
    old_pods = [pod(f"old-{i}", f"n{i}", "oldhash", ready_at=LONG_AGO) for i in range(3)]
    dsc, client, _, _ = await controller(ds, [node(f"n{i}") for i in range(3)], old_pods)
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["old-0", "old-1"]  # ceil(50% of 3)
    assert client.writes("create") == []  # manage refills those nodes once the deletions are seen


async def test_an_unavailable_new_pod_uses_up_the_budget() -> None:
    ds = daemon_set()
    h = await hash_of(ds)
    pods = [pod("new-0", "n0", h), pod("old-1", "n1", "oldhash", ready_at=LONG_AGO),
            pod("old-2", "n2", "oldhash", ready_at=LONG_AGO)]
    dsc, client, _, _ = await controller(ds, [node(f"n{i}") for i in range(3)], pods)
    await dsc.sync(KEY)
    assert client.writes("delete") == []
    assert status_written(client)["updatedNumberScheduled"] == 1


async def test_old_pods_that_are_not_available_are_replaced_outside_the_budget() -> None:
    ds = daemon_set()
    pods = [pod("old-0", "n0", "oldhash"), pod("old-1", "n1", "oldhash"), pod("old-2", "n2", "oldhash", ready_at=LONG_AGO)]
    dsc, client, _, _ = await controller(ds, [node(f"n{i}") for i in range(3)], pods)
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["old-0", "old-1"]


async def test_with_max_surge_the_new_pod_comes_first_and_the_old_goes_once_it_is_available() -> None:
    ds = daemon_set(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                    min_ready=10)
    h = await hash_of(ds)
    nodes = [node("n0"), node("n1")]
    old = [pod("old-0", "n0", "oldhash", ready_at=LONG_AGO), pod("old-1", "n1", "oldhash", ready_at=LONG_AGO)]
    dsc, client, _, _ = await controller(ds, nodes, old)
    await dsc.sync(KEY)
    assert sorted(created_for(client)) == ["n0"] and client.writes("delete") == []

    dsc, client, _, _ = await controller(ds, nodes, [*old, pod("new-0", "n0", h, ready_at=JUST_NOW,
                                                                  created="2023-12-31T23:59:00Z")])
    await dsc.sync(KEY)
    assert client.writes("create") == [] and client.writes("delete") == []  # ready, not yet 10 s

    dsc, client, _, _ = await controller(ds, nodes, [*old, pod("new-0", "n0", h, ready_at=LONG_AGO,
                                                                  created="2023-12-31T22:00:00Z")])
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["old-0"] and client.writes("create") == []

    dsc, client, _, _ = await controller(ds, nodes, [old[1], pod("new-0", "n0", h, ready_at=LONG_AGO)])
    await dsc.sync(KEY)
    assert sorted(created_for(client)) == ["n1"] and client.writes("delete") == []  # the next node's turn


async def test_while_surging_an_old_pod_that_is_not_ready_is_dropped_at_once() -> None:
    ds = daemon_set(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}})
    h = await hash_of(ds)
    pods = [pod("old", "n0", "oldhash"), pod("new", "n0", h, created="2023-12-31T23:00:00Z")]
    dsc, client, _, _ = await controller(ds, [node("n0")], pods)
    await dsc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["old"]


async def test_on_delete_leaves_old_pods_alone() -> None:
    ds = daemon_set(strategy={"type": "OnDelete"})
    pods = [pod("old-0", "n0", "oldhash", ready_at=LONG_AGO), pod("old-1", "n1", "oldhash")]
    dsc, client, _, _ = await controller(ds, [node("n0"), node("n1")], pods)
    await dsc.sync(KEY)
    assert client.writes("delete") == [] and client.writes("create") == []


# history and status ------------------------------------------------------------------------------------------


async def test_the_first_sync_records_the_template_as_revision_one() -> None:
    ds = daemon_set()
    ds["metadata"]["annotations"]["kubernetes.io/change-cause"] = "first"
    dsc, client, _, _ = await controller(ds, [], history=[])
    await dsc.sync(KEY)
    revision = next(a.body for a in client.writes("create") if a.resource == "controllerrevisions")
    template = copy.deepcopy(ds["spec"]["template"])
    assert revision["data"] == {"spec": {"template": {**template, "$patch": "replace"}}}
    assert revision["revision"] == 1
    h = revision["metadata"]["labels"][REVISION_HASH_LABEL]
    assert revision["metadata"]["name"] == f"agent-{h}"
    assert revision["metadata"]["labels"] == {"app": "agent", REVISION_HASH_LABEL: h}
    assert revision["metadata"]["annotations"]["kubernetes.io/change-cause"] == "first"
    assert revision["metadata"]["ownerReferences"][0]["uid"] == "ds-uid"


async def test_going_back_to_an_old_template_renumbers_its_revision() -> None:
    ds = daemon_set()
    back = await current_revision(ds, 1)
    newer = await current_revision(daemon_set(image="agent:2"), 2)
    dsc, client, _, _ = await controller(ds, [], history=[back, newer])
    await dsc.sync(KEY)
    renumbered = [a.body for a in client.writes("update") if a.resource == "controllerrevisions"]
    assert [(r["metadata"]["name"], r["revision"]) for r in renumbered] == [(back["metadata"]["name"], 3)]
    assert not [a for a in client.writes("create") if a.resource == "controllerrevisions"]


async def test_old_revisions_beyond_the_limit_are_deleted_except_those_pods_run() -> None:
    ds = daemon_set(history_limit=1)
    olds = [await current_revision(daemon_set(image=f"agent:old{i}"), i) for i in range(1, 4)]
    live_hash = olds[0]["metadata"]["labels"][REVISION_HASH_LABEL]
    current = await current_revision(ds, 4)
    dsc, client, _, _ = await controller(ds, [node("n1")], [pod("p", "n1", live_hash, ready_at=LONG_AGO)],
                                         history=[*olds, current])
    await dsc.sync(KEY)
    deleted = [a.name for a in client.writes("delete") if a.resource == "controllerrevisions"]
    assert deleted == [olds[1]["metadata"]["name"], olds[2]["metadata"]["name"]]


async def test_a_hash_collision_bumps_the_collision_count_and_retries() -> None:
    ds = daemon_set()
    dsc, client, _, _ = await controller(ds, [], history=[])
    taken = await current_revision(ds)
    taken["data"] = {"spec": {"template": {"something": "else"}}}
    client.put(resources.CONTROLLER_REVISIONS, taken)
    client.failures[("create", "controllerrevisions")] = errors.AlreadyExists({"message": "exists"})
    with pytest.raises(errors.AlreadyExists):
        await dsc.sync(KEY)
    assert status_written(client)["collisionCount"] == 1


async def test_status_counts_the_oldest_pod_of_each_node() -> None:
    ds = daemon_set(node_selector={"run": "yes"}, min_ready=30)
    h = await hash_of(ds)
    nodes = [node("ready", {"run": "yes"}), node("just-ready", {"run": "yes"}), node("empty", {"run": "yes"}),
             node("old", {"run": "yes"}), node("wrong", {"run": "no"})]
    pods = [pod("a", "ready", h, ready_at=LONG_AGO), pod("b", "just-ready", h, ready_at=JUST_NOW),
            pod("c", "old", "oldhash"), pod("d", "wrong", h)]
    dsc, client, _, _ = await controller(ds, nodes, pods)
    await dsc.update_status(ds, nodes, h, observe_generation=True)
    assert status_written(client) == {"currentNumberScheduled": 3, "numberMisscheduled": 1,
                                      "desiredNumberScheduled": 4, "numberReady": 2, "updatedNumberScheduled": 2,
                                      "numberAvailable": 1, "numberUnavailable": 3, "observedGeneration": 2}


async def test_an_unchanged_status_is_not_written() -> None:
    current = {"currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 1, "numberReady": 1,
               "updatedNumberScheduled": 1, "numberAvailable": 1, "observedGeneration": 2}
    ds = daemon_set(status=current)
    h = await hash_of(ds)
    dsc, client, _, _ = await controller(ds, [node("n1")], [pod("p", "n1", h, ready_at=LONG_AGO)])
    await dsc.sync(KEY)
    assert client.writes() == []


# event handlers ------------------------------------------------------------------------------------------


async def test_node_heartbeats_are_ignored_but_a_label_that_makes_a_node_fit_enqueues() -> None:
    ds = daemon_set(node_selector={"role": "worker"})
    dsc, _, _, _ = await controller(ds, [])
    before = node("n1", conditions=[{"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"}])
    beat = copy.deepcopy(before)
    beat["metadata"]["resourceVersion"] = "2"
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "t2"
    dsc._node_updated(before, beat)
    assert len(dsc.queue) == 0
    labelled = copy.deepcopy(beat)
    labelled["metadata"]["labels"] = {"role": "worker"}
    dsc._node_updated(beat, labelled)
    assert len(dsc.queue) == 1


async def test_an_orphan_pod_wakes_the_daemon_sets_that_select_it() -> None:
    dsc, _, _, _ = await controller(daemon_set(), [])
    dsc._pod_added(pod("stranger", "n1", owner=None) | {"metadata": {"name": "x", "namespace": NS,
                                                                     "labels": {"app": "other"}}})
    assert len(dsc.queue) == 0
    dsc._pod_added(pod("orphan", "n1", owner=None))
    assert len(dsc.queue) == 1

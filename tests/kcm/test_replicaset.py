"""The ReplicaSet controller's sync against hand-filled caches and a recording client (no sleeps)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.kcm.controllers.replicaset import (
    DELETION_COST,
    REPLICATION_CONTROLLER,
    ReplicaSetController,
    active_pods_rank,
    deletion_rank,
)
from tests.kcm.fakes import CreateBatches, cache, context

NS = "default"


def replica_set(replicas: int = 3, min_ready: int = 0, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": NS, "uid": "rs-uid", "generation": 2},
            "spec": {"replicas": replicas, "minReadySeconds": min_ready, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web", "tier": "front"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
            "status": status or {}}


def pod(name: str, labels: dict[str, str] | None = None, owner: str | None = "rs-uid", node: str = "n1",
        phase: str = "Running", ready_at: str | None = None, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "creationTimestamp": created,
                            "labels": {"app": "web"} if labels is None else labels, "resourceVersion": "1"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": owner,
                                    "controller": True}]
    status: dict[str, Any] = {"phase": phase}
    if ready_at:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]
    return {"metadata": meta, "spec": {"nodeName": node}, "status": status}


def controller(rs: dict[str, Any], *pods: dict[str, Any]) -> tuple[ReplicaSetController, Any]:
    ctx, client, _ = context()
    cache(ctx, resources.REPLICA_SETS, rs)
    cache(ctx, resources.PODS, *pods)
    client.put(resources.REPLICA_SETS, rs)
    return ReplicaSetController(ctx), client


async def test_missing_pods_are_created_from_the_template_and_owned() -> None:
    rsc, client = controller(replica_set(3))
    await rsc.sync("default/web")
    created = [a.body for a in client.writes("create")]
    assert len(created) == 3
    meta = created[0]["metadata"]
    assert meta["generateName"] == "web-" and meta["labels"] == {"app": "web", "tier": "front"}
    assert meta["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                        "uid": "rs-uid", "controller": True, "blockOwnerDeletion": True}]
    assert created[0]["spec"] == {"containers": [{"name": "c", "image": "busybox"}]}


async def test_nothing_more_is_created_until_the_cache_has_seen_the_new_pods() -> None:
    rsc, client = controller(replica_set(3))
    await rsc.sync("default/web")
    await rsc.sync("default/web")  # the informer has not delivered the 3 pods yet
    assert len(client.writes("create")) == 3
    for index in range(3):
        rsc._pod_added(pod(f"web-{index}"))
    assert rsc.expectations.satisfied("default/web")


async def test_a_template_that_cannot_be_created_fails_once_not_for_every_replica() -> None:
    rsc, client = controller(replica_set(100))
    client.failures[("create", "pods")] = errors.Forbidden({"message": 'pods "web-" is forbidden: quota'})
    with pytest.raises(errors.Forbidden):
        await rsc.sync("default/web")
    assert len(client.writes("create")) == 1  # the slow start's first batch of one
    status = client.writes("update")[0].body["status"]
    assert status["conditions"][0]["type"] == "ReplicaFailure"
    assert status["conditions"][0]["reason"] == "FailedCreate"
    assert rsc.expectations.satisfied("default/web")  # nothing is awaited from writes that failed


async def test_surplus_pods_are_deleted_least_valuable_first() -> None:
    pods = [pod("running-ready", ready_at="2026-01-01T00:00:00Z"), pod("pending", phase="Pending"),
            pod("unscheduled", node="", phase="Pending"), pod("running-not-ready")]
    rsc, client = controller(replica_set(2), *pods)
    await rsc.sync("default/web")
    assert [a.name for a in client.writes("delete")] == ["unscheduled", "pending"]




async def test_a_matching_orphan_is_adopted_and_a_pod_that_stopped_matching_is_released() -> None:
    pods = [pod("orphan", owner=None), pod("relabelled", labels={"app": "other"}),
            pod("someone-elses", owner="other-uid"), pod("mine")]
    rsc, client = controller(replica_set(2), *pods)
    await rsc.sync("default/web")
    patches = {a.name: a.body["metadata"]["ownerReferences"] for a in client.writes("patch")}
    assert patches["orphan"][0]["uid"] == "rs-uid" and patches["orphan"][0]["controller"] is True
    assert patches["relabelled"] == [{"$patch": "delete", "uid": "rs-uid"}]
    assert "someone-elses" not in patches
    assert client.writes("create") == [] and client.writes("delete") == []  # orphan + mine = 2


async def test_nothing_is_adopted_for_a_replica_set_that_was_replaced() -> None:
    rsc, client = controller(replica_set(1), pod("orphan", owner=None))
    client.put(resources.REPLICA_SETS, {**replica_set(1), "metadata": {**replica_set()["metadata"], "uid": "new"}})
    await rsc.sync("default/web")
    assert client.writes("patch") == []


async def test_status_counts_ready_and_available_after_min_ready_seconds() -> None:
    pods = [pod("long-ready", ready_at="2023-12-31T23:00:00Z"), pod("just-ready", ready_at="2023-12-31T23:59:59Z"),
            pod("not-ready"), pod("fully-labelled", labels={"app": "web", "tier": "front"})]
    rsc, client = controller(replica_set(4, min_ready=30), *pods)
    await rsc.sync("default/web")  # the fake clock's wall time is 2024-01-01T00:00:00Z
    status = client.writes("update")[0].body["status"]
    assert status == {"replicas": 4, "fullyLabeledReplicas": 1, "readyReplicas": 2, "availableReplicas": 1,
                      "observedGeneration": 2}


async def test_a_pod_that_just_became_ready_is_looked_at_again_after_min_ready_seconds() -> None:
    # none available yet: the zero count is left out of the status, and the requeue must still happen
    rsc, client = controller(replica_set(1, min_ready=3), pod("p", ready_at="2023-12-31T23:59:59Z"))
    await rsc.sync("default/web")  # the fake clock's wall time is 2024-01-01T00:00:00Z
    assert client.writes("update")[0].body["status"]["readyReplicas"] == 1
    assert "availableReplicas" not in client.writes("update")[0].body["status"]
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(rsc.queue) == 0
    rsc.clock.advance(3)  # type: ignore[attr-defined]
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(rsc.queue) == 1  # queued again, to count the pod available in time


async def test_an_unchanged_status_is_not_written() -> None:
    current = {"replicas": 1, "observedGeneration": 2}
    rsc, client = controller(replica_set(1, status=current), pod("p", labels={"app": "web"}))
    await rsc.sync("default/web")
    assert client.writes() == []


async def test_a_deleted_replica_set_is_forgotten() -> None:
    rsc, client = controller(replica_set(1))
    rsc.expectations.expect_creations("default/gone", 3)
    await rsc.sync("default/gone")
    assert client.writes() == [] and rsc.expectations.satisfied("default/gone")


async def test_a_replication_controller_selects_with_its_map() -> None:
    ctx, client, _ = context()
    rc = {"apiVersion": "v1", "kind": "ReplicationController",
          "metadata": {"name": "web", "namespace": NS, "uid": "rc-uid"},
          "spec": {"replicas": 1, "selector": {"app": "web"},
                   "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}}}
    cache(ctx, resources.REPLICATION_CONTROLLERS, rc)
    client.put(resources.REPLICATION_CONTROLLERS, rc)
    cache(ctx, resources.PODS, pod("orphan", owner=None))
    await ReplicaSetController(ctx, REPLICATION_CONTROLLER).sync("default/web")
    adopted = client.writes("patch")[0].body["metadata"]["ownerReferences"][0]
    assert (adopted["kind"], adopted["apiVersion"], adopted["uid"]) == ("ReplicationController", "v1", "rc-uid")


# slow start ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("replicas", "fail_from", "batches"), [
    pytest.param(20, None, [1, 2, 4, 8, 5], id="missing pods are created in doubling batches, the last one short"),
    pytest.param(15, None, [1, 2, 4, 8], id="fifteen pods are exactly four full batches"),
    pytest.param(100, 1, [1], id="a first create that fails stops the sync at once"),
    pytest.param(100, 5, [1, 2, 4], id="a failure in the third batch stops after that batch"),
    pytest.param(600, None, [1, 2, 4, 8, 16, 32, 64, 128, 245], id="one sync creates at most the burst of 500"),
])
async def test_the_slow_start_doubles_its_batches_until_the_count_or_a_failure(
        replicas: int, fail_from: int | None, batches: list[int]) -> None:
    rsc, client = controller(replica_set(replicas))
    watched = CreateBatches(client, "pods", fail_from)
    if fail_from is None:
        await rsc.sync("default/web")
    else:
        with pytest.raises(errors.Forbidden):
            await rsc.sync("default/web")
    assert watched.sizes == batches
    created = fail_from - 1 if fail_from else sum(batches)
    for index in range(created):  # the informer delivers the pods that were made
        rsc._pod_added(pod(f"web-{index}"))
    assert rsc.expectations.satisfied("default/web")  # failed and never-tried creates are not awaited


# which pods go on a scale-down ------------------------------------------------------------------------------

NOW_EPOCH = 1704067200.0  # the fake clock's wall time, 2024-01-01T00:00:00Z


def ago(seconds: float) -> str:
    return time_string(datetime.fromtimestamp(NOW_EPOCH - seconds, UTC))


def candidate(uid: str, *, node: str = "n1", phase: str = "Running", ready: bool = True,
              ready_ago: float | None = 3600, cost: str | None = None, restarts: tuple[int, ...] = (),
              created_ago: float | None = 86400) -> dict[str, Any]:
    """A pod to rank: ready since `ready_ago` seconds (None: no transition time), created `created_ago`
    seconds before now (None: no timestamp)."""
    meta: dict[str, Any] = {"name": uid, "namespace": NS, "uid": uid}
    if created_ago is not None:
        meta["creationTimestamp"] = ago(created_ago)
    if cost is not None:
        meta["annotations"] = {DELETION_COST: cost}
    condition: dict[str, Any] = {"type": "Ready", "status": str(ready)}
    if ready and ready_ago is not None:
        condition["lastTransitionTime"] = ago(ready_ago)
    containers = [{"name": f"c{i}", "restartCount": count} for i, count in enumerate(restarts)]
    return {"metadata": meta, "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": [condition], "containerStatuses": containers}}


# In every case `first` goes before `second`. Unless the case is about the uid tie-break, `first` has the
# larger uid, so that only the rule under test can put it first.
@pytest.mark.parametrize(("first", "second", "crowd"), [
    pytest.param(candidate("b", node=""), candidate("a", phase="Pending", ready=False), [],
                 id="an unscheduled pod goes before a scheduled one whatever its phase"),
    pytest.param(candidate("b", phase="Pending"), candidate("a", phase="Unknown", ready=False), [],
                 id="a Pending pod goes before an Unknown one whatever its readiness"),
    pytest.param(candidate("b", phase="Unknown"), candidate("a", ready=False), [],
                 id="an Unknown pod goes before a Running one"),
    pytest.param(candidate("b", phase=""), candidate("a", phase="Unknown"), [],
                 id="a pod without a phase counts as Pending"),
    pytest.param(candidate("b", ready=False, cost="100"), candidate("a", cost="-100"), [],
                 id="a not-ready pod goes before a ready one whatever the deletion costs"),
    pytest.param(candidate("b", cost="-1"), candidate("a", node="n2"), [candidate("x", node="n2")],
                 id="a lower deletion cost goes first even on an emptier node"),
    pytest.param(candidate("b", cost="cheap"), candidate("a", cost="1"), [],
                 id="a deletion cost that is not a number counts as zero"),
    pytest.param(candidate("b", node="n2", ready_ago=1e6), candidate("a"), [candidate("x", node="n2")],
                 id="a pod on a node crowded with related pods goes first even if ready for longer"),
    pytest.param(candidate("b", ready_ago=60), candidate("a", node="n2"),
                 [candidate("x", node="n2", phase="Succeeded")],
                 id="finished pods do not crowd a node"),
    pytest.param(candidate("b", ready_ago=60, created_ago=1e6), candidate("a", restarts=(5,), created_ago=10), [],
                 id="of two ready pods the one ready for less time goes first whatever its restarts"),
    pytest.param(candidate("a", ready_ago=101), candidate("b", ready_ago=100), [],
                 id="ready times of the same power-of-two age tie and the smaller uid goes first"),
    pytest.param(candidate("b", ready_ago=None), candidate("a", ready_ago=60), [],
                 id="a ready pod without a transition time goes first"),
    pytest.param(candidate("b", restarts=(3,)), candidate("a", restarts=(2, 2), created_ago=60), [],
                 id="the busiest container's restarts count not their sum and outrank the creation time"),
    pytest.param(candidate("b", created_ago=3600), candidate("a", created_ago=86400), [],
                 id="the newer pod goes first"),
    pytest.param(candidate("a", created_ago=90000), candidate("b", created_ago=86400), [],
                 id="creation times of the same power-of-two age tie and the smaller uid goes first"),
    pytest.param(candidate("b", created_ago=None), candidate("a", created_ago=60), [],
                 id="a pod without a creation time goes first"),
])
def test_the_deletion_rank_is_kubes_active_pods_with_ranks(first: dict[str, Any], second: dict[str, Any],
                                                           crowd: list[dict[str, Any]]) -> None:
    rank = deletion_rank(NOW_EPOCH, [first, second, *crowd])
    for pods in ([first, second], [second, first]):
        assert [p["metadata"]["uid"] for p in sorted(pods, key=rank)] == [first["metadata"]["uid"],
                                                                           second["metadata"]["uid"]]


@pytest.mark.parametrize(("first", "second"), [
    pytest.param(candidate("b", node=""), candidate("a", phase="Pending", ready=False),
                 id="the plain order also puts unscheduled pods first"),
    pytest.param(candidate("b", created_ago=60, cost="10"), candidate("a", created_ago=3600, cost="-10"),
                 id="the plain order ignores the deletion cost"),
    pytest.param(candidate("b", created_ago=86400), candidate("a", created_ago=90000),
                 id="the plain order compares times exactly"),
])
def test_the_plain_active_pods_order_leaves_out_cost_crowding_and_the_log_scale(first: dict[str, Any],
                                                                               second: dict[str, Any]) -> None:
    for pods in ([first, second], [second, first]):
        assert [p["metadata"]["uid"] for p in sorted(pods, key=active_pods_rank)] == [first["metadata"]["uid"],
                                                                                       second["metadata"]["uid"]]


async def test_not_ready_pods_are_deleted_before_ready_ones_and_then_the_most_recently_ready() -> None:
    pods = [pod("ready-long", ready_at="2023-12-01T00:00:00Z"), pod("not-ready"),
            pod("ready-briefly", ready_at="2023-12-31T23:59:00Z")]
    rsc, client = controller(replica_set(1), *pods)
    await rsc.sync("default/web")
    assert [a.name for a in client.writes("delete")] == ["not-ready", "ready-briefly"]


async def test_crowding_counts_the_pods_of_the_sibling_replica_sets_of_one_deployment() -> None:
    deployment_ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-uid",
                      "controller": True}
    rs = replica_set(1)
    rs["metadata"]["ownerReferences"] = [deployment_ref]
    sibling = replica_set(0)
    sibling["metadata"].update(name="web-old", uid="old-uid", ownerReferences=[deployment_ref])
    mine = [pod("on-n1", node="n1", created="2023-12-31T00:00:00Z"),  # the newer: alone it would go first
            pod("on-n2", node="n2", created="2023-12-01T00:00:00Z")]
    siblings_pod = pod("old-on-n2", node="n2", owner="old-uid")
    rsc, client = controller(rs, *mine, siblings_pod)
    rsc.owners.indexer.add(sibling)
    await rsc.sync("default/web")
    assert [a.name for a in client.writes("delete")] == ["on-n2"]


# minReadySeconds ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("min_ready", "ready_for", "available"), [
    pytest.param(0, 0, 1, id="without minReadySeconds a ready pod is available at once"),
    pytest.param(30, 29, 0, id="a pod ready for less than minReadySeconds is not available"),
    pytest.param(30, 30, 0, id="nor is one ready for exactly minReadySeconds"),
    pytest.param(30, 31, 1, id="one ready for longer is"),
])
async def test_availability_waits_for_more_than_min_ready_seconds(min_ready: int, ready_for: int,
                                                                 available: int) -> None:
    rsc, client = controller(replica_set(1, min_ready=min_ready), pod("p", ready_at=ago(ready_for)))
    await rsc.sync("default/web")
    status = client.writes("update")[0].body["status"]
    assert (status["readyReplicas"], status.get("availableReplicas", 0)) == (1, available)


async def test_ready_pods_not_yet_available_are_looked_at_again_even_when_the_status_is_unchanged() -> None:
    unchanged = {"replicas": 1, "readyReplicas": 1, "observedGeneration": 2}
    rsc, client = controller(replica_set(1, min_ready=30, status=unchanged), pod("p", ready_at=ago(10)))
    await rsc.sync("default/web")
    assert client.writes() == []
    rsc.clock.advance(30)  # type: ignore[attr-defined]
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(rsc.queue) == 1

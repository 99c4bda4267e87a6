"""The ReplicaSet controller's sync against hand-filled caches and a recording client (no sleeps)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.kcm.controllers.replicaset import REPLICATION_CONTROLLER, ReplicaSetController, deletion_rank
from tests.kcm.fakes import cache, context

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


def test_the_deletion_rank_prefers_crowded_nodes_then_newer_pods() -> None:
    pods = [pod("alone", node="n1", created="2026-01-01T00:00:00Z"),
            pod("crowded-old", node="n2", created="2026-01-01T00:00:00Z"),
            pod("crowded-new", node="n2", created="2026-01-02T00:00:00Z")]
    ordered = sorted(pods, key=deletion_rank(pods, now=0))
    assert [p["metadata"]["name"] for p in ordered] == ["crowded-new", "crowded-old", "alone"]


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

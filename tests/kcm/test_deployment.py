"""The Deployment controller's sync against hand-filled caches and a recording client (no sleeps).

The fake clock's wall time is 2024-01-01T00:00:00Z. Each test builds the Deployment and the ReplicaSets a
cluster would hold at one moment of a rollout, runs one `sync`, and checks the writes and the events.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.client.controller import process_next_work_item
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.deployment import DeploymentController, util
from minikube_py.kcm.controllers.deployment.sync import new_replica_set
from minikube_py.kcm.controllers.history import template_hash
from minikube_py.kcm.controllers.replicaset import ReplicaSetController
from tests.kcm.fakes import RecordingClient, cache, context

NS = "default"
KEY = "default/web"
NOW = "2024-01-01T00:00:00Z"
ROLLING_1_0 = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def deployment(replicas: int = 3, image: str = "nginx:1", *, strategy: dict[str, Any] | None = None,
               status: dict[str, Any] | None = None, annotations: dict[str, str] | None = None,
               **spec_fields: Any) -> dict[str, Any]:
    """A Deployment as the apiserver stores it (defaults filled in)."""
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": image}], "restartPolicy": "Always"}},
            "strategy": strategy or {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, **spec_fields}
    meta: dict[str, Any] = {"name": "web", "namespace": NS, "uid": "d-uid", "generation": 1, "resourceVersion": "10"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec, "status": status or {}}


def replica_set(d: dict[str, Any], image: str, replicas: int, *, available: int | None = None, revision: int = 1,
                created: str = "2023-12-01T00:00:00Z", desired: int | None = None) -> dict[str, Any]:
    """The ReplicaSet `d` made for `image`: `replicas` pods of which `available` are available, last scaled
    when the Deployment wanted `desired`."""
    version = copy.deepcopy(d)
    version["spec"]["template"]["spec"]["containers"][0]["image"] = image
    rs = new_replica_set(version, template_hash(version["spec"]["template"]))
    rs["metadata"].update(uid=f"uid-{image}", creationTimestamp=created, resourceVersion="5", generation=1,
                          annotations={util.REVISION: str(revision)})
    rs["spec"]["replicas"] = replicas
    desired = util.replicas(d) if desired is None else desired
    util.set_replicas_annotations(rs, desired, desired + util.max_surge({**d, "spec": {**d["spec"], "replicas": desired}}))
    available = replicas if available is None else available
    rs["status"] = {"replicas": replicas, "readyReplicas": available, "availableReplicas": available,
                    "observedGeneration": 1}
    return rs


def pod(name: str, rs: dict[str, Any], phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "1",
                         "labels": rs["spec"]["template"]["metadata"]["labels"],
                         "ownerReferences": [{"kind": "ReplicaSet", "name": rs["metadata"]["name"],
                                              "uid": rs["metadata"]["uid"], "controller": True}]},
            "status": {"phase": phase}}


@dataclass
class Harness:
    dc: DeploymentController
    client: RecordingClient
    ctx: ControllerContext
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:  # stands in for the recorder
        self.events.append((type, reason, message))

    async def sync(self) -> None:
        await self.dc.sync(KEY)

    def statuses(self) -> list[dict[str, Any]]:
        return [a.body for a in self.client.writes("update") if a.resource == "deployments/status"]

    def status(self) -> dict[str, Any]:
        return dict(self.statuses()[-1]["status"])

    def scaled(self) -> dict[str, int]:
        """The size each ReplicaSet written was given."""
        return {a.name: a.body["spec"]["replicas"] for a in self.client.writes("update") if a.resource == "replicasets"}


def controller(d: dict[str, Any], *rss: dict[str, Any], pods: tuple[dict[str, Any], ...] = ()) -> Harness:
    ctx, client, _ = context()
    cache(ctx, resources.DEPLOYMENTS, d)
    cache(ctx, resources.REPLICA_SETS, *rss)
    cache(ctx, resources.PODS, *pods)
    client.put(resources.DEPLOYMENTS, d)
    harness = Harness(DeploymentController(ctx), client, ctx)
    harness.dc.recorder = harness  # type: ignore[assignment]
    return harness


def condition(status: dict[str, Any], type_: str) -> tuple[str, str, str]:
    found = util.get_condition(status, type_)
    assert found is not None, f"no {type_} condition in {status}"
    return found["status"], found["reason"], found["message"]


def name_of(rs: dict[str, Any]) -> str:
    return str(rs["metadata"]["name"])


# fenceposts ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("surge", "unavailable", "replicas", "expected"), [
    pytest.param("25%", "25%", 10, (3, 2), id="surge rounds up, unavailability rounds down"),
    pytest.param(2, 1, 10, (2, 1), id="absolute numbers are taken as they are"),
    pytest.param("0%", "10%", 5, (0, 1), id="both rounding to zero allow one unavailable pod"),
    pytest.param(1, 5, 3, (1, 3), id="never more unavailable than replicas"),
    pytest.param(1, 1, 0, (1, 0), id="nothing is unavailable at zero replicas"),
])
def test_fenceposts(surge: Any, unavailable: Any, replicas: int, expected: tuple[int, int]) -> None:
    d = deployment(replicas, strategy={"type": "RollingUpdate",
                                       "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
    assert (util.max_surge(d), util.max_unavailable(d)) == expected


def test_recreate_has_no_surge_and_no_unavailability_budget() -> None:
    d = deployment(3, strategy={"type": "Recreate"})
    assert (util.max_surge(d), util.max_unavailable(d)) == (0, 0)


# the new ReplicaSet --------------------------------------------------------------------------------------


async def test_a_new_deployment_gets_a_replica_set_named_by_its_template_hash() -> None:
    d = deployment(3, annotations={"kubernetes.io/change-cause": "first", "team": "a",
                                   "kubectl.kubernetes.io/last-applied-configuration": "{}"})
    h = controller(d)
    await h.sync()
    rs = h.client.writes("create")[0].body
    digest = template_hash(d["spec"]["template"])
    assert name_of(rs) == f"web-{digest}"
    assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": digest}
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": digest}}
    expected_template = copy.deepcopy(d["spec"]["template"])
    expected_template["metadata"]["labels"]["pod-template-hash"] = digest
    assert rs["spec"]["template"] == expected_template  # otherwise verbatim: kubectl compares the two
    assert rs["spec"]["replicas"] == 3
    assert rs["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                  "uid": "d-uid", "controller": True, "blockOwnerDeletion": True}]
    assert rs["metadata"]["annotations"] == {  # 25% of 3 surges by 1 (rounded up): max-replicas 4
        "kubernetes.io/change-cause": "first", "team": "a", util.REVISION: "1", util.DESIRED_REPLICAS: "3",
        util.MAX_REPLICAS: "4"}
    assert h.events == [("Normal", "ScalingReplicaSet", f"Scaled up replica set web-{digest} from 0 to 3")]
    assert h.statuses()[0]["metadata"]["annotations"][util.REVISION] == "1"
    status = h.status()
    assert condition(status, "Progressing") == ("True", "NewReplicaSetCreated",
                                                f'Created new replica set "web-{digest}"')
    assert condition(status, "Available") == ("False", "MinimumReplicasUnavailable",
                                              "Deployment does not have minimum availability.")
    assert status["observedGeneration"] == 1 and status["unavailableReplicas"] == 3


async def test_a_name_taken_by_another_template_bumps_the_collision_count() -> None:
    d = deployment(3)
    squatter = replica_set(d, "other", 1)
    squatter["metadata"].update(name=f"web-{template_hash(d['spec']['template'])}", ownerReferences=[],
                                labels={"unrelated": "yes"})
    h = controller(d, squatter)
    h.client.failures[("create", "replicasets")] = errors.AlreadyExists({"message": "exists"})
    with pytest.raises(errors.AlreadyExists):
        await h.sync()
    assert h.status()["collisionCount"] == 1  # the next sync hashes with it: another name
    assert template_hash(d["spec"]["template"], 1) != template_hash(d["spec"]["template"])


async def test_a_replica_set_that_cannot_be_created_is_reported_once_and_retried_with_backoff() -> None:
    d = deployment(3)
    h = controller(d)
    h.client.failures[("create", "replicasets")] = errors.Invalid({"message": "name too long"})
    with pytest.raises(errors.Invalid):
        await h.sync()
    message = f'Failed to create new replica set "web-{template_hash(d["spec"]["template"])}": name too long'
    assert h.events == [("Warning", "ReplicaSetCreateError", message)]
    assert condition(h.status(), "Progressing") == ("False", "ReplicaSetCreateError", message)
    cache(h.ctx, resources.DEPLOYMENTS, h.statuses()[-1])  # the informer delivers the status written
    writes = len(h.client.writes())
    h.dc.queue.add(KEY)
    await process_next_work_item(h.dc.queue, h.dc.sync, name="deployment", max_retries=15,
                                 log=logging.getLogger(__name__))
    assert len(h.client.writes()) == writes + 1  # only the create is tried again: no status write to wake it
    assert h.dc.queue.num_requeues(KEY) == 1  # retried later, with exponential backoff


async def test_a_conflicting_status_write_fails_the_sync_so_that_it_is_retried() -> None:
    d = deployment(3)
    h = controller(d, replica_set(d, "nginx:1", 3))
    h.client.failures[("update", "deployments/status")] = errors.Conflict({"message": "modified"})
    h.dc.queue.add(KEY)
    await process_next_work_item(h.dc.queue, h.dc.sync, name="deployment", max_retries=15,
                                 log=logging.getLogger(__name__))
    assert h.dc.queue.num_requeues(KEY) == 1


async def test_orphans_matching_the_selector_are_adopted_and_replica_sets_that_stopped_matching_released() -> None:
    d = deployment(3)
    orphan = replica_set(d, "nginx:0", 0)
    orphan["metadata"]["ownerReferences"] = []
    relabelled = replica_set(d, "nginx:-1", 0)
    relabelled["metadata"]["labels"] = {"app": "other"}
    someone_elses = replica_set(d, "nginx:-2", 0)
    someone_elses["metadata"]["ownerReferences"][0]["uid"] = "other-uid"
    h = controller(d, orphan, relabelled, someone_elses, replica_set(d, "nginx:1", 3, revision=2))
    await h.sync()
    patches = {a.name: a.body["metadata"]["ownerReferences"] for a in h.client.writes("patch")}
    assert patches == {name_of(orphan): [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                         "uid": "d-uid", "controller": True, "blockOwnerDeletion": True}],
                       name_of(relabelled): [{"$patch": "delete", "uid": "d-uid"}]}


# RollingUpdate -------------------------------------------------------------------------------------------


async def test_a_new_template_starts_the_new_replica_set_at_the_surge() -> None:
    d = deployment(3, "nginx:2", strategy=ROLLING_1_0)
    old = replica_set(d, "nginx:1", 3)
    h = controller(d, old)
    await h.sync()
    new = h.client.writes("create")[0].body
    assert new["spec"]["replicas"] == 1 and util.annotations(new)[util.REVISION] == "2"
    assert h.scaled() == {}  # the old pods stay until the new one is available
    assert h.events == [("Normal", "ScalingReplicaSet", f"Scaled up replica set {name_of(new)} from 0 to 1")]
    status = h.status()
    assert (status["replicas"], status.get("updatedReplicas"), status["availableReplicas"]) == (3, None, 3)
    assert condition(status, "Available")[:2] == ("True", "MinimumReplicasAvailable")


async def test_old_pods_go_as_new_ones_become_available() -> None:
    d = deployment(3, "nginx:2", strategy=ROLLING_1_0)
    old, new = replica_set(d, "nginx:1", 3), replica_set(d, "nginx:2", 1, revision=2)
    h = controller(d, old, new)
    await h.sync()
    assert h.scaled() == {name_of(old): 2}
    assert h.events == [("Normal", "ScalingReplicaSet", f"Scaled down replica set {name_of(old)} from 3 to 2")]
    scaled = next(a.body for a in h.client.writes("update") if a.resource == "replicasets")
    assert util.annotations(scaled)[util.DESIRED_REPLICAS] == "3"


async def test_nothing_is_removed_while_the_new_pods_are_unavailable() -> None:
    d = deployment(3, "nginx:2", strategy=ROLLING_1_0)
    h = controller(d, replica_set(d, "nginx:1", 3), replica_set(d, "nginx:2", 1, available=0, revision=2))
    await h.sync()
    assert h.scaled() == {} and h.events == []


async def test_unavailable_old_pods_are_removed_first() -> None:
    d = deployment(3, "nginx:2", strategy=ROLLING_1_0)
    old = replica_set(d, "nginx:1", 3, available=1)
    h = controller(d, old, replica_set(d, "nginx:2", 1, revision=2))
    await h.sync()
    assert h.scaled() == {name_of(old): 2}  # one unhealthy pod: availability does not drop


async def test_a_complete_rollout_says_so_and_trims_the_history() -> None:
    d = deployment(3, "nginx:4", revisionHistoryLimit=1,
                   status={"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3})
    olds = [replica_set(d, f"nginx:{i}", 0, revision=i, created=f"2023-12-0{i}T00:00:00Z") for i in (1, 2, 3)]
    olds[0]["metadata"]["generation"] = 2  # its scale-down is not yet seen by the ReplicaSet controller
    new = replica_set(d, "nginx:4", 3, revision=4, created="2023-12-04T00:00:00Z")
    h = controller(d, *olds, new)
    await h.sync()
    assert [a.name for a in h.client.writes("delete")] == [name_of(olds[1])]
    assert condition(h.status(), "Progressing") == ("True", "NewReplicaSetAvailable",
                                                    f'ReplicaSet "{name_of(new)}" has successfully progressed.')
    assert h.statuses()[0]["metadata"]["annotations"][util.REVISION] == "4"


# progress ---------------------------------------------------------------------------------------------------


def progressing(reason: str, updated: str) -> dict[str, Any]:
    return {"type": "Progressing", "status": "True", "reason": reason, "message": "…",
            "lastUpdateTime": updated, "lastTransitionTime": updated}


def stuck(updated: str) -> tuple[Harness, dict[str, Any]]:
    """A rollout whose new pod never becomes available, last seen progressing at `updated`."""
    d = deployment(3, "nginx:2", strategy=ROLLING_1_0,
                   annotations={util.REVISION: "2"},
                   status={"observedGeneration": 1, "replicas": 4, "updatedReplicas": 1, "readyReplicas": 3,
                           "availableReplicas": 3, "unavailableReplicas": 1,
                           "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                           "message": "Deployment has minimum availability.",
                                           "lastUpdateTime": updated, "lastTransitionTime": updated},
                                          progressing("ReplicaSetUpdated", updated)]})
    new = replica_set(d, "nginx:2", 1, available=0, revision=2)
    return controller(d, replica_set(d, "nginx:1", 3), new), new


async def test_a_rollout_without_progress_past_its_deadline_is_reported_failed() -> None:
    h, new = stuck("2023-12-31T23:49:59Z")  # 601 s before now
    await h.sync()
    assert condition(h.status(), "Progressing") == ("False", "ProgressDeadlineExceeded",
                                                    f'ReplicaSet "{name_of(new)}" has timed out progressing.')


async def test_a_stuck_rollout_is_looked_at_again_when_its_deadline_passes() -> None:
    h, _ = stuck("2023-12-31T23:55:00Z")  # 300 s before now
    delays: list[tuple[str, float]] = []
    h.dc.queue.add_after = lambda key, delay: delays.append((key, delay))  # type: ignore[method-assign]
    await h.sync()
    assert h.statuses() == []  # nothing changed
    assert delays == [(KEY, 301.0)]


async def test_a_replica_failure_of_the_new_replica_set_is_copied() -> None:
    d = deployment(3)
    new = replica_set(d, "nginx:1", 3, available=1)
    new["status"]["conditions"] = [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                                    "message": "quota exceeded", "lastTransitionTime": NOW}]
    h = controller(d, new)
    await h.sync()
    assert condition(h.status(), "ReplicaFailure") == ("True", "FailedCreate", "quota exceeded")


# Recreate -----------------------------------------------------------------------------------------------


async def test_recreate_scales_the_old_replica_sets_to_zero_before_creating_the_new_one() -> None:
    d = deployment(2, "nginx:2", strategy={"type": "Recreate"})
    old = replica_set(d, "nginx:1", 2)
    h = controller(d, old)
    await h.sync()
    assert h.scaled() == {name_of(old): 0} and h.client.writes("create") == []


async def test_recreate_waits_for_the_old_pods_to_be_gone() -> None:
    d = deployment(2, "nginx:2", strategy={"type": "Recreate"})
    old = replica_set(d, "nginx:1", 0)
    old["status"]["replicas"] = 0
    h = controller(d, old, pods=(pod("terminating", old), pod("finished", old, phase="Succeeded")))
    await h.sync()
    assert h.client.writes("create") == []


async def test_recreate_starts_every_new_pod_at_once_when_the_old_ones_are_gone() -> None:
    d = deployment(2, "nginx:2", strategy={"type": "Recreate"})
    old = replica_set(d, "nginx:1", 0)
    h = controller(d, old, pods=(pod("finished", old, phase="Failed"),))
    await h.sync()
    new = h.client.writes("create")[0].body
    assert new["spec"]["replicas"] == 2
    assert h.events == [("Normal", "ScalingReplicaSet", f"Scaled up replica set {name_of(new)} from 0 to 2")]


def test_the_last_pod_of_a_recreate_deployment_wakes_it() -> None:
    d = deployment(2, "nginx:2", strategy={"type": "Recreate"})
    old = replica_set(d, "nginx:1", 0)
    first, last = pod("a", old), pod("b", old)
    h = controller(d, old, pods=(first, last))
    h.ctx.informers.informer_for(resources.PODS).indexer.delete(first)
    h.dc._pod_deleted(first)
    assert len(h.dc.queue) == 0  # "b" is still there
    h.ctx.informers.informer_for(resources.PODS).indexer.delete(last)
    h.dc._pod_deleted(last)
    assert len(h.dc.queue) == 1


# scaling, pausing, rolling back ---------------------------------------------------------------------------


async def test_scaling_in_the_middle_of_a_rollout_is_spread_in_proportion() -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    d = deployment(15, "nginx:2", strategy=strategy)
    old = replica_set(d, "nginx:1", 8, desired=10)
    new = replica_set(d, "nginx:2", 5, available=0, revision=2, desired=10, created="2023-12-02T00:00:00Z")
    h = controller(d, old, new)
    await h.sync()
    # 5 more (18 allowed, 13 there): 8 * 18/13 → 11 and 5 * 18/13 → 7
    assert h.scaled() == {name_of(old): 11, name_of(new): 7}
    assert h.events == [("Normal", "ScalingReplicaSet", f"Scaled up replica set {name_of(old)} from 8 to 11"),
                        ("Normal", "ScalingReplicaSet", f"Scaled up replica set {name_of(new)} from 5 to 7")]
    assert all(util.annotations(a.body)[util.DESIRED_REPLICAS] == "15" for a in h.client.writes("update")
               if a.resource == "replicasets")


async def test_a_paused_deployment_does_not_roll_out_but_still_scales() -> None:
    d = deployment(5, "nginx:2", paused=True)
    old = replica_set(d, "nginx:1", 3, desired=3)
    h = controller(d, old)
    await h.sync()
    assert h.client.writes("create") == []
    assert h.scaled() == {name_of(old): 5}
    assert condition(h.statuses()[0]["status"], "Progressing") == ("Unknown", "DeploymentPaused",
                                                                    "Deployment is paused")


async def test_a_resumed_deployment_says_so() -> None:
    d = deployment(3, status={"conditions": [{**progressing("DeploymentPaused", NOW), "status": "Unknown"}]})
    h = controller(d, replica_set(d, "nginx:1", 3))
    await h.sync()
    assert condition(h.statuses()[0]["status"], "Progressing") == ("Unknown", "DeploymentResumed",
                                                                    "Deployment is resumed")


async def test_going_back_to_an_old_template_makes_its_replica_set_the_latest_revision() -> None:
    d = deployment(3, "nginx:1", annotations={"kubernetes.io/change-cause": "undo"})
    previous = replica_set(d, "nginx:1", 0, revision=1)
    current = replica_set(d, "nginx:2", 3, revision=2, created="2023-12-02T00:00:00Z")
    h = controller(d, previous, current)
    await h.sync()
    written = next(a.body for a in h.client.writes("update") if a.resource == "replicasets")
    assert written["metadata"]["name"] == name_of(previous)
    assert util.annotations(written)[util.REVISION] == "3"
    assert util.annotations(written)[util.REVISION_HISTORY] == "1"
    assert util.annotations(written)["kubernetes.io/change-cause"] == "undo"


def test_the_revision_history_keeps_every_revision_a_replica_set_served() -> None:
    d = deployment(3)
    rs = replica_set(d, "nginx:1", 0, revision=3)
    rs["metadata"]["annotations"][util.REVISION_HISTORY] = "1"
    assert util.set_new_replica_set_annotations(d, rs, 5, exists=True)
    assert (util.annotations(rs)[util.REVISION], util.annotations(rs)[util.REVISION_HISTORY]) == ("5", "1,3")
    assert not util.set_new_replica_set_annotations(d, rs, 5, exists=True)  # nothing more to change


# minReadySeconds ----------------------------------------------------------------------------------------


async def test_min_ready_seconds_is_copied_to_a_new_replica_set() -> None:
    h = controller(deployment(3, minReadySeconds=30))
    await h.sync()
    assert h.client.writes("create")[0].body["spec"]["minReadySeconds"] == 30


async def test_a_changed_min_ready_seconds_is_written_to_the_current_replica_set() -> None:
    d = deployment(3, minReadySeconds=30)
    current = replica_set(d, "nginx:1", 3)
    current["spec"]["minReadySeconds"] = 5
    h = controller(d, current)
    await h.sync()
    (written,) = [a.body for a in h.client.writes("update") if a.resource == "replicasets"]
    assert written["spec"]["minReadySeconds"] == 30 and written["metadata"]["name"] == name_of(current)


def ready_pods(rs: dict[str, Any], count: int, ready_at: str) -> list[dict[str, Any]]:
    return [{"metadata": {"name": f"p{i}", "namespace": NS, "uid": f"uid-p{i}", "resourceVersion": "1",
                          "labels": rs["spec"]["template"]["metadata"]["labels"],
                          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name_of(rs),
                                               "uid": rs["metadata"]["uid"], "controller": True}]},
             "spec": {"nodeName": "n1"},
             "status": {"phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]}}
            for i in range(count)]


async def deployment_status_with(d: dict[str, Any], rs: dict[str, Any]) -> dict[str, Any]:
    """The status one Deployment sync writes once the informer shows `rs`."""
    h = controller(d, rs)
    await h.sync()
    return h.status()


async def test_the_deployment_counts_pods_available_only_after_min_ready_seconds() -> None:
    h = controller(deployment(3, minReadySeconds=30))
    await h.sync()
    rs = {**h.client.writes("create")[0].body, "status": {}}
    rs["metadata"].update(generation=1, resourceVersion="6")
    d = h.statuses()[-1]  # with the revision the first sync recorded
    # the ReplicaSet controller, once the three pods it made have been ready for 10 s
    ctx, client, clock = context()
    cache(ctx, resources.REPLICA_SETS, rs)
    cache(ctx, resources.PODS, *ready_pods(rs, 3, "2023-12-31T23:59:50Z"))
    client.put(resources.REPLICA_SETS, rs)
    rsc = ReplicaSetController(ctx)
    await rsc.sync(f"{NS}/{name_of(rs)}")
    rs["status"] = client.writes("update")[-1].body["status"]
    assert (rs["status"]["readyReplicas"], rs["status"].get("availableReplicas", 0)) == (3, 0)
    status = await deployment_status_with(d, rs)
    assert (status["readyReplicas"], status.get("availableReplicas", 0), status["unavailableReplicas"]) == (3, 0, 3)
    assert condition(status, "Available")[:2] == ("False", "MinimumReplicasUnavailable")
    clock.advance(21)  # ready for 31 s: more than minReadySeconds
    ctx.informers.informer_for(resources.REPLICA_SETS).indexer.update(rs)
    await rsc.sync(f"{NS}/{name_of(rs)}")
    rs["status"] = client.writes("update")[-1].body["status"]
    status = await deployment_status_with(d, rs)
    assert (status["availableReplicas"], status.get("unavailableReplicas", 0)) == (3, 0)
    assert condition(status, "Available")[:2] == ("True", "MinimumReplicasAvailable")


# a selector that selects everything -----------------------------------------------------------------------


@pytest.mark.parametrize(("selector", "observed", "status_writes"), [
    pytest.param({}, 0, 1, id="an empty selector only gets the generation acknowledged"),
    pytest.param({"matchLabels": {}, "matchExpressions": []}, 0, 1, id="so does one with empty lists"),
    pytest.param({}, 1, 0, id="an acknowledged generation is not written again"),
])
async def test_a_deployment_selecting_every_pod_is_refused_with_a_warning(selector: dict[str, Any], observed: int,
                                                                          status_writes: int) -> None:
    d = deployment(3, status={"observedGeneration": observed} if observed else None)
    d["spec"]["selector"] = selector
    orphan = replica_set(deployment(3), "nginx:0", 1)
    orphan["metadata"]["ownerReferences"] = []
    h = controller(d, orphan)
    await h.sync()
    assert h.events == [("Warning", "SelectingAll",
                         "This deployment is selecting all pods. A non-empty selector is required.")]
    assert [a.verb for a in h.client.writes()] == ["update"] * status_writes  # no adoption, no ReplicaSet
    if status_writes:
        assert h.status() == {"observedGeneration": 1}


async def test_a_failed_acknowledgement_of_an_everything_selector_is_not_retried() -> None:
    d = deployment(3)
    d["spec"]["selector"] = {}
    h = controller(d)
    h.client.failures[("update", "deployments/status")] = errors.Conflict({"message": "modified"})
    await h.sync()  # kube ignores it: the next change of the Deployment brings it back
    assert h.events[0][1] == "SelectingAll"

"""The StatefulSet controller's sync against hand-filled caches and a recording client (no sleeps).

The fake clock's wall time is 2024-01-01T00:00:00Z; a pod "ready" here became Ready an hour before.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.client.controller import process_next_work_item
from minikube_py.kcm.controllers import history
from minikube_py.kcm.controllers.statefulset import StatefulSetController, claims, identity, revisions
from tests.kcm.fakes import cache, context

NS = "default"
KEY = "default/web"
AN_HOUR_AGO = "2023-12-31T23:00:00Z"


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.seen.append((type, reason, message))


def stateful_set(replicas: int = 3, *, image: str = "nginx:1", policy: str = "OrderedReady",
                 strategy: dict[str, Any] | None = None, claim_templates: tuple[str, ...] = (),
                 retention: dict[str, str] | None = None, min_ready: int = 0, start: int | None = None,
                 history_limit: int = 10, status: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas, "serviceName": "web-svc", "podManagementPolicy": policy,
        "selector": {"matchLabels": {"app": "web"}}, "minReadySeconds": min_ready,
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}},
        "updateStrategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "revisionHistoryLimit": history_limit,
        "persistentVolumeClaimRetentionPolicy": retention or {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "volumeClaimTemplates": [{"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"]}}
                                 for name in claim_templates]}
    if start is not None:
        spec["ordinals"] = {"start": start}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": NS, "uid": "sts-uid", "generation": 1, "resourceVersion": "7"},
            "spec": spec, "status": status or {}}


def revision(sts: dict[str, Any], number: int = 1) -> dict[str, Any]:
    made = revisions.new_revision(sts, number, 0)
    made["metadata"]["uid"] = f"rev-uid-{number}"
    return made


def member(sts: dict[str, Any], ordinal: int, rev: dict[str, Any], *, phase: str = "Running", ready: bool = True,
           ready_at: str = AN_HOUR_AGO) -> dict[str, Any]:
    made = identity.new_pod(sts, ordinal, rev["metadata"]["name"])
    made["metadata"].update(uid=f"uid-web-{ordinal}", resourceVersion="1")
    made["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready),
                                                      "lastTransitionTime": ready_at}]}
    return made


def claim(name: str, refs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "3"}
    if refs is not None:
        meta["ownerReferences"] = refs
    return {"metadata": meta, "spec": {}}


def controller(sts: dict[str, Any], *pods: dict[str, Any], revs: tuple[dict[str, Any], ...] = (),
               pvcs: tuple[dict[str, Any], ...] = ()) -> tuple[StatefulSetController, Any, Events]:
    ctx, client, _ = context()
    events = Events()
    ctx.recorder = events  # type: ignore[assignment]
    cache(ctx, resources.STATEFUL_SETS, sts)
    cache(ctx, resources.PODS, *pods)
    cache(ctx, resources.CONTROLLER_REVISIONS, *revs)
    cache(ctx, resources.PERSISTENT_VOLUME_CLAIMS, *pvcs)
    client.put(resources.STATEFUL_SETS, sts)
    return StatefulSetController(ctx), client, events


def writes(client: Any, verb: str, resource: str) -> list[Any]:
    return [a for a in client.writes(verb) if a.resource == resource]


def status_written(client: Any) -> dict[str, Any]:
    updates = writes(client, "update", "statefulsets/status")
    assert len(updates) == 1
    return dict(updates[0].body["status"])


# creation ---------------------------------------------------------------------------------------------


async def test_the_first_pass_records_a_revision_and_creates_only_pod_0() -> None:
    sts = stateful_set(3)
    ssc, client, events = controller(sts)
    await ssc.sync(KEY)
    [made] = writes(client, "create", "controllerrevisions")
    rev = made.body
    assert rev["data"]["spec"]["template"]["$patch"] == "replace"
    assert rev["data"]["spec"]["template"]["spec"] == sts["spec"]["template"]["spec"]
    assert rev["metadata"]["labels"]["app"] == "web" and rev["revision"] == 1
    assert rev["metadata"]["ownerReferences"][0]["uid"] == "sts-uid"
    [created] = writes(client, "create", "pods")
    pod = created.body
    name = rev["metadata"]["name"]
    assert pod["metadata"]["name"] == "web-0" and pod["metadata"]["generateName"] == "web-"
    assert pod["metadata"]["labels"] == {"app": "web", identity.POD_NAME_LABEL: "web-0", identity.POD_INDEX_LABEL: "0",
                                         identity.REVISION_LABEL: name}
    assert pod["spec"]["hostname"] == "web-0" and pod["spec"]["subdomain"] == "web-svc"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert events.seen == [("Normal", "SuccessfulCreate", "create Pod web-0 in StatefulSet web successful")]
    assert status_written(client) == {"replicas": 0, "availableReplicas": 0, "collisionCount": 0,
                                      "currentRevision": name, "updateRevision": name, "observedGeneration": 1}


@pytest.mark.parametrize("phase,ready", [("Pending", False), ("Running", False)])
async def test_ordered_ready_waits_for_the_previous_pod_to_be_running_and_ready(phase: str, ready: bool) -> None:
    sts = stateful_set(3)
    rev = revision(sts)
    ssc, client, _ = controller(sts, member(sts, 0, rev, phase=phase, ready=ready), revs=(rev,))
    await ssc.sync(KEY)
    assert writes(client, "create", "pods") == []


async def test_ordered_ready_creates_the_next_pod_once_the_previous_is_ready() -> None:
    sts = stateful_set(3)
    rev = revision(sts)
    ssc, client, _ = controller(sts, member(sts, 0, rev), revs=(rev,))
    await ssc.sync(KEY)
    assert [a.name for a in writes(client, "create", "pods")] == ["web-1"]
    assert writes(client, "create", "controllerrevisions") == []  # the template did not change


async def test_ordered_ready_waits_for_min_ready_seconds_and_comes_back_then() -> None:
    sts = stateful_set(3, min_ready=7200)
    rev = revision(sts)
    ssc, client, _ = controller(sts, member(sts, 0, rev), revs=(rev,))
    await ssc.sync(KEY)
    assert writes(client, "create", "pods") == []
    status = status_written(client)
    assert status["readyReplicas"] == 1 and status["availableReplicas"] == 0
    assert len(ssc.queue) == 0
    ssc.clock.advance(7200)  # type: ignore[attr-defined]  # minReadySeconds later
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(ssc.queue) == 1  # the set comes back when its pod becomes available
    ssc.queue.shut_down()


async def test_parallel_creates_every_missing_pod_at_once() -> None:
    ssc, client, _ = controller(stateful_set(3, policy="Parallel"))
    await ssc.sync(KEY)
    assert sorted(a.name for a in writes(client, "create", "pods")) == ["web-0", "web-1", "web-2"]


async def test_ordinals_start_at_spec_ordinals_start() -> None:
    ssc, client, _ = controller(stateful_set(2, start=5))
    await ssc.sync(KEY)
    [created] = writes(client, "create", "pods")
    assert created.name == "web-5" and created.body["metadata"]["labels"][identity.POD_INDEX_LABEL] == "5"


async def test_a_failed_pod_is_deleted_to_be_made_again() -> None:
    sts = stateful_set(2)
    rev = revision(sts)
    ssc, client, events = controller(sts, member(sts, 0, rev, phase="Failed", ready=False), revs=(rev,))
    await ssc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["web-0"] and writes(client, "create", "pods") == []
    assert events.seen == [("Normal", "SuccessfulDelete", "delete Pod web-0 in StatefulSet web successful")]


async def test_a_pod_with_a_broken_identity_is_repaired() -> None:
    sts = stateful_set(1)
    rev = revision(sts)
    broken = member(sts, 0, rev)
    del broken["metadata"]["labels"][identity.POD_NAME_LABEL]
    ssc, client, events = controller(sts, broken, revs=(rev,))
    await ssc.sync(KEY)
    [update] = writes(client, "update", "pods")
    assert update.body["metadata"]["labels"][identity.POD_NAME_LABEL] == "web-0"
    assert ("Normal", "SuccessfulUpdate", "update Pod web-0 in StatefulSet web successful") in events.seen


# scale down -------------------------------------------------------------------------------------------


async def test_scale_down_deletes_the_highest_ordinal_first_one_at_a_time() -> None:
    sts = stateful_set(1)
    rev = revision(sts)
    ssc, client, _ = controller(sts, *(member(sts, i, rev) for i in range(3)), revs=(rev,))
    await ssc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["web-2"]


async def test_scale_down_waits_while_a_remaining_pod_is_unhealthy() -> None:
    sts = stateful_set(1)
    rev = revision(sts)
    pods = [member(sts, 0, rev, ready=False), member(sts, 1, rev), member(sts, 2, rev)]
    ssc, client, _ = controller(sts, *pods, revs=(rev,))
    await ssc.sync(KEY)
    assert client.writes("delete") == []


@pytest.mark.parametrize("policy,deleted", [("OrderedReady", []), ("Parallel", ["web-1"])])
async def test_ordered_scale_down_waits_for_the_terminating_pod_to_be_gone(policy: str, deleted: list[str]) -> None:
    sts = stateful_set(1, policy=policy)
    rev = revision(sts)
    terminating = member(sts, 2, rev)
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    ssc, client, _ = controller(sts, member(sts, 0, rev), member(sts, 1, rev), terminating, revs=(rev,))
    await ssc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == deleted


async def test_parallel_scale_down_deletes_all_surplus_pods() -> None:
    sts = stateful_set(1, policy="Parallel")
    rev = revision(sts)
    ssc, client, _ = controller(sts, *(member(sts, i, rev) for i in range(3)), revs=(rev,))
    await ssc.sync(KEY)
    assert sorted(a.name for a in client.writes("delete")) == ["web-1", "web-2"]


# updates ----------------------------------------------------------------------------------------------


def rolled(old_image: str = "nginx:1", new_image: str = "nginx:2", **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A set whose template changed from old_image to new_image, and the revision of the old template."""
    old = revision(stateful_set(image=old_image))
    sts = stateful_set(image=new_image, status={"currentRevision": old["metadata"]["name"]}, **options)
    return sts, old


async def test_a_rolling_update_replaces_the_highest_ordinal_first() -> None:
    sts, old = rolled()
    ssc, client, _ = controller(sts, *(member(stateful_set(), i, old) for i in range(3)), revs=(old,))
    await ssc.sync(KEY)
    [new] = writes(client, "create", "controllerrevisions")
    assert new.body["revision"] == 2
    assert [a.name for a in client.writes("delete")] == ["web-2"]
    status = status_written(client)
    assert status["currentRevision"] == old["metadata"]["name"] and status["updateRevision"] == new.name
    assert status["currentReplicas"] == 2 and "updatedReplicas" not in status


async def test_a_deleted_pod_comes_back_at_the_update_revision() -> None:
    sts, old = rolled()
    new = revision(sts, 2)
    pods = [member(stateful_set(), i, old) for i in range(2)]
    ssc, client, _ = controller(sts, *pods, revs=(old, new))
    await ssc.sync(KEY)
    [created] = writes(client, "create", "pods")
    assert created.name == "web-2"
    assert created.body["metadata"]["labels"][identity.REVISION_LABEL] == new["metadata"]["name"]
    assert created.body["spec"]["containers"][0]["image"] == "nginx:2"


async def test_a_rolling_update_waits_for_the_updated_pod_to_be_ready() -> None:
    sts, old = rolled(policy="Parallel")
    new = revision(sts, 2)
    pods = [member(stateful_set(), 0, old), member(stateful_set(), 1, old), member(sts, 2, new, ready=False)]
    ssc, client, _ = controller(sts, *pods, revs=(old, new))
    await ssc.sync(KEY)
    assert client.writes("delete") == []


async def test_the_partition_keeps_lower_ordinals_at_the_current_revision() -> None:
    sts, old = rolled(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    new = revision(sts, 2)
    pods = [member(stateful_set(), 0, old), member(sts, 2, new)]  # web-1 is missing
    ssc, client, _ = controller(sts, *pods, revs=(old, new))
    await ssc.sync(KEY)
    [created] = writes(client, "create", "pods")
    assert created.name == "web-1" and created.body["spec"]["containers"][0]["image"] == "nginx:1"
    assert created.body["metadata"]["labels"][identity.REVISION_LABEL] == old["metadata"]["name"]
    assert client.writes("delete") == []
    status = status_written(client)
    assert (status["currentReplicas"], status["updatedReplicas"]) == (1, 1)
    assert status["currentRevision"] == old["metadata"]["name"]


async def test_the_rolling_update_stops_at_the_partition() -> None:
    sts, old = rolled(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    new = revision(sts, 2)
    pods = [member(stateful_set(), 0, old), member(stateful_set(), 1, old), member(sts, 2, new)]
    ssc, client, _ = controller(sts, *pods, revs=(old, new))
    await ssc.sync(KEY)
    assert client.writes("delete") == []


async def test_on_delete_never_deletes_pods_for_an_update() -> None:
    sts, old = rolled(strategy={"type": "OnDelete"})
    ssc, client, _ = controller(sts, *(member(stateful_set(), i, old) for i in range(3)), revs=(old,))
    await ssc.sync(KEY)
    assert client.writes("delete") == []
    assert status_written(client)["currentReplicas"] == 3


async def test_the_rollout_completes_when_every_replica_is_updated_and_ready() -> None:
    sts, old = rolled()
    new = revision(sts, 2)
    ssc, client, _ = controller(sts, *(member(sts, i, new) for i in range(3)), revs=(old, new))
    await ssc.sync(KEY)
    status = status_written(client)
    assert status["currentRevision"] == status["updateRevision"] == new["metadata"]["name"]
    assert status["currentReplicas"] == status["updatedReplicas"] == status["readyReplicas"] == 3


async def test_going_back_to_an_old_template_renumbers_its_revision() -> None:
    sts_v1 = stateful_set(image="nginx:1")
    v1, v2 = revision(sts_v1, 1), revision(stateful_set(image="nginx:2"), 2)
    sts = stateful_set(image="nginx:1", status={"currentRevision": v2["metadata"]["name"]})
    ssc, client, _ = controller(sts, revs=(v1, v2))
    await ssc.sync(KEY)
    assert writes(client, "create", "controllerrevisions") == []
    [renumbered] = writes(client, "update", "controllerrevisions")
    assert renumbered.name == v1["metadata"]["name"] and renumbered.body["revision"] == 3


async def test_unused_revisions_beyond_the_history_limit_are_deleted_oldest_first() -> None:
    sts = stateful_set(1, history_limit=1, image="nginx:5")
    old = [revision(stateful_set(image=f"nginx:{n}"), n) for n in range(1, 5)]
    current = revision(sts, 5)
    used = member(stateful_set(image="nginx:4"), 0, old[3])  # still runs revision 4
    ssc, client, _ = controller(sts, used, revs=(*old, current))
    await ssc.sync(KEY)
    deleted = [a.name for a in client.writes("delete") if a.resource == "controllerrevisions"]
    assert deleted == [old[0]["metadata"]["name"], old[1]["metadata"]["name"]]


async def test_a_hash_collision_bumps_the_collision_count() -> None:
    sts = stateful_set(1)
    ssc, client, _ = controller(sts)
    taken = revision(sts)
    taken["data"] = {"spec": {"template": {"other": True}}}
    client.put(resources.CONTROLLER_REVISIONS, taken)
    create = client.create

    async def create_once_taken(resource: Any, body: dict[str, Any], namespace: str | None = None,
                                **options: Any) -> dict[str, Any]:
        if resource is resources.CONTROLLER_REVISIONS and body["metadata"]["name"] == taken["metadata"]["name"]:
            raise errors.AlreadyExists({"message": "exists", "reason": "AlreadyExists", "code": 409})
        return await create(resource, body, namespace, **options)

    client.create = create_once_taken
    await ssc.sync(KEY)
    [made] = writes(client, "create", "controllerrevisions")
    assert made.name == f"web-{history.template_hash(made.body['data'], 1)}" != taken["metadata"]["name"]
    assert status_written(client)["collisionCount"] == 1


# claims -----------------------------------------------------------------------------------------------


async def test_claims_are_created_before_the_pod_and_mounted_in_it() -> None:
    ssc, client, events = controller(stateful_set(1, claim_templates=("data",)))
    await ssc.sync(KEY)
    creates = [(a.resource, a.name) for a in client.writes("create")]
    assert creates[1:] == [("persistentvolumeclaims", "data-web-0"), ("pods", "web-0")]
    pvc = writes(client, "create", "persistentvolumeclaims")[0].body
    assert pvc["metadata"]["labels"] == {"app": "web"} and pvc["spec"] == {"accessModes": ["ReadWriteOnce"]}
    pod = writes(client, "create", "pods")[0].body
    assert pod["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}]
    assert events.seen[0] == ("Normal", "SuccessfulCreate", "create Claim data-web-0 Pod web-0 in StatefulSet web success")


async def test_a_claim_that_cannot_be_created_blocks_its_pod_with_warnings() -> None:
    ssc, client, events = controller(stateful_set(1, claim_templates=("data",)))
    client.failures[("create", "persistentvolumeclaims")] = errors.Forbidden({"message": "quota exceeded"})
    with pytest.raises(Exception, match="failed to create PVC data-web-0: quota exceeded"):
        await ssc.sync(KEY)
    assert writes(client, "create", "pods") == []
    assert [(t, r) for t, r, _ in events.seen] == [("Warning", "FailedCreate"), ("Warning", "FailedCreate")]
    assert events.seen[0][2] == "create Claim data-web-0 for Pod web-0 in StatefulSet web failed error: quota exceeded"
    assert status_written(client)["replicas"] == 0  # the status is still written


async def test_when_deleted_delete_makes_the_set_control_its_claims() -> None:
    sts = stateful_set(1, claim_templates=("data",), retention={"whenDeleted": "Delete", "whenScaled": "Retain"})
    rev = revision(sts)
    ssc, client, _ = controller(sts, member(sts, 0, rev), revs=(rev,), pvcs=(claim("data-web-0"),))
    await ssc.sync(KEY)
    [update] = writes(client, "update", "persistentvolumeclaims")
    assert update.body["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True,
         "blockOwnerDeletion": True}]


async def test_when_scaled_delete_hands_a_condemned_pods_claims_to_the_pod_before_deleting_it() -> None:
    sts = stateful_set(1, claim_templates=("data",), retention={"whenDeleted": "Delete", "whenScaled": "Delete"})
    rev = revision(sts)
    set_ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True}
    pvcs = (claim("data-web-0", [set_ref]), claim("data-web-1", [set_ref]))
    ssc, client, _ = controller(sts, member(sts, 0, rev), member(sts, 1, rev), revs=(rev,), pvcs=pvcs)
    await ssc.sync(KEY)
    [update] = writes(client, "update", "persistentvolumeclaims")
    assert update.name == "data-web-1"
    assert [(r["kind"], r["name"]) for r in update.body["metadata"]["ownerReferences"]] == [("Pod", "web-1")]
    assert [a.name for a in client.writes("delete")] == ["web-1"]


async def test_retain_leaves_claims_without_owners() -> None:
    sts = stateful_set(1, claim_templates=("data",))
    rev = revision(sts)
    ssc, client, _ = controller(sts, member(sts, 0, rev), revs=(rev,), pvcs=(claim("data-web-0"),))
    await ssc.sync(KEY)
    assert writes(client, "update", "persistentvolumeclaims") == []


async def test_a_claim_left_by_an_earlier_pod_blocks_the_new_pod_until_it_is_gone() -> None:
    sts = stateful_set(1, claim_templates=("data",), retention={"whenDeleted": "Retain", "whenScaled": "Delete"})
    old_pod_ref = {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "uid-of-the-old-web-0", "controller": True}
    ssc, client, _ = controller(sts, pvcs=(claim("data-web-0", [old_pod_ref]),))
    await ssc.sync(KEY)
    assert writes(client, "create", "pods") == [] and writes(client, "create", "persistentvolumeclaims") == []


RETAIN = {"whenDeleted": "Retain", "whenScaled": "Retain"}
DELETE = {"whenDeleted": "Delete", "whenScaled": "Delete"}
SET_REF = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "sts-uid", "controller": True,
           "blockOwnerDeletion": True}
POD_REF = {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "uid-web-0", "controller": True,
           "blockOwnerDeletion": True}
OTHER_CONTROLLER = {"apiVersion": "v1", "kind": "Thing", "name": "x", "uid": "x", "controller": True}


@pytest.mark.parametrize("case,policy,refs,scaled_down,up_to_date,fixed", [
    ("retain wants no references", RETAIN, [SET_REF], False, False, []),
    ("delete wants the set on a pod in range", DELETE, [], False, False, [SET_REF]),
    ("delete wants the pod on a pod scaled away", DELETE, [SET_REF], True, False, [POD_REF]),
    ("a reference to an earlier set is left alone", DELETE, [{**SET_REF, "uid": "old"}], False, True, None),
    ("another controller keeps the claim and ours go", DELETE, [OTHER_CONTROLLER, SET_REF], False, False,
     [OTHER_CONTROLLER]),
    ("our reference must be a controller one", DELETE, [{**SET_REF, "controller": False}], False, False, [SET_REF]),
])
def test_claim_owner_references_follow_the_retention_policy(case: str, policy: dict[str, str],
                                                            refs: list[dict[str, Any]], scaled_down: bool,
                                                            up_to_date: bool, fixed: list[dict[str, Any]] | None) -> None:
    sts = stateful_set(1, claim_templates=("data",), retention=policy)
    pod = member(sts, 0, revision(sts))
    pvc = claim("data-web-0", refs)
    assert claims.owner_refs_up_to_date(pvc, sts, pod, scaled_down) is up_to_date
    if fixed is not None:
        assert claims.updated_owner_refs(pvc, sts, pod, scaled_down) == fixed


# ownership --------------------------------------------------------------------------------------------


async def test_members_are_adopted_and_strangers_released_and_others_left_alone() -> None:
    sts = stateful_set(2)
    rev = revision(sts)
    orphan = member(sts, 0, rev)
    del orphan["metadata"]["ownerReferences"]
    not_a_member = copy.deepcopy(orphan)
    not_a_member["metadata"].update(name="web-zero", uid="uid-zero")
    mine_but_misnamed = member(sts, 0, rev)
    mine_but_misnamed["metadata"].update(name="stranger", uid="uid-stranger")
    someone_elses = member(sts, 1, rev)
    someone_elses["metadata"]["ownerReferences"][0]["uid"] = "other-uid"
    ssc, client, _ = controller(sts, orphan, not_a_member, mine_but_misnamed, someone_elses, revs=(rev,))
    await ssc.sync(KEY)
    patches = {a.name: a.body["metadata"]["ownerReferences"] for a in writes(client, "patch", "pods")}
    assert patches["web-0"][0]["uid"] == "sts-uid"
    assert patches["stranger"] == [{"$patch": "delete", "uid": "sts-uid"}]
    assert set(patches) == {"web-0", "stranger"}


async def test_orphan_revisions_matching_the_selector_are_adopted() -> None:
    sts = stateful_set(1)
    orphan = revision(sts)
    del orphan["metadata"]["ownerReferences"]
    ssc, client, _ = controller(sts, member(sts, 0, orphan), revs=(orphan,))
    await ssc.sync(KEY)
    [patch] = writes(client, "patch", "controllerrevisions")
    assert patch.body["metadata"]["ownerReferences"][0]["uid"] == "sts-uid"
    assert writes(client, "create", "controllerrevisions") == []


async def test_pod_events_enqueue_the_controlling_set_or_the_sets_matching_an_orphan() -> None:
    sts = stateful_set(1)
    rev = revision(sts)
    orphan, strangers = member(sts, 0, rev), member(sts, 1, rev)
    del orphan["metadata"]["ownerReferences"]
    strangers["metadata"]["ownerReferences"][0]["uid"] = "other-uid"
    ssc, _, _ = controller(sts)
    for pod in (member(sts, 0, rev), orphan, strangers):
        ssc._pod_added(pod)
        queued = []
        while len(ssc.queue):
            key, _ = await ssc.queue.get()
            queued.append(key)
            ssc.queue.done(key)
        assert queued == ([] if pod is strangers else [KEY])


# bad input and retries ----------------------------------------------------------------------------------


async def test_a_pod_the_apiserver_refuses_is_a_warning_and_a_retry_with_backoff() -> None:
    ssc, client, events = controller(stateful_set(5, policy="Parallel"))
    client.failures[("create", "pods")] = errors.Invalid({"message": 'Pod "web-0" is invalid: bad image'})
    with pytest.raises(errors.Invalid):
        await ssc.sync(KEY)
    assert len(writes(client, "create", "pods")) == 1  # the slow start stops after its first batch
    assert events.seen == [("Warning", "FailedCreate",
                            'create Pod web-0 in StatefulSet web failed error: Pod "web-0" is invalid: bad image')]
    ssc.queue.add(KEY)
    await process_next_work_item(ssc.queue, ssc.sync, name="statefulset", max_retries=None,
                                 log=logging.getLogger("test"))
    assert ssc.queue.num_requeues(KEY) == 1 and len(ssc.queue) == 0  # retried later, not now
    ssc.queue.shut_down()


async def test_a_status_conflict_fails_the_sync_for_a_retry() -> None:
    sts = stateful_set(1)
    rev = revision(sts)
    ssc, client, _ = controller(sts, member(sts, 0, rev), revs=(rev,))
    client.failures[("update", "statefulsets/status")] = errors.Conflict({"message": "the object has been modified"})
    with pytest.raises(errors.Conflict):
        await ssc.sync(KEY)


async def test_a_set_being_deleted_only_gets_its_status() -> None:
    sts = stateful_set(3)
    sts["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    rev = revision(sts)
    ssc, client, _ = controller(sts, member(sts, 0, rev), revs=(rev,))
    await ssc.sync(KEY)
    assert [a.resource for a in client.writes()] == ["statefulsets/status"]


async def test_an_unchanged_status_is_not_written() -> None:
    sts = stateful_set(1)
    rev = revision(sts)
    name = rev["metadata"]["name"]
    sts["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "currentReplicas": 1,
                     "updatedReplicas": 1, "currentRevision": name, "updateRevision": name, "collisionCount": 0,
                     "observedGeneration": 1}
    ssc, client, _ = controller(sts, member(sts, 0, rev), revs=(rev,))
    await ssc.sync(KEY)
    assert client.writes() == []

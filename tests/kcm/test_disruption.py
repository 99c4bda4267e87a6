"""The disruption controller's sync against hand-filled caches and a recording client (no sleeps), and once
against a real apiserver."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.kcm.controllers.disruption import DisruptionController, go_label_selector, scaled_value
from tests.kcm.fakes import cache, context
from tests.kcm.running import running, wait_for

NS = "default"
KEY = "default/web"


class Events:
    """Records what the controller reports, as (type, reason, message, kind of the object)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.seen.append((type, reason, message, obj.get("kind", "")))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _, _ in self.seen]


def budget(min_available: int | str | None = None, max_unavailable: int | str | None = None,
           status: dict[str, Any] | None = None, generation: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"metadata": {"name": "web", "namespace": NS, "uid": "pdb-uid", "generation": generation,
                         "resourceVersion": "7"},
            "spec": spec, "status": status or {}}


def owner_ref(kind: str = "ReplicaSet", name: str = "web", uid: str = "rs-uid",
              api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def pod(name: str, ready: bool = True, owner: dict[str, Any] | None = None, deleting: bool = False,
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}",
                            "labels": {"app": "web"} if labels is None else labels}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]}}


def workload(kind: str, replicas: int, uid: str, name: str = "web",
             owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"kind": kind, "metadata": meta, "spec": {"replicas": replicas}}


def controller(pdb: dict[str, Any], *pods: dict[str, Any], workloads: tuple[tuple[Any, dict[str, Any]], ...] = ()
               ) -> tuple[DisruptionController, Any, Events, Any]:
    ctx, client, clock = context()
    events = Events()
    ctx.recorder = events  # type: ignore[assignment]
    cache(ctx, resources.POD_DISRUPTION_BUDGETS, pdb)
    cache(ctx, resources.PODS, *pods)
    for resource, obj in workloads:
        cache(ctx, resource, obj)
    return DisruptionController(ctx), client, events, clock


def written_status(client: Any) -> dict[str, Any]:
    updates = client.writes("update")
    assert [u.resource for u in updates] == ["poddisruptionbudgets/status"]
    return updates[0].body["status"]


def condition(status: dict[str, Any]) -> dict[str, Any]:
    (found,) = [c for c in status["conditions"] if c["type"] == "DisruptionAllowed"]
    return found


async def test_an_integer_min_available_counts_every_selected_pod_and_allows_the_surplus() -> None:
    dc, client, _, _ = controller(budget(min_available=2), pod("a"), pod("b"), pod("c"), pod("d", ready=False),
                                  pod("other", labels={"app": "db"}))
    await dc.sync(KEY)
    status = written_status(client)
    assert {k: status[k] for k in ("currentHealthy", "desiredHealthy", "expectedPods", "disruptionsAllowed",
                                   "observedGeneration")} == {"currentHealthy": 3, "desiredHealthy": 2,
                                                              "expectedPods": 4, "disruptionsAllowed": 1,
                                                              "observedGeneration": 1}
    assert condition(status)["status"] == "True" and condition(status)["reason"] == "SufficientPods"
    assert "disruptedPods" not in status


async def test_no_disruption_is_allowed_at_the_minimum() -> None:
    dc, client, _, _ = controller(budget(min_available=2), pod("a"), pod("b"), pod("c", deleting=True))
    await dc.sync(KEY)
    status = written_status(client)
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 0)
    assert (condition(status)["status"], condition(status)["reason"]) == ("False", "InsufficientPods")


async def test_max_unavailable_is_taken_from_the_scale_of_a_deployment_through_its_replica_set() -> None:
    deployment = workload("Deployment", 4, "dep-uid")
    replica_set = workload("ReplicaSet", 4, "rs-uid", owner=owner_ref("Deployment", uid="dep-uid"))
    pods = [pod(f"p{i}", owner=owner_ref()) for i in range(3)]  # one of the four is missing
    dc, client, _, _ = controller(budget(max_unavailable="50%"), *pods,
                                  workloads=((resources.DEPLOYMENTS, deployment), (resources.REPLICA_SETS, replica_set)))
    await dc.sync(KEY)
    status = written_status(client)
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (4, 2, 1)


@pytest.mark.parametrize(("min_available", "replicas", "desired"), [("50%", 3, 2), ("34%", 3, 2), ("100%", 5, 5)])
async def test_a_percentage_min_available_rounds_up(min_available: str, replicas: int, desired: int) -> None:
    rc = workload("ReplicationController", replicas, "rc-uid")
    pods = [pod(f"p{i}", owner=owner_ref("ReplicationController", uid="rc-uid", api_version="v1"))
            for i in range(replicas)]
    dc, client, _, _ = controller(budget(min_available=min_available), *pods,
                                  workloads=((resources.REPLICATION_CONTROLLERS, rc),))
    await dc.sync(KEY)
    status = written_status(client)
    assert (status["expectedPods"], status["desiredHealthy"]) == (replicas, desired)


async def test_a_stateful_set_and_a_bare_replica_set_are_summed() -> None:
    sts = workload("StatefulSet", 2, "sts-uid", name="db")
    rs = workload("ReplicaSet", 3, "rs-uid")
    pods = [pod("db-0", owner=owner_ref("StatefulSet", name="db", uid="sts-uid")), pod("w", owner=owner_ref())]
    dc, client, _, _ = controller(budget(max_unavailable=1), *pods,
                                  workloads=((resources.STATEFUL_SETS, sts), (resources.REPLICA_SETS, rs)))
    await dc.sync(KEY)
    assert written_status(client)["expectedPods"] == 5


async def test_a_custom_owner_is_read_through_its_scale_subresource() -> None:
    owner = owner_ref("Widget", name="w", uid="widget-uid", api_version="example.com/v1")
    dc, client, _, _ = controller(budget(max_unavailable="25%"), pod("a", owner=owner), pod("b", owner=owner))
    asked: list[str] = []

    async def get_path(url: str) -> dict[str, Any]:
        asked.append(url)
        if url == "/apis":
            return {"groups": [{"name": "example.com", "preferredVersion": {"version": "v1"},
                                "versions": [{"groupVersion": "example.com/v1", "version": "v1"}]}]}
        if url in ("/api/v1", "/apis/example.com/v1"):
            widgets = [{"name": "widgets", "kind": "Widget", "namespaced": True, "verbs": ["get"]},
                       {"name": "widgets/scale", "kind": "Scale", "namespaced": True, "verbs": ["get"]}]
            return {"resources": widgets if "example" in url else []}
        assert url == "/apis/example.com/v1/namespaces/default/widgets/w/scale"
        return {"metadata": {"name": "w", "uid": "widget-uid"}, "spec": {"replicas": 8}}

    client.get_path = get_path
    await dc.sync(KEY)
    status = written_status(client)
    assert (status["expectedPods"], status["desiredHealthy"]) == (8, 6)
    assert asked[-1].endswith("/widgets/w/scale")


async def test_an_owner_without_a_scale_subresource_fails_safe_with_kubes_message() -> None:
    owner = owner_ref("Gadget", name="g", uid="g-uid", api_version="example.com/v1")
    dc, client, events, _ = controller(budget(max_unavailable=1, status={"disruptionsAllowed": 3,
                                                                          "observedGeneration": 1}),
                                       pod("a", owner=owner))

    async def get_path(url: str) -> dict[str, Any]:
        if url == "/apis":
            return {"groups": [{"name": "example.com", "preferredVersion": {"version": "v1"},
                                "versions": [{"groupVersion": "example.com/v1", "version": "v1"}]}]}
        if url == "/apis/example.com/v1":
            return {"resources": [{"name": "gadgets", "kind": "Gadget", "namespaced": True, "verbs": ["get"]}]}
        if url == "/api/v1":
            return {"resources": []}
        raise errors.NotFound({"code": 404, "reason": "NotFound", "message": "not found"})

    client.get_path = get_path
    await dc.sync(KEY)  # no exception: the fail-safe write stands in for a retry loop
    status = written_status(client)
    assert status["disruptionsAllowed"] == 0
    assert condition(status) | {"lastTransitionTime": None} == {
        "type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed", "observedGeneration": 1,
        "message": "gadgets.example.com does not implement the scale subresource", "lastTransitionTime": None}
    assert ("Warning", "CalculateExpectedPodCountFailed",
            "Failed to calculate the number of expected pods: gadgets.example.com does not implement the scale "
            "subresource", "PodDisruptionBudget") in events.seen


async def test_a_pod_whose_controller_is_gone_fails_safe() -> None:
    dc, client, _, _ = controller(budget(max_unavailable=1), pod("a", owner=owner_ref(uid="gone")),
                                  workloads=((resources.REPLICA_SETS, workload("ReplicaSet", 2, "rs-uid")),))

    async def get_path(url: str) -> dict[str, Any]:  # the replica set's /scale answers for the newer object
        return {"metadata": {"uid": "rs-uid"}, "spec": {"replicas": 2}}

    client.get_path = get_path
    await dc.sync(KEY)
    assert condition(written_status(client))["message"] == 'found no controllers for pod "a"'


async def test_pods_without_a_controller_are_left_out_of_a_percentage_with_a_warning() -> None:
    dc, client, events, _ = controller(budget(max_unavailable="50%"), pod("bare"))
    await dc.sync(KEY)
    status = written_status(client)
    assert (status["expectedPods"], status["disruptionsAllowed"]) == (0, 0)
    (message,) = [m for _, reason, m, _ in events.seen if reason == "UnmanagedPods"]
    assert message.startswith("Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:"
                              "map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) were "
                              "found to be unmanaged.")


async def test_a_budget_selecting_no_pods_says_so_and_allows_nothing() -> None:
    dc, client, events, _ = controller(budget(max_unavailable=1))
    await dc.sync(KEY)
    assert written_status(client)["disruptionsAllowed"] == 0
    assert ("Normal", "NoPods", "No matching pods found", "PodDisruptionBudget") in events.seen


async def test_recently_evicted_pods_are_not_healthy_until_the_deletion_timeout() -> None:
    dc, client, events, clock = controller(budget(min_available=1), pod("a"), pod("b"), pod("c"))
    now = clock.wall()
    recent, stale = time_string(now - timedelta(seconds=30)), time_string(now - timedelta(seconds=121))
    budget_obj = dc.budgets.indexer.get_by_key(KEY)
    budget_obj["status"] = {"disruptedPods": {"a": recent, "b": stale, "gone": recent}}
    await dc.sync(KEY)
    status = written_status(client)
    assert status["disruptedPods"] == {"a": recent}  # b expired, "gone" no longer exists
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 1)
    assert ("Warning", "NotDeleted", "Pod was expected by PDB default/default to be deleted but it wasn't",
            "Pod") in events.seen
    assert dc.queue._ready_at[KEY] == pytest.approx(clock.now() + 90)  # when a's entry expires
    dc.queue.shut_down()


async def test_an_unchanged_status_is_not_written_again() -> None:
    dc, client, _, clock = controller(budget(min_available=1), pod("a"), pod("b"))
    await dc.sync(KEY)
    dc.budgets.indexer.get_by_key(KEY)["status"] = written_status(client)
    await dc.sync(KEY)
    assert len(client.writes("update")) == 1


async def test_a_new_generation_is_observed_even_with_the_same_numbers() -> None:
    dc, client, _, _ = controller(budget(min_available=1, generation=3), pod("a"), pod("b"))
    dc.budgets.indexer.get_by_key(KEY)["status"] = {
        "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1, "observedGeneration": 2,
        "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods", "message": "",
                        "observedGeneration": 2, "lastTransitionTime": "2023-01-01T00:00:00Z"}]}
    await dc.sync(KEY)
    status = written_status(client)
    assert status["observedGeneration"] == 3
    assert condition(status)["lastTransitionTime"] == "2023-01-01T00:00:00Z"  # the status did not change


async def test_a_write_conflict_is_retried_not_failed_safe() -> None:
    dc, client, _, _ = controller(budget(min_available=1), pod("a"))
    client.failures[("update", "poddisruptionbudgets/status")] = errors.Conflict({"code": 409, "reason": "Conflict"})
    with pytest.raises(errors.Conflict):
        await dc.sync(KEY)
    assert len(client.writes("update")) == 1


async def test_a_pod_change_enqueues_its_budget_and_warns_when_several_select_it() -> None:
    dc, _, events, _ = controller(budget(min_available=1))
    other = budget(min_available=1)
    other["metadata"] = {**other["metadata"], "name": "zz", "uid": "other"}
    dc.budgets.indexer.add(other)
    dc._pod_changed(pod("a"))
    assert len(dc.queue) == 1
    assert events.reasons() == ["MultiplePodDisruptionBudgets"]
    assert events.seen[0][2] in [f'Pod "default"/"a" matches multiple PodDisruptionBudgets.  Chose "{name}" '
                                 'arbitrarily.' for name in ("web", "zz")]


async def test_a_deleted_budget_is_not_synced() -> None:
    dc, client, _, _ = controller(budget(min_available=1))
    await dc.sync("default/gone")
    assert client.writes() == []


def test_scaled_values_round_percentages_up() -> None:
    assert [scaled_value("10%", 5), scaled_value("0%", 5), scaled_value(3, 5), scaled_value("100%", 7)] == [1, 0, 3, 7]


def test_selectors_print_as_go_prints_them() -> None:
    selector = {"matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]}
    assert go_label_selector(selector) == ("&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
                                           "MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement"
                                           "{Key:tier,Operator:In,Values:[x y],},},}")


# against a real apiserver ---------------------------------------------------------------------------------


async def test_the_status_follows_pods_becoming_ready(control_plane: Any, api: Any, namespace: str) -> None:
    pdbs = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    api.post(pdbs, json={"metadata": {"name": "web"},
                         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}).raise_for_status()
    for name in ("a", "b"):
        api.post(f"/api/v1/namespaces/{namespace}/pods", json={
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": "nowhere", "containers": [{"name": "c", "image": "busybox"}]}}).raise_for_status()

    async with running(control_plane, DisruptionController):
        status = await wait_for(lambda: (s := api.get(f"{pdbs}/web").json().get("status", {})).get("conditions")
                                and s, 10, "the first status")
        assert (status["expectedPods"], status["currentHealthy"], status["disruptionsAllowed"]) == (2, 0, 0)
        for name in ("a", "b"):
            api.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                      json={"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                      headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()
        status = await wait_for(lambda: (s := api.get(f"{pdbs}/web").json()["status"])["disruptionsAllowed"] == 1
                                and s, 10, "one disruption allowed")
        assert status["currentHealthy"] == 2
        assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
            ("DisruptionAllowed", "True", "SufficientPods")]

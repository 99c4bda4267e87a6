"""The node lifecycle controller's passes against hand-filled caches, a recording client and a FakeClock."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.timestamps import micro_time_string, time_string
from minikube_py.client import errors, resources
from minikube_py.kcm.controllers.nodelifecycle import (
    FULL_DISRUPTION,
    NORMAL,
    PARTIAL_DISRUPTION,
    NodeLifecycleController,
    compute_zone_state,
    zone_key,
)
from tests.kcm.fakes import cache, context

CREATED = "2024-01-01T00:00:00Z"  # the FakeClock's wall clock starts here


class EventLog:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []  # (kind/name, type, reason, message)

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((f"{obj['kind']}/{obj['name']}", type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, _, reason, _ in self.events]


def node(name: str, ready: str | None = "True", zone: str = "a", taints: list[dict[str, Any]] | None = None,
         unschedulable: bool = False, conditions: dict[str, str] | None = None,
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    found = dict(conditions or {})
    if ready is not None:
        found["Ready"] = ready
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": CREATED, "resourceVersion": "7",
                         "labels": {"topology.kubernetes.io/zone": zone, **(labels or {})}},
            "spec": {"taints": taints or [], "unschedulable": unschedulable},
            "status": {"conditions": [{"type": kind, "status": status, "lastHeartbeatTime": CREATED,
                                       "lastTransitionTime": CREATED} for kind, status in found.items()]}}


def lease(name: str, renewed: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"renewTime": renewed}}


def pod(name: str, node_name: str, ready: str = "True") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"nodeName": node_name},
            "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": CREATED}]}}


def controller(*nodes: dict[str, Any], pods: tuple[dict[str, Any], ...] = ()) -> tuple[NodeLifecycleController, Any, Any, EventLog]:
    ctx, client, clock = context()
    events = EventLog()
    ctx.recorder = events  # type: ignore[assignment]
    nlc = NodeLifecycleController(ctx)
    cache(ctx, resources.NODES, *nodes)
    cache(ctx, resources.PODS, *pods)
    cache(ctx, resources.LEASES)
    for obj in nodes:
        client.put(resources.NODES, obj)
    return nlc, client, clock, events


def taint_patches(client: Any) -> list[tuple[str, list[dict[str, Any]] | None]]:
    return [(a.name, a.body["spec"]["taints"]) for a in client.writes("patch") if a.resource == "nodes"]


async def test_a_node_silent_past_the_grace_period_gets_its_conditions_unknown() -> None:
    nlc, client, clock, events = controller(node("n1", conditions={"MemoryPressure": "False"}),
                                            pods=(pod("web", "n1"),))
    await nlc.monitor_node_health()
    assert client.writes("update") == []
    assert events.events == [("Node/n1", "Normal", "RegisteredNode", "Node n1 event: Registered Node n1 in Controller")]
    clock.advance(50)
    await nlc.monitor_node_health()
    assert client.writes("update") == []  # not yet: the grace period is not over
    clock.advance(1)
    await nlc.monitor_node_health()
    [update] = client.writes("update")
    assert (update.resource, update.name) == ("nodes/status", "n1")
    conditions = {c["type"]: c for c in update.body["status"]["conditions"]}
    assert set(conditions) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"], conditions["Ready"]["message"]) == (
        "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert conditions["Ready"]["lastTransitionTime"] == time_string(clock.wall())
    assert conditions["Ready"]["lastHeartbeatTime"] == CREATED  # the kubelet's, untouched
    assert conditions["DiskPressure"]["reason"] == "NodeStatusNeverUpdated"
    assert conditions["DiskPressure"]["message"] == "Kubelet never posted node status."
    [marked] = [a for a in client.writes("patch") if a.resource == "pods/status"]
    assert marked.name == "web" and marked.options["patch_type"] == "strategic"
    assert marked.body["status"]["conditions"][0] == {"type": "Ready", "status": "False",
                                                      "lastTransitionTime": time_string(clock.wall())}
    assert ("Node/n1", "Normal", "NodeNotReady", "Node n1 status is now: NodeNotReady") in events.events
    assert ("Pod/web", "Warning", "NodeNotReady", "Node is not ready") in events.events


async def test_a_renewed_lease_keeps_a_node_alive_without_status_reports() -> None:
    nlc, client, clock, _ = controller(node("n1"))
    await nlc.monitor_node_health()
    for _ in range(4):
        clock.advance(30)
        nlc.leases.indexer.add(lease("n1", micro_time_string(clock.wall())))
        await nlc.monitor_node_health()
    assert client.writes("update") == []
    clock.advance(51)  # the kubelet stops renewing
    await nlc.monitor_node_health()
    assert [a.name for a in client.writes("update")] == ["n1"]


async def test_a_node_that_never_reported_has_the_longer_startup_grace_period() -> None:
    nlc, client, clock, _ = controller(node("new", ready=None))
    await nlc.monitor_node_health()
    clock.advance(59)
    await nlc.monitor_node_health()
    assert client.writes("update") == []
    clock.advance(2)
    await nlc.monitor_node_health()
    conditions = client.writes("update")[0].body["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        (kind, "Unknown", "NodeStatusNeverUpdated") for kind in ("Ready", "MemoryPressure", "DiskPressure",
                                                                 "PIDPressure")]
    assert conditions[0]["lastHeartbeatTime"] == CREATED


async def test_an_unreachable_node_is_tainted_no_execute_when_its_zone_is_healthy() -> None:
    nlc, client, clock, _ = controller(node("down", ready="Unknown"), node("up"))
    await nlc.monitor_node_health()
    await nlc.do_no_execute_tainting_pass()
    [(name, taints)] = taint_patches(client)
    assert name == "down"
    assert taints == [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                       "timeAdded": time_string(clock.wall())}]
    patch = client.writes("patch")[0].body
    assert patch["metadata"] == {"resourceVersion": "7"}  # guarded against a concurrent writer


async def test_a_not_ready_node_is_tainted_not_ready() -> None:
    nlc, client, _, _ = controller(node("sick", ready="False"), node("up"))
    await nlc.monitor_node_health()
    await nlc.do_no_execute_tainting_pass()
    [(_, taints)] = taint_patches(client)
    assert [(t["key"], t["effect"]) for t in taints] == [("node.kubernetes.io/not-ready", "NoExecute")]


async def test_an_unreachable_node_turning_not_ready_swaps_its_taint_at_once() -> None:
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": CREATED}
    nlc, client, _, _ = controller(node("n1", ready="False", taints=[unreachable]), node("up"))
    nlc.known_nodes = {"n1": {}, "up": {}}  # seen before: a first sight would clear its taints
    await nlc.monitor_node_health()
    [(_, taints)] = taint_patches(client)
    assert [t["key"] for t in taints] == ["node.kubernetes.io/not-ready"]


async def test_a_ready_node_loses_its_no_execute_taints() -> None:
    other = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": CREATED}, other]
    nlc, client, _, _ = controller(node("n1", taints=taints))
    await nlc.monitor_node_health()  # on first sight, and again as a Ready node (the fake cache stays stale)
    assert taint_patches(client) and all(patch == ("n1", [other]) for patch in taint_patches(client))


async def test_taints_are_added_at_the_eviction_rate_one_node_every_ten_seconds() -> None:
    nodes = [node(f"up{i}") for i in range(4)] + [node("down1", ready="Unknown"), node("down2", ready="Unknown")]
    nlc, client, clock, _ = controller(*nodes)
    await nlc.monitor_node_health()
    await nlc.do_no_execute_tainting_pass()
    assert [name for name, _ in taint_patches(client)] == ["down1"]
    clock.advance(5)
    await nlc.do_no_execute_tainting_pass()
    assert len(taint_patches(client)) == 1
    clock.advance(5)
    await nlc.do_no_execute_tainting_pass()
    assert [name for name, _ in taint_patches(client)] == ["down1", "down2"]


async def test_when_every_node_is_down_nothing_is_tainted() -> None:
    nlc, client, clock, _ = controller(node("n1", ready="Unknown"), node("n2", ready="Unknown"))
    await nlc.monitor_node_health()
    for _ in range(3):
        clock.advance(10)
        await nlc.do_no_execute_tainting_pass()
        await nlc.monitor_node_health()
    assert taint_patches(client) == []
    assert nlc.zone_states[zone_key(node("n1"))] == FULL_DISRUPTION


async def test_tainting_resumes_once_a_node_of_a_fully_disrupted_cluster_answers_again() -> None:
    nlc, client, clock, _ = controller(node("n1", ready="Unknown"), node("n2", ready="Unknown"))
    await nlc.monitor_node_health()
    clock.advance(10)
    recovered = node("n2")
    recovered["status"]["conditions"][0]["lastHeartbeatTime"] = time_string(clock.wall())
    nlc.nodes.indexer.update(recovered)
    await nlc.monitor_node_health()
    await nlc.do_no_execute_tainting_pass()
    assert nlc.zone_states[zone_key(recovered)] == NORMAL
    assert taint_patches(client) == []  # the limiter restarts empty: the first token comes after 1 / rate
    clock.advance(10)
    await nlc.do_no_execute_tainting_pass()
    assert [name for name, _ in taint_patches(client)] == ["n1"]


async def test_a_mostly_down_small_zone_stops_tainting() -> None:
    nodes = [node("up")] + [node(f"down{i}", ready="Unknown") for i in range(3)]
    nlc, client, clock, _ = controller(*nodes)
    await nlc.monitor_node_health()
    clock.advance(10)
    await nlc.do_no_execute_tainting_pass()
    assert nlc.zone_states[zone_key(nodes[0])] == PARTIAL_DISRUPTION
    assert taint_patches(client) == []


async def test_nodes_excluded_from_disruption_checks_do_not_count_in_their_zone() -> None:
    excluded = {"node.kubernetes.io/exclude-disruption": ""}
    nlc, client, _, _ = controller(node("down", ready="Unknown"), node("up", labels=excluded))
    await nlc.monitor_node_health()
    assert nlc.zone_states[zone_key(node("down"))] == FULL_DISRUPTION


@pytest.mark.parametrize(("statuses", "state"), [
    (["True", "Unknown"], NORMAL),
    (["Unknown", "False"], FULL_DISRUPTION),
    (["True", "False", "False", "Unknown"], PARTIAL_DISRUPTION),
    (["True", "True", "False", "False", "Unknown"], PARTIAL_DISRUPTION),
    (["True", "True", "True", "False", "False", "Unknown"], NORMAL),  # 50 % is under the 55 % threshold
    ([], NORMAL),
])
def test_zone_states_follow_kube(statuses: list[str], state: str) -> None:
    assert compute_zone_state([{"status": s} for s in statuses], 0.55) == state


async def test_conditions_become_no_schedule_taints_and_stale_ones_go() -> None:
    stale = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}
    foreign = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": CREATED}
    nlc, client, clock, _ = controller(node("n1", ready="False", conditions={"DiskPressure": "True"},
                                            taints=[stale, foreign], unschedulable=True))
    await nlc.sync("n1")
    [(_, taints)] = taint_patches(client)
    now = time_string(clock.wall())
    assert taints == [foreign, {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule", "timeAdded": now},
                      {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": now},
                      {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": now}]


async def test_a_node_whose_taints_match_its_conditions_is_not_written() -> None:
    nlc, client, _, _ = controller(node("n1", labels={"kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux"}))
    await nlc.sync("n1")
    await nlc.sync("gone")
    assert client.writes() == []


async def test_beta_labels_follow_the_stable_ones() -> None:
    nlc, client, _, _ = controller(node("n1", labels={"kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "amd64",
                                                      "kubernetes.io/os": "linux"}))
    await nlc.sync("n1")
    [patch] = client.writes("patch")
    assert patch.body == {"metadata": {"labels": {"beta.kubernetes.io/arch": "arm64", "beta.kubernetes.io/os": "linux"}}}


async def test_a_conflicting_taint_write_is_redone_on_a_fresh_read() -> None:
    nlc, client, _, _ = controller(node("n1", ready="False"))
    fresh = node("n1", ready="False", taints=[{"key": "dedicated", "effect": "NoSchedule"}])
    fresh["metadata"]["resourceVersion"] = "9"
    client.put(resources.NODES, fresh)
    fail_first(client, "patch", errors.Conflict({"message": "the object has been modified"}))
    await nlc.sync("n1")
    first, second = client.writes("patch")
    assert first.body["metadata"]["resourceVersion"] == "7"
    assert second.body["metadata"]["resourceVersion"] == "9"
    assert [t["key"] for t in second.body["spec"]["taints"]] == ["dedicated", "node.kubernetes.io/not-ready"]


async def test_a_taint_write_that_keeps_conflicting_fails_the_sync_for_a_retry_with_backoff() -> None:
    nlc, client, _, _ = controller(node("n1", ready="False"))
    client.failures[("patch", "nodes")] = errors.Conflict({"message": "the object has been modified"})
    with pytest.raises(errors.Conflict):
        await nlc.sync("n1")
    assert len(client.writes("patch")) == 5


async def test_a_status_write_conflict_is_retried_on_the_node_read_again() -> None:
    nlc, client, clock, _ = controller(node("n1"), node("n2"))
    await nlc.monitor_node_health()
    clock.advance(51)
    fail_first(client, "update", errors.Conflict({"message": "the object has been modified"}))
    await nlc.monitor_node_health()
    assert sorted(a.name for a in client.writes("update")) == ["n1", "n1", "n2"]
    assert any(a.verb == "get" and a.name == "n1" for a in client.actions)


async def test_a_pod_bound_to_a_not_ready_node_is_marked_not_ready() -> None:
    nlc, client, _, events = controller(node("sick", ready="False"), node("up"),
                                        pods=(pod("late", "sick"), pod("fine", "up"), pod("already", "sick", "False")))
    await nlc.monitor_node_health()
    for key in ("default/late", "default/fine", "default/already", "default/gone"):
        await nlc.sync_pod(key)
    assert [(a.resource, a.name) for a in client.writes("patch") if a.resource == "pods/status"] == [
        ("pods/status", "late")]
    assert events.reasons().count("NodeNotReady") == 1


async def test_pods_that_could_not_be_marked_are_retried_on_the_next_pass() -> None:
    nlc, client, clock, _ = controller(node("n1"), node("n2"), pods=(pod("web", "n1"),))
    await nlc.monitor_node_health()
    clock.advance(51)
    client.failures[("patch", "pods/status")] = errors.InternalError({"message": "etcd is down"})
    await nlc.monitor_node_health()
    assert "n1" in nlc.nodes_to_retry
    del client.failures[("patch", "pods/status")]
    await nlc.monitor_node_health()
    assert "n1" not in nlc.nodes_to_retry
    assert [a.name for a in client.writes("patch") if a.resource == "pods/status"] == ["web", "web"]


def fail_first(client: Any, verb: str, error: errors.APIStatusError) -> None:
    """Make the client's next `verb` call fail with `error`, once."""
    original = getattr(client, verb)

    async def failing(*args: Any, **kwargs: Any) -> Any:
        setattr(client, verb, original)
        await original(*args, **kwargs)  # recorded as attempted
        raise error
    setattr(client, verb, failing)

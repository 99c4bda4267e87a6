"""The scheduling queue: ordering, backoff, gating, events, in-flight events, flushes; nominator."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.client.clock import FakeClock
from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    QueueingHint,
    Status,
)
from minikube_py.scheduler.framework.types import PodInfo, QueuedPodInfo
from minikube_py.scheduler.nominator import Nominator
from minikube_py.scheduler.queue import SchedulingQueue

NODE_ADD = ClusterEvent("Node", ActionType.ADD, "NodeAdd")
NODE_TAINT = ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT, "NodeUpdate")
POD_DELETE = ClusterEvent("Pod", ActionType.DELETE, "AssignedPodDelete")
FIT = "NodeResourcesFit"


def pod(name: str, priority: int = 0, *, gates: tuple[str, ...] = (), labels: dict[str, str] | None = None,
        affinity: dict[str, Any] | None = None, nominated: str = "", cpu: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"priority": priority, "containers": [{"name": "c"}]}
    if cpu:
        spec["containers"] = [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if affinity:
        spec["affinity"] = affinity
    status = {"nominatedNodeName": nominated} if nominated else {}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {}},
            "spec": spec, "status": status}


def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:  # PrioritySort's order
    pa, pb = a.pod_info.priority, b.pod_info.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def scheduling_gates(p: dict[str, Any]) -> Status | None:
    if p["spec"].get("schedulingGates"):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["waiting for scheduling gates"],
                      "SchedulingGates")
    return None


def make_queue(clock: FakeClock | None = None, **kwargs: Any) -> SchedulingQueue:
    kwargs.setdefault("pre_enqueue", {"default-scheduler": scheduling_gates})
    return SchedulingQueue(less, clock=clock or FakeClock(), **kwargs)


def names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def where(queue: SchedulingQueue, name: str) -> str:
    key = f"ns/{name}"
    if key in queue._active:
        return "active"
    if key in queue._backoff:
        return "backoff"
    return "unschedulable" if key in queue._unschedulable else "nowhere"


async def pop_all(queue: SchedulingQueue) -> list[str]:
    popped = []
    while queue._active:
        qpi = await queue.pop()
        assert qpi is not None
        popped.append(qpi.pod_info.name)
    return popped


async def fail(queue: SchedulingQueue, *plugins: str, pending: tuple[str, ...] = ()) -> QueuedPodInfo:
    """Pop the next pod and report it rejected by `plugins` (an error when there are none)."""
    qpi = await queue.pop()
    assert qpi is not None
    qpi.unschedulable_plugins, qpi.pending_plugins = set(plugins), set(pending)
    assert queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    return qpi


# --- ordering -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case, added, advance, expected", [
    ("higher priority pods leave first", [("low", 1), ("high", 10), ("mid", 5)], 0.0, ["high", "mid", "low"]),
    ("equal pods added at the same instant leave in insertion order", [("a", 0), ("b", 0), ("c", 0)], 0.0,
     ["a", "b", "c"]),
    ("equal pods leave by timestamp", [("first", 3), ("second", 3), ("urgent", 9)], 1.0,
     ["urgent", "first", "second"]),
])
async def test_active_queue_order(case: str, added: list[tuple[str, int]], advance: float,
                                  expected: list[str]) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name, priority in added:
        queue.add(pod(name, priority))
        clock.advance(advance)
    assert await pop_all(queue) == expected, case


async def test_pop_counts_attempts_and_cycles() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("a"))
    first = await fail(queue)
    clock.advance(1)
    queue.flush_backoff_q_completed()
    second = await queue.pop()
    assert second is first and second.attempts == 2
    assert queue.scheduling_cycle == 2
    assert second.initial_attempt_timestamp == 1000.0


async def test_updating_an_active_pod_reorders_it() -> None:
    queue = make_queue()
    queue.add(pod("a", 1))
    queue.add(pod("b", 2))
    queue.update(pod("a", 1), pod("a", 5))
    assert await pop_all(queue) == ["a", "b"]


# --- backoff ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case, attempts, initial, maximum, expected", [
    ("the first failure backs off the initial second", 1, 1.0, 10.0, 1.0),
    ("the second failure doubles it", 2, 1.0, 10.0, 2.0),
    ("the fourth failure waits eight seconds", 4, 1.0, 10.0, 8.0),
    ("the fifth failure is capped at the maximum", 5, 1.0, 10.0, 10.0),
    ("many failures stay at the maximum", 30, 1.0, 10.0, 10.0),
    ("custom durations are honoured", 2, 2.0, 3.0, 3.0),
])
async def test_backoff_duration(case: str, attempts: int, initial: float, maximum: float,
                                expected: float) -> None:
    clock = FakeClock()
    queue = make_queue(clock, pod_initial_backoff=initial, pod_max_backoff=maximum)
    queue.add(pod("a"))
    qpi = await queue.pop()
    assert qpi is not None
    qpi.attempts = attempts
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)  # an error: goes to backoff
    clock.advance(expected - 0.01)
    queue.flush_backoff_q_completed()
    assert where(queue, "a") == "backoff", case
    clock.advance(0.01)
    queue.flush_backoff_q_completed()
    assert where(queue, "a") == "active", case


@pytest.mark.parametrize("case, kwargs, message", [
    ("a zero initial backoff is refused", {"pod_initial_backoff": 0}, "podInitialBackoffSeconds"),
    ("a maximum below the initial backoff is refused", {"pod_initial_backoff": 5, "pod_max_backoff": 2},
     "podMaxBackoffSeconds"),
    ("a non-positive unschedulable timeout is refused", {"pod_max_in_unschedulable_pods_duration": -1},
     "pod_max_in_unschedulable_pods_duration"),
])
def test_bad_arguments(case: str, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_queue(**kwargs)


# --- failures -----------------------------------------------------------------------------------------------


async def test_an_error_goes_to_backoff_and_a_rejection_to_unschedulable() -> None:
    queue = make_queue()
    queue.add(pod("error", 2))
    queue.add(pod("rejected", 1))
    await fail(queue)
    await fail(queue, FIT)
    assert (where(queue, "error"), where(queue, "rejected")) == ("backoff", "unschedulable")
    assert queue._unschedulable["ns/rejected"].unschedulable_plugins == {FIT}
    assert queue.pending_pods()[1] == "activeQueueLength:0; backoffQueueLength:1; unschedulablePods:1"


async def test_a_pod_not_popped_here_uses_the_move_request_cycle() -> None:
    queue = make_queue(queueing_hints=fit_hints())
    for name in ("before", "after"):
        qpi = QueuedPodInfo(PodInfo.of(pod(name)), attempts=1, unschedulable_plugins={FIT})
        cycle = queue.scheduling_cycle
        if name == "after":
            queue.move_all_to_active_or_backoff_queue(POD_DELETE, pod("gone"), None)
        queue.add_unschedulable_if_not_present(qpi, cycle)
    assert (where(queue, "before"), where(queue, "after")) == ("unschedulable", "backoff")


async def test_a_pod_already_queued_is_not_added_again() -> None:
    queue = make_queue()
    queue.add(pod("a"))
    qpi = QueuedPodInfo(PodInfo.of(pod("a")), unschedulable_plugins={FIT})
    assert queue.add_unschedulable_if_not_present(qpi, 0) is False
    assert where(queue, "a") == "active"


@pytest.mark.parametrize("case, bad", [
    ("a dict without metadata", {"spec": {}}),
    ("a pod without a name", {"metadata": {"namespace": "ns"}}),
    ("something that is not a dict", ["pod"]),
])
def test_adding_something_that_is_not_a_pod_is_refused(case: str, bad: Any) -> None:
    with pytest.raises(ValueError, match="not a pod with metadata.name"):
        make_queue().add(bad)


# --- gating -------------------------------------------------------------------------------------------------


async def test_a_gated_pod_waits_until_an_update_removes_its_gates() -> None:
    queue = make_queue()
    gated = pod("a", gates=("example.com/wait", "example.com/other"))
    queue.add(gated)
    assert where(queue, "a") == "unschedulable"
    qpi = queue._unschedulable["ns/a"]
    assert qpi.gated and qpi.gating_plugin == "SchedulingGates"
    still_gated = pod("a", gates=("example.com/other",))
    queue.update(gated, still_gated)
    assert where(queue, "a") == "unschedulable"
    queue.move_all_to_active_or_backoff_queue(ClusterEvent("*", ActionType.ALL, "ForceActivate"))
    assert where(queue, "a") == "unschedulable", "events do not ungate pods"
    queue.update(still_gated, pod("a"))
    assert where(queue, "a") == "active"
    popped = await queue.pop()
    assert popped is not None and not popped.gated and popped.unschedulable_plugins == set()


async def test_pods_of_other_schedulers_skip_pre_enqueue() -> None:
    queue = make_queue()
    other = pod("a", gates=("g",))
    other["spec"]["schedulerName"] = "my-scheduler"
    queue.add(other)
    assert where(queue, "a") == "active"


async def test_a_pre_enqueue_that_raises_gates_the_pod() -> None:
    def broken(p: dict[str, Any]) -> Status | None:
        raise RuntimeError("boom")

    queue = make_queue(pre_enqueue={"default-scheduler": broken})
    queue.add(pod("a"))
    assert where(queue, "a") == "unschedulable" and queue._unschedulable["ns/a"].gated


# --- cluster events -----------------------------------------------------------------------------------------


def fit_hints(hint: Any = None) -> dict[str, list[ClusterEventWithHint]]:
    event = ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
    return {FIT: [ClusterEventWithHint(event, hint)]}


def hint_raises(p: Any, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("bad hint")


@pytest.mark.parametrize("case, hints, plugins, event, expected", [
    ("a registered event moves the pod", fit_hints(), {FIT}, NODE_ADD, "backoff"),
    ("an event no rejecting plugin registered leaves it", fit_hints(), {FIT}, POD_DELETE, "unschedulable"),
    ("a hint saying SKIP leaves it", fit_hints(lambda p, o, n: QueueingHint.SKIP), {FIT}, NODE_ADD,
     "unschedulable"),
    ("a hint saying QUEUE moves it", fit_hints(lambda p, o, n: QueueingHint.QUEUE), {FIT}, NODE_ADD,
     "backoff"),
    ("a hint that raises moves it", fit_hints(hint_raises), {FIT}, NODE_ADD, "backoff"),
    ("a plugin without registrations is moved by any event", fit_hints(), {"Other"}, POD_DELETE, "backoff"),
    ("the wildcard event moves every pod", fit_hints(), {FIT}, ClusterEvent("*", ActionType.ALL), "backoff"),
    ("a pending plugin's QUEUE skips the backoff", fit_hints(), set(), NODE_ADD, "active"),
])
async def test_events_move_unschedulable_pods(case: str, hints: dict[str, Any], plugins: set[str],
                                              event: ClusterEvent, expected: str) -> None:
    queue = make_queue(queueing_hints=hints)
    queue.add(pod("a"))
    qpi = await queue.pop()
    assert qpi is not None
    pending = {FIT} if not plugins else set()
    qpi.unschedulable_plugins, qpi.pending_plugins = plugins, pending
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    assert where(queue, "a") == "unschedulable"
    queue.move_all_to_active_or_backoff_queue(event, None, {"metadata": {"name": "n1"}})
    assert where(queue, "a") == expected, case


async def test_a_pod_whose_backoff_is_over_goes_straight_to_active() -> None:
    clock = FakeClock()
    queue = make_queue(clock, queueing_hints=fit_hints())
    queue.add(pod("a"))
    await fail(queue, FIT)
    clock.advance(1)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, {})
    assert where(queue, "a") == "active"


async def test_pre_check_filters_the_pods_offered_an_event() -> None:
    queue = make_queue(queueing_hints=fit_hints())
    for name in ("a", "b"):
        queue.add(pod(name))
        await fail(queue, FIT)
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, {},
                                              pre_check=lambda p: p["metadata"]["name"] == "b")
    assert (where(queue, "a"), where(queue, "b")) == ("unschedulable", "backoff")


async def test_an_update_that_could_help_moves_an_unschedulable_pod() -> None:
    hints = {"TaintToleration": [ClusterEventWithHint(ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION))]}
    queue = make_queue(queueing_hints=hints)
    queue.add(pod("a"))
    await fail(queue, "TaintToleration")
    relabelled = pod("a", labels={"x": "y"})
    queue.update(pod("a"), relabelled)
    assert where(queue, "a") == "unschedulable"
    assert queue._unschedulable["ns/a"].pod["metadata"]["labels"] == {"x": "y"}, "updated in place"
    tolerating = pod("a", labels={"x": "y"})
    tolerating["spec"]["tolerations"] = [{"operator": "Exists"}]
    queue.update(relabelled, tolerating)
    assert where(queue, "a") == "backoff"


AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}


@pytest.mark.parametrize("case, assigned_labels, expected", [
    ("an assigned pod matching a required affinity term moves the pod", {"app": "db"}, "backoff"),
    ("an assigned pod matching no term leaves it", {"app": "web"}, "unschedulable"),
])
async def test_assigned_pod_added(case: str, assigned_labels: dict[str, str], expected: str) -> None:
    any_pod_event = [ClusterEventWithHint(ClusterEvent("Pod", ActionType.ALL))]
    queue = make_queue(queueing_hints={"InterPodAffinity": any_pod_event, "Other": any_pod_event})
    queue.add(pod("a", affinity=AFFINITY))
    await fail(queue, "InterPodAffinity")
    queue.add(pod("plain"))
    await fail(queue, "Other")
    queue.assigned_pod_added(pod("db", labels=assigned_labels))
    assert where(queue, "a") == expected, case
    assert where(queue, "plain") == "unschedulable", "pods without affinity terms are not offered the event"


async def test_an_assigned_pod_scaling_down_offers_every_pod_the_event() -> None:
    event = ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN)
    hints = {FIT: [ClusterEventWithHint(event)]}
    queue = make_queue(queueing_hints=hints)
    queue.add(pod("a"))
    await fail(queue, FIT)
    queue.assigned_pod_updated(pod("big", cpu="2"), pod("big", cpu="2"))
    assert where(queue, "a") == "unschedulable", "an unchanged pod is no event"
    queue.assigned_pod_updated(pod("big", cpu="2"), pod("big", cpu="1"))
    assert where(queue, "a") == "backoff"


async def test_activate_moves_pods_to_active_now() -> None:
    queue = make_queue()
    queue.add(pod("a"))
    await fail(queue, FIT)
    queue.activate([pod("a"), pod("unknown")])
    assert where(queue, "a") == "active"


# --- in-flight events ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case, event, expected", [
    ("an event that could help during the cycle sends the pod to backoff", NODE_ADD, "backoff"),
    ("an event no rejecting plugin cares about leaves it unschedulable", NODE_TAINT, "unschedulable"),
])
async def test_events_during_the_cycle_count(case: str, event: ClusterEvent, expected: str) -> None:
    queue = make_queue(queueing_hints=fit_hints())
    queue.add(pod("a"))
    qpi = await queue.pop()
    assert qpi is not None
    queue.move_all_to_active_or_backoff_queue(event, None, {"metadata": {"name": "n1"}})
    qpi.unschedulable_plugins = {FIT}
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    assert where(queue, "a") == expected, case


async def test_events_before_a_pods_cycle_do_not_count_for_it() -> None:
    queue = make_queue(queueing_hints=fit_hints())
    queue.add(pod("a"))
    queue.add(pod("b"))
    first = await queue.pop()
    queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, {})
    second = await queue.pop()
    assert first is not None and second is not None
    queue.done(first.pod_info.uid)
    assert len(queue._events) == 0, "records older than the oldest in-flight pod are dropped"
    second.unschedulable_plugins = {FIT}
    queue.add_unschedulable_if_not_present(second, queue.scheduling_cycle)
    assert where(queue, "b") == "unschedulable"
    assert queue._in_flight == {}


async def test_an_update_of_a_pod_being_scheduled_does_not_queue_it_twice() -> None:
    any_update = [ClusterEventWithHint(ClusterEvent("Pod", ActionType.UPDATE))]
    queue = make_queue(queueing_hints={"Label": any_update})
    queue.add(pod("a"))
    qpi = await queue.pop()
    assert qpi is not None
    queue.update(pod("a"), pod("a", labels={"k": "v"}))
    assert where(queue, "a") == "nowhere"
    qpi.unschedulable_plugins = {"Label"}
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    assert where(queue, "a") == "backoff", "its own update counts as an in-flight event"


# --- deletes and flushes ------------------------------------------------------------------------------------


async def test_delete_removes_a_pod_from_whichever_queue_holds_it() -> None:
    queue = make_queue()
    for name in ("backoff", "unschedulable"):
        queue.add(pod(name))
    await fail(queue)
    await fail(queue, FIT)
    queue.add(pod("active"))
    queue.add(pod("gated", gates=("g",)))
    for name in ("active", "backoff", "unschedulable", "gated"):
        queue.delete(pod(name))
    assert queue.pending_pods() == ([], "activeQueueLength:0; backoffQueueLength:0; unschedulablePods:0")


async def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    clock = FakeClock()
    queue = make_queue(clock, queueing_hints=fit_hints())
    queue.add(pod("a"))
    queue.add(pod("gated", gates=("g",)))
    await fail(queue, FIT)
    clock.advance(300)
    queue.flush_unschedulable_pods_left_over()
    assert where(queue, "a") == "unschedulable"
    clock.advance(0.5)
    queue.flush_unschedulable_pods_left_over()
    assert (where(queue, "a"), where(queue, "gated")) == ("active", "unschedulable")


async def test_run_flushes_on_the_clock() -> None:
    clock = FakeClock()
    queue = make_queue(clock, queueing_hints=fit_hints())
    queue.add(pod("error"))
    queue.add(pod("rejected"))
    await fail(queue)
    await fail(queue, FIT)
    task = asyncio.create_task(queue.run())
    await asyncio.sleep(0)
    for _ in range(2):
        clock.advance(1)
        await asyncio.sleep(0)
    assert (where(queue, "error"), where(queue, "rejected")) == ("active", "unschedulable")
    for _ in range(301):
        clock.advance(1)
        await asyncio.sleep(0)
    assert where(queue, "rejected") == "active"
    queue.close()
    clock.advance(30)
    await asyncio.wait_for(task, 1)


async def test_close_wakes_pop() -> None:
    queue = make_queue()
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.close()
    assert await asyncio.wait_for(waiter, 1) is None


async def test_pop_waits_for_a_pod() -> None:
    queue = make_queue()
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    queue.add(pod("a"))
    qpi = await asyncio.wait_for(waiter, 1)
    assert qpi is not None and qpi.pod_info.name == "a"


# --- nominator ----------------------------------------------------------------------------------------------


def test_the_queue_nominates_pods_that_carry_a_nominated_node() -> None:
    queue = make_queue()
    queue.add(pod("a", nominated="n1"))
    queue.add(pod("b"))
    assert [info.name for info in queue.nominator.nominated_pods_for_node("n1")] == ["a"]
    queue.delete(pod("a", nominated="n1"))
    assert list(queue.nominator.nominated_pods_for_node("n1")) == []


@pytest.mark.parametrize("case, steps, expected", [
    ("an explicit node overrides the pod's own", [("add", "a", "n1", "n2")], {"n2": ["a"]}),
    ("without an explicit node the pod's status counts", [("add", "a", "n1", None)], {"n1": ["a"]}),
    ("an explicit empty name clears the nomination", [("add", "a", "n1", None), ("add", "a", "", "")], {}),
    ("a pod is nominated to one node at a time", [("add", "a", "", "n1"), ("add", "a", "", "n2")],
     {"n2": ["a"]}),
    ("an update that does not mention a node keeps the one in memory",
     [("add", "a", "", "n1"), ("update", "a", "", None)], {"n1": ["a"]}),
    ("an update naming a node moves the nomination", [("add", "a", "", "n1"), ("update", "a", "n3", None)],
     {"n3": ["a"]}),
    ("deleting forgets the pod", [("add", "a", "", "n1"), ("add", "b", "", "n1"), ("delete", "a", "", None)],
     {"n1": ["b"]}),
])
def test_nominator(case: str, steps: list[tuple[str, str, str, str | None]],
                   expected: dict[str, list[str]]) -> None:
    nominator = Nominator()
    for op, name, status_node, explicit in steps:
        p = pod(name, nominated=status_node)
        if op == "add":
            nominator.add_nominated_pod(PodInfo.of(p), explicit)
        elif op == "update":
            nominator.update_nominated_pod(pod(name), PodInfo.of(p))
        else:
            nominator.delete_nominated_pod_if_exists(p)
    got = {node: [i.name for i in nominator.nominated_pods_for_node(node)] for node in ("n1", "n2", "n3")}
    assert {node: pods for node, pods in got.items() if pods} == expected, case
    assert nominator.has_nominated_pods() == bool(expected)

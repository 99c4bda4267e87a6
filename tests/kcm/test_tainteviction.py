"""The taint-eviction controller's syncs against hand-filled caches, a recording client and a FakeClock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from minikube_py.api.taints import Taint, Toleration
from minikube_py.client import errors, resources
from minikube_py.kcm.controllers.tainteviction import (
    TaintEvictionController,
    matching_tolerations,
    min_toleration_seconds,
)
from tests.kcm.fakes import cache, context

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2024-01-01T00:00:00Z"}


class EventLog:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        assert (obj["kind"], type, reason) == ("Pod", "Normal", "TaintManagerEviction")
        self.messages.append(message)


def node(name: str = "n1", *taints: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": list(taints)}}


def pod(name: str = "web", node_name: str = "n1", *tolerations: dict[str, Any],
        conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"nodeName": node_name, "tolerations": list(tolerations)},
            "status": {"phase": "Running", "conditions": conditions or []}}


def tolerate(key: str = "node.kubernetes.io/unreachable", seconds: int | None = None) -> dict[str, Any]:
    toleration: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


@pytest.fixture()
async def harness() -> AsyncIterator[Any]:
    ctx, client, clock = context()
    events = EventLog()
    ctx.recorder = events  # type: ignore[assignment]
    tec = TaintEvictionController(ctx)

    class Harness:
        controller, recorded = tec, events

        @staticmethod
        def cache(resource: Any, *objects: dict[str, Any]) -> None:
            cache(ctx, resource, *objects)

        @staticmethod
        def deleted() -> list[str]:
            return [a.name for a in client.writes("delete")]

    Harness.client, Harness.clock = client, clock  # type: ignore[attr-defined]
    yield Harness
    tec.eviction_queue.shut_down()


async def test_a_pod_that_does_not_tolerate_the_taint_is_deleted_at_once(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1"), pod("elsewhere", "n2"))
    tec = harness.controller
    await tec.sync_node("n1")
    await tec.evict("default/web")
    status, delete = harness.client.writes()
    assert (status.verb, status.resource, status.name) == ("patch", "pods/status", "web")
    condition = status.body["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "DisruptionTarget", "True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
    assert status.options["patch_type"] == "strategic"
    assert (delete.verb, delete.name, delete.options) == ("delete", "web", {"preconditions": {"uid": "uid-web"}})
    assert harness.recorded.messages == ["Marking for deletion Pod default/web"]


async def test_a_pod_tolerating_for_a_while_is_deleted_when_its_time_is_up(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", tolerate(seconds=300), tolerate("other", seconds=30)))
    tec = harness.controller
    await tec.sync_node("n1")
    harness.clock.advance(299)
    await tec.evict("default/web")
    assert harness.deleted() == []
    harness.clock.advance(1)
    await tec.evict("default/web")
    assert harness.deleted() == ["web"]


async def test_a_pod_tolerating_for_ever_stays(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", tolerate()))
    await harness.controller.sync_node("n1")
    assert harness.controller.evictions == {}


async def test_a_zero_toleration_means_at_once(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", tolerate(seconds=0)))
    await harness.controller.sync_node("n1")
    await harness.controller.evict("default/web")
    assert harness.deleted() == ["web"]


async def test_the_taint_going_away_cancels_the_deletion(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", tolerate(seconds=300)))
    tec = harness.controller
    await tec.sync_node("n1")
    harness.cache(resources.NODES, node("n1"))  # the node is Ready again
    await tec.sync_node("n1")
    harness.clock.advance(300)
    await tec.evict("default/web")
    assert harness.deleted() == []
    assert harness.recorded.messages == ["Cancelling deletion of Pod default/web"]


async def test_a_pod_deleted_meanwhile_is_forgotten(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", tolerate(seconds=300)))
    tec = harness.controller
    await tec.sync_node("n1")
    tec.pods.indexer.delete("default/web")
    await tec.sync_pod("default/web")
    assert tec.evictions == {}


async def test_a_pod_bound_to_a_tainted_node_later_is_handled_by_its_own_sync(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    tec = harness.controller
    await tec.sync_node("n1")
    harness.cache(resources.PODS, pod("late", "n1"), pod("elsewhere", "n2"))
    await tec.sync_pod("default/late")
    await tec.sync_pod("default/elsewhere")
    assert list(tec.evictions) == ["default/late"]


async def test_an_earlier_decision_stands_when_tolerations_change(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", tolerate(seconds=300)))
    tec = harness.controller
    await tec.sync_node("n1")
    harness.clock.advance(10)
    harness.cache(resources.PODS, pod("web", "n1", tolerate(seconds=600)))
    await tec.sync_pod("default/web")
    assert tec.evictions["default/web"].fire_at - tec.evictions["default/web"].created_at == 300


async def test_an_evicted_pod_is_not_deleted_again_while_it_terminates(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", tolerate(seconds=5)))
    tec = harness.controller
    await tec.sync_node("n1")
    harness.clock.advance(5)
    await tec.evict("default/web")
    terminating = pod("web", "n1", tolerate(seconds=5))
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:35Z"
    tec._pod_changed(pod("web", "n1", tolerate(seconds=5)), terminating)
    assert len(tec.pod_queue) == 0  # the deletion starting is no news to this controller
    harness.cache(resources.NODES, node("n1", {**UNREACHABLE, "value": "again"}))
    await tec.sync_node("n1")  # the taints changed: the pod is looked at again
    harness.clock.advance(5)
    await tec.evict("default/web")
    assert harness.deleted() == ["web"]


async def test_a_pod_already_marked_is_only_deleted(harness: Any) -> None:
    marked = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
              "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": "2024-01-01T00:00:00Z"}
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1", conditions=[marked]))
    await harness.controller.sync_node("n1")
    await harness.controller.evict("default/web")
    assert [a.verb for a in harness.client.writes()] == ["delete"]


async def test_a_failed_deletion_is_retried_and_a_gone_pod_is_not(harness: Any) -> None:
    harness.cache(resources.NODES, node("n1", UNREACHABLE))
    harness.cache(resources.PODS, pod("web", "n1"), pod("gone", "n1"))
    tec = harness.controller
    await tec.sync_node("n1")
    harness.client.failures[("delete", "pods")] = errors.InternalError({"message": "etcd is down"})
    with pytest.raises(errors.InternalError):
        await tec.evict("default/web")
    assert not tec.evictions["default/web"].done  # the queue retries it with backoff
    harness.client.failures[("delete", "pods")] = errors.NotFound({"message": 'pods "gone" not found'})
    await tec.evict("default/gone")
    assert tec.evictions["default/gone"].done


def test_only_changes_that_matter_are_queued(harness: Any) -> None:
    tec = harness.controller
    no_schedule = {"key": "k", "effect": "NoSchedule"}
    tec._node_changed(node("n1"), node("n1", no_schedule))
    tec._pod_changed(pod("web"), {**pod("web"), "status": {"phase": "Succeeded"}})
    assert (len(tec.node_queue), len(tec.pod_queue)) == (0, 0)
    tec._node_changed(node("n1"), node("n1", UNREACHABLE))
    tec._pod_changed(pod("web"), pod("web", "n1", tolerate()))
    assert (len(tec.node_queue), len(tec.pod_queue)) == (1, 1)


@pytest.mark.parametrize(("tolerations", "expected"), [
    ([], None),  # not tolerated
    ([Toleration(operator="Exists")], None),  # tolerates everything, for ever
    ([Toleration("a", "Exists", effect="NoExecute", toleration_seconds=60),
      Toleration("b", "Exists", toleration_seconds=30)], 30.0),
    ([Toleration("a", "Exists", toleration_seconds=-5), Toleration("b", "Exists")], 0.0),
])
def test_how_long_a_pod_may_stay(tolerations: list[Toleration], expected: float | None) -> None:
    taints = [Taint("a", "", "NoExecute"), Taint("b", "", "NoExecute")]
    used = matching_tolerations(taints, tolerations)
    assert (None if used is None else min_toleration_seconds(used)) == expected

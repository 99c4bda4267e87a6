"""The scheduling cycle in one process with the default profile (no apiserver): where pods go over many nodes,
the cursor's rotation, and the parsed pod reused for the assumed copy."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from minikube_py.scheduler import algorithm
from minikube_py.scheduler.cache import Cache
from minikube_py.scheduler.framework import config as scheduler_config
from minikube_py.scheduler.framework import types
from minikube_py.scheduler.framework.interface import CycleState
from minikube_py.scheduler.framework.runtime import Framework, NodeScores
from minikube_py.scheduler.nominator import Nominator
from minikube_py.scheduler.queue import SchedulingQueue
from minikube_py.scheduler.scheduler import Scheduler
from minikube_py.scheduler.snapshot import Snapshot


class Listers:
    """The informer factory's listers, empty (the default plugins ask for a few at construction)."""

    def lister(self, resource: Any) -> Any:
        return self

    def list(self, namespace: str | None = None) -> list[Any]:
        return []


def node(i: int, cpu: str = "4") -> dict[str, Any]:
    name = f"node-{i:03d}"
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def pod(i: int, cpu: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": f"pod-{i}", "namespace": "default", "uid": f"uid-{i}"},
            "spec": {"containers": [{"name": "c", "image": "pause",
                                     "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}]}}


def scheduler(nodes: list[dict[str, Any]]) -> Scheduler:
    config = scheduler_config.default_configuration()
    snapshot, nominator, cache = Snapshot(), Nominator(), Cache()
    for each in nodes:
        cache.add_node(each)
    fwk = Framework(config.profiles[0], config.registry, snapshot=snapshot, informers=Listers(), nominator=nominator)
    queue = SchedulingQueue(fwk.queue_sort_less, nominator=nominator)
    return Scheduler(client=None, cache=cache, queue=queue, snapshot=snapshot, profiles={fwk.profile_name: fwk},
                     pod_lister=None)


async def schedule(sched: Scheduler, the_pod: dict[str, Any]) -> tuple[str, CycleState]:
    """One successful scheduling cycle of `the_pod`: the node it was assumed on, and the cycle's state."""
    sched.queue.add(the_pod)
    qpi = await sched.queue.pop()
    assert qpi is not None
    state = CycleState()
    state.pod_info = qpi.pod_info
    fwk = sched.profiles["default-scheduler"]
    assumed, result, status = await sched.scheduling_cycle(fwk, state, qpi, None)
    assert status.is_success() and assumed is not None
    sched.queue.done(qpi.pod_info.uid)
    return result.suggested_host, state


async def test_pods_spread_over_the_least_allocated_nodes() -> None:
    random.seed(7)
    sched = scheduler([node(i) for i in range(6)] + [node(6, cpu="1")])  # the small node is full after one pod
    placed = [(await schedule(sched, pod(i)))[0] for i in range(12)]
    assert sorted(placed) == sorted([f"node-{i:03d}" for i in range(6)] * 2)
    assert all(placed[i] != placed[j] for i in range(6) for j in range(i))  # every big node once first


async def test_with_many_nodes_filtering_stops_at_the_feasible_nodes_to_find_and_rotates() -> None:
    sched = scheduler([node(i) for i in range(400)])
    _, state = await schedule(sched, pod(0))
    assert algorithm.num_feasible_nodes_to_find(None, 400) == 188
    assert sched.cursor.next_start_node_index == 188
    await schedule(sched, pod(1))
    assert sched.cursor.next_start_node_index == 376


async def test_the_assumed_pod_reuses_the_parsed_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    sched = scheduler([node(0), node(1)])
    sched.queue.add(pod(0))
    qpi = await sched.queue.pop()
    assert qpi is not None
    parsed: list[str] = []
    of = types.PodInfo.of
    monkeypatch.setattr(types.PodInfo, "of", classmethod(lambda cls, p: parsed.append(p["metadata"]["name"]) or of(p)))
    state = CycleState()
    state.pod_info = qpi.pod_info
    assumed, result, _ = await sched.scheduling_cycle(sched.profiles["default-scheduler"], state, qpi, None)
    assert parsed == []
    assert assumed is not None and state.pod_info.pod is assumed
    assert assumed["spec"]["nodeName"] == result.suggested_host and "nodeName" not in qpi.pod["spec"]
    assert state.pod_info.requests == qpi.pod_info.requests and sched.cache.is_assumed_pod(assumed)


def test_the_host_is_the_best_scored_node_and_ties_are_broken_evenly() -> None:
    scores = NodeScores(["a", "b", "c", "d"], [50, 90, 90, 10], ["P"], [[50, 90, 90, 10]])
    random.seed(7)
    picks = Counter(algorithm.select_host(scores) for _ in range(4000))
    assert set(picks) == {"b", "c"} and abs(picks["b"] - picks["c"]) < 300
    assert algorithm.select_host(NodeScores(["x"], [0], [], [])) == "x"
    assert [(s.name, s.total_score, s.scores) for s in scores[1:3]] == [("b", 90, [("P", 90)]),
                                                                       ("c", 90, [("P", 90)])]
    assert scores[-1].name == "d"
    with pytest.raises(IndexError):
        scores[4]

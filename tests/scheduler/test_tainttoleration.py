"""TaintToleration filters NoSchedule/NoExecute taints and scores PreferNoSchedule ones as kube does."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.scheduler.framework.interface import ActionType, ClusterEvent, Code, CycleState, QueueingHint
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore
from minikube_py.scheduler.plugins.tainttoleration import TaintToleration


def case(name: str, *values: object) -> Any:
    return pytest.param(*values, id=name)


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def tol(key: str = "", operator: str = "Exists", effect: str = "", value: str = "") -> dict[str, Any]:
    entry = {"key": key, "operator": operator, "effect": effect}
    if value:
        entry["value"] = value
    return entry


def pod(*tolerations: dict[str, Any], uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "c"}], "tolerations": list(tolerations)}}


def node(name: str = "n1", taints: Any = None) -> dict[str, Any]:
    spec = {} if taints is None else {"taints": taints}
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": {"pods": "10"}}}


def run_filter(the_pod: dict[str, Any], taints: Any, *, pre_filter: bool = True) -> Any:
    """Filter's verdict on a node with `taints`, checked to be the batch form's on an untainted node and it."""
    plugin, state = TaintToleration({}, None), CycleState()  # type: ignore[arg-type]
    if pre_filter:
        assert plugin.pre_filter(state, the_pod, []) == (None, None)
    tainted = NodeInfo(node(taints=taints))
    status = plugin.filter(state, the_pod, tainted)
    batch = plugin.filter_nodes(state, the_pod, [NodeInfo(node("clean")), tainted])
    assert {i: (s.code, s.reasons) for i, s in batch.items()} == ({} if status is None else
                                                                   {1: (status.code, status.reasons)})
    return status


@pytest.mark.parametrize("the_pod, taints, reason", [
    case("an untainted node passes", pod(), None, None),
    case("an untolerated NoSchedule taint rejects", pod(), [taint("dedicated", value="gpu")],
         "node(s) had untolerated taint {dedicated: gpu}"),
    case("an untolerated NoExecute taint rejects", pod(), [taint("node.kubernetes.io/not-ready", "NoExecute")],
         "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"),
    case("a PreferNoSchedule taint never rejects", pod(), [taint("soft", "PreferNoSchedule")], None),
    case("a matching toleration passes", pod(tol("dedicated", "Equal", "NoSchedule", "gpu")),
         [taint("dedicated", value="gpu")], None),
    case("a toleration with another value does not", pod(tol("dedicated", "Equal", "NoSchedule", "db")),
         [taint("dedicated", value="gpu")], "node(s) had untolerated taint {dedicated: gpu}"),
    case("the first untolerated taint is named", pod(tol("a")), [taint("a"), taint("b"), taint("c")],
         "node(s) had untolerated taint {b: }"),
    case("a toleration of everything passes", pod(tol()), [taint("a"), taint("b", "NoExecute")], None),
    case("a malformed taint sets the node aside with the reason", pod(tol()), [{"key": "a", "effect": "Maybe"}],
         'node(s) had malformed taints: spec.taints[0].effect: Unsupported value: "Maybe": supported values: '
         '"NoSchedule", "PreferNoSchedule", "NoExecute"'),
    case("a taint list that is not a list sets the node aside", pod(), "a=b:NoSchedule",
         'node(s) had malformed taints: spec.taints: Invalid value: "a=b:NoSchedule": must be a list'),
    case("a malformed toleration tolerates nothing", pod({"key": "a", "operator": "Near"}), [taint("a")],
         "node(s) had untolerated taint {a: }"),
])
def test_filter(the_pod: dict[str, Any], taints: Any, reason: str | None) -> None:
    status = run_filter(the_pod, taints)
    if reason is None:
        assert status is None
    else:
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason])


def test_filter_works_without_pre_filter() -> None:
    assert run_filter(pod(), [taint("a")], pre_filter=False).reasons == ["node(s) had untolerated taint {a: }"]
    assert run_filter(pod(tol("a")), [taint("a")], pre_filter=False) is None


def score_nodes(the_pod: dict[str, Any], taint_lists: list[Any]) -> tuple[list[int], list[int]]:
    """(raw scores, normalized scores) over one node per taint list, node by node and in one batch."""
    plugin, state = TaintToleration({}, None), CycleState()  # type: ignore[arg-type]
    infos = [NodeInfo(node(f"n{i}", taints)) for i, taints in enumerate(taint_lists)]
    assert plugin.pre_score(state, the_pod, infos) is None
    scores = []
    for info in infos:
        score, status = plugin.score(state, the_pod, info)
        assert status is None
        scores.append(NodeScore(info.name, score))
    raw = [s.score for s in scores]
    assert plugin.score_extensions().normalize_score(state, the_pod, scores) is None
    assert plugin.score_nodes(state, the_pod, infos) == (raw, None)  # the batch forms agree with the above
    assert plugin.score_extensions().normalize_scores(state, the_pod, raw) == ([s.score for s in scores], None)
    return raw, [s.score for s in scores]


SOFT_A, SOFT_B = taint("a", "PreferNoSchedule"), taint("b", "PreferNoSchedule")


@pytest.mark.parametrize("the_pod, taint_lists, raw, normalized", [
    case("untainted nodes all score 100", pod(), [None, []], [0, 0], [100, 100]),
    case("more intolerable PreferNoSchedule taints score lower", pod(), [[], [SOFT_A], [SOFT_A, SOFT_B]],
         [0, 1, 2], [100, 50, 0]),
    case("tolerated PreferNoSchedule taints do not count", pod(tol("a", effect="PreferNoSchedule")),
         [[SOFT_A], [SOFT_B]], [0, 1], [100, 0]),
    case("a toleration without effect covers PreferNoSchedule", pod(tol("a")), [[SOFT_A], [SOFT_A, SOFT_B]],
         [0, 1], [100, 0]),
    case("a NoSchedule toleration does not cover PreferNoSchedule", pod(tol("a", effect="NoSchedule")),
         [[SOFT_A], []], [1, 0], [0, 100]),
    case("NoSchedule taints are not scored", pod(tol()), [[taint("x")], []], [0, 0], [100, 100]),
    case("three nodes normalise with truncation", pod(), [[SOFT_A], [SOFT_A, SOFT_B], [SOFT_A, SOFT_B,
                                                                                      taint("c", "PreferNoSchedule")]],
         [1, 2, 3], [67, 34, 0]),
])
def test_score(the_pod: dict[str, Any], taint_lists: list[Any], raw: list[int], normalized: list[int]) -> None:
    assert score_nodes(the_pod, taint_lists) == (raw, normalized)


def test_events_and_queueing_hints() -> None:
    node_event, pod_event = TaintToleration({}, None).events_to_register()  # type: ignore[arg-type]
    assert node_event.event == ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT)
    assert pod_event.event == ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION)
    waiting = pod()
    hint = node_event.hint
    assert hint(waiting, node(taints=[taint("a")]), node()) is QueueingHint.QUEUE, "taint removed"
    assert hint(waiting, None, node()) is QueueingHint.QUEUE, "untainted node added"
    assert hint(waiting, None, node(taints=[taint("a")])) is QueueingHint.SKIP, "tainted node added"
    assert hint(waiting, node(), node(taints=[taint("a")])) is QueueingHint.SKIP, "taint added"
    assert hint(waiting, node(taints=[{"key": 1}]), node()) is QueueingHint.QUEUE, "malformed taint fixed"
    assert pod_event.hint(waiting, waiting, pod(tol())) is QueueingHint.QUEUE
    assert pod_event.hint(waiting, pod(uid="other"), pod(tol(), uid="other")) is QueueingHint.SKIP


def test_an_updated_node_is_judged_by_its_new_taints() -> None:
    plugin, state, waiting = TaintToleration({}, None), CycleState(), pod()  # type: ignore[arg-type]
    plugin.pre_filter(state, waiting, [])
    tainted = NodeInfo(node(taints=[taint("a")]))
    assert plugin.filter(state, waiting, tainted) is not None
    assert plugin.filter(state, waiting, tainted) is not None, "a remembered parse gives the same verdict"
    assert plugin.filter(state, waiting, NodeInfo(node(taints=[taint("a", "PreferNoSchedule")]))) is None

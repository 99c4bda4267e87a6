"""The NodeAffinity plugin: nodeSelector and required terms (Filter), metadata.name narrowing (PreFilter),
preferred terms (Score), and the profile's addedAffinity, as kube's plugin behaves."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    PluginArgsError,
    PreFilterResult,
    QueueingHint,
)
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore
from minikube_py.scheduler.plugins.nodeaffinity import NodeAffinity

POD_REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED_REASON = "node(s) didn't match scheduler-enforced node affinity"


def case(name: str, *values: object) -> Any:
    return pytest.param(*values, id=name)


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def term(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    built: dict[str, Any] = {"matchExpressions": list(expressions)} if expressions else {}
    if fields:
        built["matchFields"] = fields
    return built


def names(*node_names: str) -> dict[str, Any]:
    return term(fields=[expr("metadata.name", "In", *node_names)])


def pod(node_selector: dict[str, str] | None = None, required: list[dict[str, Any]] | None = None,
        preferred: list[tuple[int, dict[str, Any]]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    affinity: dict[str, Any] = {}
    if required is not None:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": weight, "preference": preference} for weight, preference in preferred]
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u"}, "spec": spec}


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": {"allocatable": {"pods": "10"}}}


def plugin(args: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity(args or {}, None)  # type: ignore[arg-type]


def run_filter(the_pod: dict[str, Any], the_node: dict[str, Any], args: dict[str, Any] | None = None) -> Any:
    """The PreFilter status when it stops the pod, else the Filter status (None when PreFilter skips)."""
    affinity, state = plugin(args), CycleState()
    _, status = affinity.pre_filter(state, the_pod, [])
    if status is not None:
        return None if status.code == Code.SKIP else status
    return affinity.filter(state, the_pod, NodeInfo(the_node))


@pytest.mark.parametrize("the_pod, the_node, args, reason", [
    case("a pod without constraints fits", pod(), node(), None, None),
    case("nodeSelector matching fits", pod({"disk": "ssd"}), node(disk="ssd"), None, None),
    case("nodeSelector with a missing label is rejected", pod({"disk": "ssd"}), node(), None, POD_REASON),
    case("a required term matching fits", pod(required=[term(expr("zone", "In", "a", "b"))]), node(zone="b"), None,
         None),
    case("no required term matching is rejected", pod(required=[term(expr("zone", "In", "a"))]), node(zone="c"),
         None, POD_REASON),
    case("nodeSelector and affinity must both hold", pod({"disk": "ssd"}, [term(expr("zone", "In", "a"))]),
         node(zone="a"), None, POD_REASON),
    case("a malformed term never matches", pod(required=[term(expr("zone", "Near", "a"))]), node(zone="a"), None,
         POD_REASON),
    case("addedAffinity is enforced on every pod", pod(), node(zone="b"),
         {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
             "nodeSelectorTerms": [term(expr("zone", "In", "a"))]}}}, ENFORCED_REASON),
    case("addedAffinity matching lets the pod's own rules decide", pod({"disk": "ssd"}), node(zone="a"),
         {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
             "nodeSelectorTerms": [term(expr("zone", "In", "a"))]}}}, POD_REASON),
])
def test_filter(the_pod: dict[str, Any], the_node: dict[str, Any], args: dict[str, Any] | None,
                reason: str | None) -> None:
    status = run_filter(the_pod, the_node, args)
    if reason is None:
        assert status is None
    else:
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason])


def test_pre_filter_skips_pods_without_node_constraints() -> None:
    _, status = plugin().pre_filter(CycleState(), pod(preferred=[(1, term(expr("a", "In", "b")))]), [])
    assert status is not None and status.code == Code.SKIP


def test_filter_works_without_pre_filter() -> None:
    status = plugin().filter(CycleState(), pod({"disk": "ssd"}), NodeInfo(node()))
    assert status is not None and status.reasons == [POD_REASON]


@pytest.mark.parametrize("required, result, reason", [
    case("one term naming nodes narrows to them", [names("n1", "n2")], PreFilterResult({"n1", "n2"}), None),
    case("terms naming nodes are unioned", [names("n1"), names("n3")], PreFilterResult({"n1", "n3"}), None),
    case("requirements in a term are intersected",
         [term(fields=[expr("metadata.name", "In", "n1", "n2"), expr("metadata.name", "In", "n2", "n3")])],
         PreFilterResult({"n2"}), None),
    case("a term without names means any node", [names("n1"), term(expr("zone", "In", "a"))], None, None),
    case("NotIn does not narrow", [term(fields=[expr("metadata.name", "NotIn", "n1")])], None, None),
    case("conflicting names are unresolvable",
         [term(fields=[expr("metadata.name", "In", "n1"), expr("metadata.name", "In", "n2")])], None,
         "pod affinity terms conflict"),
])
def test_pre_filter_narrows_by_node_name(required: list[dict[str, Any]], result: PreFilterResult | None,
                                         reason: str | None) -> None:
    got, status = plugin().pre_filter(CycleState(), pod(required=required), [])
    assert got == result
    if reason is None:
        assert status is None
    else:
        assert status is not None and (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason])


def score_nodes(the_pod: dict[str, Any], nodes: list[dict[str, Any]],
                args: dict[str, Any] | None = None) -> tuple[list[int], list[int]]:
    affinity, state = plugin(args), CycleState()
    infos = [NodeInfo(n) for n in nodes]
    status = affinity.pre_score(state, the_pod, infos)
    assert status is None
    scores = [NodeScore(info.name, affinity.score(state, the_pod, info)[0]) for info in infos]
    raw = [s.score for s in scores]
    affinity.score_extensions().normalize_score(state, the_pod, scores)
    return raw, [s.score for s in scores]


@pytest.mark.parametrize("the_pod, nodes, args, raw, normalized", [
    case("matching preferred terms add their weights",
         pod(preferred=[(2, term(expr("zone", "In", "a"))), (8, term(expr("disk", "Exists")))]),
         [node("n1", zone="a"), node("n2", disk="x"), node("n3", zone="a", disk="x"), node("n4")], None,
         [2, 8, 10, 0], [20, 80, 100, 0]),
    case("weights normalise with truncation", pod(preferred=[(3, term(expr("zone", "In", "a"))),
                                                             (4, term(expr("zone", "In", "b")))]),
         [node("n1", zone="a"), node("n2", zone="b")], None, [3, 4], [75, 100]),
    case("addedAffinity's preferred terms count too",
         pod(preferred=[(1, term(expr("zone", "In", "a")))]), [node("n1", zone="a"), node("n2", gpu="1")],
         {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
             {"weight": 5, "preference": term(expr("gpu", "Exists"))}]}}, [1, 5], [20, 100]),
])
def test_score(the_pod: dict[str, Any], nodes: list[dict[str, Any]], args: dict[str, Any] | None, raw: list[int],
               normalized: list[int]) -> None:
    assert score_nodes(the_pod, nodes, args) == (raw, normalized)


def test_pre_score_skips_pods_without_preferences() -> None:
    status = plugin().pre_score(CycleState(), pod({"a": "b"}), [])
    assert status is not None and status.code == Code.SKIP


def test_pre_score_reports_malformed_preferred_terms_as_an_error() -> None:
    status = plugin().pre_score(CycleState(), pod(preferred=[(1, term(expr("a", "Gt", "x")))]), [])
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == [
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
        ".matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"]


@pytest.mark.parametrize("args, path, message", [
    case("addedAffinity that is not an object", {"addedAffinity": "zone=a"}, "addedAffinity",
         "must be a NodeAffinity object, not 'zone=a'"),
    case("a malformed required term", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term(expr("zone", "Near", "a"))]}}},
         "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
         ".operator", 'Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", '
                      '"Lt"'),
    case("a malformed preferred term", {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": "x", "preference": term(expr("a", "Exists"))}]}},
         "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
         "Invalid value: 'x': must be an integer"),
])
def test_invalid_args_are_refused(args: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(PluginArgsError) as raised:
        plugin(args)
    assert (raised.value.path, raised.value.message) == (path, message)


def test_events_and_queueing_hints() -> None:
    [registration] = plugin().events_to_register()
    assert registration.event == ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
    waiting = pod({"disk": "ssd"})
    assert registration.hint(waiting, None, node(disk="ssd")) is QueueingHint.QUEUE, "matching node added"
    assert registration.hint(waiting, None, node()) is QueueingHint.SKIP, "other node added"
    assert registration.hint(waiting, node(), node(disk="ssd")) is QueueingHint.QUEUE, "label added"
    assert registration.hint(waiting, node(disk="ssd"), node(disk="ssd", x="y")) is QueueingHint.SKIP, "matched before"

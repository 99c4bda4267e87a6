"""InterPodAffinity: required terms in Filter (the pod's own and existing pods' anti-affinity), preferred
terms in Score, namespace selectors, the preemption extensions, queueing hints and bad args.

Expected scores: raw = Σ weights of the pairs the node is in; normalised = int(100·(raw − min)/(max − min)).
"""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.selectors import LabelSelector
from minikube_py.client import errors, resources
from minikube_py.scheduler.framework.interface import (
    ActionType,
    Code,
    CycleState,
    PluginArgsError,
    QueueingHint,
)
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore, PodInfo
from minikube_py.scheduler.plugins.interpodaffinity import InterPodAffinity

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
AFFINITY_MISMATCH = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't match pod affinity rules")
ANTI_MISMATCH = (Code.UNSCHEDULABLE, "node(s) didn't match pod anti-affinity rules")
EXISTING_MISMATCH = (Code.UNSCHEDULABLE, "node(s) didn't satisfy existing pods anti-affinity rules")
OK = (Code.SUCCESS, "")

# --- builders -----------------------------------------------------------------------------------------------


def term(app: str, key: str = ZONE, **extra: Any) -> dict[str, Any]:
    """A PodAffinityTerm selecting app=<app>; extra: namespaces, namespaceSelector."""
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def weighted(weight: int, app: str, key: str = ZONE, **extra: Any) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": term(app, key, **extra)}


def pod(name: str, app: str = "", *, namespace: str = "default", node: str = "",
        affinity: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None,
        preferred: list[dict[str, Any]] | None = None, preferred_anti: list[dict[str, Any]] | None = None
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    pod_affinity: dict[str, Any] = {}
    if affinity or preferred:
        pod_affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity or [],
                                       "preferredDuringSchedulingIgnoredDuringExecution": preferred or []}
    if anti or preferred_anti:
        pod_affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred_anti or []}
    if pod_affinity:
        spec["affinity"] = pod_affinity
    labels = {"app": app} if app else {}
    metadata = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels}
    return {"metadata": metadata, "spec": spec}


def node(name: str, zone: str | None, *pods: dict[str, Any]) -> NodeInfo:
    labels = {HOST: name, **({ZONE: zone} if zone is not None else {})}
    info = NodeInfo({"metadata": {"name": name, "labels": labels}})
    for p in pods:
        p["spec"]["nodeName"] = name
        info.add_pod(PodInfo.of(p))
    return info


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


# --- fakes --------------------------------------------------------------------------------------------------


class FakeSnapshot:
    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes

    def list(self) -> list[NodeInfo]:
        return self.nodes

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == name), None)

    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        return [n for n in self.nodes if n.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        return [n for n in self.nodes if n.pods_with_required_anti_affinity]


class FakeLister:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.calls = 0

    def list(self, namespace: str | None = None,
             selector: LabelSelector | None = None) -> list[dict[str, Any]]:
        self.calls += 1
        return [o for o in self.objects if selector is None or selector.matches(o["metadata"].get("labels"))]

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls += 1
        for o in self.objects:
            if o["metadata"]["name"] == name:
                return o
        message = f'namespaces "{name}" not found'
        raise errors.NotFound({"code": 404, "reason": "NotFound", "message": message})


class FakeInformers:
    def __init__(self, namespaces: list[dict[str, Any]]) -> None:
        self.namespaces = FakeLister(namespaces)

    def lister(self, resource: Any) -> FakeLister:
        assert resource == resources.NAMESPACES
        return self.namespaces


class FakeHandle:
    def __init__(self, nodes: list[NodeInfo], namespaces: list[dict[str, Any]]) -> None:
        self.snapshot = FakeSnapshot(nodes)
        self.informers = FakeInformers(namespaces)


DEFAULT_NAMESPACES = [namespace("default", team="a"), namespace("other", team="b")]


def plugin(nodes: list[NodeInfo], args: dict[str, Any] | None = None) -> InterPodAffinity:
    return InterPodAffinity(args or {}, FakeHandle(nodes, DEFAULT_NAMESPACES))


def run_filter(nodes: list[NodeInfo], incoming: dict[str, Any]) -> dict[str, tuple[Code, str]]:
    pl, state = plugin(nodes), CycleState()
    _, status = pl.pre_filter(state, incoming, nodes)
    assert status is None, status
    verdicts = {}
    for info in nodes:
        result = pl.filter(state, incoming, info)
        verdicts[info.name] = OK if result is None else (result.code, result.message())
    return verdicts


def run_score(nodes: list[NodeInfo], incoming: dict[str, Any], args: dict[str, Any] | None = None
              ) -> tuple[dict[str, int], dict[str, int]]:
    """(raw, normalised) scores with every node feasible; PreScore must not skip."""
    pl, state = plugin(nodes, args), CycleState()
    status = pl.pre_score(state, incoming, nodes)
    assert status is None, status
    scores = [NodeScore(info.name, pl.score(state, incoming, info)[0]) for info in nodes]
    raw = {s.name: s.score for s in scores}
    pl.normalize_score(state, incoming, scores)
    return raw, {s.name: s.score for s in scores}


# --- Filter -------------------------------------------------------------------------------------------------

FILTER_CASES = [
    ("required affinity admits only nodes in a zone with a matching pod",
     lambda: [node("n1", "a", pod("db", "db")), node("n2", "a"), node("n3", "b")],
     pod("new", "web", affinity=[term("db")]), {"n1": OK, "n2": OK, "n3": AFFINITY_MISMATCH}),
    ("required affinity refuses a node without the topology key",
     lambda: [node("n1", "a", pod("db", "db")), node("n2", None)],
     pod("new", "web", affinity=[term("db")]), {"n1": OK, "n2": AFFINITY_MISMATCH}),
    ("the first pod of a group with affinity to itself may go anywhere with the key",
     lambda: [node("n1", "a"), node("n2", None)],
     pod("new", "web", affinity=[term("web")]), {"n1": OK, "n2": AFFINITY_MISMATCH}),
    ("with no matching pod and no self-match the pod goes nowhere",
     lambda: [node("n1", "a"), node("n2", "b")],
     pod("new", "web", affinity=[term("db")]), {"n1": AFFINITY_MISMATCH, "n2": AFFINITY_MISMATCH}),
    ("a single pod must satisfy all affinity terms",
     lambda: [node("n1", "a", pod("db", "db")), node("n2", "b", pod("cache", "cache"))],
     pod("new", "web", affinity=[term("db"), term("cache", HOST)]),
     {"n1": AFFINITY_MISMATCH, "n2": AFFINITY_MISMATCH}),
    ("affinity only sees the term's namespaces",
     lambda: [node("n1", "a", pod("db", "db", namespace="other")), node("n2", "b", pod("db2", "db"))],
     pod("new", "web", affinity=[term("db", namespaces=["other"])]), {"n1": OK, "n2": AFFINITY_MISMATCH}),
    ("a namespaceSelector is resolved through the namespace lister",
     lambda: [node("n1", "a", pod("db", "db", namespace="other")), node("n2", "b", pod("db2", "db"))],
     pod("new", "web", affinity=[term("db", namespaceSelector={"matchLabels": {"team": "b"}})]),
     {"n1": OK, "n2": AFFINITY_MISMATCH}),
    ("an empty namespaceSelector selects every namespace",
     lambda: [node("n1", "a", pod("db", "db", namespace="elsewhere")), node("n2", "b")],
     pod("new", "web", affinity=[term("db", namespaceSelector={})]), {"n1": OK, "n2": AFFINITY_MISMATCH}),
    ("required anti-affinity refuses the node of a matching pod",
     lambda: [node("n1", "a", pod("web1", "web")), node("n2", "a")],
     pod("new", "web", anti=[term("web", HOST)]), {"n1": ANTI_MISMATCH, "n2": OK}),
    ("zone anti-affinity refuses the whole zone",
     lambda: [node("n1", "a", pod("web1", "web")), node("n2", "a"), node("n3", "b"), node("n4", None)],
     pod("new", "web", anti=[term("web")]), {"n1": ANTI_MISMATCH, "n2": ANTI_MISMATCH, "n3": OK, "n4": OK}),
    ("an existing pod's anti-affinity keeps matching pods out of its zone",
     lambda: [node("n1", "a", pod("lonely", "db", anti=[term("web")])), node("n2", "a"), node("n3", "b")],
     pod("new", "web"), {"n1": EXISTING_MISMATCH, "n2": EXISTING_MISMATCH, "n3": OK}),
    ("an existing pod's anti-affinity with a namespaceSelector uses the incoming pod's namespace labels",
     lambda: [node("n1", "a", pod("lonely", "db", namespace="other",
                                  anti=[term("web", HOST,
                                             namespaceSelector={"matchLabels": {"team": "a"}})])),
              node("n2", "a")],
     pod("new", "web"), {"n1": EXISTING_MISMATCH, "n2": OK}),
    ("affinity is checked before anti-affinity",
     lambda: [node("n1", "a", pod("web1", "web")), node("n2", "b")],
     pod("new", "web", affinity=[term("web")], anti=[term("web", HOST)]), {"n1": ANTI_MISMATCH,
                                                                         "n2": AFFINITY_MISMATCH}),
]


@pytest.mark.parametrize("nodes, incoming, expected", [c[1:] for c in FILTER_CASES],
                         ids=[c[0] for c in FILTER_CASES])
def test_filter(nodes: Any, incoming: dict[str, Any], expected: dict[str, tuple[Code, str]]) -> None:
    assert run_filter(nodes(), incoming) == expected


SKIP_CASES = [
    ("a pod without terms in a cluster without required anti-affinity",
     lambda: [node("n1", "a", pod("p", "web", preferred=[weighted(1, "db")]))], pod("new", "web")),
    ("a pod without terms that no existing anti-affinity matches",
     lambda: [node("n1", "a", pod("p", "db", anti=[term("cache")]))], pod("new", "web")),
    ("a pod with only preferred terms", lambda: [node("n1", "a")],
     pod("new", "web", preferred=[weighted(5, "db")])),
]


@pytest.mark.parametrize("nodes, incoming", [c[1:] for c in SKIP_CASES], ids=[c[0] for c in SKIP_CASES])
def test_pre_filter_skips(nodes: Any, incoming: dict[str, Any]) -> None:
    built = nodes()
    _, status = plugin(built).pre_filter(CycleState(), incoming, built)
    assert status is not None and status.code == Code.SKIP


def test_skipping_pods_do_not_touch_the_namespace_lister() -> None:
    nodes = [node("n1", "a")]
    handle = FakeHandle(nodes, DEFAULT_NAMESPACES)
    _, status = InterPodAffinity({}, handle).pre_filter(CycleState(), pod("new", "web"), nodes)
    assert status is not None and status.code == Code.SKIP and handle.informers.namespaces.calls == 0


def test_an_unparsable_term_makes_the_pod_unresolvable() -> None:
    nodes = [node("n1", "a")]
    bad = {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}, "topologyKey": ZONE}
    _, status = plugin(nodes).pre_filter(CycleState(), pod("new", "web", affinity=[bad]), nodes)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().startswith("parsing pod: ")


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = plugin([]).filter(CycleState(), pod("new"), node("n1", "a"))
    assert status is not None and status.code == Code.ERROR


# --- PreFilter extensions -----------------------------------------------------------------------------------


def test_remove_pod_and_add_pod_update_anti_affinity_counts_on_a_clone() -> None:
    victim = pod("web1", "web")
    nodes = [node("n1", "a", victim), node("n2", "b")]
    pl, state, incoming = plugin(nodes), CycleState(), pod("new", "web", anti=[term("web")])
    pl.pre_filter(state, incoming, nodes)
    what_if = state.clone()
    assert pl.remove_pod(what_if, incoming, PodInfo.of(victim), nodes[0]) is None
    assert pl.filter(what_if, incoming, nodes[0]) is None
    assert pl.filter(state, incoming, nodes[0]).code == Code.UNSCHEDULABLE  # the original is untouched
    assert pl.add_pod(what_if, incoming, PodInfo.of(pod("web2", "web", node="n2")), nodes[1]) is None
    assert pl.filter(what_if, incoming, nodes[1]).code == Code.UNSCHEDULABLE


def test_removing_an_existing_pod_with_anti_affinity_frees_its_zone() -> None:
    lonely = pod("lonely", "db", anti=[term("web")])
    nodes = [node("n1", "a", lonely), node("n2", "b")]
    pl, state, incoming = plugin(nodes), CycleState(), pod("new", "web")
    pl.pre_filter(state, incoming, nodes)
    assert pl.filter(state, incoming, nodes[0]).reasons == [EXISTING_MISMATCH[1]]
    pl.remove_pod(state, incoming, PodInfo.of(lonely), nodes[0])
    assert pl.filter(state, incoming, nodes[0]) is None


def test_adding_a_matching_pod_satisfies_affinity() -> None:
    nodes = [node("n1", "a"), node("n2", "b", pod("other", "cache"))]
    pl, state, incoming = plugin(nodes), CycleState(), pod("new", "web", affinity=[term("db")])
    pl.pre_filter(state, incoming, nodes)
    assert pl.filter(state, incoming, nodes[0]).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    pl.add_pod(state, incoming, PodInfo.of(pod("db", "db", node="n1")), nodes[0])
    assert pl.filter(state, incoming, nodes[0]) is None
    assert pl.filter(state, incoming, nodes[1]).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --- Score --------------------------------------------------------------------------------------------------

SCORE_CASES = [
    ("preferred affinity favours the zone of a matching pod",
     lambda: [node("n1", "a", pod("db", "db")), node("n2", "a"), node("n3", "b")],
     pod("new", "web", preferred=[weighted(10, "db")]), {},
     {"n1": 10, "n2": 10, "n3": 0}, {"n1": 100, "n2": 100, "n3": 0}),
    ("preferred anti-affinity disfavours the node of a matching pod",
     lambda: [node("n1", "a", pod("web1", "web")), node("n2", "a"), node("n3", "b")],
     pod("new", "web", preferred_anti=[weighted(5, "web", HOST)]), {},
     {"n1": -5, "n2": 0, "n3": 0}, {"n1": 0, "n2": 100, "n3": 100}),
    # n1: 6 - 10 = -4, n2: 6, n3: 0 → min -4, max 6: 0, 100, int(100 * 4 / 10) = 40
    ("affinity and anti-affinity weights add up per node",
     lambda: [node("n1", "a", pod("web1", "web")), node("n2", "a", pod("db", "db")), node("n3", "b")],
     pod("new", "web", preferred=[weighted(6, "db")], preferred_anti=[weighted(10, "web", HOST)]), {},
     {"n1": -4, "n2": 6, "n3": 0}, {"n1": 0, "n2": 100, "n3": 40}),
    ("an existing pod's required affinity to the pod attracts it with hardPodAffinityWeight",
     lambda: [node("n1", "a"), node("n2", "b", pod("db", "db", affinity=[term("web")]))],
     pod("new", "web"), {"hardPodAffinityWeight": 7}, {"n1": 0, "n2": 7}, {"n1": 0, "n2": 100}),
    # 20 for the zone of an existing pod preferring web pods, -3 for the node of one that avoids them
    ("existing pods' preferred terms count too",
     lambda: [node("n1", "a", pod("fan", "db", preferred=[weighted(20, "web")])), node("n2", "a"),
              node("n3", "b", pod("hater", "db", preferred_anti=[weighted(3, "web", HOST)])),
              node("n4", "b")],
     pod("new", "web"), {}, {"n1": 20, "n2": 20, "n3": -3, "n4": 0},
     {"n1": 100, "n2": 100, "n3": 0, "n4": 13}),
    ("existing pods' preferred terms still count for a pod with preferred terms when told to ignore them",
     lambda: [node("n1", "a", pod("fan", "db", preferred=[weighted(20, "web")])),
              node("n2", "b", pod("c", "c"))],
     pod("new", "web", preferred=[weighted(5, "c")]), {"ignorePreferredTermsOfExistingPods": True},
     {"n1": 20, "n2": 5}, {"n1": 100, "n2": 0}),
]


@pytest.mark.parametrize("nodes, incoming, args, raw, normalised", [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
def test_score(nodes: Any, incoming: dict[str, Any], args: dict[str, Any], raw: dict[str, int],
               normalised: dict[str, int]) -> None:
    assert run_score(nodes(), incoming, args) == (raw, normalised)


PRE_SCORE_SKIP_CASES = [
    ("no pod has affinity terms and the pod has none", lambda: [node("n1", "a", pod("p", "web"))],
     pod("new", "web"), {}),
    ("hardPodAffinityWeight 0 silences existing required affinity",
     lambda: [node("n1", "a", pod("db", "db", affinity=[term("web")]))], pod("new", "web"),
     {"hardPodAffinityWeight": 0}),
    ("ignorePreferredTermsOfExistingPods with a pod without preferred terms",
     lambda: [node("n1", "a", pod("fan", "db", preferred=[weighted(20, "web")]))], pod("new", "web"),
     {"ignorePreferredTermsOfExistingPods": True}),
    ("preferred terms that match nothing", lambda: [node("n1", "a", pod("p", "web"))],
     pod("new", "web", preferred=[weighted(3, "db")]), {}),
]


@pytest.mark.parametrize("nodes, incoming, args", [c[1:] for c in PRE_SCORE_SKIP_CASES],
                         ids=[c[0] for c in PRE_SCORE_SKIP_CASES])
def test_pre_score_skips(nodes: Any, incoming: dict[str, Any], args: dict[str, Any]) -> None:
    built = nodes()
    status = plugin(built, args).pre_score(CycleState(), incoming, built)
    assert status is not None and status.code == Code.SKIP


def test_equal_raw_scores_normalise_to_zero() -> None:
    nodes = [node("n1", "a", pod("db", "db")), node("n2", "a")]
    assert run_score(nodes, pod("new", "web", preferred=[weighted(4, "db")]))[1] == {"n1": 0, "n2": 0}


# --- queueing hints -----------------------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = {e.event.resource: e.event.action for e in plugin([]).events_to_register()}
    assert events["Pod"] == ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    assert events["Node"] == ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT


TARGET = pod("target", "web", affinity=[term("db")], anti=[term("web", HOST)])
POD_HINT_CASES = [
    ("an assigned pod matching the affinity was added", None, pod("db", "db", node="n1"), QueueingHint.QUEUE),
    ("an unassigned matching pod was added", None, pod("db", "db"), QueueingHint.SKIP),
    ("an assigned unrelated pod was added", None, pod("x", "cache", node="n1"), QueueingHint.SKIP),
    ("a pod the anti-affinity repels was deleted", pod("w", "web", node="n1"), None, QueueingHint.QUEUE),
    ("a pod whose own anti-affinity repelled the target was deleted",
     pod("x", "cache", node="n1", anti=[term("web")]), None, QueueingHint.QUEUE),
    ("an unrelated pod was deleted", pod("x", "cache", node="n1"), None, QueueingHint.SKIP),
    ("an assigned pod's labels now match the affinity", pod("x", "cache", node="n1"),
     pod("x", "db", node="n1"),
     QueueingHint.QUEUE),
    ("an assigned pod's labels stopped matching the anti-affinity", pod("x", "web", node="n1"),
     pod("x", "cache", node="n1"), QueueingHint.QUEUE),
]


@pytest.mark.parametrize("old, new, expected", [c[1:] for c in POD_HINT_CASES],
                         ids=[c[0] for c in POD_HINT_CASES])
def test_pod_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    assert plugin([]).is_schedulable_after_pod_change(TARGET, old, new) == expected


NODE_HINT_CASES = [
    ("a node with the affinity topology key was added", None, {"metadata": {"labels": {ZONE: "a"}}},
     QueueingHint.QUEUE),
    ("a node without the affinity topology key was added", None, {"metadata": {"labels": {}}},
     QueueingHint.SKIP),
    ("a node moved zones", {"metadata": {"labels": {ZONE: "a"}}}, {"metadata": {"labels": {ZONE: "b"}}},
     QueueingHint.QUEUE),
    ("a node lost the anti-affinity topology key", {"metadata": {"labels": {HOST: "n"}}},
     {"metadata": {"labels": {}}}, QueueingHint.QUEUE),
    ("an unrelated label changed", {"metadata": {"labels": {ZONE: "a"}}},
     {"metadata": {"labels": {ZONE: "a", "x": "y"}}}, QueueingHint.SKIP),
]


@pytest.mark.parametrize("old, new, expected", [c[1:] for c in NODE_HINT_CASES],
                         ids=[c[0] for c in NODE_HINT_CASES])
def test_node_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    assert plugin([]).is_schedulable_after_node_change(TARGET, old, new) == expected


def test_a_new_node_may_help_a_pod_refused_only_by_existing_anti_affinity() -> None:
    hint = plugin([]).is_schedulable_after_node_change(pod("new", "web"), None, {"metadata": {"labels": {}}})
    assert hint == QueueingHint.QUEUE


# --- args ---------------------------------------------------------------------------------------------------

BAD_ARGS = [
    ("a weight above 100", {"hardPodAffinityWeight": 101}, "hardPodAffinityWeight",
     "Invalid value: 101: not in valid range [0, 100]"),
    ("a negative weight", {"hardPodAffinityWeight": -1}, "hardPodAffinityWeight",
     "Invalid value: -1: not in valid range [0, 100]"),
    ("a weight that is not a number", {"hardPodAffinityWeight": "high"}, "hardPodAffinityWeight",
     'Invalid value: "high": not in valid range [0, 100]'),
    ("an ignore flag that is not a boolean", {"ignorePreferredTermsOfExistingPods": "yes"},
     "ignorePreferredTermsOfExistingPods", "Invalid value: 'yes': must be a boolean"),
]


@pytest.mark.parametrize("args, path, message", [c[1:] for c in BAD_ARGS], ids=[c[0] for c in BAD_ARGS])
def test_bad_args_are_refused(args: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(PluginArgsError) as caught:
        InterPodAffinity(args, FakeHandle([], []))
    assert (caught.value.path, caught.value.message) == (path, message)


def test_args_default() -> None:
    pl = InterPodAffinity({}, FakeHandle([], []))
    assert (pl.hard_pod_affinity_weight, pl.ignore_preferred_terms_of_existing_pods) == (1, False)

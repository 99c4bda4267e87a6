"""PodTopologySpread: hard constraints in Filter, soft ones in Score, system defaulting, the preemption
extensions, queueing hints and bad args.

Expected scores are worked out by hand from kube's formulas: raw = Σ count·log(domains + 2) + (maxSkew − 1),
rounded; normalised = 100·(max + min − raw) // max.
"""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.selectors import LabelSelector
from minikube_py.client import errors, resources
from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    PluginArgsError,
    QueueingHint,
)
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore, PodInfo
from minikube_py.scheduler.plugins.podtopologyspread import PodTopologySpread
from minikube_py.scheduler.plugins.podtopologyspread.common import default_selector
from minikube_py.scheduler.plugins.podtopologyspread.filtering import CriticalPaths

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
MISMATCH = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
WEB = {"matchLabels": {"app": "web"}}

# --- builders -----------------------------------------------------------------------------------------------


def pod(name: str, labels: dict[str, str] | None = None, *, namespace: str = "default", node: str = "",
        spread: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """extra: node_selector, tolerations, owner (kind, name), deleting."""
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    if spread:
        spec["topologySpreadConstraints"] = spread
    if "node_selector" in extra:
        spec["nodeSelector"] = extra["node_selector"]
    if "tolerations" in extra:
        spec["tolerations"] = extra["tolerations"]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                                "labels": labels or {}}
    if "owner" in extra:
        kind, owner_name = extra["owner"]
        api_version = "v1" if kind == "ReplicationController" else "apps/v1"
        metadata["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": owner_name,
                                        "uid": "owner", "controller": True}]
    if extra.get("deleting"):
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": spec}


def web(name: str, **extra: Any) -> dict[str, Any]:
    return pod(name, {"app": "web"}, **extra)


def constraint(key: str = ZONE, max_skew: int = 1, when: str = "DoNotSchedule",
               selector: dict[str, Any] | None = WEB, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector,
            **extra}


def node(name: str, zone: str | None = None, *pods: dict[str, Any],
         taints: list[dict[str, Any]] | None = None) -> NodeInfo:
    labels = {HOST: name}
    if zone is not None:
        labels[ZONE] = zone
    info = NodeInfo({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or []}})
    for p in pods:
        p["spec"]["nodeName"] = name
        info.add_pod(PodInfo.of(p))
    return info


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

    def list(self, namespace: str | None = None,
             selector: LabelSelector | None = None) -> list[dict[str, Any]]:
        return [o for o in self.objects if namespace in (None, o["metadata"].get("namespace"))
                and (selector is None or selector.matches(o["metadata"].get("labels")))]

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        for o in self.list(namespace):
            if o["metadata"]["name"] == name:
                return o
        raise errors.NotFound({"code": 404, "reason": "NotFound", "message": f'"{name}" not found'})


class FakeInformers:
    def __init__(self, objects: dict[Any, list[dict[str, Any]]] | None = None) -> None:
        self.objects = objects or {}
        self.requested: list[Any] = []

    def lister(self, resource: Any) -> FakeLister:
        self.requested.append(resource)
        return FakeLister(self.objects.get(resource, []))


class FakeHandle:
    def __init__(self, nodes: list[NodeInfo], objects: dict[Any, list[dict[str, Any]]] | None = None) -> None:
        self.snapshot = FakeSnapshot(nodes)
        self.informers = FakeInformers(objects)


def plugin(nodes: list[NodeInfo], args: dict[str, Any] | None = None,
           objects: dict[Any, list[dict[str, Any]]] | None = None) -> PodTopologySpread:
    return PodTopologySpread(args or {}, FakeHandle(nodes, objects))


def run_filter(nodes: list[NodeInfo], incoming: dict[str, Any], **kwargs: Any) -> dict[str, tuple[Code, str]]:
    """Each node's verdict as (code, message); PreFilter must not skip."""
    pl, state = plugin(nodes, **kwargs), CycleState()
    _, status = pl.pre_filter(state, incoming, nodes)
    assert status is None, status
    verdicts = {}
    for info in nodes:
        result = pl.filter(state, incoming, info)
        verdicts[info.name] = (Code.SUCCESS, "") if result is None else (result.code, result.message())
    return verdicts


def run_score(nodes: list[NodeInfo], incoming: dict[str, Any], **kwargs: Any) -> dict[str, int]:
    """Normalised scores over all nodes as feasible; PreScore must not skip."""
    pl, state = plugin(nodes, **kwargs), CycleState()
    status = pl.pre_score(state, incoming, nodes)
    assert status is None, status
    scores = [NodeScore(info.name, pl.score(state, incoming, info)[0]) for info in nodes]
    pl.normalize_score(state, incoming, scores)
    return {s.name: s.score for s in scores}


OK = (Code.SUCCESS, "")
SKEWED = (Code.UNSCHEDULABLE, MISMATCH)
UNLABELLED = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MISSING_LABEL)
TAINT = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}

# --- Filter -------------------------------------------------------------------------------------------------

FILTER_CASES = [
    ("a zone with more matching pods than the minimum plus maxSkew is refused",
     lambda: [node("n1", "a", web("p1")), node("n2", "a", web("p2")), node("n3", "b", web("p3")),
              node("n4", "b")],
     web("new", spread=[constraint()]), {}, {"n1": SKEWED, "n2": SKEWED, "n3": OK, "n4": OK}),
    ("a node without the topology key is unresolvable",
     lambda: [node("n1", "a"), node("n2", None)],
     web("new", spread=[constraint()]), {}, {"n1": OK, "n2": UNLABELLED}),
    ("a pod its own selector does not match does not count itself",
     lambda: [node("n1", "a", web("p1"), web("p2")), node("n2", "b", web("p3"))],
     pod("new", {"app": "other"}, spread=[constraint()]), {}, {"n1": OK, "n2": OK}),
    ("pods of other namespaces and terminating pods are not counted",
     lambda: [node("n1", "a", web("p1", namespace="other"), web("p2", deleting=True)), node("n2", "b")],
     web("new", spread=[constraint()]), {}, {"n1": OK, "n2": OK}),
    ("fewer domains than minDomains make the global minimum zero",
     lambda: [node("n1", "a", web("p1")), node("n2", "b", web("p2"))],
     web("new", spread=[constraint(minDomains=3)]), {}, {"n1": SKEWED, "n2": SKEWED}),
    ("enough domains for minDomains keep the real minimum",
     lambda: [node("n1", "a", web("p1")), node("n2", "b", web("p2"))],
     web("new", spread=[constraint(minDomains=2)]), {}, {"n1": OK, "n2": OK}),
    ("a hostname constraint counts each node as its own domain",
     lambda: [node("n1", "a", web("p1"), web("p2")), node("n2", "a", web("p3")), node("n3", "a")],
     web("new", spread=[constraint(HOST)]), {}, {"n1": SKEWED, "n2": SKEWED, "n3": OK}),
    ("with nodeAffinityPolicy Honor, domains the pod cannot reach do not set the minimum",
     lambda: [node("n1", "a", web("p1")), node("n2", "b")],
     web("new", spread=[constraint()], node_selector={ZONE: "a"}), {}, {"n1": OK, "n2": OK}),
    ("with nodeAffinityPolicy Ignore, unreachable domains still count",
     lambda: [node("n1", "a", web("p1")), node("n2", "b")],
     web("new", spread=[constraint(nodeAffinityPolicy="Ignore")], node_selector={ZONE: "a"}), {},
     {"n1": SKEWED, "n2": OK}),
    ("with nodeTaintsPolicy Honor, a domain behind an untolerated taint does not count",
     lambda: [node("n1", "a", web("p1")), node("n2", "b", taints=[TAINT])],
     web("new", spread=[constraint(nodeTaintsPolicy="Honor")]), {}, {"n1": OK, "n2": OK}),
    ("with nodeTaintsPolicy Honor, a tolerated taint keeps the domain",
     lambda: [node("n1", "a", web("p1")), node("n2", "b", taints=[TAINT])],
     web("new", spread=[constraint(nodeTaintsPolicy="Honor")], tolerations=[{"key": "dedicated",
                                                                          "operator": "Exists"}]), {},
     {"n1": SKEWED, "n2": OK}),
    ("by default (Ignore) a tainted node's domain counts",
     lambda: [node("n1", "a", web("p1")), node("n2", "b", taints=[TAINT])],
     web("new", spread=[constraint()]), {}, {"n1": SKEWED, "n2": OK}),
    ("matchLabelKeys narrow the selector to pods with the same label values",
     lambda: [node("n1", "a", pod("p1", {"app": "web", "rev": "1"}), pod("p2", {"app": "web", "rev": "1"})),
              node("n2", "b")],
     pod("new", {"app": "web", "rev": "2"}, spread=[constraint(matchLabelKeys=["rev"])]), {},
     {"n1": OK, "n2": OK}),
    ("every constraint must hold",
     lambda: [node("n1", "a", web("p1")), node("n2", "a"), node("n3", "b", web("p2")),
              node("n4", "b", web("p3"))],
     web("new", spread=[constraint(), constraint(HOST)]), {},
     {"n1": SKEWED, "n2": OK, "n3": SKEWED, "n4": SKEWED}),
    ("List defaulting applies hard default constraints with the Service's selector",
     lambda: [node("n1", "a", web("p1")), node("n2", "b")],
     web("new"), {"args": {"defaultingType": "List", "defaultConstraints": [
         {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
         "objects": {resources.SERVICES: [{"metadata": {"name": "svc", "namespace": "default"},
                                           "spec": {"selector": {"app": "web"}}}]}},
     {"n1": SKEWED, "n2": OK}),
]


@pytest.mark.parametrize("nodes, incoming, kwargs, expected",
                         [case[1:] for case in FILTER_CASES], ids=[case[0] for case in FILTER_CASES])
def test_filter(nodes: Any, incoming: dict[str, Any], kwargs: dict[str, Any],
                expected: dict[str, tuple[Code, str]]) -> None:
    assert run_filter(nodes(), incoming, **kwargs) == expected


SKIP_CASES = [
    ("a pod without constraints under system defaulting", pod("new", {"app": "web"}), {}),
    ("a pod with only ScheduleAnyway constraints",
     web("new", spread=[constraint(when="ScheduleAnyway")]), {}),
    ("a pod nothing selects under hard List defaults", web("new"),
     {"defaultingType": "List", "defaultConstraints": [
         {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}),
]


@pytest.mark.parametrize("incoming, args", [c[1:] for c in SKIP_CASES], ids=[c[0] for c in SKIP_CASES])
def test_pre_filter_skips(incoming: dict[str, Any], args: dict[str, Any]) -> None:
    nodes = [node("n1", "a")]
    _, status = plugin(nodes, args).pre_filter(CycleState(), incoming, nodes)
    assert status is not None and status.code == Code.SKIP


def test_system_defaulting_reads_no_lister_in_pre_filter() -> None:
    nodes = [node("n1", "a")]
    pl = plugin(nodes)
    pl.constraints._listers = {}  # any lister access would raise KeyError
    _, status = pl.pre_filter(CycleState(), web("new", owner=("ReplicaSet", "rs")), nodes)
    assert status is not None and status.code == Code.SKIP


def test_an_invalid_selector_is_an_error_not_a_crash() -> None:
    nodes = [node("n1", "a")]
    bad = constraint(selector={"matchExpressions": [{"key": "app", "operator": "Near"}]})
    _, status = plugin(nodes).pre_filter(CycleState(), web("new", spread=[bad]), nodes)
    assert status is not None and status.code == Code.ERROR
    assert "get constraints from pod" in status.message() and "Near" in status.message()


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = plugin([]).filter(CycleState(), web("new"), node("n1", "a"))
    assert status is not None and status.code == Code.ERROR


# --- PreFilter extensions -----------------------------------------------------------------------------------


def test_remove_pod_and_add_pod_update_the_counts_of_a_cloned_state() -> None:
    victim = web("p1")
    nodes = [node("n1", "a", victim, web("p2")), node("n2", "b", web("p3"))]
    pl, state, incoming = plugin(nodes), CycleState(), web("new", spread=[constraint()])
    pl.pre_filter(state, incoming, nodes)
    assert pl.filter(state, incoming, nodes[0]).code == Code.UNSCHEDULABLE

    what_if = state.clone()
    assert pl.remove_pod(what_if, incoming, PodInfo.of(victim), nodes[0]) is None
    assert pl.filter(what_if, incoming, nodes[0]) is None
    assert pl.filter(state, incoming, nodes[0]).code == Code.UNSCHEDULABLE  # the original is untouched

    assert pl.add_pod(what_if, incoming, PodInfo.of(web("p4", node="n2")), nodes[1]) is None
    assert pl.filter(what_if, incoming, nodes[1]).code == Code.UNSCHEDULABLE


def test_add_pod_ignores_pods_of_other_namespaces_and_unmatched_labels() -> None:
    nodes = [node("n1", "a", web("p1")), node("n2", "b")]
    pl, state, incoming = plugin(nodes), CycleState(), web("new", spread=[constraint()])
    pl.pre_filter(state, incoming, nodes)
    pl.add_pod(state, incoming, PodInfo.of(web("x", namespace="other")), nodes[1])
    pl.add_pod(state, incoming, PodInfo.of(pod("y", {"app": "db"})), nodes[1])
    assert pl.filter(state, incoming, nodes[0]).code == Code.UNSCHEDULABLE
    assert pl.filter(state, incoming, nodes[1]) is None


def test_critical_paths_keep_the_minimum_through_updates() -> None:
    paths = CriticalPaths()
    for value, count in [("a", 3), ("b", 1), ("c", 2)]:
        paths.update(value, count)
    assert (paths.value0, paths.count0) == ("b", 1)
    paths.update("b", 4)
    assert (paths.value0, paths.count0) == ("c", 2)
    paths.update("a", 0)
    assert (paths.value0, paths.count0) == ("a", 0)


# --- Score --------------------------------------------------------------------------------------------------

OWNED_BY_RS = {resources.REPLICA_SETS: [{"metadata": {"name": "rs", "namespace": "default"},
                                         "spec": {"selector": WEB}}]}
SCORE_CASES = [
    # zone weight log(2+2)=1.386: n1,n2 raw round(2*1.386)=3, n3 raw 1 → 100*(3+1-3)//3=33, 100*3//3=100
    ("a soft zone constraint prefers the emptier zone",
     lambda: [node("n1", "a", web("p1")), node("n2", "a", web("p2")), node("n3", "b", web("p3"))],
     web("new", spread=[constraint(when="ScheduleAnyway")]), {}, {"n1": 33, "n2": 33, "n3": 100}),
    # hostname weight log(3+2)=1.609: raw 0, 2, 3 → 100, 33, 0
    ("a soft hostname constraint prefers the emptier node",
     lambda: [node("n1", "a"), node("n2", "a", web("p1")), node("n3", "a", web("p2"), web("p3"))],
     web("new", spread=[constraint(HOST, when="ScheduleAnyway")]), {}, {"n1": 100, "n2": 33, "n3": 0}),
    # maxSkew 3 adds 2 to every raw score; weight log 4: raw 2, round(3.39)=3 → 100, 100*2//3=66
    ("a larger maxSkew flattens the differences",
     lambda: [node("n1", "a"), node("n2", "a", web("p1"))],
     web("new", spread=[constraint(HOST, max_skew=3, when="ScheduleAnyway")]), {}, {"n1": 100, "n2": 66}),
    # only zone "a" is a domain (n2 is ignored): weight log 3, raw 1 → 100; ignored → 0
    ("a node without the pod's own topology key is ignored",
     lambda: [node("n1", "a", web("p1")), node("n2", None)],
     web("new", spread=[constraint(when="ScheduleAnyway")]), {}, {"n1": 100, "n2": 0}),
    ("no matching pods anywhere gives every node 100",
     lambda: [node("n1", "a"), node("n2", "b")],
     web("new", spread=[constraint(when="ScheduleAnyway")]), {}, {"n1": 100, "n2": 100}),
    # hostname maxSkew 3 (log 5=1.609), zone maxSkew 5 (2 zones: log 4=1.386)
    # n1: 1.609+2 + 1.386+4 = 8.996 → 9; n2: 2 + 5.386 → 7; n3: 2+4 = 6 → 66, 88, 100
    ("system defaults spread a ReplicaSet's pods by hostname and zone",
     lambda: [node("n1", "a", web("p1")), node("n2", "a"), node("n3", "b")],
     web("new", owner=("ReplicaSet", "rs")), {"objects": OWNED_BY_RS}, {"n1": 66, "n2": 88, "n3": 100}),
    # a node without a zone still counts under system defaults; zones "a", "" → log 4; 2 hostnames → log 4
    # n1: 1.386+2 + 1.386+4 = 8.77 → 9; n2: 2 → 100*(9+2-9)//9=22, 100
    ("system defaults keep nodes without a zone label, spreading them by hostname",
     lambda: [node("n1", "a", web("p1")), node("n2", None)],
     web("new", owner=("ReplicaSet", "rs")), {"objects": OWNED_BY_RS}, {"n1": 22, "n2": 100}),
]


@pytest.mark.parametrize("nodes, incoming, kwargs, expected",
                         [case[1:] for case in SCORE_CASES], ids=[case[0] for case in SCORE_CASES])
def test_score(nodes: Any, incoming: dict[str, Any], kwargs: dict[str, Any],
               expected: dict[str, int]) -> None:
    assert run_score(nodes(), incoming, **kwargs) == expected


def test_raw_scores_follow_the_normalizing_weight() -> None:
    nodes = [node("n1", "a", web("p1"), web("p2")), node("n2", "b"), node("n3", "c")]
    pl, state, incoming = plugin(nodes), CycleState(), web("new", spread=[constraint(when="ScheduleAnyway")])
    pl.pre_score(state, incoming, nodes)
    assert pl.score(state, incoming, nodes[0]) == (3, None)  # 2 * log(3 + 2) = 3.22
    assert pl.score(state, incoming, nodes[1]) == (0, None)


def test_only_feasible_nodes_define_the_domains_but_all_nodes_count_pods() -> None:
    nodes = [node("n1", "a", web("p1")), node("n2", "a"), node("n3", "b", web("p2"), web("p3"))]
    pl, state, incoming = plugin(nodes), CycleState(), web("new", spread=[constraint(when="ScheduleAnyway")])
    assert pl.pre_score(state, incoming, nodes[1:2]) is None  # only n2 feasible: one domain, weight log 3
    assert pl.score(state, incoming, nodes[1]) == (1, None)  # zone a holds p1 (on n1): 1 * 1.0986


PRE_SCORE_SKIP_CASES = [
    ("a pod nothing selects under system defaulting", web("new"), {}),
    ("a pod whose owner is missing and no Service selects it", web("new", owner=("ReplicaSet", "gone")), {}),
    ("a pod with only hard constraints", web("new", spread=[constraint()]), {"objects": OWNED_BY_RS}),
]


@pytest.mark.parametrize("incoming, kwargs", [c[1:] for c in PRE_SCORE_SKIP_CASES],
                         ids=[c[0] for c in PRE_SCORE_SKIP_CASES])
def test_pre_score_skips(incoming: dict[str, Any], kwargs: dict[str, Any]) -> None:
    nodes = [node("n1", "a")]
    status = plugin(nodes, **kwargs).pre_score(CycleState(), incoming, nodes)
    assert status is not None and status.code == Code.SKIP


def test_pre_score_skips_without_nodes() -> None:
    status = plugin([]).pre_score(CycleState(), web("new", spread=[constraint(when="ScheduleAnyway")]), [])
    assert status is not None and status.code == Code.SKIP


# --- the default selector -----------------------------------------------------------------------------------


def service(name: str, selector: dict[str, str] | None, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {} if selector is None else
            {"selector": selector}}


def workload(name: str, selector: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": selector}}


def listers(**objects: list[dict[str, Any]]) -> dict[str, FakeLister]:
    kinds = ("services", "ReplicationController", "ReplicaSet", "StatefulSet")
    return {kind: FakeLister(objects.get(kind, [])) for kind in kinds}


LABELS = {"app": "web", "tier": "front"}
SELECTOR_CASES = [
    ("nothing selects the pod", {}, None, ""),
    ("a Service selecting the pod", {"services": [service("s", {"app": "web"})]}, None, "app=web"),
    ("Services not selecting the pod, or in another namespace, or without a selector, are ignored",
     {"services": [service("s1", {"app": "db"}), service("s2", {"app": "web"}, "other"),
                   service("s3", None)]},
     None, ""),
    ("Services and the ReplicaSet controlling the pod combine",
     {"services": [service("s", {"tier": "front"})],
      "ReplicaSet": [workload("rs", {"matchExpressions": [
          {"key": "app", "operator": "In", "values": ["web"]}]})]},
     ("ReplicaSet", "rs"), "app in (web),tier=front"),
    ("a ReplicationController's selector is a plain map",
     {"ReplicationController": [workload("rc", {"app": "web"})]},
     ("ReplicationController", "rc"), "app=web"),
    ("a StatefulSet's selector", {"StatefulSet": [workload("ss", WEB)]}, ("StatefulSet", "ss"), "app=web"),
    ("a controller that is not in the cache is ignored", {"services": [service("s", {"app": "web"})]},
     ("StatefulSet", "gone"), "app=web"),
]


@pytest.mark.parametrize("objects, owner, expected", [c[1:] for c in SELECTOR_CASES],
                         ids=[c[0] for c in SELECTOR_CASES])
def test_default_selector(objects: dict[str, list[dict[str, Any]]], owner: tuple[str, str] | None,
                          expected: str) -> None:
    incoming = pod("new", LABELS, **({"owner": owner} if owner else {}))
    assert default_selector(incoming, listers(**objects)).to_string() == expected


def test_listers_are_requested_only_when_there_are_default_constraints() -> None:
    with_defaults = FakeHandle([])
    PodTopologySpread({}, with_defaults)
    assert set(with_defaults.informers.requested) == {resources.SERVICES, resources.REPLICATION_CONTROLLERS,
                                                     resources.REPLICA_SETS, resources.STATEFUL_SETS}
    without = FakeHandle([])
    PodTopologySpread({"defaultingType": "List"}, without)
    assert without.informers.requested == []


# --- queueing hints -----------------------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = {e.event.resource: e.event.action for e in plugin([]).events_to_register()}
    assert events["Pod"] == ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    assert events["Node"] == (ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
                              | ActionType.DELETE)
    taint_changed = ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT)
    assert any(e.event.matches(taint_changed) for e in plugin([]).events_to_register())


TARGET = web("target", spread=[constraint()])
POD_HINT_CASES = [
    ("an assigned matching pod was added", None, web("p", node="n1"), QueueingHint.QUEUE),
    ("an unassigned pod was added", None, web("p"), QueueingHint.SKIP),
    ("a pod of another namespace was deleted", web("p", node="n1", namespace="other"), None,
     QueueingHint.SKIP),
    ("a non-matching pod was deleted", pod("p", {"app": "db"}, node="n1"), None, QueueingHint.SKIP),
    ("an assigned pod stopped matching", web("p", node="n1"), pod("p", {"app": "db"}, node="n1"),
     QueueingHint.QUEUE),
    ("an assigned pod changed an unrelated label", web("p", node="n1"),
     pod("p", {"app": "web", "x": "y"}, node="n1"), QueueingHint.SKIP),
]


@pytest.mark.parametrize("old, new, expected", [c[1:] for c in POD_HINT_CASES],
                         ids=[c[0] for c in POD_HINT_CASES])
def test_pod_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    assert plugin([]).is_schedulable_after_pod_change(TARGET, old, new) == expected


def node_object(labels: dict[str, str], taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}, "spec": {"taints": taints or []}}


NODE_HINT_CASES = [
    ("a node with the topology key was added", None, node_object({ZONE: "a"}), QueueingHint.QUEUE),
    ("a node without the topology key was added", None, node_object({}), QueueingHint.SKIP),
    ("a node with the key was deleted", node_object({ZONE: "a"}), None, QueueingHint.QUEUE),
    ("a node moved to another zone", node_object({ZONE: "a"}), node_object({ZONE: "b"}), QueueingHint.QUEUE),
    ("a node's taints changed", node_object({ZONE: "a"}), node_object({ZONE: "a"}, [TAINT]),
     QueueingHint.QUEUE),
    ("an unrelated label changed", node_object({ZONE: "a"}), node_object({ZONE: "a", "x": "y"}),
     QueueingHint.SKIP),
    ("a node gained the topology key", node_object({}), node_object({ZONE: "a"}), QueueingHint.QUEUE),
]


@pytest.mark.parametrize("old, new, expected", [c[1:] for c in NODE_HINT_CASES],
                         ids=[c[0] for c in NODE_HINT_CASES])
def test_node_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    assert plugin([]).is_schedulable_after_node_change(TARGET, old, new) == expected


# --- args ---------------------------------------------------------------------------------------------------

ONE = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
BAD_ARGS = [
    ("an unknown defaultingType", {"defaultingType": "Sometimes"}, "defaultingType",
     'Unsupported value: "Sometimes": supported values: "System", "List"'),
    ("default constraints with System defaulting", {"defaultConstraints": [ONE]}, "defaultingType",
     'Invalid value: "System": when .defaultConstraints are not empty'),
    ("a zero maxSkew", {"defaultingType": "List", "defaultConstraints": [{**ONE, "maxSkew": 0}]},
     "defaultConstraints[0].maxSkew", "Invalid value: 0: not in valid range (0, inf)"),
    ("an empty topologyKey", {"defaultingType": "List", "defaultConstraints": [{**ONE, "topologyKey": ""}]},
     "defaultConstraints[0].topologyKey", "Required value: can not be empty"),
    ("an invalid topologyKey",
     {"defaultingType": "List", "defaultConstraints": [{**ONE, "topologyKey": "a/b/c"}]},
     "defaultConstraints[0].topologyKey", 'Invalid value: "a/b/c": a qualified name'),
    ("an unknown whenUnsatisfiable",
     {"defaultingType": "List", "defaultConstraints": [{**ONE, "whenUnsatisfiable": "Never"}]},
     "defaultConstraints[0].whenUnsatisfiable",
     'Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway"'),
    ("a default constraint with a selector",
     {"defaultingType": "List", "defaultConstraints": [{**ONE, "labelSelector": WEB}]},
     "defaultConstraints[0].labelSelector",
     "Forbidden: constraint must not define a selector, as they deduced for each pod"),
    ("a repeated key and action",
     {"defaultingType": "List", "defaultConstraints": [ONE, {**ONE, "maxSkew": 2}]},
     "defaultConstraints[1]", f'Duplicate value: "{{{ZONE}, DoNotSchedule}}"'),
    ("defaultConstraints that are not a list", {"defaultingType": "List", "defaultConstraints": "zone"},
     "defaultConstraints", "must be a list"),
]


@pytest.mark.parametrize("args, path, message", [c[1:] for c in BAD_ARGS], ids=[c[0] for c in BAD_ARGS])
def test_bad_args_are_refused(args: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(PluginArgsError) as caught:
        PodTopologySpread(args, FakeHandle([]))
    assert caught.value.path == path
    assert caught.value.message.startswith(message)


def test_list_defaulting_with_valid_constraints_is_accepted() -> None:
    pl = PodTopologySpread({"defaultingType": "List", "defaultConstraints": [ONE]}, FakeHandle([]))
    assert not pl.system_defaulted and pl.constraints.default_constraints == [ONE]

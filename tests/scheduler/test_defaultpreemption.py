"""DefaultPreemption: victims, PDBs, candidate choice, eligibility, the API calls it makes, and its args.

The fake Handle's Filter is a plain resource fit (pod requests against allocatable minus requested), so the
tests need neither the framework runtime nor the NodeResourcesFit plugin.
"""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.scheduler.framework.interface import (
    Code,
    CycleState,
    PluginArgsError,
    PostFilterResult,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.defaultpreemption import DefaultPreemption
from minikube_py.scheduler.plugins.defaultpreemption.evaluator import Candidate, select_candidate
from minikube_py.scheduler.plugins.defaultpreemption.pdb import Budget, filter_pods_with_pdb_violation

# --- builders ------------------------------------------------------------------------------------------------


def pod(name: str, priority: int = 0, cpu: int = 0, *, node: str = "", labels: dict[str, str] | None = None,
        start: str | None = None, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    """A pod requesting `cpu` millicores; extra: policy, nominated, deleting, conditions."""
    spec: dict[str, Any] = {"priority": priority, "schedulerName": "default-scheduler", "containers": [
        {"name": "c", "resources": {"requests": {"cpu": f"{cpu}m"}}}]}
    if node:
        spec["nodeName"] = node
    if "policy" in extra:
        spec["preemptionPolicy"] = extra["policy"]
    status: dict[str, Any] = {"conditions": extra.get("conditions", [])}
    if start:
        status["startTime"] = start
    if "nominated" in extra:
        status["nominatedNodeName"] = extra["nominated"]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels or {}}
    if extra.get("deleting"):
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": spec, "status": status}


def node(name: str, cpu: int, *pods: dict[str, Any]) -> NodeInfo:
    info = NodeInfo({"metadata": {"name": name}, "status": {"allocatable": {"cpu": f"{cpu}m", "pods": "110"}}})
    for p in pods:
        p["spec"]["nodeName"] = name
        info.add_pod(PodInfo.of(p))
    return info


def pdb(name: str, match: dict[str, str] | None, allowed: int, *, disrupted: tuple[str, ...] = (),
        namespace: str = "default") -> dict[str, Any]:
    spec = {} if match is None else {"selector": {"matchLabels": match}}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec,
            "status": {"disruptionsAllowed": allowed, "disruptedPods": {n: "2024-01-01T00:00:00Z" for n in disrupted}}}


PREEMPTION_CONDITION = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                        "message": "default-scheduler: preempting to accommodate a higher priority pod"}

# --- fakes ---------------------------------------------------------------------------------------------------


class FakeSnapshot:
    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes

    def list(self) -> list[NodeInfo]:
        return self.nodes

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == name), None)


class FakeLister:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects

    def list(self, namespace: str | None = None, selector: Any = None) -> list[dict[str, Any]]:
        return list(self.objects)

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        for obj in self.objects:
            if obj["metadata"]["name"] == name and obj["metadata"].get("namespace") == namespace:
                return obj
        raise errors.new_not_found("pods", name)


class FakeInformers:
    def __init__(self, pods: list[dict[str, Any]], pdbs: list[dict[str, Any]]) -> None:
        self.listers = {resources.PODS: FakeLister(pods), resources.POD_DISRUPTION_BUDGETS: FakeLister(pdbs)}

    def lister(self, resource: Any) -> FakeLister:
        return self.listers[resource]


class FakeClient:
    """Records patches and deletes; `fail` maps a pod name to the exception its delete raises."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail: dict[str, Exception] = {}

    async def patch(self, resource: Any, name: str, body: dict[str, Any], namespace: str | None = None,
                    **options: Any) -> dict[str, Any]:
        self.calls.append(("patch", name, body, options))
        return {}

    async def delete(self, resource: Any, name: str, namespace: str | None = None, **options: Any) -> dict[str, Any]:
        self.calls.append(("delete", f"{namespace}/{name}"))
        if name in self.fail:
            raise self.fail[name]
        return {}

    def deleted(self) -> list[str]:
        return [call[1] for call in self.calls if call[0] == "delete"]


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str, str]] = []

    def eventf(self, regarding: dict[str, Any], related: dict[str, Any], type_: str, reason: str, action: str,
               note: str) -> None:
        self.events.append((regarding["metadata"]["name"], related["metadata"]["name"], type_, reason, action, note))


class FakeWaitingPod:
    def __init__(self) -> None:
        self.rejected: list[tuple[str, str]] = []

    def reject(self, plugin: str, message: str) -> None:
        self.rejected.append((plugin, message))


class FakeHandle:
    """A Handle whose only Filter is a CPU fit check."""

    def __init__(self, nodes: list[NodeInfo], preemptor: dict[str, Any], *, pdbs: list[dict[str, Any]] = (),
                 nominated: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.snapshot = FakeSnapshot(nodes)
        self.client = FakeClient()
        self.informers = FakeInformers([preemptor], list(pdbs))
        self.event_recorder = FakeRecorder()
        self.profile_name = "default-scheduler"
        self.nominated = {name: [PodInfo.of(p) for p in pods] for name, pods in (nominated or {}).items()}
        self.waiting: dict[str, FakeWaitingPod] = {}
        self.remove_pod_status = Status()
        self.tried: set[str] = set()  # nodes the dry run removed pods from

    def run_filter_plugins(self, state: CycleState, pod: dict[str, Any], node_info: NodeInfo) -> Status:
        free = node_info.allocatable.milli_cpu - node_info.requested.milli_cpu
        return Status() if PodInfo.of(pod).requests.milli_cpu <= free else Status.unschedulable("Insufficient cpu")

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: dict[str, Any],
                                               node_info: NodeInfo) -> Status:
        return self.run_filter_plugins(state, pod, node_info)

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Any, pod_to_add: PodInfo,
                                         node_info: NodeInfo) -> Status:
        return Status()

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Any, pod_to_remove: PodInfo,
                                            node_info: NodeInfo) -> Status:
        self.tried.add(node_info.name)
        return self.remove_pod_status

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.nominated.get(node_name, [])

    def get_waiting_pod(self, uid: str) -> FakeWaitingPod | None:
        return self.waiting.get(uid)


class FixedOffset:
    """Stands in for the evaluator's random source: the dry run starts at node `offset`."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def randrange(self, n: int) -> int:
        return self.offset % n


def unschedulable_everywhere(nodes: list[NodeInfo]) -> dict[str, Status]:
    return {n.name: Status.unschedulable("Insufficient cpu") for n in nodes}


def plugin_for(handle: FakeHandle, args: dict[str, Any] | None = None, offset: int = 0) -> DefaultPreemption:
    plugin = DefaultPreemption(args or {}, handle)
    plugin.evaluator.rng = FixedOffset(offset)  # type: ignore[assignment]
    return plugin


def victims_on(node_info: NodeInfo, preemptor: dict[str, Any],
               pdbs: list[dict[str, Any]] = ()) -> tuple[list[str], int, Status]:
    handle = FakeHandle([node_info], preemptor, pdbs=pdbs)
    budgets = [Budget.of(p) for p in pdbs]
    victims, violations, status = plugin_for(handle).evaluator.select_victims_on_node(
        CycleState(), preemptor, node_info.clone(), budgets)
    return [v.name for v in victims], violations, status


# --- victims on one node ---------------------------------------------------------------------------------------

OLD, NEW = "2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z"

VICTIM_CASES = [
    ("lower-priority pods are removed and the most important one is reprieved",
     node("n", 4000, pod("p1", 1, 1000), pod("p2", 2, 1000), pod("p3", 3, 2000)), pod("big", 10, 2000), [],
     ["p2", "p1"], 0),
    ("pods of higher or equal priority are never victims",
     node("n", 3000, pod("high", 20, 1000), pod("same", 10, 1000), pod("low", 1, 1000)), pod("big", 10, 1000), [],
     ["low"], 0),
    ("of two pods with equal priority the one running longer is reprieved",
     node("n", 2000, pod("young", 1, 1000, start=NEW), pod("old", 1, 1000, start=OLD)), pod("big", 10, 1000), [],
     ["young"], 0),
    ("a pod whose eviction breaks its PDB is reprieved before more important pods",
     node("n", 3000, pod("x", 3, 1000), pod("y", 2, 1000), pod("z", 1, 1000, labels={"app": "z"})),
     pod("big", 10, 1000), [pdb("z-pdb", {"app": "z"}, 0)], ["y"], 0),
    ("a victim that breaks its PDB is counted as a violation",
     node("n", 2000, pod("z", 1, 2000, labels={"app": "z"})), pod("big", 10, 1000),
     [pdb("z-pdb", {"app": "z"}, 0)], ["z"], 1),
    ("a pod the PDB already counts as disrupted is no violation",
     node("n", 2000, pod("z", 1, 2000, labels={"app": "z"})), pod("big", 10, 1000),
     [pdb("z-pdb", {"app": "z"}, 0, disrupted=("z",))], ["z"], 0),
    ("victims are sorted most important first after reprieving PDB-violating ones",
     node("n", 2000, pod("a", 5, 1000), pod("b", 1, 1000, labels={"app": "b"})), pod("big", 10, 2000),
     [pdb("b-pdb", {"app": "b"}, 0)], ["a", "b"], 1),
]


@pytest.mark.parametrize(("case", "node_info", "preemptor", "pdbs", "want_victims", "want_violations"),
                         VICTIM_CASES, ids=[c[0] for c in VICTIM_CASES])
def test_select_victims_on_node(case: str, node_info: NodeInfo, preemptor: dict[str, Any],
                                pdbs: list[dict[str, Any]], want_victims: list[str], want_violations: int) -> None:
    victims, violations, status = victims_on(node_info, preemptor, pdbs)
    assert status.is_success(), status
    assert (victims, violations) == (want_victims, want_violations)


FAILURE_CASES = [
    ("a node with no lower-priority pods has no victims", node("n", 1000, pod("same", 10, 1000)),
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "No preemption victims found for incoming pod"),
    ("a pod that does not fit even on an emptied node gets the filter's verdict",
     node("n", 1000, pod("low", 1, 500)), Code.UNSCHEDULABLE, "Insufficient cpu"),
]


@pytest.mark.parametrize(("case", "node_info", "code", "message"), FAILURE_CASES, ids=[c[0] for c in FAILURE_CASES])
def test_select_victims_on_node_failures(case: str, node_info: NodeInfo, code: Code, message: str) -> None:
    victims, _, status = victims_on(node_info, pod("big", 10, 2000))
    assert (victims, status.code, status.message()) == ([], code, message)


def test_the_dry_run_leaves_the_snapshot_untouched() -> None:
    node_info = node("n", 2000, pod("low", 1, 2000))
    handle = FakeHandle([node_info], pod("big", 10, 1000))
    plugin_for(handle).evaluator.select_victims_on_node(CycleState(), pod("big", 10, 1000), node_info.clone(), [])
    assert [p.name for p in node_info.pods] == ["low"] and node_info.requested.milli_cpu == 2000


# --- PDBs --------------------------------------------------------------------------------------------------------

PDB_CASES = [
    ("a budget with one disruption left lets one pod go and the next one violates",
     [pdb("web", {"app": "web"}, 1)], ["w1", "w2"], ["w2"]),
    ("a budget in another namespace does not apply", [pdb("web", {"app": "web"}, 0, namespace="other")], [], []),
    ("a budget without a selector selects nothing", [pdb("web", None, 0)], [], []),
    ("a budget with an empty selector selects nothing",
     [{"metadata": {"name": "e", "namespace": "default"}, "spec": {"selector": {}},
       "status": {"disruptionsAllowed": 0}}], [], []),
    ("a budget with an invalid selector selects nothing",
     [{"metadata": {"name": "bad", "namespace": "default"},
       "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}},
       "status": {"disruptionsAllowed": 0}}], [], []),
    ("a pod is violating when any one of its budgets is exhausted",
     [pdb("loose", {"app": "web"}, 5), pdb("tight", {"tier": "front"}, 0)], ["w1", "w2"], ["w1", "w2"]),
]


@pytest.mark.parametrize(("case", "pdbs", "candidates", "want_violating"), PDB_CASES, ids=[c[0] for c in PDB_CASES])
def test_filter_pods_with_pdb_violation(case: str, pdbs: list[dict[str, Any]], candidates: list[str],
                                        want_violating: list[str]) -> None:
    pods = [PodInfo.of(pod(n, labels={"app": "web", "tier": "front"})) for n in ("w1", "w2")]
    pods.append(PodInfo.of(pod("unlabelled")))
    violating, non_violating = filter_pods_with_pdb_violation(pods, [Budget.of(p) for p in pdbs])
    assert [p.name for p in violating] == want_violating
    assert len(violating) + len(non_violating) == 3 and non_violating[-1].name == "unlabelled"


# --- choosing a candidate -----------------------------------------------------------------------------------


def candidate(name: str, *victims: tuple[int, str], violations: int = 0) -> Candidate:
    return Candidate(name, [PodInfo.of(pod(f"{name}-{i}", prio, start=start))
                            for i, (prio, start) in enumerate(victims)], violations)


CHOICE_CASES = [
    ("fewest PDB violations first, even with more victims",
     [candidate("a", (1, OLD), violations=1), candidate("b", (1, OLD), (1, OLD))], "b"),
    ("then the lowest priority among the most important victims",
     [candidate("a", (5, OLD)), candidate("b", (3, OLD), (3, OLD), (3, OLD))], "b"),
    ("then the smallest sum of priorities",
     [candidate("a", (5, OLD), (4, OLD)), candidate("b", (5, OLD), (1, OLD))], "b"),
    ("negative priorities still favour fewer victims in the sum",
     [candidate("a", (-5, OLD), (-5, OLD)), candidate("b", (-5, OLD))], "b"),
    ("then the fewest victims (equal sums, as kube's shifted sum can make them)",
     [candidate("a", (10**9, OLD), (-573741824, OLD), (-573741824, OLD)), candidate("b", (10**9, OLD), (10**9, OLD))],
     "b"),
    ("then the latest start among the most important victims",
     [candidate("a", (5, OLD), (1, NEW)), candidate("b", (5, NEW), (1, OLD))], "b"),
    ("then the first one", [candidate("a", (5, OLD)), candidate("b", (5, OLD))], "a"),
]


@pytest.mark.parametrize(("case", "candidates", "want"), CHOICE_CASES, ids=[c[0] for c in CHOICE_CASES])
def test_select_candidate(case: str, candidates: list[Candidate], want: str) -> None:
    assert select_candidate(candidates).name == want


NUM_CANDIDATE_CASES = [
    ("a small cluster tries every node", 50, {}, 50),
    ("a large cluster tries 10 percent", 5000, {}, 500),
    ("a medium cluster tries at least 100", 300, {}, 100),
    ("an absolute floor of 1 with no percentage tries one node",
     300, {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}, 1),
]


@pytest.mark.parametrize(("case", "nodes", "args", "want"), NUM_CANDIDATE_CASES,
                         ids=[c[0] for c in NUM_CANDIDATE_CASES])
def test_calculate_num_candidates(case: str, nodes: int, args: dict[str, Any], want: int) -> None:
    plugin = plugin_for(FakeHandle([], pod("p")), args)
    assert plugin.evaluator.calculate_num_candidates(nodes) == want


# --- PostFilter end to end ---------------------------------------------------------------------------------


async def run_post_filter(handle: FakeHandle, preemptor: dict[str, Any], statuses: dict[str, Status] | None = None,
                          args: dict[str, Any] | None = None,
                          offset: int = 0) -> tuple[PostFilterResult | None, Status]:
    statuses = unschedulable_everywhere(handle.snapshot.nodes) if statuses is None else statuses
    return await plugin_for(handle, args, offset).post_filter(CycleState(), preemptor, statuses)


async def test_preempts_the_lowest_priority_pod_and_nominates_its_node() -> None:
    preemptor = pod("big", 10, 1000)
    handle = FakeHandle([node("node-a", 1000, pod("mid", 5, 1000)), node("node-b", 1000, pod("low", 1, 1000))],
                        preemptor)
    result, status = await run_post_filter(handle, preemptor)
    assert (result, status.code) == (PostFilterResult("node-b"), Code.SUCCESS)
    patch, delete = handle.client.calls
    assert patch[:2] == ("patch", "low") and delete == ("delete", "default/low")
    (condition,) = patch[2]["status"]["conditions"]
    assert {k: condition[k] for k in PREEMPTION_CONDITION} == PREEMPTION_CONDITION
    assert patch[3] == {"patch_type": "strategic", "subresource": "status"}
    assert handle.event_recorder.events == [
        ("low", "big", "Normal", "Preempted", "Preempting", "Preempted by pod uid-big on node node-b")]


async def test_prefers_the_node_whose_victims_break_no_pdb() -> None:
    preemptor = pod("big", 10, 1000)
    handle = FakeHandle([node("node-a", 1000, pod("guarded", 1, 1000, labels={"app": "g"})),
                         node("node-b", 1000, pod("free", 5, 1000))], preemptor, pdbs=[pdb("g", {"app": "g"}, 0)])
    result, _ = await run_post_filter(handle, preemptor)
    assert result == PostFilterResult("node-b") and handle.client.deleted() == ["default/free"]


async def test_a_victim_already_marked_is_deleted_without_another_patch() -> None:
    preemptor = pod("big", 10, 1000)
    marked = pod("low", 1, 1000, conditions=[dict(PREEMPTION_CONDITION, lastTransitionTime=OLD)])
    handle = FakeHandle([node("node-a", 1000, marked)], preemptor)
    await run_post_filter(handle, preemptor)
    assert handle.client.calls == [("delete", "default/low")]


async def test_a_victim_waiting_at_permit_is_rejected_not_deleted() -> None:
    preemptor = pod("big", 10, 1000)
    handle = FakeHandle([node("node-a", 1000, pod("low", 1, 1000))], preemptor)
    handle.waiting["uid-low"] = waiting = FakeWaitingPod()
    result, _ = await run_post_filter(handle, preemptor)
    assert result == PostFilterResult("node-a") and handle.client.calls == []
    assert waiting.rejected == [("DefaultPreemption", "preempted")] and len(handle.event_recorder.events) == 1


async def test_lower_priority_pods_nominated_to_the_node_lose_their_nomination() -> None:
    preemptor = pod("big", 10, 1000)
    nominated = [pod("small", 1, nominated="node-a"), pod("peer", 10, nominated="node-a"),
                 pod("vip", 50, nominated="node-a")]
    handle = FakeHandle([node("node-a", 1000, pod("low", 1, 1000))], preemptor, nominated={"node-a": nominated})
    await run_post_filter(handle, preemptor)
    clears = [c for c in handle.client.calls if c[0] == "patch" and "nominatedNodeName" in c[2]["status"]]
    assert [(c[1], c[2]) for c in clears] == [("small", {"status": {"nominatedNodeName": None}})]


async def test_the_dry_run_starts_at_the_random_offset_and_stops_when_enough_candidates_are_found() -> None:
    preemptor = pod("big", 10, 1000)
    nodes = [node(f"node-{i}", 1000, pod(f"low-{i}", 1, 1000)) for i in range(3)]
    args = {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}
    handle = FakeHandle(nodes, preemptor)
    result, _ = await run_post_filter(handle, preemptor, args=args, offset=2)
    assert result == PostFilterResult("node-2") and handle.tried == {"node-2"}


async def test_only_unschedulable_nodes_are_tried() -> None:
    preemptor = pod("big", 10, 1000)
    nodes = [node("node-a", 1000, pod("low-a", 1, 1000)), node("node-b", 1000, pod("low-b", 1, 1000))]
    statuses = {"node-a": Status.unschedulable("node(s) were unschedulable", resolvable=False),
                "node-b": Status.unschedulable("Insufficient cpu")}
    result, _ = await run_post_filter(FakeHandle(nodes, preemptor), preemptor, statuses)
    assert result == PostFilterResult("node-b")


REFUSAL_CASES = [
    ("a pod with preemptionPolicy Never does not preempt",
     pod("big", 10, 1000, policy="Never"), [node("n1", 1000, pod("low", 1, 1000))], None,
     None, "preemption: not eligible due to preemptionPolicy=Never."),
    ("a pod waits while its earlier victims on the nominated node are terminating",
     pod("big", 10, 1000, nominated="n1"),
     [node("n1", 1000, pod("low", 1, 1000, deleting=True, conditions=[PREEMPTION_CONDITION]))], None,
     None, "preemption: not eligible due to a terminating pod on the nominated node."),
    ("no node has lower-priority pods",
     pod("big", 10, 1000), [node(f"n{i}", 1000, pod(f"peer{i}", 10, 1000)) for i in range(3)], None,
     PostFilterResult(""), "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."),
    ("nodes rejected as unresolvable are not helped by preemption",
     pod("big", 10, 1000), [node("n0", 1000, pod("peer", 10, 1000)), node("n1", 1000, pod("low1", 1, 1000)),
                            node("n2", 1000, pod("low2", 1, 1000))],
     {"n0": Status.unschedulable("Insufficient cpu"),
      **{f"n{i}": Status.unschedulable("node(s) were unschedulable", resolvable=False) for i in (1, 2)}},
     PostFilterResult(""), "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
     "2 Preemption is not helpful for scheduling."),
    ("the pod is too big for any node even when emptied",
     pod("big", 10, 5000), [node(f"n{i}", 1000, pod(f"low{i}", 1, 1000)) for i in range(2)], None,
     PostFilterResult(""), "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
]


@pytest.mark.parametrize(("case", "preemptor", "nodes", "statuses", "want_result", "want_message"),
                         REFUSAL_CASES, ids=[c[0] for c in REFUSAL_CASES])
async def test_post_filter_refusals(case: str, preemptor: dict[str, Any], nodes: list[NodeInfo],
                                    statuses: dict[str, Status] | None, want_result: PostFilterResult | None,
                                    want_message: str) -> None:
    handle = FakeHandle(nodes, preemptor)
    result, status = await run_post_filter(handle, preemptor, statuses)
    assert (result, status.code, status.message()) == (want_result, Code.UNSCHEDULABLE, want_message)
    assert handle.client.calls == [] and handle.event_recorder.events == []


async def test_a_terminating_victim_does_not_block_a_pod_whose_nominated_node_became_unresolvable() -> None:
    preemptor = pod("big", 10, 1000, nominated="n1")
    terminating = pod("old-victim", 1, 500, deleting=True, conditions=[PREEMPTION_CONDITION])
    nodes = [node("n1", 1000, terminating), node("n2", 1000, pod("low", 1, 1000))]
    statuses = {"n1": Status.unschedulable("node(s) were unschedulable", resolvable=False),
                "n2": Status.unschedulable("Insufficient cpu")}
    result, status = await run_post_filter(FakeHandle(nodes, preemptor), preemptor, statuses)
    assert (result, status.code) == (PostFilterResult("n2"), Code.SUCCESS)


ERROR_CASES = [
    ("a failed delete is an error and nominates nothing", "delete", RuntimeError("connection reset"),
     (None, Code.ERROR, "preemption: connection reset"), 0),
    ("a victim deleted meanwhile counts as preempted", "delete", errors.new_not_found("pods", "low"),
     (PostFilterResult("n1"), Code.SUCCESS, ""), 0),
    ("a failing RemovePod extension is an error", "remove", Status.as_error("boom"),
     (None, Code.ERROR, "preemption: boom"), 0),
    ("a preemptor gone from the cache is an error", "preemptor", None,
     (None, Code.ERROR, 'preemption: pods "big" not found'), 0),
]


@pytest.mark.parametrize(("case", "where", "failure", "want", "want_events"), ERROR_CASES,
                         ids=[c[0] for c in ERROR_CASES])
async def test_post_filter_errors(case: str, where: str, failure: Any, want: tuple[Any, Code, str],
                                  want_events: int) -> None:
    preemptor = pod("big", 10, 1000)
    handle = FakeHandle([node("n1", 1000, pod("low", 1, 1000))], preemptor)
    if where == "delete":
        handle.client.fail["low"] = failure
    elif where == "remove":
        handle.remove_pod_status = failure
    else:
        handle.informers.listers[resources.PODS].objects.clear()
    result, status = await run_post_filter(handle, preemptor)
    assert (result, status.code, status.message()) == want
    assert len(handle.event_recorder.events) == want_events


# --- args ----------------------------------------------------------------------------------------------------

BAD_ARGS = [
    ("a percentage above 100", {"minCandidateNodesPercentage": 101},
     "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"),
    ("a negative percentage", {"minCandidateNodesPercentage": -1},
     "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]"),
    ("a negative absolute count", {"minCandidateNodesAbsolute": -5},
     "minCandidateNodesAbsolute: Invalid value: -5: not in valid range [0, inf)"),
    ("both zero", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
     "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"),
    ("a string percentage", {"minCandidateNodesPercentage": "10"},
     "minCandidateNodesPercentage: must be an integer, not '10'"),
    ("an unknown field", {"minCandidateNodes": 3}, 'minCandidateNodes: unknown field "minCandidateNodes"'),
]


@pytest.mark.parametrize(("case", "args", "message"), BAD_ARGS, ids=[c[0] for c in BAD_ARGS])
def test_bad_args_are_refused(case: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as caught:
        DefaultPreemption(args, FakeHandle([], pod("p")))
    assert str(caught.value) == message


def test_args_default_as_kube_does() -> None:
    args = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DefaultPreemptionArgs"}
    evaluator = DefaultPreemption(args, FakeHandle([], pod("p"))).evaluator
    assert (evaluator.min_candidate_nodes_percentage, evaluator.min_candidate_nodes_absolute) == (10, 100)

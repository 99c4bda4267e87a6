"""NodeResourcesFit and NodeResourcesBalancedAllocation: kube's fit messages and codes, its three scoring
strategies and the balanced-allocation formula, with the numbers worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    PluginArgsError,
    QueueingHint,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.noderesources import node_vectors, request_vector, scoring
from minikube_py.scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from minikube_py.scheduler.plugins.noderesources.fit import Fit

MI = 1024 * 1024


def case(name: str, *values: object) -> Any:
    return pytest.param(*values, id=name)


def container(name: str = "c", restart_policy: str = "", **requests: Any) -> dict[str, Any]:
    built: dict[str, Any] = {"name": name, "resources": {"requests": {k.replace("_", "-"): v
                                                                      for k, v in requests.items()}}}
    if restart_policy:
        built["restartPolicy"] = restart_policy
    return built


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), overhead: dict[str, Any] | None = None,
        name: str = "p", node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers) or [container()], "initContainers": list(init)}
    if overhead:
        spec["overhead"] = overhead
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


def node(name: str = "n1", **allocatable: Any) -> dict[str, Any]:
    offered = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    offered.update({k.replace("_", "-"): v for k, v in allocatable.items()})
    return {"metadata": {"name": name}, "spec": {}, "status": {"allocatable": offered}}


def node_info(the_node: dict[str, Any], *placed: dict[str, Any]) -> NodeInfo:
    info = NodeInfo(the_node)
    for i, other in enumerate(placed):
        info.add_pod(PodInfo.of(dict(other, metadata={"name": f"o{i}", "namespace": "default", "uid": f"o{i}"})))
    return info


def run_filter(the_pod: dict[str, Any], info: NodeInfo, args: dict[str, Any] | None = None) -> Any:
    """Filter's verdict on `info`, checked to be the batch form's on a node that fits and `info`."""
    fit, state = Fit(args or {}, None), CycleState()  # type: ignore[arg-type]
    assert fit.pre_filter(state, the_pod, [info]) == (None, None)
    status = fit.filter(state, the_pod, info)
    roomy = node_info(node("roomy", cpu="64", memory="64Gi", ephemeral_storage="1Ti", **{"example.com/gpu": "8"}))
    batch = fit.filter_nodes(state, the_pod, [roomy, info])
    assert {i: (s.code, s.reasons) for i, s in batch.items()} == ({} if status is None else
                                                                   {1: (status.code, status.reasons)})
    return status


UNSCHEDULABLE, UNRESOLVABLE = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize("the_pod, info, args, expected", [
    case("a pod that fits passes", pod(container(cpu="1", memory="1Gi")), node_info(node()), None, None),
    case("a pod without requests fits a full node", pod(), node_info(node(cpu="1"), pod(container(cpu="1"))), None,
         None),
    case("a pod without a cpu request fits a node whose pods overcommit its cpu", pod(container(memory="1Gi")),
         node_info(node(cpu="1"), pod(container(cpu="2"))), None, None),
    case("too little cpu left is Unschedulable", pod(container(cpu="1")),
         node_info(node(), pod(container(cpu="3500m"))), None, (UNSCHEDULABLE, ["Insufficient cpu"])),
    case("exactly the cpu left fits", pod(container(cpu="500m")), node_info(node(), pod(container(cpu="3500m"))),
         None, None),
    case("more cpu than the node has at all is unresolvable", pod(container(cpu="5")), node_info(node()), None,
         (UNRESOLVABLE, ["Insufficient cpu"])),
    case("too little memory", pod(container(memory="5Gi")), node_info(node(), pod(container(memory="4Gi"))), None,
         (UNSCHEDULABLE, ["Insufficient memory"])),
    case("too little ephemeral storage", pod(container(ephemeral_storage="2Gi")),
         node_info(node(ephemeral_storage="3Gi"), pod(container(ephemeral_storage="2Gi"))), None,
         (UNSCHEDULABLE, ["Insufficient ephemeral-storage"])),
    case("a full node has too many pods", pod(), node_info(node(pods="1"), pod()), None,
         (UNSCHEDULABLE, ["Too many pods"])),
    case("every shortfall is named in kube's order", pod(container(cpu="4", memory="8Gi")),
         node_info(node(pods="1"), pod(container(cpu="1", memory="1Gi"))), None,
         (UNSCHEDULABLE, ["Too many pods", "Insufficient cpu", "Insufficient memory"])),
    case("one unresolvable shortfall makes the whole verdict unresolvable", pod(container(cpu="1", memory="9Gi")),
         node_info(node(), pod(container(cpu="4"))), None, (UNRESOLVABLE, ["Insufficient cpu", "Insufficient memory"])),
    case("an extended resource the node lacks", pod(container(**{"example.com/gpu": "1"})), node_info(node()), None,
         (UNRESOLVABLE, ["Insufficient example.com/gpu"])),
    case("an extended resource in use", pod(container(**{"example.com/gpu": "1"})),
         node_info(node(**{"example.com/gpu": "1"}), pod(container(**{"example.com/gpu": "1"}))), None,
         (UNSCHEDULABLE, ["Insufficient example.com/gpu"])),
    case("ignoredResources are not checked", pod(container(**{"example.com/gpu": "1"})), node_info(node()),
         {"ignoredResources": ["example.com/gpu"]}, None),
    case("ignoredResourceGroups are not checked", pod(container(**{"example.com/gpu": "1"})), node_info(node()),
         {"ignoredResourceGroups": ["example.com"]}, None),
    case("an init container larger than the containers counts",
         pod(container(cpu="1"), init=(container("i", cpu="3"),)), node_info(node(), pod(container(cpu="1500m"))),
         None, (UNSCHEDULABLE, ["Insufficient cpu"])),
    case("a sidecar runs alongside the containers",
         pod(container(cpu="2"), init=(container("s", "Always", cpu="1500m"),)),
         node_info(node(), pod(container(cpu="1"))), None, (UNSCHEDULABLE, ["Insufficient cpu"])),
    case("the pod overhead counts", pod(container(cpu="2"), overhead={"cpu": "1"}),
         node_info(node(), pod(container(cpu="1500m"))), None, (UNSCHEDULABLE, ["Insufficient cpu"])),
    case("a node with malformed allocatable is set aside", pod(), node_info(node(cpu="lots")), None,
         (UNRESOLVABLE, ["node n1 has malformed allocatable cpu"])),
])
def test_filter(the_pod: dict[str, Any], info: NodeInfo, args: dict[str, Any] | None,
                expected: tuple[Code, list[str]] | None) -> None:
    status = run_filter(the_pod, info, args)
    if expected is None:
        assert status is None
    else:
        assert (status.code, status.reasons) == expected


def test_filter_works_without_pre_filter() -> None:
    status = Fit({}, None).filter(CycleState(), pod(container(cpu="5")), node_info(node()))  # type: ignore[arg-type]
    assert status is not None and status.reasons == ["Insufficient cpu"]


def fit_score(the_pod: dict[str, Any], info: NodeInfo, args: dict[str, Any] | None = None) -> int:
    fit, state = Fit(args or {}, None), CycleState()  # type: ignore[arg-type]
    assert fit.pre_score(state, the_pod, [info]) is None
    score, status = fit.score(state, the_pod, info)
    assert status is None
    return score


def strategy(kind: str, resources: list[dict[str, Any]] | None = None,
             shape: list[tuple[int, int]] | None = None) -> dict[str, Any]:
    built: dict[str, Any] = {"type": kind}
    if resources is not None:
        built["resources"] = resources
    if shape is not None:
        built["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": s} for u, s in shape]}
    return {"scoringStrategy": built}


# A node of 4 cpu and 10000 bytes of memory with the incoming pod requesting 3 cpu and 5000 bytes: utilisation
# 75% cpu and 50% memory.
SMALL_NODE = node(cpu="4", memory="10000")
HALF_POD = pod(container(cpu="3", memory="5000"))


@pytest.mark.parametrize("the_pod, info, args, expected", [
    case("LeastAllocated averages the free shares: (25 + 50) / 2", HALF_POD, node_info(SMALL_NODE), None, 37),
    case("LeastAllocated counts pods already there", pod(container(cpu="1", memory="2500")),
         node_info(SMALL_NODE, pod(container(cpu="2", memory="2500"))), None, 37),
    case("LeastAllocated counts empty containers as 100m and 200Mi", pod(),
         node_info(node(cpu="1", memory="1Gi")), None, (90 + 80) // 2),
    case("LeastAllocated gives an over-committed resource 0", pod(container(cpu="5", memory="5000")),
         node_info(SMALL_NODE), None, (0 + 50) // 2),
    case("LeastAllocated weights resources", HALF_POD, node_info(SMALL_NODE),
         strategy("LeastAllocated", [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]),
         (25 * 3 + 50) // 4),
    case("MostAllocated averages the used shares: (75 + 50) / 2", HALF_POD, node_info(SMALL_NODE),
         strategy("MostAllocated"), 62),
    case("MostAllocated caps over-commitment at 100", pod(container(cpu="5", memory="5000")),
         node_info(SMALL_NODE), strategy("MostAllocated"), (100 + 50) // 2),
    case("RequestedToCapacityRatio maps utilisation and rounds half up", HALF_POD, node_info(SMALL_NODE),
         strategy("RequestedToCapacityRatio", shape=[(0, 0), (100, 10)]), 63),
    case("RequestedToCapacityRatio with a falling shape", HALF_POD, node_info(SMALL_NODE),
         strategy("RequestedToCapacityRatio", shape=[(0, 10), (100, 0)]), 38),
    case("RequestedToCapacityRatio truncates toward zero like Go", pod(container(cpu="400m")),
         node_info(SMALL_NODE), strategy("RequestedToCapacityRatio", [{"name": "cpu", "weight": 1}],
                                         [(0, 10), (30, 0)]), 67),
    case("RequestedToCapacityRatio leaves out resources scoring 0", pod(container(cpu="1m", memory="5000")),
         node_info(node(cpu="1000", memory="10000")), strategy("RequestedToCapacityRatio", shape=[(0, 0), (100, 10)]),
         50),
    case("an extended resource the pod does not request is left out", HALF_POD,
         node_info(node(cpu="4", memory="10000", **{"example.com/gpu": "4"})),
         strategy("LeastAllocated", [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]), 25),
    case("an extended resource the pod requests is scored",
         pod(container(cpu="3", memory="5000", **{"example.com/gpu": "1"})),
         node_info(node(cpu="4", memory="10000", **{"example.com/gpu": "4"})),
         strategy("LeastAllocated", [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]),
         (25 + 75) // 2),
])
def test_fit_score(the_pod: dict[str, Any], info: NodeInfo, args: dict[str, Any] | None, expected: int) -> None:
    assert fit_score(the_pod, info, args) == expected


def balanced_score(the_pod: dict[str, Any], info: NodeInfo, args: dict[str, Any] | None = None) -> int:
    plugin, state = BalancedAllocation(args or {}, None), CycleState()  # type: ignore[arg-type]
    assert plugin.pre_score(state, the_pod, [info]) is None
    score, status = plugin.score(state, the_pod, info)
    assert status is None
    return score


THREE_RESOURCES = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                                 {"name": "ephemeral-storage", "weight": 1}]}


@pytest.mark.parametrize("the_pod, info, args, expected", [
    case("two fractions: (1 - |0.75 - 0.5| / 2) * 100", HALF_POD, node_info(SMALL_NODE), None, 87),
    case("equal fractions score 100", pod(container(cpu="2", memory="5000")), node_info(SMALL_NODE), None, 100),
    case("actual requests count, not the 100m/200Mi defaults", pod(),
         node_info(SMALL_NODE, pod(container(cpu="2"))), None, 75),
    case("fractions are capped at 1", pod(container(cpu="8", memory="5000")), node_info(SMALL_NODE), None, 75),
    case("three resources use the standard deviation", pod(container(cpu="3", memory="5000",
                                                                     ephemeral_storage="250")),
         node_info(node(cpu="4", memory="10000", ephemeral_storage="1000")), THREE_RESOURCES, 79),
    case("a resource the node lacks is left out", pod(container(cpu="3", memory="5000")),
         node_info(node(cpu="4", memory="10000")), THREE_RESOURCES, 87),
])
def test_balanced_allocation(the_pod: dict[str, Any], info: NodeInfo, args: dict[str, Any] | None,
                             expected: int) -> None:
    assert balanced_score(the_pod, info, args) == expected


MIXED_NODES = [  # nodes in the same state twice, with pods, without ephemeral-storage, with an extended resource
    node_info(SMALL_NODE), node_info(SMALL_NODE), node_info(SMALL_NODE, pod(container(cpu="1", memory="2500"))),
    node_info(SMALL_NODE, pod()), node_info(node(cpu="8", memory="20000", ephemeral_storage="1000")),
    node_info(node(cpu="4", memory="10000", **{"example.com/gpu": "4"}), pod(container(**{"example.com/gpu": "1"}))),
    node_info(SMALL_NODE, pod(container(cpu="1", memory="2500"))),
]
EPHEMERAL_AND_GPU_POD = pod(container(cpu="1", memory="1000", ephemeral_storage="100", **{"example.com/gpu": "1"}))


@pytest.mark.parametrize("the_pod, args", [
    case("LeastAllocated", HALF_POD, None),
    case("LeastAllocated with the 100m/200Mi defaults", pod(), None),
    case("MostAllocated with ephemeral-storage", EPHEMERAL_AND_GPU_POD,
         strategy("MostAllocated", THREE_RESOURCES["resources"])),
    case("RequestedToCapacityRatio", HALF_POD, strategy("RequestedToCapacityRatio", shape=[(0, 0), (100, 10)])),
    case("an extended resource", EPHEMERAL_AND_GPU_POD,
         strategy("LeastAllocated", [{"name": "cpu", "weight": 2}, {"name": "example.com/gpu", "weight": 1}])),
])
def test_fit_scores_all_nodes_at_once_as_each_node_on_its_own(the_pod: dict[str, Any],
                                                               args: dict[str, Any] | None) -> None:
    fit, state = Fit(args or {}, None), CycleState()  # type: ignore[arg-type]
    assert fit.pre_score(state, the_pod, MIXED_NODES) is None
    wanted = request_vector(PodInfo.of(the_pod).non_zero_requests, fit.resources)
    one_by_one = [fit.scorer(*node_vectors(info, fit.resources, wanted, use_requested=False)) for info in MIXED_NODES]
    assert fit.score_nodes(state, the_pod, MIXED_NODES) == (one_by_one, None)
    assert len(set(one_by_one)) > 2


@pytest.mark.parametrize("the_pod, args", [
    case("cpu and memory", HALF_POD, None),
    case("actual requests, not the defaults", pod(), None),
    case("three resources", EPHEMERAL_AND_GPU_POD, THREE_RESOURCES),
    case("an extended resource", EPHEMERAL_AND_GPU_POD,
         {"resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]}),
])
def test_balanced_allocation_scores_all_nodes_at_once_as_each_node_on_its_own(
        the_pod: dict[str, Any], args: dict[str, Any] | None) -> None:
    plugin, state = BalancedAllocation(args or {}, None), CycleState()  # type: ignore[arg-type]
    assert plugin.pre_score(state, the_pod, MIXED_NODES) is None
    wanted = request_vector(PodInfo.of(the_pod).requests, plugin.resources)
    one_by_one = [scoring.balanced_allocation(*node_vectors(info, plugin.resources, wanted, use_requested=True))
                  for info in MIXED_NODES]
    assert plugin.score_nodes(state, the_pod, MIXED_NODES) == (one_by_one, None)


@pytest.mark.parametrize("requested, capacity, least, most", [
    case("a quarter used", 1000, 4000, 75, 25),
    case("nothing offered", 10, 0, 0, 0),
    case("over-committed", 5000, 4000, 0, 100),
    case("division truncates", 1, 3, 66, 33),
])
def test_per_resource_scores(requested: int, capacity: int, least: int, most: int) -> None:
    assert scoring.least_requested_score(requested, capacity) == least
    assert scoring.most_requested_score(requested, capacity) == most


def test_broken_linear_is_flat_outside_the_shape() -> None:
    line = scoring.broken_linear([(10, 20), (50, 60)])
    assert [line(x) for x in (0, 10, 30, 50, 100)] == [20, 20, 40, 60, 60]


@pytest.mark.parametrize("args, path, message", [
    case("an unknown strategy", {"scoringStrategy": {"type": "Random"}}, "scoringStrategy.type",
         'Unsupported value: "Random": supported values: "LeastAllocated", "MostAllocated", '
         '"RequestedToCapacityRatio"'),
    case("a strategy without a type", {"scoringStrategy": {}}, "scoringStrategy.type",
         'Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'),
    case("a weight above 100", strategy("LeastAllocated", [{"name": "cpu", "weight": 101}]),
         "scoringStrategy.resources[0].weight", "Invalid value: 101: resource weight of cpu not in valid range (0, 100]"),
    case("a negative weight", strategy("MostAllocated", [{"name": "cpu", "weight": -1}]),
         "scoringStrategy.resources[0].weight", "Invalid value: -1: resource weight of cpu not in valid range (0, 100]"),
    case("a resource without a name", strategy("MostAllocated", [{"weight": 1}]),
         "scoringStrategy.resources[0].name", "Required value: a resource name"),
    case("RequestedToCapacityRatio without a shape", strategy("RequestedToCapacityRatio"),
         "scoringStrategy.requestedToCapacityRatio.shape", "Required value: at least one point must be specified"),
    case("a shape out of order", strategy("RequestedToCapacityRatio", shape=[(50, 1), (50, 2)]),
         "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
         "Invalid value: 50: utilization values must be sorted in increasing order"),
    case("a shape score above 10", strategy("RequestedToCapacityRatio", shape=[(0, 11)]),
         "scoringStrategy.requestedToCapacityRatio.shape[0].score", "Invalid value: 11: not in valid range [0, 10]"),
    case("a shape utilization above 100", strategy("RequestedToCapacityRatio", shape=[(101, 1)]),
         "scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
         "Invalid value: 101: not in valid range [0, 100]"),
    case("a resource group with a slash", {"ignoredResourceGroups": ["example.com/gpu"]},
         "ignoredResourceGroups[0]", "Invalid value: 'example.com/gpu': resource group name can't contain '/'"),
    case("ignoredResources that are not a list", {"ignoredResources": "example.com/gpu"}, "ignoredResources",
         "must be a list of strings, not 'example.com/gpu'"),
])
def test_fit_refuses_invalid_args(args: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(PluginArgsError) as raised:
        Fit(args, None)  # type: ignore[arg-type]
    assert (raised.value.path, raised.value.message) == (path, message)


def test_fit_defaults() -> None:
    fit = Fit({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}, None)  # type: ignore[arg-type]
    assert fit.strategy == "MostAllocated"
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 1)], "a missing weight defaults to 1"
    default = Fit({}, None)  # type: ignore[arg-type]
    assert (default.strategy, [(r.name, r.weight) for r in default.resources]) == (
        "LeastAllocated", [("cpu", 1), ("memory", 1)])


@pytest.mark.parametrize("args, path, message", [
    case("a weight other than 1", {"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight",
         "Invalid value: 2: must be 1"),
    case("a resource twice", {"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "resources[1].name",
         'Duplicate value: "cpu"'),
])
def test_balanced_allocation_refuses_invalid_args(args: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(PluginArgsError) as raised:
        BalancedAllocation(args, None)  # type: ignore[arg-type]
    assert (raised.value.path, raised.value.message) == (path, message)


def test_fit_events_and_queueing_hints() -> None:
    pod_event, node_event = Fit({}, None).events_to_register()  # type: ignore[arg-type]
    assert pod_event.event == ClusterEvent("Pod", ActionType.DELETE)
    assert node_event.event == ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)
    waiting = pod(container(cpu="2"))
    assert pod_event.hint(waiting, pod(node_name="n1"), None) is QueueingHint.QUEUE, "a bound pod went away"
    assert pod_event.hint(waiting, pod(), None) is QueueingHint.SKIP, "an unbound pod went away"
    assert node_event.hint(waiting, None, node(cpu="4")) is QueueingHint.QUEUE, "a big enough node was added"
    assert node_event.hint(waiting, None, node(cpu="1")) is QueueingHint.SKIP, "a too small node was added"
    assert node_event.hint(waiting, node(cpu="1"), node(cpu="4")) is QueueingHint.QUEUE, "cpu grew"
    assert node_event.hint(waiting, node(cpu="4"), node(cpu="4", memory="16Gi")) is QueueingHint.SKIP, "memory grew"
    assert node_event.hint(waiting, None, node(cpu="lots")) is QueueingHint.SKIP, "malformed allocatable"


def _containers(*requests: dict[str, str] | None, init: tuple[dict[str, str] | None, ...] = ()) -> dict[str, Any]:
    def container(name: str, wanted: dict[str, str] | None) -> dict[str, Any]:
        return {"name": name, "image": "x", **({"resources": {"requests": wanted}} if wanted is not None else {})}

    return {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [container(f"c{i}", r) for i, r in enumerate(requests)],
                     "initContainers": [container(f"i{i}", r) for i, r in enumerate(init)]}}


@pytest.mark.parametrize("pod, cpu, memory", [
    (_containers(None), 100, 200 * 1024 * 1024),  # nothing requested: kube's 100m and 200Mi
    (_containers({"cpu": "0"}), 0, 200 * 1024 * 1024),  # an explicit 0 is a request, kept
    (_containers({"cpu": "50m", "memory": "1Mi"}, None), 150, 201 * 1024 * 1024),  # per container
    (_containers({"cpu": "50m", "memory": "1Mi"}, init=(None,)), 100, 200 * 1024 * 1024),  # init containers too
])
def test_non_zero_requests_count_what_containers_leave_unset_as_kube_s_defaults(pod: dict[str, Any], cpu: int,
                                                                                 memory: int) -> None:
    wanted = PodInfo.of(pod).non_zero_requests
    assert (wanted.milli_cpu, wanted.memory) == (cpu, memory)

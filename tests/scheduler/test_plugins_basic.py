"""The small default plugins behave as kube's: PrioritySort, SchedulingGates, NodeUnschedulable, NodeName,
NodePorts, ImageLocality and DefaultBinder, plus the shared score normalisation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from minikube_py.client import resources
from minikube_py.scheduler import plugins
from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    QueueingHint,
    is_success,
)
from minikube_py.scheduler.framework.types import (
    ImageStateSummary,
    NodeInfo,
    NodeScore,
    PodInfo,
    QueuedPodInfo,
)
from minikube_py.scheduler.plugins import default_normalize_score
from minikube_py.scheduler.plugins.defaultbinder import DefaultBinder
from minikube_py.scheduler.plugins.imagelocality import MB, ImageLocality, normalized_image_name
from minikube_py.scheduler.plugins.nodename import NodeName
from minikube_py.scheduler.plugins.nodeports import NodePorts
from minikube_py.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from minikube_py.scheduler.plugins.queuesort import PrioritySort
from minikube_py.scheduler.plugins.schedulinggates import SchedulingGates


def case(name: str, *values: object) -> Any:
    return pytest.param(*values, id=name)


def pod(name: str = "p", *, uid: str = "uid-p", priority: int | None = None, node_name: str = "",
        gates: list[str] | None = None, tolerations: list[dict[str, Any]] | None = None,
        ports: list[dict[str, Any]] | None = None, images: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": image, "ports": ports or []}
                                           for i, image in enumerate(images or ["nginx"])]}
    if priority is not None:
        spec["priority"] = priority
    if node_name:
        spec["nodeName"] = node_name
    if gates is not None:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": name, "namespace": "default", "uid": uid}, "spec": spec}


def node(name: str = "n1", *, unschedulable: bool = False) -> dict[str, Any]:
    spec = {"unschedulable": True} if unschedulable else {}
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": {"cpu": "4", "pods": "110"}}}


def node_info(name: str = "n1", *, unschedulable: bool = False, pods: tuple[dict[str, Any], ...] = ()) -> NodeInfo:
    info = NodeInfo(node(name, unschedulable=unschedulable))
    for placed in pods:
        info.add_pod(PodInfo.of(placed))
    return info


@dataclass
class FakeSnapshot:
    nodes: list[NodeInfo] = field(default_factory=list)

    def list(self) -> list[NodeInfo]:
        return self.nodes

    def get(self, node_name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == node_name), None)


@dataclass
class FakeClient:
    """Records creates; raises `error` when set."""

    error: Exception | None = None
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    async def create(self, resource: Any, body: dict[str, Any], namespace: str | None = None, *,
                     name: str | None = None, subresource: str | None = None) -> dict[str, Any]:
        self.calls.append((resource, body, namespace, name, subresource))
        if self.error is not None:
            raise self.error
        return {"kind": "Status", "status": "Success"}


@dataclass
class FakeHandle:
    snapshot: FakeSnapshot = field(default_factory=FakeSnapshot)
    client: FakeClient = field(default_factory=FakeClient)


# --- PrioritySort ------------------------------------------------------------------------------------------


def queued(priority: int | None, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo.of(pod(priority=priority)), timestamp=timestamp)


@pytest.mark.parametrize("a, b, expected", [
    case("higher priority goes first", queued(10, 5.0), queued(1, 1.0), True),
    case("lower priority goes after", queued(1, 1.0), queued(10, 5.0), False),
    case("equal priority: the earlier timestamp goes first", queued(5, 1.0), queued(5, 2.0), True),
    case("equal priority and time: neither is less", queued(5, 1.0), queued(5, 1.0), False),
    case("no priority counts as zero", queued(None, 1.0), queued(-1, 0.0), True),
])
def test_priority_sort(a: QueuedPodInfo, b: QueuedPodInfo, expected: bool) -> None:
    assert PrioritySort({}, FakeHandle()).less(a, b) is expected


# --- SchedulingGates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("gates, message", [
    case("a pod without gates is enqueued", None, None),
    case("an empty gate list is no gate", [], None),
    case("one gate is named as kube prints it", ["example.com/quota"], "waiting for scheduling gates: "
                                                                       "[example.com/quota]"),
    case("several gates are space-separated", ["a", "b"], "waiting for scheduling gates: [a b]"),
])
def test_scheduling_gates(gates: list[str] | None, message: str | None) -> None:
    status = SchedulingGates({}, FakeHandle()).pre_enqueue(pod(gates=gates))
    if message is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [message])


def test_scheduling_gates_wait_for_their_own_pod_losing_its_gates() -> None:
    [registration] = SchedulingGates({}, FakeHandle()).events_to_register()
    assert registration.event == ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    gated = pod(uid="u1", gates=["g"])
    assert registration.hint(gated, gated, pod(uid="u1")) is QueueingHint.QUEUE
    assert registration.hint(gated, pod(uid="u2", gates=["g"]), pod(uid="u2")) is QueueingHint.SKIP


# --- NodeUnschedulable -------------------------------------------------------------------------------------

UNSCHEDULABLE_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                            "effect": "NoSchedule"}


@pytest.mark.parametrize("unschedulable, tolerations, passes", [
    case("a schedulable node passes", False, None, True),
    case("a cordoned node rejects the pod", True, None, False),
    case("a pod tolerating the unschedulable taint passes a cordoned node", True, [UNSCHEDULABLE_TOLERATION], True),
    case("a toleration of everything passes a cordoned node", True, [{"operator": "Exists"}], True),
    case("a toleration for another effect does not help", True,
         [dict(UNSCHEDULABLE_TOLERATION, effect="NoExecute")], False),
])
def test_node_unschedulable(unschedulable: bool, tolerations: list[dict[str, Any]] | None, passes: bool) -> None:
    plugin, incoming = NodeUnschedulable({}, FakeHandle()), pod(tolerations=tolerations)
    status = plugin.filter(CycleState(), incoming, node_info(unschedulable=unschedulable))
    batch = plugin.filter_nodes(CycleState(), incoming, [node_info("open"), node_info(unschedulable=unschedulable)])
    assert list(batch) == ([] if passes else [1]) and all(s.reasons == status.reasons for s in batch.values())
    if passes:
        assert is_success(status)
    else:
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) were unschedulable"])


@pytest.mark.parametrize("old, new, hint", [
    case("an added schedulable node queues", None, node(), QueueingHint.QUEUE),
    case("an added cordoned node does not", None, node(unschedulable=True), QueueingHint.SKIP),
    case("an uncordoned node queues", node(unschedulable=True), node(), QueueingHint.QUEUE),
    case("a node that stays schedulable does not", node(), node(), QueueingHint.SKIP),
])
def test_node_unschedulable_queueing_hint(old: Any, new: Any, hint: QueueingHint) -> None:
    node_event = NodeUnschedulable({}, FakeHandle()).events_to_register()[0]
    assert node_event.event == ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT)
    assert node_event.hint(pod(), old, new) is hint


# --- NodeName ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wanted, node_name, passes", [
    case("a pod without nodeName fits any node", "", "n1", True),
    case("a pod fits the node it names", "n1", "n1", True),
    case("a pod does not fit another node", "n2", "n1", False),
])
def test_node_name(wanted: str, node_name: str, passes: bool) -> None:
    plugin, incoming = NodeName({}, FakeHandle()), pod(node_name=wanted)
    status = plugin.filter(CycleState(), incoming, node_info(node_name))
    batch = plugin.filter_nodes(CycleState(), incoming, [node_info(node_name), node_info(wanted or "other")])
    assert list(batch) == ([] if passes else [0]) and all(s.reasons == status.reasons for s in batch.values())
    if passes:
        assert is_success(status)
    else:
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                 ["node(s) didn't match the requested node name"])


def test_node_name_queues_only_for_the_named_node() -> None:
    [registration] = NodeName({}, FakeHandle()).events_to_register()
    assert registration.hint(pod(node_name="n2"), None, node("n2")) is QueueingHint.QUEUE
    assert registration.hint(pod(node_name="n2"), None, node("n3")) is QueueingHint.SKIP


# --- NodePorts ---------------------------------------------------------------------------------------------


def port(host_port: int, protocol: str = "", host_ip: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"containerPort": 80, "hostPort": host_port}
    if protocol:
        entry["protocol"] = protocol
    if host_ip:
        entry["hostIP"] = host_ip
    return entry


def run_node_ports(wanted: list[dict[str, Any]], used: list[dict[str, Any]]) -> Any:
    plugin, state, incoming = NodePorts({}, FakeHandle()), CycleState(), pod(ports=wanted)
    _, status = plugin.pre_filter(state, incoming, [])
    if status is not None:
        return status
    info = node_info(pods=(pod("other", uid="o", ports=used),) if used else ())
    return plugin.filter(state, incoming, info)


@pytest.mark.parametrize("wanted, used, conflict", [
    case("a free port fits", [port(8080)], [port(9090)], False),
    case("the same TCP port conflicts", [port(8080)], [port(8080)], True),
    case("the same port with another protocol fits", [port(8080, "UDP")], [port(8080)], False),
    case("different specific IPs fit", [port(8080, host_ip="10.0.0.1")], [port(8080, host_ip="10.0.0.2")], False),
    case("the same specific IP conflicts", [port(8080, host_ip="10.0.0.1")], [port(8080, host_ip="10.0.0.1")],
         True),
    case("all addresses conflict with a specific IP", [port(8080)], [port(8080, host_ip="10.0.0.2")], True),
    case("a specific IP conflicts with all addresses", [port(8080, host_ip="10.0.0.1")], [port(8080, host_ip="0.0.0.0")],
         True),
    case("a node without used ports fits", [port(8080)], [], False),
])
def test_node_ports(wanted: list[dict[str, Any]], used: list[dict[str, Any]], conflict: bool) -> None:
    status = run_node_ports(wanted, used)
    if conflict:
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE,
                                                 ["node(s) didn't have free ports for the requested pod ports"])
    else:
        assert is_success(status)


def test_node_ports_skip_pods_without_host_ports() -> None:
    _, status = NodePorts({}, FakeHandle()).pre_filter(CycleState(), pod(ports=[{"containerPort": 80}]), [])
    assert status is not None and status.code == Code.SKIP


def test_node_ports_queue_when_a_pod_holding_the_port_is_deleted() -> None:
    pod_event, node_event = NodePorts({}, FakeHandle()).events_to_register()
    assert (pod_event.event, node_event.event) == (ClusterEvent("Pod", ActionType.DELETE),
                                                   ClusterEvent("Node", ActionType.ADD))
    waiting = pod(ports=[port(8080)])
    holder = dict(pod("h", uid="h", ports=[port(8080)]))
    holder["spec"] = dict(holder["spec"], nodeName="n1")
    assert pod_event.hint(waiting, holder, None) is QueueingHint.QUEUE
    assert pod_event.hint(pod(ports=[port(9090)]), holder, None) is QueueingHint.SKIP
    assert pod_event.hint(waiting, pod("h", ports=[port(8080)]), None) is QueueingHint.SKIP, "never bound"


# --- ImageLocality -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, normalized", [
    case("a bare name gets latest", "nginx", "nginx:latest"),
    case("a tag is kept", "nginx:1.25", "nginx:1.25"),
    case("a registry port is not a tag", "registry:5000/app", "registry:5000/app:latest"),
    case("a registry port and a tag", "registry:5000/app:v1", "registry:5000/app:v1"),
])
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


def image_node(name: str, images: dict[str, tuple[int, int]]) -> NodeInfo:
    info = node_info(name)
    info.image_states = {image: ImageStateSummary(size * MB, nodes) for image, (size, nodes) in images.items()}
    return info


@pytest.mark.parametrize("images, node_images, total_nodes, expected", [
    case("no image on the node scores 0", ["nginx"], {}, 1, 0),
    case("an image below 23MB scores 0", ["small"], {"small:latest": (20, 1)}, 1, 0),
    case("a 500MB image on the only node", ["big"], {"big:latest": (500, 1)}, 1, 100 * (500 - 23) // (1000 - 23)),
    case("an image on half the nodes counts half", ["big"], {"big:latest": (500, 1)}, 2,
         100 * (250 - 23) // (1000 - 23)),
    case("the sum is capped at 1000MB per container", ["huge"], {"huge:latest": (3000, 1)}, 1, 100),
    case("two containers double the ceiling", ["big", "other"], {"big:latest": (1000, 1)}, 1,
         100 * (1000 - 23) // (2000 - 23)),
])
def test_image_locality(images: list[str], node_images: dict[str, tuple[int, int]], total_nodes: int,
                        expected: int) -> None:
    target = image_node("n0", node_images)
    handle = FakeHandle(FakeSnapshot([target] + [node_info(f"n{i}") for i in range(1, total_nodes)]))
    plugin, state, incoming = ImageLocality({}, handle), CycleState(), pod(images=images)
    assert plugin.pre_score(state, incoming, handle.snapshot.nodes) is None
    assert plugin.score(state, incoming, target) == (expected, None)
    assert plugin.score_nodes(state, incoming, handle.snapshot.nodes) == ([expected] + [0] * (total_nodes - 1), None)


# --- DefaultBinder -----------------------------------------------------------------------------------------


async def test_default_binder_posts_a_binding() -> None:
    handle = FakeHandle()
    status = await DefaultBinder({}, handle).bind(CycleState(), pod("web", uid="u-1"), "n7")
    assert status is None
    assert handle.client.calls == [(resources.PODS, {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"namespace": "default", "name": "web", "uid": "u-1"},
        "target": {"kind": "Node", "name": "n7"}}, "default", "web", "binding")]


async def test_default_binder_turns_failures_into_an_error_status() -> None:
    handle = FakeHandle(client=FakeClient(error=RuntimeError('pods "web" not found')))
    status = await DefaultBinder({}, handle).bind(CycleState(), pod("web"), "n7")
    assert status is not None
    assert (status.code, status.reasons) == (Code.ERROR, ['pods "web" not found'])


# --- default_normalize_score -------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, reverse, normalized", [
    case("the highest becomes 100", [1, 2, 4], False, [25, 50, 100]),
    case("reversed: the highest becomes 0", [1, 2, 4], True, [75, 50, 0]),
    case("all zero stays zero", [0, 0], False, [0, 0]),
    case("all zero reversed becomes 100", [0, 0], True, [100, 100]),
    case("division truncates", [1, 3], False, [33, 100]),
])
def test_default_normalize_score(raw: list[int], reverse: bool, normalized: list[int]) -> None:
    scores = [NodeScore(f"n{i}", score) for i, score in enumerate(raw)]
    default_normalize_score(scores, reverse=reverse)
    assert [s.score for s in scores] == normalized
    assert plugins.normalized(raw, reverse=reverse) == normalized

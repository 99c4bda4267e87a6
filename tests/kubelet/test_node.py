"""The kubelet's Node status heartbeat (minikube_py/kubelet/node.py) against a recording client: what it patches
depends on the Node the apiserver holds (the agent's informer cache, filled here by hand), not only on what the
kubelet itself reported last. The Node's pod CIDRs go the other way: the kubelet reads them and passes them on
to the runtime, never writes them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import grpc

from minikube_py.apiserver.patch import MERGE_PATCH, STRATEGIC_MERGE_PATCH, apply_patch
from minikube_py.client import errors
from minikube_py.kubelet import nodestatus
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.errors import CRIError
from minikube_py.kubelet.node import NodeAgent
from tests.kcm.fakes import Action, RecordingClient


class NodeClient(RecordingClient):
    """Holds one Node and answers as the apiserver does: a create of an existing Node fails, patches are applied
    with the apiserver's own patch code (a status patch changes only the status, as our `nodes/status` does)
    and answered with the patched Node."""

    def __init__(self) -> None:
        super().__init__()
        self.node: dict[str, Any] = {}

    async def create(self, resource: Any, body: dict[str, Any], namespace: str | None = None,
                     **options: Any) -> dict[str, Any]:
        if self.node:
            raise errors.AlreadyExists({"code": 409, "reason": "AlreadyExists"})
        self.node = await super().create(resource, body, namespace, **options)
        return copy.deepcopy(self.node)

    async def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self._record(Action("get", resource.plural, namespace or "", name))
        return copy.deepcopy(self.node)

    async def patch(self, resource: Any, name: str, body: Any, namespace: str | None = None,
                    **options: Any) -> dict[str, Any]:
        await super().patch(resource, name, body, namespace, **options)
        content_type = STRATEGIC_MERGE_PATCH if options.get("patch_type") == "strategic" else MERGE_PATCH
        patched = apply_patch(content_type, self.node, body, ("", "v1", "Node"))
        if options.get("subresource") == "status":
            self.node["status"] = patched["status"]
        else:
            self.node = patched | {"status": self.node["status"]}
        return copy.deepcopy(self.node)


class RuntimeNetwork:
    """The runtime's pod network as containerd with a CNI template keeps it: not ready until the first
    UpdateRuntimeConfig; `failing` makes the next call fail as an unreachable runtime does."""

    def __init__(self, ready: bool) -> None:
        self.ready = ready
        self.passed: list[str] = []  # every UpdateRuntimeConfig's pod CIDR
        self.failing = False

    async def update_runtime_config(self, pod_cidr: str) -> None:
        if self.failing:
            self.failing = False
            raise CRIError("UpdateRuntimeConfig", grpc.StatusCode.UNAVAILABLE, "container runtime is not reachable")
        self.passed.append(pod_cidr)
        self.ready = True

    def observed(self, node_ip: str) -> nodestatus.Observed:
        """What the kubelet observes of a runtime with this network (kubelet.py's `observe`)."""
        network = cri.RuntimeCondition(type="NetworkReady", status=self.ready)
        if not self.ready:
            network.reason, network.message = ("NetworkPluginNotReady",
                                               "Network plugin returns error: cni plugin not initialized")
        conditions = [cri.RuntimeCondition(type="RuntimeReady", status=True), network]
        return nodestatus.Observed(runtime_version="fake://0.1", node_ip=node_ip, network_ready=self.ready,
                                   runtime_error=nodestatus.runtime_errors(conditions))


async def registered(tmp_path: Path, client: NodeClient | None = None, network: RuntimeNetwork | None = None,
                     **config: Any) -> tuple[NodeAgent, NodeClient, list[tuple[str, str, str]]]:
    """A NodeAgent for node sim-1 (`config`: more KubeletConfig fields), registered through `client`, with a
    runtime whose pod network is `network` (default: one that is ready)."""
    client = client or NodeClient()
    network = network or RuntimeNetwork(ready=True)
    events: list[tuple[str, str, str]] = []
    kubelet_config = KubeletConfig(node_name="sim-1", root_dir=tmp_path, **config)

    async def observe() -> nodestatus.Observed:  # the node IP as the kubelet observes it
        return network.observed(kubelet_config.node_ip or "127.0.0.1")

    agent = NodeAgent(client, kubelet_config, observe, network.update_runtime_config,
                      lambda *event: events.append(event))  # type: ignore[arg-type]
    await agent.register()
    return agent, client, events


def marked_unknown(node: dict[str, Any]) -> dict[str, Any]:
    """The Node as the node lifecycle controller leaves it when the kubelet stopped posting."""
    node = copy.deepcopy(node)
    for condition in node["status"]["conditions"]:
        condition.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.",
                         lastTransitionTime="2030-01-01T00:00:00Z")
    return node


def ready_condition(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == "Ready")


async def test_nothing_is_patched_while_the_apiservers_node_matches(tmp_path: Path) -> None:
    agent, client, _ = await registered(tmp_path)
    assert await agent.update_status() is False
    agent.informer.indexer.add(copy.deepcopy(client.node))  # the watch saw what the kubelet registered
    assert await agent.update_status() is False
    assert client.writes("patch") == []


NODE_EVENTS = [("Normal", reason, f"Node sim-1 status is now: {reason}")
               for reason in ("NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady")]


async def test_a_new_node_records_each_of_its_conditions_as_kubes_kubelet_does(tmp_path: Path) -> None:
    agent, client, events = await registered(tmp_path)
    assert events == NODE_EVENTS  # what `kubectl describe node` lists under Events for a new node
    agent.informer.indexer.add(copy.deepcopy(client.node))
    await agent.update_status(force=True)
    assert events == NODE_EVENTS  # a report that changes no condition records nothing


async def test_conditions_marked_unknown_by_the_controller_are_reported_again_at_the_next_tick(tmp_path: Path) -> None:
    agent, client, events = await registered(tmp_path)
    events.clear()
    agent.informer.indexer.add(marked_unknown(client.node))

    assert await agent.update_status() is True  # not waiting for the periodic report, a minute away
    (patch,) = client.writes("patch")
    assert (patch.resource, patch.name) == ("nodes/status", "sim-1")
    ready = ready_condition(patch.body["status"])
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert ready["lastTransitionTime"] != "2030-01-01T00:00:00Z"  # Unknown -> True is a transition
    assert events == NODE_EVENTS  # every condition is back from Unknown

    agent.informer.indexer.update(copy.deepcopy(client.node))  # the watch brings the patched Node back
    assert await agent.update_status() is False
    assert len(client.writes("patch")) == 1


async def test_without_the_watch_the_last_report_is_compared(tmp_path: Path) -> None:
    agent, client, _ = await registered(tmp_path)
    assert agent.informer.indexer.get_by_key("sim-1") is None
    assert await agent.update_status(force=True) is True
    assert await agent.update_status() is False
    assert len(client.writes("patch")) == 1


# the pod CIDR: from the Node to the runtime ------------------------------------------------------------------

NETWORK_NOT_READY = ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                     "message:Network plugin returns error: cni plugin not initialized")


def allocated(client: NodeClient, *cidrs: str) -> dict[str, Any]:
    """node-ipam gives the Node its pod CIDRs; the Node as the kubelet's watch then sees it."""
    client.node = copy.deepcopy(client.node)  # not the Node the recorded create holds
    client.node["spec"] |= {"podCIDR": cidrs[0], "podCIDRs": list(cidrs)}
    return copy.deepcopy(client.node)


def pod_cidrs_written(client: NodeClient) -> bool:
    return any("podCIDR" in json.dumps(action.body) for action in client.writes())


async def test_a_new_node_is_not_ready_until_its_pod_cidr_reaches_the_runtime(tmp_path: Path) -> None:
    network = RuntimeNetwork(ready=False)
    agent, client, events = await registered(tmp_path, network=network)
    ready = ready_condition(client.node["status"])
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "KubeletNotReady", NETWORK_NOT_READY)
    assert ("Normal", "NodeNotReady", "Node sim-1 status is now: NodeNotReady") in events
    assert await agent.update_status() is False and network.passed == []  # nothing to pass on yet

    agent.informer.indexer.add(allocated(client, "10.244.3.0/24"))
    assert await agent.update_status() is True
    assert network.passed == ["10.244.3.0/24"]
    ready = ready_condition(client.node["status"])
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")  # reported at once, not a tick later
    assert events[-1] == ("Normal", "NodeReady", "Node sim-1 status is now: NodeReady")

    agent.informer.indexer.update(copy.deepcopy(client.node))
    assert await agent.update_status() is False
    assert network.passed == ["10.244.3.0/24"]  # unchanged CIDRs are not passed again
    assert not pod_cidrs_written(client)


async def test_pod_cidrs_that_change_are_passed_on_again_joined_by_commas(tmp_path: Path) -> None:
    network = RuntimeNetwork(ready=False)
    agent, client, _ = await registered(tmp_path, network=network)
    agent.informer.indexer.add(allocated(client, "10.244.3.0/24"))
    await agent.update_status()
    # the Node was deleted and registered again, and node-ipam gave the new one other CIDRs (dual-stack)
    agent.informer.indexer.update(allocated(client, "10.244.7.0/24", "fd00:7::/64"))
    assert await agent.update_status() is True
    assert network.passed == ["10.244.3.0/24", "10.244.7.0/24,fd00:7::/64"]
    assert not pod_cidrs_written(client)


async def test_the_pod_cidr_flag_is_passed_at_start_and_the_nodes_cidrs_win(tmp_path: Path) -> None:
    network = RuntimeNetwork(ready=False)
    agent, client, _ = await registered(tmp_path, network=network, pod_cidr="10.9.0.0/24")
    assert network.passed == ["10.9.0.0/24"]
    assert ready_condition(client.node["status"])["status"] == "True"  # registered with its network ready
    assert "podCIDR" not in client.node["spec"] and not pod_cidrs_written(client)
    assert await agent.update_status() is False and network.passed == ["10.9.0.0/24"]

    agent.informer.indexer.add(allocated(client, "10.244.3.0/24"))
    await agent.update_status()
    assert network.passed == ["10.9.0.0/24", "10.244.3.0/24"]


async def test_a_failed_pass_is_retried_and_a_runtime_that_lost_its_network_gets_the_cidr_again(
        tmp_path: Path) -> None:
    network = RuntimeNetwork(ready=False)
    agent, client, _ = await registered(tmp_path, network=network)
    agent.informer.indexer.add(allocated(client, "10.244.3.0/24"))
    network.failing = True
    await agent.update_status()
    assert network.passed == [] and ready_condition(client.node["status"])["status"] == "False"
    await agent.update_status()  # the next tick
    assert network.passed == ["10.244.3.0/24"] and ready_condition(client.node["status"])["status"] == "True"

    network.ready = False  # a fake runtime restarted: it keeps its network in memory only
    agent.informer.indexer.update(copy.deepcopy(client.node))
    await agent.update_status()
    assert network.passed == ["10.244.3.0/24"] * 2
    assert ready_condition(client.node["status"])["status"] == "True"


def test_the_ready_message_says_what_of_the_runtime_is_not_ready_in_kubes_words() -> None:
    runtime_ready = cri.RuntimeCondition(type="RuntimeReady", status=True)
    runtime_down = cri.RuntimeCondition(type="RuntimeReady", status=False, reason="Broken", message="no shim")
    network_down = cri.RuntimeCondition(type="NetworkReady", status=False, reason="NetworkPluginNotReady",
                                        message="Network plugin returns error: cni plugin not initialized")
    network_ready = cri.RuntimeCondition(type="NetworkReady", status=True)
    assert nodestatus.runtime_errors([runtime_ready, network_ready]) == ""
    assert nodestatus.runtime_errors([runtime_ready, network_down]) == NETWORK_NOT_READY
    assert nodestatus.runtime_errors([runtime_down, network_down]) == (
        f"[container runtime not ready: RuntimeReady=false reason:Broken message:no shim, {NETWORK_NOT_READY}]")
    assert nodestatus.runtime_errors([runtime_ready]) == "container runtime network not ready: <nil>"

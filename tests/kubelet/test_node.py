"""The kubelet's Node status heartbeat (minikube_py/kubelet/node.py) against a recording client: what it patches
depends on the Node the apiserver holds (the agent's informer cache, filled here by hand), not only on what the
kubelet itself reported last."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from minikube_py.apiserver.patch import MERGE_PATCH, STRATEGIC_MERGE_PATCH, apply_patch
from minikube_py.client import errors
from minikube_py.kubelet import nodestatus
from minikube_py.kubelet.config import KubeletConfig
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


async def registered(tmp_path: Path, client: NodeClient | None = None,
                     **config: Any) -> tuple[NodeAgent, NodeClient, list[tuple[str, str, str]]]:
    """A NodeAgent for node sim-1 (`config`: more KubeletConfig fields), registered through `client`."""
    client = client or NodeClient()
    events: list[tuple[str, str, str]] = []
    kubelet_config = KubeletConfig(node_name="sim-1", root_dir=tmp_path, **config)

    async def observe() -> nodestatus.Observed:  # the node IP as the kubelet observes it
        return nodestatus.Observed(runtime_version="fake://0.1", node_ip=kubelet_config.node_ip or "127.0.0.1")

    agent = NodeAgent(client, kubelet_config, observe, lambda *event: events.append(event))  # type: ignore[arg-type]
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

"""The kubelet's Node status heartbeat (minikube_py/kubelet/node.py) against a recording client: what it patches
depends on the Node the apiserver holds (the agent's informer cache, filled here by hand), not only on what the
kubelet itself reported last."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from minikube_py.kubelet import nodestatus
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.node import NodeAgent
from tests.kcm.fakes import RecordingClient


class NodeClient(RecordingClient):
    """Answers a status patch with the patched Node, as the apiserver does."""

    def __init__(self) -> None:
        super().__init__()
        self.node: dict[str, Any] = {}

    async def create(self, resource: Any, body: dict[str, Any], namespace: str | None = None,
                     **options: Any) -> dict[str, Any]:
        self.node = await super().create(resource, body, namespace, **options)
        return copy.deepcopy(self.node)

    async def patch(self, resource: Any, name: str, body: Any, namespace: str | None = None,
                    **options: Any) -> dict[str, Any]:
        await super().patch(resource, name, body, namespace, **options)
        self.node["status"] = copy.deepcopy(body["status"])
        return copy.deepcopy(self.node)


async def observe() -> nodestatus.Observed:
    return nodestatus.Observed(runtime_version="fake://0.1", node_ip="127.0.0.1")


async def registered(tmp_path: Path) -> tuple[NodeAgent, NodeClient, list[tuple[str, str, str]]]:
    client = NodeClient()
    events: list[tuple[str, str, str]] = []
    agent = NodeAgent(client, KubeletConfig(node_name="sim-1", root_dir=tmp_path),  # type: ignore[arg-type]
                      observe, lambda *event: events.append(event))
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


async def test_conditions_marked_unknown_by_the_controller_are_reported_again_at_the_next_tick(tmp_path: Path) -> None:
    agent, client, events = await registered(tmp_path)
    agent.informer.indexer.add(marked_unknown(client.node))

    assert await agent.update_status() is True  # not waiting for the periodic report, a minute away
    (patch,) = client.writes("patch")
    assert (patch.resource, patch.name) == ("nodes/status", "sim-1")
    ready = ready_condition(patch.body["status"])
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert ready["lastTransitionTime"] != "2030-01-01T00:00:00Z"  # Unknown -> True is a transition
    assert events == [("Normal", "NodeReady", "Node sim-1 status is now: NodeReady")]

    agent.informer.indexer.update(copy.deepcopy(client.node))  # the watch brings the patched Node back
    assert await agent.update_status() is False
    assert len(client.writes("patch")) == 1


async def test_without_the_watch_the_last_report_is_compared(tmp_path: Path) -> None:
    agent, client, _ = await registered(tmp_path)
    assert agent.informer.indexer.get_by_key("sim-1") is None
    assert await agent.update_status(force=True) is True
    assert await agent.update_status() is False
    assert len(client.writes("patch")) == 1

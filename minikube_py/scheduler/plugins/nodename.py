"""NodeName: a pod that names its node in `spec.nodeName` fits only that node (Filter).

The scheduler only queues pods without a node, so in a live cluster this filter rarely rejects anything; it
is kept for parity with kube, where the same check guards simulations (preemption's what-if runs, the cluster
autoscaler) that feed pods with `spec.nodeName` already set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    Pod,
    QueueingHint,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = "NodeName"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        wanted = (pod.get("spec") or {}).get("nodeName")
        if not wanted or wanted == node_info.name:
            return None
        return Status.unschedulable(ERR_REASON, resolvable=False)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[int, Status]:
        if not (pod.get("spec") or {}).get("nodeName"):  # the usual pod: every node will do
            return {}
        return {index: status for index, node_info in enumerate(nodes)
                if (status := self.filter(state, pod, node_info)) is not None}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD), _is_schedulable_after_node_add)]


def _is_schedulable_after_node_add(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new node only helps when it is the one the pod names."""
    wanted = (pod.get("spec") or {}).get("nodeName")
    added = ((new or {}).get("metadata") or {}).get("name")
    return QueueingHint.QUEUE if not wanted or wanted == added else QueueingHint.SKIP

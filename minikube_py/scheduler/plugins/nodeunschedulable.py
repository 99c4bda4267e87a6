"""NodeUnschedulable: cordoned nodes (`spec.unschedulable: true`, what `kubectl cordon` sets) take no new pods.

A pod may still go there when it tolerates the `node.kubernetes.io/unschedulable:NoSchedule` taint that the
node lifecycle controller mirrors from the field (DaemonSet pods do). The field changes arrive as node taint
updates in kube's event vocabulary, hence the UpdateNodeTaint registration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.api.taints import (
    NO_SCHEDULE,
    TAINT_NODE_UNSCHEDULABLE,
    Taint,
    pod_tolerations,
    tolerations_tolerate_taint,
)
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
from minikube_py.scheduler.plugins import is_own_pod_update

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)


class NodeUnschedulable:
    name = "NodeUnschedulable"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not node_info.unschedulable:
            return None
        if tolerations_tolerate_taint(pod_tolerations(pod), _UNSCHEDULABLE_TAINT):
            return None
        return Status.unschedulable(ERR_REASON_UNSCHEDULABLE, resolvable=False)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[int, Status]:
        return {index: status for index, node_info in enumerate(nodes)
                if node_info.unschedulable and (status := self.filter(state, pod, node_info)) is not None}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                 _is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION), is_own_pod_update),
        ]


def _schedulable(node: Any) -> bool:
    return isinstance(node, dict) and not (node.get("spec") or {}).get("unschedulable")


def _is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when a node became schedulable (was cordoned or did not exist, and now is not cordoned)."""
    return QueueingHint.QUEUE if _schedulable(new) and not _schedulable(old) else QueueingHint.SKIP


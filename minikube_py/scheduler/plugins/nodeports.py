"""NodePorts: a pod asking for host ports (`containers[].ports[].hostPort`) only fits nodes where no other pod
holds the same protocol and port on an overlapping address (PreFilter, Filter).

Two bindings conflict when their protocol and port are equal and their host IPs overlap: the same IP, or
either one is `0.0.0.0` (all addresses, also what an empty `hostIP` means). PreFilter collects the pod's
ports once, and returns Skip for the usual pod that asks for none, so Filter does not run at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    Pod,
    PreFilterResult,
    QueueingHint,
    Status,
)
from minikube_py.scheduler.framework.types import HostPort, NodeInfo

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
ALL_ADDRESSES = "0.0.0.0"
_PRE_FILTER_KEY = "PreFilterNodePorts"


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """The host ports the pod's containers (init containers included) bind, with kube's defaults filled in."""
    spec = pod.get("spec") or {}
    wanted = []
    for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        for port in (container.get("ports") or []) if isinstance(container, dict) else []:
            number = port.get("hostPort") if isinstance(port, dict) else None
            if isinstance(number, int) and number > 0:
                wanted.append(HostPort(port.get("hostIP") or ALL_ADDRESSES, port.get("protocol") or "TCP", number))
    return tuple(wanted)


def conflicts(wanted: HostPort, used: set[HostPort]) -> bool:
    """Whether `wanted` collides with one of the bindings in `used`."""
    if wanted in used or HostPort(ALL_ADDRESSES, wanted.protocol, wanted.port) in used:
        return True
    if wanted.ip != ALL_ADDRESSES:
        return False
    for binding in used:  # all addresses: any IP holding the same protocol and port is in the way
        if binding.port == wanted.port and binding.protocol == wanted.protocol:
            return True
    return False


class NodePorts:
    name = "NodePorts"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        wanted = host_ports(pod)
        if not wanted:
            return None, Status(Code.SKIP)
        state.write(_PRE_FILTER_KEY, wanted)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        used = node_info.used_ports
        if not used:
            return None
        try:
            wanted = state.read(_PRE_FILTER_KEY)
        except KeyError:  # PreFilter disabled in this profile
            wanted = host_ports(pod)
        for port in wanted:
            if conflicts(port, used):
                return Status.unschedulable(ERR_REASON)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE), _is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
        ]


def _is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a deleted pod that was bound somewhere and held one of the ports this pod wants frees anything."""
    if not isinstance(old, dict) or not (old.get("spec") or {}).get("nodeName"):
        return QueueingHint.SKIP
    freed = set(host_ports(old))
    return QueueingHint.QUEUE if any(conflicts(port, freed) for port in host_ports(pod)) else QueueingHint.SKIP

"""SchedulingGates: keeps pods with `spec.schedulingGates` out of the active queue (PreEnqueue).

A pod created with scheduling gates (`[{name: example.com/quota-check}]`) waits, unscheduled and with the
PodScheduled condition reason `SchedulingGated`, until whoever owns each gate removes it with an update; the
apiserver only allows gates to be removed, never added. When the last gate goes, the queue sees a Pod update
that eliminated the gates (the event this plugin registers) and runs PreEnqueue again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    Handle,
    Pod,
    Status,
)
from minikube_py.scheduler.plugins import is_own_pod_update


class SchedulingGates:
    name = "SchedulingGates"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def pre_enqueue(self, pod: Pod) -> Status | None:
        gates = (pod.get("spec") or {}).get("schedulingGates")
        if not gates:
            return None
        names = [gate.get("name", "") if isinstance(gate, dict) else str(gate) for gate in gates]
        # Go's %v of a []string: "[a b]".
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f"waiting for scheduling gates: [{' '.join(names)}]"])

    def events_to_register(self) -> list[ClusterEventWithHint]:
        event = ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
        return [ClusterEventWithHint(event, is_own_pod_update)]


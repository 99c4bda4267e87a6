"""The Pod printer: READY, STATUS and RESTARTS as `kubectl get pods` shows them.

STATUS is not a field of the pod but kube's summary of it (printers.go `printPod`), computed in this order:
1. start from `status.phase`, replaced by `status.reason` when set (`Evicted`, `NodeLost`, ...), and by
   `SchedulingGated` while the PodScheduled condition says so;
2. walk the init containers in order: the first one that has not finished sets `Init:<reason>`,
   `Init:ExitCode:<n>`, `Init:Signal:<n>` or `Init:<i>/<n>`; started sidecars (init containers with
   `restartPolicy: Always`) count as ready containers instead;
3. once initialized, walk the app containers last to first so the first container's waiting or
   terminated reason wins (`ContainerCreating`, `CrashLoopBackOff`, `Completed`, `Error`, `ExitCode:<n>`);
   a pod whose containers say `Completed` while one still runs reads `Running` (or `NotReady`);
4. a pod being deleted reads `Terminating`, or `Unknown` when its node was lost.

RESTARTS is the sum of restart counts, with `(<age> ago)` of the most recent container termination.
Rows of finished pods carry the `Completed` row condition kube attaches to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import (
    age,
    being_deleted,
    condition_status,
    human_duration,
    object_name,
    parse_time,
)

_TERMINAL_PHASES = ("Succeeded", "Failed")
_NODE_LOST = "NodeLost"


@dataclass
class _Tally:
    """What walking a pod's container statuses has found so far."""

    reason: str
    ready: int = 0
    restarts: int = 0
    last_restart: datetime | None = None
    initializing: bool = False

    def count_restarts(self, status: dict[str, Any]) -> None:
        self.restarts += status.get("restartCount", 0)
        self.last_restart = _later(self.last_restart, _last_termination(status))


def _later(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is None or (current is not None and current >= candidate):
        return current
    return candidate


def _last_termination(status: dict[str, Any]) -> datetime | None:
    terminated = (status.get("lastState") or {}).get("terminated") or {}
    return parse_time(terminated.get("finishedAt"))


def _sidecar_names(spec: dict[str, Any]) -> set[str]:
    """Init containers that keep running beside the app containers (`restartPolicy: Always`)."""
    return {c.get("name", "") for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"}


def _exit_reason(terminated: dict[str, Any]) -> str:
    if terminated.get("signal"):
        return f"Signal:{terminated['signal']}"
    return f"ExitCode:{terminated.get('exitCode', 0)}"


def _walk_init_containers(pod: dict[str, Any], tally: _Tally, sidecars: set[str]) -> _Tally:
    """Tally init containers until the first unfinished one; returns the sidecars' own tally."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    sidecar_tally = _Tally(reason="")
    for index, container in enumerate(status.get("initContainerStatuses") or []):
        tally.count_restarts(container)
        is_sidecar = container.get("name") in sidecars
        if is_sidecar:
            sidecar_tally.count_restarts(container)
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting") or {}
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if is_sidecar and container.get("started"):
            tally.ready += 1 if container.get("ready") else 0
            continue
        if terminated is not None:
            tally.reason = "Init:" + (terminated.get("reason") or _exit_reason(terminated))
        elif waiting.get("reason") and waiting["reason"] != "PodInitializing":
            tally.reason = "Init:" + waiting["reason"]
        else:
            tally.reason = f"Init:{index}/{len(spec.get('initContainers') or [])}"
        tally.initializing = True
        break
    return sidecar_tally


def _walk_containers(pod: dict[str, Any], tally: _Tally, sidecar_tally: _Tally) -> None:
    """Tally app containers; restarts then count only sidecars and app containers, as in kube."""
    status = pod.get("status") or {}
    tally.restarts, tally.last_restart = sidecar_tally.restarts, sidecar_tally.last_restart
    has_running = False
    for container in reversed(status.get("containerStatuses") or []):
        tally.count_restarts(container)
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting") or {}
        if waiting.get("reason"):
            tally.reason = waiting["reason"]
        elif terminated is not None:
            tally.reason = terminated.get("reason") or _exit_reason(terminated)
        elif container.get("ready") and state.get("running") is not None:
            has_running = True
            tally.ready += 1
    if tally.reason == "Completed" and has_running:
        ready = condition_status(status.get("conditions"), "Ready") == "True"
        tally.reason = "Running" if ready else "NotReady"


def _initial_reason(status: dict[str, Any]) -> str:
    reason = str(status.get("reason") or status.get("phase", ""))
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    return reason


def _pod_tally(pod: dict[str, Any]) -> _Tally:
    """READY counts, STATUS reason and RESTARTS of a pod, following kube's precedence."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    tally = _Tally(reason=_initial_reason(status))
    sidecars = _sidecar_names(spec)
    sidecar_tally = _walk_init_containers(pod, tally, sidecars)
    if not tally.initializing or condition_status(status.get("conditions"), "Initialized") == "True":
        _walk_containers(pod, tally, sidecar_tally)
    if being_deleted(pod):
        if status.get("reason") == _NODE_LOST:
            tally.reason = "Unknown"
        elif status.get("phase") not in _TERMINAL_PHASES:
            tally.reason = "Terminating"
    return tally


def _restarts_cell(tally: _Tally, now: datetime) -> str:
    if tally.restarts and tally.last_restart is not None:
        return f"{tally.restarts} ({human_duration(now - tally.last_restart)} ago)"
    return str(tally.restarts)


def _pod_ip(status: dict[str, Any]) -> str:
    """The first pod IP; `status.podIP` is authoritative over `podIPs`, as in kube's v1 conversion."""
    pod_ips = status.get("podIPs") or [{}]
    return status.get("podIP") or pod_ips[0].get("ip") or "<none>"


def _readiness_gates(spec: dict[str, Any], status: dict[str, Any]) -> str:
    gates = spec.get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = status.get("conditions")
    passed = sum(condition_status(conditions, gate.get("conditionType")) == "True" for gate in gates)
    return f"{passed}/{len(gates)}"


def _pod_cells(pod: dict[str, Any], now: datetime) -> list[Cell]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    tally = _pod_tally(pod)
    total = len(spec.get("containers") or []) + len(_sidecar_names(spec))
    return [
        object_name(pod), f"{tally.ready}/{total}", tally.reason,
        _restarts_cell(tally, now), age(pod, now),
        _pod_ip(status), spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
        _readiness_gates(spec, status),
    ]


_FINISHED = {
    "Succeeded": "The pod has completed successfully.",
    "Failed": "The pod failed.",
}


def _pod_conditions(pod: dict[str, Any]) -> list[dict[str, str]]:
    """The `Completed` row condition kube puts on rows of pods that have finished."""
    phase = (pod.get("status") or {}).get("phase", "")
    if phase not in _FINISHED:
        return []
    return [{"type": "Completed", "status": "True", "reason": phase, "message": _FINISHED[phase]}]


POD = Printer(
    (
        NAME,
        Column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        Column("Status", "The aggregate status of the containers in this pod."),
        Column("Restarts", "The number of times the containers in this pod have been restarted and when the "
                           "last container in this pod has restarted."),
        AGE,
        Column("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not "
                     "yet allocated.", priority=1),
        Column("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
                       "candidate for scheduling by the scheduler defined in schedulerName. Once this field "
                       "is set, the kubelet for this node becomes responsible for the lifecycle of this pod. "
                       "This field should not be used to express a desire for the pod to be scheduled on a "
                       "specific node. "
                       "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
               priority=1),
        Column("Nominated "
               "Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
                       "cannot be scheduled right away as preemption victims receive their graceful "
                       "termination periods. This field does not guarantee that the pod will be scheduled on "
                       "this node. Scheduler may decide to place the pod elsewhere if other nodes become "
                       "available sooner. Scheduler may also decide to give the resources on this node to a "
                       "higher priority pod that is created after preemption. As a result, this field may be "
                       "different than PodSpec.nodeName when the pod is scheduled.", priority=1),
        Column("Readiness "
               "Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is "
                        "ready when all its containers are ready AND all conditions specified in the "
                        "readiness gates have status equal to \"True\" More info: "
                        "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
               priority=1),
    ),
    _pod_cells,
    _pod_conditions,
)

PRINTERS = {("", "v1", "Pod"): POD}

"""A pod's API status from what the runtime holds (kube's `generateAPIPodStatus` and `getPhase`): pure
functions, no I/O.

    status = pod_status(pod, PodStatusInputs(state, waiting, ready, ...), now)

* **containerStatuses / initContainerStatuses**: per container in the spec, from its latest container in the
  runtime: `running`, `terminated` (exit code, reason, message), or `waiting` with the reason the last sync
  left (ContainerCreating, PodInitializing, ErrImagePull, CrashLoopBackOff, ...); `lastState` is the container
  before; `restartCount`, `ready`, `started`, `image`, `imageID`, `containerID` (`containerd://<id>`).
* **phase**: Pending until every init container succeeded and every app container started; Running while one
  runs (or restarts); Succeeded when all exited 0 for good; Failed when they ended and one failed for good.
  Succeeded and Failed are final.
* **conditions**: PodReadyToStartContainers, Initialized, ContainersReady, Ready (PodScheduled is kept);
  each keeps its lastTransitionTime while its status stays.
* podIP(s) from the sandbox (the node's for hostNetwork), hostIP(s), startTime (first seen), qosClass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from minikube_py.api.jsoncopy import without_nulls
from minikube_py.api.timestamps import time_string
from minikube_py.kubelet import containerconfig
from minikube_py.kubelet.runtimestate import ContainerState, PodState

TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass
class PodStatusInputs:
    state: PodState
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)  # container -> (reason, message)
    ready: dict[str, bool] = field(default_factory=dict)  # readiness probe results; absent = no probe
    started: dict[str, bool] = field(default_factory=dict)  # startup probe results; absent = no probe
    node_ip: str = ""
    runtime_name: str = "containerd"
    termination_messages: dict[str, str] = field(default_factory=dict)  # container id -> message
    failed: bool = False  # the runtime manager decided the pod can never run


def pod_status(pod: dict[str, Any], inputs: PodStatusInputs, now: str | None = None) -> dict[str, Any]:
    now = now or time_string()
    spec, old = pod.get("spec") or {}, pod.get("status") or {}
    state = inputs.state
    init_specs, app_specs = spec.get("initContainers") or [], spec.get("containers") or []
    init_statuses = [_container_status(c, state.latest(c["name"]), state.previous(c["name"]), inputs, init=True)
                     for c in init_specs]
    app_statuses = [_container_status(c, state.latest(c["name"]), state.previous(c["name"]), inputs, init=False)
                    for c in app_specs]
    phase = old.get("phase") if old.get("phase") in TERMINAL_PHASES else _phase(spec, init_statuses,
                                                                                 app_statuses, inputs.failed)
    status: dict[str, Any] = {"phase": phase}
    sandbox = state.sandbox
    pod_ip = (inputs.node_ip if spec.get("hostNetwork") else sandbox.ip) if sandbox and sandbox.ready else ""
    if inputs.node_ip:
        status["hostIP"], status["hostIPs"] = inputs.node_ip, [{"ip": inputs.node_ip}]
    if pod_ip:
        status["podIP"], status["podIPs"] = pod_ip, [{"ip": pod_ip}]
    elif phase not in TERMINAL_PHASES and old.get("podIP"):
        status["podIP"], status["podIPs"] = old["podIP"], old.get("podIPs") or [{"ip": old["podIP"]}]
    status["startTime"] = old.get("startTime") or now
    status["qosClass"] = old.get("qosClass") or containerconfig.qos_class(pod)
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    status["containerStatuses"] = app_statuses
    status["conditions"] = _conditions(old, phase, bool(sandbox and sandbox.ready), init_statuses, app_statuses,
                                       now)
    return status


def status_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether `new` differs from the status the API has (the kubelet only patches real changes). A field
    that is null on one side and absent on the other is the same field, as in kube's typed comparison: the
    conditions' `lastProbeTime: null` the kubelet sends is not kept by the API, and must not make every
    later sync of the pod patch its status again for nothing."""
    return any(old.get(key) != value and without_nulls(old.get(key)) != without_nulls(value)
               for key, value in new.items())


def _container_status(container: dict[str, Any], latest: ContainerState | None, previous: ContainerState | None,
                      inputs: PodStatusInputs, init: bool) -> dict[str, Any]:
    name = container["name"]
    status: dict[str, Any] = {"name": name, "image": container.get("image", ""), "imageID": "",
                              "ready": False, "restartCount": 0, "started": False, "lastState": {}}
    waiting = inputs.waiting.get(name)
    if latest is None:
        reason, message = waiting or ("PodInitializing" if init else "ContainerCreating", "")
        status["state"] = {"waiting": _waiting(reason, message)}
        return status
    status["restartCount"] = latest.restart_count
    status["imageID"] = latest.image_ref
    status["containerID"] = f"{inputs.runtime_name}://{latest.id}"
    if latest.running:
        status["state"] = {"running": {"startedAt": _time(latest.started_at)}}
        started = inputs.started.get(name, True)
        status["started"] = started
        status["ready"] = started and inputs.ready.get(name, True) and not init
        if previous is not None and previous.exited:
            status["lastState"] = {"terminated": _terminated(previous, inputs)}
    elif latest.exited:
        if waiting:  # about to be restarted (CrashLoopBackOff) or failing to
            status["state"] = {"waiting": _waiting(*waiting)}
            status["lastState"] = {"terminated": _terminated(latest, inputs)}
        else:
            status["state"] = {"terminated": _terminated(latest, inputs)}
            if previous is not None and previous.exited:
                status["lastState"] = {"terminated": _terminated(previous, inputs)}
    else:  # created but not (yet) started
        reason, message = waiting or ("ContainerCreating", "")
        status["state"] = {"waiting": _waiting(reason, message)}
    return status


def _terminated(container: ContainerState, inputs: PodStatusInputs) -> dict[str, Any]:
    reason = container.reason or ("Completed" if container.exit_code == 0 else "Error")
    terminated: dict[str, Any] = {"exitCode": container.exit_code, "reason": reason,
                                  "startedAt": _time(container.started_at or container.created_at),
                                  "finishedAt": _time(container.finished_at),
                                  "containerID": f"{inputs.runtime_name}://{container.id}"}
    message = inputs.termination_messages.get(container.id) or container.message
    if message:
        terminated["message"] = message
    return terminated


def _waiting(reason: str, message: str) -> dict[str, str]:
    return {"reason": reason} | ({"message": message} if message else {})


def _phase(spec: dict[str, Any], init: list[dict[str, Any]], app: list[dict[str, Any]], failed: bool) -> str:
    policy = spec.get("restartPolicy", "Always")
    if failed:
        return "Failed"
    for status in init:
        terminated = status["state"].get("terminated")
        if terminated and terminated["exitCode"] == 0:
            continue
        last = (status.get("lastState") or {}).get("terminated")
        if policy == "Never" and (terminated or last) and (terminated or last)["exitCode"] != 0:
            return "Failed"
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for status in app:
        state = status["state"]
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"]["exitCode"] == 0
        elif (status.get("lastState") or {}).get("terminated"):
            stopped += 1  # waiting to restart after having run
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _conditions(old: dict[str, Any], phase: str, sandbox_ready: bool, init: list[dict[str, Any]],
                app: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    previous = {c.get("type"): c for c in old.get("conditions") or []}
    done = phase in TERMINAL_PHASES
    pending_init = [s["name"] for s in init
                    if not ((s["state"].get("terminated") or {}).get("exitCode") == 0)]
    unready = [s["name"] for s in app if not s["ready"]]
    # The scheduler sets PodScheduled; a pod created with spec.nodeName never saw one, so the kubelet adds it.
    conditions = [previous.get("PodScheduled") or {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                                   "lastTransitionTime": now}]

    def condition(kind: str, ok: bool, reason: str = "", message: str = "") -> None:
        state = "True" if ok else "False"
        before = previous.get(kind)
        entry: dict[str, Any] = {"type": kind, "status": state, "lastProbeTime": None,
                                 "lastTransitionTime": before["lastTransitionTime"]
                                 if before and before.get("status") == state and before.get("lastTransitionTime")
                                 else now}
        if not ok and reason:
            entry["reason"] = reason
            if message:
                entry["message"] = message
        conditions.append(entry)

    condition("PodReadyToStartContainers", sandbox_ready)
    if done and phase == "Succeeded":
        condition("Initialized", True)
    else:
        condition("Initialized", not pending_init, "ContainersNotInitialized",
                  f"containers with incomplete status: [{' '.join(pending_init)}]")
    for kind in ("ContainersReady", "Ready"):
        if done:
            condition(kind, False, "PodCompleted")
        else:
            condition(kind, not unready, "ContainersNotReady",
                      f"containers with unready status: [{' '.join(unready)}]")
    return conditions


def _time(nanoseconds: int) -> str | None:
    if not nanoseconds:
        return None
    return time_string(datetime.fromtimestamp(nanoseconds / 1e9, UTC))

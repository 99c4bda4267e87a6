"""Liveness, readiness and startup probes (kube's `pkg/kubelet/prober`): one worker per running container per
probe, each an asyncio task, with the results cached by container id.

    probes = ProbeManager(runtime, on_change=pod_workers.update, recorder_event=kubelet.event)
    probes.sync(pod, state)                after each pod sync: the workers follow the running containers
    probes.ready(uid), probes.started(uid) container name -> bool, for the pod's status (podstatus.py)
    probes.liveness_failed(uid, name)      the container must be killed and restarted (kuberuntime.py)
    probes.remove_pod(uid)                 the pod is gone;  `await probes.stop()` at exit

A worker's life, with kube's timing:
* it starts when the kubelet first sees its container running and ends when that container stops. A restarted
  container has a new id, hence new workers and fresh results: nothing carries over from the old one.
* The first probe runs `initialDelaySeconds` after the container started, then one every `periodSeconds`
  (default 10), each given `timeoutSeconds` (default 1) to answer.
* A result is only taken after `failureThreshold` (default 3) failures or `successThreshold` (default 1; always
  1 for liveness and startup) successes in a row. Until then each probe keeps its initial result: readiness
  Failure (not ready until the first success), liveness Success, startup Unknown (not started).
* While a container's startup probe has not succeeded, its liveness and readiness probes wait; the success
  wakes them at once. A startup result, success or failure, is final for the container.
* A liveness (or startup) failure ends the worker: the kubelet kills the container and restarts it as the
  pod's restartPolicy says. A pod being deleted is never restarted for it: its liveness and startup
  results turn to Success and their workers stop.
* Every failed probe records a Warning `Unhealthy` event, `Liveness probe failed: <output>` (for exec, the
  command's output). A probe that cannot run (no handler, a port name the container does not declare, grpc,
  which mkpy does not support) records `... probe errored and resulted in unknown state: <why>` and counts
  neither way.
The probes themselves are `handlers.run_action` (exec, httpGet, tcpSocket), as for lifecycle hooks. kube's
random start-up jitter (spreading a restarted kubelet's probes over one period) is left out.

Usage rules: call everything from the kubelet's event loop. `on_change(uid)` runs whenever a cached result
changes (the pod's status or fate may change with it): it must only schedule work, such as a pod sync.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minikube_py.client.clock import Clock, RealClock
from minikube_py.kubelet import handlers
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.podstatus import TERMINAL_PHASES
from minikube_py.kubelet.runtimestate import ContainerState, PodState

log = logging.getLogger("mkpy.kubelet.prober")

LIVENESS, READINESS, STARTUP = "Liveness", "Readiness", "Startup"
PROBE_FIELDS = {LIVENESS: "livenessProbe", READINESS: "readinessProbe", STARTUP: "startupProbe"}
ACTIONS = ("exec", "httpGet", "tcpSocket")


class Result(enum.Enum):
    SUCCESS = "Success"
    FAILURE = "Failure"
    UNKNOWN = "Unknown"


INITIAL_RESULTS = {LIVENESS: Result.SUCCESS, READINESS: Result.FAILURE, STARTUP: Result.UNKNOWN}


@dataclass(frozen=True)
class ProbeSpec:
    """A probe's settings with kube's defaults; values the apiserver would refuse (negative, zero, not a
    number) are read as the defaults."""

    action: dict[str, Any]  # the probe object: run_action finds its exec, httpGet or tcpSocket in it
    initial_delay: int = 0
    period: int = 10
    timeout: int = 1
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def from_api(cls, probe: dict[str, Any], kind: str) -> ProbeSpec:
        return cls(action=probe, initial_delay=max(0, _integer(probe.get("initialDelaySeconds"), 0)),
                   period=_positive(probe, "periodSeconds", 10), timeout=_positive(probe, "timeoutSeconds", 1),
                   success_threshold=_positive(probe, "successThreshold", 1) if kind == READINESS else 1,
                   failure_threshold=_positive(probe, "failureThreshold", 3))


class ProbeManager:
    def __init__(self, runtime: RuntimeClient, on_change: Callable[[str], None],
                 recorder_event: Callable[..., None], clock: Clock | None = None) -> None:
        self.runtime = runtime
        self.on_change = on_change
        self.recorder_event = recorder_event
        self.clock = clock or RealClock()
        self._pods: dict[str, _Pod] = {}  # only pods with at least one probe
        self._results: dict[tuple[str, str], Result] = {}  # (container id, probe kind) -> result
        self._tasks: set[asyncio.Task[None]] = set()

    def sync(self, pod: dict[str, Any], state: PodState) -> None:
        """Start a worker per probe of every running app container, stop those whose container stopped."""
        uid = pod["metadata"]["uid"]
        containers = (pod.get("spec") or {}).get("containers") or []
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES or not any(
                c.get(key) for c in containers for key in PROBE_FIELDS.values()):
            self.remove_pod(uid)
            return
        entry = self._pods.setdefault(uid, _Pod(pod))
        entry.pod = pod
        sandbox = state.sandbox
        entry.ip = (sandbox.ip if sandbox is not None and sandbox.ready else "") or \
            (pod.get("status") or {}).get("podIP", "")
        wanted: dict[tuple[str, str], tuple[dict[str, Any], ContainerState]] = {}
        for container in containers:
            current = state.latest(container["name"])
            if current is not None and current.running:
                for kind, key in PROBE_FIELDS.items():
                    if container.get(key):
                        wanted[(container["name"], kind)] = (container, current)
        for key, worker in list(entry.workers.items()):
            if key not in wanted or wanted[key][1].id != worker.container_id:
                self._stop_worker(entry, key)
        for (_, kind), (container, current) in wanted.items():
            if (container["name"], kind) not in entry.workers:
                self._start_worker(entry, kind, container, current)

    def remove_pod(self, uid: str) -> None:
        entry = self._pods.pop(uid, None)
        if entry is not None:
            for key in list(entry.workers):
                self._stop_worker(entry, key)

    def ready(self, uid: str) -> dict[str, bool]:
        """Readiness of each container that has a readiness probe (False until its first success)."""
        return self._outcomes(uid, READINESS)

    def started(self, uid: str) -> dict[str, bool]:
        """Whether each container that has a startup probe has passed it."""
        return self._outcomes(uid, STARTUP)

    def failed_probe(self, uid: str, name: str) -> str | None:
        """The probe ("liveness" or "startup") that the container's current instance failed, so that it must be
        killed and restarted; None when it failed none."""
        entry = self._pods.get(uid)
        for kind in (LIVENESS, STARTUP):
            if entry is not None and self._result(entry, name, kind) is Result.FAILURE:
                return kind.lower()
        return None

    def liveness_failed(self, uid: str, name: str) -> bool:
        """Whether the container's current instance must be restarted (it failed liveness or startup)."""
        return self.failed_probe(uid, name) is not None

    async def stop(self) -> None:
        for uid in list(self._pods):
            self.remove_pod(uid)
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- workers and results ------------------------------------------------------------------------------

    def _start_worker(self, entry: _Pod, kind: str, container: dict[str, Any], current: ContainerState) -> None:
        worker = _Worker(self, entry, kind, container, current)
        entry.workers[(worker.name, kind)] = worker
        self._results[(current.id, kind)] = INITIAL_RESULTS[kind]
        task = asyncio.get_running_loop().create_task(worker.run(), name=f"probe-{kind}-{current.id[:13]}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        worker.task = task

    def _stop_worker(self, entry: _Pod, key: tuple[str, str]) -> None:
        worker = entry.workers.pop(key)
        if worker.task is not None:
            worker.task.cancel()
        self._results.pop((worker.container_id, worker.kind), None)

    def _set_result(self, worker: _Worker, result: Result) -> None:
        key = (worker.container_id, worker.kind)
        if self._results.get(key) is result:
            return
        log.info("%s probe of container %s of pod %s: %s", worker.kind, worker.name, worker.entry.uid,
                 result.value)
        self._results[key] = result
        if worker.kind == STARTUP and result is Result.SUCCESS:
            for other in worker.entry.workers.values():
                if other.name == worker.name and other is not worker:
                    other.wake.set()
        self.on_change(worker.entry.uid)

    def _result(self, entry: _Pod, name: str, kind: str) -> Result | None:
        worker = entry.workers.get((name, kind))
        return self._results.get((worker.container_id, kind)) if worker is not None else None

    def _outcomes(self, uid: str, kind: str) -> dict[str, bool]:
        entry = self._pods.get(uid)
        if entry is None:
            return {}
        return {c["name"]: self._result(entry, c["name"], kind) is Result.SUCCESS
                for c in (entry.pod.get("spec") or {}).get("containers") or [] if c.get(PROBE_FIELDS[kind])}

    def _started(self, entry: _Pod, container: dict[str, Any]) -> bool:
        return not container.get(PROBE_FIELDS[STARTUP]) or \
            self._result(entry, container["name"], STARTUP) is Result.SUCCESS


@dataclass
class _Pod:
    pod: dict[str, Any]  # as the last sync saw it
    ip: str = ""
    workers: dict[tuple[str, str], _Worker] = field(default_factory=dict)  # (container, kind) -> worker

    @property
    def uid(self) -> str:
        return str(self.pod["metadata"]["uid"])

    @property
    def terminating(self) -> bool:
        return bool(self.pod["metadata"].get("deletionTimestamp"))

    def describe(self) -> str:
        """kube's `format.Pod`: name_namespace(uid)."""
        meta = self.pod["metadata"]
        return f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta['uid']})"


class _Worker:
    """Probes one container with one of its probes (kube's `worker.go`)."""

    def __init__(self, manager: ProbeManager, entry: _Pod, kind: str, container: dict[str, Any],
                 current: ContainerState) -> None:
        self.manager, self.entry, self.kind, self.container = manager, entry, kind, container
        self.name: str = container["name"]
        self.container_id = current.id
        self.started_at = current.started_at / 1e9  # Unix seconds (0: not known, taken as now)
        self.spec = ProbeSpec.from_api(container[PROBE_FIELDS[kind]], kind)
        self.wake = asyncio.Event()  # set when the container's startup probe succeeds
        self.task: asyncio.Task[None] | None = None
        self._last: Result | None = None  # the last probe's result and how many times in a row
        self._run_length = 0

    async def run(self) -> None:
        clock = self.manager.clock
        since_start = clock.wall().timestamp() - self.started_at if self.started_at else 0.0
        await clock.sleep(self.spec.initial_delay - since_start)
        self.wake.clear()
        while True:
            due = clock.now() + self.spec.period
            if self.kind != READINESS and self.entry.terminating:
                self.manager._set_result(self, Result.SUCCESS)  # never restart a container being stopped
                return
            if (self.kind == STARTUP or self.manager._started(self.entry, self.container)) and \
                    not await self._probe():
                return
            await self._wait(due - clock.now())

    async def _probe(self) -> bool:
        """Probe once and take the result when a threshold is reached; False when the worker is done."""
        result, output = await self._run_action()
        if result is Result.UNKNOWN:
            self._event(f"{self.kind} probe errored and resulted in unknown state: {output}")
            return True
        if result is Result.FAILURE:
            self._event(f"{self.kind} probe failed: {output}")
        self._run_length = self._run_length + 1 if result is self._last else 1
        self._last = result
        threshold = self.spec.failure_threshold if result is Result.FAILURE else self.spec.success_threshold
        if self._run_length < threshold:
            return True
        self.manager._set_result(self, result)
        # Failing liveness means a restart, and a new container; a startup result is final for this one.
        return not (self.kind == STARTUP or (self.kind == LIVENESS and result is Result.FAILURE))

    async def _run_action(self) -> tuple[Result, str]:
        probe = self.spec.action
        problem = _cannot_run(probe, self.container, self.entry)
        if problem:
            return Result.UNKNOWN, problem
        try:
            outcome = await handlers.run_action(self.manager.runtime, probe, self.container_id, self.entry.ip,
                                                self.container, self.spec.timeout)
        except Exception as error:  # a malformed probe (a host that is no host name, say): never end the loop
            log.warning("%s probe of %s in %s: %r", self.kind, self.name, self.entry.describe(), error)
            return Result.UNKNOWN, str(error) or type(error).__name__
        if outcome.success:
            return Result.SUCCESS, outcome.output
        return Result.FAILURE, outcome.output  # for exec, kube shows only the command's own output

    async def _wait(self, seconds: float) -> None:
        """Sleep until the next period, or less if the container's startup probe succeeds meanwhile."""
        sleeper = asyncio.ensure_future(self.manager.clock.sleep(seconds))
        woken = asyncio.ensure_future(self.wake.wait())
        try:
            await asyncio.wait((sleeper, woken), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            woken.cancel()
        self.wake.clear()

    def _event(self, message: str) -> None:
        self.manager.recorder_event(self.entry.pod, "Warning", "Unhealthy", message, container=self.name)


def _cannot_run(probe: dict[str, Any], container: dict[str, Any], entry: _Pod) -> str | None:
    """Why the probe cannot run at all (kube: the probe "errored"), or None."""
    if "grpc" in probe:
        return "grpc probes are not supported by mkpy"
    action = next((name for name in ACTIONS if name in probe), None)
    if action is None:
        return f"missing probe handler for {entry.describe()}:{container['name']}"
    if action == "exec":
        return None
    value = (probe[action] or {}).get("port")
    port = handlers.resolve_port(value, container)
    if port == 0 and isinstance(value, str) and not value.isdigit():
        # kube's words: a name no container port has is then tried as a number.
        return f'strconv.Atoi: parsing "{value}": invalid syntax'
    if not 0 < port < 65536:
        return f"invalid port number: {port}"
    return None


def _integer(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _positive(probe: dict[str, Any], key: str, default: int) -> int:
    value = _integer(probe.get(key), default)
    return value if value > 0 else default

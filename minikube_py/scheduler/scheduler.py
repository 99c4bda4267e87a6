"""The scheduler's loop: take a pod from the queue, find it a node, and bind it (kube's `schedule_one.go`).

    pop ─► scheduling cycle (synchronous, one pod at a time)          binding cycle (a task per pod)
           snapshot ─► algorithm.schedule_pod ─► assume ─► Reserve ─► Permit ─┬─► WaitOnPermit ─► PreBind
                          │ no node fits                                    │     ─► Bind ─► PostBind
                          ▼                                                 │     "Scheduled" event
                    PostFilter (preemption) ─► failure handler ◄────────────┘ on any failure: Unreserve,
                          FailedScheduling event, PodScheduled=False,           forget, failure handler
                          back to the queue

The scheduling cycle works on a snapshot of the cache taken at its start, so it is consistent even while
informer events arrive. After Reserve the pod is *assumed*: the cache counts it on the chosen node before the
apiserver knows, which lets the next cycle start at once while this pod binds in the background.

Usage rules: one Scheduler per process; `profiles` maps `spec.schedulerName` to that profile's Framework;
pods naming any other scheduler never reach the queue (see eventhandlers.py).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.scheduler import algorithm
from minikube_py.scheduler.eventhandlers import ASSIGNED_POD_DELETE
from minikube_py.scheduler.framework.interface import Code, CycleState, Pod, Status
from minikube_py.scheduler.framework.types import PodInfo, QueuedPodInfo, pod_uid, scheduler_name

log = logging.getLogger("mkpy.scheduler")

MAX_MESSAGE_LENGTH = 1024  # events' notes are cut here


@dataclass
class Scheduler:
    client: Any  # client.rest.RESTClient
    cache: Any  # scheduler.cache.Cache
    queue: Any  # scheduler.queue.SchedulingQueue
    snapshot: Any  # scheduler.snapshot.Snapshot, refreshed from the cache at each cycle's start
    profiles: dict[str, Any]  # schedulerName -> framework.runtime.Framework
    pod_lister: Any  # the pod informer's lister: is a failed pod still there, and still unbound?
    percentage_of_nodes_to_score: int | None = None
    explain: Callable[[Any, Pod], Any] | None = None  # explain mode: makes a per-cycle recorder
    cursor: algorithm.NodeCursor = field(default_factory=algorithm.NodeCursor)
    binding_tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self) -> None:
        """Schedule pods until cancelled."""
        try:
            while True:
                await self.schedule_one()
                # A cycle that finds a pod queued and schedules it never waits, so yield here: binding tasks
                # and informer events (which keep the cache right) must not starve behind a long queue.
                await asyncio.sleep(0)
        finally:
            for task in list(self.binding_tasks):
                task.cancel()

    async def schedule_one(self) -> None:
        qpi = await self.queue.pop()
        if qpi is None:
            raise asyncio.CancelledError()  # the queue was closed
        pod = qpi.pod
        fwk = self.profiles.get(scheduler_name(pod))
        if fwk is None or _being_deleted(pod) or self.cache.is_assumed_pod(pod):
            self.queue.done(pod_uid(pod))
            return
        state = CycleState()
        state.pod_info = qpi.pod_info
        recorder = self.explain(fwk, pod) if self.explain else None
        started = time.monotonic()
        assumed, result, status = await self.scheduling_cycle(fwk, state, qpi, recorder)
        if assumed is None:
            self.queue.done(pod_uid(pod))
            return
        task = asyncio.create_task(self.binding_cycle(fwk, state, qpi, result, assumed, started, recorder))
        self.binding_tasks.add(task)
        task.add_done_callback(self.binding_tasks.discard)

    async def scheduling_cycle(self, fwk: Any, state: CycleState, qpi: QueuedPodInfo,
                               recorder: Any) -> tuple[Pod | None, Any, Status]:
        """Returns the assumed pod (with `spec.nodeName`) and the result, or None after handling the failure."""
        pod = qpi.pod
        self.cache.update_snapshot(self.snapshot)
        if recorder is not None:
            fwk.recorder = recorder
        try:
            result = algorithm.schedule_pod(fwk, state, pod, self.snapshot.list(), self.cursor,
                                            self._percentage(fwk))
        except algorithm.FitError as fit_error:
            await self._after_no_fit(fwk, state, qpi, fit_error, recorder)
            return None, None, Status(Code.UNSCHEDULABLE)
        except (algorithm.NoNodesAvailable, algorithm.SchedulingError) as error:
            await self.handle_failure(fwk, qpi, error, set(), None, recorder)
            return None, None, Status.as_error(error)
        finally:
            fwk.recorder = None
        # The parsed pod holds for the assumed copy (only spec.nodeName differs, and nothing parsed reads it);
        # from Reserve on, the cycle's pod is the assumed one.
        state.pod_info = replace(qpi.pod_info, pod=_with_node(pod, result.suggested_host))
        assumed = state.pod_info.pod
        self.cache.assume_pod(state.pod_info)
        status = fwk.run_reserve_plugins_reserve(state, assumed, result.suggested_host)
        if status.is_success():
            status = fwk.run_permit_plugins(state, assumed, result.suggested_host)
            if status.code not in (Code.SUCCESS, Code.WAIT):
                fwk.run_reserve_plugins_unreserve(state, assumed, result.suggested_host)
        else:
            fwk.run_reserve_plugins_unreserve(state, assumed, result.suggested_host)
        if status.code not in (Code.SUCCESS, Code.WAIT):
            self.cache.forget_pod(assumed)
            await self.handle_failure(fwk, qpi, _status_error(status), {status.plugin}, None, recorder)
            return None, None, status
        return assumed, result, status

    async def _after_no_fit(self, fwk: Any, state: CycleState, qpi: QueuedPodInfo,
                            fit_error: algorithm.FitError, recorder: Any) -> None:
        """No node fits: let PostFilter (preemption) try to make room, then report the failure."""
        diagnosis = fit_error.diagnosis
        nominated: str | None = None
        if fwk.has_post_filter_plugins():
            result, status = await fwk.run_post_filter_plugins(state, qpi.pod, diagnosis.node_to_status)
            if status.code == Code.ERROR:
                log.warning("PostFilter failed for %s: %s", _key(qpi.pod), status.message())
            elif status.message():
                diagnosis.post_filter_msg = status.message()
            if result is not None:
                nominated = result.nominated_node_name
        await self.handle_failure(fwk, qpi, fit_error, diagnosis.unschedulable_plugins, nominated, recorder)

    async def binding_cycle(self, fwk: Any, state: CycleState, qpi: QueuedPodInfo, result: Any, assumed: Pod,
                            started: float, recorder: Any) -> None:
        host = result.suggested_host
        try:
            status = await fwk.wait_on_permit(assumed)
            if status.is_success():
                if recorder is not None:
                    await recorder.publish(self.client, assumed, result)
                status = await fwk.run_pre_bind_plugins(state, assumed, host)
            if status.is_success():
                status = await fwk.run_bind_plugins(state, assumed, host)
        except Exception as error:  # a bug must not lose the pod: treat it as a failed bind
            log.exception("binding cycle of %s failed", _key(assumed))
            status = Status.as_error(error)
        if not status.is_success():
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            # The node space the pod held is free again: other pods may fit now.
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, assumed, None)
            await self.handle_failure(fwk, qpi, _status_error(status), {status.plugin} - {""}, None, recorder)
            return
        self.cache.finish_binding(assumed)
        self.queue.done(pod_uid(assumed))
        namespace, name = _namespace_name(assumed)
        fwk.event_recorder.eventf(assumed, None, "Normal", "Scheduled", "Binding",
                                  f"Successfully assigned {namespace}/{name} to {host}")
        log.info("bound %s/%s to %s (%d/%d nodes feasible, %.1f ms)", namespace, name, host,
                 result.feasible_nodes, result.evaluated_nodes, (time.monotonic() - started) * 1000)
        await fwk.run_post_bind_plugins(state, assumed, host)

    async def handle_failure(self, fwk: Any, qpi: QueuedPodInfo, error: Exception, plugins: set[str],
                             nominated_node: str | None, recorder: Any = None) -> None:
        """Requeue the pod (if it still exists unbound), record FailedScheduling, and set PodScheduled=False."""
        pod = qpi.pod
        namespace, name = _namespace_name(pod)
        message = str(error)
        unschedulable = isinstance(error, algorithm.FitError | _Rejected)
        reason = "Unschedulable" if unschedulable else "SchedulerError"
        qpi.unschedulable_plugins = set(plugins) if unschedulable else set()
        current = self._current(namespace, name)
        if current is None:
            log.info("pod %s/%s was deleted while being scheduled; not requeued", namespace, name)
        elif (current.get("spec") or {}).get("nodeName"):
            log.info("pod %s/%s was bound meanwhile; not requeued", namespace, name)
        else:
            qpi.pod_info = PodInfo.of(current)
            cycle = self.queue.scheduling_cycle
            self.queue.add_unschedulable_if_not_present(qpi, cycle)
            if nominated_node is not None:  # "" clears a nomination preemption no longer stands by
                self.queue.nominator.add_nominated_pod(qpi.pod_info, nominated_node)
        self.queue.done(pod_uid(pod))
        log.info("unable to schedule %s/%s: %s", namespace, name, message)
        fwk.event_recorder.eventf(pod, None, "Warning", "FailedScheduling", "Scheduling",
                                  message[:MAX_MESSAGE_LENGTH])
        if current is not None:
            await self._set_pod_scheduled_false(current, reason, message, nominated_node)
            if recorder is not None:
                await recorder.publish(self.client, current, None, message)

    def _current(self, namespace: str, name: str) -> Pod | None:
        try:
            return self.pod_lister.get(name, namespace)
        except errors.NotFound:
            return None

    async def _set_pod_scheduled_false(self, pod: Pod, reason: str, message: str, nominated: str | None) -> None:
        status = pod.get("status") or {}
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                     "lastProbeTime": None}
        unchanged = old is not None and all(old.get(k) == condition[k] for k in ("status", "reason", "message"))
        if unchanged and (nominated is None or status.get("nominatedNodeName", "") == nominated):
            return
        keep_transition = old is not None and old.get("status") == "False"
        condition["lastTransitionTime"] = old.get("lastTransitionTime") if keep_transition and old else time_string()
        patch: dict[str, Any] = {"status": {"conditions": [condition]}}
        if nominated is not None:
            patch["status"]["nominatedNodeName"] = nominated or None
        namespace, name = _namespace_name(pod)
        try:
            await self.client.patch(resources.PODS, name, patch, namespace, patch_type="strategic",
                                    subresource="status")
        except (errors.APIStatusError, OSError) as error:
            log.warning("could not update the PodScheduled condition of %s/%s: %s", namespace, name, error)

    def _percentage(self, fwk: Any) -> int | None:
        own = getattr(fwk, "percentage_of_nodes_to_score", None)
        return own if own is not None else self.percentage_of_nodes_to_score


class _Rejected(Exception):
    """A Reserve, Permit or Bind plugin turned the pod away (Unschedulable, not an error)."""


def _status_error(status: Status) -> Exception:
    message = status.message() or str(status.code)
    if status.is_rejected():
        return _Rejected(message)
    return algorithm.SchedulingError(status) if status.plugin else RuntimeError(message)


def _with_node(pod: Pod, node_name: str) -> Pod:
    assumed = copy.copy(pod)
    assumed["spec"] = {**(pod.get("spec") or {}), "nodeName": node_name}
    return assumed


def _namespace_name(pod: Pod) -> tuple[str, str]:
    metadata = pod.get("metadata") or {}
    return metadata.get("namespace", ""), metadata.get("name", "")


def _key(pod: Pod) -> str:
    return "/".join(_namespace_name(pod))


def _being_deleted(pod: Pod) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


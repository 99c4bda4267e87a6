"""The scheduling queue: which pending pod to schedule next, and when a failed pod gets another try
(kube's `PriorityQueue`, 1.32 behaviour with queueing hints).

    informer ─► add ─► PreEnqueue ─┬─► activeQ (heap, QueueSort's `less`) ─► pop() ─► scheduling cycle
                                   └─► unschedulablePods (gated)                           │ failed
         cluster events ─► move_all_to_active_or_backoff_queue ◄── unschedulablePods ◄────┤ (rejected)
                               └─► backoffQ (heap by backoff expiry) ─► flush ─► activeQ   └► backoffQ (error)

* **activeQ** holds pods ready to be tried, in the order of the profile's QueueSort plugin (`less`); equal
  pods leave in the order they came. `pop()` waits for one, counts the attempt and starts a cycle.
* **backoffQ** holds pods that must wait before their next try: 1 s after the first failure, doubling per
  attempt up to 10 s (`pod_initial_backoff`, `pod_max_backoff`). `flush_backoff_q_completed` (every second
  in `run()`) moves the pods whose backoff expired to activeQ.
* **unschedulablePods** holds pods that plugins rejected, with the rejecting plugins recorded, until a
  cluster event one of those plugins registered for (`queueing_hints`: plugin name → ClusterEventWithHint
  list; a plugin missing from the map counts as registered for every event, as kube does for plugins without
  EnqueueExtensions) and whose hint says QUEUE moves them to backoffQ (or activeQ when their backoff is over).
  Pods stuck there for `pod_max_in_unschedulable_pods_duration` (5 min) are moved anyway (every 30 s in
  `run()`). Pods that PreEnqueue rejected wait there too, marked `gated`, until an update lets them pass.

In-flight events: between `pop()` and `done(uid)` a pod is *in flight*. Every event the queue handles while
any pod is in flight is recorded; when an in-flight pod fails (`add_unschedulable_if_not_present`), the
events recorded since its pop are run through its rejecting plugins' hints, so a node that appeared while the
pod was being scheduled still sends it to backoffQ instead of leaving it stuck. Records older than the oldest
in-flight pod are dropped at `done`. A failed pod that was never popped falls back to kube's older rule: it
goes to backoffQ if any move request happened at or after `pod_scheduling_cycle`.

Usage rules: all methods are called from the event loop (no locks). Objects are API dicts, never modified.
Pods are keyed by namespace/name in the queues and by UID in flight. `pop()` returns None once `close()` was
called and activeQ is empty. Call `done(uid)` when a popped pod's scheduling attempt is over, whatever the
outcome (`add_unschedulable_if_not_present` calls it itself).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from minikube_py.api.quantity import pod_requests
from minikube_py.client.clock import Clock, RealClock
from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
    is_success,
)
from minikube_py.scheduler.framework.types import PodInfo, QueuedPodInfo, pod_uid, scheduler_name
from minikube_py.scheduler.heap import Heap, Less
from minikube_py.scheduler.nominator import Nominator

log = logging.getLogger("mkpy.scheduler.queue")

Pod = dict[str, Any]

ASSIGNED_POD_ADD = ClusterEvent("Pod", ActionType.ADD, "AssignedPodAdd")
UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent("*", ActionType.ALL, "ForceActivate")
UNSCHEDULED_POD_ADD, UNSCHEDULED_POD_UPDATE = "UnschedulablePodAdd", "UnschedulablePodUpdate"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"  # its rejections can be lifted by any assigned pod's change
_ALL_EVENTS = (ClusterEventWithHint(ClusterEvent("*", ActionType.ALL)),)


class _Strategy(enum.IntEnum):
    """Where a pod goes after an event (kube's queueingStrategy), weakest first."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class _RecordedEvent(NamedTuple):
    event: ClusterEvent
    old: Any
    new: Any


def _key(pod: Pod) -> str:
    metadata = pod.get("metadata") if isinstance(pod, dict) else None
    if not isinstance(metadata, dict) or not metadata.get("name"):
        raise ValueError(f"not a pod with metadata.name: {str(pod)[:80]}")
    return f"{metadata.get('namespace', '')}/{metadata['name']}"


def pod_update_event(old: Pod, new: Pod, label: str) -> ClusterEvent | None:
    """The changes between two versions of a pod that can change where it fits, as one Pod event (None when
    nothing relevant changed, e.g. a status-only update)."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    action = ActionType(0)
    if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
        action |= ActionType.UPDATE_POD_LABEL
    if old_spec.get("tolerations") != new_spec.get("tolerations"):
        action |= ActionType.UPDATE_POD_TOLERATION
    if old_spec.get("schedulingGates") and not new_spec.get("schedulingGates"):
        action |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if _scaled_down(old, new):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    return ClusterEvent("Pod", action, label) if action else None


def _scaled_down(old: Pod, new: Pod) -> bool:
    fields = ("containers", "initContainers", "overhead")
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if all(old_spec.get(name) == new_spec.get(name) for name in fields):
        return False
    before, after = pod_requests(old), pod_requests(new)
    return any(after.get(name, 0) < amount for name, amount in before.items())


class SchedulingQueue:
    def __init__(self, less: Less, *, clock: Clock | None = None,
                 pre_enqueue: Mapping[str, Callable[[Pod], Status | None]] | None = None,
                 queueing_hints: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
                 pod_initial_backoff: float = 1.0, pod_max_backoff: float = 10.0,
                 pod_max_in_unschedulable_pods_duration: float = 300.0,
                 namespace_labels: Callable[[str], Mapping[str, str] | None] | None = None,
                 nominator: Nominator | None = None) -> None:
        if pod_initial_backoff <= 0:
            raise ValueError(f"podInitialBackoffSeconds must be greater than 0, got {pod_initial_backoff}")
        if pod_max_backoff < pod_initial_backoff:
            raise ValueError(f"podMaxBackoffSeconds ({pod_max_backoff}) must be greater than or equal to "
                             f"podInitialBackoffSeconds ({pod_initial_backoff})")
        if pod_max_in_unschedulable_pods_duration <= 0:
            raise ValueError("pod_max_in_unschedulable_pods_duration must be greater than 0, got "
                             f"{pod_max_in_unschedulable_pods_duration}")
        self.clock = clock or RealClock()
        self.pod_initial_backoff, self.pod_max_backoff = pod_initial_backoff, pod_max_backoff
        self.pod_max_in_unschedulable_pods_duration = pod_max_in_unschedulable_pods_duration
        self.nominator = nominator or Nominator()
        self._pre_enqueue = dict(pre_enqueue or {})  # scheduler name -> that profile's PreEnqueue runner
        self._hints = {plugin: tuple(events) for plugin, events in (queueing_hints or {}).items()}
        self._namespace_labels = namespace_labels
        self._active = Heap(less)
        self._backoff = Heap(lambda a, b: self._backoff_expiry(a) < self._backoff_expiry(b))
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, int] = {}  # uid -> number of the first event recorded during its cycle
        self._events: deque[_RecordedEvent] = deque()
        self._next_event = 0  # the number the next recorded event gets
        self._scheduling_cycle = 0
        self._move_request_cycle = -1
        self._closed = False
        self._wakeup = asyncio.Event()

    @property
    def scheduling_cycle(self) -> int:
        """How many pods were popped so far; read it right after `pop()` for `add_unschedulable_…`."""
        return self._scheduling_cycle

    # --- pods waiting to be scheduled (informer events) ---

    def add(self, pod: Pod) -> None:
        _key(pod)  # refuse what is not a pod before parsing it
        self._move_to_active_q(self._new_queued_pod_info(PodInfo.of(pod)), UNSCHEDULED_POD_ADD)

    def update(self, old: Pod, new: Pod) -> None:
        key, _ = _key(new), _key(old)
        event = pod_update_event(old, new, UNSCHEDULED_POD_UPDATE)
        if pod_uid(new) in self._in_flight:  # being scheduled: the update counts if the attempt fails
            if event is not None:
                self._record_event(event, old, new)
            return
        pod_info = PodInfo.of(new)
        if (qpi := self._active.get(key)) is not None:
            self._active.push(key, dataclasses.replace(qpi, pod_info=pod_info))
        elif (qpi := self._backoff.get(key)) is not None:
            qpi.pod_info = pod_info  # the backoff order depends only on timestamp and attempts
        elif (qpi := self._unschedulable.get(key)) is not None:
            qpi.pod_info = pod_info
            self._update_unschedulable(qpi, event, old, new)
        else:
            self._move_to_active_q(self._new_queued_pod_info(pod_info), UNSCHEDULED_POD_UPDATE)
            return
        self.nominator.update_nominated_pod(old, pod_info)

    def _update_unschedulable(self, qpi: QueuedPodInfo, event: ClusterEvent | None, old: Pod,
                              new: Pod) -> None:
        if qpi.gated:  # PreEnqueue decides again; the pod leaves unschedulablePods if it passes now
            self._move_to_active_q(qpi, UNSCHEDULED_POD_UPDATE)
            return
        strategy = self._worth_requeuing(qpi, event, old, new) if event is not None else _Strategy.SKIP
        if strategy is not _Strategy.SKIP:
            del self._unschedulable[_key(new)]
            self._requeue(qpi, strategy, UNSCHEDULED_POD_UPDATE)

    def delete(self, pod: Pod) -> None:
        key = _key(pod)
        self.nominator.delete_nominated_pod_if_exists(pod)
        self._active.remove(key)
        self._backoff.remove(key)
        self._unschedulable.pop(key, None)

    def activate(self, pods: Iterable[Pod]) -> None:
        """Move these pods from backoffQ or unschedulablePods to activeQ now (a plugin asked for it)."""
        for pod in pods:
            key = _key(pod)
            qpi = self._unschedulable.get(key) or self._backoff.get(key)
            if qpi is not None and self._move_to_active_q(qpi, FORCE_ACTIVATE.label):
                continue
            if pod_uid(pod) in self._in_flight:  # it goes straight back to the queue if this attempt fails
                self._record_event(FORCE_ACTIVATE, None, pod)
            self._move_request_cycle = self._scheduling_cycle

    # --- the scheduling loop ---

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, waiting for one; None once the queue is closed and activeQ is empty."""
        while not self._active:
            if self._closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        qpi = self._active.pop()
        assert qpi is not None
        qpi.attempts += 1
        self._scheduling_cycle += 1
        self._in_flight[pod_uid(qpi.pod)] = self._next_event
        qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
        return qpi

    def done(self, uid: str) -> None:
        """The popped pod's attempt is over: stop recording events for it."""
        if self._in_flight.pop(uid, None) is None:
            return
        if not self._in_flight:
            self._events.clear()
            return
        for _ in range(min(self._in_flight.values()) - (self._next_event - len(self._events))):
            self._events.popleft()

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, pod_scheduling_cycle: int) -> bool:
        """Requeue a pod whose attempt failed: backoffQ after an error (no rejecting plugins) or when an event
        that could help happened meanwhile, else unschedulablePods. False (logged) if it is queued already."""
        key, uid = _key(qpi.pod), pod_uid(qpi.pod)
        try:
            where = self._queue_holding(key)
            if where is not None:
                log.warning("Pod %s is already present in %s", key, where)
                return False
            qpi.timestamp = self.clock.now()
            self._requeue(qpi, self._failed_pod_strategy(qpi, pod_scheduling_cycle), "ScheduleAttemptFailure")
            self.nominator.add_nominated_pod(qpi.pod_info)
            return True
        finally:
            self.done(uid)

    def _queue_holding(self, key: str) -> str | None:
        for where, queue in (("unschedulable queue", self._unschedulable), ("the active queue", self._active),
                             ("the backoff queue", self._backoff)):
            if key in queue:
                return where
        return None

    def _failed_pod_strategy(self, qpi: QueuedPodInfo, pod_scheduling_cycle: int) -> _Strategy:
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            return _Strategy.AFTER_BACKOFF  # an error, not a verdict: retry after backoff
        start = self._in_flight.get(pod_uid(qpi.pod))
        if start is None:
            moved = self._move_request_cycle >= pod_scheduling_cycle
            return _Strategy.AFTER_BACKOFF if moved else _Strategy.SKIP
        first = self._next_event - len(self._events)
        strategy = _Strategy.SKIP
        for recorded in itertools.islice(self._events, max(start - first, 0), None):
            strategy = max(strategy, self._worth_requeuing(qpi, *recorded))
            if strategy is _Strategy.IMMEDIATELY:
                break
        return strategy

    # --- cluster events ---

    def move_all_to_active_or_backoff_queue(self, event: ClusterEvent, old: Any = None, new: Any = None,
                                            pre_check: Callable[[Pod], bool] | None = None) -> None:
        """Offer `event` to every unschedulable pod (that passes `pre_check`)."""
        pods = [qpi for qpi in self._unschedulable.values() if pre_check is None or pre_check(qpi.pod)]
        self._move_pods(pods, event, old, new)

    def assigned_pod_added(self, pod: Pod) -> None:
        self._move_pods(self._pods_with_cross_topology_term(pod), ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        """A bound pod changed: a scale-down may help any pod, other changes only cross-topology terms."""
        event = pod_update_event(old, new, "AssignedPodUpdate")
        if event is None:
            return
        if event.action & ActionType.UPDATE_POD_SCALE_DOWN:
            self.move_all_to_active_or_backoff_queue(event, old, new)
        else:
            self._move_pods(self._pods_with_cross_topology_term(new), event, old, new)

    def _pods_with_cross_topology_term(self, pod: Pod) -> list[QueuedPodInfo]:
        """Unschedulable pods that PodTopologySpread rejected or whose required affinity terms match `pod`."""
        target: PodInfo | None = None
        labels: Mapping[str, str] | None = None
        result = []
        for qpi in self._unschedulable.values():
            terms = qpi.pod_info.required_affinity_terms
            if POD_TOPOLOGY_SPREAD in qpi.unschedulable_plugins:
                result.append(qpi)
            elif terms:
                if target is None:  # parse the assigned pod only when some pod has terms to match
                    target = PodInfo.of(pod)
                    labels = self._namespace_labels(target.namespace) if self._namespace_labels else None
                if any(term.matches(target, labels) for term in terms):
                    result.append(qpi)
        return result

    def _move_pods(self, pods: list[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> None:
        for qpi in pods:
            if qpi.gated:  # only an update of the pod itself can ungate it
                continue
            strategy = self._worth_requeuing(qpi, event, old, new)
            if strategy is not _Strategy.SKIP:
                del self._unschedulable[_key(qpi.pod)]
                where = self._requeue(qpi, strategy, event.label)
                log.debug("pod %s moved to %s by %s", _key(qpi.pod), where, event.label or event.resource)
        self._move_request_cycle = self._scheduling_cycle
        self._record_event(event, old, new)

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> _Strategy:
        if (not qpi.unschedulable_plugins and not qpi.pending_plugins) or (
                event.resource == "*" and event.action == ActionType.ALL):
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for plugin in qpi.unschedulable_plugins | qpi.pending_plugins:
            for registration in self._hints.get(plugin, _ALL_EVENTS):
                if not registration.event.matches(event):
                    continue
                if self._hint(plugin, registration, qpi.pod, old, new) is QueueingHint.SKIP:
                    continue
                if plugin in qpi.pending_plugins:
                    return _Strategy.IMMEDIATELY
                if not qpi.pending_plugins:
                    return _Strategy.AFTER_BACKOFF
                strategy = _Strategy.AFTER_BACKOFF
        return strategy

    @staticmethod
    def _hint(plugin: str, registration: ClusterEventWithHint, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if registration.hint is None:
            return QueueingHint.QUEUE
        try:
            hint = registration.hint(pod, old, new)
        except Exception:  # a broken hint must not strand the pod: queue it (as kube does)
            log.exception("queueing hint of %s for %s failed", plugin, registration.event)
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if hint is QueueingHint.SKIP else QueueingHint.QUEUE

    def _record_event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        if self._in_flight:
            self._events.append(_RecordedEvent(event, old, new))
            self._next_event += 1

    # --- moving between the queues ---

    def _requeue(self, qpi: QueuedPodInfo, strategy: _Strategy, event_label: str) -> str:
        """Put a pod that is in no queue where `strategy` says; returns the queue's name."""
        if strategy is _Strategy.SKIP:
            self._unschedulable[_key(qpi.pod)] = qpi
            return "unschedulablePods"
        if strategy is _Strategy.AFTER_BACKOFF and self._is_backing_off(qpi):
            self._backoff.push(_key(qpi.pod), qpi)
            return "backoffQ"
        return "activeQ" if self._move_to_active_q(qpi, event_label) else "unschedulablePods"

    def _move_to_active_q(self, qpi: QueuedPodInfo, event_label: str) -> bool:
        """Run PreEnqueue and put the pod in activeQ; a gated pod goes to unschedulablePods instead."""
        key = _key(qpi.pod)
        if not self._run_pre_enqueue(qpi):
            if key not in self._active and key not in self._backoff:
                self._unschedulable[key] = qpi
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self.clock.now()
        self._active.push(key, qpi)
        self._unschedulable.pop(key, None)
        self._backoff.remove(key)
        if event_label in (UNSCHEDULED_POD_ADD, UNSCHEDULED_POD_UPDATE):
            self.nominator.add_nominated_pod(qpi.pod_info)
        self._wakeup.set()
        return True

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> bool:
        check = self._pre_enqueue.get(scheduler_name(qpi.pod))
        try:
            status = check(qpi.pod) if check is not None else None
        except Exception as error:  # the runtime normally turns exceptions into statuses; be safe anyway
            log.exception("PreEnqueue of pod %s failed", _key(qpi.pod))
            status = Status.as_error(error)
        qpi.gated = not is_success(status)
        qpi.gating_plugin = status.plugin if status is not None and qpi.gated else ""
        if qpi.gating_plugin:
            qpi.unschedulable_plugins.add(qpi.gating_plugin)
        return not qpi.gated

    def _new_queued_pod_info(self, pod_info: PodInfo) -> QueuedPodInfo:
        return QueuedPodInfo(pod_info, timestamp=self.clock.now())

    def _backoff_duration(self, qpi: QueuedPodInfo) -> float:
        duration = self.pod_initial_backoff
        for _ in range(1, qpi.attempts):
            duration *= 2
            if duration >= self.pod_max_backoff:
                return self.pod_max_backoff
        return duration

    def _backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self._backoff_duration(qpi)

    def _is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return not qpi.gated and self._backoff_expiry(qpi) > self.clock.now()

    # --- periodic flushes ---

    def flush_backoff_q_completed(self) -> None:
        """Move every pod whose backoff has expired to activeQ."""
        now = self.clock.now()
        while (qpi := self._backoff.peek()) is not None and self._backoff_expiry(qpi) <= now:
            self._backoff.pop()
            self._move_to_active_q(qpi, "BackoffComplete")

    def flush_unschedulable_pods_left_over(self) -> None:
        """Move pods that sat in unschedulablePods longer than the maximum (gated pods stay)."""
        now = self.clock.now()
        limit = self.pod_max_in_unschedulable_pods_duration
        stale = [qpi for qpi in self._unschedulable.values() if now - qpi.timestamp > limit]
        if stale:
            self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)

    async def run(self) -> None:
        """Run both flushes on the clock (every 1 s and 30 s) until closed or cancelled."""
        await asyncio.gather(self._every(1.0, self.flush_backoff_q_completed),
                             self._every(30.0, self.flush_unschedulable_pods_left_over))

    async def _every(self, period: float, flush: Callable[[], None]) -> None:
        while not self._closed:
            flush()
            await self.clock.sleep(period)

    def close(self) -> None:
        """Stop: wake every `pop()` waiter (they return None) and end `run()` after its current sleep."""
        self._closed = True
        self._wakeup.set()

    # --- debugging ---

    def pending_pods(self) -> tuple[list[Pod], str]:
        pods = [qpi.pod for qpi in self._active.values() + self._backoff.values()]
        pods.extend(qpi.pod for qpi in self._unschedulable.values())
        summary = (f"activeQueueLength:{len(self._active)}; backoffQueueLength:{len(self._backoff)}; "
                   f"unschedulablePods:{len(self._unschedulable)}")
        return pods, summary

"""The ReplicaSet controller (and, with another resource, the ReplicationController controller).

Keeps `spec.replicas` pods matching the selector running. Handlers only enqueue the owner's key:
* a ReplicaSet added, changed or deleted → its key;
* a pod added, changed or deleted → its controller's key (from its controllerRef); an orphan pod → every
  ReplicaSet in its namespace whose selector matches it, to adopt it. Pod events also settle expectations.

`sync(key)`:
1. the pods of the namespace are claimed (podcontrol.claim_pods: adopt matching orphans, release pods that no
   longer match) and the active ones (not finished, not being deleted) counted;
2. only if the expectations of the last writes are met (the cache has seen them), the difference to
   `spec.replicas` is made up: missing pods are created in slow-start batches (1, 2, 4, …), so a template
   that cannot be created fails once, not 500 times; surplus pods are deleted, the least valuable first
   (`deletion_rank`, below);
3. the status is written when it changed: replicas, fullyLabeledReplicas, readyReplicas,
   availableReplicas (ready for more than `minReadySeconds`), observedGeneration, and the ReplicaFailure
   condition while creating or deleting fails. While every pod is ready but not all are available yet, the
   key is looked at again `minReadySeconds` later, to count them available in time.

Which pods go first on a scale-down (`deletion_rank`, kube's ActivePodsWithRanks), rule by rule until one
tells two pods apart: unscheduled before scheduled; Pending before Unknown before Running; not ready before
ready; lower `controller.kubernetes.io/pod-deletion-cost` first; pods on nodes crowded with more pods of the
same owner (this ReplicaSet and its siblings under one Deployment) first; of two ready pods the one ready for
less time; the one whose busiest container restarted more; the newer. Ready and creation times are compared
on a logarithmic scale of their age (so pods of about the same age count as equal, and a random-looking uid
order spreads deletions among them). `active_pods_rank` is the plainer ordering the Job controller uses
(kube's ActivePods): no deletion cost, no crowding, times compared exactly.

The pod writes and their events (kube's: SuccessfulCreate "Created pod: NAME", SuccessfulDelete "Deleted pod:
NAME", FailedCreate "Error creating: MESSAGE", FailedDelete "Error deleting: MESSAGE") are
podcontrol.PodControl's, shared with the DaemonSet controller.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.api.selectors import LabelSelector
from minikube_py.api.timestamps import parse_time, time_string
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.expectations import ControllerExpectations

BURST_REPLICAS = 500  # most pods created or deleted in one sync
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kind:
    """What differs between a ReplicaSet and a ReplicationController."""

    controller_name: str
    resource: Resource
    api_version: str
    kind: str
    selector: Callable[[dict[str, Any]], LabelSelector]


REPLICA_SET = Kind("replicaset-controller", resources.REPLICA_SETS, "apps/v1", "ReplicaSet",
                   lambda spec: LabelSelector.from_api(spec.get("selector")))
# An RC's selector is a plain map; an empty one means "the template's labels" (defaulted by the apiserver).
REPLICATION_CONTROLLER = Kind("replicationcontroller-controller", resources.REPLICATION_CONTROLLERS, "v1", "ReplicationController",
                              lambda spec: LabelSelector.from_set(spec.get("selector") or {}))


class ReplicaSetController:
    def __init__(self, ctx: ControllerContext, kind: Kind = REPLICA_SET) -> None:
        self.name = kind.controller_name
        self.kind = kind
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.owners = ctx.informers.informer_for(kind.resource)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.queue = RateLimitingQueue(name=kind.resource.plural, clock=ctx.clock)
        self.expectations = ControllerExpectations(ctx.clock)
        self.pod_control = podcontrol.PodControl(ctx.client, ctx.recorder, self.expectations)
        self.owners.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new),
                                                  on_delete=self._owner_deleted))
        self.pods.add_event_handler(FuncHandler(on_add=self._pod_added, on_update=self._pod_updated,
                                                on_delete=self._pod_deleted))

    async def run(self, workers: int) -> None:
        await asyncio.gather(self.owners.wait_for_cache_sync(), self.pods.wait_for_cache_sync())
        try:
            await run_workers(self.queue, self.sync, workers, name=self.kind.resource.plural, logger=log)
        finally:
            self.queue.shut_down()

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def _enqueue(self, owner: dict[str, Any], *_: Any) -> None:
        self.queue.add(meta_namespace_key(owner))

    def _owner_deleted(self, owner: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(owner)
        self.expectations.delete(key)
        self.queue.add(key)

    def _owner_key(self, pod: dict[str, Any]) -> str | None:
        """The key of the owner of ours that controls `pod`, if it is in the cache."""
        owner = podcontrol.resolve_controller_ref(self.owners.indexer, pod["metadata"]["namespace"],
                                                  podcontrol.controller_of(pod), self.kind.kind)
        return meta_namespace_key(owner) if owner is not None else None

    def _pod_added(self, pod: dict[str, Any], *_: Any) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)  # a restarted controller sees pods already being deleted as adds
            return
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.queue.add(key)
        elif podcontrol.controller_of(pod) is None:
            self._enqueue_matching(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync: nothing changed
        if new["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)  # the deletion starts now: do not wait for the pod to be gone
        for pod in (old, new):
            key = self._owner_key(pod)
            if key is not None:
                self.queue.add(key)
        if podcontrol.controller_of(new) is None:
            self._enqueue_matching(new)

    def _pod_deleted(self, pod: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, meta_namespace_key(pod))
            self.queue.add(key)

    def _enqueue_matching(self, pod: dict[str, Any]) -> None:
        namespace = pod["metadata"]["namespace"]
        for owner in self.owners.lister().list(namespace):
            if self.kind.selector(owner.get("spec") or {}).matches(pod["metadata"].get("labels")):
                self._enqueue(owner)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cached = self.owners.indexer.get_by_key(key)
        if cached is None:
            self.expectations.delete(key)
            return
        owner = copy.deepcopy(cached)
        owner.setdefault("apiVersion", self.kind.api_version)
        owner.setdefault("kind", self.kind.kind)
        spec = owner.get("spec") or {}
        selector = self.kind.selector(spec)
        satisfied = self.expectations.satisfied(key)
        candidates = [pod for pod in self.pods.lister().list(namespace) if podcontrol.is_active(pod)]
        pods = await podcontrol.claim_pods(self.client, owner, selector, candidates,
                                           lambda: podcontrol.owner_is_current(self.client, self.kind.resource, owner))
        failure = None
        if satisfied and not owner["metadata"].get("deletionTimestamp"):
            failure = await self.manage_replicas(pods, owner, key)
        await self.update_status(owner, pods, failure)
        if failure is not None:
            raise failure

    async def manage_replicas(self, pods: list[dict[str, Any]], owner: dict[str, Any],
                              key: str) -> errors.APIStatusError | None:
        """Create or delete pods to reach spec.replicas; the first write error, if any."""
        diff = len(pods) - int((owner.get("spec") or {}).get("replicas", 1))
        failures: list[errors.APIStatusError] = []
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect_creations(key, count)
            template = (owner.get("spec") or {}).get("template") or {}
            failures = await self.pod_control.create_pods(
                owner, key, [podcontrol.pod_from_template(template, owner) for _ in range(count)])
        elif diff > 0:
            rank = deletion_rank(self.clock.wall().timestamp(), self._related_pods(owner, pods))
            doomed = sorted(pods, key=rank)[:min(diff, BURST_REPLICAS)]
            self.expectations.expect_deletions(key, [meta_namespace_key(pod) for pod in doomed])
            failures = await self.pod_control.delete_pods(owner, key, doomed)
        return failures[0] if failures else None

    def _related_pods(self, owner: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`pods` and the pods of every sibling under the same controller (kube's getIndirectlyRelatedPods): how
        crowded a node is counts the whole Deployment, not just this ReplicaSet."""
        namespace, uid = owner["metadata"]["namespace"], owner["metadata"]["uid"]
        ref = podcontrol.controller_of(owner)
        siblings = {uid}
        if ref is not None:
            siblings |= {rs["metadata"]["uid"] for rs in self.owners.lister().list(namespace)
                         if (podcontrol.controller_of(rs) or {}).get("uid") == ref.get("uid")}
        related = {pod["metadata"]["uid"]: pod for pod in self.pods.lister().list(namespace)
                   if (podcontrol.controller_of(pod) or {}).get("uid") in siblings}
        related.update((pod["metadata"]["uid"], pod) for pod in pods)
        return list(related.values())

    async def update_status(self, owner: dict[str, Any], pods: list[dict[str, Any]],
                            failure: errors.APIStatusError | None) -> None:
        status = calculate_status(owner, pods, failure, self.clock.wall().timestamp())
        if status != (owner.get("status") or {}):
            owner["status"] = status
            try:
                await self.client.update(self.kind.resource, owner, owner["metadata"]["namespace"],
                                         subresource="status")
            except (errors.Conflict, errors.NotFound):
                self.queue.add(meta_namespace_key(owner))  # the next sync reads the newer object
                return
        spec = owner.get("spec") or {}
        min_ready, wanted = int(spec.get("minReadySeconds", 0)), int(spec.get("replicas", 1))
        if failure is None and min_ready and status.get("readyReplicas", 0) == wanted \
                and status.get("availableReplicas", 0) != wanted:
            self.queue.add_after(meta_namespace_key(owner), min_ready)  # to count them available in time


def calculate_status(owner: dict[str, Any], pods: list[dict[str, Any]], failure: errors.APIStatusError | None,
                     now: float) -> dict[str, Any]:
    spec = owner.get("spec") or {}
    template_labels = LabelSelector.from_set(((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
    min_ready = int(spec.get("minReadySeconds", 0))
    status: dict[str, Any] = {
        "replicas": len(pods),
        "fullyLabeledReplicas": sum(1 for pod in pods if template_labels.matches(pod["metadata"].get("labels"))),
        "readyReplicas": sum(1 for pod in pods if podcontrol.is_ready(pod)),
        "availableReplicas": sum(1 for pod in pods if podcontrol.is_available(pod, min_ready, now)),
        "observedGeneration": owner["metadata"].get("generation", 0),
    }
    conditions = [c for c in (owner.get("status") or {}).get("conditions") or [] if c.get("type") != "ReplicaFailure"]
    if failure is not None:
        previous = next((c for c in (owner.get("status") or {}).get("conditions") or []
                         if c.get("type") == "ReplicaFailure"), None)
        reason = "FailedCreate" if len(pods) < int(spec.get("replicas", 1)) else "FailedDelete"
        conditions.append({"type": "ReplicaFailure", "status": "True", "reason": reason, "message": str(failure),
                           "lastTransitionTime": (previous or {}).get("lastTransitionTime") or time_string()})
    if conditions:
        status["conditions"] = conditions
    # kube leaves zero counts out of the JSON (omitempty); `replicas` is always there
    return {k: v for k, v in status.items() if v or k == "replicas"}


def deletion_rank(now: float, related: list[dict[str, Any]]) -> Callable[[dict[str, Any]], Any]:
    """A sort key putting the pods to delete first (kube's ActivePodsWithRanks): `now` (epoch seconds) is
    the reference for the logarithmic time comparison; the active ones of `related` are counted per node."""
    on_node = Counter(_node(pod) for pod in related if podcontrol.is_active(pod))
    return lambda pod: _Ranked.of(pod, now, on_node)


def active_pods_rank(pod: dict[str, Any]) -> Any:
    """A sort key for kube's plain ActivePods order (the Job controller's): rules without deletion cost and
    crowding, times compared exactly."""
    return _Ranked.of(pod, None, None)


@dataclass(frozen=True)
class _Ranked:
    """What the ranking reads from one pod, read once per sort; `<` is "delete before"."""

    node: str
    phase: int
    ready: bool
    ready_at: float | None  # None: not ready, or ready without a transition time (kube's zero time)
    cost: int
    colocated: int
    restarts: int
    created: float | None
    uid: str
    now: float | None  # None: exact time comparison
    ranked: bool  # deletion cost and crowding count

    @classmethod
    def of(cls, pod: dict[str, Any], now: float | None, on_node: Counter[str] | None) -> _Ranked:
        status, stamp = pod.get("status") or {}, pod["metadata"].get("creationTimestamp")
        since = podcontrol.ready_since(pod)
        return cls(_node(pod), PHASE_RANK.get(status.get("phase", ""), 0), since is not None, since or None,
                   _deletion_cost(pod), (on_node or Counter())[_node(pod)],
                   max((int(s.get("restartCount", 0)) for s in status.get("containerStatuses") or []), default=0),
                   parse_time(stamp).timestamp() if stamp else None, pod["metadata"].get("uid", ""),
                   now, on_node is not None)

    def __lt__(self, other: _Ranked) -> bool:
        if self.node != other.node and not (self.node and other.node):
            return not self.node
        if self.phase != other.phase:
            return self.phase < other.phase
        if self.ready != other.ready:
            return not self.ready
        if self.ranked and self.cost != other.cost:
            return self.cost < other.cost
        if self.ranked and self.colocated != other.colocated:
            return self.colocated > other.colocated
        if self.ready and other.ready and self.ready_at != other.ready_at:
            return self._sooner(self.ready_at, other.ready_at, other.uid)
        if self.restarts != other.restarts:
            return self.restarts > other.restarts
        if self.created != other.created:
            return self._sooner(self.created, other.created, other.uid)
        return False

    def _sooner(self, mine: float | None, theirs: float | None, their_uid: str) -> bool:
        """Whether time `mine` is the more recent one (a missing time counts as the most recent); with a
        reference `now`, times in the same power-of-two age bracket tie and the smaller uid goes first."""
        if mine is None or theirs is None:
            return mine is None
        if self.now is None:
            return mine > theirs
        difference = _age_bracket(self.now - mine) - _age_bracket(self.now - theirs)
        return self.uid < their_uid if difference == 0 else difference < 0


def _age_bracket(seconds: float) -> int:
    """floor(log2(age in nanoseconds)), -1 for no age: kube's logarithmic time scale."""
    nanoseconds = seconds * 1e9
    return int(math.log2(nanoseconds)) if nanoseconds > 0 else -1


def _node(pod: dict[str, Any]) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _deletion_cost(pod: dict[str, Any]) -> int:
    try:
        return int((pod["metadata"].get("annotations") or {}).get(DELETION_COST, 0))
    except ValueError:
        return 0

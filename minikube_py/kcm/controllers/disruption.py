"""The disruption controller: keeps every PodDisruptionBudget's status telling how many pods may go now.

A PodDisruptionBudget (PDB) says how many of the pods its selector picks must stay up (`minAvailable`) or
may be down (`maxUnavailable`), as a number or a percentage. The controller does not protect anything by
itself: it computes `status.disruptionsAllowed`, and the apiserver's eviction subresource
(`apiserver/eviction.py`, what `kubectl drain` calls) refuses an eviction when that number is 0. Handlers only
enqueue a budget's key: a budget added, changed or deleted, or a pod it selects changing (a pod selected by
several budgets enqueues the first and gets a `MultiplePodDisruptionBudgets` warning event).

`sync(key)` for one budget:
1. the pods of its namespace its selector picks (in policy/v1 an empty selector picks every pod);
2. `expectedPods` and `desiredHealthy`: an integer `minAvailable` is taken as it is, with every selected pod
   expected; a percentage, or `maxUnavailable`, needs the number of pods that *should* exist, the sum of the
   scales of the pods' controllers: a ReplicationController, a Deployment (through its ReplicaSet), a
   ReplicaSet, a StatefulSet, or any other owner with a `scale` subresource, read through `/scale`
   (percentages are rounded up). Pods without a controller cannot be counted that way; they are left out,
   with an `UnmanagedPods` warning event. A pod whose controller cannot be found fails the sync
   (`CalculateExpectedPodCountFailed`);
3. `currentHealthy`: the selected pods that are Ready and not being deleted, not counting those the eviction
   subresource recently approved (`disruptedPods`, pod name → when): the eviction wrote them there before
   deleting the pod, so a budget is never spent twice for one pod. An entry is dropped once its pod is being
   deleted or gone, or after `DELETION_TIMEOUT` (2 min, with a `NotDeleted` warning event on the pod);
   the budget is checked again when the earliest entry expires;
4. `disruptionsAllowed` = currentHealthy − desiredHealthy (never below 0, and 0 while no pod is expected),
   written with `observedGeneration` and the condition `DisruptionAllowed` (`SufficientPods` /
   `InsufficientPods`) through `poddisruptionbudgets/status`, only when something changed.

When a sync fails for any reason but a write conflict, the controller "fails safe": it writes
`disruptionsAllowed: 0` with `DisruptionAllowed=False` reason `SyncFailed` and the error as message, so no
eviction is approved on numbers it could not compute, and waits for the next change instead of retrying in a
loop. A conflict is retried with the queue's backoff.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from minikube_py.api.selectors import LabelSelector
from minikube_py.api.timestamps import parse_time, time_string
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import intstr, podcontrol
from minikube_py.kcm.controllers.scaleclient import NoKindMatchError, ScaleClient

DELETION_TIMEOUT = 120.0  # seconds an approved eviction may take before its pod counts as healthy again
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS, INSUFFICIENT_PODS, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"
API_VERSION, KIND = "policy/v1", "PodDisruptionBudget"

log = logging.getLogger(__name__)


class ExpectedCountError(Exception):
    """The number of pods a budget expects could not be worked out (the message says why, as kube's)."""


@dataclass(frozen=True)
class Counts:
    expected: int
    desired_healthy: int
    unmanaged: tuple[str, ...] = ()


class DisruptionController:
    name = "disruption-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.budgets = ctx.informers.informer_for(resources.POD_DISRUPTION_BUDGETS)
        self.pods = ctx.informers.informer_for(resources.PODS)
        # the workloads whose scale is read from the cache; any other owner is read through its /scale
        self.workloads = {res.kind: ctx.informers.informer_for(res) for res in (
            resources.REPLICATION_CONTROLLERS, resources.REPLICA_SETS, resources.DEPLOYMENTS,
            resources.STATEFUL_SETS)}
        self.queue = RateLimitingQueue(name="disruption", clock=ctx.clock)
        self.scales = ScaleClient(ctx.client)
        self.budgets.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new),
                                                   on_delete=self._enqueue))
        self.pods.add_event_handler(FuncHandler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new),
                                                on_delete=self._pod_changed))

    async def run(self, workers: int = 1) -> None:
        informers = (self.budgets, self.pods, *self.workloads.values())
        await asyncio.gather(*(informer.wait_for_cache_sync() for informer in informers))
        try:
            await run_workers(self.queue, self.sync, workers, name="disruption", logger=log)
        finally:
            self.queue.shut_down()

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def _enqueue(self, budget: dict[str, Any] | DeletedFinalStateUnknown, *_: Any) -> None:
        self.queue.add(meta_namespace_key(budget))

    def _pod_changed(self, pod: dict[str, Any] | DeletedFinalStateUnknown, *_: Any) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        budget = self.budget_for_pod(pod)
        if budget is not None:
            self._enqueue(budget)

    def budget_for_pod(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The (first) budget whose selector picks `pod`; several is a user error kube only warns about."""
        meta = pod["metadata"]
        found = [budget for budget in self.budgets.lister().list(meta.get("namespace"))
                 if _selects(budget, meta.get("labels"))]
        if not found:
            return None
        if len(found) > 1:
            first = found[0]["metadata"]["name"]
            self.recorder.event(_with_kind(pod, "v1", "Pod"), "Warning", "MultiplePodDisruptionBudgets",
                                f'Pod "{meta.get("namespace")}"/"{meta["name"]}" matches multiple '
                                f'PodDisruptionBudgets.  Chose "{first}" arbitrarily.')
        return found[0]

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.budgets.indexer.get_by_key(key)
        if cached is None:
            return
        budget = _with_kind(copy.deepcopy(cached), API_VERSION, KIND)
        try:
            await self.try_sync(budget)
        except errors.Conflict:
            raise  # a newer budget is on its way: retry with backoff
        except (ExpectedCountError, errors.APIStatusError) as err:
            log.error("failed to sync PodDisruptionBudget %s: %s", key, err)
            await self.fail_safe(budget, err)

    async def try_sync(self, budget: dict[str, Any]) -> None:
        namespace = budget["metadata"]["namespace"]
        pods = [pod for pod in self.pods.lister().list(namespace) if _selects(budget, pod["metadata"].get("labels"))]
        if not pods:
            self.recorder.event(budget, "Normal", "NoPods", "No matching pods found")
        try:
            counts = await self.expected_pod_count(budget, pods)
        except (ExpectedCountError, errors.APIStatusError) as err:
            self.recorder.event(budget, "Warning", "CalculateExpectedPodCountFailed",
                                f"Failed to calculate the number of expected pods: {err}")
            raise
        if counts.unmanaged:
            self.recorder.event(budget, "Warning", "UnmanagedPods", _unmanaged_message(budget))
        now = self.clock.wall()
        disrupted, recheck = self.disrupted_pods(budget, pods, now)
        healthy = count_healthy(pods, disrupted, now)
        await self.update_status(budget, healthy, counts, disrupted)
        if recheck is not None:
            self.queue.add_after(meta_namespace_key(budget), max((recheck - now).total_seconds(), 0.0))

    async def expected_pod_count(self, budget: dict[str, Any], pods: list[dict[str, Any]]) -> Counts:
        spec = budget.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = await self.expected_scale(pods)
            unavailable = scaled_value(spec["maxUnavailable"], expected)
            return Counts(expected, max(expected - unavailable, 0), unmanaged)
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return Counts(len(pods), min_available)
        if isinstance(min_available, str):
            expected, unmanaged = await self.expected_scale(pods)
            return Counts(expected, scaled_value(min_available, expected), unmanaged)
        return Counts(0, 0)

    async def expected_scale(self, pods: list[dict[str, Any]]) -> tuple[int, tuple[str, ...]]:
        """The summed scale of the pods' controllers, and the names of the pods that have none."""
        scales: dict[str, int] = {}  # controller uid -> its replicas
        unmanaged = []
        for pod in pods:
            ref = podcontrol.controller_of(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            found = await self.controller_scale(ref, pod["metadata"]["namespace"])
            if found is None:
                raise ExpectedCountError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), tuple(unmanaged)

    async def controller_scale(self, ref: dict[str, Any], namespace: str) -> tuple[str, int] | None:
        """(uid, replicas) of the controller `ref` names, tried as kube's finders are, in order."""
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        kind = ref.get("kind")
        if kind == "ReplicationController" and group == "":
            return self._cached_scale("ReplicationController", ref, namespace)
        if kind == "ReplicaSet" and group in ("apps", "extensions"):
            replica_set = self._cached("ReplicaSet", ref, namespace)
            if replica_set is not None:
                owner = podcontrol.controller_of(replica_set)
                if owner is None or owner.get("kind") != "Deployment":
                    return _uid_and_replicas(replica_set)
                if str(owner.get("apiVersion", "")).rpartition("/")[0] in ("apps", "extensions"):
                    found = self._cached_scale("Deployment", owner, namespace)
                    if found is not None:
                        return found
        if kind == "StatefulSet" and group == "apps":
            found = self._cached_scale("StatefulSet", ref, namespace)
            if found is not None:
                return found
        return await self.scale_of(ref, namespace)

    def _cached(self, kind: str, ref: dict[str, Any], namespace: str) -> dict[str, Any] | None:
        return podcontrol.resolve_controller_ref(self.workloads[kind].indexer, namespace, ref, kind)

    def _cached_scale(self, kind: str, ref: dict[str, Any], namespace: str) -> tuple[str, int] | None:
        obj = self._cached(kind, ref, namespace)
        return _uid_and_replicas(obj) if obj is not None else None

    async def scale_of(self, ref: dict[str, Any], namespace: str) -> tuple[str, int] | None:
        """Any other owner through its `scale` subresource (a custom resource, say)."""
        try:
            resource = await self.scales.resource_for(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        except NoKindMatchError as err:
            raise ExpectedCountError(str(err)) from None
        try:
            scale = await self.scales.get(resource, namespace, ref["name"])
        except errors.NotFound:
            if not await self.scales.implements_scale(resource):
                raise ExpectedCountError(f"{resource.group_resource} does not implement the scale subresource"
                                         ) from None
            return None
        if scale["metadata"].get("uid") != ref.get("uid"):
            return None
        return scale["metadata"]["uid"], int((scale.get("spec") or {}).get("replicas") or 0)

    def disrupted_pods(self, budget: dict[str, Any], pods: list[dict[str, Any]],
                       now: datetime) -> tuple[dict[str, str], datetime | None]:
        """The `disruptedPods` entries still awaited, and when the earliest of them expires."""
        recorded = (budget.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck = None
        for pod in pods:
            name = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp") or name not in recorded:
                continue
            expires = parse_time(recorded[name]) + timedelta(seconds=DELETION_TIMEOUT)
            if expires < now:
                meta = budget["metadata"]
                # kube names the budget "<namespace>/<namespace>" in this message; kept for fidelity
                self.recorder.event(_with_kind(pod, "v1", "Pod"), "Warning", "NotDeleted",
                                    f"Pod was expected by PDB {meta['namespace']}/{meta['namespace']} to be "
                                    "deleted but it wasn't")
                continue
            kept[name] = recorded[name]
            recheck = expires if recheck is None or expires < recheck else recheck
        return kept, recheck

    async def update_status(self, budget: dict[str, Any], healthy: int, counts: Counts,
                            disrupted: dict[str, str]) -> None:
        allowed = healthy - counts.desired_healthy
        if counts.expected <= 0 or allowed <= 0:
            allowed = 0
        old = budget.get("status") or {}
        generation = budget["metadata"].get("generation", 0)
        numbers = {"currentHealthy": healthy, "desiredHealthy": counts.desired_healthy,
                   "expectedPods": counts.expected, "disruptionsAllowed": allowed}
        if (all(old.get(field, 0) == value for field, value in numbers.items())
                and (old.get("disruptedPods") or {}) == disrupted and old.get("observedGeneration", 0) == generation
                and _condition_up_to_date(old, generation)):
            return
        status: dict[str, Any] = {**numbers, "observedGeneration": generation,
                                  "conditions": copy.deepcopy(old.get("conditions") or [])}
        if disrupted:
            status["disruptedPods"] = disrupted
        set_disruption_allowed_condition(status, self.clock.wall())
        await self._write_status(budget, status)

    async def fail_safe(self, budget: dict[str, Any], err: Exception) -> None:
        """Allow no disruption while the real numbers cannot be computed."""
        status = copy.deepcopy(budget.get("status") or {})
        status["disruptionsAllowed"] = 0
        set_condition(status.setdefault("conditions", []), "False", SYNC_FAILED, str(err),
                      status.get("observedGeneration", 0), self.clock.wall())
        await self._write_status(budget, status)

    async def _write_status(self, budget: dict[str, Any], status: dict[str, Any]) -> None:
        budget["status"] = status
        try:
            await self.client.update(resources.POD_DISRUPTION_BUDGETS, budget, budget["metadata"]["namespace"],
                                     subresource="status")
        except errors.NotFound:
            return  # deleted meanwhile: its delete event ends the story


# pure helpers, shared with the eviction subresource's view of a budget --------------------------------------


def scaled_value(value: int | str, total: int) -> int:
    """An int-or-percent against `total`, percentages rounded up; an invalid one fails the count."""
    try:
        return intstr.scaled_value(value, total, round_up=True)
    except ValueError as err:
        raise ExpectedCountError(str(err)) from None


def count_healthy(pods: list[dict[str, Any]], disrupted: dict[str, str], now: datetime) -> int:
    """Ready pods not being deleted and not about to be (an approved eviction not yet expired)."""
    healthy = 0
    for pod in pods:
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if name in disrupted and parse_time(disrupted[name]) + timedelta(seconds=DELETION_TIMEOUT) > now:
            continue
        healthy += podcontrol.is_ready(pod)
    return healthy


def set_condition(conditions: list[dict[str, Any]], status: str, reason: str, message: str, generation: int,
                  now: datetime) -> None:
    """Set the DisruptionAllowed condition as apimachinery's SetStatusCondition does: the transition time
    moves only when the status changes."""
    for condition in conditions:
        if condition.get("type") == DISRUPTION_ALLOWED:
            if condition.get("status") != status:
                condition["lastTransitionTime"] = time_string(now)
            condition.update(status=status, reason=reason, message=message, observedGeneration=generation)
            return
    conditions.append({"type": DISRUPTION_ALLOWED, "status": status, "reason": reason, "message": message,
                       "observedGeneration": generation, "lastTransitionTime": time_string(now)})


def set_disruption_allowed_condition(status: dict[str, Any], now: datetime) -> None:
    """DisruptionAllowed from `disruptionsAllowed` (kube's UpdateDisruptionAllowedCondition)."""
    allowed = status.get("disruptionsAllowed", 0) > 0
    set_condition(status.setdefault("conditions", []), "True" if allowed else "False",
                  SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS, "", status.get("observedGeneration", 0), now)


def selector_of(budget: dict[str, Any]) -> LabelSelector:
    """A budget's selector: in policy/v1 an empty one selects every pod, a missing one none."""
    try:
        return LabelSelector.from_api((budget.get("spec") or {}).get("selector"))
    except Exception:  # an invalid selector selects nothing, as kube's
        return LabelSelector(matches_nothing=True)


def _selects(budget: dict[str, Any], labels: dict[str, str] | None) -> bool:
    return selector_of(budget).matches(labels)


def _condition_up_to_date(status: dict[str, Any], generation: int) -> bool:
    condition = next((c for c in status.get("conditions") or [] if c.get("type") == DISRUPTION_ALLOWED), None)
    if condition is None or status.get("observedGeneration", 0) != generation:
        return False
    if status.get("disruptionsAllowed", 0) > 0:
        return condition.get("status") == "True" and condition.get("reason") == SUFFICIENT_PODS
    return condition.get("status") == "False" and condition.get("reason") == INSUFFICIENT_PODS


def _uid_and_replicas(obj: dict[str, Any]) -> tuple[str, int]:
    replicas = (obj.get("spec") or {}).get("replicas")
    return obj["metadata"]["uid"], int(1 if replicas is None else replicas)


def _with_kind(obj: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return obj


def _unmanaged_message(budget: dict[str, Any]) -> str:
    return (f"Pods selected by this PodDisruptionBudget (selector: {go_label_selector(budget['spec'].get('selector'))}) "
            "were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which "
            "may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field "
            "of the PDB to an integer value.")


def go_label_selector(selector: dict[str, Any] | None) -> str:
    """A `*metav1.LabelSelector` as Go's `%v` prints it (its generated String method)."""
    if selector is None:
        return "nil"
    labels = "".join(f"{key}: {value}," for key, value in sorted((selector.get("matchLabels") or {}).items()))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or [])
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}")

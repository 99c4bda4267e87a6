"""The Job controller's loop: event handlers, the orphan-pod queue, and `sync(key)` tying the steps together.

Handlers only enqueue. A Job added, deleted or with a changed spec (generation) → its key at once; its
status changed, or any of its pods changed → its key after a 1 s batching delay (kube's
`syncJobBatchPeriod`), so a burst of pod updates costs one sync. Pod events also settle the creation and
deletion expectations and the awaited finalizer removals. A pod that carries the tracking finalizer but
whose Job is gone, finished or no longer its controller goes on a second queue whose worker only removes
that finalizer (`sync_orphan_pod`), so no pod is ever stuck undeletable.

`sync(key)`:
1. skip Jobs already finished and Jobs `spec.managedBy` another controller;
2. claim the pods (adopt matching orphans, adding the tracking finalizer; release pods that stopped
   matching), and count: active, ready, terminating, and succeeded/failed including pods finished since
   the last status write (failures an Ignore rule of the podFailurePolicy matched do not count);
3. decide the outcome, in kube's order: an existing FailureTarget/SuccessCriteriaMet, a FailJob rule,
   more failures than `backoffLimit` (or, with restartPolicy OnFailure, as many container restarts),
   `activeDeadlineSeconds` passed since `status.startTime` (else requeue at the deadline), failed indexes
   beyond `maxFailedIndexes` or covering every remaining index, a met `successPolicy`, and finally enough
   succeeded pods;
4. a decided Job has its active pods deleted; otherwise, once expectations are met, manage.py creates or
   deletes pods, and the `Suspended` condition follows `spec.suspend` (events Suspended / Resumed;
   resuming resets `status.startTime`, so the deadline counts active time only);
5. tracking.py counts finished pods, removes their finalizers and writes the status (active, ready,
   terminating, succeeded, failed, completedIndexes, failedIndexes, uncountedTerminatedPods, conditions).
A failed write or pod operation fails the sync, which the queue retries with backoff (1 s doubling to 60 s,
kube's Job queue).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from minikube_py.api.selectors import LabelSelector
from minikube_py.api.timestamps import parse_time, time_string
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.ratelimiter import ItemExponentialFailureRateLimiter
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.expectations import ControllerExpectations
from minikube_py.kcm.controllers.job import conditions, indexes
from minikube_py.kcm.controllers.job.backoff import BackoffRecord, BackoffStore
from minikube_py.kcm.controllers.job.manage import BATCH_PERIOD, PodManager
from minikube_py.kcm.controllers.job.podfailurepolicy import match_pod_failure_policy
from minikube_py.kcm.controllers.job.pods import (
    TRACKING_FINALIZER,
    has_tracking_finalizer,
    is_pod_failed,
    is_terminating,
    phase,
    remove_finalizer_patch,
)
from minikube_py.kcm.controllers.job.synccontext import SyncContext
from minikube_py.kcm.controllers.job.tracking import FinalizerExpectations, StatusTracker

JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"  # the spec.managedBy value meaning "us"

log = logging.getLogger(__name__)


class JobController:
    name = "job-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.jobs = ctx.informers.informer_for(resources.JOBS)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 60.0), name="job", clock=ctx.clock)
        self.orphan_queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 60.0), name="job_orphan_pod",
                                              clock=ctx.clock)
        self.expectations = ControllerExpectations(ctx.clock)
        self.finalizer_expectations = FinalizerExpectations()
        self.backoff = BackoffStore()
        self.pod_manager = PodManager(ctx.client, ctx.recorder, ctx.clock, self.expectations, self.queue.add_after)
        self.tracker = StatusTracker(ctx.client, ctx.recorder, ctx.clock, self.finalizer_expectations, self.backoff)
        self.jobs.add_event_handler(FuncHandler(on_add=self._job_added, on_update=self._job_updated,
                                                on_delete=self._job_deleted))
        self.pods.add_event_handler(FuncHandler(on_add=self._pod_added, on_update=self._pod_updated,
                                                on_delete=lambda pod: self._pod_deleted(pod, final=True)))

    async def run(self, workers: int) -> None:
        await asyncio.gather(self.jobs.wait_for_cache_sync(), self.pods.wait_for_cache_sync())
        try:
            await asyncio.gather(
                run_workers(self.queue, self.sync, workers, name="job", logger=log),
                run_workers(self.orphan_queue, self.sync_orphan_pod, 1, name="job_orphan_pod", logger=log))
        finally:
            self.queue.shut_down()
            self.orphan_queue.shut_down()

    # event handlers: only keys go on the queues --------------------------------------------------------

    def _job_added(self, job: dict[str, Any], *_: Any) -> None:
        self.queue.add(meta_namespace_key(job))

    def _job_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = meta_namespace_key(new)
        if old["metadata"].get("generation") == new["metadata"].get("generation"):
            self.queue.add_after(key, BATCH_PERIOD)
        else:
            self.queue.add(key)
        if conditions.finished_condition(new) is not None:
            self._cleanup_pod_finalizers(new)
        started = (new.get("status") or {}).get("startTime")
        deadline = (new.get("spec") or {}).get("activeDeadlineSeconds")
        if started and deadline is not None and deadline != (old.get("spec") or {}).get("activeDeadlineSeconds"):
            passed = (self.clock.wall() - parse_time(started)).total_seconds()
            self.queue.add_after(key, int(deadline) - passed)

    def _job_deleted(self, job: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        self.queue.add(meta_namespace_key(job))
        self._cleanup_pod_finalizers(job.obj if isinstance(job, DeletedFinalStateUnknown) else job)

    def _cleanup_pod_finalizers(self, job: dict[str, Any]) -> None:
        """Hand the finalizers of a finished or deleted Job's pods to the orphan worker."""
        for pod in self.pods.lister().list(job["metadata"]["namespace"]):
            ref = podcontrol.controller_of(pod)
            if ref is not None and ref.get("uid") == job["metadata"].get("uid") and has_tracking_finalizer(pod):
                self.orphan_queue.add(meta_namespace_key(pod))

    def _resolve(self, pod: dict[str, Any], ref: dict[str, Any] | None) -> dict[str, Any] | None:
        """The cached Job `ref` points to, if it is still that Job."""
        if ref is None or ref.get("kind") != "Job":
            return None
        job = self.jobs.indexer.get_by_key(f"{pod['metadata']['namespace']}/{ref['name']}")
        return job if job is not None and job["metadata"]["uid"] == ref.get("uid") else None

    def _pod_added(self, pod: dict[str, Any], *_: Any) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod, final=False)
            return
        ref = podcontrol.controller_of(pod)
        if ref is not None:
            job = self._resolve(pod, ref)
            if job is not None:
                self.expectations.creation_observed(meta_namespace_key(job))
                self.queue.add_after(meta_namespace_key(job), BATCH_PERIOD)
            return
        if has_tracking_finalizer(pod):
            self.orphan_queue.add(meta_namespace_key(pod))
        self._enqueue_matching(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new, final=False)
            return
        finalizer_removed = not has_tracking_finalizer(new)
        old_ref, new_ref = podcontrol.controller_of(old), podcontrol.controller_of(new)
        for ref in ([old_ref] if old_ref != new_ref else []) + [new_ref]:
            job = self._resolve(new, ref)
            if job is not None:
                if finalizer_removed:
                    self.finalizer_expectations.removal_observed(meta_namespace_key(job), new["metadata"]["uid"])
                self.queue.add_after(meta_namespace_key(job), BATCH_PERIOD)
        if new_ref is not None:
            return
        if has_tracking_finalizer(new):
            self.orphan_queue.add(meta_namespace_key(new))
        if old["metadata"].get("labels") != new["metadata"].get("labels") or old_ref != new_ref:
            self._enqueue_matching(new)

    def _pod_deleted(self, pod: dict[str, Any] | DeletedFinalStateUnknown, final: bool) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        ref = podcontrol.controller_of(pod)
        job = self._resolve(pod, ref)
        if job is None or conditions.finished_condition(job) is not None:
            if has_tracking_finalizer(pod):
                self.orphan_queue.add(meta_namespace_key(pod))  # nobody else will take the finalizer off
            return
        key = meta_namespace_key(job)
        self.expectations.deletion_observed(key, meta_namespace_key(pod))
        if final or not has_tracking_finalizer(pod):
            self.finalizer_expectations.removal_observed(key, pod["metadata"]["uid"])
        self.queue.add_after(key, BATCH_PERIOD)

    def _enqueue_matching(self, pod: dict[str, Any]) -> None:
        for job in self.jobs.lister().list(pod["metadata"]["namespace"]):
            selector = (job.get("spec") or {}).get("selector")
            if selector and LabelSelector.from_api(selector).matches(pod["metadata"].get("labels")):
                self.queue.add_after(meta_namespace_key(job), BATCH_PERIOD)

    # the orphan worker -----------------------------------------------------------------------------------

    async def sync_orphan_pod(self, key: str) -> None:
        """Remove the tracking finalizer from a pod no unfinished Job of ours controls."""
        pod = self.pods.indexer.get_by_key(key)
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = podcontrol.controller_of(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return  # not a Job's pod: not our finalizer to manage
            job = self._resolve(pod, ref)
            if job is not None and (_managed_by_other(job) or conditions.finished_condition(job) is None):
                return  # the Job counts it
        namespace, name = split_meta_namespace_key(key)
        try:
            await self.client.patch(resources.PODS, name, remove_finalizer_patch(), namespace, patch_type="strategic")
        except errors.NotFound:
            pass

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.jobs.indexer.get_by_key(key)
        if cached is None:
            self.expectations.delete(key)
            self.finalizer_expectations.delete(key)
            self.backoff.remove(key)
            return
        if _managed_by_other(cached):
            return
        if conditions.finished_condition(cached) is not None:
            self.backoff.remove(key)
            return
        job = copy.deepcopy(cached)
        job.setdefault("apiVersion", "batch/v1")
        job.setdefault("kind", "Job")
        if (job.get("spec") or {}).get("completionMode", "NonIndexed") not in ("NonIndexed", "Indexed"):
            self.recorder.event(job, "Warning", "UnknownCompletionMode",
                                "Skipped Job sync because completion mode is unknown")
            return
        await self.sync_job(job, key)

    async def sync_job(self, job: dict[str, Any], key: str) -> None:
        status = job.setdefault("status", {})
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        satisfied = self.expectations.satisfied(key)
        pods = await self.pods_for_job(job)
        active_pods = [pod for pod in pods if podcontrol.is_active(pod)]
        ctx = SyncContext(job, pods, active_pods, ready=sum(1 for pod in active_pods if podcontrol.is_ready(pod)),
                          terminating=sum(1 for pod in pods if is_terminating(pod)),
                          uncounted_succeeded=set(uncounted.get("succeeded") or []),
                          uncounted_failed=set(uncounted.get("failed") or []),
                          expected_rm_finalizers=self.finalizer_expectations.expected(key),
                          backoff=BackoffRecord(key))
        new_succeeded, new_failed = _new_finished_pods(ctx)
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        ctx.succeeded = int(status.get("succeeded", 0)) + len(new_succeeded) + len(ctx.uncounted_succeeded)
        ctx.failed = (int(status.get("failed", 0)) + len(ctx.uncounted_failed)
                      + sum(1 for pod in new_failed if match_pod_failure_policy(policy, pod).count_failed))
        if not status.get("startTime") and not _suspended(job):
            status["startTime"] = time_string(self.clock.wall())
        ctx.backoff = self.backoff.new_record(key, new_succeeded, new_failed)
        ctx.finished_condition = self.decide_failure(ctx, key)
        if indexes.is_indexed(job):
            self.index_state(ctx)
        active, suspend_changed, error = await self.reconcile_pods(ctx, key, satisfied)
        needs_update = (suspend_changed or active != int(status.get("active", 0))
                        or ctx.ready != status.get("ready") or ctx.terminating != status.get("terminating"))
        status.update(active=active, ready=ctx.ready, terminating=ctx.terminating)
        await self.tracker.track(ctx, key, needs_update)
        if error is not None:
            raise error

    def decide_failure(self, ctx: SyncContext, key: str) -> dict[str, Any] | None:
        """The condition deciding the Job's failure (or an earlier decided success), if any."""
        job, now = ctx.job, self.clock.wall()
        met = conditions.find_condition(job, conditions.SUCCESS_CRITERIA_MET)
        if met is not None and met.get("status") == "True":
            return met
        target = conditions.find_condition(job, conditions.FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            return conditions.new_condition(conditions.FAILED, "True", target.get("reason", ""),
                                            target.get("message", ""), now)
        message = _fail_job_message(job, ctx.pods)
        if message is not None:
            return conditions.new_condition(conditions.FAILURE_TARGET, "True", conditions.POD_FAILURE_POLICY, message, now)
        spec = job.get("spec") or {}
        if ctx.failed > int(spec.get("backoffLimit", 6)) or _past_backoff_limit_on_failure(job, ctx.pods):
            return conditions.new_condition(conditions.FAILURE_TARGET, "True", *conditions.BACKOFF_LIMIT_EXCEEDED, now)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and not _suspended(job):
            left = int(deadline) - (now - parse_time(job["status"]["startTime"])).total_seconds()
            if left <= 0:
                return conditions.new_condition(conditions.FAILURE_TARGET, "True", *conditions.DEADLINE_EXCEEDED, now)
            self.queue.add_after(key, left)
        return None

    def index_state(self, ctx: SyncContext) -> None:
        """The succeeded and failed indexes, and the outcome they decide."""
        job, now = ctx.job, self.clock.wall()
        ctx.prev_succeeded_indexes, ctx.succeeded_indexes = indexes.succeeded_indexes(job, ctx.pods)
        ctx.succeeded = ctx.succeeded_indexes.total()
        if indexes.has_backoff_limit_per_index(job):
            ctx.failed_indexes = indexes.failed_indexes(job, ctx.pods)
            if ctx.finished_condition is None:
                max_failed = (job.get("spec") or {}).get("maxFailedIndexes")
                failed = ctx.failed_indexes.total()
                if max_failed is not None and failed > int(max_failed):
                    ctx.finished_condition = conditions.new_condition(
                        conditions.FAILURE_TARGET, "True", *conditions.MAX_FAILED_INDEXES_EXCEEDED, now)
                elif failed > 0 and failed + ctx.succeeded_indexes.total() >= indexes.completions(job):
                    ctx.finished_condition = conditions.new_condition(
                        conditions.FAILURE_TARGET, "True", *conditions.FAILED_INDEXES, now)
            ctx.delayed_deletion = indexes.pods_with_delayed_deletion(ctx)
        if ctx.finished_condition is None:
            message = indexes.match_success_policy(job, ctx.succeeded_indexes)
            if message is not None:
                ctx.finished_condition = conditions.new_condition(
                    conditions.SUCCESS_CRITERIA_MET, "True", conditions.SUCCESS_POLICY, message, now)

    async def reconcile_pods(self, ctx: SyncContext, key: str,
                             satisfied: bool) -> tuple[int, bool, errors.APIStatusError | None]:
        """Stop the pods of a decided Job, or manage them; (active, Suspended condition changed, error)."""
        job = ctx.job
        active = len(ctx.active_pods)
        if ctx.finished_condition is not None:
            deleted, error = await self.pod_manager.delete_active_pods(ctx)
            if deleted != active or not satisfied:
                ctx.finished_condition = None  # pods may remain that the cache has not shown yet
            return active - deleted, False, error
        managed, error = False, None
        if satisfied and not job["metadata"].get("deletionTimestamp"):
            active, error = await self.pod_manager.manage(ctx, key)
            managed = True
        wanted = (job.get("spec") or {}).get("completions")
        if ctx.succeeded >= (1 if wanted is None else int(wanted)) and active == 0:
            ctx.finished_condition = conditions.new_condition(conditions.SUCCESS_CRITERIA_MET, "True",
                                                              *conditions.COMPLETIONS_REACHED, self.clock.wall())
            return active, False, error
        return active, managed and self._suspend_condition(job), error

    def _suspend_condition(self, job: dict[str, Any]) -> bool:
        now = self.clock.wall()
        if _suspended(job):
            changed = conditions.ensure_condition_status(job, conditions.SUSPENDED, "True", "JobSuspended",
                                                         "Job suspended", now)
            if changed:
                self.recorder.event(job, "Normal", "Suspended", "Job suspended")
            return changed
        changed = conditions.ensure_condition_status(job, conditions.SUSPENDED, "False", "JobResumed", "Job resumed", now)
        if changed:
            self.recorder.event(job, "Normal", "Resumed", "Job resumed")
            job["status"]["startTime"] = time_string(now)  # the deadline counts from the resumption
        return changed

    async def pods_for_job(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        """The Job's pods after adoption (with the tracking finalizer) and release."""
        selector = LabelSelector.from_api((job.get("spec") or {}).get("selector"))
        candidates = self.pods.lister().list(job["metadata"]["namespace"])
        claimed = await podcontrol.claim_pods(self.client, job, selector, candidates, lambda: podcontrol.owner_is_current(self.client, resources.JOBS, job))
        pods = []
        for pod in claimed:
            adopted = podcontrol.controller_of(pod) is None  # the cache does not show the new owner yet
            if adopted and not has_tracking_finalizer(pod):
                pod = await self._add_tracking_finalizer(pod)
            if pod is not None:
                pods.append(pod)
        return pods

    async def _add_tracking_finalizer(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        meta = pod["metadata"]
        patch = {"metadata": {"finalizers": [TRACKING_FINALIZER], "uid": meta["uid"]}}
        try:
            await self.client.patch(resources.PODS, meta["name"], patch, meta["namespace"], patch_type="strategic")
        except (errors.NotFound, errors.Conflict, errors.Invalid):
            return None
        adopted = copy.deepcopy(pod)
        adopted["metadata"]["finalizers"] = [*(meta.get("finalizers") or []), TRACKING_FINALIZER]
        return adopted

def _new_finished_pods(ctx: SyncContext) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pods that finished and are not counted in the status yet: (succeeded, failed)."""
    succeeded, failed = [], []
    for pod in ctx.pods:
        uid = pod["metadata"]["uid"]
        if not has_tracking_finalizer(pod) or uid in ctx.expected_rm_finalizers:
            continue
        if indexes.is_indexed(ctx.job) and indexes.valid_index(pod, ctx.job) is None:
            continue
        if phase(pod) == "Succeeded" and uid not in ctx.uncounted_succeeded:
            succeeded.append(pod)
        elif is_pod_failed(pod, ctx.job) and uid not in ctx.uncounted_failed:
            failed.append(pod)
    return succeeded, failed


def _fail_job_message(job: dict[str, Any], pods: list[dict[str, Any]]) -> str | None:
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    if not policy:
        return None
    for pod in pods:
        if is_pod_failed(pod, job):
            message = match_pod_failure_policy(policy, pod).fail_job_message
            if message is not None:
                return message
    return None


def _past_backoff_limit_on_failure(job: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
    """With restartPolicy OnFailure failures are container restarts: their sum counts against backoffLimit."""
    spec = job.get("spec") or {}
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(int(s.get("restartCount", 0)) for pod in pods if phase(pod) in ("Running", "Pending")
                   for s in ((pod.get("status") or {}).get("initContainerStatuses") or [])
                   + ((pod.get("status") or {}).get("containerStatuses") or []))
    limit = int(spec.get("backoffLimit", 6))
    return restarts > 0 if limit == 0 else restarts >= limit


def _suspended(job: dict[str, Any]) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def _managed_by_other(job: dict[str, Any]) -> bool:
    managed_by = (job.get("spec") or {}).get("managedBy")
    return managed_by is not None and managed_by != JOB_CONTROLLER_NAME

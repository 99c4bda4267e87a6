"""Counting finished pods without losing or double-counting any: the tracking finalizer protocol.

A finished pod is counted in three steps, each safe to interrupt:
1. its uid is added to `status.uncountedTerminatedPods.succeeded` (or `.failed`) and the status written;
2. its `batch.kubernetes.io/job-tracking` finalizer is removed (now the pod may go away);
3. uids whose pods no longer have the finalizer move from the uncounted lists into `status.succeeded` /
   `status.failed`, and the status is written again.
A crash between the steps leaves a state the next sync completes, and a pod deleted after step 1 is still
counted. Indexed Jobs count succeeded pods through `status.completedIndexes` instead of uids. At most 500
uids are in flight per sync, so the status stays small and one big Job cannot starve the others.

`FinalizerExpectations` remembers, per Job, the pods whose finalizer removal was sent but not yet seen in
the cache, so they are not counted twice in the meantime.

Once the outcome is decided (`ctx.finished_condition`) the interim condition (FailureTarget or
SuccessCriteriaMet) is written with step 1; the terminal one (Failed or Complete, with `completionTime`)
only when nothing is uncounted and no pod is still terminating. Events then: Normal Completed "Job
completed" (and Warning TooManySucceededPods if more pods succeeded than completions), or the failure's
reason and message as a Warning (BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy, …).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.clock import Clock
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.job import conditions
from minikube_py.kcm.controllers.job.backoff import BackoffStore
from minikube_py.kcm.controllers.job.indexes import is_indexed, valid_index
from minikube_py.kcm.controllers.job.podfailurepolicy import match_pod_failure_policy
from minikube_py.kcm.controllers.job.pods import (
    has_tracking_finalizer,
    is_pod_failed,
    phase,
    remove_finalizer_patch,
)
from minikube_py.kcm.controllers.job.synccontext import SyncContext

MAX_UNCOUNTED_PODS = 500


class FinalizerExpectations:
    """Per Job key, the uids of pods whose tracking finalizer removal is awaited in the cache."""

    def __init__(self) -> None:
        self._uids: dict[str, set[str]] = {}

    def expected(self, key: str) -> set[str]:
        return set(self._uids.get(key, ()))

    def expect_removals(self, key: str, uids: list[str]) -> None:
        self._uids.setdefault(key, set()).update(uids)

    def removal_observed(self, key: str, uid: str) -> None:
        uids = self._uids.get(key)
        if uids is not None:
            uids.discard(uid)
            if not uids:
                del self._uids[key]

    def delete(self, key: str) -> None:
        self._uids.pop(key, None)


class StatusTracker:
    def __init__(self, client: RESTClient, recorder: CoreEventRecorder, clock: Clock,
                 finalizer_expectations: FinalizerExpectations, backoff: BackoffStore) -> None:
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.finalizer_expectations = finalizer_expectations
        self.backoff = backoff

    async def track(self, ctx: SyncContext, key: str, needs_flush: bool) -> None:
        """Count finished pods, remove their finalizers, write the status and finish the Job when due."""
        job = ctx.job
        status = job.setdefault("status", {})
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        pods = sorted(ctx.pods, key=lambda p: _index_order(p, job)) if is_indexed(job) else ctx.pods
        with_finalizer = {p["metadata"]["uid"] for p in pods
                          if has_tracking_finalizer(p) and p["metadata"]["uid"] not in ctx.expected_rm_finalizers}
        needs_flush = count_uncounted_without_finalizers(status, with_finalizer) or needs_flush
        to_remove, new_indexes, full = [], [], False
        for pod in pods:
            uid = pod["metadata"]["uid"]
            if not has_tracking_finalizer(pod) or uid in ctx.expected_rm_finalizers:
                continue  # counted in an earlier sync
            failed = is_pod_failed(pod, job)
            if not _can_remove_finalizer(ctx, pod, failed):
                continue
            to_remove.append(pod)
            if phase(pod) == "Succeeded" and uid not in ctx.uncounted_failed:
                if is_indexed(job):
                    index = valid_index(pod, job)
                    if index is not None and not ctx.prev_succeeded_indexes.has(index):
                        new_indexes.append(index)
                        needs_flush = True
                elif uid not in ctx.uncounted_succeeded:
                    uncounted.setdefault("succeeded", []).append(uid)
                    needs_flush = True
            elif failed or (ctx.finished_condition is not None
                            and ctx.finished_condition["type"] != conditions.SUCCESS_CRITERIA_MET):
                # once the Job's outcome is decided, every pod that did not succeed counts as failed
                if uid not in ctx.uncounted_failed and (not is_indexed(job) or valid_index(pod, job) is not None):
                    if match_pod_failure_policy((job.get("spec") or {}).get("podFailurePolicy"), pod).count_failed:
                        uncounted.setdefault("failed", []).append(uid)
                        needs_flush = True
            in_flight = len(new_indexes) + len(uncounted.get("succeeded", [])) + len(uncounted.get("failed", []))
            if in_flight >= MAX_UNCOUNTED_PODS:
                full = True
                break
        needs_flush = self._update_indexes(ctx, new_indexes) or needs_flush
        needs_flush = self._interim_condition(ctx) or needs_flush
        needs_flush = await self._flush_and_remove_finalizers(ctx, key, to_remove, with_finalizer, needs_flush)
        finished = not full and self._enact_finished(ctx)
        if needs_flush or finished:
            ctx.job = await self.update_status(ctx.job)
            if finished and ctx.finished_condition is not None:
                self._record_finished(ctx.job, ctx.finished_condition)

    def _update_indexes(self, ctx: SyncContext, new_indexes: list[int]) -> bool:
        if not is_indexed(ctx.job):
            return False
        status = ctx.job["status"]
        changed = False
        ctx.succeeded_indexes = ctx.succeeded_indexes.with_indexes(new_indexes)
        if str(ctx.succeeded_indexes) != status.get("completedIndexes", ""):
            status["completedIndexes"] = str(ctx.succeeded_indexes)
            changed = True
        status["succeeded"] = ctx.succeeded_indexes.total()
        failed = None if ctx.failed_indexes is None else str(ctx.failed_indexes)
        if failed != status.get("failedIndexes"):
            status["failedIndexes"] = failed
            changed = True
        return changed or bool(new_indexes)

    def _interim_condition(self, ctx: SyncContext) -> bool:
        """Write FailureTarget / SuccessCriteriaMet now, and prepare the terminal condition for later."""
        condition = ctx.finished_condition
        if condition is None or condition["type"] not in (conditions.FAILURE_TARGET, conditions.SUCCESS_CRITERIA_MET):
            return False
        status = ctx.job["status"]
        changed = False
        if condition["type"] == conditions.FAILURE_TARGET or conditions.find_condition(
                ctx.job, conditions.SUCCESS_CRITERIA_MET) is None:
            status.setdefault("conditions", []).append(condition)
            changed = True
        terminal = conditions.FAILED if condition["type"] == conditions.FAILURE_TARGET else conditions.COMPLETE
        ctx.finished_condition = conditions.new_condition(terminal, "True", condition.get("reason", ""),
                                                          condition.get("message", ""), self.clock.wall())
        return changed

    async def _flush_and_remove_finalizers(self, ctx: SyncContext, key: str, pods: list[dict[str, Any]],
                                           with_finalizer: set[str], needs_flush: bool) -> bool:
        """Steps 1-3; whether the status still has changes to write."""
        if needs_flush:
            ctx.job = await self.update_status(ctx.job)
            self.backoff.update(ctx.backoff)
            needs_flush = False
        failure: errors.APIStatusError | None = None
        if pods:
            removed, failure = await self._remove_finalizers(key, pods)
            with_finalizer -= {pod["metadata"]["uid"] for pod, done in zip(pods, removed, strict=True) if done}
        needs_flush = count_uncounted_without_finalizers(ctx.job.setdefault("status", {}), with_finalizer)
        if failure is not None:
            if needs_flush:
                ctx.job = await self.update_status(ctx.job)  # keep the partial progress
            raise failure
        return needs_flush

    async def _remove_finalizers(self, key: str, pods: list[dict[str, Any]]) -> tuple[list[bool],
                                                                                       errors.APIStatusError | None]:
        self.finalizer_expectations.expect_removals(key, [pod["metadata"]["uid"] for pod in pods])

        async def remove(pod: dict[str, Any]) -> errors.APIStatusError | None:
            meta = pod["metadata"]
            try:
                await self.client.patch(resources.PODS, meta["name"], remove_finalizer_patch(), meta["namespace"],
                                        patch_type="strategic")
            except errors.APIStatusError as error:
                self.finalizer_expectations.removal_observed(key, meta["uid"])
                return None if isinstance(error, errors.NotFound) else error
            return None

        results = await asyncio.gather(*(remove(pod) for pod in pods))
        return [result is None for result in results], next((r for r in results if r is not None), None)

    def _enact_finished(self, ctx: SyncContext) -> bool:
        condition = ctx.finished_condition
        if condition is None:
            return False
        uncounted = ctx.job["status"].get("uncountedTerminatedPods") or {}
        if uncounted.get("succeeded") or uncounted.get("failed") or ctx.terminating > 0:
            return False  # pods still to count, or still stopping
        conditions.ensure_condition_status(ctx.job, condition["type"], "True", condition.get("reason", ""),
                                           condition.get("message", ""), self.clock.wall())
        if condition["type"] == conditions.COMPLETE:
            ctx.job["status"]["completionTime"] = condition["lastTransitionTime"]
        return True

    def _record_finished(self, job: dict[str, Any], condition: dict[str, Any]) -> None:
        if condition["type"] == conditions.COMPLETE:
            wanted = (job.get("spec") or {}).get("completions")
            if wanted is not None and int((job.get("status") or {}).get("succeeded", 0)) > int(wanted):
                self.recorder.event(job, "Warning", "TooManySucceededPods",
                                    "Too many succeeded pods running after completion count reached")
            self.recorder.event(job, "Normal", "Completed", "Job completed")
        else:
            self.recorder.event(job, "Warning", condition.get("reason", ""), condition.get("message", ""))

    async def update_status(self, job: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(job)
        body["status"] = api_status(body.get("status") or {})
        updated = await self.client.update(resources.JOBS, body, job["metadata"]["namespace"], subresource="status")
        updated.setdefault("apiVersion", "batch/v1")
        updated.setdefault("kind", "Job")
        updated.setdefault("status", {}).setdefault("uncountedTerminatedPods", {})
        return updated


def _can_remove_finalizer(ctx: SyncContext, pod: dict[str, Any], failed: bool) -> bool:
    if ctx.job["metadata"].get("deletionTimestamp") or ctx.finished_condition is not None \
            or phase(pod) == "Succeeded":
        return True
    if not failed:
        return False
    index = valid_index(pod, ctx.job)
    delayed = ctx.delayed_deletion.get(index) if index is not None else None
    return delayed is None or delayed["metadata"]["uid"] != pod["metadata"]["uid"]


def count_uncounted_without_finalizers(status: dict[str, Any], with_finalizer: set[str]) -> bool:
    """Step 3: uids whose pods lost their finalizer move into the counters; whether anything moved."""
    uncounted = status.setdefault("uncountedTerminatedPods", {})
    moved = False
    for field, counter in (("succeeded", "succeeded"), ("failed", "failed")):
        uids = uncounted.get(field) or []
        kept = [uid for uid in uids if uid in with_finalizer]
        if len(kept) != len(uids):
            status[counter] = int(status.get(counter, 0)) + len(uids) - len(kept)
            moved = True
        if kept:
            uncounted[field] = kept
        else:
            uncounted.pop(field, None)
    return moved


def api_status(status: dict[str, Any]) -> dict[str, Any]:
    """The status as kube serializes it: zero counters and empty strings and lists left out."""
    cleaned = {key: value for key, value in status.items()
               if not (key in ("active", "succeeded", "failed", "completedIndexes", "conditions") and not value)}
    cleaned["uncountedTerminatedPods"] = {k: v for k, v in (status.get("uncountedTerminatedPods") or {}).items() if v}
    if cleaned.get("failedIndexes") is None:
        cleaned.pop("failedIndexes", None)
    return cleaned



def _index_order(pod: dict[str, Any], job: dict[str, Any]) -> int:
    index = valid_index(pod, job)
    return -1 if index is None else index

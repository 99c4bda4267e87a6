"""Making the number of running pods what the Job wants (kube's `manageJob`), and stopping them.

The wanted number of active pods is `parallelism`, but never more than the completions still missing
(`completions - succeeded`); a Job without `completions` stops adding pods once one has succeeded. A
suspended Job wants none. Each sync either deletes surplus pods or creates missing ones, never both, and
at most 500 of either:
* surplus pods (and, for Indexed Jobs, duplicates of an index) are deleted after their tracking finalizer is
  removed, the least valuable first;
* missing pods are created in slow-start batches (1, 2, 4, …: a template that cannot be created fails
  once, not 500 times), but only once the pod failure backoff (backoff.py) has passed: until then the Job
  is requeued for the moment it ends. With `podReplacementPolicy: Failed` a pod that is still terminating is
  not replaced yet.

Each pod is made from the template with the tracking finalizer, the Job as controller, and for Indexed
Jobs its index (indexes.py). Events as kube's pod control: SuccessfulCreate "Created pod: NAME",
FailedCreate "Error creating: …", SuccessfulDelete "Deleted pod: NAME", FailedDelete "Error deleting: …".
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.clock import Clock
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.rest import RESTClient
from minikube_py.client.store import meta_namespace_key
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.expectations import ControllerExpectations
from minikube_py.kcm.controllers.job import indexes
from minikube_py.kcm.controllers.job.backoff import remaining_time
from minikube_py.kcm.controllers.job.pods import (
    TRACKING_FINALIZER,
    finished_time,
    has_tracking_finalizer,
    only_replace_failed_pods,
    remove_finalizer_patch,
)
from minikube_py.kcm.controllers.job.synccontext import SyncContext
from minikube_py.kcm.controllers.replicaset import active_pods_rank

MAX_POD_CREATE_DELETE_PER_SYNC = 500
SLOW_START_INITIAL_BATCH = 1
BATCH_PERIOD = 1.0  # seconds: the Job's pod events are gathered into one sync at most this often


class PodManager:
    def __init__(self, client: RESTClient, recorder: CoreEventRecorder, clock: Clock,
                 expectations: ControllerExpectations, enqueue_after: Callable[[str, float], None]) -> None:
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.expectations = expectations
        self.enqueue_after = enqueue_after

    async def manage(self, ctx: SyncContext, key: str) -> tuple[int, errors.APIStatusError | None]:
        """Create or delete pods toward the wanted number; (the active count after, the first write error)."""
        job, spec = ctx.job, ctx.job.get("spec") or {}
        active = len(ctx.active_pods)
        if spec.get("suspend"):
            deleted, error = await self.delete_job_pods(ctx, key, _removal_order(job, ctx.active_pods, active))
            return active - deleted, error
        parallelism = int(spec.get("parallelism", 1))
        if spec.get("completions") is None:
            wanted = active if ctx.succeeded > 0 else parallelism
        else:
            wanted = max(min(int(spec["completions"]) - ctx.succeeded, parallelism), 0)
        doomed = _removal_order(job, ctx.active_pods, max(active - wanted, 0))[:MAX_POD_CREATE_DELETE_PER_SYNC]
        if doomed:
            deleted, error = await self.delete_job_pods(ctx, key, doomed)
            return active - deleted, error
        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        missing = min(wanted - terminating - active, MAX_POD_CREATE_DELETE_PER_SYNC)
        if missing <= 0:
            return active, None
        return await self._create_missing(ctx, key, active, missing)

    async def _create_missing(self, ctx: SyncContext, key: str, active: int,
                              missing: int) -> tuple[int, errors.APIStatusError | None]:
        job = ctx.job
        now = self.clock.wall()
        remaining = 0.0 if indexes.has_backoff_limit_per_index(job) else ctx.backoff.remaining_time(now)
        to_add: list[int | None] = [None] * missing
        if indexes.is_indexed(job):
            pending = indexes.first_pending_indexes(ctx, missing)
            if indexes.has_backoff_limit_per_index(job):
                pending, remaining = _ready_indexes(pending, ctx, now)
            to_add = list(pending)
        if remaining > 0:
            self.enqueue_after(key, max(remaining, BATCH_PERIOD))
            return active, None
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        if indexes.is_indexed(job):
            indexes.add_completion_index_env(template)
        finalizers = template.setdefault("metadata", {}).setdefault("finalizers", [])
        if TRACKING_FINALIZER not in finalizers:
            finalizers.append(TRACKING_FINALIZER)
        self.expectations.expect_creations(key, len(to_add))
        created, batch = 0, SLOW_START_INITIAL_BATCH
        while created < len(to_add):
            chunk = to_add[created:created + batch]
            results = await asyncio.gather(*(self._create_pod(ctx, key, template, ix) for ix in chunk))
            created += len(chunk)
            error = next((result for result in results if result is not None), None)
            active += sum(1 for result in results if result is None)
            if error is not None:
                for _ in range(len(to_add) - created):  # never attempted: their adds will not come
                    self.expectations.creation_observed(key)
                return active, error
            batch *= 2
        return active, None

    async def _create_pod(self, ctx: SyncContext, key: str, template: dict[str, Any],
                          index: int | None) -> errors.APIStatusError | None:
        job = ctx.job
        generate_name = f"{job['metadata']['name']}-"
        if index is not None:
            template, generate_name = indexes.index_pod_template(template, job, index, ctx.delayed_deletion.get(index))
        body = podcontrol.pod_from_template(template, job)
        body["metadata"]["generateName"] = generate_name
        try:
            pod = await self.client.create(resources.PODS, body, job["metadata"]["namespace"])
        except errors.APIStatusError as error:
            self.expectations.creation_observed(key)
            if errors.is_namespace_terminating(error):
                return None  # every later create fails the same way: nothing to retry
            self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {error}")
            return error
        self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
        return None

    async def delete_job_pods(self, ctx: SyncContext, key: str,
                              pods: list[dict[str, Any]]) -> tuple[int, errors.APIStatusError | None]:
        """Delete surplus pods (their finalizer first: they are not counted); (how many, the first error)."""
        if not pods:
            return 0, None
        self.expectations.expect_deletions(key, [meta_namespace_key(pod) for pod in pods])

        async def delete(pod: dict[str, Any]) -> errors.APIStatusError | None:
            meta = pod["metadata"]
            try:
                if has_tracking_finalizer(pod):
                    await self.client.patch(resources.PODS, meta["name"], remove_finalizer_patch(), meta["namespace"],
                                            patch_type="strategic")
                await self._delete(ctx.job, pod)
            except errors.APIStatusError as error:
                self.expectations.deletion_observed(key, meta_namespace_key(pod))
                return None if isinstance(error, errors.NotFound) else error
            return None

        return await self._count_deletions(ctx, pods, delete)

    async def delete_active_pods(self, ctx: SyncContext) -> tuple[int, errors.APIStatusError | None]:
        """Stop every active pod of a Job whose outcome is decided; their finalizers stay (they get counted)."""
        async def delete(pod: dict[str, Any]) -> errors.APIStatusError | None:
            try:
                await self._delete(ctx.job, pod)
            except errors.NotFound:
                return None
            except errors.APIStatusError as error:
                return error
            return None

        return await self._count_deletions(ctx, ctx.active_pods, delete)

    async def _count_deletions(self, ctx: SyncContext, pods: list[dict[str, Any]],
                               delete: Callable[[dict[str, Any]], Any]) -> tuple[int, errors.APIStatusError | None]:
        results = await asyncio.gather(*(delete(pod) for pod in pods))
        deleted = [pod for pod, result in zip(pods, results, strict=True) if result is None]
        ctx.ready -= sum(1 for pod in deleted if podcontrol.is_ready(pod))
        ctx.terminating += len(deleted)
        return len(deleted), next((result for result in results if result is not None), None)

    async def _delete(self, job: dict[str, Any], pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete(resources.PODS, meta["name"], meta["namespace"])
        except errors.NotFound:
            raise
        except errors.APIStatusError as error:
            self.recorder.event(job, "Warning", "FailedDelete", f"Error deleting: {error}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")


def _removal_order(job: dict[str, Any], pods: list[dict[str, Any]], at_least: int) -> list[dict[str, Any]]:
    """The active pods to delete: for Indexed Jobs those without a valid or with a repeated index, then (to
    reach `at_least`) the least valuable of the rest."""
    doomed, left = indexes.surplus_index_pods(pods, job) if indexes.is_indexed(job) else ([], list(pods))
    if len(doomed) < at_least:
        left.sort(key=active_pods_rank)
        doomed += left[:at_least - len(doomed)]
    return doomed


def _ready_indexes(pending: list[int], ctx: SyncContext, now: datetime) -> tuple[list[int], float]:
    """With per-index backoff: the pending indexes whose backoff has passed, else the shortest wait left."""
    ready, waits = [], []
    for index in pending:
        replaced = ctx.delayed_deletion.get(index)
        wait = 0.0
        if replaced is not None:
            failures = indexes.new_index_failure_counts(ctx.job, replaced)
            wait = remaining_time(sum(failures), finished_time(replaced), now)
        if wait == 0:
            ready.append(index)
        else:
            waits.append(wait)
    return (ready, 0.0) if ready else (ready, min(waits, default=0.0))


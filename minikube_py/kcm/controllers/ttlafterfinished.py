"""The TTL-after-finished controller (kube's `ttl-after-finished-controller`): cleans up finished Jobs.

A Job with `spec.ttlSecondsAfterFinished` is deleted that many seconds after it finished, that is after the
`lastTransitionTime` of its Complete or Failed condition (0: as soon as it finished). Handlers enqueue a
Job when it is added or updated and is finished with a TTL; `sync(key)` either puts the key back on the
queue for the moment the TTL expires, or, when it has expired, deletes the Job.

The cache may be stale (the TTL just changed, the Job was re-created under the same name), so before
deleting the controller reads the Job again from the apiserver and checks the expiry on that fresh copy.
The delete carries the uid as a precondition (never a newer Job of that name) and `propagationPolicy:
Foreground`, so the Job object stays, with a deletionTimestamp, until the garbage collector has removed its
pods. A finished Job whose condition has no time cannot be timed: the sync fails and is retried with
backoff. No events, as kube.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from minikube_py.api.timestamps import parse_time
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.job.conditions import finished_condition

log = logging.getLogger(__name__)


class TTLAfterFinishedController:
    name = "ttl-after-finished-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.clock = ctx.clock
        self.jobs = ctx.informers.informer_for(resources.JOBS)
        self.queue = RateLimitingQueue(name="ttl_jobs_to_delete", clock=ctx.clock)
        self.jobs.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new)))

    async def run(self, workers: int) -> None:
        await self.jobs.wait_for_cache_sync()
        try:
            await run_workers(self.queue, self.sync, workers, name="ttl_jobs_to_delete", logger=log)
        finally:
            self.queue.shut_down()

    def _enqueue(self, job: dict[str, Any], *_: Any) -> None:
        if not job["metadata"].get("deletionTimestamp") and needs_cleanup(job):
            self.queue.add(meta_namespace_key(job))

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cached = self.jobs.indexer.get_by_key(key)
        if cached is None or not self._expired(cached, key):
            return
        try:
            fresh = await self.client.get(resources.JOBS, name, namespace)
        except errors.NotFound:
            return
        if not self._expired(fresh, key):
            return
        log.info("deleting job %s: its ttlSecondsAfterFinished has passed", key)
        try:
            await self.client.delete(resources.JOBS, name, namespace, propagation_policy="Foreground",
                                     preconditions={"uid": fresh["metadata"]["uid"]})
        except (errors.NotFound, errors.Conflict):
            pass  # gone already, or replaced by a new Job of that name, which has its own TTL

    def _expired(self, job: dict[str, Any], key: str) -> bool:
        """Whether `job`'s TTL has passed; if it is still running, requeue for the moment it will."""
        if job["metadata"].get("deletionTimestamp") or not needs_cleanup(job):
            return False
        left = time_left(job, self.clock.wall())
        if left > 0:
            self.queue.add_after(key, left)
            return False
        return True


def needs_cleanup(job: dict[str, Any]) -> bool:
    return (job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None and finished_condition(job) is not None


def time_left(job: dict[str, Any], now: datetime) -> float:
    """Seconds until the finished `job` expires (0 or less: expired); ValueError without a finish time."""
    condition = finished_condition(job) or {}
    finished = condition.get("lastTransitionTime")
    if not finished:
        meta = job["metadata"]
        raise ValueError(f"unable to find the time when the Job {meta['namespace']}/{meta['name']} finished")
    expires = parse_time(finished).timestamp() + int(job["spec"]["ttlSecondsAfterFinished"])
    return expires - now.timestamp()


"""The CronJob controller (kube's `cronjob-controller`, its "v2" with a delaying queue): Jobs on a schedule.

Nothing polls. Each sync works out the next activation of the CronJob's schedule (cron.py, in
`spec.timeZone`) and puts the key back on the queue for exactly that moment (plus 100 ms of slack for clock
skew, as kube), so a CronJob costs nothing between its runs. Handlers: a CronJob added or deleted → its
key; changed → its key now, or, when the schedule or time zone changed, at the new schedule's next time; a
Job added, changed or deleted → the key of the CronJob that controls it.

`sync(key)`:
1. the Jobs whose controllerRef names this CronJob are its children. Finished ones leave `status.active`
   (event SawCompletedJob) and a Complete one moves `status.lastSuccessfulTime`; an unfinished child that is
   not in `status.active` even on a fresh read is reported (Warning UnexpectedJob), which is what a Job made
   by `kubectl create job --from=cronjob/NAME` (annotation `cronjob.kubernetes.io/instantiate: manual`) looks
   like; an active reference whose Job is gone from the apiserver is dropped (MissingJob);
2. finished children beyond `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted, the oldest
   (by `status.startTime`) first (SuccessfulDelete);
3. unless the CronJob is suspended or being deleted, the most recent activation not yet handled is found,
   searching from `status.lastScheduleTime` (or the creation time) but never from earlier than
   `startingDeadlineSeconds` ago: older misses are dropped silently (the Warning MissSchedule for a run
   found but already too late stays, as in kube, for that edge). Only the latest of several missed runs
   starts; more than 100 → Warning TooManyMissedTimes. A schedule with no next activation at all
   (`0 0 30 2 *`) → Warning InvalidSchedule and no requeue: only an edit of the CronJob wakes it again;
4. `concurrencyPolicy`: Forbid skips the run while a child is active (JobAlreadyActive), Replace deletes the
   active children first, Allow just starts another;
5. the Job `<cronjob>-<scheduled time in minutes since the epoch>` is created from `spec.jobTemplate`, owned
   by the CronJob and annotated `batch.kubernetes.io/cronjob-scheduled-timestamp` (RFC 3339, in the
   CronJob's time zone). The name is deterministic, so a retried run finds its Job (AlreadyExists) instead
   of starting a second one. `status.active` gets its reference, `status.lastScheduleTime` the time.

The status is written once per sync (PUT cronjobs/status); a conflict fails the sync, which is retried
with backoff. All times come from `ctx.clock`, so tests drive schedules with a FakeClock.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import zoneinfo
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from minikube_py.api import cron
from minikube_py.api.timestamps import parse_time, time_string
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.job.conditions import finished_condition_type

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1  # seconds added to each requeue, so a slightly early wake-up is not wasted
MAX_MISSED_SCHEDULES = 100
INVALID_SCHEDULE = "time difference between two schedules is less than 1 second"

log = logging.getLogger(__name__)


class CronJobController:
    name = "cronjob-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.cron_jobs = ctx.informers.informer_for(resources.CRON_JOBS)
        self.jobs = ctx.informers.informer_for(resources.JOBS)
        self.queue = RateLimitingQueue(name="cronjob", clock=ctx.clock)
        self.cron_jobs.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=self._cron_job_updated,
                                                     on_delete=self._enqueue))
        self.jobs.add_event_handler(FuncHandler(on_add=self._job_changed, on_update=self._job_updated,
                                                on_delete=self._job_changed))

    async def run(self, workers: int) -> None:
        await asyncio.gather(self.cron_jobs.wait_for_cache_sync(), self.jobs.wait_for_cache_sync())
        try:
            await run_workers(self.queue, self.sync, workers, name="cronjob", logger=log)
        finally:
            self.queue.shut_down()

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def _enqueue(self, cron_job: dict[str, Any] | DeletedFinalStateUnknown, *_: Any) -> None:
        self.queue.add(meta_namespace_key(cron_job))

    def _cron_job_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        if (old_spec.get("schedule"), old_spec.get("timeZone")) == (new_spec.get("schedule"), new_spec.get("timeZone")):
            self._enqueue(new)
            return
        try:
            schedule = _schedule(new)
        except (cron.CronError, zoneinfo.ZoneInfoNotFoundError, ValueError) as error:
            self.recorder.event(_typed(new), "Warning", "UnParseableCronJobSchedule",
                                f"unparseable schedule for cronjob: {new_spec.get('schedule')}")
            log.info("cronjob %s: unparseable schedule: %s", meta_namespace_key(new), error)
            return
        delay = next_schedule_delay(new, self.clock.wall(), schedule)
        self.queue.add_after(meta_namespace_key(new), delay if delay is not None else 0)

    def _job_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if podcontrol.controller_of(old) != podcontrol.controller_of(new):
            self._job_changed(old)
        self._job_changed(new)

    def _job_changed(self, job: dict[str, Any] | DeletedFinalStateUnknown, *_: Any) -> None:
        if isinstance(job, DeletedFinalStateUnknown):
            job = job.obj
        ref = podcontrol.controller_of(job)
        if ref is None or ref.get("kind") != "CronJob":
            return
        key = f"{job['metadata']['namespace']}/{ref['name']}"
        owner = self.cron_jobs.indexer.get_by_key(key)
        if owner is not None and owner["metadata"]["uid"] == ref.get("uid"):
            self.queue.add(key)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cached = self.cron_jobs.indexer.get_by_key(key)
        if cached is None:
            return
        cron_job = _typed(copy.deepcopy(cached))
        children = [job for job in self.jobs.lister().list(namespace) if _is_child(job, name)]
        before = copy.deepcopy(cron_job.get("status") or {})
        try:
            await self.cleanup_finished_jobs(cron_job, children)
            requeue = await self.sync_cron_job(cron_job, children)
        finally:  # what was done is recorded even when a later step failed
            if (cron_job.get("status") or {}) != before:
                await self.client.update(resources.CRON_JOBS, cron_job, namespace, subresource="status")
        if requeue is not None:
            self.queue.add_after(key, requeue)

    async def sync_cron_job(self, cron_job: dict[str, Any], children: list[dict[str, Any]]) -> float | None:
        """Reconcile the active list and start the due Job; the delay until the next sync (None: none)."""
        await self.reconcile_children(cron_job, children)
        await self.drop_missing_active(cron_job, {job["metadata"]["uid"] for job in children})
        spec = cron_job.get("spec") or {}
        if cron_job["metadata"].get("deletionTimestamp"):
            return None
        zone_name = spec.get("timeZone")
        try:
            zone = UTC if zone_name is None else zoneinfo.ZoneInfo(zone_name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            self.recorder.event(cron_job, "Warning", "UnknownTimeZone",
                                f'invalid timeZone: "{zone_name}": unknown time zone {zone_name}')
            return None
        if spec.get("suspend"):
            return None
        try:
            schedule = cron.parse(str(spec.get("schedule") or ""), zone)
        except cron.CronError as error:
            self.recorder.event(cron_job, "Warning", "UnparseableSchedule",
                                f'unparseable schedule: "{spec.get("schedule")}" : {error}')
            return None
        now = self.clock.wall()
        try:
            scheduled = self.next_schedule_time(cron_job, now, schedule)
        except cron.CronError as error:
            self.recorder.event(cron_job, "Warning", "InvalidSchedule",
                                f"invalid schedule: {spec.get('schedule')} : {error}")
            return None
        requeue = next_schedule_delay(cron_job, now, schedule)
        if scheduled is None:
            return requeue
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
            self.recorder.event(cron_job, "Warning", "MissSchedule", "Missed scheduled time to start a job: "
                                + scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000"))
            return requeue
        status = cron_job.setdefault("status", {})
        if (any(ref.get("name") == job_name(cron_job, scheduled) for ref in status.get("active") or [])
                or status.get("lastScheduleTime") == time_string(scheduled)):
            return requeue
        policy = spec.get("concurrencyPolicy", "Allow")
        if policy == "Forbid" and status.get("active"):
            self.recorder.event(cron_job, "Normal", "JobAlreadyActive",
                                "Not starting job because prior execution is running and concurrency policy is Forbid")
            return requeue
        if policy == "Replace":
            await self.replace_active(cron_job)
        if await self.start_job(cron_job, scheduled):
            status["lastScheduleTime"] = time_string(scheduled)
        return requeue

    async def reconcile_children(self, cron_job: dict[str, Any], children: list[dict[str, Any]]) -> None:
        for job in children:
            finished = finished_condition_type(job)
            if finished is None and not _in_active(cron_job, job["metadata"]["uid"]):
                fresh = _typed(await self.client.get(resources.CRON_JOBS, cron_job["metadata"]["name"],
                                                     cron_job["metadata"]["namespace"]))
                if _in_active(fresh, job["metadata"]["uid"]):
                    cron_job.clear()  # our status write must carry what the fresh object says
                    cron_job.update(fresh)
                    continue
                self.recorder.event(cron_job, "Warning", "UnexpectedJob",
                                    f"Saw a job that the controller did not create or forgot: {job['metadata']['name']}")
            elif finished is not None:
                self._saw_finished(cron_job, job, finished)

    def _saw_finished(self, cron_job: dict[str, Any], job: dict[str, Any], finished: str) -> None:
        status = cron_job.setdefault("status", {})
        if _in_active(cron_job, job["metadata"]["uid"]):
            _remove_active(cron_job, job["metadata"]["uid"])
            self.recorder.event(cron_job, "Normal", "SawCompletedJob",
                                f"Saw completed job: {job['metadata']['name']}, condition: {finished}")
        completed = (job.get("status") or {}).get("completionTime")
        if finished == "Complete" and completed:
            last = status.get("lastSuccessfulTime")
            if last is None or parse_time(completed) > parse_time(last):
                status["lastSuccessfulTime"] = completed

    async def drop_missing_active(self, cron_job: dict[str, Any], child_uids: set[str]) -> None:
        """Forget active references to Jobs the apiserver no longer has (not just the cache)."""
        for ref in list((cron_job.get("status") or {}).get("active") or []):
            if ref.get("uid") in child_uids:
                continue
            try:
                await self.client.get(resources.JOBS, ref["name"], ref.get("namespace") or
                                      cron_job["metadata"]["namespace"])
            except errors.NotFound:
                self.recorder.event(cron_job, "Normal", "MissingJob", f"Active job went missing: {ref['name']}")
                _remove_active(cron_job, ref.get("uid"))

    def next_schedule_time(self, cron_job: dict[str, Any], now: datetime, schedule: cron.Schedule) -> datetime | None:
        """The latest activation due and not yet handled, or None; warns when too many were missed."""
        _, recent, missed = most_recent_schedule_time(cron_job, now, schedule, with_deadline=True)
        if recent is not None and missed > MAX_MISSED_SCHEDULES:
            self.recorder.event(cron_job, "Warning", "TooManyMissedTimes",
                                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or "
                                "check clock skew")
        return recent

    async def replace_active(self, cron_job: dict[str, Any]) -> None:
        for ref in list((cron_job.get("status") or {}).get("active") or []):
            namespace = ref.get("namespace") or cron_job["metadata"]["namespace"]
            try:
                job = await self.client.get(resources.JOBS, ref["name"], namespace)
            except errors.APIStatusError as error:
                self.recorder.event(cron_job, "Warning", "FailedGet", f"Get job: {error}")
                raise
            if not await self.delete_job(cron_job, job):
                raise RuntimeError(f"could not replace job {namespace}/{ref['name']}")

    async def start_job(self, cron_job: dict[str, Any], scheduled: datetime) -> bool:
        """Create the Job of `scheduled` and record it as active; False if someone else's Job holds the name."""
        namespace = cron_job["metadata"]["namespace"]
        body = job_from_template(cron_job, scheduled)
        try:
            job = await self.client.create(resources.JOBS, body, namespace)
        except errors.AlreadyExists:
            job = await self.client.get(resources.JOBS, body["metadata"]["name"], namespace)
            ref = podcontrol.controller_of(job)
            if ref is None or ref.get("uid") != cron_job["metadata"]["uid"]:
                return False  # not ours: whoever made it keeps track of it
            if _in_active(cron_job, job["metadata"]["uid"]):
                return False
            log.info("cronjob %s: job %s already exists", meta_namespace_key(cron_job), job["metadata"]["name"])
        except errors.APIStatusError as error:
            if not errors.is_namespace_terminating(error):
                self.recorder.event(cron_job, "Warning", "FailedCreate", f"Error creating job: {error}")
            raise
        else:
            self.recorder.event(cron_job, "Normal", "SuccessfulCreate", f"Created job {job['metadata']['name']}")
        cron_job.setdefault("status", {}).setdefault("active", []).append(_job_reference(job))
        return True

    async def cleanup_finished_jobs(self, cron_job: dict[str, Any], children: list[dict[str, Any]]) -> None:
        spec = cron_job.get("spec") or {}
        for condition, limit_field in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(limit_field)
            if limit is None:
                continue
            finished = [job for job in children if finished_condition_type(job) == condition]
            finished.sort(key=_start_time_order)
            for job in finished[:max(len(finished) - int(limit), 0)]:
                await self.delete_job(cron_job, job)

    async def delete_job(self, cron_job: dict[str, Any], job: dict[str, Any]) -> bool:
        meta = job["metadata"]
        try:
            await self.client.delete(resources.JOBS, meta["name"], meta["namespace"], propagation_policy="Background")
        except errors.APIStatusError as error:
            self.recorder.event(cron_job, "Warning", "FailedDelete", f"Deleted job: {error}")
            return False
        _remove_active(cron_job, meta["uid"])
        self.recorder.event(cron_job, "Normal", "SuccessfulDelete", f"Deleted job {meta['name']}")
        return True


def most_recent_schedule_time(cron_job: dict[str, Any], now: datetime, schedule: cron.Schedule,
                              with_deadline: bool) -> tuple[datetime, datetime | None, int]:
    """(the earliest time considered, the latest activation in (earliest, now] or None, how many were missed).

    Raises CronError when the schedule has no two activations at least a second apart (it never fires).
    """
    status, spec = cron_job.get("status") or {}, cron_job.get("spec") or {}
    earliest = parse_time(status.get("lastScheduleTime") or cron_job["metadata"]["creationTimestamp"])
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=int(deadline)))
    first = schedule.next(earliest)
    second = schedule.next(first) if first is not None else None
    if first is not None and now < first:
        return earliest, None, 0
    if first is not None and second is not None and now < second:
        return earliest, first, 0
    interval = round((second - first).total_seconds()) if first is not None and second is not None else 0
    if first is None or second is None or interval < 1:
        raise cron.CronError(INVALID_SCHEDULE)
    missed = int((now - first).total_seconds()) // interval + 1
    # Jump close to `now` using the interval, then walk the last few activations exactly (schedules are
    # not always regular, `30 6-16/4 * * 1-5`).
    t = schedule.next(first + timedelta(seconds=(missed - 2) * interval))
    recent = None
    while t is not None and t <= now:
        recent, t = t, schedule.next(t)
    return earliest, recent, missed


def next_schedule_delay(cron_job: dict[str, Any], now: datetime, schedule: cron.Schedule) -> float | None:
    """Seconds until the next activation after the last handled one (None if the schedule never fires)."""
    try:
        earliest, recent, missed = most_recent_schedule_time(cron_job, now, schedule, with_deadline=False)
    except cron.CronError:
        recent, missed = now, 1
        earliest = now
    base = recent if recent is not None else (earliest if missed == 0 else now)
    upcoming = schedule.next(base)
    if upcoming is None:
        return None
    return (upcoming - now).total_seconds() + NEXT_SCHEDULE_DELTA


def job_name(cron_job: dict[str, Any], scheduled: datetime) -> str:
    return f"{cron_job['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def job_from_template(cron_job: dict[str, Any], scheduled: datetime) -> dict[str, Any]:
    template = (cron_job.get("spec") or {}).get("jobTemplate") or {}
    meta = template.get("metadata") or {}
    annotations = dict(meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = _rfc3339(scheduled.astimezone(_zone(cron_job)))
    job_meta: dict[str, Any] = {"name": job_name(cron_job, scheduled), "namespace": cron_job["metadata"]["namespace"],
                                "annotations": annotations, "ownerReferences": [podcontrol.controller_ref(cron_job)]}
    if meta.get("labels"):
        job_meta["labels"] = dict(meta["labels"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


def _schedule(cron_job: dict[str, Any]) -> cron.Schedule:
    return cron.parse(str((cron_job.get("spec") or {}).get("schedule") or ""), _zone(cron_job))


def _zone(cron_job: dict[str, Any]) -> tzinfo:
    name = (cron_job.get("spec") or {}).get("timeZone")
    return UTC if name is None else zoneinfo.ZoneInfo(name)


def _rfc3339(moment: datetime) -> str:
    offset = moment.strftime("%z")
    zone = "Z" if offset == "+0000" else f"{offset[:3]}:{offset[3:]}"
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + zone


def _is_child(job: dict[str, Any], cron_job_name: str) -> bool:
    ref = podcontrol.controller_of(job)
    return ref is not None and ref.get("kind") == "CronJob" and ref.get("name") == cron_job_name


def _in_active(cron_job: dict[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in (cron_job.get("status") or {}).get("active") or [])


def _remove_active(cron_job: dict[str, Any], uid: str | None) -> None:
    status = cron_job.setdefault("status", {})
    remaining = [ref for ref in status.get("active") or [] if ref.get("uid") != uid]
    if remaining:
        status["active"] = remaining
    else:
        status.pop("active", None)


def _job_reference(job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {"kind": "Job", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"],
            "apiVersion": "batch/v1", "resourceVersion": meta.get("resourceVersion", "")}


def _start_time_order(job: dict[str, Any]) -> tuple[bool, str, str]:
    """Oldest first by status.startTime; Jobs that never started last; the name breaks ties."""
    started = (job.get("status") or {}).get("startTime")
    return started is None, started or "", job["metadata"]["name"]


def _typed(cron_job: dict[str, Any]) -> dict[str, Any]:
    cron_job.setdefault("apiVersion", "batch/v1")
    cron_job.setdefault("kind", "CronJob")
    return cron_job

"""Printers for batch/v1: Jobs and CronJobs.

A Job's STATUS is the first that applies of `Complete`, `Failed` (conditions), `Terminating` (being
deleted), `Suspended`, `FailureTarget` (conditions) and `Running`. COMPLETIONS reads `succeeded/completions`,
or `succeeded/1` for a work-queue job (`of <parallelism>` appended when it runs several pods at once).
DURATION runs from `startTime` to `completionTime`, or to now while the job is unfinished.
A CronJob shows its schedule, time zone, SUSPEND as `True`/`False` (`<unset>` when absent), the number of
active jobs and how long ago it last scheduled one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, CONTAINERS, IMAGES, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import (
    age,
    being_deleted,
    condition_status,
    container_cells,
    format_label_selector,
    human_duration,
    object_name,
    parse_time,
    since,
    template_spec,
)


def job_status(job: dict[str, Any]) -> str:
    conditions = (job.get("status") or {}).get("conditions")

    def holds(condition_type: str) -> bool:
        return condition_status(conditions, condition_type) == "True"

    if holds("Complete"):
        return "Complete"
    if holds("Failed"):
        return "Failed"
    if being_deleted(job):
        return "Terminating"
    if holds("Suspended"):
        return "Suspended"
    if holds("FailureTarget"):
        return "FailureTarget"
    return "Running"


def _completions(spec: dict[str, Any], succeeded: int) -> str:
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _duration(status: dict[str, Any], now: datetime) -> str:
    started = parse_time(status.get("startTime"))
    if started is None:
        return ""
    return human_duration((parse_time(status.get("completionTime")) or now) - started)


def _job_cells(job: dict[str, Any], now: datetime) -> list[Cell]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    return [
        object_name(job), job_status(job),
        _completions(spec, status.get("succeeded", 0)), _duration(status, now), age(job, now),
        *container_cells(template_spec(job)), format_label_selector(spec.get("selector")),
    ]


def _suspend(value: bool | None) -> str:
    return "<unset>" if value is None else str(bool(value))


def _cron_job_cells(cron_job: dict[str, Any], now: datetime) -> list[Cell]:
    spec, status = cron_job.get("spec") or {}, cron_job.get("status") or {}
    job_template = spec.get("jobTemplate") or {}
    last_schedule = status.get("lastScheduleTime")
    return [
        object_name(cron_job), spec.get("schedule", ""),
        spec.get("timeZone") or "<none>", _suspend(spec.get("suspend")), len(status.get("active") or []),
        since(last_schedule, now) if last_schedule else "<none>", age(cron_job, now),
        *container_cells(template_spec(job_template)),
        format_label_selector((job_template.get("spec") or {}).get("selector")),
    ]


_SELECTOR = Column("Selector", "A label query over pods that should match the pod count. Normally, the "
                               "system sets this field for you. More info: https://kubernetes.io/docs/"
                               "concepts/overview/working-with-objects/labels/#label-selectors", priority=1)

JOB = Printer(
    (
        NAME,
        Column("Status", "Status of the job."),
        Column("Completions", "The number of pods which reached phase Succeeded. The value increases "
                              "monotonically for a given spec. However, it may decrease in reaction to scale "
                              "down of elastic indexed jobs."),
        Column("Duration", "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        _SELECTOR,
    ),
    _job_cells,
)

CRON_JOB = Printer(
    (
        NAME,
        Column("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
        Column("Timezone", "The time zone name for the given schedule, see "
                           "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, "
                           "this will default to the time zone of the kube-controller-manager process. The "
                           "set of valid time zone names and the time zone offset is loaded from the "
                           "system-wide time zone database by the API server during CronJob validation and "
                           "the controller manager during execution. If no system-wide time zone database "
                           "can be found a bundled version of the database is used instead. If the time zone "
                           "name becomes invalid during the lifetime of a CronJob or due to a change in host "
                           "configuration, the controller will stop creating new new Jobs and will create a "
                           "system event with the reason UnknownTimeZone. More information can be found in "
                           "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
        Column("Suspend", "This flag tells the controller to suspend subsequent executions, it does not "
                          "apply to already started executions.  Defaults to false.", type="boolean"),
        Column("Active", "A list of pointers to currently running jobs.", type="integer"),
        Column("Last Schedule", "Information when was the last time the job was successfully scheduled."),
        AGE,
        CONTAINERS,
        IMAGES,
        _SELECTOR,
    ),
    _cron_job_cells,
)

PRINTERS = {("batch", "v1", "Job"): JOB, ("batch", "v1", "CronJob"): CRON_JOB}

"""The CronJob controller's sync against hand-filled caches, a recording client and a FakeClock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.client.clock import FakeClock
from minikube_py.kcm.controllers.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION, CronJobController
from tests.kcm.fakes import FakeRecorder, RecordingClient, cache, context

NS = "default"
KEY = "default/hello"
NOW_MINUTES = 1704067200 // 60  # the fake clock's wall time, 2024-01-01T00:00:00Z, in minutes


def cron_job(schedule: str = "* * * * *", created: str = "2023-12-31T23:58:30Z", status: dict[str, Any] | None = None,
             **spec: Any) -> dict[str, Any]:
    full = {"schedule": schedule, "concurrencyPolicy": "Allow", "suspend": False, "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                           "containers": [{"name": "c", "image": "busybox"}]}}}}}
    full.update(spec)
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": NS, "uid": "cj-uid", "resourceVersion": "3",
                         "creationTimestamp": created},
            "spec": full, "status": status or {}}


def job(name: str, finished: str | None = None, started: str = "2023-12-31T00:00:00Z", completed: str | None = None,
        manual: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {"startTime": started}
    if finished:
        status["conditions"] = [{"type": finished, "status": "True"}]
    if completed:
        status["completionTime"] = completed
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "7",
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "hello",
                                                 "uid": "cj-uid", "controller": True}]}
    if manual:
        meta["annotations"] = {"cronjob.kubernetes.io/instantiate": "manual"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {}, "status": status}


def ref(j: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Job", "namespace": NS, "name": j["metadata"]["name"], "uid": j["metadata"]["uid"],
            "apiVersion": "batch/v1", "resourceVersion": "7"}


def controller(cj: dict[str, Any], *jobs: dict[str, Any]) -> tuple[CronJobController, RecordingClient, FakeClock,
                                                                    FakeRecorder]:
    ctx, client, clock = context()
    recorder = FakeRecorder()
    ctx.recorder = recorder  # type: ignore[assignment]
    cache(ctx, resources.CRON_JOBS, cj)
    cache(ctx, resources.JOBS, *jobs)
    client.put(resources.CRON_JOBS, cj)
    for j in jobs:
        client.put(resources.JOBS, j)
    return CronJobController(ctx), client, clock, recorder


def status_writes(client: RecordingClient) -> list[dict[str, Any]]:
    return [a.body["status"] for a in client.writes("update") if a.resource == "cronjobs/status"]


async def queued_after(cjc: CronJobController, clock: FakeClock, seconds: float) -> bool:
    """Whether the key is back on the queue once `seconds` have passed (and not before)."""
    clock.advance(seconds - 0.05)
    for _ in range(5):
        await asyncio.sleep(0)
    if len(cjc.queue):
        return False
    clock.advance(0.1)
    for _ in range(5):
        await asyncio.sleep(0)
    return len(cjc.queue) == 1


async def test_a_due_run_creates_the_job_named_after_its_scheduled_minute() -> None:
    cjc, client, clock, recorder = controller(cron_job())
    await cjc.sync(KEY)
    created = client.writes("create")[0].body
    assert created["metadata"]["name"] == f"hello-{NOW_MINUTES}"
    assert created["metadata"]["labels"] == {"team": "a"}
    assert created["metadata"]["annotations"] == {"note": "x", SCHEDULED_TIMESTAMP_ANNOTATION: "2024-01-01T00:00:00Z"}
    assert created["metadata"]["ownerReferences"][0]["uid"] == "cj-uid"
    assert created["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    status = status_writes(client)[0]
    assert status["lastScheduleTime"] == "2024-01-01T00:00:00Z"
    assert [r["name"] for r in status["active"]] == [f"hello-{NOW_MINUTES}"]
    assert recorder.events == [("Normal", "SuccessfulCreate", f"Created job hello-{NOW_MINUTES}")]
    assert await queued_after(cjc, clock, 60.1)  # exactly at the next minute (+100 ms)


async def test_nothing_runs_before_the_first_activation_and_the_sync_waits_for_it() -> None:
    cjc, client, clock, _ = controller(cron_job("5 0 * * *", created="2023-12-31T23:59:30Z"))
    await cjc.sync(KEY)
    assert client.writes() == []
    assert await queued_after(cjc, clock, 300.1)


async def test_activations_are_computed_in_the_time_zone() -> None:
    cjc, client, _, _ = controller(cron_job("0 9 * * *", created="2023-12-31T23:00:00Z", timeZone="Asia/Tokyo"))
    await cjc.sync(KEY)
    created = client.writes("create")[0].body
    assert created["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == "2024-01-01T09:00:00+09:00"


async def test_a_run_already_handled_is_not_started_twice() -> None:
    status = {"lastScheduleTime": "2024-01-01T00:00:00Z"}
    cjc, client, _, _ = controller(cron_job(status=status))
    await cjc.sync(KEY)
    assert client.writes() == []


async def test_forbid_skips_the_run_while_a_job_is_active() -> None:
    running = job("hello-1")
    cjc, client, _, recorder = controller(cron_job(concurrencyPolicy="Forbid", status={"active": [ref(running)]}),
                                          running)
    await cjc.sync(KEY)
    assert client.writes() == []
    assert recorder.events == [("Normal", "JobAlreadyActive",
                                "Not starting job because prior execution is running and concurrency policy is Forbid")]


async def test_allow_starts_the_next_run_while_the_previous_job_is_still_active() -> None:
    running = job("hello-1")
    cjc, client, _, recorder = controller(cron_job(concurrencyPolicy="Allow", status={"active": [ref(running)]}),
                                          running)
    await cjc.sync(KEY)
    assert [(a.verb, a.name) for a in client.writes() if a.resource == "jobs"] == [("create", f"hello-{NOW_MINUTES}")]
    assert recorder.events == [("Normal", "SuccessfulCreate", f"Created job hello-{NOW_MINUTES}")]
    assert [r["name"] for r in status_writes(client)[0]["active"]] == ["hello-1", f"hello-{NOW_MINUTES}"]


async def test_replace_deletes_the_active_job_before_starting_the_next() -> None:
    running = job("hello-1")
    cjc, client, _, recorder = controller(cron_job(concurrencyPolicy="Replace", status={"active": [ref(running)]}),
                                          running)
    await cjc.sync(KEY)
    assert [(a.verb, a.name) for a in client.writes()][:2] == [("delete", "hello-1"), ("create", f"hello-{NOW_MINUTES}")]
    assert client.writes("delete")[0].options == {"propagation_policy": "Background"}
    assert recorder.reasons() == ["SuccessfulDelete", "SuccessfulCreate"]
    assert [r["name"] for r in status_writes(client)[0]["active"]] == [f"hello-{NOW_MINUTES}"]


async def test_a_missed_run_is_started_late_without_a_starting_deadline() -> None:
    cjc, client, _, _ = controller(cron_job("30 23 * * *", created="2023-12-31T23:00:00Z"))
    await cjc.sync(KEY)
    assert client.writes("create")[0].body["metadata"]["name"] == f"hello-{NOW_MINUTES - 30}"


async def test_a_missed_run_older_than_the_starting_deadline_is_skipped() -> None:
    cjc, client, _, _ = controller(cron_job("30 23 * * *", created="2023-12-31T23:00:00Z", startingDeadlineSeconds=60))
    await cjc.sync(KEY)
    assert client.writes() == []


async def test_more_than_100_missed_runs_are_reported_and_only_the_latest_started() -> None:
    cjc, client, _, recorder = controller(cron_job(created="2023-12-31T20:00:00Z"))
    await cjc.sync(KEY)
    assert ("Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
            ".spec.startingDeadlineSeconds or check clock skew") in recorder.events
    assert [a.body["metadata"]["name"] for a in client.writes("create")] == [f"hello-{NOW_MINUTES}"]


async def test_a_schedule_that_never_fires_is_reported_and_not_requeued() -> None:
    cjc, client, clock, recorder = controller(cron_job("0 0 30 2 *"))
    await cjc.sync(KEY)
    assert client.writes() == []
    assert recorder.events == [("Warning", "InvalidSchedule", "invalid schedule: 0 0 30 2 * : time difference "
                                                              "between two schedules is less than 1 second")]
    clock.advance(10 * 365 * 86400)
    await asyncio.sleep(0)
    assert len(cjc.queue) == 0  # no hot loop, no timer: an edit of the CronJob wakes it


async def test_a_schedule_the_controller_cannot_parse_is_reported() -> None:
    cjc, client, _, recorder = controller(cron_job("CRON_TZ=UTC * * * *"))
    await cjc.sync(KEY)
    assert client.writes() == []
    assert recorder.events == [("Warning", "UnparseableSchedule", 'unparseable schedule: "CRON_TZ=UTC * * * *" : '
                                                                  "cannot use TZ or CRON_TZ in schedule, use timeZone "
                                                                  "field instead")]


async def test_a_suspended_cron_job_starts_nothing() -> None:
    cjc, client, _, _ = controller(cron_job(suspend=True))
    await cjc.sync(KEY)
    assert client.writes() == [] and len(cjc.queue) == 0


async def test_a_finished_job_leaves_the_active_list_and_sets_the_last_success() -> None:
    done = job(f"hello-{NOW_MINUTES}", "Complete", completed="2024-01-01T00:00:30Z")
    status = {"active": [ref(done)], "lastScheduleTime": "2024-01-01T00:00:00Z"}
    cjc, client, _, recorder = controller(cron_job(status=status), done)
    await cjc.sync(KEY)
    written = status_writes(client)[0]
    assert "active" not in written and written["lastSuccessfulTime"] == "2024-01-01T00:00:30Z"
    assert recorder.events == [("Normal", "SawCompletedJob", f"Saw completed job: hello-{NOW_MINUTES}, condition: "
                                                             "Complete")]


async def test_finished_jobs_beyond_the_history_limits_are_deleted_oldest_first() -> None:
    jobs = [job("s1", "Complete", started="2023-12-01T00:00:00Z"), job("s2", "Complete", started="2023-12-02T00:00:00Z"),
            job("s3", "Complete", started="2023-12-03T00:00:00Z"), job("f1", "Failed", started="2023-12-01T00:00:00Z"),
            job("f2", "Failed", started="2023-12-02T00:00:00Z")]
    cjc, client, _, recorder = controller(cron_job(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1,
                                                   status={"lastScheduleTime": "2024-01-01T00:00:00Z"}), *jobs)
    await cjc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["s1", "s2", "f1"]
    assert recorder.reasons().count("SuccessfulDelete") == 3


async def test_a_job_created_by_hand_from_the_cron_job_is_reported_but_not_adopted() -> None:
    manual = job("hello-manual-x", manual=True)
    cjc, client, _, recorder = controller(cron_job(status={"lastScheduleTime": "2024-01-01T00:00:00Z"}), manual)
    await cjc.sync(KEY)
    assert recorder.events == [("Warning", "UnexpectedJob", "Saw a job that the controller did not create or forgot: "
                                                            "hello-manual-x")]
    assert client.writes() == []


async def test_a_succeeded_manual_job_still_counts_as_the_last_success() -> None:
    manual = job("hello-manual-x", "Complete", completed="2024-01-01T00:00:10Z", manual=True)
    cjc, client, _, _ = controller(cron_job(status={"lastScheduleTime": "2024-01-01T00:00:00Z"}), manual)
    await cjc.sync(KEY)
    assert status_writes(client)[0]["lastSuccessfulTime"] == "2024-01-01T00:00:10Z"


async def test_an_active_job_that_is_gone_is_forgotten() -> None:
    vanished = job("hello-1")
    cjc, client, _, recorder = controller(cron_job(status={"active": [ref(vanished)],
                                                          "lastScheduleTime": "2024-01-01T00:00:00Z"}))
    await cjc.sync(KEY)
    assert "active" not in status_writes(client)[0]
    assert recorder.events == [("Normal", "MissingJob", "Active job went missing: hello-1")]


async def test_a_job_created_before_a_failed_status_write_is_taken_back_into_the_active_list() -> None:
    mine = job(f"hello-{NOW_MINUTES}")
    cjc, client, _, _ = controller(cron_job())
    client.put(resources.JOBS, mine)
    client.failures[("create", "jobs")] = errors.AlreadyExists({"message": "exists", "reason": "AlreadyExists"})
    await cjc.sync(KEY)
    assert [r["uid"] for r in status_writes(client)[0]["active"]] == [mine["metadata"]["uid"]]


async def test_a_status_conflict_fails_the_sync_for_a_retry() -> None:
    cjc, client, _, _ = controller(cron_job())
    client.failures[("update", "cronjobs/status")] = errors.Conflict({"message": "modified"})
    with pytest.raises(errors.Conflict):
        await cjc.sync(KEY)


async def test_a_new_schedule_requeues_the_cron_job_for_its_next_time() -> None:
    old = cron_job("5 0 * * *", created="2023-12-31T23:59:30Z")
    new = cron_job("2 0 * * *", created="2023-12-31T23:59:30Z")
    cjc, _, clock, _ = controller(new)
    cjc._cron_job_updated(old, new)
    assert await queued_after(cjc, clock, 120.1)

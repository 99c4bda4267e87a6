"""The Job controller's sync against hand-filled caches and a recording client (no sleeps)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import pytest

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.client.clock import FakeClock
from minikube_py.client.controller import process_next_work_item
from minikube_py.kcm.controllers.job import JobController
from minikube_py.kcm.controllers.job.backoff import remaining_time
from minikube_py.kcm.controllers.job.indexes import COMPLETION_INDEX, Intervals
from minikube_py.kcm.controllers.job.pods import TRACKING_FINALIZER
from tests.kcm.fakes import CreateBatches, FakeRecorder, RecordingClient, cache, context

NS = "default"
NOW = "2024-01-01T00:00:00Z"  # the fake clock's wall time
KEY = "default/pi"


def job(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    labels = {"batch.kubernetes.io/controller-uid": "job-uid", "batch.kubernetes.io/job-name": "pi",
              "controller-uid": "job-uid", "job-name": "pi"}
    full = {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-uid"}},
            "template": {"metadata": {"labels": labels},
                         "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}
    full.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": NS, "uid": "job-uid", "generation": 1, "resourceVersion": "5",
                         "creationTimestamp": NOW},
            "spec": full, "status": status if status is not None else {}}


def pod(name: str, phase: str = "Running", *, index: int | None = None, finalizer: bool = True, owner: bool = True,
        ready: bool = False, exit_code: int | None = None, finished: str | None = None,
        conditions: list[dict[str, Any]] | None = None, annotations: dict[str, str] | None = None,
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "1",
                            "creationTimestamp": "2023-12-31T23:00:00Z",
                            "labels": {"batch.kubernetes.io/controller-uid": "job-uid"},
                            "annotations": dict(annotations or {})}
    if index is not None:
        meta["annotations"][COMPLETION_INDEX] = str(index)
    if finalizer:
        meta["finalizers"] = [TRACKING_FINALIZER]
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "job-uid",
                                    "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = NOW
    status: dict[str, Any] = {"phase": phase, "conditions": list(conditions or [])}
    if ready:
        status["conditions"].append({"type": "Ready", "status": "True"})
    if exit_code is not None or finished:
        status["containerStatuses"] = [{"name": "main", "restartCount": 0, "state": {"terminated": {
            "exitCode": exit_code or 0, "finishedAt": finished or "2023-12-31T23:30:00Z"}}}]
    return {"metadata": meta, "spec": {"nodeName": "n1"}, "status": status}


def controller(j: dict[str, Any], *pods: dict[str, Any]) -> tuple[JobController, RecordingClient, FakeClock,
                                                                    FakeRecorder]:
    ctx, client, clock = context()
    recorder = FakeRecorder()
    ctx.recorder = recorder  # type: ignore[assignment]
    cache(ctx, resources.JOBS, j)
    cache(ctx, resources.PODS, *pods)
    client.put(resources.JOBS, j)
    return JobController(ctx), client, clock, recorder


def statuses(client: RecordingClient) -> list[dict[str, Any]]:
    return [a.body["status"] for a in client.writes("update") if a.resource == "jobs/status"]


def condition_types(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", "")) for c in status.get("conditions") or []]


def finalizers_removed(client: RecordingClient) -> list[str]:
    return [a.name for a in client.writes("patch")
            if a.body == {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}]


async def settle(clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    for _ in range(5):
        await asyncio.sleep(0)


# creating pods -------------------------------------------------------------------------------------------

async def test_missing_pods_are_created_with_the_tracking_finalizer_and_owned() -> None:
    jc, client, _, recorder = controller(job(parallelism=2, completions=3))
    await jc.sync(KEY)
    created = [a.body for a in client.writes("create")]
    assert len(created) == 2
    meta = created[0]["metadata"]
    assert meta["generateName"] == "pi-" and meta["finalizers"] == [TRACKING_FINALIZER]
    assert meta["labels"]["batch.kubernetes.io/job-name"] == "pi" and meta["labels"]["job-name"] == "pi"
    assert meta["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "job-uid",
                                        "controller": True, "blockOwnerDeletion": True}]
    assert statuses(client)[-1] == {"active": 2, "ready": 0, "terminating": 0, "startTime": NOW,
                                    "uncountedTerminatedPods": {}}
    assert recorder.reasons() == ["SuccessfulCreate", "SuccessfulCreate"]


async def test_no_more_pods_are_created_than_completions_still_missing() -> None:
    status = {"succeeded": 2, "startTime": NOW, "uncountedTerminatedPods": {}}
    jc, client, _, _ = controller(job(status, parallelism=5, completions=3))
    await jc.sync(KEY)
    assert len(client.writes("create")) == 1


async def test_nothing_more_is_created_until_the_cache_has_seen_the_new_pods() -> None:
    jc, client, _, _ = controller(job(parallelism=2))
    await jc.sync(KEY)
    await jc.sync(KEY)
    assert len(client.writes("create")) == 1  # completions 1 caps parallelism 2


async def test_a_template_that_cannot_be_created_fails_once_and_the_sync_is_retried() -> None:
    jc, client, _, recorder = controller(job(parallelism=8, completions=8))
    client.failures[("create", "pods")] = errors.Forbidden({"message": "exceeded quota"})
    with pytest.raises(errors.Forbidden):
        await jc.sync(KEY)
    assert len(client.writes("create")) == 1
    assert recorder.events == [("Warning", "FailedCreate", "Error creating: exceeded quota")]
    assert jc.expectations.satisfied(KEY)


async def test_missing_pods_are_created_in_doubling_slow_start_batches() -> None:
    jc, client, _, _ = controller(job(parallelism=10, completions=10))
    watched = CreateBatches(client, "pods")
    await jc.sync(KEY)
    assert watched.sizes == [1, 2, 4, 3]


async def requeued_after(jc: JobController, clock: FakeClock, step: float = 0.25, limit: float = 120.0) -> float:
    """How long (on the fake clock) until the key is back on the queue."""
    waited = 0.0
    while not len(jc.queue):
        assert waited < limit, f"the key did not come back within {limit} s"
        await settle(clock, step)
        waited += step
    return waited


async def test_a_job_whose_pods_cannot_be_created_is_retried_with_exponential_backoff_not_a_spin() -> None:
    jc, client, clock, recorder = controller(job(parallelism=5, completions=5))
    client.failures[("create", "pods")] = errors.Forbidden({"message": 'pods "pi-" is forbidden: exceeded quota'})
    log = logging.getLogger(__name__)
    delays = []
    jc.queue.add(KEY)
    for attempt in range(4):
        await process_next_work_item(jc.queue, jc.sync, name="job", max_retries=None, log=log)
        if attempt == 0:  # the informer delivers the status the first sync wrote
            jc.jobs.indexer.update({**job(parallelism=5, completions=5), "status": statuses(client)[-1]})
        delays.append(await requeued_after(jc, clock))
    assert delays == [1.0, 2.0, 4.0, 8.0]  # kube's Job queue: 1 s doubling (up to 60 s)
    assert len(client.writes("create")) == 4  # one create per sync: the slow start's first batch
    assert recorder.events == [("Warning", "FailedCreate",
                                'Error creating: pods "pi-" is forbidden: exceeded quota')] * 4
    assert len(statuses(client)) == 1  # later syncs change nothing: no status write wakes the Job again
    assert condition_types(statuses(client)[0]) == []  # kube sets no condition for it, only the events
    jc.queue.shut_down()


# counting finished pods ----------------------------------------------------------------------------------

async def test_a_succeeded_pod_is_counted_through_the_uncounted_list_and_the_job_completes() -> None:
    jc, client, _, recorder = controller(job({"startTime": NOW, "active": 1}), pod("p1", "Succeeded"))
    await jc.sync(KEY)
    first, last = statuses(client)
    assert first["uncountedTerminatedPods"] == {"succeeded": ["uid-p1"]}
    assert condition_types(first) == [("SuccessCriteriaMet", "True", "CompletionsReached")]
    assert finalizers_removed(client) == ["p1"]
    assert last["succeeded"] == 1 and last["uncountedTerminatedPods"] == {} and "active" not in last
    assert condition_types(last) == [("SuccessCriteriaMet", "True", "CompletionsReached"),
                                     ("Complete", "True", "CompletionsReached")]
    assert last["conditions"][1]["message"] == "Reached expected number of succeeded pods"
    assert last["completionTime"] == NOW
    assert recorder.events == [("Normal", "Completed", "Job completed")]


async def test_pods_already_counted_are_not_counted_again() -> None:
    status = {"startTime": NOW, "succeeded": 1, "uncountedTerminatedPods": {}}
    jc, client, _, _ = controller(job(status, completions=2), pod("old", "Succeeded", finalizer=False),
                                  pod("new", "Running"))
    await jc.sync(KEY)
    assert client.writes("create") == [] and statuses(client)[-1]["succeeded"] == 1


async def test_a_finished_job_is_left_alone() -> None:
    done = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
    jc, client, _, _ = controller(job(done), pod("p1", "Running"))
    await jc.sync(KEY)
    assert client.writes() == []


async def test_a_job_managed_by_another_controller_is_left_alone() -> None:
    jc, client, _, _ = controller(job(managedBy="example.com/batch"))
    await jc.sync(KEY)
    assert client.writes() == []


async def test_an_unknown_completion_mode_is_reported_and_not_retried() -> None:
    jc, client, _, recorder = controller(job(completionMode="Sometimes"))
    await jc.sync(KEY)
    assert client.writes() == []
    assert recorder.events == [("Warning", "UnknownCompletionMode", "Skipped Job sync because completion mode is "
                                                                    "unknown")]


async def test_a_status_write_conflict_fails_the_sync_for_a_retry() -> None:
    jc, client, _, _ = controller(job({"startTime": NOW}), pod("p1", "Succeeded"))
    client.failures[("update", "jobs/status")] = errors.Conflict({"message": "the object has been modified"})
    with pytest.raises(errors.Conflict):
        await jc.sync(KEY)
    assert finalizers_removed(client) == []  # never before the uid is safely in the status


# failures and backoff ------------------------------------------------------------------------------------

def test_the_pod_failure_backoff_doubles_from_ten_seconds_up_to_ten_minutes() -> None:
    t = FakeClock().wall()
    assert [remaining_time(n, t, t) for n in (0, 1, 2, 3, 7, 20)] == [0, 10, 20, 40, 600, 600]
    assert remaining_time(2, t, t + timedelta(seconds=15)) == 5


async def test_a_failed_pod_is_replaced_only_after_the_backoff() -> None:
    recent = time_string(FakeClock().wall() - timedelta(seconds=4))
    jc, client, clock, _ = controller(job({"startTime": NOW}), pod("p1", "Failed", exit_code=1, finished=recent))
    await jc.sync(KEY)
    assert client.writes("create") == []
    assert statuses(client)[-1]["failed"] == 1
    await settle(clock, 5.9)
    assert len(jc.queue) == 0
    await settle(clock, 0.2)  # the 10 s backoff ends 6 s after this sync
    assert len(jc.queue) == 1


async def test_a_pod_that_failed_long_ago_is_replaced_at_once() -> None:
    jc, client, _, _ = controller(job({"startTime": NOW}), pod("p1", "Failed", exit_code=1))
    await jc.sync(KEY)
    assert len(client.writes("create")) == 1


async def test_more_failures_than_the_backoff_limit_fail_the_job_once_its_pods_are_gone() -> None:
    pods = [pod("f1", "Failed", exit_code=1), pod("f2", "Failed", exit_code=1), pod("running", ready=True)]
    jc, client, _, recorder = controller(job({"startTime": NOW}, backoffLimit=1), *pods)
    await jc.sync(KEY)
    assert [a.name for a in client.writes("delete")] == ["running"]
    status = statuses(client)[-1]
    assert condition_types(status) == [("FailureTarget", "True", "BackoffLimitExceeded")]
    assert status["terminating"] == 1 and status["ready"] == 0
    assert "Failed" not in [c for c, _, _ in condition_types(status)]  # the running pod is still stopping
    assert "BackoffLimitExceeded" not in recorder.reasons()


async def test_the_failed_condition_follows_the_failure_target_when_no_pod_is_left() -> None:
    target = {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
              "message": "Job has reached the specified backoff limit"}
    status = {"startTime": NOW, "failed": 2, "conditions": [target], "uncountedTerminatedPods": {}}
    jc, client, _, recorder = controller(job(status, backoffLimit=1), pod("gone", "Failed", finalizer=False))
    await jc.sync(KEY)
    assert condition_types(statuses(client)[-1])[-1] == ("Failed", "True", "BackoffLimitExceeded")
    assert recorder.events == [("Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]


async def test_restarts_count_against_the_backoff_limit_with_restart_policy_on_failure() -> None:
    restarting = pod("p1")
    restarting["status"]["containerStatuses"] = [{"name": "main", "restartCount": 2, "state": {"running": {}}}]
    template = job()["spec"]["template"]
    template["spec"]["restartPolicy"] = "OnFailure"
    jc, client, _, _ = controller(job({"startTime": NOW}, backoffLimit=2, template=template), restarting)
    await jc.sync(KEY)
    assert condition_types(statuses(client)[0]) == [("FailureTarget", "True", "BackoffLimitExceeded")]


async def test_a_job_past_its_active_deadline_fails() -> None:
    jc, client, _, recorder = controller(job({"startTime": "2023-12-31T23:58:00Z"}, activeDeadlineSeconds=60))
    await jc.sync(KEY)
    last = statuses(client)[-1]
    assert condition_types(last) == [("FailureTarget", "True", "DeadlineExceeded"),
                                     ("Failed", "True", "DeadlineExceeded")]
    assert recorder.events == [("Warning", "DeadlineExceeded", "Job was active longer than specified deadline")]
    assert client.writes("create") == []


async def test_a_job_with_an_active_deadline_is_synced_again_when_it_passes() -> None:
    jc, _, clock, _ = controller(job({"startTime": "2023-12-31T23:59:30Z"}, activeDeadlineSeconds=60),
                                 pod("p1"))
    await jc.sync(KEY)
    await settle(clock, 29)
    assert len(jc.queue) == 0
    await settle(clock, 1.5)
    assert len(jc.queue) == 1


# pod failure policy --------------------------------------------------------------------------------------

FAIL_ON_42 = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                                               "values": [42]}},
                        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}


async def test_a_fail_job_rule_fails_the_job_with_the_rule_in_the_message() -> None:
    jc, client, _, _ = controller(job({"startTime": NOW}, podFailurePolicy=FAIL_ON_42, podReplacementPolicy="Failed"),
                                  pod("p1", "Failed", exit_code=42))
    await jc.sync(KEY)
    target = statuses(client)[0]["conditions"][0]
    assert (target["type"], target["reason"]) == ("FailureTarget", "PodFailurePolicy")
    assert target["message"] == "Container main for pod default/p1 failed with exit code 42 matching FailJob rule at index 0"


async def test_an_ignored_failure_is_not_counted_and_the_pod_is_replaced() -> None:
    evicted = pod("p1", "Failed", exit_code=137, conditions=[{"type": "DisruptionTarget", "status": "True"}])
    jc, client, _, _ = controller(job({"startTime": NOW}, podFailurePolicy=FAIL_ON_42, podReplacementPolicy="Failed",
                                      backoffLimit=0), evicted)
    await jc.sync(KEY)
    assert len(client.writes("create")) == 1
    assert finalizers_removed(client) == ["p1"]
    assert all("failed" not in status for status in statuses(client))


async def test_a_terminating_pod_is_not_replaced_under_pod_replacement_policy_failed() -> None:
    jc, client, _, _ = controller(job({"startTime": NOW}, podReplacementPolicy="Failed"), pod("p1", deleting=True))
    await jc.sync(KEY)
    assert client.writes("create") == [] and statuses(client)[-1]["terminating"] == 1


async def test_a_terminating_pod_counts_as_failed_at_once_by_default() -> None:
    jc, client, _, _ = controller(job({"startTime": NOW}), pod("p1", deleting=True))
    await jc.sync(KEY)
    assert statuses(client)[-1]["failed"] == 1 and finalizers_removed(client) == ["p1"]
    assert client.writes("create") == []  # its replacement waits for the backoff, as any failure's


# suspend -------------------------------------------------------------------------------------------------

async def test_suspending_deletes_the_active_pods_and_sets_the_condition() -> None:
    jc, client, _, recorder = controller(job({"startTime": NOW, "active": 1}, suspend=True), pod("p1", ready=True))
    await jc.sync(KEY)
    assert finalizers_removed(client) == ["p1"] and [a.name for a in client.writes("delete")] == ["p1"]
    status = statuses(client)[-1]
    assert condition_types(status) == [("Suspended", "True", "JobSuspended")]
    assert status["terminating"] == 1 and "active" not in status
    assert recorder.events == [("Normal", "SuccessfulDelete", "Deleted pod: p1"), ("Normal", "Suspended", "Job suspended")]


async def test_a_job_created_suspended_does_not_start() -> None:
    jc, client, _, _ = controller(job(suspend=True))
    await jc.sync(KEY)
    assert client.writes("create") == [] and "startTime" not in statuses(client)[-1]


async def test_resuming_resets_the_start_time() -> None:
    suspended = {"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}
    status = {"startTime": "2023-12-31T00:00:00Z", "conditions": [suspended]}
    jc, client, _, recorder = controller(job(status))
    await jc.sync(KEY)
    last = statuses(client)[-1]
    assert condition_types(last) == [("Suspended", "False", "JobResumed")]
    assert last["startTime"] == NOW
    assert "Resumed" in recorder.reasons()


# indexed jobs --------------------------------------------------------------------------------------------

def test_indexes_are_written_as_compressed_intervals_and_read_back() -> None:
    intervals = Intervals().with_indexes([8, 0, 1, 2, 3, 5, 7])
    assert str(intervals) == "0-3,5,7,8"
    assert Intervals.parse("0-3,5,7,8", completions=8) == Intervals().with_indexes([0, 1, 2, 3, 5, 7])
    assert Intervals.parse("0-2,x,9", completions=20).total() == 4


async def test_indexed_pods_get_their_index_hostname_and_environment() -> None:
    jc, client, _, _ = controller(job({"startTime": NOW}, completionMode="Indexed", completions=3, parallelism=3),
                                  pod("pi-0", "Succeeded", index=0))
    await jc.sync(KEY)
    created = sorted((a.body for a in client.writes("create")), key=lambda p: p["metadata"]["generateName"])
    assert [p["metadata"]["generateName"] for p in created] == ["pi-1-", "pi-2-"]
    first = created[0]
    assert first["metadata"]["annotations"][COMPLETION_INDEX] == "1"
    assert first["metadata"]["labels"][COMPLETION_INDEX] == "1"
    assert first["spec"]["hostname"] == "pi-1"
    assert first["spec"]["containers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
        "apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}]
    assert statuses(client)[-1]["completedIndexes"] == "0" and statuses(client)[-1]["succeeded"] == 1


async def test_a_second_pod_of_the_same_index_is_deleted() -> None:
    pods = [pod("a", index=0, ready=True), pod("b", index=0), pod("c", index=7)]
    jc, client, _, _ = controller(job({"startTime": NOW}, completionMode="Indexed", completions=2, parallelism=2),
                                  *pods)
    await jc.sync(KEY)
    assert sorted(a.name for a in client.writes("delete")) == ["b", "c"]
    assert client.writes("create") == []  # deleting and creating never happen in the same sync


async def test_a_fail_index_rule_fails_the_index_and_the_job_when_no_index_is_left() -> None:
    policy = {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]}
    pods = [pod("pi-0", "Succeeded", index=0), pod("pi-1", "Failed", index=1, exit_code=3)]
    jc, client, _, recorder = controller(job({"startTime": NOW}, completionMode="Indexed", completions=2, parallelism=2,
                                             backoffLimitPerIndex=2, backoffLimit=2**31 - 1, podFailurePolicy=policy,
                                             podReplacementPolicy="Failed"), *pods)
    await jc.sync(KEY)
    last = statuses(client)[-1]
    assert last["failedIndexes"] == "1" and last["completedIndexes"] == "0"
    assert condition_types(last)[-1] == ("Failed", "True", "FailedIndexes")
    assert recorder.events == [("Warning", "FailedIndexes", "Job has failed indexes")]


async def test_a_failed_index_is_retried_with_its_failure_count_carried_over() -> None:
    failed = pod("pi-1", "Failed", index=1, exit_code=1, annotations={"batch.kubernetes.io/job-index-failure-count": "0"})
    jc, client, _, _ = controller(job({"startTime": NOW}, completionMode="Indexed", completions=2, parallelism=1,
                                      backoffLimitPerIndex=1, backoffLimit=2**31 - 1),
                                  pod("pi-0", "Succeeded", index=0), failed)
    await jc.sync(KEY)
    created = client.writes("create")[0].body
    assert created["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"] == "1"
    assert "pi-1" not in finalizers_removed(client)  # kept until its replacement exists


async def test_a_success_policy_completes_an_indexed_job_early() -> None:
    policy = {"rules": [{"succeededIndexes": "0"}]}
    jc, client, _, _ = controller(job({"startTime": NOW}, completionMode="Indexed", completions=3, parallelism=3,
                                      successPolicy=policy),
                                  pod("pi-0", "Succeeded", index=0), pod("pi-1", index=1), pod("pi-2", index=2))
    await jc.sync(KEY)
    assert sorted(a.name for a in client.writes("delete")) == ["pi-1", "pi-2"]
    met = statuses(client)[0]["conditions"][0]
    assert (met["type"], met["reason"], met["message"]) == ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0")


# ownership and orphans -----------------------------------------------------------------------------------

async def test_an_adopted_pod_gets_the_tracking_finalizer() -> None:
    jc, client, _, _ = controller(job({"startTime": NOW}), pod("stray", owner=False, finalizer=False))
    await jc.sync(KEY)
    patches = {(a.name, str(a.body)) for a in client.writes("patch")}
    assert any(name == "stray" and "ownerReferences" in body for name, body in patches)
    assert any(name == "stray" and TRACKING_FINALIZER in body and "deleteFrom" not in body for name, body in patches)
    assert client.writes("create") == []  # the adopted pod is the one wanted


async def test_the_finalizer_of_a_pod_whose_job_is_gone_is_removed() -> None:
    jc, client, _, _ = controller(job(), pod("left-over", "Succeeded", owner=False))
    await jc.sync_orphan_pod("default/left-over")
    assert finalizers_removed(client) == ["left-over"]


async def test_the_finalizer_of_a_running_jobs_pod_is_kept_by_the_orphan_worker() -> None:
    jc, client, _, _ = controller(job(), pod("p1"))
    await jc.sync_orphan_pod("default/p1")
    assert client.writes() == []


async def test_a_deleted_job_is_forgotten() -> None:
    jc, client, _, _ = controller(job())
    jc.expectations.expect_creations("default/gone", 2)
    await jc.sync("default/gone")
    assert client.writes() == [] and jc.expectations.satisfied("default/gone")


"""The Job, TTL-after-finished and CronJob controllers against a real apiserver, run in this process.

No kubelet runs here: the test plays it, patching pod status to Succeeded or Failed, and watches the
controllers react through the API only (pods, finalizers, Job status and conditions, events).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.clock import FakeClock
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.cronjob import CronJobController
from minikube_py.kcm.controllers.job import JobController
from minikube_py.kcm.controllers.job.indexes import COMPLETION_INDEX
from minikube_py.kcm.controllers.job.pods import TRACKING_FINALIZER
from minikube_py.kcm.controllers.ttlafterfinished import TTLAfterFinishedController
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for

CONTAINERS = [{"name": "main", "image": "busybox", "command": ["true"]}]


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}, **spec}}


async def pods_of(client: RESTClient, namespace: str, uid: str) -> list[dict[str, Any]]:
    items = (await client.list(resources.PODS, namespace))["items"]
    return [p for p in items if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]


async def finish(client: RESTClient, pod: dict[str, Any], phase: str, exit_code: int) -> None:
    """What the kubelet reports when the pod's only container exits."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"phase": phase, "containerStatuses": [{
        "name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": exit_code, "startedAt": now, "finishedAt": now,
                                 "reason": "Completed" if exit_code == 0 else "Error"}}}]}
    meta = pod["metadata"]
    await client.patch(resources.PODS, meta["name"], {"status": status}, meta["namespace"], subresource="status")


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


async def events_for(client: RESTClient, namespace: str, name: str) -> list[tuple[str, str]]:
    items = (await client.list(resources.CORE_EVENTS, namespace))["items"]
    return [(e["reason"], e["message"]) for e in items if e["involvedObject"]["name"] == name]


async def has_events(client: RESTClient, namespace: str, name: str, reasons: tuple[str, ...]) -> bool:
    seen = {reason for reason, _ in await events_for(client, namespace, name)}
    return set(reasons) <= seen


async def test_a_job_runs_to_completion_and_is_cleaned_up_after_its_ttl(control_plane: ControlPlane,
                                                                        namespace: str) -> None:
    async with running(control_plane, JobController, TTLAfterFinishedController) as client:
        created = await client.create(resources.JOBS, job("pi", completions=2, parallelism=2,
                                                          ttlSecondsAfterFinished=1), namespace)
        uid = created["metadata"]["uid"]

        async def two_pods() -> list[dict[str, Any]] | None:
            pods = await pods_of(client, namespace, uid)
            return pods if len(pods) == 2 else None
        pods = await wait_for(two_pods, 15, "the Job's two pods")
        for pod in pods:
            assert pod["metadata"]["finalizers"] == [TRACKING_FINALIZER]
            assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "pi"
            assert pod["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == uid
        for pod in pods:
            await finish(client, pod, "Succeeded", 0)

        async def complete() -> dict[str, Any] | None:
            current = await client.get(resources.JOBS, "pi", namespace)
            return current if "Complete" in conditions(current) else None
        done = await wait_for(complete, 20, "the Job to complete")
        assert done["status"]["succeeded"] == 2 and done["status"].get("active", 0) == 0
        assert conditions(done)["SuccessCriteriaMet"]["reason"] == "CompletionsReached"
        assert done["status"]["completionTime"] and done["status"]["uncountedTerminatedPods"] == {}
        for pod in await pods_of(client, namespace, uid):
            assert TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or [])
        await wait_for(lambda: has_events(client, namespace, "pi", ("SuccessfulCreate", "Completed")), 10,
                       "the Job's events")

        async def deleted_by_ttl() -> bool:
            try:
                current = await client.get(resources.JOBS, "pi", namespace)
            except errors.NotFound:
                return True
            return bool(current["metadata"].get("deletionTimestamp"))  # foreground: waits for the GC
        await wait_for(deleted_by_ttl, 15, "the TTL controller to delete the Job")


async def test_an_indexed_job_fails_when_a_pod_fails_beyond_the_backoff_limit(control_plane: ControlPlane,
                                                                             namespace: str) -> None:
    async with running(control_plane, JobController) as client:
        created = await client.create(resources.JOBS, job("idx", completions=2, parallelism=2, backoffLimit=0,
                                                          completionMode="Indexed"), namespace)
        uid = created["metadata"]["uid"]

        async def two_pods() -> list[dict[str, Any]] | None:
            pods = await pods_of(client, namespace, uid)
            return pods if len(pods) == 2 else None
        pods = sorted(await wait_for(two_pods, 15, "the Job's two pods"),
                      key=lambda p: p["metadata"]["annotations"][COMPLETION_INDEX])
        assert [p["spec"]["hostname"] for p in pods] == ["idx-0", "idx-1"]
        assert [p["metadata"]["labels"][COMPLETION_INDEX] for p in pods] == ["0", "1"]
        assert pods[0]["metadata"]["name"].startswith("idx-0-")
        env = pods[0]["spec"]["containers"][0]["env"]
        assert env[0]["name"] == "JOB_COMPLETION_INDEX"
        await finish(client, pods[0], "Succeeded", 0)
        await finish(client, pods[1], "Failed", 1)

        async def failed() -> dict[str, Any] | None:
            current = await client.get(resources.JOBS, "idx", namespace)
            return current if "Failed" in conditions(current) else None
        done = await wait_for(failed, 20, "the Job to fail")
        assert conditions(done)["Failed"]["reason"] == "BackoffLimitExceeded"
        assert conditions(done)["FailureTarget"]["reason"] == "BackoffLimitExceeded"
        assert done["status"]["completedIndexes"] == "0" and done["status"]["failed"] == 1
        await wait_for(lambda: has_events(client, namespace, "idx", ("BackoffLimitExceeded",)), 10, "the event")
        assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in \
            await events_for(client, namespace, "idx")


async def test_a_cron_job_starts_its_due_job_beside_one_created_by_hand(control_plane: ControlPlane,
                                                                        namespace: str) -> None:
    cron_job = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": job("x")["spec"]}}}
    # The controller's clock runs two minutes ahead, so a run is due without waiting for the minute.
    later = FakeClock(wall_start=datetime.now(UTC) + timedelta(minutes=2))

    def with_fake_clock(ctx: ControllerContext) -> CronJobController:
        return CronJobController(dataclasses.replace(ctx, clock=later))

    async with running(control_plane, with_fake_clock) as client:
        cj = await client.create(resources.CRON_JOBS, cron_job, namespace)
        manual = job("tick-manual")  # what `kubectl create job --from=cronjob/tick` sends
        manual["metadata"].update(annotations={"cronjob.kubernetes.io/instantiate": "manual"}, ownerReferences=[
            {"apiVersion": "batch/v1", "kind": "CronJob", "name": "tick", "uid": cj["metadata"]["uid"],
             "controller": True}])
        await client.create(resources.JOBS, manual, namespace)

        async def scheduled() -> list[dict[str, Any]] | None:
            jobs = [j for j in (await client.list(resources.JOBS, namespace))["items"]
                    if j["metadata"].get("annotations", {}).get("batch.kubernetes.io/cronjob-scheduled-timestamp")]
            return jobs or None
        started = (await wait_for(scheduled, 15, "the scheduled Job"))[0]
        minutes = int(started["metadata"]["name"].rsplit("-", 1)[1])
        stamp = started["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        assert minutes * 60 == int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
        assert started["metadata"]["ownerReferences"][0]["uid"] == cj["metadata"]["uid"]

        async def recorded() -> dict[str, Any] | None:
            current = await client.get(resources.CRON_JOBS, "tick", namespace)
            return current if (current.get("status") or {}).get("active") else None
        status = (await wait_for(recorded, 10, "the CronJob status"))["status"]
        assert [ref["name"] for ref in status["active"]] == [started["metadata"]["name"]]
        assert status["lastScheduleTime"] == stamp
        await wait_for(lambda: has_events(client, namespace, "tick", ("SuccessfulCreate", "UnexpectedJob")), 10,
                       "the CronJob's events")

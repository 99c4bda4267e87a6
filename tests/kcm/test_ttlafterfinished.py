"""The TTL-after-finished controller against a hand-filled cache, a recording client and a FakeClock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.client import resources
from minikube_py.kcm.controllers.ttlafterfinished import TTLAfterFinishedController
from tests.kcm.fakes import RecordingClient, cache, context

KEY = "default/pi"


def job(ttl: int | None = 60, finished_at: str | None = "2023-12-31T23:59:30Z", condition: str = "Complete",
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "pi", "namespace": "default", "uid": "job-uid", "resourceVersion": "4"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status: dict[str, Any] = {}
    if finished_at is not None:
        status["conditions"] = [{"type": condition, "status": "True", "lastTransitionTime": finished_at}]
    spec = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec, "status": status}


async def settle(clock: Any, seconds: float) -> None:
    clock.advance(seconds)
    for _ in range(5):
        await asyncio.sleep(0)


def controller(cached: dict[str, Any], fresh: dict[str, Any] | None = None) -> tuple[TTLAfterFinishedController,
                                                                                      RecordingClient, Any]:
    ctx, client, clock = context()
    cache(ctx, resources.JOBS, cached)
    client.put(resources.JOBS, fresh or cached)
    return TTLAfterFinishedController(ctx), client, clock


async def test_an_expired_job_is_deleted_in_the_foreground_with_its_uid_as_precondition() -> None:
    ttl, client, _ = controller(job(ttl=30, condition="Failed"))
    await ttl.sync(KEY)
    deletes = client.writes("delete")
    assert [(a.resource, a.name) for a in deletes] == [("jobs", "pi")]
    assert deletes[0].options == {"propagation_policy": "Foreground", "preconditions": {"uid": "job-uid"}}


async def test_a_job_whose_ttl_has_not_passed_is_requeued_for_the_moment_it_does() -> None:
    ttl, client, clock = controller(job(ttl=60))  # finished 30 s ago
    await ttl.sync(KEY)
    assert client.writes() == []
    await settle(clock, 29.9)
    assert len(ttl.queue) == 0
    await settle(clock, 0.2)
    assert len(ttl.queue) == 1


async def test_the_fresh_object_is_checked_before_deleting() -> None:
    ttl, client, _ = controller(job(ttl=0), fresh=job(ttl=3600))  # someone just raised the TTL
    await ttl.sync(KEY)
    assert client.writes() == []


@pytest.mark.parametrize("cached", [job(ttl=None), job(finished_at=None), job(deleting=True)],
                         ids=["without a ttl", "still running", "already being deleted"])
async def test_jobs_that_need_no_cleanup_are_left_alone(cached: dict[str, Any]) -> None:
    ttl, client, _ = controller(cached)
    ttl._enqueue(cached)
    await ttl.sync(KEY)
    assert client.writes() == [] and client.actions == [] and len(ttl.queue) == 0


async def test_a_finished_condition_without_a_time_fails_the_sync_for_a_retry() -> None:
    broken = job(ttl=10)
    del broken["status"]["conditions"][0]["lastTransitionTime"]
    ttl, client, _ = controller(broken)
    with pytest.raises(ValueError, match="unable to find the time when the Job default/pi finished"):
        await ttl.sync(KEY)
    assert client.writes() == []


def test_only_finished_jobs_with_a_ttl_are_queued() -> None:
    ttl, _, _ = controller(job())
    ttl._enqueue(job(finished_at=None))
    assert len(ttl.queue) == 0
    ttl._enqueue(job())
    assert len(ttl.queue) == 1

"""Leader election against a real apiserver: acquire, wait, release on cancel, expiry after a crash, loss."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from minikube_py.client import errors
from minikube_py.client.clock import FakeClock
from minikube_py.client.events import CoreEventRecorder, EventBroadcaster
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.leaderelection import LeaderElectionConfig, LeaderElector
from minikube_py.client.rest import RESTClient
from tests.harness import ControlPlane

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LEASE_NAME = "test-leader"


@pytest.fixture()
async def client(control_plane: ControlPlane) -> AsyncIterator[RESTClient]:
    async with RESTClient(load_kubeconfig(control_plane.kubeconfig)) as rest:
        yield rest


class Candidate:
    """A LeaderElector with short timings that records what its callbacks saw."""

    def __init__(self, client: RESTClient, namespace: str, identity: str, *, release: bool = True,
                 recorder: CoreEventRecorder | None = None) -> None:
        self.identity = identity
        self.leading = asyncio.Event()
        self.started_at = 0.0
        self.stopped = 0
        self.new_leaders: list[str] = []
        config = LeaderElectionConfig(LEASE_NAME, identity, namespace, lease_duration=2, renew_deadline=1.5,
                                      retry_period=0.5, release_on_cancel=release)
        self.elector = LeaderElector(client, config, on_started_leading=self._lead,
                                     on_stopped_leading=self._stop, on_new_leader=self.new_leaders.append,
                                     recorder=recorder)
        self.task = asyncio.create_task(self.elector.run())

    async def _lead(self) -> None:
        self.started_at = time.monotonic()
        self.leading.set()
        await asyncio.Event().wait()

    def _stop(self) -> None:
        self.stopped += 1

    async def wait_leading(self, timeout: float) -> None:
        await asyncio.wait_for(self.leading.wait(), timeout)

    async def cancel(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def lease(api: httpx.Client, namespace: str) -> dict[str, Any]:
    response = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE_NAME}")
    assert response.status_code == 200, response.text
    return response.json()


async def test_one_candidate_acquires_and_a_second_waits_until_the_first_releases(
        client: RESTClient, api: httpx.Client, namespace: str) -> None:
    broadcaster = EventBroadcaster(client)
    broadcaster.start_recording_to_sink()
    first = Candidate(client, namespace, "first", recorder=broadcaster.new_core_recorder("test"))
    await first.wait_leading(5)
    spec = lease(api, namespace)["spec"]
    assert spec["holderIdentity"] == "first" and spec["leaseDurationSeconds"] == 2
    assert spec.get("leaseTransitions", 0) == 0
    assert MICRO_TIME.match(spec["renewTime"]) and MICRO_TIME.match(spec["acquireTime"])
    second = Candidate(client, namespace, "second")
    await asyncio.sleep(3)  # longer than the lease: the first keeps renewing it
    assert not second.leading.is_set()
    assert second.new_leaders == ["first"] and first.new_leaders == ["first"]
    assert lease(api, namespace)["spec"]["renewTime"] > spec["renewTime"]

    cancelled_at = time.monotonic()
    await first.cancel()
    released = lease(api, namespace)["spec"]
    assert released.get("holderIdentity", "") == "" and released["leaseDurationSeconds"] == 1
    assert first.stopped == 1
    await second.wait_leading(5)
    took = second.started_at - cancelled_at
    assert took < 1.6, f"took over after {took:.2f}s, not at its next try (every 0.5-1.1s)"
    spec = lease(api, namespace)["spec"]
    assert spec["holderIdentity"] == "second" and spec["leaseTransitions"] == 1
    assert second.new_leaders == ["first", "", "second"] or second.new_leaders == ["first", "second"]
    await second.cancel()
    await broadcaster.shutdown()
    response = api.get(f"/api/v1/namespaces/{namespace}/events")
    assert sorted((event["involvedObject"]["kind"], event["reason"], event["message"])
                  for event in response.json()["items"]) == [
        ("Lease", "LeaderElection", "first became leader"),
        ("Lease", "LeaderElection", "first stopped leading")]


async def test_a_crashed_leader_is_replaced_only_after_its_lease_expires(
        client: RESTClient, api: httpx.Client, namespace: str) -> None:
    first = Candidate(client, namespace, "first", release=False)
    await first.wait_leading(5)
    second = Candidate(client, namespace, "second")
    await asyncio.sleep(1)
    cancelled_at = time.monotonic()
    await first.cancel()
    assert lease(api, namespace)["spec"]["holderIdentity"] == "first"  # not released
    await second.wait_leading(8)
    waited = second.started_at - cancelled_at
    assert 1.4 < waited < 5, f"took over after {waited:.2f}s; the lease lasts 2s and is renewed every 0.5s"
    spec = lease(api, namespace)["spec"]
    assert spec["holderIdentity"] == "second" and spec["leaseTransitions"] == 1
    await second.cancel()


async def test_a_leader_that_cannot_renew_within_the_deadline_stops_leading(
        client: RESTClient, api: httpx.Client, namespace: str) -> None:
    first = Candidate(client, namespace, "first", release=False)
    await first.wait_leading(5)
    for _ in range(5):  # the leader renews concurrently: retry our write on Conflict
        stolen = lease(api, namespace)
        stolen["spec"].update(holderIdentity="intruder", leaseDurationSeconds=30)
        response = api.put(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE_NAME}",
                           json=stolen)
        if response.status_code != 409:
            break
    assert response.status_code == 200, response.text
    await asyncio.wait_for(first.task, 5)  # run() returns once leadership is lost
    assert first.stopped == 1
    assert first.new_leaders == ["first", "intruder"]
    assert lease(api, namespace)["spec"]["holderIdentity"] == "intruder"


async def test_a_candidate_cancelled_before_leading_neither_stops_nor_releases(
        client: RESTClient, api: httpx.Client, namespace: str) -> None:
    first = Candidate(client, namespace, "first")
    await first.wait_leading(5)
    second = Candidate(client, namespace, "second")
    await asyncio.sleep(0.5)
    await second.cancel()
    assert second.stopped == 0
    assert lease(api, namespace)["spec"]["holderIdentity"] == "first"
    await first.cancel()


@pytest.mark.parametrize(("overrides", "message"), [
    ({"lease_duration": 10, "renew_deadline": 10},
     r"lease_duration \(10s\) must be greater than renew_deadline"),
    ({"renew_deadline": 2.4, "retry_period": 2},
     r"renew_deadline \(2.4s\) must be greater than retry_period × 1.2"),
    ({"retry_period": 0}, "retry_period must be greater than zero"),
    ({"lease_duration": 0.9, "renew_deadline": 0.5, "retry_period": 0.1},
     "lease_duration must be at least 1s"),
    ({"identity": ""}, "identity must not be empty"),
    ({"lease_name": ""}, "lease_name must not be empty"),
], ids=["a renew deadline as long as the lease is refused",
        "a renew deadline within the retry jitter is refused", "a zero retry period is refused",
        "a lease shorter than a second is refused", "an empty identity is refused",
        "an empty lease name is refused"])
def test_bad_configuration_is_a_clear_value_error(overrides: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {"lease_name": "x", "identity": "me", **overrides}
    with pytest.raises(ValueError, match=message):
        LeaderElectionConfig(**fields)


class FakeLeaseClient:
    """Serves one Lease from memory, with resourceVersion checks, for clock-driven unit tests."""

    def __init__(self, lease: dict[str, Any] | None = None) -> None:
        self.lease = lease
        self.writes = 0

    async def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.lease is None:
            raise errors.new_not_found("leases.coordination.k8s.io", name)
        return dict(self.lease)

    async def create(self, resource: Any, body: dict[str, Any], namespace: str | None = None) -> dict:
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
        return dict(self.lease)

    async def update(self, resource: Any, body: dict[str, Any], namespace: str | None = None) -> dict:
        assert self.lease is not None
        if body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise errors.Conflict({"code": 409, "reason": "Conflict", "message": "modified meanwhile"})
        self.writes += 1
        version = str(int(self.lease["metadata"]["resourceVersion"]) + 1)
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": version}}
        return dict(self.lease)


def held_lease(holder: str, renew_time: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": LEASE_NAME, "namespace": "ns", "resourceVersion": "7"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 10, "renewTime": renew_time,
                     "acquireTime": renew_time, "leaseTransitions": 3}}


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_expiry_is_measured_on_the_local_clock_from_when_the_record_was_observed() -> None:
    clock = FakeClock()
    client = FakeLeaseClient(held_lease("other", "1970-01-01T00:00:00.000000Z"))  # its clock is way off
    leading = asyncio.Event()

    async def lead() -> None:
        leading.set()

    config = LeaderElectionConfig(LEASE_NAME, "me", "ns", lease_duration=10, renew_deadline=5, retry_period=1)
    elector = LeaderElector(client, config, on_started_leading=lead, clock=clock)  # type: ignore[arg-type]
    task = asyncio.create_task(elector.run())
    for _ in range(4):  # 4 × at most 2.2 s of retries: still within the 10 s observed lease
        await settle()
        clock.advance(2.2)
    await settle()
    assert not leading.is_set() and client.writes == 0
    clock.advance(2.2)
    await settle()
    assert leading.is_set()
    assert client.lease is not None
    assert client.lease["spec"]["holderIdentity"] == "me" and client.lease["spec"]["leaseTransitions"] == 4
    assert client.lease["spec"]["renewTime"] == "2024-01-01T00:00:11.000000Z"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_the_defaults_are_kubes() -> None:
    config = LeaderElectionConfig("kube-scheduler", "me")
    assert (config.lease_namespace, config.lease_duration, config.renew_deadline, config.retry_period,
            config.release_on_cancel) == ("kube-system", 15.0, 10.0, 2.0, True)

"""Event recorders: the Events written, series and count aggregation, bad input logged and never raised."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from minikube_py.client import errors
from minikube_py.client.clock import FakeClock
from minikube_py.client.events import EventBroadcaster, object_reference
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from tests.harness import ControlPlane

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def configmap(name: str, namespace: str = "ns") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "5"}}


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class FakeEventsClient:
    """Records the writes a broadcaster makes; `failures` transport errors come first."""

    def __init__(self, failures: int = 0) -> None:
        self.writes: list[tuple[str, str, dict[str, Any]]] = []
        self.failures = failures

    def _fail_maybe(self) -> None:
        if self.failures:
            self.failures -= 1
            raise errors.ConnectError("connection refused")

    async def create(self, resource: Any, body: dict[str, Any], namespace: str | None = None) -> dict:
        self._fail_maybe()
        self.writes.append(("create", body["metadata"]["name"], body))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}

    async def patch(self, resource: Any, name: str, body: dict[str, Any], namespace: str | None = None,
                    **_: Any) -> dict[str, Any]:
        self._fail_maybe()
        self.writes.append(("patch", name, body))
        return {"metadata": {"name": name}, **body}


@pytest.fixture()
async def client(control_plane: ControlPlane) -> AsyncIterator[RESTClient]:
    async with RESTClient(load_kubeconfig(control_plane.kubeconfig)) as rest:
        yield rest


def create_configmap(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    response = api.post(f"/api/v1/namespaces/{namespace}/configmaps",
                        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    assert response.status_code == 201, response.text
    return response.json()


def events_in(api: httpx.Client, namespace: str, group_version: str = "apis/events.k8s.io/v1") -> list[dict]:
    response = api.get(f"/{group_version}/namespaces/{namespace}/events")
    assert response.status_code == 200, response.text
    return response.json()["items"]


# against the apiserver ---------------------------------------------------------------------------------

async def test_an_event_is_written_with_kubes_fields_and_reads_as_a_core_event(
        client: RESTClient, api: httpx.Client, namespace: str) -> None:
    regarding = create_configmap(api, namespace, "settings")
    related = create_configmap(api, namespace, "other")
    broadcaster = EventBroadcaster(client)
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_recorder("default-scheduler", "default-scheduler-host1")
    recorder.eventf(regarding, related, "Normal", "Scheduled", "Binding", "Successfully assigned %s to %s",
                    "ns/pod", "node-1")
    await broadcaster.shutdown()
    [event] = events_in(api, namespace)
    assert re.fullmatch(r"settings\.[0-9a-f]{16,}", event["metadata"]["name"])
    assert MICRO_TIME.match(event["eventTime"])
    assert {key: event[key] for key in ("type", "reason", "action", "note", "reportingController",
                                        "reportingInstance")} == {
        "type": "Normal", "reason": "Scheduled", "action": "Binding",
        "note": "Successfully assigned ns/pod to node-1", "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host1"}
    meta = regarding["metadata"]
    assert event["regarding"] == {"kind": "ConfigMap", "apiVersion": "v1", "namespace": namespace,
                                  "name": "settings", "uid": meta["uid"],
                                  "resourceVersion": meta["resourceVersion"]}
    assert event["related"]["name"] == "other"
    [core] = events_in(api, namespace, "api/v1")
    assert (core["involvedObject"]["name"], core["reason"], core["message"], core["type"]) == (
        "settings", "Scheduled", "Successfully assigned ns/pod to node-1", "Normal")


async def test_repeats_aggregate_into_one_event_with_a_series(
        client: RESTClient, api: httpx.Client, namespace: str) -> None:
    regarding = create_configmap(api, namespace, "flappy")
    broadcaster = EventBroadcaster(client)
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_recorder("test-controller")
    for _ in range(2):
        recorder.eventf(regarding, None, "Warning", "Failed", "Sync", "it broke")
    await asyncio.wait_for(broadcaster.flush(), 10)
    [event] = events_in(api, namespace)
    assert event["series"]["count"] == 2 and MICRO_TIME.match(event["series"]["lastObservedTime"])
    recorder.eventf(regarding, None, "Warning", "Failed", "Sync", "it broke")
    await asyncio.wait_for(broadcaster.flush(), 10)
    assert events_in(api, namespace)[0]["series"]["count"] == 2  # later repeats wait for the heartbeat
    await broadcaster.shutdown()
    [event] = events_in(api, namespace)
    assert event["series"]["count"] == 3


async def test_core_events_count_identical_repeats_and_keep_different_messages_apart(
        client: RESTClient, api: httpx.Client, namespace: str) -> None:
    regarding = create_configmap(api, namespace, "thing")
    broadcaster = EventBroadcaster(client)
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_core_recorder("kubelet", "node-1")
    for _ in range(3):
        recorder.event(regarding, "Warning", "BackOff", "Back-off restarting failed container")
    recorder.eventf(regarding, "Normal", "Pulled", "image %s pulled", "nginx")
    await broadcaster.shutdown()
    events = {event["reason"]: event for event in events_in(api, namespace, "api/v1")}
    assert set(events) == {"BackOff", "Pulled"}
    backoff = events["BackOff"]
    assert backoff["count"] == 3 and backoff["source"] == {"component": "kubelet", "host": "node-1"}
    assert backoff["firstTimestamp"] <= backoff["lastTimestamp"]
    assert backoff["involvedObject"]["uid"] == regarding["metadata"]["uid"]
    assert events["Pulled"]["message"] == "image nginx pulled" and events["Pulled"]["count"] == 1


async def test_an_event_in_a_terminating_namespace_is_logged_not_raised(
        client: RESTClient, api: httpx.Client, namespace: str, caplog: pytest.LogCaptureFixture) -> None:
    regarding = create_configmap(api, namespace, "doomed")
    assert api.delete(f"/api/v1/namespaces/{namespace}").status_code == 200
    broadcaster = EventBroadcaster(client)
    broadcaster.start_recording_to_sink()
    caplog.set_level(logging.INFO, "minikube_py.client.events")
    broadcaster.new_recorder("test").eventf(regarding, None, "Normal", "Noted", "Note", "late")
    broadcaster.new_core_recorder("test").event(regarding, "Normal", "Noted", "late")
    await broadcaster.shutdown()
    assert caplog.text.count("because it is being terminated") == 2
    assert events_in(api, namespace) == []


# unit, with a fake client and a fake clock ----------------------------------------------------------------

async def test_series_repeats_are_written_by_the_heartbeat_and_end_after_six_idle_minutes() -> None:
    clock = FakeClock()
    client = FakeEventsClient()
    broadcaster = EventBroadcaster(client, clock)  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_recorder("c", "i")
    for _ in range(4):
        recorder.eventf(configmap("a"), None, "Normal", "R", "A", "note")
    await settle()
    assert [(verb, body.get("series", {}).get("count")) for verb, _, body in client.writes] == [
        ("create", None), ("patch", 2)]
    clock.advance(6 * 60)  # the sweep: the series was seen just now, so it goes on
    await settle()
    assert len(client.writes) == 2
    clock.advance(6 * 60)  # idle for six minutes: the final count is written and the series ends
    await settle()
    assert client.writes[-1][0] == "patch" and client.writes[-1][2]["series"]["count"] == 4
    recorder.eventf(configmap("a"), None, "Normal", "R", "A", "note")
    await settle()
    assert client.writes[-1][0] == "create"  # a new event, not a fifth occurrence
    await broadcaster.shutdown()


async def test_a_long_note_is_truncated_to_1024_bytes_and_names_stay_unique() -> None:
    client = FakeEventsClient()
    broadcaster = EventBroadcaster(client, FakeClock())  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_recorder("c", "i")
    recorder.eventf(configmap("a"), None, "Normal", "Long", "A", "é" * 1000)
    recorder.eventf(configmap("a"), None, "Normal", "Other", "A", "x")
    await broadcaster.shutdown()
    first, second = (body for _, _, body in client.writes)
    assert len(first["note"].encode()) == 1024 and first["note"] == "é" * 512
    assert first["metadata"]["name"] != second["metadata"]["name"]
    assert first["metadata"]["name"] == "a.17a6101701650000"  # 2024-01-01 in unix nanoseconds, hex


async def test_a_cluster_scoped_object_gets_events_in_the_default_namespace() -> None:
    client = FakeEventsClient()
    broadcaster = EventBroadcaster(client, FakeClock())  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "u1"}}
    broadcaster.new_recorder("c", "i").eventf(node, None, "Normal", "R", "A", "n")
    await broadcaster.shutdown()
    [(_, _, body)] = client.writes
    assert body["metadata"]["namespace"] == "default" and "namespace" not in body["regarding"]


async def test_transport_errors_are_retried_after_a_sleep() -> None:
    clock = FakeClock()
    client = FakeEventsClient(failures=2)
    broadcaster = EventBroadcaster(client, clock)  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    broadcaster.new_core_recorder("c").event(configmap("a"), "Normal", "R", "m")
    for _ in range(2):
        await settle()
        assert client.writes == []
        clock.advance(13)
    await settle()
    assert [verb for verb, _, _ in client.writes] == ["create"]
    await broadcaster.shutdown()


@pytest.mark.parametrize(("regarding", "type", "logged"), [
    ({"metadata": {"name": "x"}}, "Normal", "the object has no kind, apiVersion"),
    ({"kind": "Pod", "apiVersion": "v1", "metadata": {}}, "Normal", "the object has no name"),
    ("not an object", "Normal", "expected an API object, got str"),
    (configmap("a"), "Bogus", "unsupported event type: 'Bogus'"),
], ids=["an object without kind is logged", "an object without a name is logged",
        "a string is logged", "an unknown event type is logged"])
async def test_bad_input_is_logged_and_dropped_never_raised(regarding: Any, type: str, logged: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    client = FakeEventsClient()
    broadcaster = EventBroadcaster(client, FakeClock())  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    broadcaster.new_recorder("c", "i").eventf(regarding, None, type, "R", "A", "note")
    broadcaster.new_core_recorder("c").event(regarding, type, "R", "note")
    await broadcaster.shutdown()
    assert caplog.text.count(logged) == 2
    assert client.writes == []


async def test_a_full_buffer_drops_events_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    client = FakeEventsClient()
    broadcaster = EventBroadcaster(client, FakeClock(), max_queued=2)  # type: ignore[arg-type]
    recorder = broadcaster.new_recorder("c", "i")
    for reason in ("One", "Two", "Three"):
        recorder.eventf(configmap("a"), None, "Normal", reason, "A", "note")
    assert "too many queued events, dropped event ns/a." in caplog.text
    broadcaster.start_recording_to_sink()
    await broadcaster.shutdown()
    assert [body["reason"] for _, _, body in client.writes] == ["One", "Two"]


async def test_a_server_refusal_is_logged_and_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    class Refusing(FakeEventsClient):
        async def create(self, resource: Any, body: dict[str, Any], namespace: str | None = None) -> dict:
            self.writes.append(("create", "", body))
            raise errors.Invalid({"code": 422, "reason": "Invalid", "message": "Event is invalid"})

    client = Refusing()
    broadcaster = EventBroadcaster(client, FakeClock())  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    broadcaster.new_recorder("c", "i").eventf(configmap("a"), None, "Normal", "R", "A", "n")
    await broadcaster.shutdown()
    assert len(client.writes) == 1
    assert "server rejected event (will not retry!): Event is invalid" in caplog.text


@pytest.mark.parametrize(("obj", "expected"), [
    ({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "ns", "uid": "u",
                                                      "resourceVersion": "9", "labels": {"a": "b"}}},
     {"kind": "Pod", "apiVersion": "v1", "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "9"}),
    ({"kind": "Node", "apiVersion": "v1", "name": "n1"}, {"kind": "Node", "apiVersion": "v1", "name": "n1"}),
], ids=["an object becomes a reference with its identity fields", "a reference is taken as it is"])
def test_object_reference(obj: dict[str, Any], expected: dict[str, Any]) -> None:
    assert object_reference(obj) == expected


async def test_similar_core_events_are_combined_from_the_tenth_distinct_message() -> None:
    client = FakeEventsClient()
    broadcaster = EventBroadcaster(client, FakeClock())  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_core_recorder("replicaset-controller")
    for index in range(12):
        recorder.event(configmap("rs"), "Normal", "SuccessfulCreate", f"Created pod: rs-{index}")
    await broadcaster.shutdown()
    writes = [(verb, body.get("message"), body.get("count")) for verb, _, body in client.writes]
    assert writes[:9] == [("create", f"Created pod: rs-{index}", 1) for index in range(9)]
    assert writes[9:] == [("create", "(combined from similar events): Created pod: rs-9", 1),
                          ("patch", "(combined from similar events): Created pod: rs-10", 2),
                          ("patch", "(combined from similar events): Created pod: rs-11", 3)]
    combined = {name for verb, name, _ in client.writes[9:]}
    assert len(combined) == 1  # the patches go to the combined event


async def test_the_spam_filter_lets_25_writes_through_then_one_per_five_minutes_and_keeps_counting() -> None:
    clock = FakeClock()
    client = FakeEventsClient()
    broadcaster = EventBroadcaster(client, clock)  # type: ignore[arg-type]
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_core_recorder("kubelet", "node-1")
    for _ in range(30):
        recorder.event(configmap("pod"), "Warning", "BackOff", "Back-off restarting failed container")
    recorder.event(configmap("other"), "Warning", "BackOff", "Back-off restarting failed container")
    await settle()
    assert len(client.writes) == 26  # 25 about the first object, then the other object has its own budget
    assert client.writes[-2][2]["count"] == 25
    clock.advance(300)
    recorder.event(configmap("pod"), "Warning", "BackOff", "Back-off restarting failed container")
    await settle()
    assert client.writes[-1][0] == "patch" and client.writes[-1][2]["count"] == 31  # the held-back ones count
    recorder.event(configmap("pod"), "Warning", "BackOff", "Back-off restarting failed container")
    await settle()
    assert len(client.writes) == 27
    await broadcaster.shutdown()

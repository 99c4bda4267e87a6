"""The status manager writes each pod's newest status once, without making pod workers wait for it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minikube_py.client import errors as api_errors
from minikube_py.kubelet import statusmanager
from minikube_py.kubelet.statusmanager import StatusManager


def pod(phase: str = "Pending", uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"name": f"pod-{uid}", "namespace": "default", "uid": uid}, "status": {"phase": phase}}


class StatusClient:
    """Records status patches; `fail` makes the next ones raise, `gate` holds them until set."""

    def __init__(self) -> None:
        self.written: list[tuple[str, str]] = []  # (pod name, phase)
        self.fail: list[Exception] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def patch(self, resource: Any, name: str, body: dict[str, Any], namespace: str | None = None,
                    **_: Any) -> dict[str, Any]:
        await self.gate.wait()
        if self.fail:
            raise self.fail.pop(0)
        self.written.append((name, body["status"]["phase"]))
        uid = name.removeprefix("pod-")
        return {**pod(uid=uid), "status": body["status"]}


@pytest.fixture
async def manager() -> AsyncIterator[tuple[StatusManager, StatusClient, list[dict[str, Any]]]]:
    client = StatusClient()
    written: list[dict[str, Any]] = []
    status = StatusManager(client, written.append)  # type: ignore[arg-type]
    writers = asyncio.create_task(status.run())
    yield status, client, written
    writers.cancel()


async def test_a_status_is_written_and_handed_back_as_the_api_answered(manager: Any) -> None:
    status, client, written = manager
    status.set_pod_status(pod(), {"phase": "Running"})
    assert await status.flush("u1", 1)
    assert client.written == [("pod-u1", "Running")]
    assert written[0]["status"] == {"phase": "Running"}


async def test_a_status_replaced_before_it_was_sent_is_never_sent(manager: Any) -> None:
    status, client, _ = manager
    client.gate.clear()
    status.set_pod_status(pod(uid="busy"), {"phase": "Running"})  # takes a writer, held at the gate
    await asyncio.sleep(0)
    status.set_pod_status(pod(), {"phase": "Pending", "reason": "ContainerCreating"})
    status.set_pod_status(pod(), {"phase": "Running"})
    client.gate.set()
    assert await status.flush("u1", 1)
    assert [phase for name, phase in client.written if name == "pod-u1"] == ["Running"]


async def test_an_unchanged_status_is_not_written(manager: Any) -> None:
    status, client, _ = manager
    status.set_pod_status(pod("Running"), {"phase": "Running"})
    assert await status.flush("u1", 1)
    assert client.written == []


async def test_the_next_status_is_computed_from_the_one_still_pending(manager: Any) -> None:
    status, client, _ = manager
    client.gate.clear()
    status.set_pod_status(pod(), {"phase": "Running"})
    assert status.pod_with_status(pod())["status"] == {"phase": "Running"}
    client.gate.set()
    assert await status.flush("u1", 1)
    assert status.pod_with_status(pod("Failed"))["status"] == {"phase": "Failed"}  # the API's copy again


async def test_a_failed_write_is_tried_again(manager: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(statusmanager, "RETRY_AFTER_ERROR", 0.01)
    status, client, _ = manager
    client.fail = [api_errors.from_status({"code": 500, "message": "etcd is down"})]
    status.set_pod_status(pod(), {"phase": "Running"})
    assert await status.flush("u1", 1)
    assert client.written == [("pod-u1", "Running")]


async def test_a_pod_gone_from_the_api_is_not_written_again(manager: Any) -> None:
    status, client, written = manager
    client.fail = [api_errors.from_status({"code": 404, "reason": "NotFound", "message": "gone"})]
    status.set_pod_status(pod(), {"phase": "Running"})
    assert await status.flush("u1", 1)
    assert client.written == [] and written == []


async def test_flush_gives_up_after_its_timeout_when_nothing_can_be_written(manager: Any) -> None:
    status, client, _ = manager
    client.gate.clear()
    status.set_pod_status(pod(), {"phase": "Running"})
    assert not await status.flush("u1", 0.05)
    status.forget("u1")
    assert await status.flush("u1", 1)


async def test_several_pods_are_written_at_once_but_each_pod_one_write_at_a_time(manager: Any) -> None:
    status, client, _ = manager
    in_flight: list[str] = []
    most_at_once = 0
    overlapping_same_pod = False
    original = client.patch

    async def patch(resource: Any, name: str, body: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        nonlocal most_at_once, overlapping_same_pod
        overlapping_same_pod |= name in in_flight
        in_flight.append(name)
        most_at_once = max(most_at_once, len(in_flight))
        try:
            return await original(resource, name, body, *args, **kwargs)
        finally:
            in_flight.remove(name)

    client.patch = patch
    client.gate.clear()
    for uid in ("a", "b", "c", "d", "e", "f"):
        status.set_pod_status(pod(uid=uid), {"phase": "Running"})
    await asyncio.sleep(0.05)
    status.set_pod_status(pod(uid="a"), {"phase": "Succeeded"})  # "a" is being written: this one waits for it
    await asyncio.sleep(0.05)
    assert most_at_once == statusmanager.STATUS_WRITERS
    client.gate.set()
    for uid in ("a", "b", "c", "d", "e", "f"):
        assert await status.flush(uid, 1)
    assert not overlapping_same_pod
    assert [phase for name, phase in client.written if name == "pod-a"] == ["Running", "Succeeded"]
    assert sorted(name for name, _ in client.written) == sorted([f"pod-{uid}" for uid in "abcdef"] + ["pod-a"])


async def test_a_null_the_api_did_not_keep_is_not_a_change(manager: Any) -> None:
    """The conditions carry `lastProbeTime: null`, which the API does not store: the status it handed back
    must still count as the one the kubelet computed, or every later sync would patch it again."""
    status, client, _ = manager
    condition = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    stored = {**pod("Running"), "status": {"phase": "Running", "conditions": [condition]}}
    status.set_pod_status(stored, {"phase": "Running", "conditions": [{**condition, "lastProbeTime": None}]})
    assert await status.flush("u1", 1)
    assert client.written == []
    status.set_pod_status(stored, {"phase": "Running", "conditions": [{**condition, "status": "False",
                                                                       "lastProbeTime": None}]})
    assert await status.flush("u1", 1)
    assert client.written == [("pod-u1", "Running")]

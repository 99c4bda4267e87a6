"""Unit tests of the kubelet's back-off: kube's CrashLoopBackOff and image pull timings, and the container
statuses a crash loop goes through, sync by sync (a kubelet over the fake runtime, on a fake clock)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minikube_py.apiserver.patch import MERGE_PATCH, apply_patch
from minikube_py.client.clock import FakeClock
from minikube_py.kubelet.backoff import Backoff
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.fake import FakeRuntime, serve
from minikube_py.kubelet.kubelet import Kubelet
from tests.kcm.fakes import FakeRecorder, RecordingClient


def test_crash_loop_restarts_at_once_then_waits_ten_seconds_doubling_to_the_cap() -> None:
    backoff = Backoff(10, 300)
    assert not backoff.in_backoff_since("c", since=0, now=0)  # first crash: restart at once
    delays = [backoff.next("c", now) for now in (0, 11, 32, 73, 154, 315, 616)]
    assert delays == [10, 20, 40, 80, 160, 300, 300]
    assert backoff.in_backoff_since("c", since=620, now=800) and not backoff.in_backoff_since("c", 620, 921)


def test_a_key_quiet_for_twice_the_cap_starts_again_from_the_initial_delay() -> None:
    backoff = Backoff(10, 300)
    backoff.next("c", 0)
    backoff.next("c", 20)
    assert backoff.delay("c") == 20
    assert backoff.next("c", 20 + 601) == 10


def test_image_pull_back_off_counts_from_the_last_attempt() -> None:
    backoff = Backoff(10, 300)
    assert not backoff.in_backoff_since_update("img", 0)
    backoff.next("img", 100)
    assert backoff.in_backoff_since_update("img", 105) and backoff.until_retry("img", 105) == 5
    assert not backoff.in_backoff_since_update("img", 110.5)
    backoff.forget("im")
    assert backoff.delay("img") == 0


# The container statuses of a crash loop, one kubelet sync at a time --------------------------------------

UID = "uid-crash"
RUN_SECONDS = 1.0
CRASHING = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "crash", "namespace": "default", "uid": UID,
                         "annotations": {"fake.cri.mkpy.dev/exit-code.main": "1",
                                         "fake.cri.mkpy.dev/run-seconds.main": str(RUN_SECONDS)}},
            "spec": {"nodeName": "sim-1", "restartPolicy": "Always",
                     "containers": [{"name": "main", "image": "busybox", "imagePullPolicy": "IfNotPresent"}]},
            "status": {"phase": "Pending"}}


class PodClient(RecordingClient):
    """Holds one pod and applies status patches to it as the apiserver does (JSON merge patches)."""

    def __init__(self, pod: dict[str, Any]) -> None:
        super().__init__()
        self.pod = copy.deepcopy(pod)
        self.statuses: list[dict[str, Any]] = []  # every status patched, in order

    async def patch(self, resource: Any, name: str, body: Any, namespace: str | None = None,
                    **options: Any) -> dict[str, Any]:
        await super().patch(resource, name, body, namespace, **options)
        self.pod = apply_patch(MERGE_PATCH, self.pod, body, ("", "v1", "Pod"))
        self.statuses.append(self.pod["status"])
        return copy.deepcopy(self.pod)


@dataclass
class ScriptedExit:
    callback: Callable[[], object]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class ScriptedExits:
    """The fake runtime's timers: scripted container exits wait for `happen()` instead of real time."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.pending: list[ScriptedExit] = []

    def call_later(self, delay: float, callback: Callable[[], object]) -> ScriptedExit:
        assert delay == RUN_SECONDS
        self.pending.append(ScriptedExit(callback))
        return self.pending[-1]

    def happen(self) -> None:
        """RUN_SECONDS pass: the running containers exit."""
        self.clock.advance(RUN_SECONDS)
        for scripted in self.pending:
            if not scripted.cancelled:
                scripted.callback()
        self.pending.clear()


def step(status: dict[str, Any]) -> tuple[str, int]:
    """What `kubectl get pods -w` shows of container main: its state's reason (Running when running) and
    restart count."""
    main = status["containerStatuses"][0]
    (kind, state), = main["state"].items()
    return state.get("reason", kind.capitalize()), main["restartCount"]


@pytest.fixture
async def crash_node(tmp_path: Path) -> AsyncIterator[tuple[Kubelet, PodClient, ScriptedExits, FakeClock]]:
    """A kubelet with one crashing pod bound, over the fake runtime served in this process; both read one fake
    clock, which moves only when the test says."""
    clock = FakeClock()
    exits = ScriptedExits(clock)
    fake = FakeRuntime(node_name="sim-1", clock=lambda: int(clock.wall().timestamp() * 1e9), timers=exits)
    server = await serve(str(tmp_path / "cri.sock"), fake)
    runtime = RuntimeClient(server.endpoint, timeout=10)
    client = PodClient(CRASHING)
    kubelet = Kubelet(KubeletConfig(node_name="sim-1", root_dir=tmp_path / "kubelet"), client,  # type: ignore[arg-type]
                      runtime, FakeRecorder(), clock=lambda: clock.wall().timestamp())  # type: ignore[arg-type]
    kubelet.bound_pods[UID] = copy.deepcopy(CRASHING)
    writers = asyncio.create_task(kubelet.status.run())
    try:
        yield kubelet, client, exits, clock
    finally:
        writers.cancel()
        await runtime.close()
        await server.stop()


async def test_a_crashed_container_shows_error_before_it_restarts_or_backs_off(
        crash_node: tuple[Kubelet, PodClient, ScriptedExits, FakeClock]) -> None:
    """kube's sequence: a freshly exited container is `terminated` (Error) first; only the sync that then
    restarts it (the first time at once) or is refused by the back-off makes it Running or CrashLoopBackOff."""
    kubelet, client, exits, clock = crash_node

    async def sync() -> tuple[list[tuple[str, int]], float | None]:
        patched = len(client.statuses)
        outcome = await kubelet.sync_pod(UID)
        assert await kubelet.status.flush(UID, 5)
        return [step(status) for status in client.statuses[patched:]], outcome.retry_in

    assert (await sync())[0] == [("ContainerCreating", 0), ("Running", 0)]
    exits.happen()
    assert (await sync())[0] == [("Error", 0), ("Running", 1)]
    exits.happen()
    assert (await sync())[0] == [("Error", 1), ("CrashLoopBackOff", 1)]
    error, back_off = client.statuses[-2:]
    first, second = (status["containerStatuses"][0] for status in (error, back_off))
    assert first["state"]["terminated"]["exitCode"] == 1 and first["lastState"]["terminated"]["reason"] == "Error"
    assert first["lastState"]["terminated"]["containerID"] != first["state"]["terminated"]["containerID"]
    assert second["state"]["waiting"] == {
        "reason": "CrashLoopBackOff", "message": f"back-off 10s restarting failed container=main pod=crash_default({UID})"}
    assert second["lastState"] == first["state"]  # the run that just ended
    assert error["phase"] == back_off["phase"] == "Running"

    clock.advance(5)
    patches, retry_in = await sync()
    assert patches == [] and retry_in is not None and 5 < retry_in < 5.5  # still backing off: nothing changes
    clock.advance(retry_in)
    assert (await sync())[0] == [("Running", 2)]
    exits.happen()
    assert (await sync())[0] == [("Error", 2), ("CrashLoopBackOff", 2)]
    assert client.statuses[-1]["containerStatuses"][0]["state"]["waiting"]["message"].startswith("back-off 20s ")
    assert kubelet._recorder.reasons().count("BackOff") == 3  # type: ignore[attr-defined]

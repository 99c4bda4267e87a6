"""The prober's timing and results (prober.py), with a fake clock, a stub runtime answering ExecSync, and local
TCP/HTTP servers for httpGet and tcpSocket probes."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from minikube_py.client.clock import FakeClock
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.prober import LIVENESS, READINESS, ProbeManager, ProbeSpec
from minikube_py.kubelet.runtimestate import ContainerState, PodState, SandboxState

UID = "uid-1"


class StubRuntime:
    """ExecSync only: each probe command's second word names a script of exit codes (the last one repeats)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.exit_codes: dict[str, list[int]] = {}
        self.output = b""
        self.calls: list[tuple[float, str, str, int]] = []  # (time, container id, script, timeout)

    async def exec_sync(self, container_id: str, cmd: list[str], timeout: int) -> cri.ExecSyncResponse:
        script = cmd[1]
        self.calls.append((self.clock.now() - START, container_id, script, timeout))
        codes = self.exit_codes.get(script, [0])
        code = codes.pop(0) if len(codes) > 1 else codes[0]
        return cri.ExecSyncResponse(stdout=self.output, exit_code=code)

    def times(self, script: str) -> list[float]:
        return [when for when, _, name, _ in self.calls if name == script]


START = 1000.0  # FakeClock's start


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock(start=START)
        self.runtime = StubRuntime(self.clock)
        self.changes: list[str] = []
        self.events: list[tuple[str, str, str, str | None]] = []
        self.probes = ProbeManager(self.runtime, self.changes.append, self.event, clock=self.clock)  # type: ignore[arg-type]

    def event(self, pod: dict[str, Any], type: str, reason: str, message: str, container: str | None = None) -> None:
        self.events.append((type, reason, message, container))

    def messages(self) -> list[str]:
        return [message for _, reason, message, _ in self.events if reason == "Unhealthy"]

    def container(self, name: str = "main", id: str = "c1", running: bool = True) -> ContainerState:
        started = int(self.clock.wall().timestamp() * 1e9)
        return ContainerState(id=id, name=name, state=cri.CONTAINER_RUNNING if running else cri.CONTAINER_EXITED,
                              restart_count=0, spec_hash="", init=False, exit_code=0, reason="", message="",
                              created_at=started, started_at=started, finished_at=0, image="busybox",
                              image_ref="", log_path="", sandbox_id="s1")

    def sync(self, pod: dict[str, Any], *containers: ContainerState, ip: str | None = "127.0.0.1") -> None:
        sandboxes = [SandboxState(id="s1", attempt=0, ready=True, ip=ip, created_at=1, host_network=False)] \
            if ip is not None else []
        self.probes.sync(pod, PodState(uid=UID, sandboxes=sandboxes, containers=list(containers)))

    async def advance(self, seconds: float, step: float = 0.5) -> None:
        """Move the fake clock in small steps, letting the woken workers probe at each."""
        await settle()
        for _ in range(round(seconds / step)):
            self.clock.advance(step)
            await settle()


async def settle() -> None:
    for _ in range(30):
        await asyncio.sleep(0)


async def until(check: Callable[[], Any], timeout: float = 5.0) -> None:
    """For probes that do real network I/O: wait (real time) until `check()` holds."""
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


def make_pod(*containers: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": UID, **metadata},
            "spec": {"containers": list(containers)}, "status": {}}


def exec_probe(script: str, **settings: Any) -> dict[str, Any]:
    return {"exec": {"command": ["check", script]}, **settings}


@pytest.fixture()
async def harness() -> AsyncIterator[Harness]:
    h = Harness()
    yield h
    await h.probes.stop()


# -- settings -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("probe", "kind", "expected"), [
    ({}, LIVENESS, (0, 10, 1, 1, 3)),
    ({"initialDelaySeconds": 4, "periodSeconds": 2, "timeoutSeconds": 5, "failureThreshold": 6}, LIVENESS,
     (4, 2, 5, 1, 6)),
    ({"successThreshold": 3}, READINESS, (0, 10, 1, 3, 3)),
    ({"successThreshold": 3}, LIVENESS, (0, 10, 1, 1, 3)),  # must be 1 for liveness and startup
    ({"initialDelaySeconds": -5, "periodSeconds": 0, "timeoutSeconds": -1, "successThreshold": -2,
      "failureThreshold": "three"}, READINESS, (0, 10, 1, 1, 3)),
], ids=["unset values take kube's defaults", "set values are kept", "readiness may need several successes",
        "liveness always takes one success", "invalid values read as the defaults"])
def test_probe_settings(probe: dict[str, Any], kind: str, expected: tuple[int, ...]) -> None:
    spec = ProbeSpec.from_api(probe, kind)
    assert (spec.initial_delay, spec.period, spec.timeout, spec.success_threshold,
            spec.failure_threshold) == expected


# -- timing and thresholds ----------------------------------------------------------------------------------

async def test_probes_start_after_the_initial_delay_then_run_every_period(harness: Harness) -> None:
    probe = exec_probe("ready", initialDelaySeconds=5, periodSeconds=10, timeoutSeconds=3)
    harness.sync(make_pod({"name": "main", "readinessProbe": probe}), harness.container())
    await harness.advance(26)
    assert harness.runtime.times("ready") == [5, 15, 25]
    assert {timeout for *_, timeout in harness.runtime.calls} == {3}


async def test_readiness_is_false_until_the_first_success_and_absent_without_a_probe(harness: Harness) -> None:
    pod = make_pod({"name": "main", "readinessProbe": exec_probe("ready", initialDelaySeconds=3)},
                   {"name": "sidecar"})
    harness.sync(pod, harness.container(), harness.container("sidecar", "c2"))
    await harness.advance(2)
    assert harness.probes.ready(UID) == {"main": False}
    assert harness.changes == []
    await harness.advance(1)
    assert harness.probes.ready(UID) == {"main": True}
    assert harness.changes == [UID]


async def test_readiness_needs_success_threshold_successes_and_failure_threshold_failures(
        harness: Harness) -> None:
    harness.runtime.exit_codes["ready"] = [0, 0, 1, 1, 0, 0]
    probe = exec_probe("ready", periodSeconds=1, successThreshold=2, failureThreshold=2)
    harness.sync(make_pod({"name": "main", "readinessProbe": probe}), harness.container())
    seen = []
    for _ in range(6):
        await harness.advance(0)
        seen.append(harness.probes.ready(UID)["main"])
        await harness.advance(1)
    # probes at 0 s (success), 1 s (a second success: ready), 2 s (failure), 3 s (a second failure: unready),
    # 4 s (success), 5 s (ready again)
    assert seen == [False, True, True, False, False, True]
    assert harness.changes == [UID] * 3


async def test_liveness_fails_after_failure_threshold_failures_in_a_row(harness: Harness) -> None:
    harness.runtime.exit_codes["alive"] = [1, 1, 0, 1, 1, 1]
    harness.runtime.output = b"cat: can't open '/tmp/healthy': No such file or directory\n"
    probe = exec_probe("alive", periodSeconds=1)
    harness.sync(make_pod({"name": "main", "livenessProbe": probe}), harness.container())
    await harness.advance(4)
    assert not harness.probes.liveness_failed(UID, "main")  # the success at 2 s reset the count
    await harness.advance(1)
    assert harness.probes.liveness_failed(UID, "main")
    assert harness.probes.failed_probe(UID, "main") == "liveness"
    assert harness.changes == [UID]
    assert harness.messages() == ["Liveness probe failed: cat: can't open '/tmp/healthy': No such file or "
                                  "directory\n"] * 5
    assert harness.events[0][0] == "Warning" and harness.events[0][3] == "main"
    await harness.advance(5)
    assert len(harness.runtime.calls) == 6  # the worker stops: the container is to be restarted


async def test_a_restarted_container_starts_over_with_fresh_results(harness: Harness) -> None:
    harness.runtime.exit_codes["alive"] = [1]
    pod = make_pod({"name": "main", "livenessProbe": exec_probe("alive", periodSeconds=1, failureThreshold=1),
                    "readinessProbe": exec_probe("ready", periodSeconds=1)})
    harness.sync(pod, harness.container(id="c1"))
    await harness.advance(1)
    assert harness.probes.liveness_failed(UID, "main") and harness.probes.ready(UID) == {"main": True}
    harness.runtime.exit_codes["alive"] = [0]
    harness.sync(pod, harness.container(id="c2"), harness.container(id="c1", running=False))
    assert not harness.probes.liveness_failed(UID, "main")
    assert harness.probes.ready(UID) == {"main": False}
    await harness.advance(1)
    assert harness.probes.ready(UID) == {"main": True}
    assert {container for _, container, _, _ in harness.runtime.calls[-2:]} == {"c2"}


async def test_a_stopped_container_is_no_longer_probed(harness: Harness) -> None:
    pod = make_pod({"name": "main", "readinessProbe": exec_probe("ready", periodSeconds=1)})
    harness.sync(pod, harness.container())
    await harness.advance(1)
    harness.sync(pod, harness.container(running=False))
    calls = len(harness.runtime.calls)
    await harness.advance(3)
    assert len(harness.runtime.calls) == calls
    assert harness.probes.ready(UID) == {"main": False}


# -- startup probes -----------------------------------------------------------------------------------------

async def test_a_startup_probe_holds_liveness_and_readiness_until_it_succeeds(harness: Harness) -> None:
    harness.runtime.exit_codes["started"] = [1, 1, 0]
    pod = make_pod({"name": "main", "startupProbe": exec_probe("started", periodSeconds=1, failureThreshold=5),
                    "livenessProbe": exec_probe("alive", periodSeconds=10),
                    "readinessProbe": exec_probe("ready", periodSeconds=10)})
    harness.sync(pod, harness.container())
    await harness.advance(1.5)
    assert harness.probes.started(UID) == {"main": False}
    assert harness.probes.ready(UID) == {"main": False}
    assert harness.runtime.times("alive") == harness.runtime.times("ready") == []
    await harness.advance(1)
    assert harness.probes.started(UID) == {"main": True}
    # The startup success at 2 s wakes the others at once, instead of at their next period.
    assert harness.runtime.times("alive") == harness.runtime.times("ready") == [2]
    assert harness.probes.ready(UID) == {"main": True}
    await harness.advance(10)
    assert harness.runtime.times("started") == [0, 1, 2]  # not probed again once started
    assert harness.runtime.times("ready") == [2, 12]


async def test_a_failed_startup_probe_asks_for_a_restart(harness: Harness) -> None:
    harness.runtime.exit_codes["started"] = [1]
    pod = make_pod({"name": "main", "startupProbe": exec_probe("started", periodSeconds=1, failureThreshold=2),
                    "livenessProbe": exec_probe("alive", periodSeconds=1)})
    harness.sync(pod, harness.container())
    await harness.advance(1)
    assert harness.probes.failed_probe(UID, "main") == "startup"
    assert harness.probes.liveness_failed(UID, "main")
    assert harness.probes.started(UID) == {"main": False}
    assert harness.messages() == ["Startup probe failed: "] * 2
    assert harness.runtime.times("alive") == []


# -- pods ending --------------------------------------------------------------------------------------------

async def test_a_pod_being_deleted_is_not_restarted_for_failing_liveness(harness: Harness) -> None:
    harness.runtime.exit_codes["alive"] = [1]
    pod = make_pod({"name": "main", "livenessProbe": exec_probe("alive", periodSeconds=1, failureThreshold=2)})
    harness.sync(pod, harness.container())
    await harness.advance(0)
    harness.sync(pod | {"metadata": pod["metadata"] | {"deletionTimestamp": "2024-01-01T00:00:00Z"}},
                 harness.container())
    await harness.advance(3)
    assert len(harness.runtime.calls) == 1
    assert not harness.probes.liveness_failed(UID, "main")


async def test_finished_and_removed_pods_have_no_workers(harness: Harness) -> None:
    pod = make_pod({"name": "main", "readinessProbe": exec_probe("ready", periodSeconds=1)})
    harness.sync(pod, harness.container())
    await harness.advance(0)
    harness.sync(pod | {"status": {"phase": "Succeeded"}}, harness.container())
    assert harness.probes.ready(UID) == {}
    harness.sync(pod, harness.container(id="c2"))
    harness.probes.remove_pod(UID)
    await harness.advance(3)
    assert [container for _, container, _, _ in harness.runtime.calls] == ["c1"]
    await harness.probes.stop()
    assert not harness.probes._tasks


# -- probes that cannot run ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("probe", "container", "why"), [
    ({"periodSeconds": 1}, {}, f"missing probe handler for web_default({UID}):main"),
    ({"grpc": {"port": 9000}}, {}, "grpc probes are not supported by mkpy"),
    ({"tcpSocket": {"port": "web"}}, {"ports": [{"name": "metrics", "containerPort": 9090}]},
     'strconv.Atoi: parsing "web": invalid syntax'),
    ({"httpGet": {"path": "/", "port": 70000}}, {}, "invalid port number: 70000"),
], ids=["no handler", "grpc", "a port name the container does not declare", "a port out of range"])
async def test_a_probe_that_cannot_run_errors_without_counting(harness: Harness, probe: dict[str, Any],
                                                               container: dict[str, Any], why: str) -> None:
    probe = probe | {"periodSeconds": 1, "failureThreshold": 1}
    harness.sync(make_pod({"name": "main", "livenessProbe": probe, "readinessProbe": probe, **container}),
                 harness.container())
    await harness.advance(2)
    assert not harness.probes.liveness_failed(UID, "main")
    assert harness.probes.ready(UID) == {"main": False}
    assert set(harness.messages()) == {f"Liveness probe errored and resulted in unknown state: {why}",
                                       f"Readiness probe errored and resulted in unknown state: {why}"}
    assert len(harness.messages()) == 6  # every period, for both probes


async def test_a_probe_the_http_client_refuses_errors_and_the_worker_goes_on(harness: Harness) -> None:
    probe = {"httpGet": {"host": "[::1", "port": 80}, "periodSeconds": 1}
    harness.sync(make_pod({"name": "main", "readinessProbe": probe}), harness.container())
    await until(lambda: harness.messages())
    harness.clock.advance(1)
    await until(lambda: len(harness.messages()) == 2)
    assert harness.messages()[0].startswith("Readiness probe errored and resulted in unknown state: Invalid port")
    assert harness.probes.ready(UID) == {"main": False}


# -- httpGet and tcpSocket against local servers ------------------------------------------------------------

class HTTPServer:
    """Answers every request with `status`, recording each request's path and headers."""

    def __init__(self) -> None:
        self.status = 200
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
        headers = dict(line.split(": ", 1) for line in head[1:] if line)
        self.requests.append((head[0].split()[1], headers))
        writer.write(f"HTTP/1.1 {self.status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".encode())
        await writer.drain()
        writer.close()


@pytest.fixture()
async def http_server() -> AsyncIterator[HTTPServer]:
    server = HTTPServer()
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    yield server
    listener.close()
    await listener.wait_closed()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_http_get_probes_the_pod_ip_on_a_named_port(harness: Harness, http_server: HTTPServer) -> None:
    probe = {"httpGet": {"path": "/healthz", "port": "http", "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
             "periodSeconds": 1, "failureThreshold": 1}
    harness.sync(make_pod({"name": "main", "readinessProbe": probe,
                           "ports": [{"name": "http", "containerPort": http_server.port}]}), harness.container())
    await until(lambda: harness.probes.ready(UID) == {"main": True})
    path, headers = http_server.requests[0]
    assert path == "/healthz" and headers["X-Probe"] == "1" and headers["User-Agent"].startswith("kube-probe/")
    http_server.status = 500
    harness.clock.advance(1)
    await until(lambda: harness.probes.ready(UID) == {"main": False})
    assert harness.messages() == ["Readiness probe failed: HTTP probe failed with statuscode: 500"]


async def test_http_get_to_a_closed_port_fails(harness: Harness) -> None:
    port = closed_port()
    probe = {"httpGet": {"path": "/healthz", "port": port}, "failureThreshold": 1}
    harness.sync(make_pod({"name": "main", "livenessProbe": probe}), harness.container())
    await until(lambda: harness.probes.liveness_failed(UID, "main"))
    [message] = harness.messages()
    assert message.startswith(f'Liveness probe failed: Get "http://127.0.0.1:{port}/healthz": ')


async def test_tcp_socket_probes_open_and_closed_ports(harness: Harness, http_server: HTTPServer) -> None:
    port = closed_port()
    pod = make_pod({"name": "open", "readinessProbe": {"tcpSocket": {"port": http_server.port}}},
                   {"name": "closed", "livenessProbe": {"tcpSocket": {"port": port}, "failureThreshold": 1}})
    pod["status"]["podIP"] = "127.0.0.1"  # no ready sandbox: the pod's reported IP is probed
    harness.sync(pod, harness.container("open", "c1"), harness.container("closed", "c2"), ip=None)
    await until(lambda: harness.probes.ready(UID) == {"open": True} and harness.probes.liveness_failed(UID, "closed"))
    assert harness.messages() == [f"Liveness probe failed: dial tcp 127.0.0.1:{port}: connect: connection refused"]
    assert not harness.probes.liveness_failed(UID, "open")

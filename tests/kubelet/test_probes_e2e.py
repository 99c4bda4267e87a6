"""Probes on a simulated node: a real apiserver, `mkpy kubelet` and `mkpy fake-cri` processes.

The fake runtime's ExecSync answers every exec probe of a container with the exit code in the pod annotation
`fake.cri.mkpy.dev/exec-exit-code.<container>` (default 0), so an annotation decides whether the container's
exec probes pass. Periods are 1 s to keep the tests short.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import httpx

from minikube_py.api.timestamps import parse_time
from tests.kubelet.nodes import FakeNode, eventually
from tests.kubelet.test_lifecycle import FAKE, container_status, create, events, get, make_pod, wait_phase


def probed(name: str, exit_code: int, **probes: dict[str, Any]) -> dict[str, Any]:
    """A pod whose container `main` has the given probes and whose exec probes exit with `exit_code`."""
    return make_pod(name, containers=[{"name": "main", "image": "busybox", **probes}],
                    annotations={f"{FAKE}exec-exit-code.main": str(exit_code)})


def exec_probe(**settings: Any) -> dict[str, Any]:
    return {"exec": {"command": ["cat", "/tmp/healthy"]}, "periodSeconds": 1, **settings}


def unhealthy(api: httpx.Client, namespace: str, name: str) -> list[str]:
    return [e["message"] for e in events(api, namespace, name) if e["reason"] == "Unhealthy"]


def main_when(api: httpx.Client, namespace: str, name: str, check: Callable[[dict[str, Any]], bool],
              what: str, timeout: float = 20) -> dict[str, Any]:
    """The pod once `check` holds for its container `main`'s status."""
    def ready() -> dict[str, Any] | None:
        pod = get(api, namespace, name)
        statuses = [s for s in pod["status"].get("containerStatuses") or [] if s["name"] == "main"]
        return pod if statuses and check(statuses[0]) else None
    return eventually(ready, timeout, message=f"{what} ({name})")


def conditions(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in pod["status"]["conditions"]}


def test_failing_liveness_probe_restarts_the_container(api: httpx.Client, namespace: str,
                                                       fake_node: FakeNode) -> None:
    create(api, namespace, probed("liveness", 1, livenessProbe=exec_probe(failureThreshold=2)))
    pod = main_when(api, namespace, "liveness", lambda main: main["restartCount"] >= 1, "a restart")
    assert container_status(pod)["lastState"]["terminated"]["containerID"] != container_status(pod)["containerID"]
    assert pod["status"]["phase"] == "Running"
    assert "Liveness probe failed: " in unhealthy(api, namespace, "liveness")
    killing = [e for e in events(api, namespace, "liveness") if e["reason"] == "Killing"]
    assert any(e["message"] == "Container main failed liveness probe, will be restarted" for e in killing)
    assert all(e["involvedObject"]["fieldPath"] == "spec.containers{main}" for e in killing)


def test_readiness_waits_for_the_initial_delay_and_a_passing_probe(api: httpx.Client, namespace: str,
                                                                   fake_node: FakeNode) -> None:
    create(api, namespace, probed("ready", 0, readinessProbe=exec_probe(initialDelaySeconds=3)))
    running = wait_phase(api, namespace, "ready", "Running")
    assert not container_status(running)["ready"]  # not before the first success
    assert conditions(running)["Ready"]["status"] == "False"
    pod = main_when(api, namespace, "ready", lambda main: main["ready"], "the container ready")
    started = parse_time(container_status(pod)["state"]["running"]["startedAt"]).timestamp()
    assert time.time() - started >= 3  # the initial delay (startedAt, truncated to seconds, only adds)
    assert conditions(pod)["Ready"]["status"] == conditions(pod)["ContainersReady"]["status"] == "True"
    assert unhealthy(api, namespace, "ready") == []


def test_failing_readiness_probe_keeps_the_pod_unready_without_restarts(api: httpx.Client, namespace: str,
                                                                        fake_node: FakeNode) -> None:
    create(api, namespace, probed("unready", 1, readinessProbe=exec_probe()))
    wait_phase(api, namespace, "unready", "Running")
    eventually(lambda: len(unhealthy(api, namespace, "unready")) > 0, 15, message="a readiness failure event")
    pod = get(api, namespace, "unready")
    main = container_status(pod)
    assert not main["ready"] and main["started"] and main["restartCount"] == 0
    ready = conditions(pod)["Ready"]
    assert ready["status"] == "False" and ready["reason"] == "ContainersNotReady"
    assert ready["message"] == "containers with unready status: [main]"
    assert unhealthy(api, namespace, "unready")[0] == "Readiness probe failed: "


def test_startup_probe_gates_readiness_until_it_passes(api: httpx.Client, namespace: str,
                                                       fake_node: FakeNode) -> None:
    create(api, namespace, probed("starts", 0, startupProbe=exec_probe(initialDelaySeconds=2),
                                  readinessProbe=exec_probe()))
    running = wait_phase(api, namespace, "starts", "Running")
    assert not container_status(running)["started"] and not container_status(running)["ready"]
    pod = main_when(api, namespace, "starts", lambda main: main["ready"], "the container started and ready")
    assert container_status(pod)["started"]


def test_failing_startup_probe_restarts_the_container(api: httpx.Client, namespace: str,
                                                      fake_node: FakeNode) -> None:
    create(api, namespace, probed("never-starts", 1, startupProbe=exec_probe(failureThreshold=2),
                                  livenessProbe=exec_probe()))
    pod = main_when(api, namespace, "never-starts", lambda main: main["restartCount"] >= 1, "a restart")
    assert not container_status(pod)["ready"]
    messages = unhealthy(api, namespace, "never-starts")
    assert "Startup probe failed: " in messages
    assert not any(m.startswith("Liveness") for m in messages)  # liveness waits for the startup probe


def test_probe_against_a_closed_port_names_it(api: httpx.Client, namespace: str, fake_node: FakeNode) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    probe = {"tcpSocket": {"host": "127.0.0.1", "port": port}, "periodSeconds": 1}
    create(api, namespace, probed("closed", 0, readinessProbe=probe))
    message = eventually(lambda: unhealthy(api, namespace, "closed"), 15, message="a readiness failure event")[0]
    assert message == f"Readiness probe failed: dial tcp 127.0.0.1:{port}: connect: connection refused"
    assert not container_status(get(api, namespace, "closed"))["ready"]

"""What a pod's life looks like on real containerd nodes, driven by the real kubectl and the Python client:
terminals (exec -it, attach), probes, init containers, CrashLoopBackOff timing, port-forward from Python,
and the node's processes failing under running pods (containerd stopped, the kubelet killed, the whole
cluster stopped and started again).

The tests that stop processes work on the second node, "nodes-m02", and come last: each leaves the cluster
healthy again (`mkpy up` restarts what is missing), so later tests in the package find it as it was.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import KubeCluster, Mkpy, wait_until
from tests.e2e.containerd.pods import run_pod, wait_running
from tests.e2e.terminal import Terminal

pytestmark = pytest.mark.e2e

SECOND_NODE = "nodes-m02"


# helpers ----------------------------------------------------------------------------------------------


def get_pod(cluster: KubeCluster, ns: str, name: str) -> dict[str, Any]:
    return dict(cluster.kubectl_json("get", "pod", name, "-n", ns))


def container_status(pod: dict[str, Any], name: str = "main", init: bool = False) -> dict[str, Any]:
    statuses = pod["status"].get("initContainerStatuses" if init else "containerStatuses") or []
    return next((s for s in statuses if s["name"] == name), {})


def condition(pod: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == kind), {})


def events(cluster: KubeCluster, ns: str, name: str) -> list[tuple[str, str]]:
    """(reason, message) of the events about object `name`, oldest first."""
    items = cluster.kubectl_json("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}")
    return [(e["reason"], e["message"]) for e in items["items"]]


def wait_event(cluster: KubeCluster, ns: str, name: str, reason: str, timeout: float = 20) -> str:
    """The message of the first event with that reason about `name`, once there is one."""
    return str(wait_until(lambda: next((m for r, m in events(cluster, ns, name) if r == reason), None),
                          f"a {reason} event about {name}", timeout=timeout))


def status_column(cluster: KubeCluster, ns: str, name: str) -> str:
    """The STATUS column of `kubectl get pod` (kubectl computes it from the pod's status)."""
    return str(cluster.kubectl("get", "pod", name, "-n", ns, "--no-headers").stdout.split()[2])


def seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def crictl_rows(cluster: KubeCluster, node: str, *args: str) -> list[list[str]]:
    """The rows of `mkpy crictl --node NODE ARGS...`, split into words, header left out (the CREATED column
    has spaces: count the columns after it from the end)."""
    out = cluster.mkpy("crictl", "--name", cluster.name, "--node", node, *args).stdout
    return [line.split() for line in out.splitlines()[1:]]


def component_pid(cluster: KubeCluster, component: str) -> int:
    return int((cluster.dir / "run" / f"{component}.pid").read_text())


class LogFile:
    """The lines a component appends to its log file from now on (`mkpy logs` shows the same file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._start = path.stat().st_size

    def search(self, pattern: str) -> re.Match[str] | None:
        with self.path.open("rb") as log:
            log.seek(self._start)
            return re.search(pattern, log.read().decode(errors="replace"))

    def wait_for(self, pattern: str, what: str, timeout: float = 20) -> re.Match[str]:
        """The first match of `pattern` in the new lines, polled every 2 ms, so that a test can act on what the
        component just did before it goes on."""
        return wait_until(lambda: self.search(pattern), what, timeout=timeout, interval=0.002)  # type: ignore[no-any-return]


def node_ready(cluster: KubeCluster, node: str) -> dict[str, Any]:
    conditions = cluster.kubectl_json("get", "node", node)["status"]["conditions"]
    return next(c for c in conditions if c["type"] == "Ready")


# terminals --------------------------------------------------------------------------------------------


def test_exec_with_a_tty_gets_the_terminals_size_and_the_exit_code(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "shell", "sleep 3600")
    wait_running(nodes_cluster, ns, "shell")
    argv = nodes_cluster.kubectl_argv("exec", "-it", "shell", "-n", ns, "--", "sh")
    with Terminal(argv, nodes_cluster.env, rows=33, cols=111) as terminal:
        terminal.expect("# ")
        terminal.type("stty size; tty; exit 7\r")
        code = terminal.wait()
    lines = [line.strip() for line in terminal.output.splitlines()]
    assert "33 111" in lines and "/dev/pts/0" in lines, terminal.output
    assert code == 7, terminal.output


def test_attach_to_a_container_reading_its_stdin(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "reader", 'while read line; do echo "got $line"; done; echo "stdin closed"',
            restartPolicy="Never", container={"stdin": True, "stdinOnce": True})
    wait_running(nodes_cluster, ns, "reader")
    attached = nodes_cluster.kubectl("attach", "-i", "reader", "-n", ns, input="hello\nagain\n", timeout=30)
    assert attached.stdout == "got hello\ngot again\nstdin closed\n", attached.describe()
    # stdinOnce: the container's stdin closed with the first attach's, so the loop ended
    ended = wait_until(lambda: container_status(get_pod(nodes_cluster, ns, "reader"))["state"].get("terminated"),
                       "the container to end")
    assert ended["exitCode"] == 0


# probes -----------------------------------------------------------------------------------------------


def test_a_failing_liveness_probe_restarts_the_container(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "alive", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; sleep 3600",
            container={"livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]},
                                         "periodSeconds": 1, "failureThreshold": 2}})
    wait_until(lambda: container_status(get_pod(nodes_cluster, ns, "alive")).get("restartCount", 0) >= 1,
               "a restart for the failed liveness probe", timeout=30)
    unhealthy = wait_event(nodes_cluster, ns, "alive", "Unhealthy")
    assert unhealthy.startswith("Liveness probe failed: cat: can't open '/tmp/healthy': No such file"), unhealthy
    killing = [m for r, m in events(nodes_cluster, ns, "alive") if r == "Killing"]
    assert "Container main failed liveness probe, will be restarted" in killing


def test_a_readiness_probe_flips_the_ready_condition(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "flips", "touch /tmp/ready; sleep 3600",
            container={"readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1}})

    def ready_is(wanted: str) -> bool:
        pod = get_pod(nodes_cluster, ns, "flips")
        return condition(pod, "Ready").get("status") == wanted

    wait_until(lambda: ready_is("True"), "the pod to become Ready", timeout=30)
    nodes_cluster.kubectl("exec", "flips", "-n", ns, "--", "rm", "/tmp/ready")
    wait_until(lambda: ready_is("False"), "the pod to become not Ready")
    ready = condition(get_pod(nodes_cluster, ns, "flips"), "Ready")
    assert ready["reason"] == "ContainersNotReady" and ready["message"] == "containers with unready status: [main]"
    nodes_cluster.kubectl("exec", "flips", "-n", ns, "--", "touch", "/tmp/ready")
    wait_until(lambda: ready_is("True"), "the pod to become Ready again")
    pod = get_pod(nodes_cluster, ns, "flips")
    assert container_status(pod)["restartCount"] == 0


def test_probes_against_closed_ports_are_reported(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "closed", "sleep 3600",
            container={"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8081}, "periodSeconds": 1},
                       "livenessProbe": {"tcpSocket": {"port": 8082}, "periodSeconds": 1,
                                         "failureThreshold": 100}})
    ip = wait_running(nodes_cluster, ns, "closed")["status"]["podIP"]
    expected = {f'Readiness probe failed: Get "http://{ip}:8081/healthz": dial tcp {ip}:8081: connect: connection refused',
                f"Liveness probe failed: dial tcp {ip}:8082: connect: connection refused"}
    wait_until(lambda: expected <= {m for r, m in events(nodes_cluster, ns, "closed") if r == "Unhealthy"},
               f"the Unhealthy events {expected}")
    pod = get_pod(nodes_cluster, ns, "closed")
    assert condition(pod, "Ready")["status"] == "False"
    assert container_status(pod)["restartCount"] == 0


# init containers --------------------------------------------------------------------------------------


def _init(name: str, script: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sh", "-c", script], **fields}


def test_init_containers_run_in_order_before_the_app(nodes_cluster: KubeCluster, ns: str) -> None:
    mount = {"volumeMounts": [{"name": "work", "mountPath": "/work"}]}
    run_pod(nodes_cluster, ns, "ordered", "echo app >> /work/order; sleep 3600",
            volumes=[{"name": "work", "emptyDir": {}}], container=mount,
            initContainers=[_init("init1", "echo init1 >> /work/order", **mount),
                            _init("init2", "sleep 1; echo init2 >> /work/order", **mount)])
    pod = wait_running(nodes_cluster, ns, "ordered", timeout=40)
    order = nodes_cluster.kubectl("exec", "ordered", "-n", ns, "--", "cat", "/work/order").stdout
    assert order == "init1\ninit2\napp\n"
    for name in ("init1", "init2"):
        terminated = container_status(pod, name, init=True)["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert condition(pod, "Initialized")["status"] == "True"


def test_a_failing_init_container_keeps_the_app_from_starting(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "blocked", "sleep 3600", node=SECOND_NODE,
            initContainers=[_init("setup", "echo failing; exit 3")])
    seen: set[str] = set()

    def crash_looping() -> bool:
        seen.add(status_column(nodes_cluster, ns, "blocked"))
        return "Init:CrashLoopBackOff" in seen

    wait_until(crash_looping, "STATUS Init:CrashLoopBackOff", timeout=30)
    assert seen <= {"Pending", "Init:0/1", "Init:Error", "Init:CrashLoopBackOff"}, seen
    pod = get_pod(nodes_cluster, ns, "blocked")
    assert pod["status"]["phase"] == "Pending"
    setup = container_status(pod, "setup", init=True)
    assert setup["restartCount"] >= 1 and setup["lastState"]["terminated"]["exitCode"] == 3
    assert container_status(pod)["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert condition(pod, "Initialized")["message"] == "containers with incomplete status: [setup]"
    containers = [row[-4] for row in crictl_rows(nodes_cluster, SECOND_NODE, "ps", "-a") if row[-1] == "blocked"]
    assert containers and set(containers) == {"setup"}, containers


# CrashLoopBackOff ---------------------------------------------------------------------------------------


def test_crash_loop_back_off_doubles_the_wait_between_restarts(nodes_cluster: KubeCluster, ns: str) -> None:
    """kube's timing: the first restart at once, then 10 s after the next exit, then 20 s."""
    run_pod(nodes_cluster, ns, "crashy", "exit 1")
    runs: dict[int, tuple[float, float]] = {}  # restart number -> (started, finished), from the pod's status
    messages: set[str] = set()

    def third_restart_ended() -> bool:
        status = container_status(get_pod(nodes_cluster, ns, "crashy"))
        restarts, state, last = status.get("restartCount", 0), status.get("state") or {}, status.get("lastState") or {}
        # waiting to restart, lastState is the latest run; otherwise it is the one before
        ended = {restarts: last} if "waiting" in state else {restarts: state, restarts - 1: last}
        for number, run in ended.items():
            if run.get("terminated"):
                runs[number] = (seconds(run["terminated"]["startedAt"]), seconds(run["terminated"]["finishedAt"]))
        if (state.get("waiting") or {}).get("reason") == "CrashLoopBackOff":
            messages.add(state["waiting"]["message"])
        return 3 in runs

    wait_until(third_restart_ended, "the third restart to run and end", timeout=50, interval=0.3)
    uid = get_pod(nodes_cluster, ns, "crashy")["metadata"]["uid"]
    assert f"back-off 10s restarting failed container=main pod=crashy_{ns}({uid})" in messages, messages
    assert f"back-off 20s restarting failed container=main pod=crashy_{ns}({uid})" in messages, messages
    first_wait, second_wait = runs[2][0] - runs[1][1], runs[3][0] - runs[2][1]
    assert 8 <= first_wait <= 16, runs
    assert second_wait >= 1.5 * first_wait and second_wait <= 30, runs
    reasons = [r for r, _ in events(nodes_cluster, ns, "crashy")]
    assert "BackOff" in reasons


# port-forward from Python ---------------------------------------------------------------------------------


def test_python_client_port_forward_to_busybox_httpd(nodes_cluster: KubeCluster, ns: str) -> None:
    from kubernetes import client
    from kubernetes.stream import portforward

    run_pod(nodes_cluster, ns, "pyweb", "mkdir -p /www && echo hello-python > /www/index.html && "
                                        "httpd -f -p 8080 -h /www")
    wait_running(nodes_cluster, ns, "pyweb")
    api = nodes_cluster.api_client()
    try:
        core = client.CoreV1Api(api)
        forward = portforward(core.connect_get_namespaced_pod_portforward, "pyweb", ns, ports="8080")
        sock = forward.socket(8080)
        sock.settimeout(10)
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        received = b""
        with contextlib.suppress(socket.timeout):
            while data := sock.recv(4096):
                received += data
        sock.close()
        assert forward.error(8080) is None
    finally:
        api.close()
    assert received.startswith(b"HTTP/1.1 200 OK") and received.endswith(b"\r\n\r\nhello-python\n"), received


# the node's processes failing --------------------------------------------------------------------------------


def test_a_kubelet_killed_while_a_pod_starts_finishes_it_without_duplicates(nodes_cluster: KubeCluster,
                                                                           ns: str) -> None:
    """The kubelet is frozen the moment containerd has created the app container, then killed: whether or
    not its StartContainer got out first, the kubelet started again finishes the pod with one sandbox, one
    container of each name, and the init container not run again."""
    containerd_log = LogFile(nodes_cluster.dir / "logs" / f"containerd-{SECOND_NODE}.log")
    run_pod(nodes_cluster, ns, "interrupted", "sleep 3600", node=SECOND_NODE,
            initContainers=[_init("prepare", "true")])
    sandbox = containerd_log.wait_for(rf"RunPodSandbox for &PodSandboxMetadata{{Name:interrupted,[^}}]*"
                                      rf'Namespace:{ns},[^}}]*}} returns sandbox id \\"(\w+)', "the sandbox")
    created = containerd_log.wait_for(rf'CreateContainer within sandbox \\"{sandbox[1]}\\" for '
                                      rf'&ContainerMetadata{{Name:main,[^}}]*}} returns container id \\"(\w+)',
                                      "the app container created")
    kubelet = component_pid(nodes_cluster, f"kubelet-{SECOND_NODE}")
    os.kill(kubelet, signal.SIGSTOP)
    # a StartContainer already on its way is let through, so that killing the kubelet does not cancel it
    with contextlib.suppress(AssertionError):
        containerd_log.wait_for(rf'StartContainer for \\"{created[1]}\\" returns', "a start on its way", timeout=1)
    os.kill(kubelet, signal.SIGKILL)
    nodes_cluster.mkpy("up", "--name", nodes_cluster.name)  # starts the kubelet again, as after a crash
    wait_until(lambda: container_status(get_pod(nodes_cluster, ns, "interrupted"))["state"].get("running"),
               "the app container running", timeout=30)
    pod = get_pod(nodes_cluster, ns, "interrupted")
    assert container_status(pod, "prepare", init=True)["restartCount"] == 0
    sandboxes = [row for row in crictl_rows(nodes_cluster, SECOND_NODE, "pods", "--namespace", f"^{ns}$")
                 if row[-4] == "interrupted"]
    assert len(sandboxes) == 1, sandboxes
    containers = sorted(row[-4] for row in crictl_rows(nodes_cluster, SECOND_NODE, "ps", "-a")
                        if row[-1] == "interrupted")
    assert containers == ["main", "prepare"]


def test_containerd_stopped_under_running_pods(nodes_cluster: KubeCluster, ns: str) -> None:
    """The node goes NotReady while its runtime is down; its containers keep running under their shims, and
    once containerd is back (`mkpy up` starts what is missing) the kubelet adopts them unchanged."""
    run_pod(nodes_cluster, ns, "survivor", "sleep 3600", node=SECOND_NODE)
    before = container_status(wait_running(nodes_cluster, ns, "survivor"))
    os.kill(component_pid(nodes_cluster, f"containerd-{SECOND_NODE}"), signal.SIGKILL)
    try:
        down = wait_until(lambda: (c := node_ready(nodes_cluster, SECOND_NODE))["status"] == "False" and c,
                          "the node to go NotReady", timeout=30)
        assert down["reason"] == "KubeletNotReady" and down["message"].startswith("container runtime is down"), down
        assert wait_event(nodes_cluster, "default", SECOND_NODE, "NodeNotReady") == \
            f"Node {SECOND_NODE} status is now: NodeNotReady"
    finally:
        nodes_cluster.mkpy("up", "--name", nodes_cluster.name)
    assert node_ready(nodes_cluster, SECOND_NODE)["status"] == "True"
    assert wait_event(nodes_cluster, "default", SECOND_NODE, "NodeReady") == \
        f"Node {SECOND_NODE} status is now: NodeReady"
    after = container_status(get_pod(nodes_cluster, ns, "survivor"))
    assert after["containerID"] == before["containerID"] and after["restartCount"] == 0, (before, after)
    assert "running" in after["state"]
    out = nodes_cluster.kubectl("exec", "survivor", "-n", ns, "--", "echo", "still here").stdout
    assert out == "still here\n"


def test_a_cluster_stopped_and_started_again_runs_its_pods_again(mkpy: Mkpy) -> None:
    """`mkpy down` switches the node off: its pods' sandboxes are stopped and removed (docs/kubelet.md). The
    next `mkpy up` runs the same pod again in a new sandbox, as a kubelet does after a reboot."""
    cluster = mkpy.up("restart", "--nodes", "1")
    try:
        run_pod(cluster, "default", "keeper", "sleep 3600")
        before = wait_running(cluster, "default", "keeper")
        mkpy("down", "--name", "restart")
        mkpy("up", "--name", "restart")

        def running_again() -> dict[str, Any] | None:
            pod = get_pod(cluster, "default", "keeper")
            status = container_status(pod)
            return pod if status.get("containerID") != container_status(before)["containerID"] and \
                "running" in status["state"] else None

        after = wait_until(running_again, "the pod running in a new container", timeout=30)
        sandboxes = [row for row in crictl_rows(cluster, "restart", "pods") if row[-4] == "keeper"]
    finally:
        mkpy.delete("restart")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert container_status(after)["restartCount"] == 0 and after["status"]["phase"] == "Running"
    assert len(sandboxes) == 1, sandboxes

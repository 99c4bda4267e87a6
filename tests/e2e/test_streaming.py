"""logs, exec, attach and port-forward end to end: the real kubectl and the Python client → a real apiserver →
a kubelet server (minikube_py/kubelet/server.py, over TLS, authorizing through the apiserver) → a stand-in
runtime streaming server whose "containers" are local processes (tests/streaming/localruntime.py).

The kubelet runs in this process with a test NodeBackend; its Node object points at it. Every protocol a
client can pick is driven: WebSocket v5 (kubectl's default), kubectl's SPDY fallback, SPDY inside a WebSocket
and raw SPDY for port-forward, the Python client's v4 channels. Then the failures users meet: a container
that is not in the pod, a pod without a node, a kubelet that is down, a user without pods/exec.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from minikube_py.auth import pki
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.kubelet.server import ContainerRef, KubeletServer, uvicorn_config
from minikube_py.store.etcd_server import free_port
from minikube_py.streaming.channels import TerminalSize
from tests.e2e.conftest import Background, Result, run, wait_until
from tests.e2e.terminal import run_in_terminal
from tests.harness import ControlPlane
from tests.kubelet.server.backend import ServerThread, write_log
from tests.streaming.localruntime import LocalRuntime, RuntimeStub

pytestmark = pytest.mark.e2e

NODE = "node-1"
PAGE = b"hello from the pod's web server\n"


class Node:
    """The test NodeBackend: pods `web` (container app, running, restarted once) and `other` on this node."""

    def __init__(self, runtime: LocalRuntime, log_dir: Path, namespace: str) -> None:
        self.runtime = RuntimeStub(runtime)
        self.log_dir = log_dir
        self.namespace = namespace
        self.running = True
        write_log(log_dir / "0.log", [("stdout", b"old life")])
        write_log(log_dir / "1.log", [("stdout", b"one"), ("stderr", b"two"), ("stdout", b"three")])

    def pods(self) -> list[dict[str, Any]]:
        return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": self.namespace}}]

    def find_container(self, namespace: str, pod: str, container: str) -> ContainerRef:
        if (namespace, pod, container) != (self.namespace, "web", "app"):
            raise LookupError(f'container "{container}" in pod "{pod}" not found')
        return ContainerRef("cid-app", str(self.log_dir / "1.log"), self.running, str(self.log_dir / "0.log"))

    def sandbox_id(self, namespace: str, pod: str) -> str:
        self.find_container(namespace, pod, "app")
        return "sandbox-web"

    async def stats_summary(self) -> dict[str, Any]:
        return {"node": {"nodeName": NODE}, "pods": []}


@dataclass
class World:
    cp: ControlPlane
    runtime: LocalRuntime
    node: Node
    namespace: str
    page_port: int
    env: dict[str, str]

    def kubectl(self, *args: str, kubeconfig: Path | None = None, **kwargs: Any) -> Result:
        argv = ["kubectl", f"--kubeconfig={kubeconfig or self.cp.kubeconfig}", "-n", self.namespace, *args]
        return run(argv, env=kwargs.pop("env", self.env), **kwargs)

    def kubectl_background(self, *args: str, env: dict[str, str] | None = None) -> Background:
        return Background(["kubectl", f"--kubeconfig={self.cp.kubeconfig}", "-n", self.namespace, *args],
                          env=env or self.env)


def _pod(name: str, node: str = "", phase: str = "Running") -> tuple[dict[str, Any], str]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}, phase


def _node(name: str, port: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                     {"type": "Hostname", "address": name}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}


@pytest.fixture(scope="module")
def page_port() -> Iterator[int]:
    """An HTTP server "in the pod" (the runtime forwards to 127.0.0.1)."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def world(kubectl_on_path: str, page_port: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    cp = ControlPlane()
    pki_dir = cp.workdir / "pki"
    ca = pki.ensure_ca(pki_dir)
    client_pair = pki.ensure_client_cert(pki_dir, ca, "apiserver-kubelet-client", user="kube-apiserver-kubelet-client")
    cp.extra_args = (f"--kubelet-client-certificate={client_pair.cert_path}",
                     f"--kubelet-client-key={client_pair.key_path}", f"--kubelet-certificate-authority={ca.cert_path}")
    cp.start()
    runtime = LocalRuntime().start()
    namespace = "streaming"
    node = Node(runtime, tmp_path_factory.mktemp("logs"), namespace)
    serving = pki.ensure_serving_cert(pki_dir, ca, "kubelet-serving", common_name=NODE,
                                      ip_addresses=[ipaddress.ip_address("127.0.0.1")], dns_names=[NODE])
    api = RESTClient(load_kubeconfig(cp.component_kubeconfig("kubelet", f"system:node:{NODE}", ("system:nodes",))))
    server = KubeletServer(node, NODE, api)
    kubelet = ServerThread(lambda port: uvicorn_config(server, host="127.0.0.1", port=port,
                                                       cert_file=str(serving.cert_path),
                                                       key_file=str(serving.key_path),
                                                       client_ca_file=str(ca.cert_path))).start()
    with cp.client() as c:
        for name, port in ((NODE, kubelet.port), ("node-down", free_port())):
            assert c.post("/api/v1/nodes", json=_node(name, port)).status_code == 201
            assert c.put(f"/api/v1/nodes/{name}/status", json=c.get(f"/api/v1/nodes/{name}").json()
                         | {"status": _node(name, port)["status"]}).status_code == 200
        c.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for pod, phase in (_pod("web", NODE), _pod("nonode"), _pod("done", NODE, "Succeeded"),
                           _pod("stranded", "node-down")):
            created = c.post(f"/api/v1/namespaces/{namespace}/pods", json=pod)
            assert created.status_code == 201, created.text
            name = pod["metadata"]["name"]
            body = created.json() | {"status": {"phase": phase}}
            assert c.put(f"/api/v1/namespaces/{namespace}/pods/{name}/status", json=body).status_code == 200
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    yield World(cp, runtime, node, namespace, page_port, env)
    kubelet.stop()
    runtime.stop()
    cp.stop()


# exec -------------------------------------------------------------------------------------------------


def test_exec_prints_both_streams_and_exits_with_the_commands_code(world: World) -> None:
    result = world.kubectl("exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3", check=False)
    assert result.returncode == 3, result.describe()
    assert result.stdout == "out\n" and "err\n" in result.stderr


def test_exec_with_stdin_ends_when_stdin_does(world: World) -> None:
    result = world.kubectl("exec", "-i", "web", "--", "cat", input="hi\nthere\n", timeout=20)
    assert result.stdout == "hi\nthere\n"


def test_exec_over_the_spdy_fallback(world: World) -> None:
    env = world.env | {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
    result = world.kubectl("exec", "-i", "web", "--", "sh", "-c", "cat; exit 7", input="via spdy\n", env=env,
                           check=False, timeout=20)
    assert result.returncode == 7, result.describe()
    assert result.stdout == "via spdy\n"


def test_exec_with_a_tty_gets_the_terminals_size(world: World) -> None:
    argv = ["kubectl", f"--kubeconfig={world.cp.kubeconfig}", "-n", world.namespace, "exec", "-it", "web", "--",
            "sh", "-c", "sleep 0.5; stty size"]
    output = run_in_terminal(argv, world.env, rows=33, cols=111)
    assert "33 111" in output, output
    assert TerminalSize(111, 33) in world.runtime.resizes


def test_attach_reaches_the_containers_process(world: World) -> None:
    result = world.kubectl("attach", "-i", "web", "-c", "app", input="typed\n", timeout=20)
    assert "attached\ntyped\n" in result.stdout, result.describe()


# logs -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flags, expected", [
    ((), "one\ntwo\nthree\n"),
    (("--tail=1",), "three\n"),
    (("--tail=1", "--timestamps"), "2024-01-02T03:04:07.000000000Z three\n"),
    (("--previous",), "old life\n"),
    (("--limit-bytes=6",), "one\ntw"),
])
def test_logs(world: World, flags: tuple[str, ...], expected: str) -> None:
    assert world.kubectl("logs", "web", *flags).stdout == expected


def test_logs_follow_until_the_container_stops(world: World) -> None:
    log = world.node.log_dir / "1.log"
    with world.kubectl_background("logs", "-f", "web", "--tail=1") as follow:
        follow.wait_for("three")
        write_log(log, [("stdout", b"four")])
        follow.wait_for("four")
        world.node.running = False
        try:
            wait_until(lambda: follow.process.poll() is not None, "kubectl logs -f to end")
        finally:
            world.node.running = True
    assert follow.process.returncode == 0


# port-forward -----------------------------------------------------------------------------------------


def forward_and_get(world: World, env: dict[str, str]) -> bytes:
    with world.kubectl_background("port-forward", "pod/web", f":{world.page_port}", env=env) as forward:
        line = forward.wait_for("Forwarding from 127.0.0.1:")
        local = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))  # type: ignore[union-attr]
        pages = [urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=10).read() for _ in range(2)]
    assert pages[0] == pages[1]
    return pages[0]


def test_port_forward_over_spdy_inside_a_websocket(world: World) -> None:
    assert forward_and_get(world, world.env) == PAGE


def test_port_forward_over_raw_spdy(world: World) -> None:
    assert forward_and_get(world, world.env | {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}) == PAGE


# the Python client ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def core(world: World) -> Iterator[Any]:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(world.cp.kubeconfig))
    yield client.CoreV1Api(api)
    api.close()


def test_python_client_exec(world: World, core: Any) -> None:
    from kubernetes.stream import stream

    response = stream(core.connect_get_namespaced_pod_exec, "web", world.namespace,
                      command=["sh", "-c", "echo from python; exit 2"], stderr=True, stdin=False, stdout=True,
                      tty=False, _preload_content=False)
    response.run_forever(timeout=10)
    assert response.read_stdout() == "from python\n"
    assert response.returncode == 2


def test_python_client_port_forward(world: World, core: Any) -> None:
    from kubernetes.stream import portforward

    forward = portforward(core.connect_get_namespaced_pod_portforward, "web", world.namespace,
                          ports=str(world.page_port))
    sock = forward.socket(world.page_port)
    sock.settimeout(10)
    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
    received = b""
    with contextlib.suppress(socket.timeout):
        while PAGE not in received and (data := sock.recv(4096)):
            received += data
    sock.close()
    assert received.startswith(b"HTTP/1.0 200") and received.endswith(PAGE)


# what goes wrong --------------------------------------------------------------------------------------


def test_exec_into_a_container_the_pod_does_not_have(world: World) -> None:
    result = world.kubectl("exec", "web", "-c", "nope", "--", "true", expect_failure=True)
    assert "Error from server (BadRequest): container nope is not valid for pod web" in result.stderr


def test_exec_into_a_pod_without_a_node(world: World) -> None:
    result = world.kubectl("exec", "nonode", "--", "true", expect_failure=True)
    assert "Error from server (BadRequest): pod nonode does not have a host assigned" in result.stderr


def test_exec_and_logs_when_the_kubelet_is_down(world: World) -> None:
    result = world.kubectl("exec", "stranded", "--", "true", expect_failure=True)
    assert "error dialing backend: dial tcp 127.0.0.1:" in result.stderr
    assert "connect: connection refused" in result.stderr
    logs = world.kubectl("logs", "stranded", expect_failure=True)
    assert "/containerLogs/streaming/stranded/app" in logs.stderr and "connection refused" in logs.stderr


def test_exec_into_a_completed_pod_is_refused_by_the_apiserver(world: World) -> None:
    with world.cp.client() as c:
        response = c.post(f"/api/v1/namespaces/{world.namespace}/pods/done/exec?command=ls&stdout=true")
    assert response.status_code == 400
    assert response.json()["message"] == "cannot exec into a container in a completed pod; current phase is Succeeded"


def test_a_user_who_may_read_pods_but_not_exec_is_forbidden(world: World) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "reader"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "eve"}]}
    world.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([role, binding]))
    eve = world.cp.component_kubeconfig("eve", "eve")
    assert wait_until(lambda: world.kubectl("logs", "web", "--tail=1", kubeconfig=eve, check=False).returncode == 0,
                      "eve's Role to take effect")
    result = world.kubectl("exec", "web", "--", "true", kubeconfig=eve, expect_failure=True)
    assert 'User "eve" cannot create resource "pods/exec"' in result.stderr, result.describe()


def test_nodes_proxy_reaches_the_kubelet(world: World) -> None:
    with world.cp.client() as c:
        pods = c.get(f"/api/v1/nodes/{NODE}/proxy/pods")
        summary = c.get(f"/api/v1/nodes/{NODE}/proxy/stats/summary")
    assert pods.status_code == 200 and pods.json()["items"][0]["metadata"]["name"] == "web"
    assert summary.json()["node"]["nodeName"] == NODE


def test_nodes_proxy_with_a_path_is_authorized_as_the_nodes_proxy_subresource(world: World) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "node-proxier"},
            "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "olga-node-proxier"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-proxier"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "olga"}]}
    with world.cp.client() as c:
        assert c.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json=role).status_code == 201
        assert c.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=binding).status_code == 201

    def get(user: str) -> httpx.Response:
        config = load_kubeconfig(world.cp.component_kubeconfig(user, user))
        with httpx.Client(verify=config.ssl_context(), base_url=world.cp.url, timeout=10) as c:
            return c.get(f"/api/v1/nodes/{NODE}/proxy/stats/summary")

    allowed = wait_until(lambda: (r := get("olga")).status_code == 200 and r, "RBAC to see the new binding")
    assert allowed.json()["node"]["nodeName"] == NODE
    refused = get("eve")
    assert refused.status_code == 403
    assert 'cannot get resource "nodes/proxy"' in refused.json()["message"]


def test_the_kubelet_refuses_users_other_than_the_apiserver(world: World) -> None:
    """An admin certificate is allowed by RBAC; a user without nodes/proxy is not."""
    with world.cp.client() as c:
        port = c.get(f"/api/v1/nodes/{NODE}").json()["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]

    def get_pods(kubeconfig: Path) -> int:
        with httpx.Client(verify=load_kubeconfig(kubeconfig).ssl_context(), timeout=10) as c:
            return c.get(f"https://127.0.0.1:{port}/pods").status_code

    assert get_pods(world.cp.kubeconfig) == 200
    assert get_pods(world.cp.component_kubeconfig("eve", "eve")) == 403

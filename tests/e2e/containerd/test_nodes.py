"""Pods on real containerd nodes, driven by the real kubectl (the two-node cluster of conftest.py).

Everything goes the whole way: kubectl → apiserver → scheduler → kubelet → CRI → containerd → runc, and for
logs, exec and port-forward back through the kubelet's API and containerd's streaming server.
"""

from __future__ import annotations

import ipaddress
import time

import pytest
import yaml

from tests.e2e.conftest import KubeCluster, wait_until
from tests.e2e.containerd.pods import free_port, http_get, run_pod, wait_running

pytestmark = pytest.mark.e2e


def test_nodes_register_on_containerd_and_are_ready(nodes_cluster: KubeCluster) -> None:
    nodes = nodes_cluster.kubectl_json("get", "nodes")["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == ["nodes", "nodes-m02"]
    for node in nodes:
        assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
        assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    cidrs = {n["spec"]["podCIDR"] for n in nodes}
    assert len(cidrs) == 2


def test_logs_exec_and_previous_logs(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "talker", 'echo "start $(cat /etc/hostname)"; echo oops >&2; sleep 3600')
    wait_running(nodes_cluster, ns, "talker")
    logs = wait_until(lambda: (out := nodes_cluster.kubectl("logs", "talker", "-n", ns).stdout) and out,
                      "the pod's logs")
    # stdout and stderr are two pipes: which line containerd writes first is not fixed
    assert sorted(logs.splitlines()) == ["oops", "start talker"]
    stamped = nodes_cluster.kubectl("logs", "talker", "-n", ns, "--timestamps").stdout.splitlines()
    assert any(line.endswith(" start talker") and line[:4].isdigit() for line in stamped)
    done = nodes_cluster.kubectl("exec", "talker", "-n", ns, "--", "sh", "-c", "echo in-pod; exit 3",
                                 check=False)
    assert done.returncode == 3 and done.stdout == "in-pod\n"
    piped = nodes_cluster.kubectl("exec", "-i", "talker", "-n", ns, "--", "cat", input="through stdin\n")
    assert piped.stdout == "through stdin\n"
    with nodes_cluster.kubectl_background("logs", "-f", "talker", "-n", ns) as follow:
        nodes_cluster.kubectl("exec", "talker", "-n", ns, "--", "sh", "-c", "echo later > /proc/1/fd/1")
        follow.wait_for("later", "the followed log line")


def test_a_crashing_container_restarts_and_keeps_its_previous_log(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "crasher", "echo attempt; sleep 1; exit 1")
    def restarted() -> bool:
        pod = nodes_cluster.kubectl_json("get", "pod", "crasher", "-n", ns)
        statuses = pod["status"].get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] >= 1
    wait_until(restarted, "a restart", timeout=30)
    previous = nodes_cluster.kubectl("logs", "crasher", "-n", ns, "--previous").stdout
    assert previous == "attempt\n"
    pod = nodes_cluster.kubectl_json("get", "pod", "crasher", "-n", ns)
    assert pod["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1


def test_port_forward_reaches_busybox_httpd(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "web", "mkdir -p /www && echo hello-web > /www/index.html && httpd -f -p 8080 -h /www")
    wait_running(nodes_cluster, ns, "web")
    port = free_port()
    with nodes_cluster.kubectl_background("port-forward", "-n", ns, "pod/web", f"{port}:8080") as forward:
        forward.wait_for("Forwarding from", "port-forward to listen")
        body = wait_until(lambda: http_get(f"http://127.0.0.1:{port}/"), "an answer through port-forward")
    assert body == "hello-web\n"


def test_config_map_and_secret_reach_the_container_and_updates_follow(nodes_cluster: KubeCluster,
                                                                      ns: str) -> None:
    nodes_cluster.kubectl("create", "configmap", "app", "-n", ns, "--from-literal=greeting=hello")
    nodes_cluster.kubectl("create", "secret", "generic", "creds", "-n", ns, "--from-literal=password=s3cret")
    run_pod(nodes_cluster, ns, "reader", "sleep 3600",
            volumes=[{"name": "config", "configMap": {"name": "app"}},
                     {"name": "creds", "secret": {"secretName": "creds"}}],
            container={"env": [{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "app",
                                                                                     "key": "greeting"}}},
                               {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                       "volumeMounts": [{"name": "config", "mountPath": "/config"},
                                        {"name": "creds", "mountPath": "/creds", "readOnly": True}]})
    wait_running(nodes_cluster, ns, "reader")
    read = nodes_cluster.kubectl("exec", "reader", "-n", ns, "--", "sh", "-c",
                                 "echo $GREETING $POD_NAME; cat /config/greeting; echo; cat /creds/password").stdout
    assert read.splitlines() == ["hello reader", "hello", "s3cret"]
    nodes_cluster.kubectl("patch", "configmap", "app", "-n", ns, "-p", '{"data":{"greeting":"bonjour"}}')
    wait_until(lambda: nodes_cluster.kubectl("exec", "reader", "-n", ns, "--", "cat", "/config/greeting").stdout
               == "bonjour", "the new value in the mounted file", timeout=20)


def test_memory_limit_is_set_on_the_container_cgroup(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "limited", "sleep 3600",
            container={"resources": {"limits": {"memory": "64Mi", "cpu": "500m"}}})
    wait_running(nodes_cluster, ns, "limited")
    limit = nodes_cluster.kubectl("exec", "limited", "-n", ns, "--", "sh", "-c",
                                  "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || "
                                  "cat /sys/fs/cgroup/memory.max").stdout.strip()
    assert limit == str(64 * 2**20)
    pod = nodes_cluster.kubectl_json("get", "pod", "limited", "-n", ns)
    assert pod["status"]["qosClass"] == "Guaranteed"


def test_pods_on_two_nodes_talk_to_each_other(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "server", "mkdir -p /www && echo from-server > /www/index.html && "
                                         "httpd -f -p 8080 -h /www", node="nodes")
    run_pod(nodes_cluster, ns, "client", "sleep 3600", node="nodes-m02")
    server = wait_running(nodes_cluster, ns, "server")
    client = wait_running(nodes_cluster, ns, "client")
    # each node's pods take their IPs from the pod CIDR the KCM's node-ipam gave its Node (the kubelet passed it
    # on to containerd, which rendered its CNI config with it)
    for pod in (server, client):
        spec = nodes_cluster.kubectl_json("get", "node", pod["spec"]["nodeName"])["spec"]
        assert spec["podCIDRs"] == [spec["podCIDR"]]
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(spec["podCIDR"]), (pod, spec)
    ip = server["status"]["podIP"]
    answer = wait_until(lambda: nodes_cluster.kubectl(
        "exec", "client", "-n", ns, "--", "sh", "-c", f"timeout 5 wget -qO- http://{ip}:8080/", check=False
    ).stdout, "the client reaching the server across nodes", timeout=20)
    assert answer == "from-server\n"


def test_graceful_delete_runs_pre_stop_and_removes_the_pod(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "graceful", "trap 'exit 0' TERM; while :; do sleep 1 & wait; done",
            container={"lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo bye > /proc/1/fd/1"]}}}})
    wait_running(nodes_cluster, ns, "graceful")
    began = time.monotonic()
    nodes_cluster.kubectl("delete", "pod", "graceful", "-n", ns, "--wait=true", timeout=60)
    assert time.monotonic() - began < 15
    events = nodes_cluster.kubectl_json("get", "events", "-n", ns,
                                        "--field-selector", "involvedObject.name=graceful")["items"]
    assert "Killing" in {e["reason"] for e in events}


def test_missing_image_and_missing_command_are_reported(nodes_cluster: KubeCluster, ns: str) -> None:
    nodes_cluster.apply_manifest(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "noimage"},
        "spec": {"containers": [{"name": "main", "image": "example.com/nothing-here:1"}]}}), ns)
    run_pod(nodes_cluster, ns, "nocmd", "unused", restartPolicy="Never",
            container={"command": ["/no/such/command"]})

    def reason(name: str) -> str:
        pod = nodes_cluster.kubectl_json("get", "pod", name, "-n", ns)
        statuses = pod["status"].get("containerStatuses") or [{}]
        state = statuses[0].get("state") or {}
        return str((state.get("waiting") or state.get("terminated") or {}).get("reason", ""))
    wait_until(lambda: reason("noimage") in ("ErrImagePull", "ImagePullBackOff"), "the pull failure", timeout=30)
    wait_until(lambda: reason("nocmd") in ("RunContainerError", "StartError"), "the start failure", timeout=30)
    described = nodes_cluster.kubectl("describe", "pod", "noimage", "-n", ns).stdout
    assert "mkpy image load" in described


def test_crictl_shows_the_runtime_side(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod(nodes_cluster, ns, "seen", "sleep 3600", node="nodes")
    wait_running(nodes_cluster, ns, "seen")
    pods = nodes_cluster.mkpy("crictl", "--name", "nodes", "--node", "nodes", "pods").stdout
    assert any(line.split()[-4:-3] == ["seen"] or " seen " in line for line in pods.splitlines())
    images = nodes_cluster.mkpy("crictl", "--name", "nodes", "--node", "nodes", "images").stdout
    assert "docker.io/library/busybox" in images and "registry.k8s.io/pause" in images


def test_python_client_exec(nodes_cluster: KubeCluster, ns: str) -> None:
    from kubernetes import client
    from kubernetes.stream import stream

    run_pod(nodes_cluster, ns, "pyexec", "sleep 3600")
    wait_running(nodes_cluster, ns, "pyexec")
    api = nodes_cluster.api_client()
    try:
        core = client.CoreV1Api(api)
        out = stream(core.connect_get_namespaced_pod_exec, "pyexec", ns, command=["sh", "-c", "echo from-python"],
                     stderr=True, stdin=False, stdout=True, tty=False)
        assert out == "from-python\n"
    finally:
        api.close()

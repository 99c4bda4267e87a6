"""Helpers for the containerd tests: a busybox pod from a shell script, waiting for it to run, and reaching
what it serves from this host."""

from __future__ import annotations

import socket
import urllib.request
from typing import Any

import yaml

from tests.e2e.conftest import KubeCluster, wait_until


def run_pod(cluster: KubeCluster, ns: str, name: str, script: str, node: str = "", **spec: Any) -> dict[str, Any]:
    """Apply a pod whose one container `main` runs `sh -c script` in busybox; `container` in `spec` adds
    fields to that container, the rest of `spec` goes into the pod's spec."""
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", script], **spec.pop("container", {})}
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"terminationGracePeriodSeconds": 2, **spec, "containers": [container]}}
    if node:
        pod["spec"]["nodeName"] = node
    cluster.apply_manifest(yaml.safe_dump(pod), ns)
    return pod


def wait_running(cluster: KubeCluster, ns: str, name: str, timeout: float = 30) -> dict[str, Any]:
    def running() -> dict[str, Any] | None:
        pod = cluster.kubectl_json("get", "pod", name, "-n", ns)
        return pod if pod["status"].get("phase") == "Running" else None
    return wait_until(running, f"pod {name} running", timeout=timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str) -> str | None:
    """The body at `url`, or None while nothing answers there."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode())
    except OSError:
        return None

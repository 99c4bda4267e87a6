"""Helpers for scheduler tests against a real apiserver: builders for nodes and pods, a scheduler process,
and polling.

Nodes are API objects only (no kubelet): `node(...)` carries the allocatable, labels and taints the
scheduler reads. `SchedulerProcess` runs `mkpy scheduler` as a child process with its own
`system:kube-scheduler` certificate, exactly as `mkpy up` does.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import yaml

from tests.harness import ChildProcess, ControlPlane

T = TypeVar("T")
READY_LINE = "caches synced; scheduling"


def eventually(check: Callable[[], T | None], timeout: float = 20.0, interval: float = 0.1,
               message: str = "condition") -> T:
    """Poll `check` until it returns something truthy; fail with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110", labels: dict[str, str] | None = None,
         taints: list[dict[str, Any]] | None = None, unschedulable: bool = False,
         images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": spec,
            "status": {"capacity": allocatable, "allocatable": allocatable, "images": images or [],
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, *, cpu: str = "100m", memory: str = "64Mi", labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    container = {"name": "app", "image": "registry.k8s.io/pause:3.9",
                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [container], **spec}}


class Cluster:
    """An httpx client with the few calls scheduler tests need."""

    def __init__(self, api: httpx.Client, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.nodes: list[str] = []

    def add_node(self, body: dict[str, Any]) -> None:
        r = self.api.post("/api/v1/nodes", json=body)
        assert r.status_code == 201, r.text
        self.nodes.append(body["metadata"]["name"])

    def delete_nodes(self) -> None:
        for name in self.nodes:
            self.api.delete(f"/api/v1/nodes/{name}")

    def create_pod(self, body: dict[str, Any]) -> dict[str, Any]:
        r = self.api.post(f"/api/v1/namespaces/{self.namespace}/pods", json=body)
        assert r.status_code == 201, r.text
        return r.json()

    def get_pod(self, name: str) -> dict[str, Any] | None:
        r = self.api.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        return r.json() if r.status_code == 200 else None

    def node_of(self, name: str) -> str:
        return ((self.get_pod(name) or {}).get("spec") or {}).get("nodeName", "")

    def wait_bound(self, name: str, timeout: float = 20.0) -> str:
        return eventually(lambda: self.node_of(name), timeout, message=f"pod {name} to be bound")

    def scheduled_condition(self, name: str) -> dict[str, Any] | None:
        conditions = ((self.get_pod(name) or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c.get("type") == "PodScheduled"), None)

    def wait_unschedulable(self, name: str, timeout: float = 20.0) -> str:
        """The message of the pod's PodScheduled=False condition, once the scheduler set it."""
        def message() -> str:
            condition = self.scheduled_condition(name)
            return condition["message"] if condition and condition.get("status") == "False" else ""
        return eventually(message, timeout, message=f"pod {name} to be marked unschedulable")

    def events(self, name: str, reason: str) -> list[dict[str, Any]]:
        r = self.api.get(f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
        return [e for e in r.json()["items"]
                if e.get("regarding", {}).get("name") == name and e.get("reason") == reason]


class SchedulerProcess(ChildProcess):
    """`mkpy scheduler` as a child process, logging to a file."""

    def __init__(self, cp: ControlPlane, *args: str, config: dict[str, Any] | None = None,
                 name: str = "scheduler") -> None:
        self.kubeconfig = cp.component_kubeconfig("scheduler", user="system:kube-scheduler")
        self.log_file = cp.workdir / f"{unique(name)}.log"
        argv = [sys.executable, "-m", "minikube_py.cli.main", "scheduler", f"--kubeconfig={self.kubeconfig}",
                "--secure-port=0", *args]
        if config is not None:
            config_file = cp.workdir / f"{unique('scheduler-config')}.yaml"
            config_file.write_text(yaml.safe_dump(config))
            argv.append(f"--config={config_file}")
        if not any(a.startswith("--leader-elect") for a in args):
            argv.append("--leader-elect=false")
        super().__init__(argv, self.log_file)

    def wait_ready(self, timeout: float = 30.0) -> SchedulerProcess:
        def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"scheduler exited {self.process.returncode}:\n{self.log()[-3000:]}")
            return READY_LINE in self.log()
        eventually(ready, timeout, message="the scheduler to sync its caches")
        return self


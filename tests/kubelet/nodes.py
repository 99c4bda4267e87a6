"""Nodes for the kubelet tests: `mkpy fake-cri` and `mkpy kubelet` as child processes against a real control
plane, as `mkpy up --simulated-nodes` runs them. The runtime starts without a pod network; the kubelet passes
on its `--pod-cidr` (these control planes allocate no node CIDRs), as it would its Node's spec.podCIDRs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from tests.harness import ChildProcess, ControlPlane
from tests.scheduler.cluster import eventually

REPO = Path(__file__).resolve().parents[2]


class FakeNode:
    """One simulated node: its fake runtime and its kubelet, each a process."""

    def __init__(self, cp: ControlPlane, name: str, pod_cidr: str = "10.244.1.0/24", *kubelet_args: str) -> None:
        self.cp, self.name = cp, name
        self.dir = cp.workdir / "nodes" / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.socket = self.dir / "cri.sock"
        self.kubeconfig = cp.component_kubeconfig(f"kubelet-{name}", user=f"system:node:{name}",
                                                  groups=("system:nodes",))
        self.pod_cidr = pod_cidr
        self.kubelet_args = kubelet_args
        self.runtime = self.start_runtime()
        self.kubelet: ChildProcess | None = None
        self.start_kubelet()

    def start_runtime(self) -> ChildProcess:
        self.runtime = ChildProcess([sys.executable, "-m", "minikube_py.cli.main", "fake-cri", f"--listen={self.socket}",
                                     f"--node-name={self.name}"], self.dir / "fake-cri.log")
        return self.runtime

    def start_kubelet(self) -> None:
        self.kubelet = ChildProcess([
            sys.executable, "-m", "minikube_py.cli.main", "kubelet", f"--kubeconfig={self.kubeconfig}",
            f"--hostname-override={self.name}", f"--container-runtime-endpoint=unix://{self.socket}",
            f"--root-dir={self.dir / 'kubelet'}", f"--pod-cidr={self.pod_cidr}", "--port=0", "--healthz-port=0",
            "--node-status-update-frequency=1s", *self.kubelet_args], self.dir / "kubelet.log")

    def wait_ready(self, api: httpx.Client, timeout: float = 30.0) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            for process in (self.runtime, self.kubelet):
                if process is not None and process.process.poll() is not None:
                    raise AssertionError(f"{process.log_file.name} exited:\n{process.log()[-3000:]}")
            response = api.get(f"/api/v1/nodes/{self.name}")
            if response.status_code != 200:
                return None
            node = response.json()
            conditions = {c["type"]: c["status"] for c in node["status"].get("conditions") or []}
            return node if conditions.get("Ready") == "True" else None
        return eventually(ready, timeout, message=f"node {self.name} to be Ready")

    def logs(self) -> str:
        return (self.kubelet.log() if self.kubelet else "")[-4000:]

    def stop(self) -> None:
        if self.kubelet is not None:
            self.kubelet.stop()
        self.runtime.stop()

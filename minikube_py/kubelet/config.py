"""What one kubelet is told at start (kube's `KubeletConfiguration` plus the flags that never made it there).

`mkpy kubelet` fills a `KubeletConfig` from its flags; `mkpy up` passes those flags for each node. Durations are
seconds. Defaults are kube's, except the directories, which live under the node's own `--root-dir` so that
several kubelets share one host (kube's `/var/lib/kubelet` and `/var/log/pods` become `<root>/…`).
"""

from __future__ import annotations

import ipaddress
import platform
import socket
from dataclasses import dataclass, field
from pathlib import Path

from minikube_py.api import taints as taint_helpers
from minikube_py.api.validation.quantity import QuantityError, parse_quantity

KUBELET_VERSION = "v1.32.4+mkpy"  # what `kubectl get nodes` shows; the apiserver's /version says the same


class KubeletConfigError(ValueError):
    """A flag value the kubelet cannot work with; the message names the flag."""


@dataclass
class KubeletConfig:
    node_name: str = ""
    kubeconfig: str = ""
    container_runtime_endpoint: str = "unix:///run/containerd/containerd.sock"
    root_dir: Path = Path("/var/lib/kubelet")
    # --pod-cidr (deprecated in kube): given to the runtime at start; the Node's spec.podCIDRs win once it has them
    pod_cidr: str = ""
    node_ip: str = ""
    node_labels: dict[str, str] = field(default_factory=dict)
    register_with_taints: list[dict[str, str]] = field(default_factory=list)
    cloud_provider: str = ""  # "external": wait for the cloud controller manager to initialise the Node
    # The kubelet's HTTPS server (logs, exec, port-forward, stats); port 0 turns it off.
    address: str = "0.0.0.0"
    port: int = 10250
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    # Heartbeats: the Lease every renew interval, the Node's status on change or every report frequency.
    node_status_update_frequency: float = 10.0
    node_status_report_frequency: float = 60.0
    node_lease_duration_seconds: int = 40
    # How often the runtime is relisted (the PLEG) and every pod re-synced even without events.
    relist_period: float = 1.0
    sync_frequency: float = 60.0
    max_pods: int = 110
    # What the node offers; empty means "what this machine has" (simulated nodes set them).
    capacity_cpu: str = ""
    capacity_memory: str = ""
    capacity_ephemeral_storage: str = ""
    system_reserved_memory: str = "0"
    eviction_hard_memory_available: str = "100Mi"
    cgroup_root: str = ""  # parent cgroup of every pod's cgroup (per node when several share a host)
    healthz_port: int = 10248

    def __post_init__(self) -> None:
        self.root_dir = Path(self.root_dir)
        if not self.node_name:
            self.node_name = socket.gethostname().lower()
        for flag, value in (("--capacity-cpu", self.capacity_cpu), ("--capacity-memory", self.capacity_memory),
                            ("--capacity-ephemeral-storage", self.capacity_ephemeral_storage),
                            ("--system-reserved memory", self.system_reserved_memory),
                            ("--eviction-hard memory.available", self.eviction_hard_memory_available)):
            if value:
                try:
                    parse_quantity(value)
                except QuantityError:
                    raise KubeletConfigError(f"{flag}: {value!r} is not a quantity") from None
        if self.pod_cidr:
            try:
                ipaddress.ip_network(self.pod_cidr)
            except ValueError as error:
                raise KubeletConfigError(f"--pod-cidr: {error}") from None
        if self.max_pods <= 0:
            raise KubeletConfigError(f"--max-pods: must be positive, not {self.max_pods}")

    @property
    def pods_dir(self) -> Path:
        """Each pod's volumes, by pod UID (kube: /var/lib/kubelet/pods/<uid>)."""
        return self.root_dir / "pods"

    @property
    def pod_logs_dir(self) -> Path:
        """Container logs, `<namespace>_<pod>_<uid>/<container>/<restart>.log` (kube: /var/log/pods)."""
        return self.root_dir / "logs" / "pods"

    @property
    def architecture(self) -> str:
        machine = platform.machine().lower()
        return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def parse_taints(specs: list[str]) -> list[dict[str, str]]:
    """`--register-with-taints key=value:Effect,...` (value optional) as taint objects, validated as the
    apiserver would validate `spec.taints`."""
    taints = []
    for spec in specs:
        if not spec:
            continue
        key_value, sep, effect = spec.rpartition(":")
        if not sep:
            raise KubeletConfigError(f"--register-with-taints: {spec!r} is not key[=value]:Effect")
        key, _, value = key_value.partition("=")
        taint = {"key": key, "effect": effect} | ({"value": value} if value else {})
        _, errors = taint_helpers.parse_taints([taint])
        if errors:
            raise KubeletConfigError(f"--register-with-taints: {spec!r}: {errors[0]}")
        taints.append(taint)
    return taints


def parse_labels(specs: list[str]) -> dict[str, str]:
    """`--node-labels key=value,...`."""
    labels: dict[str, str] = {}
    for spec in specs:
        if not spec:
            continue
        key, sep, value = spec.partition("=")
        if not sep or not key:
            raise KubeletConfigError(f"--node-labels: {spec!r} is not key=value")
        labels[key] = value
    return labels

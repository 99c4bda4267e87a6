"""The Node object a kubelet registers and the status it reports (kube's `kubelet_node_status.go` and
`nodestatus/setters.go`), as pure functions of what the kubelet observed.

    machine_info(config)                  what the host offers: cores, memory, disk, boot id, kernel, OS
    initial_node(config, machine, ...)    the Node to create: labels, taints, podCIDR and a first status
    node_status(observed, previous)       capacity, allocatable, conditions, addresses, nodeInfo, images

Usage rules: conditions keep their `lastTransitionTime` while their status stays the same and get a new
`lastHeartbeatTime` on every report, as kube does; `status_changed` says whether a status differs from the
Node's current one (as the apiserver holds it) in anything but heartbeat times, which is what decides between
patching now and waiting for the next periodic report.
"""

from __future__ import annotations

import os
import platform
import uuid
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from minikube_py.api.quantity import render
from minikube_py.api.validation.quantity import parse_quantity
from minikube_py.kubelet.config import KUBELET_VERSION, KubeletConfig

UNINITIALIZED_TAINT = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
                       "effect": "NoSchedule"}


@dataclass(frozen=True)
class MachineInfo:
    num_cores: int
    memory_bytes: int
    filesystem_bytes: int
    machine_id: str
    system_uuid: str
    boot_id: str
    kernel_version: str
    os_image: str


@dataclass
class Observed:
    """Everything a status is computed from, gathered by the kubelet each round."""

    runtime_version: str = ""  # e.g. "containerd://1.6.20"
    runtime_error: str = ""  # why the runtime is not ready; "" when it is
    images: list[dict[str, Any]] = field(default_factory=list)  # [{"names": [...], "sizeBytes": n}]
    node_ip: str = ""
    kubelet_port: int = 0


def machine_info(config: KubeletConfig) -> MachineInfo:
    """The host's figures, overridden by `--capacity-*` flags (simulated nodes claim what they like)."""
    return MachineInfo(
        num_cores=os.cpu_count() or 1,
        memory_bytes=_meminfo_total(),
        filesystem_bytes=_filesystem_size(config.root_dir),
        machine_id=_read_first_line(Path("/etc/machine-id")) or uuid.uuid5(uuid.NAMESPACE_DNS, config.node_name).hex,
        system_uuid=str(uuid.uuid5(uuid.NAMESPACE_DNS, config.node_name)),
        boot_id=_read_first_line(Path("/proc/sys/kernel/random/boot_id")),
        kernel_version=platform.release(),
        os_image=_os_image(),
    )


def capacity(config: KubeletConfig, machine: MachineInfo) -> dict[str, str]:
    return {
        "cpu": config.capacity_cpu or str(machine.num_cores),
        "ephemeral-storage": config.capacity_ephemeral_storage or _ki(machine.filesystem_bytes),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": config.capacity_memory or _ki(machine.memory_bytes),
        "pods": str(config.max_pods),
    }


def allocatable(config: KubeletConfig, machine: MachineInfo) -> dict[str, str]:
    """Capacity less what the system keeps and the hard-eviction threshold for memory (kube's node
    allocatable formula; cpu and storage reservations are not configurable here)."""
    result = capacity(config, machine)
    memory = (parse_quantity(result["memory"]) - parse_quantity(config.system_reserved_memory)
              - parse_quantity(config.eviction_hard_memory_available))
    result["memory"] = render(max(memory, Fraction(0)), binary=True)
    return result


def node_labels(config: KubeletConfig) -> dict[str, str]:
    """The labels a kubelet sets on its Node (and may keep setting), then `--node-labels`."""
    os_name = "linux"
    return {
        "beta.kubernetes.io/arch": config.architecture,
        "beta.kubernetes.io/os": os_name,
        "kubernetes.io/arch": config.architecture,
        "kubernetes.io/hostname": config.node_name,
        "kubernetes.io/os": os_name,
    } | config.node_labels


def initial_node(config: KubeletConfig, machine: MachineInfo, observed: Observed, now: str) -> dict[str, Any]:
    taints = list(config.register_with_taints)
    if config.cloud_provider == "external":
        taints.append(dict(UNINITIALIZED_TAINT))
    spec: dict[str, Any] = {}
    if config.pod_cidr:
        spec["podCIDR"] = config.pod_cidr
        spec["podCIDRs"] = [config.pod_cidr]
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": config.node_name, "labels": node_labels(config),
                     "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": spec,
        "status": node_status(config, machine, observed, None, now),
    }


def node_status(config: KubeletConfig, machine: MachineInfo, observed: Observed,
                previous: dict[str, Any] | None, now: str) -> dict[str, Any]:
    """The Node's status now; `previous` is its current status (conditions keep their transitions)."""
    previous_conditions = {c.get("type"): c for c in (previous or {}).get("conditions") or []}
    status: dict[str, Any] = {
        "capacity": capacity(config, machine),
        "allocatable": allocatable(config, machine),
        "conditions": [_condition(kind, state, reason, message, previous_conditions.get(kind), now)
                       for kind, state, reason, message in _conditions(observed)],
        "addresses": [{"type": "InternalIP", "address": observed.node_ip or config.node_ip or "127.0.0.1"},
                      {"type": "Hostname", "address": config.node_name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": observed.kubelet_port}},
        "nodeInfo": {
            "machineID": machine.machine_id, "systemUUID": machine.system_uuid, "bootID": machine.boot_id,
            "kernelVersion": machine.kernel_version, "osImage": machine.os_image,
            "containerRuntimeVersion": observed.runtime_version, "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": config.architecture,
        },
    }
    if observed.images:
        status["images"] = observed.images
    return status


def status_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """Whether `new` says anything `old` did not, heartbeat times aside."""
    return old is None or _without_heartbeats(old) != _without_heartbeats(new)


def ready(status: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def _conditions(observed: Observed) -> list[tuple[str, str, str, str]]:
    """(type, status, reason, message) in kube's order; pressure is never reported by this kubelet."""
    if observed.runtime_error:
        ready_condition = ("Ready", "False", "KubeletNotReady", observed.runtime_error)
    else:
        ready_condition = ("Ready", "True", "KubeletReady", "kubelet is posting ready status")
    return [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ready_condition,
    ]


def _condition(kind: str, state: str, reason: str, message: str, previous: dict[str, Any] | None,
               now: str) -> dict[str, str]:
    unchanged = previous is not None and previous.get("status") == state
    return {"type": kind, "status": state, "lastHeartbeatTime": now,
            "lastTransitionTime": previous.get("lastTransitionTime", now) if unchanged and previous else now,
            "reason": reason, "message": message}


def _without_heartbeats(status: dict[str, Any]) -> dict[str, Any]:
    conditions = [{k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in status.get("conditions") or []]
    return status | {"conditions": conditions}


def _ki(size: int) -> str:
    return f"{size // 1024}Ki"


def _meminfo_total() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _filesystem_size(path: Path) -> int:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        stat = os.statvfs(probe)
    except OSError:
        return 0
    return stat.f_blocks * stat.f_frsize


def _read_first_line(path: Path) -> str:
    try:
        return path.read_text().strip().splitlines()[0]
    except (OSError, IndexError):
        return ""


def _os_image() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()

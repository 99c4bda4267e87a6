"""The Node object a kubelet registers and the status it reports (kube's `kubelet_node_status.go` and
`nodestatus/setters.go`), as pure functions of what the kubelet observed.

    machine_info(config)                  what the host offers: cores, memory, disk, boot id, kernel, OS
    initial_node(config, machine, ...)    the Node to create: labels, annotations, taints, a first status
    node_status(observed, previous)       capacity, allocatable, conditions, addresses, nodeInfo, images
    runtime_errors(conditions)            why the runtime (or its network) keeps the Node from being Ready

The Node's spec.podCIDR is not the kubelet's to write: the controller manager's node-ipam controller allocates
it, and the kubelet only reads it to pass it on to the runtime (node.py).

The status is what the kubelet owns of the Node's status, sent as a strategic merge patch (node.py). Others
write there too: the route controller sets the condition `NetworkUnavailable`, the cloud controller manager the
addresses. So `node_status` holds only the kubelet's own conditions (the patch merges conditions by `type` and
leaves the others alone), and with `--cloud-provider=external` it takes over the addresses as kube 1.32's kubelet
does: while the Node has none it reports `InternalIP` from `--node-ip` and `Hostname` (only `Hostname` without
`--node-ip`), and once the Node has addresses, whoever set them, it leaves them to the cloud controller (the
status then has no `addresses`). An external kubelet with `--node-ip` also annotates its Node with
`alpha.kubernetes.io/provided-node-ip`, the address the cloud controller should keep when it sets the Node's.

Usage rules: conditions keep their `lastTransitionTime` while their status stays the same and get a new
`lastHeartbeatTime` on every report, as kube does; `status_changed` says whether patching a status onto the
Node's current one (as the apiserver holds it) would change anything but heartbeat times, which is what decides
between patching now and waiting for the next periodic report.
"""

from __future__ import annotations

import ipaddress
import os
import platform
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from minikube_py.api.quantity import render
from minikube_py.api.validation.quantity import parse_quantity
from minikube_py.kubelet.config import KUBELET_VERSION, KubeletConfig
from minikube_py.kubelet.cri import api_pb2 as cri

UNINITIALIZED_TAINT = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
                       "effect": "NoSchedule"}
PROVIDED_NODE_IP_ANNOTATION = "alpha.kubernetes.io/provided-node-ip"


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
    network_ready: bool = True  # False: the runtime answered that its pod network is not set up (no pod CIDR yet)
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


def provided_node_ip(config: KubeletConfig) -> str:
    """The `alpha.kubernetes.io/provided-node-ip` annotation's value: `--node-ip` with an external cloud
    provider ("" otherwise, and for an unspecified address such as 0.0.0.0, which names no node IP)."""
    if config.cloud_provider != "external" or not config.node_ip:
        return ""
    return "" if ipaddress.ip_address(config.node_ip).is_unspecified else config.node_ip


def node_annotations(config: KubeletConfig) -> dict[str, str]:
    annotations = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    if provided_node_ip(config):
        annotations[PROVIDED_NODE_IP_ANNOTATION] = provided_node_ip(config)
    return annotations


def initial_node(config: KubeletConfig, machine: MachineInfo, observed: Observed, now: str) -> dict[str, Any]:
    taints = list(config.register_with_taints)
    if config.cloud_provider == "external":
        taints.append(dict(UNINITIALIZED_TAINT))
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": config.node_name, "labels": node_labels(config), "annotations": node_annotations(config)},
        "spec": {"taints": taints} if taints else {},
        "status": node_status(config, machine, observed, None, now),
    }


def node_status(config: KubeletConfig, machine: MachineInfo, observed: Observed,
                previous: dict[str, Any] | None, now: str) -> dict[str, Any]:
    """What the kubelet reports of the Node's status now; `previous` is the Node's current status (conditions
    keep their transitions; with an external cloud provider, addresses already there are left alone)."""
    previous_conditions = {c.get("type"): c for c in (previous or {}).get("conditions") or []}
    status: dict[str, Any] = {
        "capacity": capacity(config, machine),
        "allocatable": allocatable(config, machine),
        "conditions": [_condition(kind, state, reason, message, previous_conditions.get(kind), now)
                       for kind, state, reason, message in _conditions(observed)],
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
    external = config.cloud_provider == "external"
    if not (external and (previous or {}).get("addresses")):
        status["addresses"] = _addresses(config, observed, external)
    return status


def status_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """Whether patching `new` onto `old` would change anything, heartbeat times aside: the fields `new` has,
    and of the conditions only those of the types `new` reports (the others are not the kubelet's)."""
    if old is None:
        return True
    old_conditions = {c.get("type"): _without_heartbeat(c) for c in old.get("conditions") or []}
    if any(old_conditions.get(c["type"]) != _without_heartbeat(c) for c in new.get("conditions") or []):
        return True
    return any(old.get(key) != value for key, value in new.items() if key != "conditions")


# The event a kubelet records about its Node when one of its conditions takes a status, as kube's status
# setters do: at registration (every condition is new) and at every transition (e.g. back from Unknown).
CONDITION_EVENTS = {
    ("MemoryPressure", "False"): "NodeHasSufficientMemory", ("MemoryPressure", "True"): "NodeHasInsufficientMemory",
    ("DiskPressure", "False"): "NodeHasNoDiskPressure", ("DiskPressure", "True"): "NodeHasDiskPressure",
    ("PIDPressure", "False"): "NodeHasSufficientPID", ("PIDPressure", "True"): "NodeHasInsufficientPID",
    ("Ready", "True"): "NodeReady", ("Ready", "False"): "NodeNotReady",
}


def condition_events(previous: dict[str, Any] | None, status: dict[str, Any]) -> list[str]:
    """The event reasons for the kubelet's conditions whose status differs in `status` from `previous` (None: a
    Node just registered), in the conditions' order."""
    before = {c.get("type"): c.get("status") for c in (previous or {}).get("conditions") or []}
    return [CONDITION_EVENTS[(c["type"], c["status"])] for c in status.get("conditions") or []
            if (c.get("type"), c.get("status")) in CONDITION_EVENTS and before.get(c["type"]) != c["status"]]


def ready(status: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def runtime_errors(conditions: Iterable[cri.RuntimeCondition]) -> str:
    """The Ready condition's message for the runtime's CRI Status conditions, in kube's words ("" when both are
    true): "container runtime not ready: RuntimeReady=false reason:... message:..." and "container runtime
    network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni
    plugin not initialized" (a fresh node until it has a pod CIDR); both at once as "[first, second]"."""
    by_type = {condition.type: condition for condition in conditions}
    errors = [f"{prefix}: {_described(by_type.get(kind))}"
              for kind, prefix in (("RuntimeReady", "container runtime not ready"),
                                   ("NetworkReady", "container runtime network not ready"))
              if kind not in by_type or not by_type[kind].status]
    return f"[{', '.join(errors)}]" if len(errors) > 1 else "".join(errors)


def _described(condition: cri.RuntimeCondition | None) -> str:
    if condition is None:  # a runtime that does not report it: kube prints the missing condition as Go's nil
        return "<nil>"
    return (f"{condition.type}={str(condition.status).lower()} reason:{condition.reason} "
            f"message:{condition.message}")


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


def _addresses(config: KubeletConfig, observed: Observed, external: bool) -> list[dict[str, str]]:
    """InternalIP and Hostname; with an external cloud provider and no `--node-ip`, only Hostname: the cloud
    controller will tell the Node's IPs (kube 1.32's setter does not guess one then)."""
    hostname = {"type": "Hostname", "address": config.node_name}
    if external and not config.node_ip:
        return [hostname]
    return [{"type": "InternalIP", "address": observed.node_ip or config.node_ip or "127.0.0.1"}, hostname]


def _without_heartbeat(condition: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in condition.items() if k != "lastHeartbeatTime"}


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

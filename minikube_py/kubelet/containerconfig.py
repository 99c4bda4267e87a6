"""From a pod spec to the CRI configs the runtime is given (kube's `kuberuntime_sandbox.go` and
`kuberuntime_container.go`): pure functions, no I/O.

    sandbox_config(pod, attempt, logs_dir, cgroup_root)              -> cri.PodSandboxConfig
    container_config(pod, container, ...)                            -> cri.ContainerConfig
    linux_resources(container)                                       -> cri.LinuxContainerResources

What maps to what:
* the pod's labels and annotations go on the sandbox, with the kubelet's own labels that name the pod;
* hostNetwork/hostPID/hostIPC become NODE namespaces; `hostname` is left empty on the host network;
* container ports with a hostPort become port mappings; logs go to `<logs_dir>/<ns>_<pod>_<uid>/<container>/<n>.log`;
* requests.cpu becomes cpu shares (1 core = 1024), limits.cpu a CFS quota over a 100 ms period, limits.memory
  the memory limit; the pod's QoS class sets the OOM score adjustment;
* securityContext (pod-level, overridden per container): runAsUser, runAsGroup, readOnlyRootFilesystem,
  privileged, capabilities.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import orjson

from minikube_py.api.validation.quantity import parse_quantity
from minikube_py.kubelet import runtimestate as labels
from minikube_py.kubelet.cri import api_pb2 as cri

CPU_PERIOD = 100_000  # microseconds
MIN_CPU_SHARES = 2
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"


def pod_log_directory(logs_dir: Path, pod: dict[str, Any]) -> Path:
    meta = pod["metadata"]
    return logs_dir / f"{meta.get('namespace', 'default')}_{meta['name']}_{meta['uid']}"


def sandbox_config(pod: dict[str, Any], attempt: int, logs_dir: Path, cgroup_root: str) -> cri.PodSandboxConfig:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    host_network = bool(spec.get("hostNetwork"))
    security = spec.get("securityContext") or {}
    ports = [cri.PortMapping(protocol=_protocol(port.get("protocol", "TCP")),
                             container_port=port.get("containerPort", 0), host_port=port["hostPort"],
                             host_ip=port.get("hostIP", ""))
             for container in spec.get("containers") or [] for port in container.get("ports") or []
             if port.get("hostPort")]
    linux_security = cri.LinuxSandboxSecurityContext(
        namespace_options=_namespaces(spec), readonly_rootfs=False,
        supplemental_groups=security.get("supplementalGroups") or [])
    if "runAsUser" in security:
        linux_security.run_as_user.value = security["runAsUser"]
    if "runAsGroup" in security:
        linux_security.run_as_group.value = security["runAsGroup"]
    return cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name=meta["name"], uid=meta["uid"],
                                        namespace=meta.get("namespace", "default"), attempt=attempt),
        hostname="" if host_network else (spec.get("hostname") or meta["name"])[:63],
        log_directory=str(pod_log_directory(logs_dir, pod)),
        port_mappings=ports,
        labels=(meta.get("labels") or {}) | pod_labels(pod),
        annotations=meta.get("annotations") or {},
        linux=cri.LinuxPodSandboxConfig(
            cgroup_parent=f"{cgroup_root.rstrip('/')}/pod{meta['uid']}" if cgroup_root else "",
            security_context=linux_security,
            sysctls={s["name"]: s.get("value", "") for s in security.get("sysctls") or []}),
    )


def pod_labels(pod: dict[str, Any]) -> dict[str, str]:
    meta = pod["metadata"]
    return {labels.POD_NAME_LABEL: meta["name"], labels.POD_NAMESPACE_LABEL: meta.get("namespace", "default"),
            labels.POD_UID_LABEL: meta["uid"]}


def container_config(pod: dict[str, Any], container: dict[str, Any], *, image_ref: str, restart_count: int,
                     env: dict[str, str], command: list[str], args: list[str], mounts: list[cri.Mount],
                     init: bool) -> cri.ContainerConfig:
    name = container["name"]
    spec = pod.get("spec") or {}
    annotations = {
        labels.HASH_ANNOTATION: container_hash(container),
        labels.RESTART_COUNT_ANNOTATION: str(restart_count),
        labels.TERMINATION_MESSAGE_PATH_ANNOTATION:
            container.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH,
        labels.TERMINATION_GRACE_ANNOTATION: str(spec.get("terminationGracePeriodSeconds", 30)),
    }
    if init:
        annotations[labels.INIT_CONTAINER_ANNOTATION] = "true"
    return cri.ContainerConfig(
        metadata=cri.ContainerMetadata(name=name, attempt=restart_count),
        image=cri.ImageSpec(image=image_ref, user_specified_image=container.get("image", "")),
        command=command, args=args, working_dir=container.get("workingDir", ""),
        envs=[cri.KeyValue(key=key, value=value) for key, value in env.items()],
        mounts=mounts,
        labels=pod_labels(pod) | {labels.CONTAINER_NAME_LABEL: name},
        annotations=annotations,
        log_path=f"{name}/{restart_count}.log",
        stdin=bool(container.get("stdin")), stdin_once=bool(container.get("stdinOnce")),
        tty=bool(container.get("tty")),
        linux=cri.LinuxContainerConfig(resources=linux_resources(container, qos_class(pod)),
                                       security_context=_container_security(spec, container)),
    )


def container_hash(container: dict[str, Any]) -> str:
    """A hash of the container's spec: when it changes (`kubectl set image`), the container is restarted."""
    return hashlib.sha256(orjson.dumps(container, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def linux_resources(container: dict[str, Any], qos: str = "BestEffort") -> cri.LinuxContainerResources:
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    cpu_request = requests.get("cpu", limits.get("cpu"))  # a limit alone implies an equal request
    shares = max(MIN_CPU_SHARES, math.floor(parse_quantity(cpu_request) * 1024)) if cpu_request else MIN_CPU_SHARES
    result = cri.LinuxContainerResources(cpu_shares=shares, cpu_period=CPU_PERIOD,
                                         oom_score_adj=_oom_score_adj(qos, requests, container))
    if "cpu" in limits:
        result.cpu_quota = max(1000, math.ceil(parse_quantity(limits["cpu"]) * CPU_PERIOD))
    if "memory" in limits:
        result.memory_limit_in_bytes = math.ceil(parse_quantity(limits["memory"]))
    return result


def qos_class(pod: dict[str, Any]) -> str:
    """Guaranteed (every container limits == requests for cpu and memory), BestEffort (nothing set), else
    Burstable; the apiserver's `status.qosClass` when present."""
    stated = (pod.get("status") or {}).get("qosClass")
    if stated:
        return str(stated)
    containers = list((pod.get("spec") or {}).get("containers") or []) + list(
        (pod.get("spec") or {}).get("initContainers") or [])
    any_set, guaranteed = False, True
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if requests or limits:
            any_set = True
        for resource in ("cpu", "memory"):
            limit = limits.get(resource)
            if limit is None or parse_quantity(requests.get(resource, limit)) != parse_quantity(limit):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _oom_score_adj(qos: str, requests: dict[str, Any], container: dict[str, Any]) -> int:
    if qos == "Guaranteed":
        return -997
    if qos == "BestEffort":
        return 1000
    memory = requests.get("memory")
    if not memory:
        return 999
    # Burstable: the more memory a container asks for, the less likely it is chosen (kube's formula over the
    # machine's memory is approximated with 16 GiB, which only shifts the score within 2..999).
    share = float(parse_quantity(memory)) / float(16 * 2**30)
    return int(min(999, max(2, 1000 - 1000 * share)))


def _namespaces(spec: dict[str, Any]) -> cri.NamespaceOption:
    return cri.NamespaceOption(
        network=cri.NODE if spec.get("hostNetwork") else cri.POD,
        pid=cri.NODE if spec.get("hostPID") else (cri.POD if spec.get("shareProcessNamespace") else cri.CONTAINER),
        ipc=cri.NODE if spec.get("hostIPC") else cri.POD)


def _container_security(spec: dict[str, Any], container: dict[str, Any]) -> cri.LinuxContainerSecurityContext:
    pod_security = spec.get("securityContext") or {}
    security = container.get("securityContext") or {}
    capabilities = security.get("capabilities") or {}
    result = cri.LinuxContainerSecurityContext(
        capabilities=cri.Capability(add_capabilities=capabilities.get("add") or [],
                                    drop_capabilities=capabilities.get("drop") or []),
        privileged=bool(security.get("privileged")),
        namespace_options=_namespaces(spec),
        readonly_rootfs=bool(security.get("readOnlyRootFilesystem")),
        supplemental_groups=pod_security.get("supplementalGroups") or [],
        no_new_privs=security.get("allowPrivilegeEscalation") is False)
    for field, key in (("run_as_user", "runAsUser"), ("run_as_group", "runAsGroup")):
        value = security.get(key, pod_security.get(key))
        if value is not None:
            getattr(result, field).value = value
    return result


def _protocol(name: str) -> int:
    return {"TCP": cri.TCP, "UDP": cri.UDP, "SCTP": cri.SCTP}.get(name, cri.TCP)

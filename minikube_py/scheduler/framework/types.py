"""The data the scheduler reasons about: resources as integers, pods with their parsed scheduling terms, and
nodes with what is already placed on them (kube's `framework/types.go`).

`PodInfo` parses a pod once (requests, host ports, affinity terms) so Filter and Score never re-read the raw
dict; `NodeInfo` keeps running totals as pods are added and removed, which is what the cache and snapshot
(`scheduler/cache.py`) maintain and every plugin reads.

Usage rules: CPU is in millicores and every other resource in its base unit, all as ints. Build `PodInfo`
with `PodInfo.of(pod)`; a NodeInfo's pods are only changed through `add_pod`/`remove_pod` so its totals stay
right. `clone()` copies what a plugin may change (preemption removes victims from a clone).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from minikube_py.api.quantity import parse_list, pod_requests
from minikube_py.api.selectors import LabelSelector
from minikube_py.scheduler.framework.interface import CycleState, Pod, Status

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
DEFAULT_MILLI_CPU_REQUEST = 100  # what a container without requests counts as when scoring (kube's non-zero)
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
# a container that does not request CPU or memory at all (an explicit 0 is kept) counts as requesting these
NON_ZERO_DEFAULTS = {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}
DEFAULT_SCHEDULER_NAME = "default-scheduler"


# --- resources ----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Resource:
    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar_resources: dict[str, int] = field(default_factory=dict)  # extended resources, hugepages, …

    @classmethod
    def from_list(cls, amounts: Mapping[str, Fraction]) -> Resource:
        resource = cls()
        for name, amount in amounts.items():
            if name == CPU:
                resource.milli_cpu = math.ceil(amount * 1000)
            elif name == MEMORY:
                resource.memory = math.ceil(amount)
            elif name == EPHEMERAL_STORAGE:
                resource.ephemeral_storage = math.ceil(amount)
            elif name == PODS:
                resource.allowed_pod_number = math.ceil(amount)
            elif _is_scalar(name):
                resource.scalar_resources[name] = math.ceil(amount)
        return resource

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = self.scalar_resources.get(name, 0) + amount

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = self.scalar_resources.get(name, 0) - amount

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar_resources.get(name, 0)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number,
                        dict(self.scalar_resources))


def _is_scalar(name: str) -> bool:
    """Extended resources (`example.com/gpu`), hugepages and attachable volumes count; other names do not."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


# --- pods -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed pod (anti-)affinity term: which pods (selector, namespaces) must share which topology."""

    selector: LabelSelector
    namespaces: frozenset[str]
    topology_key: str
    namespace_selector: LabelSelector  # NOTHING when the term lists no namespaceSelector

    def matches(self, pod_info: PodInfo, namespace_labels: Mapping[str, str] | None = None) -> bool:
        """Whether `pod_info` is one of the pods this term is about."""
        if pod_info.namespace not in self.namespaces and not self.namespace_selector.empty and not (
                namespace_labels is not None and self.namespace_selector.matches(namespace_labels)):
            return False  # (an empty namespaceSelector, `{}`, selects every namespace)
        return self.selector.matches(pod_info.labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


@dataclass(slots=True)
class PodInfo:
    """A pod with what scheduling needs parsed out of it, once."""

    pod: Pod
    namespace: str
    name: str
    uid: str
    labels: dict[str, str]
    priority: int
    requests: Resource
    non_zero_requests: Resource  # requests with kube's defaults for containers that ask for nothing
    host_ports: list[HostPort]
    required_affinity_terms: list[AffinityTerm]
    required_anti_affinity_terms: list[AffinityTerm]
    preferred_affinity_terms: list[WeightedAffinityTerm]
    preferred_anti_affinity_terms: list[WeightedAffinityTerm]
    parse_error: str = ""  # set when an affinity term could not be parsed (the pod then stays unschedulable)

    @classmethod
    def of(cls, pod: Pod) -> PodInfo:
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        errors: list[str] = []
        affinity = spec.get("affinity") or {}
        pod_affinity = affinity.get("podAffinity") or {}
        anti_affinity = affinity.get("podAntiAffinity") or {}
        namespace = metadata.get("namespace", "")
        requests = Resource.from_list(pod_requests(pod))
        return cls(
            pod=pod, namespace=namespace, name=metadata.get("name", ""), uid=metadata.get("uid", ""),
            labels=metadata.get("labels") or {}, priority=int(spec.get("priority") or 0),
            requests=requests, non_zero_requests=Resource.from_list(pod_requests(pod, NON_ZERO_DEFAULTS)),
            host_ports=_host_ports(spec),
            required_affinity_terms=_terms(pod_affinity, namespace, errors),
            required_anti_affinity_terms=_terms(anti_affinity, namespace, errors),
            preferred_affinity_terms=_weighted_terms(pod_affinity, namespace, errors),
            preferred_anti_affinity_terms=_weighted_terms(anti_affinity, namespace, errors),
            parse_error="; ".join(errors),
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def node_name(self) -> str:
        return (self.pod.get("spec") or {}).get("nodeName", "")

    @property
    def has_affinity(self) -> bool:
        return bool(self.required_affinity_terms or self.required_anti_affinity_terms
                    or self.preferred_affinity_terms or self.preferred_anti_affinity_terms)


def pod_info_for(state: CycleState, pod: Pod) -> PodInfo:
    """The parsed form of the pod being scheduled: the queue's PodInfo, which the scheduler puts into the cycle
    state, so plugins do not parse the pod again; parsed here for any other pod (an assumed copy, a test)."""
    info = state.pod_info
    return info if info is not None and info.pod is pod else PodInfo.of(pod)


def _host_ports(spec: Mapping[str, Any]) -> list[HostPort]:
    ports = []
    for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        for port in (container.get("ports") or []) if isinstance(container, dict) else []:
            host_port = port.get("hostPort") if isinstance(port, dict) else None
            if isinstance(host_port, int) and host_port > 0:
                ports.append(HostPort(port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", host_port))
    return ports


def _term(raw: Mapping[str, Any], namespace: str, errors: list[str]) -> AffinityTerm | None:
    try:  # a missing labelSelector selects no pods; {} selects all (kube's LabelSelectorAsSelector)
        selector = LabelSelector.from_api(raw.get("labelSelector"))
        raw_ns_selector = raw.get("namespaceSelector")
        ns_selector = LabelSelector.from_api(raw_ns_selector)  # None: no namespace by labels
    except Exception as error:  # an invalid selector the apiserver let through: reported, never raised
        errors.append(f"invalid affinity term: {getattr(error, 'message', error)}")
        return None
    # No namespaces and no namespaceSelector mean the pod's own namespace.
    namespaces = frozenset(raw.get("namespaces") or ([] if raw_ns_selector is not None else [namespace]))
    return AffinityTerm(selector, namespaces, raw.get("topologyKey", ""), ns_selector)


def _terms(affinity: Mapping[str, Any], namespace: str, errors: list[str]) -> list[AffinityTerm]:
    raw_terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return [t for raw in raw_terms if isinstance(raw, dict) and (t := _term(raw, namespace, errors))]


def _weighted_terms(affinity: Mapping[str, Any], namespace: str, errors: list[str]) -> list[WeightedAffinityTerm]:
    result = []
    for raw in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        term = _term((raw or {}).get("podAffinityTerm") or {}, namespace, errors) if isinstance(raw, dict) else None
        if term is not None:
            result.append(WeightedAffinityTerm(term, int(raw.get("weight") or 0)))
    return result


def pod_uid(pod: Pod) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


def pod_identity(pod: Pod) -> str:
    """The pod's UID, or namespace/name for a pod without one (hand-made pods in tests and labs)."""
    metadata = pod.get("metadata") or {}
    return metadata.get("uid") or f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def scheduler_name(pod: Pod) -> str:
    """The profile the pod asks for; pods that name none belong to the default scheduler."""
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME


# --- nodes --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImageStateSummary:
    size: int  # bytes
    num_nodes: int  # how many nodes have the image


class NodeInfo:
    """A node and the pods placed on it (bound or assumed), with running totals."""

    __slots__ = ("node", "name", "labels", "taints", "unschedulable", "pods", "pods_with_affinity",
                 "pods_with_required_anti_affinity", "used_ports", "requested", "non_zero_requested", "allocatable",
                 "image_states", "generation", "node_error")

    def __init__(self, node: dict[str, Any] | None = None) -> None:
        self.node: dict[str, Any] | None = None
        self.name = ""
        # read off the node once (set_node), as Filter and Score look at them on every node of every cycle
        self.labels: dict[str, str] = {}
        self.taints: Any = None  # spec.taints as the node has it (TaintToleration parses and checks it)
        self.unschedulable = False
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports: set[HostPort] = set()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.generation = 0
        self.node_error = ""  # why the node's object could not be read (malformed allocatable, taints, …)
        if node is not None:
            self.set_node(node)

    def set_node(self, node: dict[str, Any]) -> None:
        self.node = node
        metadata, spec = node.get("metadata") or {}, node.get("spec") or {}
        self.name = metadata.get("name", "")
        self.labels = metadata.get("labels") or {}
        self.taints = spec.get("taints")
        self.unschedulable = bool(spec.get("unschedulable"))
        status = node.get("status") or {}
        allocatable = status.get("allocatable") or {}
        parsed = parse_list(allocatable if isinstance(allocatable, dict) else None)
        bad = sorted(set(allocatable) - set(parsed)) if isinstance(allocatable, dict) else ["allocatable"]
        self.node_error = f"node {self.name} has malformed allocatable {', '.join(bad)}" if bad else ""
        self.allocatable = Resource.from_list(parsed)

    def add_pod(self, pod_info: PodInfo) -> None:
        self.pods.append(pod_info)
        if pod_info.has_affinity:
            self.pods_with_affinity.append(pod_info)
        if pod_info.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity.append(pod_info)
        self.requested.add(pod_info.requests)
        self.non_zero_requested.add(pod_info.non_zero_requests)
        self.used_ports.update(pod_info.host_ports)
        self.generation += 1

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with `pod`'s UID (or namespace/name); False when it is not on this node."""
        uid = (pod.get("metadata") or {}).get("uid", "")
        key = f"{(pod.get('metadata') or {}).get('namespace', '')}/{(pod.get('metadata') or {}).get('name', '')}"
        for i, info in enumerate(self.pods):
            if (uid and info.uid == uid) or (not uid and info.key == key):
                del self.pods[i]
                _drop(self.pods_with_affinity, info)
                _drop(self.pods_with_required_anti_affinity, info)
                self.requested.sub(info.requests)
                self.non_zero_requested.sub(info.non_zero_requests)
                self.used_ports = {p for other in self.pods for p in other.host_ports}
                self.generation += 1
                return True
        return False

    def clone(self) -> NodeInfo:
        copy = NodeInfo()
        copy.node, copy.name, copy.node_error = self.node, self.name, self.node_error
        copy.labels, copy.taints, copy.unschedulable = self.labels, self.taints, self.unschedulable
        copy.pods = list(self.pods)
        copy.pods_with_affinity = list(self.pods_with_affinity)
        copy.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        copy.used_ports = set(self.used_ports)
        copy.requested = self.requested.clone()
        copy.non_zero_requested = self.non_zero_requested.clone()
        copy.allocatable = self.allocatable.clone()
        copy.image_states = self.image_states
        copy.generation = self.generation
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"


def _drop(infos: list[PodInfo], info: PodInfo) -> None:
    for i, other in enumerate(infos):
        if other is info:
            del infos[i]
            return


# --- the queue's view of a pod, and cycle results ----------------------------------------------------------


@dataclass(slots=True)
class QueuedPodInfo:
    pod_info: PodInfo
    timestamp: float = 0.0  # when it was last added to a queue
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass
class Diagnosis:
    """Why no node fit: each rejected node's status, and the plugins that rejected the pod."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


def reasons_histogram(statuses: Iterable[Status]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in statuses:
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    return counts

"""NodeResourcesFit: does the node have room for the pod's requests (PreFilter, Filter), and how full would it
be afterwards (PreScore, Score)?

PreFilter computes the pod's requests once: the sum of its containers, or an init container's if larger
(sidecars counted alongside), plus the pod's overhead (`PodInfo`/`api.quantity.pod_requests` do the sums).
Filter compares them with what the node's pods leave of its allocatable and names each shortfall as kube
does: "Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage",
"Insufficient example.com/gpu". The verdict is Unschedulable (preemption may free the room) unless the pod asks
for more than the node's whole allocatable, which no eviction can fix: then UnschedulableAndUnresolvable. A
node whose allocatable could not be parsed is set aside the same way, with the cache's reason.

Score applies the configured strategy (`scoring.py`) over the configured resources. Args
(`NodeResourcesFitArgs`): `ignoredResources` and `ignoredResourceGroups` (extended resources Filter does not
check, e.g. ones an extender manages), and `scoringStrategy` {`type`: LeastAllocated (default) |
MostAllocated | RequestedToCapacityRatio, `resources`: [{name, weight}] (cpu and memory, weight 1, by
default), `requestedToCapacityRatio`: {`shape`: [{utilization, score}]}}; bad args refuse to build the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikube_py.api.quantity import pod_requests
from minikube_py.api.selectors import validate_label_key
from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    PluginArgsError,
    Pod,
    PreFilterResult,
    QueueingHint,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, Resource, pod_info_for
from minikube_py.scheduler.plugins.noderesources import (
    ResourceSpec,
    parse_resource_specs,
    request_vector,
    score_nodes,
    scoring,
)

NAME = "NodeResourcesFit"
LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO = (
    "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class PodRequest:
    """What Filter checks: the pod's requests, extended resources already stripped of the ignored ones."""

    milli_cpu: int
    memory: int
    ephemeral_storage: int
    scalar_resources: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool  # the request exceeds the node's whole allocatable


def _is_extended(name: str) -> bool:
    """kube's IsExtendedResourceName: a domain-prefixed name outside kubernetes.io (`example.com/gpu`)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _insufficient(name: str, requested: int, used: int, capacity: int) -> InsufficientResource:
    return InsufficientResource(name, f"Insufficient {name}", requested, used, capacity, requested > capacity)


def has_room(request: PodRequest, node_info: NodeInfo) -> bool:
    """True when the node certainly has room for the pod (`fits_request` would find nothing lacking); False
    when it may not (then `fits_request` says what is lacking, if anything: a resource the pod does not ask
    for never is, on an overcommitted node either). Filter asks this of nearly every node of every cycle,
    so no list is built and no names are looked up."""
    allocatable, requested = node_info.allocatable, node_info.requested
    return (len(node_info.pods) < allocatable.allowed_pod_number
            and request.milli_cpu + requested.milli_cpu <= allocatable.milli_cpu
            and request.memory + requested.memory <= allocatable.memory
            and request.ephemeral_storage + requested.ephemeral_storage <= allocatable.ephemeral_storage
            and not request.scalar_resources)


def fits_request(request: PodRequest, node_info: NodeInfo) -> list[InsufficientResource]:
    """Every resource the node lacks for the pod (kube's `fitsRequest`: a resource the pod does not ask for is
    never lacking); [] when it fits. Written out flat: Filter asks this of nearly every node of every cycle."""
    insufficient: list[InsufficientResource] = []
    allocatable, requested = node_info.allocatable, node_info.requested
    if len(node_info.pods) + 1 > allocatable.allowed_pod_number:
        insufficient.append(InsufficientResource("pods", "Too many pods", 1, len(node_info.pods),
                                                 allocatable.allowed_pod_number, False))
    cpu, memory, ephemeral_storage = request.milli_cpu, request.memory, request.ephemeral_storage
    if cpu and cpu > allocatable.milli_cpu - requested.milli_cpu:
        insufficient.append(_insufficient("cpu", cpu, requested.milli_cpu, allocatable.milli_cpu))
    if memory and memory > allocatable.memory - requested.memory:
        insufficient.append(_insufficient("memory", memory, requested.memory, allocatable.memory))
    if ephemeral_storage and ephemeral_storage > allocatable.ephemeral_storage - requested.ephemeral_storage:
        insufficient.append(_insufficient("ephemeral-storage", ephemeral_storage, requested.ephemeral_storage,
                                          allocatable.ephemeral_storage))
    for name, amount in request.scalar_resources:
        used, capacity = requested.scalar_resources.get(name, 0), allocatable.scalar_resources.get(name, 0)
        if amount > capacity - used:
            insufficient.append(_insufficient(name, amount, used, capacity))
    return insufficient


def _verdict(request: PodRequest, node_info: NodeInfo) -> Status | None:
    """Filter's verdict: None when the node has room, else kube's reasons (Unresolvable when the pod asks for
    more than the node's whole allocatable, or the node's allocatable could not be read)."""
    if node_info.node_error:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [node_info.node_error])
    insufficient = fits_request(request, node_info)
    if not insufficient:
        return None
    unresolvable = any(r.unresolvable for r in insufficient)
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, [r.reason for r in insufficient])


class Fit:
    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self.ignored_resources = frozenset(_names(args.get("ignoredResources"), "ignoredResources"))
        self.ignored_resource_groups = frozenset(_groups(args.get("ignoredResourceGroups")))
        self.strategy, self.resources, self.scorer = _scoring_strategy(args.get("scoringStrategy"))

    def pod_request(self, pod: Pod, requests: Resource | None = None) -> PodRequest:
        """What the pod asks for, less ignored extended resources (`requests`: already parsed, if at hand)."""
        total = requests if requests is not None else Resource.from_list(pod_requests(pod))
        scalars = tuple((name, amount) for name, amount in total.scalar_resources.items()
                        if amount and not self._ignored(name))
        return PodRequest(total.milli_cpu, total.memory, total.ephemeral_storage, scalars)

    def _ignored(self, name: str) -> bool:
        return _is_extended(name) and (name in self.ignored_resources
                                       or name.split("/", 1)[0] in self.ignored_resource_groups)

    # --- filter ---------------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        state.write(_PRE_FILTER_KEY, self.pod_request(pod, pod_info_for(state, pod).requests))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return _verdict(self._filter_request(state, pod), node_info)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[int, Status]:
        request = self._filter_request(state, pod)
        return {index: status for index, node_info in enumerate(nodes)
                if (node_info.node_error or not has_room(request, node_info))
                and (status := _verdict(request, node_info)) is not None}

    def _filter_request(self, state: CycleState, pod: Pod) -> PodRequest:
        try:
            request: PodRequest = state.read(_PRE_FILTER_KEY)
        except KeyError:  # PreFilter disabled in this profile
            request = self.pod_request(pod)
        return request

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE), _is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                                 self._is_schedulable_after_node_change),
        ]

    def _is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the pod would fit the (empty) node and the node is new or offers more of what it asks."""
        if not isinstance(new, dict):
            return QueueingHint.SKIP
        request, after = self.pod_request(pod), NodeInfo(new)
        if after.node_error or fits_request(request, after):
            return QueueingHint.SKIP
        if not isinstance(old, dict):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if _grew(request, NodeInfo(old).allocatable, after.allocatable) else QueueingHint.SKIP

    # --- score ----------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, request_vector(pod_info_for(state, pod).non_zero_requests, self.resources))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        scores, status = self.score_nodes(state, pod, [node_info])
        return scores[0], status

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        try:
            pod_requests_vector = state.read(_PRE_SCORE_KEY)
        except KeyError:
            pod_requests_vector = request_vector(pod_info_for(state, pod).non_zero_requests, self.resources)
        return score_nodes(nodes, self.resources, pod_requests_vector, False, self.scorer), None

    def score_extensions(self) -> None:
        return None


def _grew(request: PodRequest, before: Resource, after: Resource) -> bool:
    """Whether the node now offers more pods, or more of a resource the pod asks for."""
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    pairs = [(request.milli_cpu, before.milli_cpu, after.milli_cpu), (request.memory, before.memory, after.memory),
             (request.ephemeral_storage, before.ephemeral_storage, after.ephemeral_storage)]
    pairs += [(amount, before.get(name), after.get(name)) for name, amount in request.scalar_resources]
    return any(wanted and now > then for wanted, then, now in pairs)


def _is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Deleting a pod frees resources only when it was bound to a node."""
    bound = isinstance(old, dict) and (old.get("spec") or {}).get("nodeName")
    return QueueingHint.QUEUE if bound else QueueingHint.SKIP


# --- args ---------------------------------------------------------------------------------------------------


def _names(raw: Any, path: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
        raise PluginArgsError(path, f"must be a list of strings, not {raw!r}")
    for i, name in enumerate(raw):
        if problems := validate_label_key(name):
            raise PluginArgsError(f"{path}[{i}]", f"Invalid value: {name!r}: {'; '.join(problems)}")
    return raw


def _groups(raw: Any) -> list[str]:
    groups = _names(raw, "ignoredResourceGroups")
    for i, group in enumerate(groups):
        if "/" in group:
            raise PluginArgsError(f"ignoredResourceGroups[{i}]",
                                  f"Invalid value: {group!r}: resource group name can't contain '/'")
    return groups


def _fit_weight(name: str, weight: int) -> str | None:
    return None if 0 < weight <= 100 else f"resource weight of {name} not in valid range (0, 100]"


def _scoring_strategy(raw: Any) -> tuple[str, tuple[ResourceSpec, ...], scoring.Scorer]:
    """(type, resources, scorer) from `scoringStrategy`, with kube's defaults."""
    if raw is None:
        raw = {"type": LEAST_ALLOCATED}
    if not isinstance(raw, dict):
        raise PluginArgsError("scoringStrategy", f"must be an object, not {raw!r}")
    strategy = raw.get("type")
    if strategy not in STRATEGIES:
        supported = ", ".join(f'"{s}"' for s in STRATEGIES)
        raise PluginArgsError("scoringStrategy.type", f'Unsupported value: "{strategy or ""}": supported values: '
                                                      f"{supported}")
    resources = parse_resource_specs(raw.get("resources"), "scoringStrategy.resources", _fit_weight)
    weights = [spec.weight for spec in resources]
    if strategy == LEAST_ALLOCATED:
        return strategy, resources, scoring.least_allocated(weights)
    if strategy == MOST_ALLOCATED:
        return strategy, resources, scoring.most_allocated(weights)
    shape = _shape((raw.get("requestedToCapacityRatio") or {}).get("shape"))
    return strategy, resources, scoring.requested_to_capacity_ratio(weights, shape)


def _shape(raw: Any) -> list[tuple[int, int]]:
    """`requestedToCapacityRatio.shape`: points sorted by utilization in [0, 100], scores in [0, 10]."""
    path = "scoringStrategy.requestedToCapacityRatio.shape"
    if not raw:
        raise PluginArgsError(path, "Required value: at least one point must be specified")
    if not isinstance(raw, list):
        raise PluginArgsError(path, f"must be a list of {{utilization, score}}, not {raw!r}")
    points = []
    for i, point in enumerate(raw):
        values = [point.get(key, 0) if isinstance(point, dict) else None for key in ("utilization", "score")]
        for key, value, high in zip(("utilization", "score"), values, (100, scoring.MAX_CUSTOM_PRIORITY_SCORE),
                                    strict=True):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
                raise PluginArgsError(f"{path}[{i}].{key}", f"Invalid value: {value!r}: not in valid range [0, {high}]")
        if points and points[-1][0] >= values[0]:
            raise PluginArgsError(f"{path}[{i}].utilization",
                                  f"Invalid value: {values[0]}: utilization values must be sorted in increasing order")
        points.append((values[0], values[1]))
    return points

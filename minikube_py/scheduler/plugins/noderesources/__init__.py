"""The node resource plugins, NodeResourcesFit (`fit.py`) and NodeResourcesBalancedAllocation
(`balanced_allocation.py`), and the scoring machinery they share (kube's `resource_allocation.go`).

Both score a node from two vectors, one entry per configured resource (`resources: [{name, weight}]`, cpu and
memory with weight 1 by default): what the node would have requested with the pod on it, and what it offers.
The pure scoring formulas are in `scoring.py`; this module builds the vectors.

Which "requested" counts: NodeResourcesFit scores cpu and memory with the non-zero requests (a container that
asks for nothing counts as 100m and 200Mi, so empty pods still spread), BalancedAllocation with the actual
requests; other resources always use the actual requests, and an extended resource the pod does not ask for
is left out so it does not drag every node's score.

Score runs on every feasible node of every cycle, so `score_nodes` scores all of them in one call, and scores
each distinct node state once: a score depends only on the node's requested and allocatable amounts (the pod's
are the same for every node), and a pool of identical nodes shares a handful of states.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from minikube_py.scheduler.framework.interface import PluginArgsError
from minikube_py.scheduler.framework.types import CPU, EPHEMERAL_STORAGE, MEMORY, NodeInfo, Resource

_FIELDS = {CPU: "milli_cpu", MEMORY: "memory", EPHEMERAL_STORAGE: "ephemeral_storage"}  # Resource's own fields


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def parse_resource_specs(raw: Any, path: str, check_weight: Callable[[str, int], str | None]
                         ) -> tuple[ResourceSpec, ...]:
    """`resources: [{name, weight}]` from plugin args with kube's defaults (none given: cpu and memory; a weight
    of 0: 1); `check_weight(name, weight)` returns what is wrong with a weight, or None."""
    if not raw:
        return DEFAULT_RESOURCES
    if not isinstance(raw, list):
        raise PluginArgsError(path, f"must be a list of {{name, weight}}, not {raw!r}")
    specs = []
    for i, item in enumerate(raw):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            raise PluginArgsError(f"{path}[{i}].name", "Required value: a resource name")
        weight = item.get("weight") or 0
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise PluginArgsError(f"{path}[{i}].weight", f"Invalid value: {weight!r}: must be an integer")
        weight = weight or 1
        if (problem := check_weight(name, weight)) is not None:
            raise PluginArgsError(f"{path}[{i}].weight", f"Invalid value: {weight}: {problem}")
        specs.append(ResourceSpec(name, weight))
    return tuple(specs)


def request_vector(requests: Resource, resources: Sequence[ResourceSpec]) -> tuple[int, ...]:
    """The pod's request of each configured resource, in the order of `resources`."""
    return tuple(requests.get(spec.name) for spec in resources)


def node_vectors(node_info: NodeInfo, resources: Sequence[ResourceSpec], pod_requests: Sequence[int],
                 use_requested: bool) -> tuple[list[int], list[int]]:
    """(requested including the pod, allocatable) over `resources`, ready for a `scoring` function; a resource
    scored as (0, 0) is left out by every strategy. (`score_nodes` reads cpu, memory and ephemeral-storage
    straight off the node's Resources; this is its way with extended resources.)"""
    allocatable, requested = node_info.allocatable, node_info.requested
    used = requested if use_requested else node_info.non_zero_requested
    requested_vector, allocatable_vector = [], []
    for spec, pod_request in zip(resources, pod_requests, strict=True):
        name = spec.name
        if name == CPU:
            offered, wanted = allocatable.milli_cpu, used.milli_cpu + pod_request
        elif name == MEMORY:
            offered, wanted = allocatable.memory, used.memory + pod_request
        elif name == EPHEMERAL_STORAGE:
            offered, wanted = allocatable.ephemeral_storage, requested.ephemeral_storage + pod_request
        elif pod_request and name in allocatable.scalar_resources:
            offered = allocatable.scalar_resources[name]
            wanted = requested.scalar_resources.get(name, 0) + pod_request
        else:  # an extended resource the pod does not ask for, or the node does not have
            offered = wanted = 0
        requested_vector.append(wanted)
        allocatable_vector.append(offered)
    return requested_vector, allocatable_vector


def score_nodes(nodes: Sequence[NodeInfo], resources: Sequence[ResourceSpec], pod_requests: Sequence[int],
                use_requested: bool, scorer: Callable[[Sequence[int], Sequence[int]], int]) -> list[int]:
    """`scorer(requested, allocatable)` with each node's `node_vectors`, in the order of `nodes`.

    With only cpu, memory and ephemeral-storage configured, a node's state is its requested amounts followed by
    its allocatable ones, read off its Resources in one go, and each distinct state is scored once. (The
    non-zero requests differ from the requests only in cpu and memory, so either holds the node's
    ephemeral-storage.)"""
    fields = [_FIELDS.get(spec.name) for spec in resources]
    if None in fields:  # extended resources: their vectors depend on what the pod asks for
        return [scorer(*node_vectors(node_info, resources, pod_requests, use_requested)) for node_info in nodes]
    used = "requested" if use_requested else "non_zero_requested"
    read = attrgetter(*(f"{used}.{field}" for field in fields), *(f"allocatable.{field}" for field in fields))
    count = len(fields)
    scores: list[int] = []
    scored: dict[tuple[int, ...], int] = {}  # node state -> score
    for node_info in nodes:
        state = read(node_info)
        score = scored.get(state)
        if score is None:
            requested = [amount + pod for amount, pod in zip(state[:count], pod_requests, strict=True)]
            score = scored[state] = scorer(requested, state[count:])
        scores.append(score)
    return scores

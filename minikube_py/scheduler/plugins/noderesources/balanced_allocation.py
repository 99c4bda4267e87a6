"""NodeResourcesBalancedAllocation: prefer nodes whose resources would be used evenly (Score).

A node with 90% of its cpu requested but 10% of its memory strands the memory; this plugin scores each node
`(1 - std) * 100`, where std is the standard deviation of the fractions requested/allocatable of the configured
resources with the pod placed there (cpu and memory by default). Unlike NodeResourcesFit's scoring it counts
the pods' actual requests, without the defaults for containers that request nothing.

Args (`NodeResourcesBalancedAllocationArgs`): `resources` [{name, weight}], each weight 1 (the formula has no
use for weights), no resource twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.api.quantity import pod_requests
from minikube_py.scheduler.framework.interface import CycleState, Handle, PluginArgsError, Pod, Status
from minikube_py.scheduler.framework.types import NodeInfo, Resource, pod_info_for
from minikube_py.scheduler.plugins.noderesources import parse_resource_specs, request_vector, score_nodes
from minikube_py.scheduler.plugins.noderesources.scoring import balanced_allocation

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE_KEY = "PreScore" + NAME


def _weight_must_be_one(name: str, weight: int) -> str | None:
    return None if weight == 1 else "must be 1"


class BalancedAllocation:
    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self.resources = parse_resource_specs(args.get("resources"), "resources", _weight_must_be_one)
        seen: set[str] = set()
        for i, spec in enumerate(self.resources):
            if spec.name in seen:
                raise PluginArgsError(f"resources[{i}].name", f'Duplicate value: "{spec.name}"')
            seen.add(spec.name)

    def _pod_requests(self, pod: Pod) -> tuple[int, ...]:
        return request_vector(Resource.from_list(pod_requests(pod)), self.resources)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, request_vector(pod_info_for(state, pod).requests, self.resources))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        scores, status = self.score_nodes(state, pod, [node_info])
        return scores[0], status

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        try:
            requests = state.read(_PRE_SCORE_KEY)
        except KeyError:  # PreScore disabled in this profile
            requests = self._pod_requests(pod)
        return score_nodes(nodes, self.resources, requests, True, balanced_allocation), None

    def score_extensions(self) -> None:
        return None

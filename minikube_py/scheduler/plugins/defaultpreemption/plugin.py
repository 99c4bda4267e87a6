"""DefaultPreemption: the PostFilter plugin that makes room for a pod by evicting pods of lower priority.

Where it sits: when Filter rejects a pod on every node, the framework runs PostFilter; this plugin hands the
work to `evaluator.Evaluator` and prefixes its message with "preemption: ", which is how the tail of a
FailedScheduling message reads ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are
available: 3 No preemption victims found for incoming pod.").

Args (`DefaultPreemptionArgs`, kubescheduler.config.k8s.io/v1), defaulted as kube does:
* `minCandidateNodesPercentage` (10): at least this share of the nodes worth trying is dry-run,
* `minCandidateNodesAbsolute` (100): and at least this many, so small clusters try every node.
Both bound how many candidates are collected before choosing; they may not both be 0.

Usage rules: build it with `DefaultPreemption(args, handle)` (bad args raise `PluginArgsError`); the result's
`nominated_node_name` is for the scheduler to write into the pod's `status.nominatedNodeName`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikube_py.scheduler.framework.interface import (
    CycleState,
    Handle,
    PluginArgsError,
    Pod,
    PostFilterResult,
    Status,
)
from minikube_py.scheduler.plugins.defaultpreemption.evaluator import Evaluator

PERCENTAGE = "minCandidateNodesPercentage"
ABSOLUTE = "minCandidateNodesAbsolute"
DEFAULT_PERCENTAGE = 10
DEFAULT_ABSOLUTE = 100
_TYPE_FIELDS = ("apiVersion", "kind")


class DefaultPreemption:
    name = "DefaultPreemption"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        percentage, absolute = parse_args(args)
        self.evaluator = Evaluator(handle, self.name, percentage, absolute)

    async def post_filter(self, state: CycleState, pod: Pod,
                          filtered_node_status: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status]:
        result, status = await self.evaluator.preempt(state, pod, filtered_node_status)
        if message := status.message():
            return result, Status(status.code, [f"preemption: {message}"], error=status.error)
        return result, status


def parse_args(args: Mapping[str, Any] | None) -> tuple[int, int]:
    """(minCandidateNodesPercentage, minCandidateNodesAbsolute) from the args, defaulted and validated."""
    args = args or {}
    unknown = sorted(set(args) - {PERCENTAGE, ABSOLUTE, *_TYPE_FIELDS})
    if unknown:
        raise PluginArgsError(unknown[0], f'unknown field "{unknown[0]}"')
    percentage = _integer(args, PERCENTAGE, DEFAULT_PERCENTAGE)
    absolute = _integer(args, ABSOLUTE, DEFAULT_ABSOLUTE)
    if not 0 <= percentage <= 100:
        raise PluginArgsError(PERCENTAGE, f"Invalid value: {percentage}: not in valid range [0, 100]")
    if absolute < 0:
        raise PluginArgsError(ABSOLUTE, f"Invalid value: {absolute}: not in valid range [0, inf)")
    if percentage == 0 and absolute == 0:
        raise PluginArgsError(PERCENTAGE, f"Invalid value: 0: cannot be zero at the same time as {ABSOLUTE}")
    return percentage, absolute


def _integer(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise PluginArgsError(key, f"must be an integer, not {value!r}")
    return value

"""NodeAffinity: the pod's `spec.nodeSelector` and node affinity (Filter), and its preferred node affinity
terms (Score).

Filter rejects nodes that do not carry the labels `nodeSelector` demands or match none of the required terms
("node(s) didn't match Pod's node affinity/selector", UnschedulableAndUnresolvable: no eviction changes a node's
labels). PreFilter does the parsing once and, when every required term pins `metadata.name In [...]`, returns
those names as a PreFilterResult so the other nodes are not even looked at. Score sums the weights of the
preferred terms a node matches; NormalizeScore scales the sums so the best node gets 100.

Args (`NodeAffinityArgs`): `addedAffinity`, a NodeAffinity applied to every pod of the profile on top of its
own (a profile for one pool of nodes); it is checked when the plugin is built and a malformed one refuses to
start the scheduler. The matching itself lives in `api/nodeaffinity.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.api.nodeaffinity import (
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    preferred_scheduling_terms,
)
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
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore
from minikube_py.scheduler.plugins import default_normalize_score

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_PRE_FILTER_KEY = "PreFilterNodeAffinity"
_PRE_SCORE_KEY = "PreScoreNodeAffinity"
_REQUIRED, _PREFERRED = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"


def _args_error(errors: Sequence[str]) -> PluginArgsError:
    path, _, message = errors[0].partition(": ")
    return PluginArgsError(path, "; ".join([message, *errors[1:]]))


class NodeAffinity:
    name = "NodeAffinity"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self.added_node_selector: NodeSelector | None = None
        self.added_preferred: PreferredSchedulingTerms | None = None
        added = args.get("addedAffinity")
        if added is None:
            return
        if not isinstance(added, dict):
            raise PluginArgsError("addedAffinity", f"must be a NodeAffinity object, not {added!r}")
        if added.get(_REQUIRED) is not None:
            self.added_node_selector = NodeSelector.from_api(added[_REQUIRED],
                                                             f"addedAffinity.{_REQUIRED}.nodeSelectorTerms")
            if self.added_node_selector.errors:
                raise _args_error(self.added_node_selector.errors)
        if added.get(_PREFERRED) is not None:
            self.added_preferred = PreferredSchedulingTerms.from_api(added[_PREFERRED], f"addedAffinity.{_PREFERRED}")
            if self.added_preferred.errors:
                raise _args_error(self.added_preferred.errors)

    # --- filter ---------------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        required = RequiredNodeAffinity.of(pod)
        if required.label_selector is None and required.node_selector is None and self.added_node_selector is None:
            return None, Status(Code.SKIP)
        state.write(_PRE_FILTER_KEY, required)
        return _named_nodes(required.node_selector)

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node or {}
        if self.added_node_selector is not None and not self.added_node_selector.matches(node):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_ENFORCED])
        try:
            required = state.read(_PRE_FILTER_KEY)
        except KeyError:  # PreFilter disabled in this profile
            required = RequiredNodeAffinity.of(pod)
        if required.matches(node):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_POD])

    def events_to_register(self) -> list[ClusterEventWithHint]:
        event = ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        return [ClusterEventWithHint(event, self._is_schedulable_after_node_change)]

    def _is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the node matches now and did not before (or did not exist)."""
        if not isinstance(new, dict):
            return QueueingHint.SKIP
        if self.added_node_selector is not None and not self.added_node_selector.matches(new):
            return QueueingHint.SKIP
        required = RequiredNodeAffinity.of(pod)
        if not required.matches(new):
            return QueueingHint.SKIP
        was_matched = isinstance(old, dict) and required.matches(old)
        return QueueingHint.SKIP if was_matched else QueueingHint.QUEUE

    # --- score ----------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        preferred = preferred_scheduling_terms(pod)
        if preferred is not None and preferred.errors:
            return Status.as_error("; ".join(preferred.errors))
        if (preferred is None or not preferred.terms) and self.added_preferred is None:
            return Status(Code.SKIP)
        state.write(_PRE_SCORE_KEY, preferred)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node or {}
        count = self.added_preferred.score(node) if self.added_preferred is not None else 0
        try:
            preferred = state.read(_PRE_SCORE_KEY)
        except KeyError:
            preferred = preferred_scheduling_terms(pod)
        if preferred is not None:
            count += preferred.score(node)
        return count, None

    def score_extensions(self) -> NodeAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(scores)
        return None


def _named_nodes(selector: NodeSelector | None) -> tuple[PreFilterResult | None, Status | None]:
    """Narrow the nodes when every required term names its nodes (`metadata.name In [...]`); the terms are
    ORed, so one term without names means any node may do."""
    if selector is None or not selector.terms:
        return None, None
    names: set[str] = set()
    for term in selector.terms:
        if term.node_names is None:
            return None, None
        names |= term.node_names
    if not names:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_CONFLICT])
    return PreFilterResult(names), None

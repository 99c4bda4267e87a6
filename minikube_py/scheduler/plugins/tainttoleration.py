"""TaintToleration: nodes' taints against the pod's tolerations (Filter), and a preference for nodes with fewer
untolerated PreferNoSchedule taints (Score).

Filter rejects a node with a NoSchedule or NoExecute taint the pod does not tolerate, naming the first such
taint ("node(s) had untolerated taint {key: value}"); evicting pods cannot remove a taint, so the verdict is
UnschedulableAndUnresolvable. Score counts the node's PreferNoSchedule taints the pod does not tolerate, and
NormalizeScore turns the counts around so the node with the most gets 0 and nodes with none get 100.

Hot path: the pod's tolerations are parsed once per cycle (PreFilter, PreScore) into the CycleState; per node
the plugin reads the node's raw taint list (`NodeInfo.taints`) and returns at once when it is empty, the
common case; Filter and Score take the cycle's nodes in one call. A tainted node's list is parsed once and
remembered by identity (the informer replaces a node's dict when it changes, so a list object never changes
meaning). A node whose taints are malformed is set aside with the reason, never raised on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.api.taints import (
    DO_NOT_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Taint,
    Toleration,
    find_untolerated_taint,
    parse_taints,
    pod_tolerations,
    tolerations_tolerate_taint,
)
from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    Pod,
    PreFilterResult,
    QueueingHint,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore
from minikube_py.scheduler.plugins import default_normalize_score, is_own_pod_update, normalized

_PRE_FILTER_KEY = "PreFilterTaintToleration"
_PRE_SCORE_KEY = "PreScoreTaintToleration"
_PARSED_LIMIT = 20_000  # taint lists remembered before starting over (old lists of updated nodes pile up)


def _raw_taints(node: Mapping[str, Any] | None) -> Any:
    """`spec.taints` of a node object (the queueing hint's; Filter and Score read `NodeInfo.taints`)."""
    spec = (node or {}).get("spec")
    return spec.get("taints") if spec else None


class TaintToleration:
    name = "TaintToleration"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        # id(raw taint list) -> (the list, kept so the id stays unique; its taints; its errors)
        self._parsed: dict[int, tuple[Any, list[Taint], list[str]]] = {}

    def _taints(self, raw: Any) -> tuple[list[Taint], list[str]]:
        entry = self._parsed.get(id(raw))
        if entry is None or entry[0] is not raw:
            if len(self._parsed) >= _PARSED_LIMIT:
                self._parsed.clear()
            entry = (raw, *parse_taints(raw))
            self._parsed[id(raw)] = entry
        return entry[1], entry[2]

    # --- filter ---------------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        state.write(_PRE_FILTER_KEY, tuple(pod_tolerations(pod)))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        raw = node_info.taints
        if not raw:
            return None
        try:
            tolerations = state.read(_PRE_FILTER_KEY)
        except KeyError:  # PreFilter disabled in this profile
            tolerations = pod_tolerations(pod)
        taints, errors = self._taints(raw)
        if errors:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f"node(s) had malformed taints: {errors[0]}"])
        taint = find_untolerated_taint(taints, tolerations, DO_NOT_SCHEDULE)
        if taint is None:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f"node(s) had untolerated taint {taint}"])

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[int, Status]:
        return {index: status for index, node_info in enumerate(nodes)
                if node_info.taints and (status := self.filter(state, pod, node_info)) is not None}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                 self._is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION), is_own_pod_update),
        ]

    @staticmethod
    def _is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the node went from having an untolerated taint (or not existing) to having none."""
        tolerations = pod_tolerations(pod)

        def untolerated(node: Any) -> bool:
            taints, errors = parse_taints(_raw_taints(node) if isinstance(node, dict) else None)
            return bool(errors) or find_untolerated_taint(taints, tolerations, DO_NOT_SCHEDULE) is not None

        was_untolerated = old is None or untolerated(old)
        return QueueingHint.QUEUE if was_untolerated and not untolerated(new) else QueueingHint.SKIP

    # --- score ----------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, _prefer_no_schedule_tolerations(pod))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        scores, status = self.score_nodes(state, pod, [node_info])
        return scores[0], status

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """Per node, how many of its PreferNoSchedule taints the pod does not tolerate."""
        try:
            tolerations = state.read(_PRE_SCORE_KEY)
        except KeyError:
            tolerations = _prefer_no_schedule_tolerations(pod)
        return [self._untolerated_preferences(raw, tolerations) if (raw := node_info.taints) else 0
                for node_info in nodes], None

    def _untolerated_preferences(self, raw: Any, tolerations: Sequence[Toleration]) -> int:
        return sum(1 for taint in self._taints(raw)[0] if taint.effect == PREFER_NO_SCHEDULE
                   and not tolerations_tolerate_taint(tolerations, taint))

    def score_extensions(self) -> TaintToleration:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(scores, reverse=True)
        return None

    def normalize_scores(self, state: CycleState, pod: Pod, scores: list[int]) -> tuple[list[int], Status | None]:
        return normalized(scores, reverse=True), None


def _prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    """The tolerations that can tolerate PreferNoSchedule taints (an empty effect means every effect)."""
    return tuple(t for t in pod_tolerations(pod) if t.effect in ("", PREFER_NO_SCHEDULE))

"""The hard half of PodTopologySpread: PreFilter counts matching pods per topology domain, Filter checks skew.

For each `DoNotSchedule` constraint, PreFilter walks every node once and records how many pods the
constraint's selector matches in each domain (`counts`, e.g. {"zone-a": 3, "zone-b": 1}), plus the two
domains with the fewest matches (`CriticalPaths`). Filter then decides a node with lookups only:

    skew = counts[domain of node] + (1 if the pod matches its own selector else 0) - global minimum
    the node fits when skew <= maxSkew for every constraint

The global minimum is the smallest domain count, or 0 while fewer than `minDomains` domains exist. Nodes
excluded by the inclusion policies (nodeAffinityPolicy, nodeTaintsPolicy) or lacking a topology key are not
domains. The AddPod/RemovePod extensions adjust the counts when preemption simulates adding or evicting pods.

Usage rules: a `PreFilterState` belongs to one cycle; `clone()` it before changing it for a what-if (the
CycleState does so when preemption clones the state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from minikube_py.api.nodeaffinity import RequiredNodeAffinity
from minikube_py.api.taints import Toleration
from minikube_py.scheduler.framework.interface import Code, Status
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.podtopologyspread.common import (
    SpreadConstraint,
    count_matching_pods,
    node_labels_match,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
_MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The domain with the fewest matching pods (`value0`/`count0`) and one at least as full (`value1`).

    Two entries suffice because preemption only ever changes the pods of one node per cloned state.
    """

    __slots__ = ("value0", "count0", "value1", "count1")

    def __init__(self) -> None:
        self.value0, self.count0, self.value1, self.count1 = "", _MAX_INT32, "", _MAX_INT32

    def update(self, value: str, count: int) -> None:
        if value == self.value0 or value == self.value1:
            if value == self.value0:
                self.count0 = count
            else:
                self.count1 = count
            if self.count0 > self.count1:
                self.value0, self.count0, self.value1, self.count1 = (
                    self.value1, self.count1, self.value0, self.count0)
        elif count < self.count0:
            self.value1, self.count1 = self.value0, self.count0
            self.value0, self.count0 = value, count
        elif count < self.count1:
            self.value1, self.count1 = value, count

    def copy(self) -> CriticalPaths:
        other = CriticalPaths()
        other.value0, other.count0 = self.value0, self.count0
        other.value1, other.count1 = self.value1, self.count1
        return other


class PreFilterState:
    """What Filter reads: per constraint, the pod's self-match, the domain counts and the critical paths."""

    def __init__(self, constraints: list[SpreadConstraint], namespace: str, labels: Mapping[str, str],
                 affinity: RequiredNodeAffinity, tolerations: Sequence[Toleration]) -> None:
        self.constraints = constraints
        self.namespace = namespace
        self.self_match = [1 if c.selector.matches(labels) else 0 for c in constraints]
        self.affinity = affinity
        self.tolerations = tolerations
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        self.critical_paths = [CriticalPaths() for _ in constraints]

    def min_match_num(self, index: int, min_domains: int) -> int:
        if len(self.counts[index]) < min_domains:
            return 0  # too few domains: count the missing ones as empty
        return self.critical_paths[index].count0

    def clone(self) -> PreFilterState:
        copy = object.__new__(PreFilterState)
        copy.constraints, copy.namespace, copy.self_match = self.constraints, self.namespace, self.self_match
        copy.affinity, copy.tolerations = self.affinity, self.tolerations
        copy.counts = [dict(counts) for counts in self.counts]
        copy.critical_paths = [paths.copy() for paths in self.critical_paths]
        return copy


def compute_pre_filter_state(state: PreFilterState, nodes: Sequence[NodeInfo]) -> PreFilterState:
    """Fill the domain counts and critical paths of `state` from the pods on `nodes`."""
    constraints = state.constraints
    for node_info in nodes:
        labels = node_info.labels
        if node_info.node is None or not node_labels_match(labels, constraints):
            continue
        for i, constraint in enumerate(constraints):
            if not constraint.includes_node(node_info, state.affinity, state.tolerations):
                continue
            value = labels[constraint.topology_key]
            matched = count_matching_pods(node_info.pods, constraint.selector, state.namespace)
            state.counts[i][value] = state.counts[i].get(value, 0) + matched
    for i, counts in enumerate(state.counts):
        for value, count in counts.items():
            state.critical_paths[i].update(value, count)
    return state


def filter_node(state: PreFilterState, node_info: NodeInfo) -> Status | None:
    """Whether placing the pod on this node keeps every hard constraint within its maxSkew."""
    labels = node_info.labels
    for i, constraint in enumerate(state.constraints):
        value = labels.get(constraint.topology_key)
        if value is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_NODE_LABEL_NOT_MATCH])
        minimum = state.min_match_num(i, constraint.min_domains)
        skew = state.counts[i].get(value, 0) + state.self_match[i] - minimum
        if skew > constraint.max_skew:
            return Status(Code.UNSCHEDULABLE, [ERR_REASON_CONSTRAINTS_NOT_MATCH])
    return None


def update_with_pod(state: PreFilterState, pod_info: PodInfo, node_info: NodeInfo, delta: int) -> None:
    """Count `pod_info` on `node_info` in (delta=1) or out (delta=-1) of the domains it matches."""
    if pod_info.namespace != state.namespace or node_info.node is None:
        return
    labels = node_info.labels
    if not node_labels_match(labels, state.constraints):
        return
    for i, constraint in enumerate(state.constraints):
        if not constraint.selector.matches(pod_info.labels):
            continue
        if not constraint.includes_node(node_info, state.affinity, state.tolerations):
            continue
        value = labels[constraint.topology_key]
        state.counts[i][value] = state.counts[i].get(value, 0) + delta
        state.critical_paths[i].update(value, state.counts[i][value])

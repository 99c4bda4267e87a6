"""The soft half of PodTopologySpread: prefer nodes whose domains hold fewer matching pods.

PreScore looks at the `ScheduleAnyway` constraints (the pod's own, or the system defaults on hostname and
zone). Every feasible node names a domain per constraint; PreScore counts the matching pods in those domains
over all nodes, then Score adds per constraint

    count(domain of node) * log(number of domains + 2) + (maxSkew - 1)

so a constraint over few domains (zones) weighs less per pod than one over many (hostnames), and a larger
maxSkew flattens the differences. NormalizeScore reverses the scale: the emptiest node gets 100,

    score = 100 * (max + min - raw) / max        (all 100 when every raw score is 0)

Nodes missing a topology key of the pod's own constraints are ignored (score 0). With the system defaults a
node without a zone label still takes part, spreading by hostname only.

Usage rules: the state is read-only once written, so `clone()` returns it unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from minikube_py.api.nodeaffinity import RequiredNodeAffinity
from minikube_py.api.selectors import LabelSelector
from minikube_py.api.taints import Toleration
from minikube_py.scheduler.framework.interface import MAX_NODE_SCORE
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore
from minikube_py.scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    SpreadConstraint,
    count_matching_pods,
    node_labels_match,
)


class PreScoreState:
    """Per constraint: its weight, the matching-pod count of each domain (hostname: of each node by name)."""

    def __init__(self, constraints: list[SpreadConstraint], namespace: str) -> None:
        self.constraints = constraints
        self.namespace = namespace
        self.ignored_nodes: set[str] = set()
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        self.weights: list[float] = [0.0] * len(constraints)
        self.by_hostname = [c.topology_key == LABEL_HOSTNAME for c in constraints]

    def clone(self) -> PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    """How much one matching pod weighs in a topology with `size` domains."""
    return math.log(size + 2)


class _PodCounter:
    """Matching pods per node, counted once per node and distinct selector (the system defaults share one)."""

    def __init__(self, constraints: Sequence[SpreadConstraint], namespace: str) -> None:
        distinct: dict[LabelSelector, int] = {}
        self.slots = [distinct.setdefault(c.selector, len(distinct)) for c in constraints]
        self.selectors = list(distinct)
        self.namespace = namespace
        self.cache: dict[str, list[int | None]] = {}

    def count(self, node_info: NodeInfo, index: int) -> int:
        if not node_info.pods:
            return 0
        counts = self.cache.get(node_info.name)
        if counts is None:
            counts = self.cache[node_info.name] = [None] * len(self.selectors)
        slot = self.slots[index]
        found = counts[slot]
        if found is None:
            found = counts[slot] = count_matching_pods(node_info.pods, self.selectors[slot], self.namespace)
        return found


def compute_pre_score_state(state: PreScoreState, filtered_nodes: Sequence[NodeInfo],
                            all_nodes: Sequence[NodeInfo], require_all_topologies: bool,
                            affinity: RequiredNodeAffinity,
                            tolerations: Sequence[Toleration]) -> PreScoreState:
    """Count the matching pods of every domain the feasible nodes are in, over all nodes."""
    counter = _PodCounter(state.constraints, state.namespace)
    _collect_domains(state, filtered_nodes, require_all_topologies, counter)
    for node_info in all_nodes:
        labels = node_info.labels
        if node_info.node is None:
            continue
        if require_all_topologies and not node_labels_match(labels, state.constraints):
            continue
        for i, constraint in enumerate(state.constraints):
            counts = state.counts[i]
            value = labels.get(constraint.topology_key, "")
            if state.by_hostname[i] or value not in counts:
                continue
            if constraint.includes_node(node_info, affinity, tolerations):
                counts[value] += counter.count(node_info, i)
    return state


def _collect_domains(state: PreScoreState, filtered_nodes: Sequence[NodeInfo], require_all_topologies: bool,
                     counter: _PodCounter) -> None:
    """The domains of the feasible nodes (their counts start at 0), the ignored nodes and the weights.

    Hostname constraints count the pods of each feasible node right here, keyed by node name, so that
    Score is a lookup.
    """
    sizes = [0] * len(state.constraints)
    for node_info in filtered_nodes:
        labels = node_info.labels
        if require_all_topologies and not node_labels_match(labels, state.constraints):
            state.ignored_nodes.add(node_info.name)
            continue
        for i, constraint in enumerate(state.constraints):
            if state.by_hostname[i]:
                if constraint.topology_key in labels:
                    state.counts[i][node_info.name] = counter.count(node_info, i)
                continue
            value = labels.get(constraint.topology_key, "")
            if value not in state.counts[i]:
                state.counts[i][value] = 0
                sizes[i] += 1
    eligible = len(filtered_nodes) - len(state.ignored_nodes)
    state.weights = [topology_normalizing_weight(eligible if state.by_hostname[i] else sizes[i])
                     for i in range(len(state.constraints))]


def score_node(state: PreScoreState, node_info: NodeInfo) -> int:
    """The raw score: weighted matching pods in the node's domains (lower is better before normalising)."""
    if node_info.name in state.ignored_nodes:
        return 0
    labels = node_info.labels
    score = 0.0
    for i, constraint in enumerate(state.constraints):
        value = labels.get(constraint.topology_key)
        if value is None:
            continue
        count = state.counts[i].get(node_info.name if state.by_hostname[i] else value, 0)
        score += count * state.weights[i] + (constraint.max_skew - 1)
    return math.floor(score + 0.5)  # round half away from zero, as Go's math.Round (scores are >= 0)


def normalize_scores(state: PreScoreState, scores: list[NodeScore]) -> None:
    """Reverse and rescale the raw scores in place: fewest matching pods → 100; ignored nodes → 0."""
    counted = [s.score for s in scores if s.name not in state.ignored_nodes]
    lowest, highest = (min(counted), max(max(counted), 0)) if counted else (0, 0)
    for node_score in scores:
        if node_score.name in state.ignored_nodes:
            node_score.score = 0
        elif highest == 0:
            node_score.score = MAX_NODE_SCORE
        else:
            node_score.score = MAX_NODE_SCORE * (highest + lowest - node_score.score) // highest

"""The preferred half of InterPodAffinity: score nodes by the weights of the (anti-)affinities they meet.

PreScore walks the existing pods once and adds weights to the topology pair of each pod's node:

* +weight / -weight when the existing pod matches a preferred affinity / anti-affinity term of the new pod;
* +hardPodAffinityWeight when the incoming pod matches a *required* affinity term of the existing pod (pods
  that must be near the incoming one attract it);
* +weight / -weight when the new pod matches a preferred affinity / anti-affinity term of the existing pod.

The result is a map topology key → value → total; Score sums the totals of the node's pairs (a lookup per
key) and NormalizeScore maps the raw scores linearly onto 0..100 between their minimum and maximum.

Usage rules: when the incoming pod has no preferred terms only nodes hosting pods with affinity terms are
visited; with `ignorePreferredTermsOfExistingPods` such pods are skipped altogether. The state is read-only
once written, so `clone()` returns it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from minikube_py.scheduler.framework.interface import MAX_NODE_SCORE
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore, PodInfo, WeightedAffinityTerm
from minikube_py.scheduler.plugins.interpodaffinity.filtering import term_matches

TopologyScore = dict[str, dict[str, int]]  # topology key -> value -> summed weight


class PreScoreState:
    """The incoming pod's merged preferred terms, its namespace labels and the topology score."""

    def __init__(self, pod_info: PodInfo, affinity_terms: list[WeightedAffinityTerm],
                 anti_affinity_terms: list[WeightedAffinityTerm], namespace_labels: dict[str, str] | None,
                 hard_pod_affinity_weight: int) -> None:
        self.pod_info = pod_info
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = namespace_labels
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.topology_score: TopologyScore = {}

    def clone(self) -> PreScoreState:
        return self


def compute_topology_score(state: PreScoreState, nodes: Iterable[NodeInfo], all_pods: bool) -> None:
    """Fill `state.topology_score` from the pods on `nodes` (all, or only those with affinity terms)."""
    for node_info in nodes:
        labels = node_info.labels
        if not labels:
            continue
        for existing in node_info.pods if all_pods else node_info.pods_with_affinity:
            _process_existing_pod(state, existing, labels)


def _process_existing_pod(state: PreScoreState, existing: PodInfo, labels: Mapping[str, str]) -> None:
    incoming, namespace_labels = state.pod_info, state.namespace_labels
    for weighted in state.affinity_terms:
        if term_matches(weighted.term, existing, None):
            _add(state.topology_score, labels, weighted.term.topology_key, weighted.weight)
    for weighted in state.anti_affinity_terms:
        if term_matches(weighted.term, existing, None):
            _add(state.topology_score, labels, weighted.term.topology_key, -weighted.weight)
    if state.hard_pod_affinity_weight > 0:
        for term in existing.required_affinity_terms:
            if term_matches(term, incoming, namespace_labels):
                _add(state.topology_score, labels, term.topology_key, state.hard_pod_affinity_weight)
    for weighted in existing.preferred_affinity_terms:
        if term_matches(weighted.term, incoming, namespace_labels):
            _add(state.topology_score, labels, weighted.term.topology_key, weighted.weight)
    for weighted in existing.preferred_anti_affinity_terms:
        if term_matches(weighted.term, incoming, namespace_labels):
            _add(state.topology_score, labels, weighted.term.topology_key, -weighted.weight)


def _add(score: TopologyScore, labels: Mapping[str, str], key: str, weight: int) -> None:
    value = labels.get(key)
    if value is not None:
        values = score.setdefault(key, {})
        values[value] = values.get(value, 0) + weight


def score_node(state: PreScoreState, node_info: NodeInfo) -> int:
    labels = node_info.labels
    score = 0
    for key, values in state.topology_score.items():
        value = labels.get(key)
        if value is not None:
            score += values.get(value, 0)
    return score


def normalize_scores(state: PreScoreState, scores: Sequence[NodeScore]) -> None:
    """Map the raw scores onto 0..100 linearly between their minimum and maximum (all 0 when equal)."""
    if not state.topology_score or not scores:
        return
    lowest = min(s.score for s in scores)
    spread = max(s.score for s in scores) - lowest
    for node_score in scores:
        node_score.score = int(MAX_NODE_SCORE * ((node_score.score - lowest) / spread)) if spread > 0 else 0

"""The required half of InterPodAffinity: PreFilter counts pods per topology pair, Filter looks them up.

A topology pair is (topology key, node label value), e.g. ("topology.kubernetes.io/zone", "zone-a"). PreFilter
builds three counts of pods per pair:

* existing anti-affinity: existing pods whose required anti-affinity terms match the incoming pod, counted in
  their own node's pair for each such term — a node in such a pair is off limits;
* affinity: existing pods matching *all* of the incoming pod's required affinity terms — a node fits only if
  every term's pair has one (or, when no pod anywhere matches and the pod matches its own terms, the first
  pod of a group that likes itself may go anywhere with the topology keys);
* anti-affinity: existing pods matching one of the incoming pod's anti-affinity terms — a node in such a pair
  is off limits.

Filter then costs a dict lookup per term (per node label for the first count). AddPod/RemovePod adjust the
counts when preemption simulates adding or evicting pods.

Usage rules: the incoming pod's terms have their `namespaceSelector` resolved into namespace names once
(`merge_namespaces`), so they are matched without namespace labels; existing pods' terms are matched with the
incoming pod's namespace labels. `term_matches` holds kube's rule for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from minikube_py.api.selectors import NOTHING
from minikube_py.scheduler.framework.interface import Code, Status
from minikube_py.scheduler.framework.types import AffinityTerm, NodeInfo, PodInfo

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

TopologyCounts = dict[tuple[str, str], int]  # (topology key, value) -> matching pods


# --- matching terms ---------------------------------------------------------------------------------------


def term_matches(term: AffinityTerm, pod_info: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
    """Whether the term is about `pod_info`: its namespace is listed or selected, and its labels match.

    Unlike `AffinityTerm.matches`, missing namespace labels match an empty (select-all) namespaceSelector,
    which is how kube treats the incoming pod's merged terms.
    """
    if pod_info.namespace in term.namespaces or term.namespace_selector.matches(namespace_labels):
        return term.selector.matches(pod_info.labels)
    return False


def matches_all_terms(terms: Sequence[AffinityTerm], pod_info: PodInfo) -> bool:
    """Whether `pod_info` satisfies every term (False for no terms): one pod must satisfy them all."""
    if not terms:
        return False
    for term in terms:
        if not term_matches(term, pod_info, None):
            return False
    return True


def merge_namespaces(term: AffinityTerm, namespace_lister: Any) -> AffinityTerm:
    """The term with the namespaces its namespaceSelector selects added to its list, and the selector dropped.

    A select-all (`{}`) selector is kept as it is: it matches every namespace without listing them.
    """
    selector = term.namespace_selector
    if selector.empty or selector.matches_nothing:
        return term
    found = namespace_lister.list(selector=selector) if namespace_lister is not None else []
    names = {(ns.get("metadata") or {}).get("name", "") for ns in found}
    return AffinityTerm(term.selector, term.namespaces | names, term.topology_key, NOTHING)


def namespace_labels(namespace: str, namespace_lister: Any) -> dict[str, str] | None:
    """The labels of the pod's namespace, or None when it is not (yet) known (kube assumes an empty set)."""
    if namespace_lister is None:
        return None
    try:
        found = namespace_lister.get(namespace)
    except Exception:  # NotFound or an unsynced cache: kube goes on without namespace labels
        return None
    return dict((found.get("metadata") or {}).get("labels") or {})


def _add(counts: TopologyCounts, labels: Mapping[str, str], key: str, delta: int) -> None:
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + delta
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


# --- the state ---------------------------------------------------------------------------------------------


class PreFilterState:
    """The incoming pod's merged terms, its namespace labels and the three counts."""

    def __init__(self, pod_info: PodInfo, affinity_terms: list[AffinityTerm],
                 anti_affinity_terms: list[AffinityTerm], labels_of_namespace: dict[str, str] | None) -> None:
        self.pod_info = pod_info
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = labels_of_namespace
        self.matches_own_affinity = matches_all_terms(affinity_terms, pod_info)
        self.existing_anti_affinity_counts: TopologyCounts = {}
        self.affinity_counts: TopologyCounts = {}
        self.anti_affinity_counts: TopologyCounts = {}

    def clone(self) -> PreFilterState:
        copy = object.__new__(PreFilterState)
        copy.__dict__.update(self.__dict__)
        copy.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        copy.affinity_counts = dict(self.affinity_counts)
        copy.anti_affinity_counts = dict(self.anti_affinity_counts)
        return copy


def count_existing_anti_affinity(state: PreFilterState, nodes_with_anti_affinity: Iterable[NodeInfo]) -> None:
    """Existing pods whose required anti-affinity terms match the incoming pod."""
    for node_info in nodes_with_anti_affinity:
        labels = node_info.labels
        for existing in node_info.pods_with_required_anti_affinity:
            for term in existing.required_anti_affinity_terms:
                if term_matches(term, state.pod_info, state.namespace_labels):
                    _add(state.existing_anti_affinity_counts, labels, term.topology_key, 1)


def count_incoming_terms(state: PreFilterState, nodes: Iterable[NodeInfo]) -> None:
    """Existing pods matching the incoming pod's required affinity (all terms) or anti-affinity (any)."""
    if not state.affinity_terms and not state.anti_affinity_terms:
        return
    for node_info in nodes:
        labels = node_info.labels
        for existing in node_info.pods:
            _count_existing_pod(state, existing, labels, 1)


def _count_existing_pod(state: PreFilterState, existing: PodInfo, labels: Mapping[str, str],
                        delta: int) -> None:
    if state.affinity_terms and matches_all_terms(state.affinity_terms, existing):
        for term in state.affinity_terms:
            _add(state.affinity_counts, labels, term.topology_key, delta)
    for term in state.anti_affinity_terms:
        if term_matches(term, existing, None):
            _add(state.anti_affinity_counts, labels, term.topology_key, delta)


def update_with_pod(state: PreFilterState, pod_info: PodInfo, node_info: NodeInfo, delta: int) -> None:
    """Count `pod_info` on `node_info` in (delta=1) or out (delta=-1) of all three counts."""
    labels = node_info.labels
    for term in pod_info.required_anti_affinity_terms:
        if term_matches(term, state.pod_info, state.namespace_labels):
            _add(state.existing_anti_affinity_counts, labels, term.topology_key, delta)
    _count_existing_pod(state, pod_info, labels, delta)


# --- Filter ------------------------------------------------------------------------------------------------


def filter_node(state: PreFilterState, node_info: NodeInfo) -> Status | None:
    labels = node_info.labels
    if not _satisfies_pod_affinity(state, labels):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_AFFINITY_RULES_NOT_MATCH])
    if not _satisfies_pod_anti_affinity(state, labels):
        return Status(Code.UNSCHEDULABLE, [ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH])
    if not _satisfies_existing_pods_anti_affinity(state, labels):
        return Status(Code.UNSCHEDULABLE, [ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH])
    return None


def _satisfies_pod_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for term in state.affinity_terms:
        value = labels.get(term.topology_key)
        if value is None:
            return False  # the node must carry every topology key
        if state.affinity_counts.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    # No matching pod anywhere, but the pod matches its own terms: the first of its group may go here.
    return pods_exist or (not state.affinity_counts and state.matches_own_affinity)


def _satisfies_pod_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    if not state.anti_affinity_counts:
        return True
    for term in state.anti_affinity_terms:
        value = labels.get(term.topology_key)
        if value is not None and state.anti_affinity_counts.get((term.topology_key, value), 0) > 0:
            return False
    return True


def _satisfies_existing_pods_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = state.existing_anti_affinity_counts
    if not counts:
        return True
    for pair in labels.items():
        if counts.get(pair, 0) > 0:
            return False
    return True

"""InterPodAffinity: place pods near (affinity) or away from (anti-affinity) other pods, per topology domain.

Extension points: PreFilter (with AddPod/RemovePod) and Filter enforce required terms — the incoming pod's
and the required anti-affinity of pods already running (`filtering.py`); PreScore, Score and NormalizeScore
weigh preferred terms of both sides and existing pods' required affinity (`scoring.py`);
`events_to_register` says which pod and node changes can make a rejected pod fit.

Args (`InterPodAffinityArgs`): `hardPodAffinityWeight` (default 1, 0..100) is the score an existing pod's
required affinity term gives the nodes of its domain when the incoming pod matches it;
`ignorePreferredTermsOfExistingPods` (default false) skips scoring for pods without preferred terms.

Usage rules: PreFilter returns Skip when the pod has no required terms and no running pod has required
anti-affinity; PreScore returns Skip when nothing would be scored. Both read the namespace lister only for
pods that get past those checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.api import errors as field_errors
from minikube_py.client import resources
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
from minikube_py.scheduler.framework.types import (
    NodeInfo,
    NodeScore,
    PodInfo,
    WeightedAffinityTerm,
    pod_info_for,
)
from minikube_py.scheduler.plugins.interpodaffinity import filtering, scoring
from minikube_py.scheduler.plugins.interpodaffinity.filtering import (
    matches_all_terms,
    merge_namespaces,
    term_matches,
)

NAME = "InterPodAffinity"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class InterPodAffinity:
    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        weight, ignore_preferred = validate_args(args or {})
        self.hard_pod_affinity_weight, self.ignore_preferred_terms_of_existing_pods = weight, ignore_preferred
        self.handle = handle
        informers = handle.informers
        self.namespaces = informers.lister(resources.NAMESPACES) if informers is not None else None

    # --- PreFilter / Filter ------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        nodes_with_anti_affinity = self.handle.snapshot.have_pods_with_required_anti_affinity_list()
        if not nodes_with_anti_affinity and not _has_terms(pod, _REQUIRED):
            return None, Status(Code.SKIP)
        pod_info = pod_info_for(state, pod)
        if pod_info.parse_error:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f"parsing pod: {pod_info.parse_error}"])
        pre_filter_state = filtering.PreFilterState(
            pod_info, [merge_namespaces(t, self.namespaces) for t in pod_info.required_affinity_terms],
            [merge_namespaces(t, self.namespaces) for t in pod_info.required_anti_affinity_terms],
            filtering.namespace_labels(pod_info.namespace, self.namespaces))
        filtering.count_existing_anti_affinity(pre_filter_state, nodes_with_anti_affinity)
        filtering.count_incoming_terms(pre_filter_state, nodes)
        if not (pre_filter_state.existing_anti_affinity_counts or pre_filter_state.affinity_terms
                or pre_filter_state.anti_affinity_terms):
            return None, Status(Code.SKIP)
        state.write(_PRE_FILTER_KEY, pre_filter_state)
        return None, None

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod_to_remove, node_info, -1)

    def _update_with_pod(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo,
                         delta: int) -> Status | None:
        try:
            filtering.update_with_pod(state.read(_PRE_FILTER_KEY), pod_info, node_info, delta)
        except KeyError:
            return Status.state_not_found(_PRE_FILTER_KEY)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            pre_filter_state = state.read(_PRE_FILTER_KEY)
        except KeyError:
            return Status.state_not_found(_PRE_FILTER_KEY)
        return filtering.filter_node(pre_filter_state, node_info)

    # --- PreScore / Score / NormalizeScore ---------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        has_preferred = _has_terms(pod, _PREFERRED)
        if not nodes or (self.ignore_preferred_terms_of_existing_pods and not has_preferred):
            return Status(Code.SKIP)
        snapshot = self.handle.snapshot
        # Without preferred terms of its own, only pods with affinity terms can score the pod.
        all_nodes = snapshot.list() if has_preferred else snapshot.have_pods_with_affinity_list()
        if not all_nodes:
            return Status(Code.SKIP)
        pod_info = pod_info_for(state, pod)
        pre_score_state = scoring.PreScoreState(
            pod_info, [self._merged(t) for t in pod_info.preferred_affinity_terms],
            [self._merged(t) for t in pod_info.preferred_anti_affinity_terms],
            filtering.namespace_labels(pod_info.namespace, self.namespaces), self.hard_pod_affinity_weight)
        scoring.compute_topology_score(pre_score_state, all_nodes, all_pods=has_preferred)
        if not pre_score_state.topology_score:
            return Status(Code.SKIP)
        state.write(_PRE_SCORE_KEY, pre_score_state)
        return None

    def _merged(self, weighted: WeightedAffinityTerm) -> WeightedAffinityTerm:
        return WeightedAffinityTerm(merge_namespaces(weighted.term, self.namespaces), weighted.weight)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            return scoring.score_node(state.read(_PRE_SCORE_KEY), node_info), None
        except KeyError:
            return 0, Status.state_not_found(_PRE_SCORE_KEY)

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        try:
            scoring.normalize_scores(state.read(_PRE_SCORE_KEY), scores)
        except KeyError:
            return Status.state_not_found(_PRE_SCORE_KEY)
        return None

    # --- queueing ----------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return [ClusterEventWithHint(ClusterEvent("Pod", pod_actions), self.is_schedulable_after_pod_change),
                ClusterEventWithHint(ClusterEvent("Node", node_actions),
                                     self.is_schedulable_after_node_change)]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue when an assigned pod starts matching the pod's affinity, stops matching its anti-affinity,
        or goes away while it matched the pod's anti-affinity (or its own anti-affinity repelled the pod)."""
        if any(changed is not None and not (changed.get("spec") or {}).get("nodeName")
               for changed in (old, new)):
            return QueueingHint.SKIP
        target = PodInfo.of(pod)
        affinity, anti_affinity = target.required_affinity_terms, target.required_anti_affinity_terms
        if old is not None and new is not None:
            before, after = PodInfo.of(old), PodInfo.of(new)
            gained = not matches_all_terms(affinity, before) and matches_all_terms(affinity, after)
            lost = matches_all_terms(anti_affinity, before) and not matches_all_terms(anti_affinity, after)
            return QueueingHint.QUEUE if gained or lost else QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if matches_all_terms(affinity, PodInfo.of(new)) else QueueingHint.SKIP
        deleted = PodInfo.of(old or {})
        # kube 1.32 only checks the first case; the second (fixed upstream later) avoids a 5-minute wait.
        repelled = any(term_matches(t, target, None) for t in deleted.required_anti_affinity_terms)
        repelling = matches_all_terms(anti_affinity, deleted) or repelled
        return QueueingHint.QUEUE if repelling else QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Mapping[str, Any] | None,
                                         new: Mapping[str, Any] | None) -> QueueingHint:
        """Queue when a node gains or changes an affinity topology key, or a node appears or changes its
        domain for an anti-affinity topology key (or appears at all, for a pod without affinity terms)."""
        target = PodInfo.of(pod)
        new_labels = _labels(new)
        if old is None:
            keys = [t.topology_key for t in target.required_affinity_terms]
            return QueueingHint.QUEUE if not keys or any(k in new_labels for k in keys) else QueueingHint.SKIP
        old_labels = _labels(old)
        for term in target.required_affinity_terms:
            key = term.topology_key
            if key in new_labels and old_labels.get(key) != new_labels[key]:
                return QueueingHint.QUEUE
        for term in target.required_anti_affinity_terms:
            key = term.topology_key
            if key in old_labels and old_labels[key] != new_labels.get(key):
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _has_terms(pod: Pod, kind: str) -> bool:
    """Whether the pod's podAffinity or podAntiAffinity lists terms of `kind` (required or preferred)."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    return any(((affinity.get(side) or {}).get(kind)) for side in ("podAffinity", "podAntiAffinity"))


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def validate_args(args: Mapping[str, Any]) -> tuple[int, bool]:
    """hardPodAffinityWeight and ignorePreferredTermsOfExistingPods, or PluginArgsError naming the bad one."""
    weight = args.get("hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    if weight is None:
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
        problem = field_errors.invalid("hardPodAffinityWeight", weight, "not in valid range [0, 100]")
        raise PluginArgsError(problem.field, problem.message)
    ignore = args.get("ignorePreferredTermsOfExistingPods") or False
    if not isinstance(ignore, bool):
        raise PluginArgsError("ignorePreferredTermsOfExistingPods",
                              f"Invalid value: {ignore!r}: must be a boolean")
    return weight, ignore

"""PodTopologySpread: spread a workload's pods evenly across topology domains (zones, nodes, …).

Extension points: PreFilter (with AddPod/RemovePod) and Filter enforce the pod's `DoNotSchedule` constraints
(`filtering.py`); PreScore, Score and NormalizeScore prefer nodes in emptier domains for `ScheduleAnyway`
ones (`scoring.py`); `events_to_register` says which pod and node changes can make a rejected pod fit.

Args (`PodTopologySpreadArgs`): `defaultingType` "System" (the default: ScheduleAnyway on hostname with
maxSkew 3 and on zone with maxSkew 5) or "List" (use `defaultConstraints`, which must then carry no
labelSelector). Default constraints apply only to pods that declare none, with a selector deduced from
the Services and workload controllers selecting the pod (`common.py`).

Usage rules: PreFilter and PreScore return Skip when the pod has no constraints of their kind, so pods that
do not spread cost a few dict reads; Filter and Score are lookups into the state those two wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikube_py.api import errors as field_errors
from minikube_py.api.errors import APIError
from minikube_py.api.nodeaffinity import RequiredNodeAffinity
from minikube_py.api.selectors import validate_label_key
from minikube_py.api.taints import pod_tolerations
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
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore, PodInfo, pod_uid
from minikube_py.scheduler.plugins.podtopologyspread import filtering, scoring
from minikube_py.scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    ConstraintSource,
    SpreadConstraint,
    node_labels_match,
)

NAME = "PodTopologySpread"
SYSTEM_DEFAULTING, LIST_DEFAULTING = "System", "List"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME


class PodTopologySpread:
    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        defaulting_type, default_constraints = validate_args(args or {})
        self.handle = handle
        self.system_defaulted = defaulting_type == SYSTEM_DEFAULTING
        defaults = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else default_constraints
        self.constraints = ConstraintSource(defaults, handle.informers if defaults else None)

    # --- PreFilter / Filter ------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.constraints.of(pod, DO_NOT_SCHEDULE)
        except APIError as error:
            return None, Status.as_error(f"get constraints from pod: {error.message}")
        if not constraints:
            return None, Status(Code.SKIP)
        metadata = pod.get("metadata") or {}
        pre_filter_state = filtering.PreFilterState(
            constraints, metadata.get("namespace", ""), metadata.get("labels") or {},
            RequiredNodeAffinity.of(pod), pod_tolerations(pod))
        state.write(_PRE_FILTER_KEY, filtering.compute_pre_filter_state(pre_filter_state, nodes))
        return None, None

    def pre_filter_extensions(self) -> PodTopologySpread:
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
            pre_filter_state = state.read(_PRE_FILTER_KEY)
        except KeyError:
            return Status.state_not_found(_PRE_FILTER_KEY)
        filtering.update_with_pod(pre_filter_state, pod_info, node_info, delta)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            pre_filter_state = state.read(_PRE_FILTER_KEY)
        except KeyError:
            return Status.state_not_found(_PRE_FILTER_KEY)
        return filtering.filter_node(pre_filter_state, node_info)

    # --- PreScore / Score / NormalizeScore ---------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self.handle.snapshot.list()
        if not all_nodes:
            return Status(Code.SKIP)
        try:
            constraints = self.constraints.of(pod, SCHEDULE_ANYWAY)
        except APIError as error:
            return Status.as_error(f"obtaining pod's soft topology spread constraints: {error.message}")
        if not constraints:
            return Status(Code.SKIP)
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        # Only the system defaults tolerate nodes lacking a topology key (no zone: hostname still counts).
        require_all = bool(spec.get("topologySpreadConstraints")) or not self.system_defaulted
        pre_score_state = scoring.PreScoreState(constraints, metadata.get("namespace", ""))
        state.write(_PRE_SCORE_KEY, scoring.compute_pre_score_state(
            pre_score_state, nodes, all_nodes, require_all, RequiredNodeAffinity.of(pod),
            pod_tolerations(pod)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            return scoring.score_node(state.read(_PRE_SCORE_KEY), node_info), None
        except KeyError:
            return 0, Status.state_not_found(_PRE_SCORE_KEY)

    def score_extensions(self) -> PodTopologySpread:
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
        node_actions = (ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
                        | ActionType.DELETE)
        return [ClusterEventWithHint(ClusterEvent("Pod", pod_actions), self.is_schedulable_after_pod_change),
                ClusterEventWithHint(ClusterEvent("Node", node_actions),
                                     self.is_schedulable_after_node_change)]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue when an assigned pod of the namespace starts or stops matching a hard constraint."""
        if any(changed is not None and not _involved_in_spreading(changed, pod) for changed in (old, new)):
            return QueueingHint.SKIP
        try:
            constraints = self.constraints.of(pod, DO_NOT_SCHEDULE)
        except APIError:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            old_labels, new_labels = _labels(old), _labels(new)
            if old_labels == new_labels:
                return QueueingHint.SKIP
            if pod_uid(old) == pod_uid(pod):  # the pod's own labels changed: matchLabelKeys may now pick others
                return QueueingHint.QUEUE
            changed = any(c.selector.matches(old_labels) != c.selector.matches(new_labels)
                          for c in constraints)
            return QueueingHint.QUEUE if changed else QueueingHint.SKIP
        labels = _labels(new if new is not None else old or {})
        matching = any(c.selector.matches(labels) for c in constraints)
        return QueueingHint.QUEUE if matching else QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Mapping[str, Any] | None,
                                         new: Mapping[str, Any] | None) -> QueueingHint:
        """Queue when a node carrying the topology keys appears, goes, or changes its domains or taints."""
        try:
            constraints = self.constraints.of(pod, DO_NOT_SCHEDULE)
        except APIError:
            return QueueingHint.QUEUE
        old_matching = old is not None and node_labels_match(_labels(old), constraints)
        new_matching = new is not None and node_labels_match(_labels(new), constraints)
        if old is not None and new is not None:
            if old_matching != new_matching:
                return QueueingHint.QUEUE
            if new_matching and (_topology_changed(_labels(old), _labels(new), constraints)
                                 or _taints(old) != _taints(new)):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if old_matching or new_matching else QueueingHint.SKIP


def _involved_in_spreading(changed: Mapping[str, Any], pod: Pod) -> bool:
    """The pod itself, or an assigned pod of its namespace (only those are counted)."""
    namespace = (pod.get("metadata") or {}).get("namespace")
    same_namespace = (changed.get("metadata") or {}).get("namespace") == namespace
    assigned = bool((changed.get("spec") or {}).get("nodeName"))
    return pod_uid(changed) == pod_uid(pod) or (assigned and same_namespace)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _taints(node: Mapping[str, Any]) -> list[Any]:
    return (node.get("spec") or {}).get("taints") or []


def _topology_changed(old: Mapping[str, str], new: Mapping[str, str],
                      constraints: Sequence[SpreadConstraint]) -> bool:
    return any(old.get(c.topology_key) != new.get(c.topology_key) for c in constraints)


# --- args ---------------------------------------------------------------------------------------------------


def validate_args(args: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]]:
    """The defaulting type and default constraints, or PluginArgsError naming the first bad field."""
    defaulting_type = args.get("defaultingType") or SYSTEM_DEFAULTING
    constraints = args.get("defaultConstraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, dict) for c in constraints):
        raise PluginArgsError("defaultConstraints", "must be a list of topology spread constraints")
    problems = []
    if defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        problems.append(field_errors.not_supported("defaultingType", defaulting_type,
                                                   [SYSTEM_DEFAULTING, LIST_DEFAULTING]))
    elif defaulting_type == SYSTEM_DEFAULTING and constraints:
        problems.append(field_errors.invalid("defaultingType", defaulting_type,
                                             "when .defaultConstraints are not empty"))
    for i, constraint in enumerate(constraints):
        problems += _constraint_problems(f"defaultConstraints[{i}]", constraint, constraints[:i])
    if problems:
        raise PluginArgsError(problems[0].field, problems[0].message)
    return defaulting_type, constraints


def _constraint_problems(path: str, constraint: Mapping[str, Any],
                         earlier: Sequence[Mapping[str, Any]]) -> list[field_errors.FieldError]:
    problems = []
    max_skew = constraint.get("maxSkew")
    if not isinstance(max_skew, int) or isinstance(max_skew, bool) or max_skew <= 0:
        problems.append(field_errors.invalid(f"{path}.maxSkew", max_skew, "not in valid range (0, inf)"))
    key = constraint.get("topologyKey") or ""
    if not key:
        problems.append(field_errors.required(f"{path}.topologyKey", "can not be empty"))
    if key:
        problems += [field_errors.invalid(f"{path}.topologyKey", key, m) for m in validate_label_key(key)]
    action = constraint.get("whenUnsatisfiable") or ""
    if not action:
        problems.append(field_errors.required(f"{path}.whenUnsatisfiable", "can not be empty"))
    elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        problems.append(field_errors.not_supported(f"{path}.whenUnsatisfiable", action,
                                                   [DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]))
    if constraint.get("labelSelector") is not None:
        problems.append(field_errors.forbidden(
            f"{path}.labelSelector", "constraint must not define a selector, as they deduced for each pod"))
    if any(key == e.get("topologyKey") and action == e.get("whenUnsatisfiable") for e in earlier):
        problems.append(field_errors.duplicate(path, f"{{{key}, {action}}}"))
    return problems

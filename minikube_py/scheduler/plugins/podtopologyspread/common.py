"""Topology spread constraints as the PodTopologySpread plugin uses them: parsed once per pod, from the pod's
`spec.topologySpreadConstraints` or, when it has none, from the cluster-wide default constraints.

Where it sits: PreFilter asks for the hard constraints (`whenUnsatisfiable: DoNotSchedule`), PreScore for the
soft ones (`ScheduleAnyway`), and the queueing hints for the hard ones again. A pod's own constraints win; the
defaults apply only to pods without any, and their selector is deduced from the objects that select the pod
(Services, and the ReplicationController, ReplicaSet or StatefulSet that controls it), as kube does — a pod
nothing selects has no default constraints at all.

Usage rules: `ConstraintSource.of(pod, action)` is the one entry point; it raises `APIError` (a 400) when a
constraint's selector is invalid. Listers are read only for pods without their own constraints, and only when
some default constraint has the requested action, so pods without spreading stay cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from minikube_py.api.nodeaffinity import RequiredNodeAffinity
from minikube_py.api.selectors import LabelSelector
from minikube_py.api.taints import DO_NOT_SCHEDULE as NO_SCHEDULE_EFFECTS
from minikube_py.api.taints import Toleration, find_untolerated_taint, parse_taints
from minikube_py.client import resources
from minikube_py.scheduler.framework.interface import Pod
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One parsed constraint: pods matching `selector` may differ by at most `max_skew` between domains."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def includes_node(self, node_info: NodeInfo, affinity: RequiredNodeAffinity,
                      tolerations: Sequence[Toleration]) -> bool:
        """Whether the node's domain counts at all under the node inclusion policies."""
        if self.node_affinity_policy == HONOR and not affinity.matches(node_info.node):
            return False
        if self.node_taints_policy == HONOR:
            taints = parse_taints(node_info.taints)[0]
            return find_untolerated_taint(taints, tolerations, NO_SCHEDULE_EFFECTS) is None
        return True


def parse_constraints(raw_constraints: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str],
                      action: str) -> list[SpreadConstraint]:
    """The constraints with `whenUnsatisfiable == action`, `matchLabelKeys` folded into each selector."""
    result = []
    for raw in raw_constraints:
        if raw.get("whenUnsatisfiable") != action:
            continue
        selector = _with_match_label_keys(LabelSelector.from_api(raw.get("labelSelector")),
                                          raw.get("matchLabelKeys") or (), pod_labels)
        result.append(SpreadConstraint(
            max_skew=int(raw.get("maxSkew") or 0), topology_key=raw.get("topologyKey") or "",
            selector=selector,
            min_domains=int(raw["minDomains"]) if raw.get("minDomains") is not None else 1,
            node_affinity_policy=raw.get("nodeAffinityPolicy") or HONOR,
            node_taints_policy=raw.get("nodeTaintsPolicy") or IGNORE))
    return result


def _with_match_label_keys(selector: LabelSelector, keys: Iterable[str],
                           pod_labels: Mapping[str, str]) -> LabelSelector:
    pinned = {key: pod_labels[key] for key in keys if key in pod_labels}
    if not pinned:
        return selector
    merged = LabelSelector.from_set(pinned)
    if selector.matches_nothing:  # kube's Nothing selector has no requirements to carry over
        return merged
    return LabelSelector(merged.requirements + selector.requirements)


def node_labels_match(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    """Whether the node carries every constraint's topology key."""
    for constraint in constraints:
        if constraint.topology_key not in labels:
            return False
    return True


def count_matching_pods(pod_infos: Iterable[PodInfo], selector: LabelSelector, namespace: str) -> int:
    """The pods of `namespace` that `selector` matches, leaving out terminating ones."""
    matches, count = selector.matches, 0
    for info in pod_infos:
        if info.namespace == namespace and matches(info.labels) and not _terminating(info):
            count += 1
    return count


def _terminating(info: PodInfo) -> bool:
    return bool((info.pod.get("metadata") or {}).get("deletionTimestamp"))


class ConstraintSource:
    """Where a pod's constraints come from: its own spec, or the defaults with a selector from listers."""

    def __init__(self, default_constraints: Sequence[Mapping[str, Any]], informers: Any) -> None:
        self.default_constraints = list(default_constraints)
        self._listers: dict[str, Any] = {}
        if self.default_constraints:
            if informers is None:
                raise RuntimeError("PodTopologySpread needs an informer factory for its default constraints")
            self._listers = {kind: informers.lister(resource) for kind, resource in (
                ("services", resources.SERVICES),
                ("ReplicationController", resources.REPLICATION_CONTROLLERS),
                ("ReplicaSet", resources.REPLICA_SETS), ("StatefulSet", resources.STATEFUL_SETS))}

    def of(self, pod: Pod, action: str) -> list[SpreadConstraint]:
        spec = pod.get("spec") or {}
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if spec.get("topologySpreadConstraints"):
            return parse_constraints(spec["topologySpreadConstraints"], labels, action)
        constraints = parse_constraints(self.default_constraints, labels, action)
        if not constraints:
            return []
        selector = default_selector(pod, self._listers)
        if not selector.requirements:
            return []
        return [replace(c, selector=selector) for c in constraints]


# --- the default selector -----------------------------------------------------------------------------------

_OWNER_KINDS = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}


def default_selector(pod: Pod, listers: Mapping[str, Any]) -> LabelSelector:
    """The selector shared by the Services selecting the pod and the workload controlling it (kube's
    `helper.DefaultSelector`); it has no requirements when nothing selects the pod."""
    metadata = pod.get("metadata") or {}
    namespace, labels = metadata.get("namespace", ""), metadata.get("labels") or {}
    label_set: dict[str, str] = {}
    for service in listers["services"].list(namespace=namespace):
        service_selector = (service.get("spec") or {}).get("selector")
        if service_selector is not None and LabelSelector.from_set(service_selector).matches(labels):
            label_set.update(service_selector)
    requirements = LabelSelector.from_set(label_set).requirements
    owner = _controller_of(metadata)
    if owner is None or (owner.get("apiVersion"), owner.get("kind")) not in _OWNER_KINDS:
        return LabelSelector(requirements)
    workload = _get_or_none(listers[owner["kind"]], owner.get("name", ""), namespace)
    workload_selector = (workload or {}).get("spec", {}).get("selector")
    if workload is None or workload_selector is None:
        return LabelSelector(requirements)
    if owner["kind"] == "ReplicationController":  # a plain label map, merged like the Services' ones
        return LabelSelector.from_set({**label_set, **workload_selector})
    try:
        return LabelSelector(requirements + LabelSelector.from_api(workload_selector).requirements)
    except Exception:  # an invalid selector on the workload: kube keeps what the Services gave
        return LabelSelector(requirements)


def _controller_of(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for reference in metadata.get("ownerReferences") or []:
        if isinstance(reference, dict) and reference.get("controller"):
            return reference
    return None


def _get_or_none(lister: Any, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return lister.get(name, namespace=namespace)
    except Exception:  # NotFound or a cache not synced yet: kube ignores lister errors here
        return None

"""Which nodes a DaemonSet's pods belong on, and what a daemon pod looks like (kube's `NodeShouldRunDaemonPod`
and `controller/daemon/util`).

A DaemonSet wants one pod on every node its pod template fits. `Placement.of(ds)` reads the template once;
`placement.should_run(node)` then answers two questions for a node (kube's pair of booleans):

* `should_run`: a new daemon pod belongs here. The template's `nodeName` (if set) must be this node, the node
  must match `nodeSelector` and the required node affinity (`api/nodeaffinity.py`, the matching the scheduler
  uses), and the pod must tolerate every NoSchedule and NoExecute taint of the node (PreferNoSchedule is only
  a preference and never keeps a daemon away).
* `should_continue_running`: a daemon pod already here may stay. Same checks, except that a NoSchedule taint
  the pod does not tolerate is no reason to evict: only an untolerated NoExecute taint is. So tainting a node
  NoSchedule stops new daemon pods but keeps the running one; NoExecute removes it.

Both questions are asked for the pod as the controller would create it, that is with the tolerations every
daemon pod gets (`add_daemon_tolerations`): it stays through node problems (not-ready and unreachable
NoExecute, with no time limit) and schedules onto nodes under disk, memory or PID pressure or cordoned
(unschedulable), and a hostNetwork pod onto a node whose network is not ready yet.

Daemon pods are placed by the default scheduler, not by the controller: `pin_to_node` replaces the pod's
required node affinity with one term, `matchFields` `metadata.name In [node]` (safe, because the controller
has already checked that the node matches the original terms). Until the pod is bound, `target_node` reads
the node back from that term. `daemon_pod_template` adds the labels that tell versions apart:
`controller-revision-hash` (the current ControllerRevision) and the deprecated `pod-template-generation`
(from the DaemonSet's `deprecated.daemonset.template.generation` annotation, when the apiserver set one).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from minikube_py.api.nodeaffinity import OBJECT_NAME_FIELD, RequiredNodeAffinity
from minikube_py.api.taints import (
    DO_NOT_SCHEDULE,
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
    Toleration,
    find_untolerated_taint,
    parse_taints,
    parse_tolerations,
)

REVISION_HASH_LABEL = "controller-revision-hash"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
TAINT_NODE_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

DAEMON_TOLERATIONS = (  # (key, effect), all with operator Exists and no tolerationSeconds
    (TAINT_NODE_NOT_READY, NO_EXECUTE),
    (TAINT_NODE_UNREACHABLE, NO_EXECUTE),
    ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
    (TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE),
)


@dataclass(frozen=True)
class Placement:
    """The parts of a DaemonSet's pod template that decide its nodes, parsed once."""

    node_name: str
    affinity: RequiredNodeAffinity
    tolerations: tuple[Toleration, ...]

    @classmethod
    def of(cls, ds: dict[str, Any]) -> Placement:
        spec = copy.deepcopy(_template(ds).get("spec") or {})
        add_daemon_tolerations(spec)
        return cls(spec.get("nodeName") or "", RequiredNodeAffinity.of({"spec": spec}),
                   tuple(parse_tolerations(spec.get("tolerations"))[0]))

    def should_run(self, node: dict[str, Any]) -> tuple[bool, bool]:
        """(should_run, should_continue_running) for this node; see the module docstring."""
        if self.node_name and self.node_name != node["metadata"]["name"]:
            return False, False
        if not self.affinity.matches(node):
            return False, False
        taints = parse_taints((node.get("spec") or {}).get("taints"))[0]
        if find_untolerated_taint(taints, self.tolerations, DO_NOT_SCHEDULE) is None:
            return True, True
        return False, find_untolerated_taint(taints, self.tolerations, (NO_EXECUTE,)) is None


def add_daemon_tolerations(spec: dict[str, Any]) -> None:
    """Give a pod spec the tolerations of every daemon pod (kube's `AddOrUpdateDaemonPodTolerations`)."""
    wanted = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append((TAINT_NODE_NETWORK_UNAVAILABLE, NO_SCHEDULE))
    for key, effect in wanted:
        _add_or_update_toleration(spec, {"key": key, "operator": "Exists", "effect": effect})


def _add_or_update_toleration(spec: dict[str, Any], toleration: dict[str, Any]) -> None:
    """Add `toleration`, or let it replace those with the same key, operator, value and effect."""
    def identity(t: dict[str, Any]) -> tuple[str, ...]:
        return tuple(t.get(field) or "" for field in ("key", "operator", "value", "effect"))

    def meaning(t: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in t.items() if v not in ("", None)}

    current = spec.get("tolerations") or []
    same = [t for t in current if identity(t) == identity(toleration)]
    if any(meaning(t) == toleration for t in same):
        return
    if same:
        spec["tolerations"] = [dict(toleration) if identity(t) == identity(toleration) else t for t in current]
    else:
        spec["tolerations"] = [*current, dict(toleration)]


def daemon_pod_template(ds: dict[str, Any], revision_hash: str) -> dict[str, Any]:
    """The template new daemon pods are made from: the DaemonSet's, plus tolerations and version labels."""
    template = copy.deepcopy(_template(ds))
    add_daemon_tolerations(template.setdefault("spec", {}))
    metadata = template.get("metadata") or {}
    labels = metadata["labels"] = dict(metadata.get("labels") or {})
    template["metadata"] = metadata
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if revision_hash:
        labels[REVISION_HASH_LABEL] = revision_hash
    return template


def template_generation(ds: dict[str, Any]) -> int | None:
    """The deprecated template generation the apiserver keeps in an annotation (None: absent or garbled)."""
    raw = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def is_updated(pod: dict[str, Any], revision_hash: str, generation: int | None) -> bool:
    """Whether the pod runs the current version: by revision hash, or by the deprecated template generation."""
    labels = pod["metadata"].get("labels") or {}
    if revision_hash and labels.get(REVISION_HASH_LABEL) == revision_hash:
        return True
    return generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)


def pin_to_node(spec: dict[str, Any], node_name: str) -> None:
    """Make the pod's required node affinity select exactly `node_name` (kube replaces all its terms)."""
    term = {"matchFields": [{"key": OBJECT_NAME_FIELD, "operator": "In", "values": [node_name]}]}
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    node_affinity[_REQUIRED] = {"nodeSelectorTerms": [term]}
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity


def target_node(pod: dict[str, Any]) -> str | None:
    """The node a daemon pod is for: its `nodeName` once bound, before that its `metadata.name` term."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(_REQUIRED) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == OBJECT_NAME_FIELD and requirement.get("operator") == "In":
                values = requirement.get("values") or []
                return values[0] if len(values) == 1 else None
    return None


def creation_order(pod: dict[str, Any]) -> tuple[bool, str, str]:
    """Sort key: bound pods first, then oldest first, then by name (kube's podByCreationTimestampAndPhase)."""
    meta = pod["metadata"]
    return not (pod.get("spec") or {}).get("nodeName"), meta.get("creationTimestamp") or "", meta["name"]


def _template(ds: dict[str, Any]) -> dict[str, Any]:
    return (ds.get("spec") or {}).get("template") or {}

"""VolumeBinding: a pod that mounts PersistentVolumeClaims is placed only once its claims are bound, and only on
a node its bound volumes can be used from (kube's `volumebinding` plugin: PreFilter, Filter).

PreFilter looks up, in the scheduler's informer cache, every claim the pod's volumes name
(`persistentVolumeClaim.claimName`, or `<pod>-<volume>` for a generic `ephemeral` volume) and turns the pod
away, UnschedulableAndUnresolvable, when a claim

* does not exist: `persistentvolumeclaim "data" not found` (for an ephemeral volume: `waiting for ephemeral
  volume controller to create the persistentvolumeclaim "web-data"`);
* is Lost, bound to a volume that is gone: `persistentvolumeclaim "data" bound to non-existent
  persistentvolume "pv-1"`;
* is being deleted: `persistentvolumeclaim "data" is being deleted`;
* was made for another pod (ephemeral): `PVC ns/web-data was not created for pod ns/web (pod is not owner)`;
* is not bound yet and binds Immediately (no class, a class that does not exist, or `volumeBindingMode:
  Immediate`): `pod has unbound immediate PersistentVolumeClaims`. The PV controller binds such claims on its
  own; the claim's update brings the pod back. A claim counts as bound once it names its volume and carries
  `pv.kubernetes.io/bind-completed`.

A class without a `volumeBindingMode` is an Error (the apiserver defaults it, so only a broken object has
none). A pod without claims gets Skip, so Filter never runs for it: the common case costs one pass over the
pod's volumes. PreFilter also fetches each bound claim's PersistentVolume and parses its node affinity once.

Filter, per node: every bound volume must still exist ("node(s) unavailable due to one or more pvc(s) bound
to non-existent pv(s)") and its `spec.nodeAffinity.required` must match the node's labels ("node(s) had
volume node affinity conflict"), checked claim by claim in the pod's order, stopping at the first failure
as kube does. Both verdicts are UnschedulableAndUnresolvable.

What mkpy leaves out: kube binds claims of `WaitForFirstConsumer` classes in the scheduler (Filter finds a
static volume or a provisioner per node, Reserve and PreBind write the choice, Score may rank by capacity).
mkpy's PV controller binds Immediate claims only, so Filter turns every node down for a pod with an unbound
WaitForFirstConsumer claim, with kube's reason for a claim nothing can satisfy: "node(s) didn't find
available persistent volumes to bind".

Requeueing (kube's events and hints): a claim added or updated (only pods in its namespace that name it), a
StorageClass added or with changed `allowedTopologies`, any PersistentVolume added or updated, a node added
or relabelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikube_py.api.nodeaffinity import NodeSelector
from minikube_py.api.storage import BIND_COMPLETED_ANNOTATION, storage_class_name
from minikube_py.client import errors, resources
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
from minikube_py.scheduler.framework.types import NodeInfo

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

_STATE_KEY = "VolumeBinding"  # kube's key for this plugin's state is the plugin's name


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A claim a pod's volume uses; `ephemeral` when a generic ephemeral volume names it `<pod>-<volume>`."""

    name: str
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class BoundVolume:
    """The volume a bound claim names, as Filter needs it: gone, or with its required node affinity parsed
    (`node_selector` None: any node will do)."""

    name: str
    exists: bool
    node_selector: NodeSelector | None = None

    def reachable_from(self, labels: Mapping[str, str]) -> bool:
        """kube's CheckNodeAffinity: the node is matched on its labels alone (matchFields never rule it out)."""
        return self.node_selector is None or self.node_selector.matches_labels(labels, {})


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """What PreFilter found for the pod; immutable, so preemption's cloned states can share it."""

    bound: tuple[BoundVolume, ...]
    unbound_delay_binding: bool  # an unbound WaitForFirstConsumer claim, which mkpy cannot bind


def pod_claims(pod: Pod) -> list[PodClaim]:
    """The claims the pod's volumes use, in the order of `spec.volumes`."""
    claims = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if not isinstance(volume, dict):
            continue
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, dict):
            claims.append(PodClaim(str(source.get("claimName") or "")))
        elif volume.get("ephemeral") is not None:
            pod_name = (pod.get("metadata") or {}).get("name", "")
            claims.append(PodClaim(f"{pod_name}-{volume.get('name', '')}", ephemeral=True))
    return claims


def is_fully_bound(claim: Mapping[str, Any]) -> bool:
    """Bound by the PV controller: the claim names its volume and the binding is marked complete."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return bool((claim.get("spec") or {}).get("volumeName")) and BIND_COMPLETED_ANNOTATION in annotations


def _is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """kube's IsControlledBy: `obj`'s controller reference names `owner`'s UID."""
    metadata = obj.get("metadata") or {}
    uid = (owner.get("metadata") or {}).get("uid")
    controller = next(
        (
            ref
            for ref in metadata.get("ownerReferences") or ()
            if isinstance(ref, dict) and ref.get("controller")
        ),
        None,
    )
    return bool(uid) and controller is not None and controller.get("uid") == uid


class VolumeBinding:
    name = "VolumeBinding"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        # asked for now, so the scheduler's informer factory starts (and syncs) these informers with the others
        self.claim_lister = handle.informers.lister(resources.PERSISTENT_VOLUME_CLAIMS)
        self.volume_lister = handle.informers.lister(resources.PERSISTENT_VOLUMES)
        self.class_lister = handle.informers.lister(resources.STORAGE_CLASSES)

    # --- filter ---------------------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        wanted = pod_claims(pod)
        if not wanted:
            return None, Status(Code.SKIP)
        claims = []
        for pod_claim in wanted:
            claim, problem = self._usable_claim(pod, pod_claim)
            if claim is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [problem])
            claims.append(claim)
        bound: list[BoundVolume] = []
        unbound_immediate = unbound_delay_binding = False
        for claim in claims:
            if is_fully_bound(claim):
                bound.append(self._bound_volume(claim["spec"]["volumeName"]))
                continue
            delay_binding, error = self._is_delay_binding(claim)
            if error:
                return None, Status.as_error(error)
            if delay_binding and not (claim.get("spec") or {}).get("volumeName"):
                unbound_delay_binding = True
            else:  # Immediate, or pre-bound to a volume: the PV controller binds it, not the scheduler
                unbound_immediate = True
        if unbound_immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNBOUND_IMMEDIATE])
        state.write(_STATE_KEY, PreFilterState(tuple(bound), unbound_delay_binding))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            found: PreFilterState = state.read(_STATE_KEY)
        except KeyError:
            return Status.state_not_found(_STATE_KEY)
        failure = _first_unusable_volume(found.bound, node_info.labels)
        if failure is None and not found.unbound_delay_binding:
            return None
        reasons = [ERR_REASON_NODE_CONFLICT] if failure == ERR_REASON_NODE_CONFLICT else []
        if found.unbound_delay_binding:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if failure == ERR_REASON_PV_NOT_EXIST:
            reasons.append(failure)  # kube lists its reasons in this order: conflict, binding, missing volume
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    def _usable_claim(self, pod: Pod, pod_claim: PodClaim) -> tuple[dict[str, Any] | None, str]:
        """The cached claim, or None and why the pod cannot use it (kube's podHasPVCs checks, in its order)."""
        metadata = pod.get("metadata") or {}
        namespace, name = metadata.get("namespace", ""), pod_claim.name
        try:
            claim = self.claim_lister.get(name, namespace)
        except errors.NotFound as error:
            if pod_claim.ephemeral:
                return (
                    None,
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"',
                )
            return None, error.message
        if (claim.get("status") or {}).get("phase") == "Lost":
            volume_name = (claim.get("spec") or {}).get("volumeName", "")
            return (
                None,
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume_name}"',
            )
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            return None, f'persistentvolumeclaim "{name}" is being deleted'
        if pod_claim.ephemeral and not _is_controlled_by(claim, pod):
            return None, (
                f"PVC {namespace}/{name} was not created for pod {namespace}/{metadata.get('name', '')} "
                "(pod is not owner)"
            )
        return claim, ""

    def _is_delay_binding(self, claim: Mapping[str, Any]) -> tuple[bool, str]:
        """Whether the claim's class waits for the first consumer (kube's IsDelayBindingMode); a claim without a
        class, or whose class does not exist, binds immediately. The second value is an error message."""
        class_name = storage_class_name(claim)
        if not class_name:
            return False, ""
        try:
            storage_class = self.class_lister.get(class_name)
        except errors.NotFound:
            return False, ""
        mode = storage_class.get("volumeBindingMode")
        if mode is None:
            return False, f'VolumeBindingMode not set for StorageClass "{class_name}"'
        return mode == WAIT_FOR_FIRST_CONSUMER, ""

    def _bound_volume(self, name: str) -> BoundVolume:
        try:
            volume = self.volume_lister.get(name)
        except errors.NotFound:
            return BoundVolume(name, exists=False)
        affinity = (volume.get("spec") or {}).get("nodeAffinity") or {}
        required = affinity.get("required") if isinstance(affinity, dict) else None
        if required is None:
            return BoundVolume(name, exists=True)
        return BoundVolume(name, exists=True, node_selector=NodeSelector.from_api(required))

    # --- requeueing -----------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        changed = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent("StorageClass", changed), _is_schedulable_after_storage_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", changed), _is_schedulable_after_claim_change
            ),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", changed)),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]


def _first_unusable_volume(volumes: Sequence[BoundVolume], labels: Mapping[str, str]) -> str | None:
    """Why the first unusable bound volume, in the pod's order, rules the node out (kube's checkBoundClaims)."""
    for volume in volumes:
        if not volume.exists:
            return ERR_REASON_PV_NOT_EXIST
        if not volume.reachable_from(labels):
            return ERR_REASON_NODE_CONFLICT
    return None


def _is_schedulable_after_claim_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the added or updated claim is one of the pod's (same namespace, a name the pod uses)."""
    if not isinstance(new, dict):
        return QueueingHint.QUEUE  # not a claim: cannot tell, so let the pod try again
    metadata = new.get("metadata") or {}
    if metadata.get("namespace") != (pod.get("metadata") or {}).get("namespace"):
        return QueueingHint.SKIP
    name = metadata.get("name")
    return QueueingHint.QUEUE if any(claim.name == name for claim in pod_claims(pod)) else QueueingHint.SKIP


def _is_schedulable_after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue for a new class, or one whose allowedTopologies changed (its binding mode is immutable)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return QueueingHint.QUEUE
    return (
        QueueingHint.QUEUE
        if old.get("allowedTopologies") != new.get("allowedTopologies")
        else QueueingHint.SKIP
    )

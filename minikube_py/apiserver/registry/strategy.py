"""Per-kind behaviour on top of the generic registry: kube's "strategies".

The generic registry (`generic.py`) does what every kind shares: metadata, resourceVersion preconditions,
status/spec separation, finalizers. A `Strategy` adds what one kind does differently:

* `prepare_for_create` resets the status a client sent with a new object (kind-specific starting values,
  such as a Pod's `Pending` phase and QoS class, come from `api/defaults`);
* `tracks_generation` says whether `metadata.generation` counts changes for this kind, and
  `changes_generation` which updates count (the spec, for most kinds);
* `graceful_delete_seconds` decides whether a delete only marks the object (pods on a node get a grace
  period for the kubelet to stop them);
* `delete_keeps_object` lets a kind keep the object after a delete request (a Namespace stays
  `Terminating` until the namespace controller has emptied it and removed its `kubernetes` finalizer).

Strategies are looked up by group-resource in `STRATEGIES`; kinds not listed use `Strategy` itself.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from ...api.crd import CLEANUP_FINALIZER
from ...api.crdschema import CompiledSchema
from ...api.errors import FieldError
from ...api.kinds import Resource

Undo = Callable[[], Awaitable[None]] | None

# kinds whose metadata.generation counts changes to their spec
_GENERATION_TRACKED = {
    "deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps", "jobs.batch",
    "cronjobs.batch", "replicationcontrollers", "poddisruptionbudgets.policy", "ingresses.networking.k8s.io",
    "networkpolicies.networking.k8s.io", "customresourcedefinitions.apiextensions.k8s.io",
    "horizontalpodautoscalers.autoscaling", "priorityclasses.scheduling.k8s.io",
}


class Strategy:
    # metadata fields a write to the status subresource may change (otherwise only `status` changes)
    status_writable_metadata: tuple[str, ...] = ()

    def __init__(self, resource: Resource) -> None:
        self.resource = resource

    @property
    def tracks_generation(self) -> bool:
        return self.resource.group_resource in _GENERATION_TRACKED

    def changes_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        """Whether an update is a new generation: the desired state (all but metadata and status) changed."""
        return desired_state(new) != desired_state(old)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        if self.resource.has_status():
            obj["status"] = {}

    def canonicalize(self, obj: dict[str, Any]) -> None:
        """Kind-specific defaulting and pruning beyond `api/defaults` (a custom resource's schema)."""

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        """Kind-specific checks beyond `api/validation` (a custom resource's schema)."""
        return []

    def graceful_delete_seconds(self, obj: dict[str, Any], requested: int | None) -> int:
        """Seconds the object lives on after a delete request; 0 deletes it now."""
        return 0

    def delete_keeps_object(self, obj: dict[str, Any]) -> bool:
        """Whether something besides `metadata.finalizers` holds an object that is being deleted."""
        return False

    async def before_create(self, obj: dict[str, Any], dry_run: bool) -> Undo:
        """Claim what the object needs outside its own key (service addresses); returns how to give back
        exactly those claims if the create then fails."""
        return None

    def mark_deleting(self, obj: dict[str, Any]) -> None:
        """Record in the object that it is being deleted, beyond `deletionTimestamp`."""

    async def before_update(self, new: dict[str, Any], old: dict[str, Any], dry_run: bool) -> None:
        """Claim what an update newly needs."""

    async def after_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Release what the old object held and the new one no longer does."""

    async def after_delete(self, obj: dict[str, Any]) -> None:
        """Release what the object held outside its key."""


class PodStrategy(Strategy):
    # kube's pods/status keeps metadata changes (the scheduler's explain annotations use this), except
    # owner references, which old kubelets used to corrupt
    status_writable_metadata = ("labels", "annotations")

    def graceful_delete_seconds(self, obj: dict[str, Any], requested: int | None) -> int:
        # A pod that never reached a node, or that already finished, has nothing for a kubelet to stop.
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(requested, 0)
        grace = spec.get("terminationGracePeriodSeconds")
        return 30 if grace is None else int(grace)


class NamespaceStrategy(Strategy):
    def delete_keeps_object(self, obj: dict[str, Any]) -> bool:
        # The namespace controller empties a terminating namespace, then drops spec.finalizers.
        return bool((obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, obj: dict[str, Any]) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"


class DeploymentStrategy(Strategy):
    # kube's deployments/status keeps annotation changes: the deployment controller records the
    # `deployment.kubernetes.io/revision` annotation with its status
    status_writable_metadata = ("annotations",)


class EndpointSliceStrategy(Strategy):
    """A slice has no spec and no status: any change to its endpoints, ports or address type, or to its
    labels (which tie it to its Service and its managing controller), is a new generation."""

    @property
    def tracks_generation(self) -> bool:
        return True

    def changes_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        return super().changes_generation(new, old) or \
            new["metadata"].get("labels") != old["metadata"].get("labels")


class NodeStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        # kubelets register nodes with their capacity and addresses already in status
        obj.setdefault("status", {})


class ClaimStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"phase": "Pending"}


class CustomResourceStrategy(Strategy):
    """Custom resources: defaulted, pruned and validated by their CRD version's structural schema, and
    counting generations like built-in workloads do."""

    def __init__(self, resource: Resource, schema: CompiledSchema) -> None:
        super().__init__(resource)
        self.schema = schema

    def canonicalize(self, obj: dict[str, Any]) -> None:
        self.schema.default(obj)
        self.schema.prune(obj)

    def unknown_fields(self, obj: dict[str, Any]) -> list[str]:
        """Paths of the fields in `obj` that the schema would prune (for `fieldValidation`)."""
        return self.schema.prune(copy.deepcopy(obj))

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.schema.validate(obj)

    @property
    def tracks_generation(self) -> bool:
        return True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        # without a status subresource the status is ordinary content the client may set
        if self.resource.has_status():
            obj.pop("status", None)


class DefinitionStrategy(Strategy):
    """CustomResourceDefinitions: the apiserver must clean up a CRD's objects before the CRD goes."""

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)


STRATEGIES: dict[str, type[Strategy]] = {
    "customresourcedefinitions.apiextensions.k8s.io": DefinitionStrategy,
    "pods": PodStrategy,
    "namespaces": NamespaceStrategy,
    "nodes": NodeStrategy,
    "deployments.apps": DeploymentStrategy,
    "endpointslices.discovery.k8s.io": EndpointSliceStrategy,
    "persistentvolumeclaims": ClaimStrategy,
    "persistentvolumes": ClaimStrategy,
}


def desired_state(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def strategy_for(resource: Resource) -> Strategy:
    """The strategy of a kind without outside dependencies (services get theirs in services.py)."""
    return STRATEGIES.get(resource.group_resource, Strategy)(resource)

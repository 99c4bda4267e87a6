"""Validation: kube's per-kind rules for what an object may contain and how an update may change it.

Where it sits: decode → defaults → **validation** → storage. The apiserver calls `validate_create` on a new
object after defaulting, name generation, the uid, `defaults.prepare_for_create` (and, for Jobs,
`defaults.job_selector`), and `validate_update` on an update after defaulting and `defaults.prepare_for_update`,
with the old object and the subresource written (`status` for a status write); a non-empty result becomes a 422
Invalid response through `errors.invalid_object`. Field paths and messages are kube 1.32's, so kubectl
prints the same `The Deployment "web" is invalid: spec.template.metadata.labels: Invalid value: ...`.

Usage rules:
* Objects are JSON-like dicts at `resource.api_version` (both `new` and `old` for updates). Kinds served at
  a version other than their storage version (events.k8s.io Events, autoscaling/v1 HPAs) are converted to
  the storage shape first, as kube validates its internal type: errors then name the stored fields.
* Dispatch is by `resource.group_resource` through the explicit `_RULES` table: a kind's name rule, its
  create checks and, when an update has rules of its own, its update checks (otherwise the new object is
  checked as on create). Kinds missing from the table get the ObjectMeta checks only.
* A kind may have a status update rule of its own, used for writes to its `status` subresource instead of the
  update checks. Pods have one (kube's `ValidatePodStatusUpdate`, see `pod_status`): the registry has already
  put the live spec back into a status write, so, as in kube, the spec is not validated again (that would cost
  time on every kubelet status patch, and refuse the status of a Pod whose stored spec today's rules reject).
  Every other kind validates a status write like any other update.
* Metadata identity (name, namespace, uid, creationTimestamp, resourceVersion) on update is compared by the
  caller; `validate_object_meta_update` covers the rest of metadata.
* Pure functions: no I/O and no mutation of the arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minikube_py.api import names
from minikube_py.api.conversion import to_storage
from minikube_py.api.errors import FieldError
from minikube_py.api.kinds import Resource
from minikube_py.api.validation import (
    admissionregistration,
    apiextensions,
    apps,
    autoscaling,
    batch,
    core,
    events,
    networking,
    policy,
    rbac,
    service,
    storage,
    volumes,
)
from minikube_py.api.validation.messages import as_dict
from minikube_py.api.validation.meta import validate_object_meta, validate_object_meta_update
from minikube_py.api.validation.pod import pod_create, pod_update
from minikube_py.api.validation.pod_status import pod_status_update

__all__ = ["validate_create", "validate_object_meta", "validate_object_meta_update", "validate_update"]

Check = Callable[[dict[str, Any]], list[FieldError]]
UpdateCheck = Callable[[dict[str, Any], dict[str, Any]], list[FieldError]]


def _nothing(_: dict[str, Any]) -> list[FieldError]:
    return []


def _nothing_on_update(_new: dict[str, Any], _old: dict[str, Any]) -> list[FieldError]:
    return []


@dataclass(frozen=True)
class KindRules:
    """How one kind is validated. `name_rule_of` is for kinds whose valid names depend on the object (CRDs);
    `status_update` replaces `update` for writes to the kind's `status` subresource."""

    name: names.NameRule = names.name_is_dns_subdomain
    create: Check = _nothing
    update: UpdateCheck | None = None
    kube_finalizers: bool = True
    name_rule_of: Callable[[dict[str, Any]], names.NameRule] | None = None
    status_update: UpdateCheck | None = None


_SUBDOMAIN = names.name_is_dns_subdomain
_PATH_SEGMENT = names.name_is_path_segment
_RBAC = "rbac.authorization.k8s.io"

_RULES: dict[str, KindRules] = {
    "pods": KindRules(_SUBDOMAIN, pod_create, pod_update, status_update=pod_status_update),
    "podtemplates": KindRules(_SUBDOMAIN, core.pod_template_object),
    "bindings": KindRules(_SUBDOMAIN, core.binding),
    "replicationcontrollers": KindRules(_SUBDOMAIN, core.replication_controller),
    "services": KindRules(names.name_is_dns1035_label, service.service, service.service_update),
    "endpoints": KindRules(_SUBDOMAIN, service.endpoints),
    "configmaps": KindRules(_SUBDOMAIN, core.config_map, core.config_map_update),
    "secrets": KindRules(_SUBDOMAIN, core.secret, core.secret_update),
    "serviceaccounts": KindRules(_SUBDOMAIN),
    "namespaces": KindRules(names.name_is_dns_label, core.namespace, _nothing_on_update),
    "nodes": KindRules(_SUBDOMAIN, core.node, core.node_update),
    # core/v1 Events keep the lenient checks old clients rely on, names included.
    "events": KindRules(_PATH_SEGMENT, events.legacy, kube_finalizers=False),
    "events.events.k8s.io": KindRules(_SUBDOMAIN, events.strict_create, events.strict_update),
    "limitranges": KindRules(_SUBDOMAIN, core.limit_range),
    "resourcequotas": KindRules(_SUBDOMAIN, core.resource_quota, core.resource_quota_update),
    "persistentvolumes": KindRules(_SUBDOMAIN, volumes.persistent_volume, volumes.persistent_volume_update),
    "persistentvolumeclaims": KindRules(_SUBDOMAIN, volumes.persistent_volume_claim, volumes.claim_update),
    "deployments.apps": KindRules(_SUBDOMAIN, apps.deployment, apps.deployment_update),
    "replicasets.apps": KindRules(_SUBDOMAIN, apps.replica_set, apps.replica_set_update),
    "statefulsets.apps": KindRules(_SUBDOMAIN, apps.stateful_set, apps.stateful_set_update),
    "daemonsets.apps": KindRules(_SUBDOMAIN, apps.daemon_set, apps.daemon_set_update),
    "controllerrevisions.apps": KindRules(_SUBDOMAIN, apps.controller_revision, apps.controller_revision_update),
    "jobs.batch": KindRules(_SUBDOMAIN, batch.job, batch.job_update),
    "cronjobs.batch": KindRules(_SUBDOMAIN, batch.cron_job, batch.cron_job_update),
    "leases.coordination.k8s.io": KindRules(_SUBDOMAIN, policy.lease),
    "endpointslices.discovery.k8s.io": KindRules(_SUBDOMAIN, networking.endpoint_slice,
                                                 networking.endpoint_slice_update),
    "priorityclasses.scheduling.k8s.io": KindRules(_SUBDOMAIN, policy.priority_class, policy.priority_class_update),
    "poddisruptionbudgets.policy": KindRules(_SUBDOMAIN, policy.pod_disruption_budget),
    "storageclasses.storage.k8s.io": KindRules(_SUBDOMAIN, storage.storage_class, storage.storage_class_update),
    "horizontalpodautoscalers.autoscaling": KindRules(_SUBDOMAIN, autoscaling.horizontal_pod_autoscaler),
    "ingresses.networking.k8s.io": KindRules(_SUBDOMAIN, networking.ingress),
    "networkpolicies.networking.k8s.io": KindRules(_SUBDOMAIN, networking.network_policy),
    f"roles.{_RBAC}": KindRules(_PATH_SEGMENT, rbac.role),
    f"rolebindings.{_RBAC}": KindRules(_PATH_SEGMENT, rbac.role_binding, rbac.role_binding_update),
    f"clusterroles.{_RBAC}": KindRules(_PATH_SEGMENT, rbac.cluster_role),
    f"clusterrolebindings.{_RBAC}": KindRules(_PATH_SEGMENT, rbac.cluster_role_binding,
                                              rbac.cluster_role_binding_update),
    "customresourcedefinitions.apiextensions.k8s.io": KindRules(
        create=apiextensions.custom_resource_definition, update=apiextensions.custom_resource_definition_update,
        kube_finalizers=False, name_rule_of=apiextensions.crd_name_rule),
    "mutatingwebhookconfigurations.admissionregistration.k8s.io": KindRules(
        create=admissionregistration.mutating_webhook_configuration),
    "validatingwebhookconfigurations.admissionregistration.k8s.io": KindRules(
        create=admissionregistration.validating_webhook_configuration),
}

_DEFAULT_RULES = KindRules()


def validate_create(resource: Resource, obj: dict[str, Any]) -> list[FieldError]:
    """Everything wrong with `obj` as a new object of `resource`; empty when it may be stored."""
    stored = to_storage(resource, obj)
    rules = _RULES.get(resource.group_resource, _DEFAULT_RULES)
    name_rule = rules.name_rule_of(stored) if rules.name_rule_of else rules.name
    errs = validate_object_meta(as_dict(stored.get("metadata")), resource.namespaced, name_rule,
                                kube_finalizers=rules.kube_finalizers)
    return errs + rules.create(stored)


def validate_update(resource: Resource, new: dict[str, Any], old: dict[str, Any], *,
                    subresource: str = "") -> list[FieldError]:
    """Everything wrong with replacing `old` by `new`: invalid content and changes to immutable fields.

    `subresource` is the part of the object written (`"status"` for a status write, `""` for the object)."""
    new_stored, old_stored = to_storage(resource, new), to_storage(resource, old)
    rules = _RULES.get(resource.group_resource, _DEFAULT_RULES)
    errs = validate_object_meta_update(as_dict(new_stored.get("metadata")), as_dict(old_stored.get("metadata")),
                                       kube_finalizers=rules.kube_finalizers)
    if subresource == "status" and rules.status_update is not None:
        return errs + rules.status_update(new_stored, old_stored)
    if rules.update is not None:
        return errs + rules.update(new_stored, old_stored)
    return errs + rules.create(new_stored)

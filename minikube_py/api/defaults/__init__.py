"""Defaulting: the values kube fills into an object before validating it.

Where it sits: decode → **defaults** → validation → storage. The apiserver calls `apply_defaults` on every
create and update body (and on the result of every patch), at the version the client sent, exactly where
kube runs its `SetDefaults_*` functions. `prepare_for_create` runs once, on create only, after the name and
uid are set: it holds what kube does in the registries' `PrepareForCreate` and must not redo on updates
(a Namespace gets its `kubernetes` finalizer once; the namespace controller removes it later).

Usage rules:
* Both functions mutate the dict in place and only fill in what is missing: defaulting twice changes
  nothing, and a value the client sent is never replaced.
* Dispatch is by `resource.group_resource` in the explicit `_DEFAULTERS` table; a kind without defaults is
  simply absent. The autoscaling group is the one place defaults differ per version (`_VERSIONED`).
* Allocations (cluster IPs, node ports), admission defaults (`serviceAccountName`, `priority`) and the Job
  selector (`workloads.job_selector`, which needs the uid) belong to later stages and are not done here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikube_py.api.defaults import admissionregistration, core, groups, storage, workloads
from minikube_py.api.defaults.fields import child, dicts, set_default
from minikube_py.api.defaults.pod import pod_only, pod_spec
from minikube_py.api.defaults.workloads import job_selector, label_selector_from_template
from minikube_py.api.kinds import Resource
from minikube_py.api.validation.quantity import QuantityError, parse_quantity

__all__ = ["apply_defaults", "job_selector", "label_selector_from_template", "prepare_for_create",
           "prepare_for_update", "qos_class"]

Defaulter = Callable[[dict[str, Any]], None]


def _pod(obj: dict[str, Any]) -> None:
    pod_spec(child(obj, "spec"))
    pod_only(obj)


_DEFAULTERS: dict[str, Defaulter] = {
    "pods": _pod,
    "podtemplates": workloads.pod_template_object,
    "replicationcontrollers": workloads.replication_controller,
    "services": core.service,
    "namespaces": core.namespace,
    "nodes": core.node,
    "secrets": core.secret,
    "persistentvolumes": core.persistent_volume,
    "persistentvolumeclaims": core.persistent_volume_claim,
    "endpoints": core.endpoints,
    "limitranges": core.limit_range,
    "events": core.core_event,
    "events.events.k8s.io": core.events_v1_event,
    "deployments.apps": workloads.deployment,
    "replicasets.apps": workloads.replica_set,
    "statefulsets.apps": workloads.stateful_set,
    "daemonsets.apps": workloads.daemon_set,
    "jobs.batch": workloads.job,
    "cronjobs.batch": workloads.cron_job,
    "priorityclasses.scheduling.k8s.io": groups.priority_class,
    "storageclasses.storage.k8s.io": storage.storage_class,
    "networkpolicies.networking.k8s.io": groups.network_policy,
    "endpointslices.discovery.k8s.io": groups.endpoint_slice,
    "rolebindings.rbac.authorization.k8s.io": groups.role_binding,
    "clusterrolebindings.rbac.authorization.k8s.io": groups.role_binding,
    "customresourcedefinitions.apiextensions.k8s.io": groups.custom_resource_definition,
    "mutatingwebhookconfigurations.admissionregistration.k8s.io":
        admissionregistration.mutating_webhook_configuration,
    "validatingwebhookconfigurations.admissionregistration.k8s.io":
        admissionregistration.validating_webhook_configuration,
}

_VERSIONED: dict[tuple[str, str], Defaulter] = {
    ("horizontalpodautoscalers.autoscaling", "v1"): groups.hpa_v1,
    ("horizontalpodautoscalers.autoscaling", "v2"): groups.hpa_v2,
}

# Status structs Go always serializes, with their non-omitempty counters: what a create response shows
# before any controller has written a status.
_EMPTY_STATUS: dict[str, dict[str, Any]] = {
    "deployments.apps": {},
    "replicasets.apps": {"replicas": 0},
    "statefulsets.apps": {"replicas": 0, "availableReplicas": 0},
    "daemonsets.apps": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                        "numberReady": 0},
    "replicationcontrollers": {"replicas": 0},
    "jobs.batch": {},
    "cronjobs.batch": {},
    "resourcequotas": {},
    "poddisruptionbudgets.policy": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                    "expectedPods": 0},
    "ingresses.networking.k8s.io": {"loadBalancer": {}},
}
_EMPTY_HPA_STATUS = {"v1": {"currentReplicas": 0, "desiredReplicas": 0}, "v2": {"desiredReplicas": 0}}


def apply_defaults(resource: Resource, obj: dict[str, Any]) -> None:
    """Fill in kube's defaults for `obj`, an object of `resource` at `resource.api_version`."""
    defaulter = _VERSIONED.get((resource.group_resource, resource.version)) or _DEFAULTERS.get(
        resource.group_resource)
    if defaulter is not None:
        defaulter(obj)
    empty_status = _EMPTY_STATUS.get(resource.group_resource)
    if resource.group_resource == "horizontalpodautoscalers.autoscaling":
        empty_status = _EMPTY_HPA_STATUS.get(resource.version)
    if empty_status is not None:
        status = child(obj, "status")
        for key, value in empty_status.items():
            set_default(status, key, value)


def prepare_for_create(resource: Resource, obj: dict[str, Any]) -> None:
    """The create-only field settings of kube's registries (`PrepareForCreate`)."""
    preparer = _CREATE_PREPARERS.get(resource.group_resource)
    if preparer is not None:
        preparer(obj)


def _namespace_on_create(obj: dict[str, Any]) -> None:
    finalizers = child(obj, "spec").setdefault("finalizers", [])
    if "kubernetes" not in finalizers:
        finalizers.append("kubernetes")
    obj["status"] = {"phase": "Active"}


def _pod_on_create(obj: dict[str, Any]) -> None:
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}
    if child(obj, "spec", create=False).get("schedulingGates"):
        # Tells users (and `kubectl get pods`: SchedulingGated) why the scheduler leaves the pod alone.
        obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                        "lastTransitionTime": None, "reason": "SchedulingGated",
                                        "message": "Scheduling is blocked due to non-empty scheduling gates"}]


# apps/v1 keeps a DaemonSet's old spec.templateGeneration as this annotation: 1 at create, one more each time
# the pod template changes (the daemonset controller labels pods `pod-template-generation` with it)
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _daemonset_on_create(obj: dict[str, Any]) -> None:
    child(obj, "metadata").setdefault("annotations", {})[TEMPLATE_GENERATION] = "1"


_CREATE_PREPARERS: dict[str, Defaulter] = {
    "namespaces": _namespace_on_create,
    "pods": _pod_on_create,
    "daemonsets.apps": _daemonset_on_create,
}


def prepare_for_update(resource: Resource, new: dict[str, Any], old: dict[str, Any]) -> None:
    """The update-time field carry-overs of kube's registries, applied to `new` (after `apply_defaults`)."""
    preparer = _UPDATE_PREPARERS.get(resource.group_resource)
    if preparer is not None:
        preparer(new, old)


def _namespace_on_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    # Finalizers change only through the finalize subresource, which the namespace controller uses.
    finalizers = child(old, "spec", create=False).get("finalizers")
    spec = child(new, "spec")
    spec.pop("finalizers", None)
    if finalizers is not None:
        spec["finalizers"] = list(finalizers)


def _daemonset_on_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    try:
        generation = int((child(old, "metadata", create=False).get("annotations") or {}).get(TEMPLATE_GENERATION, 0))
    except ValueError:
        generation = 0
    if child(new, "spec", create=False).get("template") != child(old, "spec", create=False).get("template"):
        generation += 1
    if generation:
        child(new, "metadata").setdefault("annotations", {})[TEMPLATE_GENERATION] = str(generation)


_UPDATE_PREPARERS: dict[str, Callable[[dict[str, Any], dict[str, Any]], None]] = {
    "services": core.service_on_update,
    "namespaces": _namespace_on_update,
    "daemonsets.apps": _daemonset_on_update,
}


def qos_class(pod: dict[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort, from the cpu/memory requests and limits of all containers."""
    spec = child(pod, "spec", create=False)
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for container in dicts(spec, "containers") + dicts(spec, "initContainers"):
        resources = child(container, "resources", create=False)
        _sum_positive(child(resources, "requests", create=False), requests)
        found = _sum_positive(child(resources, "limits", create=False), limits)
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) and len(
            requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _sum_positive(quantities: dict[str, Any], totals: dict[str, Any]) -> set[str]:
    found = set()
    for name in ("cpu", "memory"):
        try:
            amount = parse_quantity(quantities[name]) if name in quantities else 0
        except QuantityError:
            continue
        if amount > 0:
            found.add(name)
            totals[name] = totals.get(name, 0) + amount
    return found

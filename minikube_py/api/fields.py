"""Selectable fields: which field selector labels each resource accepts, and their values on an object.

A field selector (`?fieldSelector=spec.nodeName=node-1`) can only name fields the resource declares
selectable. Kube keeps that knowledge in two places per kind, and this module reproduces both:

* the field label conversion function registered for the kind's version decides which labels a request may
  use, may rename a legacy label (pods' `spec.host` became `spec.nodeName`), and words the 400 BadRequest for
  any other label. Kinds without one fall back to the scheme default, which accepts `metadata.name` and
  `metadata.namespace` (even for cluster-scoped kinds, where the namespace simply reads as "");
* the registry strategy's `GetAttrs`/`ToSelectableFields` computes the label -> string map an object is
  matched against. Booleans render as `true`/`false`, integers in decimal, absent values as "".

Where it sits: the apiserver parses `fieldSelector` with `selectors.FieldSelector.parse(text, resource)`,
which calls `convert_field_label` for each term, then filters objects with
`selector.matches(field_set(resource, obj))` on list and watch.

Usage rules: `field_set` takes the object as JSON (a dict) at the resource's own version or at its storage
version; only events differ between the two (core/v1 `involvedObject` versus events.k8s.io/v1
`regarding`), and the event extractor reads either shape by the object's `apiVersion`. A label the
conversion function accepts but kube never fills (pods' `status.podIPs`) is accepted here too and reads as
"", exactly as in kube.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api.errors import bad_request
from minikube_py.api.gofmt import go_quote
from minikube_py.api.kinds import Resource

Object = Mapping[str, Any]

METADATA_FIELDS = ("metadata.name", "metadata.namespace")


# --- the messages kube's conversion functions answer an unknown label with ---------------------------------

def _not_supported(label: str) -> str:
    return f"field label not supported: {label}"


def _not_supported_for_job(label: str) -> str:
    return f"field label {go_quote(label)} not supported for Job"


def _not_known(label: str) -> str:
    return f'{go_quote(label)} is not a known field selector: only "metadata.name", "metadata.namespace"'


# --- reading values out of JSON objects ---------------------------------------------------------------------

def _section(obj: Object, name: str) -> Object:
    value = obj.get(name)
    return value if isinstance(value, Mapping) else {}


def _text(obj: Object, name: str) -> str:
    value = obj.get(name)
    return "" if value is None else str(value)


def _boolean(obj: Object, name: str) -> str:
    return "true" if obj.get(name) else "false"


def _integer(obj: Object, name: str) -> str:
    return str(int(obj.get(name) or 0))


# --- per-kind selectable fields (beyond metadata) ---------------------------------------------------------

def _no_fields(obj: Object) -> dict[str, str]:
    return {}


def _pod_fields(pod: Object) -> dict[str, str]:
    spec, status = _section(pod, "spec"), _section(pod, "status")
    # v1 still accepts the deprecated `serviceAccount`; kube's conversion uses it when the new field is empty.
    service_account = _text(spec, "serviceAccountName") or _text(spec, "serviceAccount")
    return {
        "spec.nodeName": _text(spec, "nodeName"),
        "spec.restartPolicy": _text(spec, "restartPolicy"),
        "spec.schedulerName": _text(spec, "schedulerName"),
        "spec.serviceAccountName": service_account,
        "spec.hostNetwork": _boolean(spec, "hostNetwork"),
        "status.phase": _text(status, "phase"),
        "status.podIP": _pod_ip(status),
        "status.nominatedNodeName": _text(status, "nominatedNodeName"),
    }


def _pod_ip(status: Object) -> str:
    # Kube selects on the first of status.podIPs, and converting v1 input lets status.podIP win over it.
    if status.get("podIP"):
        return _text(status, "podIP")
    pod_ips = status.get("podIPs") or []
    return _text(pod_ips[0], "ip") if pod_ips and isinstance(pod_ips[0], Mapping) else ""


def _node_fields(node: Object) -> dict[str, str]:
    return {"spec.unschedulable": _boolean(_section(node, "spec"), "unschedulable")}


def _namespace_fields(namespace: Object) -> dict[str, str]:
    return {"status.phase": _text(_section(namespace, "status"), "phase")}


def _replication_controller_fields(rc: Object) -> dict[str, str]:
    return {"status.replicas": _integer(_section(rc, "status"), "replicas")}


def _secret_fields(secret: Object) -> dict[str, str]:
    return {"type": _text(secret, "type")}


def _service_fields(service: Object) -> dict[str, str]:
    spec = _section(service, "spec")
    return {"spec.clusterIP": _text(spec, "clusterIP"), "spec.type": _text(spec, "type")}


def _job_fields(job: Object) -> dict[str, str]:
    return {"status.successful": _integer(_section(job, "status"), "succeeded")}


_REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


def _event_parts(event: Object) -> tuple[Object, str, str]:
    """The object an event is about, its reporting controller and its legacy source component.

    The same stored event is served as core/v1 and as events.k8s.io/v1 under different field names.
    """
    if _text(event, "apiVersion").startswith("events.k8s.io/"):
        return (_section(event, "regarding"), _text(event, "reportingController"),
                _text(_section(event, "deprecatedSource"), "component"))
    return (_section(event, "involvedObject"), _text(event, "reportingComponent"),
            _text(_section(event, "source"), "component"))


def _event_fields(reference_prefix: str, reporting_label: str) -> Callable[[Object], dict[str, str]]:
    def fields(event: Object) -> dict[str, str]:
        reference, reporting, source = _event_parts(event)
        values = {f"{reference_prefix}.{name}": _text(reference, name) for name in _REFERENCE_FIELDS}
        values[reporting_label] = reporting
        # Events written through events.k8s.io have no source; kube lets `source` select their controller.
        values["source"] = source or reporting
        values["reason"] = _text(event, "reason")
        values["type"] = _text(event, "type")
        return values

    return fields


# --- the table -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Selectable:
    """One resource's field selector contract: kube's conversion function and ToSelectableFields together."""

    labels: frozenset[str]
    fields: Callable[[Object], dict[str, str]]
    unsupported: Callable[[str], str] = _not_supported
    aliases: Mapping[str, str] = field(default_factory=dict)


def _selectable(labels: tuple[str, ...], fields: Callable[[Object], dict[str, str]], **kw: Any) -> _Selectable:
    return _Selectable(frozenset(labels), fields, **kw)


_EVENT_LABELS = ("reason", "source", "type")

_DEFAULT = _selectable(METADATA_FIELDS, _no_fields, unsupported=_not_known)

# Keyed by `Resource.group_resource`; every resource not listed here gets `_DEFAULT`.
_SELECTABLE: dict[str, _Selectable] = {
    "pods": _selectable(
        (*METADATA_FIELDS, "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
         "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"),
        _pod_fields, aliases={"spec.host": "spec.nodeName"}),
    "nodes": _selectable(("metadata.name", "spec.unschedulable"), _node_fields),
    "namespaces": _selectable(("metadata.name", "status.phase"), _namespace_fields),
    "replicationcontrollers": _selectable((*METADATA_FIELDS, "status.replicas"), _replication_controller_fields),
    "secrets": _selectable((*METADATA_FIELDS, "type"), _secret_fields),
    "services": _selectable((*METADATA_FIELDS, "spec.clusterIP", "spec.type"), _service_fields),
    "events": _selectable(
        (*METADATA_FIELDS, *_EVENT_LABELS, "reportingComponent",
         *(f"involvedObject.{name}" for name in _REFERENCE_FIELDS)),
        _event_fields("involvedObject", "reportingComponent")),
    "events.events.k8s.io": _selectable(
        (*METADATA_FIELDS, *_EVENT_LABELS, "reportingController",
         *(f"regarding.{name}" for name in _REFERENCE_FIELDS)),
        _event_fields("regarding", "reportingController")),
    "jobs.batch": _selectable((*METADATA_FIELDS, "status.successful"), _job_fields,
                              unsupported=_not_supported_for_job),
}


def _contract(resource: Resource) -> _Selectable:
    return _SELECTABLE.get(resource.group_resource, _DEFAULT)


def supported_fields(resource: Resource) -> frozenset[str]:
    """Every label a field selector on `resource` may name, legacy aliases included."""
    contract = _contract(resource)
    return contract.labels | frozenset(contract.aliases)


def convert_field_label(resource: Resource, label: str) -> str:
    """The label `field_set` knows `label` by, or a 400 BadRequest worded as kube words it for this kind."""
    contract = _contract(resource)
    if label in contract.labels:
        return label
    if label in contract.aliases:
        return contract.aliases[label]
    raise bad_request(contract.unsupported(label))


def field_set(resource: Resource, obj: Object) -> dict[str, str]:
    """The selectable fields of `obj` (a JSON object of `resource`) and their values as strings."""
    metadata = _section(obj, "metadata")
    values = {"metadata.name": _text(metadata, "name")}
    if resource.namespaced:
        values["metadata.namespace"] = _text(metadata, "namespace")
    values.update(_contract(resource).fields(obj))
    return values

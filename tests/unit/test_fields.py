"""Each resource accepts the field selector labels kube 1.32 accepts, and reads them off objects as kube does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikube_py.api.errors import APIError
from minikube_py.api.fields import convert_field_label, field_set, go_quote, supported_fields
from minikube_py.api.kinds import Resource, default_registry
from minikube_py.api.selectors import FieldSelector

REGISTRY = default_registry()


def resource(group_resource: str) -> Resource:
    plural, _, group = group_resource.partition(".")
    versions = REGISTRY.group_versions()[group]
    found = REGISTRY.lookup(group, versions[0], plural)
    assert found is not None, group_resource
    return found


def case(name: str, *values: object) -> object:
    return pytest.param(*values, id=name)


def pod(**spec_and_status: Any) -> dict[str, Any]:
    status = spec_and_status.pop("status", {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "default"},
            "spec": spec_and_status, "status": status}


def core_event(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web-1.17", "namespace": "default"},
            **fields}


def events_event(**fields: Any) -> dict[str, Any]:
    return {**core_event(**fields), "apiVersion": "events.k8s.io/v1"}


REFERENCE = {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u-1", "apiVersion": "v1",
             "resourceVersion": "42", "fieldPath": "spec.containers{web}"}


# --- which labels each resource accepts -----------------------------------------------------------------

@pytest.mark.parametrize("group_resource, label", [
    case("every namespaced kind accepts its name", "deployments.apps", "metadata.name"),
    case("every namespaced kind accepts its namespace", "configmaps", "metadata.namespace"),
    case("a cluster-scoped kind without its own rules still accepts a namespace", "persistentvolumes",
         "metadata.namespace"),
    case("pods accept their node", "pods", "spec.nodeName"),
    case("pods accept their phase", "pods", "status.phase"),
    case("pods accept their IPs though kube never fills that field", "pods", "status.podIPs"),
    case("pods accept host networking", "pods", "spec.hostNetwork"),
    case("nodes accept schedulability", "nodes", "spec.unschedulable"),
    case("namespaces accept their phase", "namespaces", "status.phase"),
    case("secrets accept their type", "secrets", "type"),
    case("services accept their cluster IP", "services", "spec.clusterIP"),
    case("services accept their type", "services", "spec.type"),
    case("replication controllers accept their replica count", "replicationcontrollers", "status.replicas"),
    case("jobs accept their success count", "jobs.batch", "status.successful"),
    case("core events accept the involved object's uid", "events", "involvedObject.uid"),
    case("core events accept the reporting component", "events", "reportingComponent"),
    case("core events accept the source", "events", "source"),
    case("events.k8s.io events accept the regarded object's name", "events.events.k8s.io", "regarding.name"),
    case("events.k8s.io events accept the reporting controller", "events.events.k8s.io", "reportingController"),
    case("events.k8s.io events still accept the source", "events.events.k8s.io", "source"),
])
def test_supported_field_labels(group_resource: str, label: str) -> None:
    assert label in supported_fields(resource(group_resource))
    assert convert_field_label(resource(group_resource), label) == label


@pytest.mark.parametrize("group_resource, label, message", [
    case("pods reject a field kube does not index", "pods", "spec.containers",
         "field label not supported: spec.containers"),
    case("nodes reject a namespace", "nodes", "metadata.namespace", "field label not supported: metadata.namespace"),
    case("namespaces reject a namespace", "namespaces", "metadata.namespace",
         "field label not supported: metadata.namespace"),
    case("core events reject the events.k8s.io spelling", "events", "regarding.name",
         "field label not supported: regarding.name"),
    case("events.k8s.io events reject the core spelling", "events.events.k8s.io", "involvedObject.name",
         "field label not supported: involvedObject.name"),
    case("jobs word their refusal with the kind", "jobs.batch", "spec.parallelism",
         'field label "spec.parallelism" not supported for Job'),
    case("deployments fall back to the scheme default", "deployments.apps", "status.replicas",
         '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    case("replica sets do not select on replicas in apps/v1", "replicasets.apps", "status.replicas",
         '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
])
def test_unsupported_field_labels_are_bad_requests(group_resource: str, label: str, message: str) -> None:
    with pytest.raises(APIError) as raised:
        FieldSelector.parse(f"{label}=x", resource(group_resource))
    assert (raised.value.code, raised.value.reason, raised.value.message) == (400, "BadRequest", message)


def test_the_first_unsupported_label_in_sorted_order_is_reported() -> None:
    with pytest.raises(APIError) as raised:
        FieldSelector.parse("zeta=1,alpha=2,metadata.name=x", resource("pods"))
    assert raised.value.message == "field label not supported: alpha"


def test_syntax_errors_come_before_unsupported_labels() -> None:
    with pytest.raises(APIError) as raised:
        FieldSelector.parse("alpha=1,broken", resource("pods"))
    assert raised.value.message.startswith("invalid selector:")


def test_the_legacy_pod_host_label_selects_the_node_name() -> None:
    selector = FieldSelector.parse("spec.host=node-1", resource("pods"))
    assert selector.requires_exact_match("spec.nodeName") == "node-1"
    assert selector.matches(field_set(resource("pods"), pod(nodeName="node-1")))


# --- the values an object exposes ------------------------------------------------------------------------

@pytest.mark.parametrize("group_resource, obj, expected", [
    case("metadata gives name and namespace", "configmaps",
         {"metadata": {"name": "cm", "namespace": "ns"}}, {"metadata.name": "cm", "metadata.namespace": "ns"}),
    case("cluster-scoped objects have no namespace field", "clusterroles.rbac.authorization.k8s.io",
         {"metadata": {"name": "admin"}}, {"metadata.name": "admin"}),
    case("a pod exposes its scheduling fields", "pods",
         pod(nodeName="node-1", restartPolicy="Always", schedulerName="default-scheduler",
             serviceAccountName="sa", hostNetwork=True,
             status={"phase": "Running", "podIP": "10.0.0.5", "nominatedNodeName": "node-2"}),
         {"metadata.name": "web-1", "metadata.namespace": "default", "spec.nodeName": "node-1",
          "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
          "spec.serviceAccountName": "sa", "spec.hostNetwork": "true", "status.phase": "Running",
          "status.podIP": "10.0.0.5", "status.nominatedNodeName": "node-2"}),
    case("an unscheduled pod reads empty strings and false", "pods", pod(),
         {"metadata.name": "web-1", "metadata.namespace": "default", "spec.nodeName": "",
          "spec.restartPolicy": "", "spec.schedulerName": "", "spec.serviceAccountName": "",
          "spec.hostNetwork": "false", "status.phase": "", "status.podIP": "", "status.nominatedNodeName": ""}),
    case("a pod's IP falls back to the first of its IPs", "pods",
         pod(status={"podIPs": [{"ip": "10.0.0.6"}, {"ip": "fd00::6"}]}), {"status.podIP": "10.0.0.6"}),
    case("a pod's deprecated service account still counts", "pods", pod(serviceAccount="old"),
         {"spec.serviceAccountName": "old"}),
    case("a node reads its schedulability as a boolean", "nodes",
         {"metadata": {"name": "node-1"}, "spec": {"unschedulable": True}},
         {"metadata.name": "node-1", "spec.unschedulable": "true"}),
    case("a node without the flag is schedulable", "nodes", {"metadata": {"name": "node-1"}},
         {"spec.unschedulable": "false"}),
    case("a namespace exposes its phase", "namespaces",
         {"metadata": {"name": "dev"}, "status": {"phase": "Terminating"}}, {"status.phase": "Terminating"}),
    case("a secret exposes its type", "secrets",
         {"metadata": {"name": "s", "namespace": "d"}, "type": "kubernetes.io/tls"}, {"type": "kubernetes.io/tls"}),
    case("a service exposes its type and cluster IP", "services",
         {"metadata": {"name": "s"}, "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1"}},
         {"spec.type": "ClusterIP", "spec.clusterIP": "10.96.0.1"}),
    case("a replication controller's replicas render in decimal", "replicationcontrollers",
         {"metadata": {"name": "rc"}, "status": {"replicas": 3}}, {"status.replicas": "3"}),
    case("a new replication controller has zero replicas", "replicationcontrollers", {"metadata": {"name": "rc"}},
         {"status.replicas": "0"}),
    case("a job's successes come from status.succeeded", "jobs.batch",
         {"metadata": {"name": "j"}, "status": {"succeeded": 2}}, {"status.successful": "2"}),
    case("a core event exposes its involved object", "events",
         core_event(involvedObject=REFERENCE, reason="Pulled", type="Normal", source={"component": "kubelet"},
                    reportingComponent="kubelet"),
         {**{f"involvedObject.{k}": v for k, v in REFERENCE.items()}, "reason": "Pulled", "type": "Normal",
          "source": "kubelet", "reportingComponent": "kubelet"}),
    case("a core event without a source selects by its reporting component", "events",
         core_event(reportingComponent="my-controller"), {"source": "my-controller"}),
    case("an events.k8s.io event read as stored in core form", "events.events.k8s.io",
         core_event(involvedObject=REFERENCE, reportingComponent="kubelet", source={"component": "kubelet"}),
         {**{f"regarding.{k}": v for k, v in REFERENCE.items()}, "reportingController": "kubelet",
          "source": "kubelet"}),
    case("an events.k8s.io event read in its own form", "events.events.k8s.io",
         events_event(regarding=REFERENCE, reportingController="scheduler", reason="Scheduled", type="Normal"),
         {**{f"regarding.{k}": v for k, v in REFERENCE.items()}, "reportingController": "scheduler",
          "source": "scheduler", "reason": "Scheduled", "type": "Normal"}),
    case("a core event served in events.k8s.io form keeps its legacy source", "events",
         events_event(regarding=REFERENCE, deprecatedSource={"component": "kubelet"}, reportingController="x"),
         {"involvedObject.name": "web-1", "source": "kubelet", "reportingComponent": "x"}),
])
def test_field_sets(group_resource: str, obj: dict[str, Any], expected: dict[str, str]) -> None:
    fields = field_set(resource(group_resource), obj)
    assert {key: fields.get(key) for key in expected} == expected


@pytest.mark.parametrize("group_resource", ["pods", "nodes", "namespaces", "secrets", "services", "events",
                                            "events.events.k8s.io", "replicationcontrollers", "jobs.batch"])
def test_every_filled_field_is_a_supported_label(group_resource: str) -> None:
    fields = field_set(resource(group_resource), {"metadata": {"name": "x"}})
    assert set(fields) <= supported_fields(resource(group_resource))


# --- the queries kubectl sends ----------------------------------------------------------------------------

NODE_EVENT = core_event(involvedObject={"kind": "Node", "name": "node-1", "uid": "node-1", "namespace": ""})


@pytest.mark.parametrize("group_resource, query, obj, selected", [
    case("describe node lists the node's live pods", "pods",
         "spec.nodeName=node-1,status.phase!=Succeeded,status.phase!=Failed",
         pod(nodeName="node-1", status={"phase": "Running"}), True),
    case("describe node skips finished pods", "pods",
         "spec.nodeName=node-1,status.phase!=Succeeded,status.phase!=Failed",
         pod(nodeName="node-1", status={"phase": "Failed"}), False),
    case("describe node finds events with an empty involved namespace", "events",
         "involvedObject.name=node-1,involvedObject.namespace=,involvedObject.kind=Node,involvedObject.uid=node-1",
         NODE_EVENT, True),
    case("describe pod skips events about other objects", "events",
         "involvedObject.name=web-1,involvedObject.namespace=default,involvedObject.uid=u-1",
         NODE_EVENT, False),
    case("kubectl wait watches one object by name", "deployments.apps", "metadata.name=nginx",
         {"metadata": {"name": "nginx", "namespace": "default"}}, True),
    case("a namespace selector on a cluster-scoped kind selects nothing", "persistentvolumes",
         "metadata.namespace=default", {"metadata": {"name": "pv-1"}}, False),
    case("an empty namespace selector on a cluster-scoped kind selects everything", "persistentvolumes",
         "metadata.namespace=", {"metadata": {"name": "pv-1"}}, True),
    case("the pod IPs label never selects a real address", "pods", "status.podIPs=10.0.0.5",
         pod(status={"podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}]}), False),
])
def test_kubectl_queries(group_resource: str, query: str, obj: dict[str, Any], selected: bool) -> None:
    res = resource(group_resource)
    assert FieldSelector.parse(query, res).matches(field_set(res, obj)) is selected


@pytest.mark.parametrize("text, quoted", [
    case("plain text is wrapped in quotes", "spec.foo", '"spec.foo"'),
    case("quotes and backslashes are escaped", 'a"b\\c', '"a\\"b\\\\c"'),
    case("control characters use Go escapes", "a\tb\x01", '"a\\tb\\x01"'),
    case("printable unicode is kept", "héllo", '"héllo"'),
])
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126)))
def test_go_quote_of_printable_ascii_is_json_compatible(text: str) -> None:
    assert json.loads(go_quote(text)) == text

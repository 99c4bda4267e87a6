"""Validation: kube's field paths and messages for invalid objects and forbidden updates, per kind."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from minikube_py.api import names
from minikube_py.api.defaults import apply_defaults, prepare_for_create, prepare_for_update
from minikube_py.api.errors import FieldError
from minikube_py.api.kinds import Resource, default_registry
from minikube_py.api.validation import validate_create, validate_update
from minikube_py.api.validation.cron import schedule_errors

REGISTRY = default_registry()
Obj = dict[str, Any]


def res(group: str, version: str, plural: str) -> Resource:
    resource = REGISTRY.lookup(group, version, plural)
    assert resource is not None
    return resource


def ready(gvr: tuple[str, str, str], obj: Obj) -> Obj:
    """An object as validation sees it: defaulted and prepared for create."""
    resource = res(*gvr)
    apply_defaults(resource, obj)
    prepare_for_create(resource, obj)
    return obj


def fields(errors: list[FieldError]) -> list[str]:
    return [e.field for e in errors]


def messages(errors: list[FieldError]) -> list[str]:
    return [e.describe() for e in errors]


def meta(name: str = "x", namespace: str | None = "default", **extra: Any) -> Obj:
    return {"name": name, **({"namespace": namespace} if namespace else {}), **extra}


def container(**fields_: Any) -> Obj:
    return {"name": "app", "image": "nginx:1.25", **fields_}


def pod(*containers: Obj, metadata: Obj | None = None, **spec: Any) -> Obj:
    return ready(("", "v1", "pods"), {"metadata": metadata or meta("web"),
                                      "spec": {"containers": list(containers) or [container()], **spec}})


def template(labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"metadata": {"labels": {"app": "web"} if labels is None else labels},
            "spec": {"containers": [container()], **spec}}


def workload(plural: str, group: str = "apps", **spec: Any) -> Obj:
    body = {"selector": {"matchLabels": {"app": "web"}}, "template": template(), **spec}
    return ready((group, "v1", plural), {"metadata": meta("web"), "spec": body})


def service(**spec: Any) -> Obj:
    return ready(("", "v1", "services"), {"metadata": meta("web"),
                                          "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}})


def check(gvr: tuple[str, str, str], obj: Obj) -> list[FieldError]:
    return validate_create(res(*gvr), obj)


SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


@pytest.mark.parametrize("rule, value, expected", [
    (names.is_dns1123_subdomain, "Web", [SUBDOMAIN_MSG]),
    (names.is_dns1123_subdomain, "a" * 254, ["must be no more than 253 characters"]),
    (names.is_dns1123_label, "a.b", ["must not contain dots"]),
    (names.is_dns1035_label, "1web", [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    (names.is_qualified_name, "example.com/", ["name part must be non-empty", "name part " + names.regex_error(
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character", "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", "MyName", "my.name", "123-abc")]),
    (names.is_qualified_name, "a/b/c", [names.is_qualified_name("a/b/c")[0]]),
    (names.is_valid_label_value, "-bad", [names.is_valid_label_value("-bad")[0]]),
    (names.is_config_map_key, "..data", ["must not start with '..'"]),
    (names.is_valid_port_name, "http--1", ["must not contain consecutive hyphens"]),
    (names.is_valid_path_segment_name, "a/b", ["may not contain '/'"]),
    (names.is_valid_path_segment_name, "..", ["may not be '..'"]),
    (names.is_dns1123_subdomain, "my-app.example.com", []),
], ids=["an uppercase subdomain", "a too long subdomain", "a label with dots", "a DNS-1035 label starting with a digit",
        "a qualified name with an empty name", "a qualified name with two slashes", "a label value starting with a dash",
        "a config key starting with two dots", "a port name with two dashes", "a path segment with a slash",
        "a path segment that is '..'", "a valid subdomain"])
def test_name_rules(rule: Callable[[str], list[str]], value: str, expected: list[str]) -> None:
    assert rule(value) == expected


def test_generate_name_may_end_with_a_dash() -> None:
    assert names.name_is_dns_subdomain("web-", True) == [] and names.name_is_dns_subdomain("web-", False)


def test_messages_read_like_kubes() -> None:
    errors = check(("", "v1", "pods"), pod(metadata=meta("Web")))
    assert messages(errors) == ["metadata.name: Invalid value: \"Web\": " + SUBDOMAIN_MSG]


META_CASES = [
    ("a missing name is required", meta(""), ["metadata.name"]),
    ("a generated name is accepted", {"generateName": "web-", "namespace": "default"}, []),
    ("a namespaced kind needs a namespace", meta(namespace=None), ["metadata.namespace"]),
    ("label keys must be qualified names", meta(labels={"bad key": "v"}), ["metadata.labels"]),
    ("label values must be valid", meta(labels={"k": "a b"}), ["metadata.labels"]),
    ("annotation keys must be qualified names", meta(annotations={"-x": "v"}), ["metadata.annotations"]),
    ("annotations are limited to 256 KiB", meta(annotations={"k": "v" * 262144}), ["metadata.annotations"]),
    ("unknown unqualified finalizers are rejected", meta(finalizers=["custom"]), ["metadata.finalizers[0]"]),
    ("owner references need a kind, name and uid", meta(ownerReferences=[{"apiVersion": "apps/v1"}]),
     ["metadata.ownerReferences.kind", "metadata.ownerReferences.name", "metadata.ownerReferences.uid"]),
    ("only one owner may be the controller", meta(ownerReferences=[
        {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True}]),
     ["metadata.ownerReferences"]),
    ("generation may not be negative", meta(generation=-1), ["metadata.generation"]),
]


@pytest.mark.parametrize("case, metadata, expected", META_CASES, ids=[c[0] for c in META_CASES])
def test_object_meta(case: str, metadata: Obj, expected: list[str]) -> None:
    assert fields(check(("", "v1", "configmaps"), {"metadata": metadata})) == expected


def test_cluster_scoped_kinds_forbid_a_namespace() -> None:
    errors = check(("", "v1", "nodes"), ready(("", "v1", "nodes"), {"metadata": meta("n1")}))
    assert messages(errors) == ["metadata.namespace: Forbidden: not allowed on this type"]


def test_services_need_dns_1035_names() -> None:
    obj = service()
    obj["metadata"]["name"] = "1web"
    assert fields(check(("", "v1", "services"), obj)) == ["metadata.name"]


POD_CASES = [
    ("a pod needs containers", lambda: pod(containers=[]), ["spec.containers"]),
    ("a container needs an image", lambda: pod(container(image="")), ["spec.containers[0].image"]),
    ("container names must be unique", lambda: pod(container(), container()), ["spec.containers[1].name"]),
    ("container names are DNS labels", lambda: pod(container(name="App")), ["spec.containers[0].name"]),
    ("container ports are 1 to 65535", lambda: pod(container(ports=[{"containerPort": 70000}])),
     ["spec.containers[0].ports[0].containerPort"]),
    ("a container port is required", lambda: pod(container(ports=[{"name": "http"}])),
     ["spec.containers[0].ports[0].containerPort"]),
    ("port protocols are TCP, UDP or SCTP", lambda: pod(container(ports=[{"containerPort": 80, "protocol": "ICMP"}])),
     ["spec.containers[0].ports[0].protocol"]),
    ("restart policies are Always, OnFailure or Never", lambda: pod(restartPolicy="Sometimes"),
     ["spec.restartPolicy"]),
    ("DNS policies are kube's four", lambda: pod(dnsPolicy="Google"), ["spec.dnsPolicy"]),
    ("a mount must name a volume", lambda: pod(container(volumeMounts=[{"name": "data", "mountPath": "/d"}])),
     ["spec.containers[0].volumeMounts[0].name"]),
    ("a volume has one source", lambda: pod(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]),
     ["spec.volumes[0].hostPath"]),
    ("volume names are unique", lambda: pod(volumes=[{"name": "v"}, {"name": "v"}]), ["spec.volumes[1].name"]),
    ("requests may not exceed limits", lambda: pod(container(resources={"limits": {"cpu": "1"},
                                                                        "requests": {"cpu": "2"}})),
     ["spec.containers[0].resources.requests"]),
    ("resource names must be known", lambda: pod(container(resources={"limits": {"gpu": "1"}})),
     ["spec.containers[0].resources.limits[gpu]"] * 2 + ["spec.containers[0].resources.requests[gpu]"] * 2),
    ("a liveness probe needs a handler", lambda: pod(container(livenessProbe={"initialDelaySeconds": 1})),
     ["spec.containers[0].livenessProbe"]),
    ("a liveness probe succeeds once", lambda: pod(container(livenessProbe={"exec": {"command": ["true"]},
                                                                            "successThreshold": 2})),
     ["spec.containers[0].livenessProbe.successThreshold"]),
    ("env var names may not contain '='", lambda: pod(container(env=[{"name": "A=B", "value": "1"}])),
     ["spec.containers[0].env[0].name"]),
    ("an env var takes a value or a source", lambda: pod(container(env=[{"name": "A", "value": "1", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.name"}}}])), ["spec.containers[0].env[0].valueFrom"]),
    ("env vars may only read some pod fields", lambda: pod(container(env=[{"name": "A", "valueFrom": {
        "fieldRef": {"fieldPath": "status.phase"}}}])), ["spec.containers[0].env[0].valueFrom.fieldRef.fieldPath"]),
    ("env vars may read a label", lambda: pod(container(env=[{"name": "A", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.labels['app']"}}}])), []),
    ("tolerations with an empty key must use Exists", lambda: pod(tolerations=[{"operator": "Equal"}]),
     ["spec.tolerations[0].operator"]),
    ("toleration seconds are for NoExecute only", lambda: pod(tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
     ["spec.tolerations[0].effect"]),
    ("node selectors are labels", lambda: pod(nodeSelector={"k": "a b"}), ["spec.nodeSelector"]),
    ("host network pods expose container ports on the host",
     lambda: pod(container(ports=[{"containerPort": 80, "hostPort": 81}]), hostNetwork=True),
     ["spec.containers[0].ports[0].hostPort"]),
    ("images may not have surrounding spaces", lambda: pod(container(image=" nginx")), ["spec.containers[0].image"]),
    ("init containers may not have probes", lambda: pod(initContainers=[container(
        name="init", readinessProbe={"exec": {"command": ["true"]}})]), ["spec.initContainers[0].readinessProbe"]),
    ("topology spread needs a positive skew", lambda: pod(topologySpreadConstraints=[
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
     ["spec.topologySpreadConstraints[0].maxSkew"]),
    ("required node affinity needs a term", lambda: pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
     ["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"]),
]


@pytest.mark.parametrize("case, build, expected", POD_CASES, ids=[c[0] for c in POD_CASES])
def test_pod_create(case: str, build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(("", "v1", "pods"), build())) == expected


def test_a_valid_pod_passes() -> None:
    assert check(("", "v1", "pods"), pod(container(ports=[{"containerPort": 80}], resources={
        "limits": {"cpu": "500m", "memory": "128Mi"}}), volumes=[{"name": "v", "configMap": {"name": "c"}}])) == []


def test_the_request_limit_message_names_the_limit() -> None:
    errors = check(("", "v1", "pods"), pod(container(resources={"limits": {"cpu": "0.5"}, "requests": {"cpu": "1"}})))
    assert messages(errors) == ['spec.containers[0].resources.requests: Invalid value: "1": must be less than or '
                                'equal to cpu limit of 500m']


def changed(obj: Obj, change: Callable[[Obj], Any]) -> Obj:
    new = copy.deepcopy(obj)
    change(new)
    return new


def updated(gvr: tuple[str, str, str], old: Obj, change: Callable[[Obj], Any]) -> Obj:
    """The new object of an update as validation sees it: changed, defaulted, prepared against the old one."""
    new = changed(old, change)
    apply_defaults(res(*gvr), new)
    prepare_for_update(res(*gvr), new, old)
    return new


POD_UPDATE_CASES = [
    ("the image may change", lambda p: p["spec"]["containers"][0].update(image="nginx:1.26"), []),
    ("tolerations may be added", lambda p: p["spec"].update(tolerations=[{"operator": "Exists"}]), []),
    ("the active deadline may be set", lambda p: p["spec"].update(activeDeadlineSeconds=30), []),
    ("a port may not change", lambda p: p["spec"]["containers"][0].update(ports=[{"containerPort": 81,
                                                                                   "protocol": "TCP"}]), ["spec"]),
    ("a container may not be added", lambda p: p["spec"]["containers"].append(container(name="two")),
     ["spec.containers"]),
    ("the restart policy may not change", lambda p: p["spec"].update(restartPolicy="Never"), ["spec"]),
]


@pytest.mark.parametrize("case, change, expected", POD_UPDATE_CASES, ids=[c[0] for c in POD_UPDATE_CASES])
def test_pod_update(case: str, change: Callable[[Obj], Any], expected: list[str]) -> None:
    old = pod()
    assert fields(validate_update(res("", "v1", "pods"), updated(("", "v1", "pods"), old, change), old)) == expected


def test_the_pod_update_message_lists_what_may_change() -> None:
    old = pod()
    errors = validate_update(res("", "v1", "pods"), changed(old, lambda p: p["spec"].update(restartPolicy="Never")),
                             old)
    assert errors[0].message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
        "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n")
    assert "spec.restartPolicy" in errors[0].message


def test_the_active_deadline_may_only_shrink() -> None:
    old = pod(activeDeadlineSeconds=30)
    new = changed(old, lambda p: p["spec"].update(activeDeadlineSeconds=60))
    assert messages(validate_update(res("", "v1", "pods"), new, old)) == [
        "spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"]


def test_existing_tolerations_may_not_be_modified() -> None:
    old = pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}])
    new = changed(old, lambda p: p["spec"]["tolerations"][0].update(effect="NoExecute"))
    assert fields(validate_update(res("", "v1", "pods"), new, old)) == ["spec.tolerations"]


APPS = ("apps", "v1")
WORKLOAD_CASES = [
    ("a deployment selector must match its template", "deployments", {"template": template({"app": "other"})},
     ["spec.template.metadata.labels"]),
    ("a deployment selector is required", "deployments", {"selector": None},
     ["spec.selector", "spec.template.metadata.labels"]),
    ("an empty deployment selector is invalid", "deployments", {"selector": {}}, ["spec.selector"]),
    ("replicas may not be negative", "deployments", {"replicas": -1}, ["spec.replicas"]),
    ("controllers restart pods always", "deployments", {"template": template(restartPolicy="Never")},
     ["spec.template.spec.restartPolicy"]),
    ("max surge and max unavailable may not both be zero", "deployments", {"strategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}},
     ["spec.strategy.rollingUpdate.maxUnavailable"]),
    ("percentages end with a percent sign", "deployments", {"strategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50", "maxUnavailable": 1}}},
     ["spec.strategy.rollingUpdate.maxSurge"]),
    ("the progress deadline exceeds min ready seconds", "deployments", {"minReadySeconds": 700},
     ["spec.progressDeadlineSeconds"]),
    ("template labels are validated as labels", "deployments", {"selector": {"matchLabels": {"app": "a b"}},
                                                                "template": template({"app": "a b"})},
     ["spec.selector.matchLabels", "spec.template.labels"]),
    ("a replica set selector must match", "replicasets", {"template": template({"app": "x"})},
     ["spec.template.metadata.labels"]),
    ("a stateful set pod policy is OrderedReady or Parallel", "statefulsets", {"podManagementPolicy": "Random"},
     ["spec.podManagementPolicy"]),
    ("a daemon set selector must match", "daemonsets", {"template": template({"app": "x"})},
     ["spec.template.metadata.labels"]),
    ("a daemon set may not surge and be unavailable at once", "daemonsets", {"updateStrategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}},
     ["spec.updateStrategy.rollingUpdate.maxSurge"]),
]


@pytest.mark.parametrize("case, plural, spec, expected", WORKLOAD_CASES, ids=[c[0] for c in WORKLOAD_CASES])
def test_workload_create(case: str, plural: str, spec: Obj, expected: list[str]) -> None:
    obj = workload(plural, **{k: v for k, v in spec.items() if v is not None})
    for key in [k for k, v in spec.items() if v is None]:
        del obj["spec"][key]
    assert fields(check((*APPS, plural), obj)) == expected


def test_the_selector_mismatch_message_shows_the_labels() -> None:
    errors = check((*APPS, "deployments"), workload("deployments", template=template({"app": "other"})))
    assert messages(errors) == ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: '
                                '`selector` does not match template `labels`']


@pytest.mark.parametrize("plural", ["deployments", "replicasets", "daemonsets"])
def test_an_apps_selector_is_immutable(plural: str) -> None:
    old = workload(plural)
    new = changed(old, lambda d: (d["spec"]["selector"]["matchLabels"].update(app="v2"),
                                  d["spec"]["template"]["metadata"]["labels"].update(app="v2")))
    assert messages(validate_update(res(*APPS, plural), new, old)) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"v2"}, '
        'MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable']


@pytest.mark.parametrize("case, change, expected", [
    ("scaling a stateful set is allowed", lambda s: s["spec"].update(replicas=3), []),
    ("changing its template is allowed", lambda s: s["spec"]["template"]["spec"]["containers"][0].update(image="x"),
     []),
    ("changing its service name is forbidden", lambda s: s["spec"].update(serviceName="other"), ["spec"]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_stateful_set_update(case: str, change: Callable[[Obj], Any], expected: list[str]) -> None:
    old = workload("statefulsets", serviceName="web")
    assert fields(validate_update(res(*APPS, "statefulsets"), changed(old, change), old)) == expected


def test_the_stateful_set_message_lists_what_may_change() -> None:
    old = workload("statefulsets", serviceName="web")
    errors = validate_update(res(*APPS, "statefulsets"), changed(old, lambda s: s["spec"].update(serviceName="x")),
                             old)
    assert messages(errors) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]


def job(**spec: Any) -> Obj:
    obj = {"metadata": meta("pi", uid="u-1"), "spec": {"template": template(restartPolicy="Never"), **spec}}
    from minikube_py.api.defaults.workloads import job_selector

    ready(("batch", "v1", "jobs"), obj)
    job_selector(obj)
    return obj


JOB_CASES = [
    ("a generated job passes", lambda: job(), []),
    ("jobs may not restart always", lambda: job(template=template(restartPolicy="Always")),
     ["spec.template.spec.restartPolicy"]),
    ("a manual selector must match the template", lambda: job(manualSelector=True, selector={
        "matchLabels": {"app": "other"}}), ["spec.template.metadata.labels"]),
    ("backoff limits may not be negative", lambda: job(backoffLimit=-1), ["spec.backoffLimit"]),
    ("completion modes are NonIndexed or Indexed", lambda: job(completionMode="Random"), ["spec.completionMode"]),
]


@pytest.mark.parametrize("case, build, expected", JOB_CASES, ids=[c[0] for c in JOB_CASES])
def test_job_create(case: str, build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(("batch", "v1", "jobs"), build())) == expected


def test_the_job_restart_policy_message_lists_the_choices() -> None:
    errors = check(("batch", "v1", "jobs"), job(template=template()))
    assert messages(errors) == ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']


@pytest.mark.parametrize("case, change, expected", [
    ("parallelism may change", lambda j: j["spec"].update(parallelism=2), []),
    ("the template is immutable", lambda j: j["spec"]["template"]["spec"]["containers"][0].update(image="x"),
     ["spec.template"]),
    ("completions are immutable", lambda j: j["spec"].update(completions=5), ["spec.completions"]),
    ("the selector is immutable", lambda j: j["spec"]["selector"]["matchLabels"].update(extra="1"),
     ["spec.selector", "spec.template.metadata.labels"]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_job_update(case: str, change: Callable[[Obj], Any], expected: list[str]) -> None:
    old = job()
    assert sorted(fields(validate_update(res("batch", "v1", "jobs"), changed(old, change), old))) == sorted(expected)


def cron_job(schedule: str = "*/5 * * * *", name: str = "backup", **spec: Any) -> Obj:
    return ready(("batch", "v1", "cronjobs"), {"metadata": meta(name), "spec": {
        "schedule": schedule, "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}}, **spec}})


@pytest.mark.parametrize("schedule, expected", [
    ("*/5 * * * *", []),
    ("@hourly", []),
    ("@every 1h30m", []),
    ("0 9 * * mon-fri", []),
    ("", ["empty spec string"]),
    ("* * *", ["expected exactly 5 fields, found 3: [* * *]"]),
    ("60 * * * *", ["end of range (60) above maximum (59): 60"]),
    ("x * * * *", ['failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax']),
    ("5-1 * * * *", ["beginning of range (5) beyond end of range (1): 5-1"]),
    ("*/0 * * * *", ["step of range should be a positive number: */0"]),
    ("0 0 0 * *", ["beginning of range (0) below minimum (1): 0"]),
    ("@sometimes", ["unrecognized descriptor: @sometimes"]),
], ids=["every five minutes", "hourly", "every ninety minutes", "weekdays by name", "nothing", "three fields",
        "minute sixty", "not a number", "a backwards range", "a zero step", "day of month zero", "a made-up descriptor"])
def test_cron_schedules(schedule: str, expected: list[str]) -> None:
    assert schedule_errors(schedule) == expected


CRON_JOB_CASES = [
    ("a valid cron job passes", lambda: cron_job(), []),
    ("the schedule is required", lambda: cron_job(""), ["spec.schedule"]),
    ("a bad schedule is reported with the parser's message", lambda: cron_job("* *"), ["spec.schedule"]),
    ("time zones belong in the timeZone field", lambda: cron_job("TZ=UTC 0 * * * *"), ["spec.schedule"]),
    ("unknown time zones are rejected", lambda: cron_job(timeZone="Mars/Olympus"), ["spec.timeZone"]),
    ("cron job names leave room for a suffix", lambda: cron_job(name="a" * 53), ["metadata.name"]),
    ("concurrency policies are Allow, Forbid or Replace", lambda: cron_job(concurrencyPolicy="Sometimes"),
     ["spec.concurrencyPolicy"]),
]


@pytest.mark.parametrize("case, build, expected", CRON_JOB_CASES, ids=[c[0] for c in CRON_JOB_CASES])
def test_cron_job_create(case: str, build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(("batch", "v1", "cronjobs"), build())) == expected


SERVICE_CASES = [
    ("a service needs ports", lambda: service(ports=[]), ["spec.ports"]),
    ("a headless service needs no ports", lambda: service(ports=[], clusterIP="None"), []),
    ("service ports are 1 to 65535", lambda: service(ports=[{"port": 0}]),
     ["spec.ports[0].port", "spec.ports[0].targetPort"]),
    ("several ports need names", lambda: service(ports=[{"port": 80}, {"port": 443, "name": "https"}]),
     ["spec.ports[0].name"]),
    ("port names are unique", lambda: service(ports=[{"port": 80, "name": "web"}, {"port": 81, "name": "web"}]),
     ["spec.ports[1].name"]),
    ("ports are unique per protocol", lambda: service(ports=[{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]),
     ["spec.ports[1]"]),
    ("service types are kube's four", lambda: service(type="Internal"), ["spec.type"]),
    ("cluster IP services have no node ports", lambda: service(ports=[{"port": 80, "nodePort": 30001}]),
     ["spec.ports[0].nodePort"]),
    ("an external name must be a DNS name", lambda: service(type="ExternalName", externalName="not a name"),
     ["spec.externalName"]),
    ("an external name is required", lambda: service(type="ExternalName"), ["spec.externalName"]),
    ("a load balancer may not be headless", lambda: service(type="LoadBalancer", clusterIP="None"),
     ["spec.clusterIPs[0]"]),
    ("cluster IPs must be addresses", lambda: service(clusterIP="10.0.0.300"), ["spec.clusterIPs[0]"]),
    ("the selector is made of labels", lambda: service(selector={"app": "a b"}), ["spec.selector"]),
    ("a named target port is an IANA name", lambda: service(ports=[{"port": 80, "targetPort": "HTTP"}]),
     ["spec.ports[0].targetPort"] * 2),
]


@pytest.mark.parametrize("case, build, expected", SERVICE_CASES, ids=[c[0] for c in SERVICE_CASES])
def test_service_create(case: str, build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(("", "v1", "services"), build())) == expected


def test_client_ip_affinity_times_out_within_a_day() -> None:
    obj = service(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 90000}})
    assert messages(check(("", "v1", "services"), obj)) == [
        "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 90000: must be greater than 0 and less "
        "than 86400"]


@pytest.mark.parametrize("case, old_spec, new_spec, expected", [
    ("the cluster IP may not change", {"clusterIP": "10.96.0.10"}, {"clusterIP": "10.96.0.11"},
     ['spec.clusterIPs[0]: Invalid value: []string{"10.96.0.11"}: may not change once set']),
    ("an omitted cluster IP is kept", {"clusterIP": "10.96.0.10"}, {"clusterIP": "", "clusterIPs": []}, []),
    ("the cluster IPs may not be unset", {"clusterIP": "10.96.0.10"}, {"clusterIPs": ["None"]},
     ['spec.clusterIPs[0]: Invalid value: []string{"None"}: may not change once set',
      'spec.clusterIPs: Invalid value: []string{"None"}: first value must match `clusterIP`']),
    ("omitted node ports are kept", {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]},
     {"ports": [{"port": 80}]}, []),
    ("moving to ExternalName releases the cluster IP", {"clusterIP": "10.96.0.10"},
     {"type": "ExternalName", "externalName": "db.example.com", "clusterIP": "", "clusterIPs": [],
      "ipFamilies": [], "ipFamilyPolicy": None, "internalTrafficPolicy": None}, []),
    ("ports may change", {"clusterIP": "10.96.0.10"}, {"clusterIP": "10.96.0.10", "ports": [{
        "port": 8080, "protocol": "TCP", "targetPort": 8080}]}, []),
], ids=lambda v: v if isinstance(v, str) else "")
def test_service_update(case: str, old_spec: Obj, new_spec: Obj, expected: list[str]) -> None:
    old = service(**old_spec)
    new = updated(("", "v1", "services"), old, lambda s: s["spec"].update(new_spec))
    assert messages(validate_update(res("", "v1", "services"), new, old)) == expected


def secret(kind: str = "Opaque", **data: str) -> Obj:
    return ready(("", "v1", "secrets"), {"metadata": meta("s"), "type": kind, "data": data})


CORE_CASES = [
    ("secret keys look like file names", ("", "v1", "secrets"), lambda: secret(**{"a/b": "eA=="}), ["data[a/b]"]),
    ("TLS secrets carry a certificate and a key", ("", "v1", "secrets"), lambda: secret("kubernetes.io/tls"),
     ["data[tls.crt]", "data[tls.key]"]),
    ("docker config secrets carry a docker config", ("", "v1", "secrets"),
     lambda: secret("kubernetes.io/dockerconfigjson"), ["data[.dockerconfigjson]"]),
    ("basic auth needs a username or password", ("", "v1", "secrets"), lambda: secret("kubernetes.io/basic-auth"),
     ["data[username]", "data[password]"]),
    ("service account tokens name their account", ("", "v1", "secrets"),
     lambda: secret("kubernetes.io/service-account-token"),
     ["metadata.annotations[kubernetes.io/service-account.name]"]),
    ("secrets hold at most 1 MiB", ("", "v1", "secrets"), lambda: secret(big="A" * (1398104 + 4)), ["data"]),
    ("config map keys look like file names", ("", "v1", "configmaps"),
     lambda: {"metadata": meta("c"), "data": {"..x": "1"}}, ["data[..x]"]),
    ("config maps hold at most 1 MiB", ("", "v1", "configmaps"),
     lambda: {"metadata": meta("c"), "data": {"k": "x" * (1024 * 1024 + 1)}}, [""]),
    ("namespace names are DNS labels", ("", "v1", "namespaces"),
     lambda: ready(("", "v1", "namespaces"), {"metadata": meta("a.b", None)}), ["metadata.name"]),
    ("node taints are unique per key and effect", ("", "v1", "nodes"),
     lambda: ready(("", "v1", "nodes"), {"metadata": meta("n", None), "spec": {"taints": [
         {"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"}]}}),
     ["metadata.taints[1]"]),
    ("a claim needs access modes and a size", ("", "v1", "persistentvolumeclaims"),
     lambda: ready(("", "v1", "persistentvolumeclaims"), {"metadata": meta("c"), "spec": {}}),
     ["spec.accessModes", "spec.resources[storage]"]),
    ("a volume needs a source", ("", "v1", "persistentvolumes"),
     lambda: ready(("", "v1", "persistentvolumes"), {"metadata": meta("pv", None), "spec": {
         "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}}), ["spec"]),
    ("a replication controller needs a selector", ("", "v1", "replicationcontrollers"),
     lambda: ready(("", "v1", "replicationcontrollers"), {"metadata": meta("rc"), "spec": {
         "template": template({})}}), ["spec.selector"]),
    ("endpoints need addresses", ("", "v1", "endpoints"),
     lambda: {"metadata": meta("e"), "subsets": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}, ["subsets[0]"]),
    ("endpoint addresses may not be loopback", ("", "v1", "endpoints"),
     lambda: {"metadata": meta("e"), "subsets": [{"addresses": [{"ip": "127.0.0.1"}]}]}, ["subsets[0].addresses[0].ip"]),
    ("limit range minimums stay below maximums", ("", "v1", "limitranges"),
     lambda: {"metadata": meta("l"), "spec": {"limits": [{"type": "Container", "min": {"cpu": "2"},
                                                          "max": {"cpu": "1"}}]}},
     ["spec.limits[0].min[cpu]"]),
    ("quota resources must be standard", ("", "v1", "resourcequotas"),
     lambda: {"metadata": meta("q"), "spec": {"hard": {"widgets": "1"}}}, ["spec.hard[widgets]"]),
    ("quota scopes may not conflict", ("", "v1", "resourcequotas"),
     lambda: {"metadata": meta("q"), "spec": {"scopes": ["BestEffort", "NotBestEffort"]}}, ["spec.scopes"]),
]


@pytest.mark.parametrize("case, gvr, build, expected", CORE_CASES, ids=[c[0] for c in CORE_CASES])
def test_core_kinds(case: str, gvr: tuple[str, str, str], build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(gvr, build())) == expected


@pytest.mark.parametrize("case, kind, change, expected", [
    ("immutable secret data may not change", ("", "v1", "secrets"), lambda s: s["data"].update(k="Yg=="),
     ["data"]),
    ("an immutable secret stays immutable", ("", "v1", "secrets"), lambda s: s.update(immutable=False),
     ["immutable"]),
    ("a secret's type may not change", ("", "v1", "secrets"), lambda s: s.update(type="kubernetes.io/tls",
                                                                                    data={"tls.crt": "", "tls.key": ""}),
     ["type", "data"]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_immutable_data(case: str, kind: tuple[str, str, str], change: Callable[[Obj], Any],
                        expected: list[str]) -> None:
    old = secret(k="YQ==")
    old["immutable"] = True
    assert fields(validate_update(res(*kind), changed(old, change), old)) == expected


def test_a_bound_claim_may_grow_but_not_change_otherwise() -> None:
    old = ready(("", "v1", "persistentvolumeclaims"), {"metadata": meta("c"), "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    old["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    grown = changed(old, lambda c: c["spec"]["resources"]["requests"].update(storage="2Gi"))
    moved = changed(old, lambda c: c["spec"].update(accessModes=["ReadWriteMany"]))
    resource = res("", "v1", "persistentvolumeclaims")
    assert validate_update(resource, grown, old) == []
    assert fields(validate_update(resource, moved, old)) == ["spec"]


def core_event(**fields_: Any) -> Obj:
    return ready(("", "v1", "events"), {"metadata": meta("web.123"), "involvedObject": {
        "kind": "Pod", "name": "web", "namespace": "default"}, "reason": "Started", **fields_})


def test_a_core_event_with_a_mismatched_namespace_is_rejected() -> None:
    obj = core_event()
    obj["involvedObject"]["namespace"] = "other"
    assert messages(check(("", "v1", "events"), obj)) == [
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace']


def new_event(**fields_: Any) -> Obj:
    return ready(("events.k8s.io", "v1", "events"), {
        "metadata": meta("web.123"), "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "kubelet",
        "reportingInstance": "node-1", "action": "Started", "reason": "Started", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}, **fields_})


@pytest.mark.parametrize("case, build, expected", [
    ("a complete event passes", lambda: new_event(), []),
    ("the event type is Normal or Warning", lambda: new_event(type="Info"), ["type"]),
    ("the reporting controller is reported under its internal name", lambda: new_event(reportingController=""),
     ["reportingController"] * 3),
    ("deprecated fields must stay unset", lambda: new_event(deprecatedCount=3), ["count"]),
    ("a series counts at least two", lambda: new_event(series={"count": 1, "lastObservedTime": "x"}),
     ["series.count"]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_events_api_events(case: str, build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(("events.k8s.io", "v1", "events"), build())) == expected


def hpa(version: str = "v2", **spec: Any) -> Obj:
    return ready(("autoscaling", version, "horizontalpodautoscalers"), {"metadata": meta("web"), "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5, **spec}})


GROUP_CASES = [
    ("max replicas must cover min replicas", ("autoscaling", "v2", "horizontalpodautoscalers"),
     lambda: hpa(minReplicas=6), ["spec.maxReplicas"]),
    ("a scale target needs a kind", ("autoscaling", "v2", "horizontalpodautoscalers"),
     lambda: hpa(scaleTargetRef={"name": "web"}), ["spec.scaleTargetRef.kind"]),
    ("a v1 CPU target is checked where it is stored", ("autoscaling", "v1", "horizontalpodautoscalers"),
     lambda: hpa("v1", targetCPUUtilizationPercentage=0), ["spec.metrics[0].resource.target.averageUtilization"]),
    ("a metric needs its source", ("autoscaling", "v2", "horizontalpodautoscalers"),
     lambda: hpa(metrics=[{"type": "Pods"}]), ["spec.metrics[0].pods"]),
    ("priority values above a billion are reserved", ("scheduling.k8s.io", "v1", "priorityclasses"),
     lambda: ready(("scheduling.k8s.io", "v1", "priorityclasses"), {"metadata": meta("high", None),
                                                                    "value": 2000000000}), ["value"]),
    ("system priority class names are reserved", ("scheduling.k8s.io", "v1", "priorityclasses"),
     lambda: {"metadata": meta("system-mine", None), "value": 10}, ["metadata.name"]),
    ("leases last a positive time", ("coordination.k8s.io", "v1", "leases"),
     lambda: {"metadata": meta("l"), "spec": {"leaseDurationSeconds": 0}}, ["spec.leaseDurationSeconds"]),
    ("a budget sets min available or max unavailable", ("policy", "v1", "poddisruptionbudgets"),
     lambda: {"metadata": meta("b"), "spec": {"minAvailable": 1, "maxUnavailable": 1}}, ["spec"]),
    ("an ingress routes somewhere", ("networking.k8s.io", "v1", "ingresses"),
     lambda: {"metadata": meta("i"), "spec": {}}, ["spec"]),
    ("ingress paths need a path type", ("networking.k8s.io", "v1", "ingresses"),
     lambda: {"metadata": meta("i"), "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [
         {"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}},
     ["spec.rules[0].http.paths[0].pathType"]),
    ("ingress backends need a port", ("networking.k8s.io", "v1", "ingresses"),
     lambda: {"metadata": meta("i"), "spec": {"defaultBackend": {"service": {"name": "web"}}}},
     ["spec.defaultBackend"]),
    ("network policy peers name something", ("networking.k8s.io", "v1", "networkpolicies"),
     lambda: ready(("networking.k8s.io", "v1", "networkpolicies"), {"metadata": meta("n"), "spec": {
         "podSelector": {}, "ingress": [{"from": [{}]}]}}), ["spec.ingress[0].from[0]"]),
    ("ip block exceptions lie inside the block", ("networking.k8s.io", "v1", "networkpolicies"),
     lambda: ready(("networking.k8s.io", "v1", "networkpolicies"), {"metadata": meta("n"), "spec": {
         "podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]}}),
     ["spec.ingress[0].from[0].ipBlock.except[0]"]),
    ("endpoint slices carry an address type", ("discovery.k8s.io", "v1", "endpointslices"),
     lambda: ready(("discovery.k8s.io", "v1", "endpointslices"), {"metadata": meta("e"), "endpoints": [
         {"addresses": []}]}), ["addressType", "endpoints[0].addresses"]),
    ("role rules need verbs", ("rbac.authorization.k8s.io", "v1", "roles"),
     lambda: {"metadata": meta("r"), "rules": [{"apiGroups": [""], "resources": ["pods"]}]}, ["rules[0].verbs"]),
    ("namespaced rules cannot grant URLs", ("rbac.authorization.k8s.io", "v1", "roles"),
     lambda: {"metadata": meta("r"), "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]},
     ["rules[0].nonResourceURLs"]),
    ("RBAC names may contain colons", ("rbac.authorization.k8s.io", "v1", "clusterroles"),
     lambda: {"metadata": meta("system:controller:x", None), "rules": []}, []),
    ("a cluster binding refers to a cluster role", ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
     lambda: ready(("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), {
         "metadata": meta("b", None), "roleRef": {"kind": "Role", "name": "r"},
         "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}), ["roleRef.kind", "subjects[0].namespace"]),
]


@pytest.mark.parametrize("case, gvr, build, expected", GROUP_CASES, ids=[c[0] for c in GROUP_CASES])
def test_other_groups(case: str, gvr: tuple[str, str, str], build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(gvr, build())) == expected


def test_a_role_ref_cannot_change() -> None:
    old = ready(("rbac.authorization.k8s.io", "v1", "rolebindings"), {
        "metadata": meta("b"), "roleRef": {"kind": "Role", "name": "a"}, "subjects": []})
    new = changed(old, lambda b: b["roleRef"].update(name="b"))
    assert messages(validate_update(res("rbac.authorization.k8s.io", "v1", "rolebindings"), new, old)) == [
        'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"b"}: '
        "cannot change roleRef"]


def crd(name: str = "widgets.example.com", **spec: Any) -> Obj:
    schema = {"openAPIV3Schema": {"type": "object"}}
    body = {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}], **spec}
    return ready(("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                 {"metadata": meta(name, None), "spec": body})


@pytest.mark.parametrize("case, build, expected", [
    ("a complete CRD passes", lambda: crd(), []),
    ("the name is plural.group", lambda: crd("widget.example.com"), ["metadata.name"]),
    ("the group needs a dot", lambda: crd("widgets.example", group="example"), ["spec.group"]),
    ("one version is the storage version", lambda: crd(versions=[
        {"name": "v1", "served": True, "storage": False, "schema": {"openAPIV3Schema": {"type": "object"}}}]),
     ["spec.versions", "status.storedVersions"]),
    ("every version has a schema", lambda: crd(versions=[{"name": "v1", "served": True, "storage": True}]),
     ["spec.versions[0].schema.openAPIV3Schema"]),
    ("the scope is Cluster or Namespaced", lambda: crd(scope="Global"), ["spec.scope"]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_custom_resource_definitions(case: str, build: Callable[[], Obj], expected: list[str]) -> None:
    assert fields(check(("apiextensions.k8s.io", "v1", "customresourcedefinitions"), build())) == expected


def test_a_crd_group_is_immutable() -> None:
    old = crd()
    new = changed(old, lambda c: c["spec"].update(group="other.com"))
    errors = validate_update(res("apiextensions.k8s.io", "v1", "customresourcedefinitions"), new, old)
    assert "spec.group" in fields(errors)


def test_no_new_finalizers_while_deleting() -> None:
    old = {"metadata": meta("c", deletionTimestamp="2024-01-01T00:00:00Z", finalizers=["a.io/x"])}
    new = changed(old, lambda c: c["metadata"]["finalizers"].append("a.io/y"))
    assert messages(validate_update(res("", "v1", "configmaps"), new, old)) == [
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new '
        'finalizers []string{"a.io/y"}']


def test_a_stateful_set_template_may_mount_its_claim_templates_and_a_deployment_may_not() -> None:
    def mounting_claim(plural: str) -> Obj:
        obj = workload(plural, serviceName="web") if plural == "statefulsets" else workload(plural)
        obj["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        return obj
    assert check((*APPS, "statefulsets"), mounting_claim("statefulsets")) == []
    assert fields(check((*APPS, "deployments"), mounting_claim("deployments"))) == \
        ["spec.template.spec.containers[0].volumeMounts[0].name"]
    broken = mounting_claim("statefulsets")
    broken["spec"]["template"]["metadata"]["labels"]["bad key!"] = "x"
    assert "spec.template.labels" in fields(check((*APPS, "statefulsets"), broken))  # metadata still checked

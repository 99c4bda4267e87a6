"""Defaulting: the values kube fills in before validation, per kind, and the create-only preparations."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api.defaults import apply_defaults, prepare_for_create, prepare_for_update, qos_class
from minikube_py.api.defaults.workloads import job_selector
from minikube_py.api.kinds import Resource, default_registry

REGISTRY = default_registry()


def res(group: str, version: str, plural: str) -> Resource:
    resource = REGISTRY.lookup(group, version, plural)
    assert resource is not None
    return resource


PODS = res("", "v1", "pods")
SERVICES = res("", "v1", "services")
DEPLOYMENTS = res("apps", "v1", "deployments")
JOBS = res("batch", "v1", "jobs")


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "app", "image": "nginx:1.25", **fields}


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": list(containers) or [container()], **spec}}


def template(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container()], **spec}}


def defaulted(resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    apply_defaults(resource, obj)
    return obj


def get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


@pytest.mark.parametrize("image, policy", [
    ("nginx", "Always"),
    ("nginx:latest", "Always"),
    ("nginx:1.25", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ("localhost:5000/nginx", "Always"),
    ("localhost:5000/nginx:1", "IfNotPresent"),
], ids=["an untagged image is pulled always", "a latest tag is pulled always", "a versioned tag is pulled if absent",
        "a digest is pulled if absent", "latest with a digest is still pulled always",
        "a registry port is not mistaken for a tag", "a tag after a registry port counts"])
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    obj = defaulted(PODS, pod(container(image=image)))
    assert obj["spec"]["containers"][0]["imagePullPolicy"] == policy


@pytest.mark.parametrize("path, value", [
    ("spec.restartPolicy", "Always"),
    ("spec.dnsPolicy", "ClusterFirst"),
    ("spec.terminationGracePeriodSeconds", 30),
    ("spec.schedulerName", "default-scheduler"),
    ("spec.securityContext", {}),
    ("spec.enableServiceLinks", True),
    ("spec.containers.0.terminationMessagePath", "/dev/termination-log"),
    ("spec.containers.0.terminationMessagePolicy", "File"),
    ("spec.containers.0.resources", {}),
], ids=lambda v: str(v))
def test_a_bare_pod_gets_kubes_defaults(path: str, value: Any) -> None:
    assert get(defaulted(PODS, pod()), path) == value


@pytest.mark.parametrize("case, build, path, value", [
    ("container ports default to TCP", lambda: pod(container(ports=[{"containerPort": 80}])),
     "spec.containers.0.ports.0.protocol", "TCP"),
    ("init containers get container defaults", lambda: pod(initContainers=[container(name="init")]),
     "spec.initContainers.0.terminationMessagePolicy", "File"),
    ("requests are copied from limits", lambda: pod(container(resources={"limits": {"cpu": "1"}})),
     "spec.containers.0.resources.requests", {"cpu": "1"}),
    ("an explicit request is kept", lambda: pod(container(resources={"limits": {"cpu": "1"},
                                                                    "requests": {"cpu": "500m"}})),
     "spec.containers.0.resources.requests.cpu", "500m"),
    ("host network pods publish their container ports",
     lambda: pod(container(ports=[{"containerPort": 8080}]), hostNetwork=True),
     "spec.containers.0.ports.0.hostPort", 8080),
    ("probes get their timings", lambda: pod(container(livenessProbe={"httpGet": {"port": 80}})),
     "spec.containers.0.livenessProbe", {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                                          "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                          "failureThreshold": 3}),
    ("a volume without source is an emptyDir", lambda: pod(volumes=[{"name": "scratch"}]),
     "spec.volumes.0", {"name": "scratch", "emptyDir": {}}),
    ("secret volumes get mode 0644", lambda: pod(volumes=[{"name": "s", "secret": {"secretName": "x"}}]),
     "spec.volumes.0.secret.defaultMode", 420),
    ("projected tokens expire after an hour",
     lambda: pod(volumes=[{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]),
     "spec.volumes.0.projected.sources.0.serviceAccountToken.expirationSeconds", 3600),
    ("downward API field refs default to v1",
     lambda: pod(container(env=[{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])),
     "spec.containers.0.env.0.valueFrom.fieldRef.apiVersion", "v1"),
])
def test_pod_defaults(case: str, build: Any, path: str, value: Any) -> None:
    assert get(defaulted(PODS, build()), path) == value


def test_an_explicit_value_is_never_overwritten() -> None:
    obj = defaulted(PODS, pod(restartPolicy="Never", terminationGracePeriodSeconds=0, enableServiceLinks=False))
    assert (obj["spec"]["restartPolicy"], obj["spec"]["terminationGracePeriodSeconds"],
            obj["spec"]["enableServiceLinks"]) == ("Never", 0, False)


def test_defaulting_twice_changes_nothing() -> None:
    once = defaulted(PODS, pod(container(resources={"limits": {"cpu": "1"}})))
    assert defaulted(PODS, copy.deepcopy(once)) == once


def test_templates_do_not_get_pod_only_defaults() -> None:
    obj = defaulted(DEPLOYMENTS, {"spec": {"template": template()}})
    spec = obj["spec"]["template"]["spec"]
    assert "enableServiceLinks" not in spec and spec["restartPolicy"] == "Always"


WORKLOAD_CASES = [
    ("a deployment gets one replica and a 25% rolling update", ("apps", "v1", "deployments"), {},
     {"spec.replicas": 1, "spec.strategy": {"type": "RollingUpdate", "rollingUpdate": {
         "maxUnavailable": "25%", "maxSurge": "25%"}}, "spec.revisionHistoryLimit": 10,
      "spec.progressDeadlineSeconds": 600, "status": {}}),
    ("a recreate deployment gets no rolling update", ("apps", "v1", "deployments"), {"strategy": {"type": "Recreate"}},
     {"spec.strategy": {"type": "Recreate"}}),
    ("a replica set gets one replica", ("apps", "v1", "replicasets"), {}, {"spec.replicas": 1,
                                                                          "status": {"replicas": 0}}),
    ("a stateful set rolls one by one", ("apps", "v1", "statefulsets"), {},
     {"spec.podManagementPolicy": "OrderedReady", "spec.updateStrategy": {
         "type": "RollingUpdate", "rollingUpdate": {"partition": 0}}, "spec.replicas": 1,
      "spec.revisionHistoryLimit": 10, "spec.persistentVolumeClaimRetentionPolicy": {
          "whenDeleted": "Retain", "whenScaled": "Retain"}}),
    ("stateful set claim templates get claim defaults", ("apps", "v1", "statefulsets"),
     {"volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}]},
     {"spec.volumeClaimTemplates.0.spec.volumeMode": "Filesystem",
      "spec.volumeClaimTemplates.0.status": {"phase": "Pending"}}),
    ("a daemon set replaces one pod at a time", ("apps", "v1", "daemonsets"), {},
     {"spec.updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
      "spec.revisionHistoryLimit": 10}),
    ("a job runs once with six retries", ("batch", "v1", "jobs"), {},
     {"spec.completions": 1, "spec.parallelism": 1, "spec.backoffLimit": 6, "spec.completionMode": "NonIndexed",
      "spec.suspend": False, "spec.podReplacementPolicy": "TerminatingOrFailed"}),
    ("a parallel job keeps its completions unset", ("batch", "v1", "jobs"), {"parallelism": 3},
     {"spec.parallelism": 3}),
    ("a job with a pod failure policy replaces only failed pods", ("batch", "v1", "jobs"),
     {"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}},
     {"spec.podReplacementPolicy": "Failed",
      "spec.podFailurePolicy.rules.0.onPodConditions.0.status": "True"}),
    ("per-index backoff lifts the global limit", ("batch", "v1", "jobs"), {"backoffLimitPerIndex": 1},
     {"spec.backoffLimit": 2147483647}),
    ("a cron job allows overlap and keeps some history", ("batch", "v1", "cronjobs"), {},
     {"spec.concurrencyPolicy": "Allow", "spec.suspend": False, "spec.successfulJobsHistoryLimit": 3,
      "spec.failedJobsHistoryLimit": 1}),
]


@pytest.mark.parametrize("case, gvr, spec, expected", WORKLOAD_CASES, ids=[c[0] for c in WORKLOAD_CASES])
def test_workload_defaults(case: str, gvr: tuple[str, str, str], spec: dict[str, Any],
                           expected: dict[str, Any]) -> None:
    body = {"template": template()} if gvr[2] != "cronjobs" else {"jobTemplate": {"spec": {"template": template()}}}
    obj = defaulted(res(*gvr), {"metadata": {"name": "w"}, "spec": {**body, **spec}})
    for path, value in expected.items():
        assert get(obj, path) == value, path


def test_apps_selectors_are_never_defaulted() -> None:
    assert "selector" not in defaulted(DEPLOYMENTS, {"spec": {"template": template()}})["spec"]


def test_a_replication_controller_selects_its_template_labels() -> None:
    obj = defaulted(res("", "v1", "replicationcontrollers"), {"metadata": {}, "spec": {"template": template()}})
    assert (obj["spec"]["selector"], obj["metadata"]["labels"], obj["spec"]["replicas"]) == (
        {"app": "web"}, {"app": "web"}, 1)


def test_a_job_takes_its_template_labels_when_it_has_none() -> None:
    assert defaulted(JOBS, {"metadata": {}, "spec": {"template": template()}})["metadata"]["labels"] == {"app": "web"}


def test_the_job_selector_is_generated_from_the_uid() -> None:
    obj = {"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": template()}}
    job_selector(obj)
    assert obj["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert obj["spec"]["template"]["metadata"]["labels"] == {
        "app": "web", "job-name": "pi", "batch.kubernetes.io/job-name": "pi", "controller-uid": "u-1",
        "batch.kubernetes.io/controller-uid": "u-1"}


def test_preparing_a_job_for_create_generates_its_selector() -> None:
    obj = defaulted(JOBS, {"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": template()}})
    assert "selector" not in obj["spec"]  # defaulting alone leaves it: it runs before the uid is set
    prepare_for_create(JOBS, obj)
    assert obj["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}


def test_a_manual_job_selector_is_left_alone() -> None:
    obj = {"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"manualSelector": True, "template": template()}}
    job_selector(obj)
    assert "selector" not in obj["spec"]


def service(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "s"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


SERVICE_CASES = [
    ("a plain service is a single-stack cluster IP", {},
     {"spec.type": "ClusterIP", "spec.sessionAffinity": "None", "spec.ports.0.protocol": "TCP",
      "spec.ports.0.targetPort": 80, "spec.internalTrafficPolicy": "Cluster", "spec.ipFamilyPolicy": "SingleStack",
      "spec.ipFamilies": ["IPv4"], "status": {"loadBalancer": {}}}),
    ("a named target port is kept", {"ports": [{"port": 80, "targetPort": "http"}]},
     {"spec.ports.0.targetPort": "http"}),
    ("a node port service routes through the cluster", {"type": "NodePort"},
     {"spec.externalTrafficPolicy": "Cluster"}),
    ("a load balancer allocates node ports", {"type": "LoadBalancer"},
     {"spec.allocateLoadBalancerNodePorts": True, "spec.externalTrafficPolicy": "Cluster"}),
    ("client IP affinity lasts three hours", {"sessionAffinity": "ClientIP"},
     {"spec.sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}),
    ("a headless service without selector may use any family", {"clusterIP": "None", "selector": None},
     {"spec.clusterIPs": ["None"], "spec.ipFamilyPolicy": "RequireDualStack"}),
    ("an IPv6 cluster IP means the IPv6 family", {"clusterIP": "fd00::10"}, {"spec.ipFamilies": ["IPv6"]}),
]


@pytest.mark.parametrize("case, spec, expected", SERVICE_CASES, ids=[c[0] for c in SERVICE_CASES])
def test_service_defaults(case: str, spec: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = defaulted(SERVICES, service(**spec))
    for path, value in expected.items():
        assert get(obj, path) == value, path


def test_external_name_services_get_no_ip_families() -> None:
    spec = defaulted(SERVICES, service(type="ExternalName", externalName="example.com"))["spec"]
    assert not {"ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy", "clusterIPs"} & set(spec)


CORE_CASES = [
    ("a namespace is labelled with its name and active", ("", "v1", "namespaces"), {"metadata": {"name": "dev"}},
     {"metadata.labels": {"kubernetes.io/metadata.name": "dev"}, "status.phase": "Active"}),
    ("a node can allocate its whole capacity", ("", "v1", "nodes"), {"status": {"capacity": {"cpu": "4"}}},
     {"status.allocatable": {"cpu": "4"}}),
    ("a secret is opaque and its string data is encoded", ("", "v1", "secrets"), {"stringData": {"k": "v"}},
     {"type": "Opaque", "data": {"k": "dg=="}}),
    ("a volume is retained and pending", ("", "v1", "persistentvolumes"), {"spec": {}},
     {"spec.persistentVolumeReclaimPolicy": "Retain", "spec.volumeMode": "Filesystem", "status.phase": "Pending"}),
    ("a claim is a pending filesystem", ("", "v1", "persistentvolumeclaims"), {"spec": {}},
     {"spec.volumeMode": "Filesystem", "status.phase": "Pending"}),
    ("endpoint ports default to TCP", ("", "v1", "endpoints"), {"subsets": [{"ports": [{"port": 80}]}]},
     {"subsets.0.ports.0.protocol": "TCP"}),
    ("container limits fill from max and requests from limits", ("", "v1", "limitranges"),
     {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}}]}},
     {"spec.limits.0.default": {"cpu": "2"}, "spec.limits.0.defaultRequest": {"cpu": "2", "memory": "1Mi"}}),
    ("a core event shows the fields Go always writes", ("", "v1", "events"), {},
     {"eventTime": None, "reportingComponent": "", "reportingInstance": "", "source": {}, "involvedObject": {}}),
    ("a priority class preempts lower priorities", ("scheduling.k8s.io", "v1", "priorityclasses"), {},
     {"preemptionPolicy": "PreemptLowerPriority"}),
    ("a budget starts with zero counters", ("policy", "v1", "poddisruptionbudgets"), {},
     {"status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}),
    ("a policy without types restricts ingress", ("networking.k8s.io", "v1", "networkpolicies"), {"spec": {}},
     {"spec.policyTypes": ["Ingress"]}),
    ("a policy with egress rules restricts egress too", ("networking.k8s.io", "v1", "networkpolicies"),
     {"spec": {"egress": [{"ports": [{"port": 53}]}]}},
     {"spec.policyTypes": ["Ingress", "Egress"], "spec.egress.0.ports.0.protocol": "TCP"}),
    ("endpoint slice ports are unnamed TCP", ("discovery.k8s.io", "v1", "endpointslices"), {"ports": [{"port": 80}]},
     {"ports.0": {"port": 80, "name": "", "protocol": "TCP"}, "endpoints": None}),
    ("binding subjects get their API group", ("rbac.authorization.k8s.io", "v1", "rolebindings"),
     {"roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "u"},
                                                             {"kind": "ServiceAccount", "name": "sa"}]},
     {"roleRef.apiGroup": "rbac.authorization.k8s.io", "subjects.0.apiGroup": "rbac.authorization.k8s.io",
      "subjects.1": {"kind": "ServiceAccount", "name": "sa"}}),
    ("a CRD derives its singular and list kind", ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
     {"spec": {"names": {"kind": "Widget", "plural": "widgets"}}},
     {"spec.names.singular": "widget", "spec.names.listKind": "WidgetList", "spec.conversion": {"strategy": "None"}}),
    ("a new CRD records its storage version", ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
     {"spec": {"versions": [{"name": "v1alpha1", "storage": False}, {"name": "v1", "storage": True}]}},
     {"status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}}),
    ("stored versions already recorded are kept", ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
     {"spec": {"versions": [{"name": "v2", "storage": True}]}, "status": {"storedVersions": ["v1", "v2"]}},
     {"status.storedVersions": ["v1", "v2"]}),
]


@pytest.mark.parametrize("case, gvr, obj, expected", CORE_CASES, ids=[c[0] for c in CORE_CASES])
def test_other_kinds_defaults(case: str, gvr: tuple[str, str, str], obj: dict[str, Any],
                              expected: dict[str, Any]) -> None:
    obj = defaulted(res(*gvr), obj)
    for path, value in expected.items():
        assert get(obj, path) == value, path


HPA_V2 = res("autoscaling", "v2", "horizontalpodautoscalers")
HPA_V1 = res("autoscaling", "v1", "horizontalpodautoscalers")


def test_a_v2_autoscaler_targets_80_percent_cpu() -> None:
    spec = defaulted(HPA_V2, {"spec": {"maxReplicas": 3}})["spec"]
    assert spec["minReplicas"] == 1 and "behavior" not in spec
    assert spec["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]


def test_a_given_behavior_is_completed_with_kubes_rules() -> None:
    spec = defaulted(HPA_V2, {"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}})["spec"]
    assert spec["behavior"]["scaleUp"]["policies"] == [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                                       {"type": "Percent", "value": 100, "periodSeconds": 15}]
    assert spec["behavior"]["scaleDown"] == {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def test_a_v1_autoscaler_only_gets_min_replicas() -> None:
    obj = defaulted(HPA_V1, {"spec": {"maxReplicas": 3}})
    assert obj["spec"] == {"maxReplicas": 3, "minReplicas": 1}
    assert obj["status"] == {"currentReplicas": 0, "desiredReplicas": 0}


CREATE_CASES = [
    ("a new namespace gets the kubernetes finalizer", ("", "v1", "namespaces"), {"spec": {}},
     {"spec.finalizers": ["kubernetes"], "status": {"phase": "Active"}}),
    ("a new pod is pending", ("", "v1", "pods"), pod(), {"status": {"phase": "Pending", "qosClass": "BestEffort"}}),
]


@pytest.mark.parametrize("case, gvr, obj, expected", CREATE_CASES, ids=[c[0] for c in CREATE_CASES])
def test_prepare_for_create(case: str, gvr: tuple[str, str, str], obj: dict[str, Any],
                            expected: dict[str, Any]) -> None:
    prepare_for_create(res(*gvr), obj)
    for path, value in expected.items():
        assert get(obj, path) == value, path


def test_a_gated_pod_says_why_it_is_not_scheduled() -> None:
    obj = pod(schedulingGates=[{"name": "example.com/quota"}])
    prepare_for_create(PODS, obj)
    assert obj["status"]["conditions"][0]["reason"] == "SchedulingGated"


UPDATE_CASES = [
    ("an omitted cluster IP is carried over", {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]}, {},
     {"spec.clusterIP": "10.96.0.10", "spec.clusterIPs": ["10.96.0.10"]}),
    ("a changed cluster IP is mirrored into cluster IPs", {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]},
     {"clusterIP": "10.96.0.11", "clusterIPs": ["10.96.0.10"]}, {"spec.clusterIPs": ["10.96.0.11"]}),
    ("an omitted node port is carried over", {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]},
     {"type": "NodePort", "ports": [{"port": 80}]}, {"spec.ports.0.nodePort": 30080}),
    ("a health check port is carried over", {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                                             "healthCheckNodePort": 31000},
     {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}, {"spec.healthCheckNodePort": 31000}),
]


@pytest.mark.parametrize("case, old_spec, new_spec, expected", UPDATE_CASES, ids=[c[0] for c in UPDATE_CASES])
def test_service_updates_keep_allocations(case: str, old_spec: dict[str, Any], new_spec: dict[str, Any],
                                          expected: dict[str, Any]) -> None:
    old = defaulted(SERVICES, service(**old_spec))
    new = defaulted(SERVICES, service(**new_spec))
    prepare_for_update(SERVICES, new, old)
    for path, value in expected.items():
        assert get(new, path) == value, path


LB_SPEC = {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000,
           "allocateLoadBalancerNodePorts": True, "loadBalancerClass": "example.com/lb",
           "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}


def test_a_type_change_drops_the_fields_only_the_old_type_used() -> None:
    old = defaulted(SERVICES, service(**copy.deepcopy(LB_SPEC)))
    new = copy.deepcopy(old)
    new["spec"]["type"] = "ClusterIP"  # what `kubectl patch -p '{"spec":{"type":"ClusterIP"}}'` sends on
    prepare_for_update(SERVICES, new, old)
    spec = new["spec"]
    assert "nodePort" not in spec["ports"][0]
    for field in ("healthCheckNodePort", "externalTrafficPolicy", "allocateLoadBalancerNodePorts", "loadBalancerClass"):
        assert field not in spec, field


def test_a_type_change_keeps_what_the_client_changed_with_it() -> None:
    old = defaulted(SERVICES, service(**copy.deepcopy(LB_SPEC)))
    new = copy.deepcopy(old)
    new["spec"].update(type="NodePort", externalTrafficPolicy="Cluster")
    new["spec"]["ports"][0]["nodePort"] = 30081
    prepare_for_update(SERVICES, new, old)
    assert new["spec"]["ports"][0]["nodePort"] == 30081  # NodePort still needs it: never dropped
    assert new["spec"]["externalTrafficPolicy"] == "Cluster"
    assert "healthCheckNodePort" not in new["spec"] and "loadBalancerClass" not in new["spec"]


def test_namespace_finalizers_only_change_through_finalize() -> None:
    namespaces = res("", "v1", "namespaces")
    new = {"metadata": {"name": "dev"}, "spec": {"finalizers": []}}
    prepare_for_update(namespaces, new, {"metadata": {"name": "dev"}, "spec": {"finalizers": ["kubernetes"]}})
    assert new["spec"]["finalizers"] == ["kubernetes"]


def test_the_kubernetes_finalizer_is_added_once() -> None:
    obj = {"spec": {"finalizers": ["kubernetes"]}}
    prepare_for_create(res("", "v1", "namespaces"), obj)
    assert obj["spec"]["finalizers"] == ["kubernetes"]


@pytest.mark.parametrize("resources, expected", [
    ([{}], "BestEffort"),
    ([{"requests": {"cpu": "100m"}}], "Burstable"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}], "Guaranteed"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}], "Burstable"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}, {}], "Burstable"),
], ids=["no resources is best effort", "a request is burstable", "equal limits and requests are guaranteed",
        "a smaller request is burstable", "one container without limits makes the pod burstable"])
def test_qos_class(resources: list[dict[str, Any]], expected: str) -> None:
    containers = [container(name=f"c{i}", resources=r) for i, r in enumerate(resources)]
    assert qos_class(pod(*containers)) == expected

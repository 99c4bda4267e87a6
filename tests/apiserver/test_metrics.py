"""metrics.k8s.io served by the apiserver (apiserver/metrics.py), and the discovery of the subresources kubelets
serve.

A control plane of its own (the apiserver has a kubelet client certificate, as under `mkpy up`), one simulated
node whose kubelet serves its API over TLS (`mkpy fake-cri` reports steady container stats: 1-5 millicores and
1-4 MiB per container), and Nodes that look Ready but whose kubelets do not answer: one refuses connections,
another (made by one test) accepts them and never replies.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from minikube_py.apiserver.metrics import SCRAPE_TIMEOUT, Sample, Window
from minikube_py.auth import pki
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.store.etcd_server import free_port
from tests.harness import ControlPlane
from tests.kubelet.nodes import FakeNode, eventually

NODE = "metrics-1"
DOWN = "metrics-down"  # Ready, but nothing listens at its kubelet's port
NOT_READY = "metrics-not-ready"  # points at NODE's kubelet, but is not Ready: never scraped
METRICS = "/apis/metrics.k8s.io/v1beta1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
CPU = re.compile(r"^\d+n$")
MEMORY = re.compile(r"^\d+Ki$")
MIB = 1024 * 1024


@dataclass
class World:
    cp: ControlPlane
    api: httpx.Client
    namespace: str


def node_object(name: str, port: int, ready: bool = True) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"tier": "fake"}},
            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def add_node(api: httpx.Client, name: str, port: int, ready: bool = True) -> None:
    node = node_object(name, port, ready)
    created = api.post("/api/v1/nodes", json=node)
    assert created.status_code == 201, created.text
    updated = api.put(f"/api/v1/nodes/{name}/status", json=created.json() | {"status": node["status"]})
    assert updated.status_code == 200, updated.text


def pod(name: str, node: str, *containers: str, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    spec |= {"containers": [{"name": c, "image": "busybox"} for c in containers], "terminationGracePeriodSeconds": 1}
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def wait_phase(api: httpx.Client, namespace: str, name: str, phase: str) -> None:
    eventually(lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()["status"].get("phase") == phase,
               30, message=f"pod {name} {phase}")


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    cp = ControlPlane()
    pki_dir = cp.workdir / "pki"
    ca = pki.ensure_ca(pki_dir)
    client = pki.ensure_client_cert(pki_dir, ca, "apiserver-kubelet-client", user="kube-apiserver-kubelet-client")
    cp.extra_args = (f"--kubelet-client-certificate={client.cert_path}", f"--kubelet-client-key={client.key_path}",
                     f"--kubelet-certificate-authority={ca.cert_path}")
    serving = pki.ensure_serving_cert(pki_dir, ca, f"kubelet-{NODE}-serving", common_name=NODE,
                                      ip_addresses=[ipaddress.ip_address("127.0.0.1")], dns_names=[NODE])
    port = free_port()
    cp.start()
    node: FakeNode | None = None
    try:
        node = FakeNode(cp, NODE, "10.244.1.0/24", f"--port={port}", f"--tls-cert-file={serving.cert_path}",
                        f"--tls-private-key-file={serving.key_path}", f"--client-ca-file={ca.cert_path}")
        with cp.client() as api:
            node.wait_ready(api)
            add_node(api, DOWN, free_port())
            add_node(api, NOT_READY, port, ready=False)
            namespace = f"metrics-{uuid.uuid4().hex[:6]}"
            assert api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).status_code == 201
            for each in (pod("web", NODE, "app", "sidecar", labels={"app": "web"}),
                         pod("db", NODE, "main", labels={"app": "db"}),
                         pod("stranded", DOWN, "main"), pod("unscheduled", "", "main"),
                         pod("finished", NODE, "main", restartPolicy="Never",
                             annotations={"fake.cri.mkpy.dev/exit-code.main": "0"})):
                created = api.post(f"/api/v1/namespaces/{namespace}/pods", json=each)
                assert created.status_code == 201, created.text
            for name, phase in (("web", "Running"), ("db", "Running"), ("finished", "Succeeded")):
                wait_phase(api, namespace, name, phase)
            yield World(cp, api, namespace)
    finally:
        if node is not None:
            node.stop()
        cp.stop()


def items(response: httpx.Response, kind: str) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["kind"], body["apiVersion"]) == (kind, "metrics.k8s.io/v1beta1")
    return list(body["items"])


def names(found: list[dict[str, Any]]) -> list[str]:
    return [item["metadata"]["name"] for item in found]


def cores(quantity: str) -> float:
    assert CPU.match(quantity), quantity
    return int(quantity[:-1]) / 1e9


def mebibytes(quantity: str) -> float:
    assert MEMORY.match(quantity), quantity
    return int(quantity[:-2]) / 1024


def window_seconds(window: str) -> float:
    assert re.fullmatch(r"\d+(\.\d+)?s", window), window
    return float(window[:-1])


def status_of(response: httpx.Response, code: int) -> dict[str, Any]:
    assert response.status_code == code, response.text
    status = response.json()
    assert status["kind"] == "Status" and status["code"] == code
    return dict(status)


# NodeMetrics -------------------------------------------------------------------------------------------


def test_node_metrics_of_the_ready_nodes_whose_kubelets_answer(world: World) -> None:
    found = items(world.api.get(f"{METRICS}/nodes"), "NodeMetricsList")
    assert names(found) == [NODE]  # DOWN refuses connections, NOT_READY is not asked
    metrics = found[0]
    node = world.api.get(f"/api/v1/nodes/{NODE}").json()
    assert metrics["metadata"]["labels"] == node["metadata"]["labels"]
    assert metrics["metadata"]["creationTimestamp"].endswith("Z")
    assert metrics["timestamp"].endswith("Z")
    assert 1.0 <= window_seconds(metrics["window"]) <= 31
    # three containers of 1-5 millicores and 1-4 MiB, plus each pod's sandbox in the memory
    assert 0.002 <= cores(metrics["usage"]["cpu"]) <= 0.02
    assert 3 <= mebibytes(metrics["usage"]["memory"]) <= 14


def test_one_node(world: World) -> None:
    metrics = world.api.get(f"{METRICS}/nodes/{NODE}").json()
    assert (metrics["kind"], metrics["metadata"]["name"]) == ("NodeMetrics", NODE)
    assert set(metrics["usage"]) == {"cpu", "memory"}


@pytest.mark.parametrize("name, message", [
    ("nowhere", 'node "nowhere" not found'),
    (DOWN, f'nodemetrics.metrics.k8s.io "{DOWN}" not found'),
    (NOT_READY, f'nodemetrics.metrics.k8s.io "{NOT_READY}" not found'),
], ids=["a node that does not exist", "a node whose kubelet is down", "a node that is not ready"])
def test_a_node_without_metrics_is_not_found(world: World, name: str, message: str) -> None:
    status = status_of(world.api.get(f"{METRICS}/nodes/{name}"), 404)
    assert (status["reason"], status["message"]) == ("NotFound", message)


def test_a_kubelet_that_never_answers_costs_at_most_the_scrape_timeout(world: World) -> None:
    silent = "metrics-silent"
    with socket.socket() as listener:  # connections queue up in the backlog and no TLS handshake ever comes
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        add_node(world.api, silent, listener.getsockname()[1])
        try:
            started = time.monotonic()
            listed = items(world.api.get(f"{METRICS}/nodes"), "NodeMetricsList")
            got = world.api.get(f"{METRICS}/nodes/{silent}")
            elapsed = time.monotonic() - started
        finally:
            world.api.delete(f"/api/v1/nodes/{silent}")
    assert names(listed) == [NODE]
    assert status_of(got, 404)["message"] == f'nodemetrics.metrics.k8s.io "{silent}" not found'
    assert elapsed < 2 * SCRAPE_TIMEOUT + 10, f"two requests took {elapsed:.1f}s"


# PodMetrics --------------------------------------------------------------------------------------------


def test_pod_metrics_of_a_namespace(world: World) -> None:
    found = items(world.api.get(f"{METRICS}/namespaces/{world.namespace}/pods"), "PodMetricsList")
    assert names(found) == ["db", "web"]  # `stranded` is on DOWN, `unscheduled` on no node, `finished` ended
    web = found[1]
    assert web["metadata"]["namespace"] == world.namespace and web["metadata"]["labels"] == {"app": "web"}
    assert [c["name"] for c in web["containers"]] == ["app", "sidecar"]
    for container in web["containers"]:
        assert 0.0005 <= cores(container["usage"]["cpu"]) <= 0.006
        assert 1 <= mebibytes(container["usage"]["memory"]) <= 4
    assert 1.0 <= window_seconds(web["window"]) <= 31


def test_pod_metrics_of_every_namespace(world: World) -> None:
    found = items(world.api.get(f"{METRICS}/pods"), "PodMetricsList")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in found] == [
        (world.namespace, "db"), (world.namespace, "web")]


def test_one_pod(world: World) -> None:
    metrics = world.api.get(f"{METRICS}/namespaces/{world.namespace}/pods/db").json()
    assert (metrics["kind"], metrics["metadata"]["name"]) == ("PodMetrics", "db")
    assert [c["name"] for c in metrics["containers"]] == ["main"]


@pytest.mark.parametrize("name, message", [
    ("nothing", 'pods "nothing" not found'),
    ("stranded", 'podmetrics.metrics.k8s.io "{ns}/stranded" not found'),
    ("unscheduled", 'podmetrics.metrics.k8s.io "{ns}/unscheduled" not found'),
    ("finished", 'podmetrics.metrics.k8s.io "{ns}/finished" not found'),
], ids=["a pod that does not exist", "a pod whose node's kubelet is down", "a pod on no node",
        "a pod whose containers have ended"])
def test_a_pod_without_metrics_is_not_found(world: World, name: str, message: str) -> None:
    status = status_of(world.api.get(f"{METRICS}/namespaces/{world.namespace}/pods/{name}"), 404)
    assert (status["reason"], status["message"]) == ("NotFound", message.format(ns=world.namespace))


# selectors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("resource, params, expected", [
    ("pods", {"labelSelector": "app=web"}, ["web"]),
    ("pods", {"labelSelector": "app in (db, other)"}, ["db"]),
    ("pods", {"fieldSelector": "metadata.name=db"}, ["db"]),
    ("pods", {"fieldSelector": "metadata.name!=db"}, ["web"]),
    ("pods", {"labelSelector": "app=none"}, []),
    ("nodes", {"labelSelector": f"kubernetes.io/hostname={NODE}"}, [NODE]),
    ("nodes", {"fieldSelector": f"metadata.name={NODE}"}, [NODE]),
    ("nodes", {"labelSelector": "tier=fake"}, []),  # DOWN and NOT_READY carry it, and have no metrics
], ids=lambda value: str(value))
def test_lists_take_label_and_field_selectors(world: World, resource: str, params: dict[str, str],
                                              expected: list[str]) -> None:
    path = f"{METRICS}/namespaces/{world.namespace}/pods" if resource == "pods" else f"{METRICS}/nodes"
    kind = "PodMetricsList" if resource == "pods" else "NodeMetricsList"
    assert names(items(world.api.get(path, params=params), kind)) == expected


@pytest.mark.parametrize("params, message", [
    ({"fieldSelector": "spec.nodeName=x"}, '"spec.nodeName" is not a known field selector'),
    ({"labelSelector": "app in (web"}, "unable to parse requirement"),
], ids=["a field metrics-server cannot select on", "a malformed label selector"])
def test_a_bad_selector_is_a_bad_request(world: World, params: dict[str, str], message: str) -> None:
    status = status_of(world.api.get(f"{METRICS}/pods", params=params), 400)
    assert status["reason"] == "BadRequest" and message in status["message"]


# what is not served ------------------------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [
    ("POST", "/nodes"), ("PUT", f"/nodes/{NODE}"), ("PATCH", f"/nodes/{NODE}"), ("DELETE", f"/nodes/{NODE}"),
    ("DELETE", "/nodes"), ("POST", "/namespaces/{ns}/pods"), ("DELETE", "/namespaces/{ns}/pods/web"),
    ("GET", "/nodes?watch=true"), ("GET", "/pods?watch=1"),
], ids=lambda value: str(value))
def test_writes_and_watches_are_not_allowed(world: World, method: str, path: str) -> None:
    body = {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics", "metadata": {"name": NODE}}
    response = world.api.request(method, METRICS + path.format(ns=world.namespace),
                                 json=body if method in ("POST", "PUT") else None)
    assert status_of(response, 405)["reason"] == "MethodNotAllowed"


@pytest.mark.parametrize("path", [
    "/namespaces/{ns}/nodes", "/pods/web", f"/nodes/{NODE}/status", "/namespaces/{ns}/pods/web/log", "/widgets",
], ids=lambda value: str(value))
def test_other_urls_in_the_group_are_not_found(world: World, path: str) -> None:
    response = world.api.get(METRICS + path.format(ns=world.namespace))
    assert status_of(response, 404)["message"] == "the server could not find the requested resource"


# authorization -----------------------------------------------------------------------------------------


def user_client(world: World, user: str) -> httpx.Client:
    config = load_kubeconfig(world.cp.component_kubeconfig(user, user))
    return httpx.Client(verify=config.ssl_context(), base_url=world.cp.url, timeout=30)


def test_a_user_without_rights_is_forbidden(world: World) -> None:
    with user_client(world, "mallory") as mallory:
        nodes = status_of(mallory.get(f"{METRICS}/nodes"), 403)
        pods = status_of(mallory.get(f"{METRICS}/namespaces/{world.namespace}/pods/web"), 403)
    assert 'User "mallory" cannot list resource "nodes" in API group "metrics.k8s.io"' in nodes["message"]
    assert 'cannot get resource "pods" in API group "metrics.k8s.io"' in pods["message"]


def test_view_grants_pod_metrics_in_its_namespace(world: World) -> None:
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "viewer"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "victor"}]}
    created = world.api.post(f"{RBAC}/namespaces/{world.namespace}/rolebindings", json=binding)
    assert created.status_code == 201, created.text
    view = world.api.get(f"{RBAC}/clusterroles/view").json()
    assert {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
            "verbs": ["get", "list", "watch"]} in view["rules"]
    with user_client(world, "victor") as victor:
        pods = eventually(lambda: (r := victor.get(f"{METRICS}/namespaces/{world.namespace}/pods")).status_code
                          == 200 and r, 10, message="victor's RoleBinding to take effect")
        nodes = victor.get(f"{METRICS}/nodes")  # cluster-scoped: a RoleBinding does not reach it
    assert names(items(pods, "PodMetricsList")) == ["db", "web"]
    assert nodes.status_code == 403


# Tables, discovery, OpenAPI ----------------------------------------------------------------------------


def test_kubectl_get_gets_metrics_server_columns(world: World) -> None:
    table = world.api.get(f"{METRICS}/namespaces/{world.namespace}/pods",
                          headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "cpu", "memory", "Window"]
    web = table["rows"][1]
    assert web["cells"][0] == "web" and CPU.match(web["cells"][1]) and MEMORY.match(web["cells"][2])
    assert web["object"]["metadata"]["name"] == "web"


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def test_aggregated_discovery_lists_the_metrics_group(world: World) -> None:
    response = world.api.get("/apis", headers={"Accept": AGGREGATED})
    group = next(g for g in response.json()["items"] if g["metadata"]["name"] == "metrics.k8s.io")
    [version] = group["versions"]
    resources = {r["resource"]: r for r in version["resources"]}
    assert version["version"] == "v1beta1"
    assert (resources["nodes"]["scope"], resources["nodes"]["responseKind"]["kind"],
            resources["nodes"]["verbs"]) == ("Cluster", "NodeMetrics", ["get", "list"])
    assert (resources["pods"]["scope"], resources["pods"]["responseKind"]["kind"],
            resources["pods"]["verbs"]) == ("Namespaced", "PodMetrics", ["get", "list"])


def test_legacy_discovery_of_the_metrics_group(world: World) -> None:
    group = world.api.get("/apis/metrics.k8s.io").json()
    assert group["preferredVersion"] == {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}
    resources = world.api.get(METRICS).json()["resources"]
    assert [(r["name"], r["kind"], r["namespaced"], r["verbs"]) for r in resources] == [
        ("nodes", "NodeMetrics", False, ["get", "list"]), ("pods", "PodMetrics", True, ["get", "list"])]
    assert "metrics.k8s.io" in [g["name"] for g in world.api.get("/apis").json()["groups"]]


# kube-apiserver 1.32's verbs for the subresources a kubelet serves (a connecter lists its HTTP methods)
STREAMS = {
    "nodes/proxy": ("NodeProxyOptions", ["create", "delete", "get", "patch", "update"]),
    "pods/attach": ("PodAttachOptions", ["create", "get"]),
    "pods/exec": ("PodExecOptions", ["create", "get"]),
    "pods/log": ("Pod", ["get"]),
    "pods/portforward": ("PodPortForwardOptions", ["create", "get"]),
}


def test_discovery_lists_the_subresources_kubelets_serve(world: World) -> None:
    legacy = {r["name"]: (r["kind"], r["verbs"]) for r in world.api.get("/api/v1").json()["resources"]}
    assert {name: legacy[name] for name in STREAMS} == STREAMS
    core = world.api.get("/api", headers={"Accept": AGGREGATED}).json()["items"][0]["versions"][0]["resources"]
    aggregated = {f"{r['resource']}/{s['subresource']}": (s["responseKind"]["kind"], s["verbs"])
                  for r in core for s in r.get("subresources", [])}
    assert {name: aggregated[name] for name in STREAMS} == STREAMS
    pods = next(r for r in core if r["resource"] == "pods")
    assert [s["subresource"] for s in pods["subresources"]] == [
        "attach", "binding", "eviction", "exec", "log", "portforward", "status"]


@pytest.mark.parametrize("method, path", [
    ("PUT", "/api/v1/namespaces/{ns}/pods/web/log"), ("DELETE", "/api/v1/namespaces/{ns}/pods/web/exec"),
    ("PATCH", "/api/v1/namespaces/{ns}/pods/web/portforward"), ("GET", "/api/v1/namespaces/{ns}/pods/web/binding"),
], ids=lambda value: str(value))
def test_a_subresource_refuses_the_verbs_it_does_not_list(world: World, method: str, path: str) -> None:
    response = world.api.request(method, path.format(ns=world.namespace),
                                 json={} if method in ("PUT", "PATCH") else None,
                                 headers={"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {})
    assert status_of(response, 405)["reason"] == "MethodNotAllowed"


def test_openapi_documents_the_metrics_kinds(world: World) -> None:
    index = world.api.get("/openapi/v3").json()["paths"]
    doc = world.api.get(index["apis/metrics.k8s.io/v1beta1"]["serverRelativeURL"]).json()
    schemas = doc["components"]["schemas"]
    node = schemas["io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics"]
    assert node["x-kubernetes-group-version-kind"] == [
        {"group": "metrics.k8s.io", "kind": "NodeMetrics", "version": "v1beta1"}]
    assert set(node["properties"]) == {"apiVersion", "kind", "metadata", "timestamp", "window", "usage"}
    assert doc["paths"]["/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"]["get"]["operationId"] == \
        "listMetricsV1beta1NamespacedPodMetrics"
    core = world.api.get(index["api/v1"]["serverRelativeURL"]).json()
    exec_get = core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/exec"]["get"]
    assert (exec_get["operationId"], exec_get["x-kubernetes-action"]) == ("connectCoreV1GetNamespacedPodExec",
                                                                          "connect")


# the arithmetic of a Window, without a server -----------------------------------------------------------


def sample(taken: float, pods: dict[str, dict[str, tuple[int, int]]], node_memory: int = 0) -> Sample:
    """A stats Summary at `taken`: {pod uid: {container: (CPU core-nanoseconds so far, working set bytes)}}."""
    return Sample(taken, "2026-11-21T22:50:33Z", {
        "node": {"memory": {"workingSetBytes": node_memory}},
        "pods": [{"podRef": {"uid": uid}, "containers": [
            {"name": name, "cpu": {"usageCoreNanoSeconds": cpu}, "memory": {"workingSetBytes": memory}}
            for name, (cpu, memory) in containers.items()]} for uid, containers in pods.items()]})


def test_usage_is_the_growth_of_cpu_time_over_the_window() -> None:
    window = Window(sample(10.0, {"u1": {"app": (1_000_000_000, 1)}}),
                    sample(12.0, {"u1": {"app": (1_500_000_000, 5 * MIB)}}, node_memory=7 * MIB))
    assert window.pod_usage("u1") == [("app", 250_000_000, 5 * MIB)]  # 0.5 s of CPU in 2 s: a quarter core
    assert window.node_usage() == (250_000_000, 7 * MIB)
    assert window.describe() == {"timestamp": "2026-11-21T22:50:33Z", "window": "2s"}


@pytest.mark.parametrize("earlier, later", [
    ({"u1": {"app": (5, 0)}}, {"u1": {"app": (5, 0), "sidecar": (9, 0)}}),
    ({"u1": {"app": (900, 0)}}, {"u1": {"app": (10, 0)}}),
    ({}, {"u1": {"app": (10, 0)}}),
], ids=["a container that started between the samples", "a container that restarted (its CPU time began again)",
        "a pod that started between the samples"])
def test_a_pod_has_no_usage_until_every_container_is_in_both_samples(
        earlier: dict[str, dict[str, tuple[int, int]]], later: dict[str, dict[str, tuple[int, int]]]) -> None:
    window = Window(sample(1.0, earlier), sample(2.0, later))
    assert window.pod_usage("u1") is None
    assert window.pod_usage("another") is None


def test_a_node_sums_the_containers_measured_in_both_samples() -> None:
    earlier = sample(0.0, {"u1": {"a": (0, 0)}, "u2": {"b": (0, 0)}, "gone": {"c": (0, 0)}})
    later = sample(1.5, {"u1": {"a": (300_000_000, 0)}, "u2": {"b": (150_000_000, 0)}, "new": {"d": (10**9, 0)}})
    assert Window(earlier, later).node_usage() == (300_000_000, 0)


@pytest.mark.parametrize("seconds, printed", [(1.0, "1s"), (1.0024, "1.002s"), (15.5, "15.5s"), (60.5, "1m0.5s"),
                                              (120, "2m0s")])
def test_the_window_is_printed_as_go_prints_a_duration(seconds: float, printed: str) -> None:
    assert Window(sample(100.0, {}), sample(100.0 + seconds, {})).describe()["window"] == printed

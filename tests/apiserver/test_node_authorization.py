"""A kubelet's identity against a real control plane: the Node authorizer and NodeRestriction together.

The apiserver runs with `--authorization-mode=Node` and NodeRestriction on, so only `system:masters` and
the Node authorizer grant anything. The admin creates pods bound to n1 and n2 that use secrets and
configmaps; n1, with its own client certificate, may read what its pods use and write its own Node and
Lease, and nothing of n2's.
"""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from minikube_py.auth import pki
from tests.harness import ControlPlane

WAIT = 10.0  # the graph follows the watch cache, which follows etcd within milliseconds
MERGE_PATCH = {"content-type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[ControlPlane]:
    # Without RBAC no controller may act, so no controller manager: the tests make what it would
    cp = ControlPlane(extra_args=("--authorization-mode=Node", "--enable-admission-plugins=NodeRestriction"),
                      controllers="")
    try:
        yield cp.start()
    finally:
        cp.stop()


def node_client(cp: ControlPlane, name: str) -> httpx.Client:
    pki_dir = cp.workdir / "pki"
    cert = pki.ensure_client_cert(pki_dir, pki.ensure_ca(pki_dir), f"node-{name}", user=f"system:node:{name}",
                                  groups=["system:nodes"])
    context = ssl.create_default_context(cafile=str(cp.ca_file))
    context.load_cert_chain(str(cert.cert_path), str(cert.key_path))
    return httpx.Client(base_url=cp.url, verify=context, timeout=30)


@pytest.fixture(scope="module")
def admin(cluster: ControlPlane) -> Iterator[httpx.Client]:
    with cluster.client() as client:
        yield client


@pytest.fixture(scope="module")
def n1(cluster: ControlPlane) -> Iterator[httpx.Client]:
    with node_client(cluster, "n1") as client:
        yield client


@pytest.fixture()
def ns(admin: httpx.Client) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = admin.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    # the ServiceAccount admission plugin refuses pods without the namespace's `default` account, which the
    # controller manager's service account controller would have made
    r = admin.post(f"/api/v1/namespaces/{name}/serviceaccounts",
                   json={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    assert r.status_code == 201, r.text
    return name


def create(client: httpx.Client, path: str, obj: dict[str, Any]) -> httpx.Response:
    return client.post(path, json=obj)


def make(admin: httpx.Client, ns: str, kind: str, name: str, **body: Any) -> None:
    plural = {"Secret": "secrets", "ConfigMap": "configmaps", "Pod": "pods"}[kind]
    r = create(admin, f"/api/v1/namespaces/{ns}/{plural}",
               {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, **body})
    assert r.status_code == 201, r.text


def pod_spec(node: str, secret: str, configmap: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if configmap:
        container["envFrom"] = [{"configMapRef": {"name": configmap}}]
    spec = {"containers": [container], "volumes": [{"name": "s", "secret": {"secretName": secret}}]}
    return {**spec, "nodeName": node} if node else spec


def eventually(get: Callable[[], httpx.Response], status: int) -> httpx.Response:
    deadline = time.monotonic() + WAIT
    while True:
        r = get()
        if r.status_code == status or time.monotonic() > deadline:
            return r
        time.sleep(0.05)


def test_a_node_reads_what_its_pods_use_and_nothing_else(admin: httpx.Client, n1: httpx.Client, ns: str) -> None:
    for kind, name in (("Secret", "s1"), ("Secret", "s2"), ("ConfigMap", "c1")):
        make(admin, ns, kind, name)
    make(admin, ns, "Pod", "p1", spec=pod_spec("n1", "s1", "c1"))
    make(admin, ns, "Pod", "p2", spec=pod_spec("n2", "s2"))

    r = eventually(lambda: n1.get(f"/api/v1/namespaces/{ns}/secrets/s1"), 200)
    assert r.status_code == 200, r.text
    assert n1.get(f"/api/v1/namespaces/{ns}/configmaps/c1").status_code == 200
    assert n1.get(f"/api/v1/namespaces/{ns}/pods/p1").status_code == 200

    r = n1.get(f"/api/v1/namespaces/{ns}/secrets/s2")
    assert r.status_code == 403
    assert r.json()["message"] == (
        f'secrets "s2" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the '
        f"namespace \"{ns}\": no relationship found between node 'n1' and this object")
    assert r.json()["reason"] == "Forbidden"
    assert n1.get(f"/api/v1/namespaces/{ns}/pods/p2").status_code == 403
    r = n1.get(f"/api/v1/namespaces/{ns}/secrets")
    assert r.status_code == 403 and r.json()["message"].endswith(": No Object name found")


def test_binding_a_pod_grants_its_secret_and_deleting_it_takes_it_away(admin: httpx.Client, n1: httpx.Client,
                                                                       ns: str) -> None:
    make(admin, ns, "Secret", "s3")
    make(admin, ns, "Pod", "p3", spec=pod_spec("", "s3"))
    secret = f"/api/v1/namespaces/{ns}/secrets/s3"
    assert n1.get(secret).status_code == 403

    r = create(admin, f"/api/v1/namespaces/{ns}/pods/p3/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p3"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})
    assert r.status_code == 201, r.text
    assert eventually(lambda: n1.get(secret), 200).status_code == 200

    assert admin.delete(f"/api/v1/namespaces/{ns}/pods/p3", params={"gracePeriodSeconds": "0"}).status_code == 200
    assert eventually(lambda: n1.get(secret), 403).status_code == 403


def test_a_node_writes_its_own_node_and_not_anothers(admin: httpx.Client, n1: httpx.Client) -> None:
    r = create(n1, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    assert r.status_code == 201, r.text
    r = create(admin, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
    assert r.status_code == 201, r.text

    status = {"status": {"capacity": {"cpu": "2"}}}
    r = n1.patch("/api/v1/nodes/n1/status", json=status, headers=MERGE_PATCH)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["capacity"]["cpu"] == "2"

    r = n1.patch("/api/v1/nodes/n2/status", json=status, headers=MERGE_PATCH)
    assert r.status_code == 403
    assert r.json()["message"] == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'
    r = n1.get("/api/v1/nodes/n2")
    assert r.status_code == 403
    assert r.json()["message"].endswith(": node 'n1' cannot read 'n2', only its own Node object")
    assert n1.get("/api/v1/nodes/n1").status_code == 200
    r = n1.patch("/api/v1/nodes/n1", json={"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
                 headers=MERGE_PATCH)
    assert r.status_code == 403
    assert r.json()["message"] == 'nodes "n1" is forbidden: node "n1" is not allowed to modify taints'


def test_a_node_keeps_its_own_lease_only(n1: httpx.Client) -> None:
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

    def lease(name: str) -> dict[str, Any]:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}}
    r = create(n1, leases, lease("n1"))
    assert r.status_code == 201, r.text
    r = n1.put(f"{leases}/n1", json={**lease("n1"), "metadata": r.json()["metadata"]})
    assert r.status_code == 200, r.text

    r = create(n1, leases, lease("n2"))
    assert r.status_code == 403
    assert r.json()["message"] == ('leases.coordination.k8s.io "n2" is forbidden: can only access node lease '
                                   "with the same name as the requesting node")
    r = n1.get(f"{leases}/n2")
    assert r.status_code == 403
    assert r.json()["message"].endswith(": can only access node lease with the same name as the requesting node")


def test_a_node_creates_only_mirror_pods(admin: httpx.Client, n1: httpx.Client, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    spec = {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}
    r = create(n1, pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky"}, "spec": spec})
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "sneaky" is forbidden: pod does not have "kubernetes.io/config.mirror" '
                                   'annotation, node "n1" can only create mirror pods')

    node = admin.get("/api/v1/nodes/n1")
    if node.status_code == 404:
        node = create(admin, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    owner = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": node.json()["metadata"]["uid"],
             "controller": True}
    mirror = {"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": {
        "name": "static-web-n1", "annotations": {"kubernetes.io/config.mirror": "hash"}, "ownerReferences": [owner]}}
    r = create(n1, pods, mirror)
    assert r.status_code == 201, r.text
    assert n1.delete(f"{pods}/static-web-n1").status_code == 200

    make(admin, ns, "Secret", "s4")
    make(admin, ns, "Pod", "elsewhere", spec=pod_spec("n2", "s4"))
    r = n1.delete(f"{pods}/elsewhere")
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "elsewhere" is forbidden: node "n1" can only delete pods with '
                                   "spec.nodeName set to itself")


def test_a_node_gets_tokens_for_the_service_accounts_of_its_pods_only(admin: httpx.Client, n1: httpx.Client,
                                                                      ns: str) -> None:
    make(admin, ns, "Secret", "s5")
    make(admin, ns, "Pod", "p5", spec=pod_spec("n1", "s5"))
    r = admin.post(f"/api/v1/namespaces/{ns}/serviceaccounts",
                   json={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "other"}})
    assert r.status_code == 201, r.text
    pod = admin.get(f"/api/v1/namespaces/{ns}/pods/p5").json()
    service_account = pod["spec"]["serviceAccountName"]  # `default`, set by the ServiceAccount plugin

    def token_for(name: str) -> httpx.Response:
        return create(n1, f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"boundObjectRef": {
                "apiVersion": "v1", "kind": "Pod", "name": "p5", "uid": pod["metadata"]["uid"]}}})
    r = eventually(lambda: token_for(service_account), 201)
    assert r.status_code == 201, r.text
    assert r.json()["status"]["token"]

    unbound = create(n1, f"/api/v1/namespaces/{ns}/serviceaccounts/{service_account}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    assert unbound.status_code == 403  # authorized, then refused by NodeRestriction
    assert unbound.json()["message"] == (f'serviceaccounts "{service_account}" is forbidden: node requested token '
                                         "not bound to a pod")

    r = token_for("other")
    assert r.status_code == 403
    assert r.json()["message"] == (
        f'serviceaccounts "other" is forbidden: User "system:node:n1" cannot create resource "serviceaccounts/token" '
        f"in API group \"\" in the namespace \"{ns}\": no relationship found between node 'n1' and this object")

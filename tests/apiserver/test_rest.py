"""REST semantics of the apiserver against a real etcd: create, get, list, update, status, delete."""

from __future__ import annotations

import httpx
import pytest


def pod(name: str, labels: dict[str, str] | None = None, **spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec}}


def configmap(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def deployment(name: str, replicas: int = 1) -> dict[str, object]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def pods_url(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


def test_create_fills_metadata_and_defaults(api: httpx.Client, namespace: str) -> None:
    r = api.post(pods_url(namespace), json=pod("web"))
    assert r.status_code == 201, r.text
    created = r.json()
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and int(meta["resourceVersion"]) > 0
    assert meta["namespace"] == namespace
    assert created["spec"]["restartPolicy"] == "Always"
    assert created["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert created["status"]["phase"] == "Pending"
    got = api.get(pods_url(namespace, "web")).json()
    assert got["metadata"]["resourceVersion"] == meta["resourceVersion"]


def test_generate_name_makes_a_unique_name(api: httpx.Client, namespace: str) -> None:
    body = configmap("")
    body["metadata"] = {"generateName": "cfg-"}
    names = {api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=body).json()["metadata"]["name"]
             for _ in range(3)}
    assert len(names) == 3 and all(n.startswith("cfg-") and len(n) == 9 for n in names)


def test_second_create_is_already_exists(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.post(url, json=configmap("dup")).status_code == 201
    r = api.post(url, json=configmap("dup"))
    assert r.status_code == 409
    assert r.json()["reason"] == "AlreadyExists"
    assert r.json()["message"] == 'configmaps "dup" already exists'


def test_create_in_a_missing_namespace_is_not_found(api: httpx.Client) -> None:
    r = api.post(pods_url("does-not-exist"), json=pod("x"))
    assert r.status_code == 404
    assert r.json()["message"] == 'namespaces "does-not-exist" not found'


def test_get_missing_is_not_found_status(api: httpx.Client, namespace: str) -> None:
    r = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/nope")
    assert r.status_code == 404
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": 'deployments.apps "nope" not found', "reason": "NotFound",
                        "details": {"name": "nope", "group": "apps", "kind": "deployments"}, "code": 404}


def test_update_with_stale_resource_version_conflicts(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    created = api.post(url, json=configmap("c", a="1")).json()
    first = dict(created, data={"a": "2"})
    assert api.put(f"{url}/c", json=first).status_code == 200
    stale = dict(created, data={"a": "3"})
    r = api.put(f"{url}/c", json=stale)
    assert r.status_code == 409 and r.json()["reason"] == "Conflict"
    assert api.get(f"{url}/c").json()["data"] == {"a": "2"}


def test_update_without_resource_version_is_unconditional(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(url, json=configmap("u", a="1"))
    r = api.put(f"{url}/u", json=configmap("u", a="9"))
    assert r.status_code == 200 and r.json()["data"] == {"a": "9"}


def test_update_naming_an_earlier_object_of_the_same_name_conflicts(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    earlier = api.post(url, json=configmap("again", a="1")).json()
    api.delete(f"{url}/again")
    live = api.post(url, json=configmap("again", a="2")).json()
    body = configmap("again", a="3")
    body["metadata"]["uid"] = earlier["metadata"]["uid"]  # a PUT built from the deleted object
    r = api.put(f"{url}/again", json=body)
    assert r.status_code == 409 and r.json()["reason"] == "Conflict"
    assert r.json()["message"] == (
        f'Operation cannot be fulfilled on configmaps "again": StorageError: invalid object, Code: 4, '
        f"Key: /registry/configmaps/{namespace}/again, ResourceVersion: 0, AdditionalErrorMsg: Precondition "
        f"failed: UID in precondition: {earlier['metadata']['uid']}, UID in object meta: {live['metadata']['uid']}")
    assert api.get(f"{url}/again").json()["data"] == {"a": "2"}
    body["metadata"]["uid"] = live["metadata"]["uid"]
    assert api.put(f"{url}/again", json=body).status_code == 200


def test_a_patch_cannot_change_the_uid(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(url, json=configmap("fixed", a="1"))
    r = api.patch(f"{url}/fixed", content=b'{"metadata":{"uid":"0b0b0b0b-0000-0000-0000-000000000000"}}',
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"
    assert r.json()["message"] == ('ConfigMap "fixed" is invalid: metadata.uid: Invalid value: '
                                   '"0b0b0b0b-0000-0000-0000-000000000000": field is immutable')


def test_generation_counts_spec_changes_only(api: httpx.Client, namespace: str) -> None:
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    created = api.post(url, json=deployment("gen")).json()
    assert created["metadata"]["generation"] == 1
    created["metadata"]["labels"] = {"x": "y"}
    relabeled = api.put(f"{url}/gen", json=created).json()
    assert relabeled["metadata"]["generation"] == 1
    relabeled["spec"]["replicas"] = 3
    scaled = api.put(f"{url}/gen", json=relabeled).json()
    assert scaled["metadata"]["generation"] == 2


def test_status_and_spec_are_written_separately(api: httpx.Client, namespace: str) -> None:
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    created = api.post(url, json=deployment("st")).json()
    with_status = dict(created, status={"replicas": 5})
    with_status["spec"] = dict(created["spec"], replicas=7)
    after_status = api.put(f"{url}/st/status", json=with_status).json()
    assert after_status["status"] == {"replicas": 5} and after_status["spec"]["replicas"] == 1
    after_status["status"] = {"replicas": 0}
    after_status["spec"]["replicas"] = 2
    after_main = api.put(f"{url}/st", json=after_status).json()
    assert after_main["status"] == {"replicas": 5} and after_main["spec"]["replicas"] == 2


def test_delete_returns_status_and_removes(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(url, json=configmap("d"))
    r = api.request("DELETE", f"{url}/d", json={"propagationPolicy": "Background"})
    assert r.status_code == 200
    assert api.get(f"{url}/d").status_code == 404


def test_unscheduled_pod_is_deleted_at_once(api: httpx.Client, namespace: str) -> None:
    api.post(pods_url(namespace), json=pod("p"))
    r = api.delete(pods_url(namespace, "p"))
    assert r.status_code == 200 and r.json()["kind"] == "Pod"
    assert api.get(pods_url(namespace, "p")).status_code == 404


def test_scheduled_pod_is_deleted_gracefully(api: httpx.Client, namespace: str) -> None:
    api.post(pods_url(namespace), json=pod("g", nodeName="node-1"))
    r = api.delete(pods_url(namespace, "g"))
    assert r.status_code == 200
    marked = api.get(pods_url(namespace, "g")).json()
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 30
    r = api.request("DELETE", pods_url(namespace, "g"), json={"gracePeriodSeconds": 0})
    assert r.status_code == 200
    assert api.get(pods_url(namespace, "g")).status_code == 404


def test_finalizers_hold_the_object_until_removed(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    body = configmap("f")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    api.post(url, json=body)
    assert api.delete(f"{url}/f").status_code == 200
    held = api.get(f"{url}/f").json()
    assert held["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    assert api.put(f"{url}/f", json=held).status_code == 200
    assert api.get(f"{url}/f").status_code == 404


def test_delete_precondition_on_uid(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(url, json=configmap("pre"))
    r = api.request("DELETE", f"{url}/pre", json={"preconditions": {"uid": "not-the-uid"}})
    assert r.status_code == 409
    assert api.get(f"{url}/pre").status_code == 200


def test_delete_collection_by_label(api: httpx.Client, namespace: str) -> None:
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        api.post(pods_url(namespace), json=pod(name, {"tier": tier}))
    r = api.delete(pods_url(namespace), params={"labelSelector": "tier=web"})
    assert r.status_code == 200
    left = [p["metadata"]["name"] for p in api.get(pods_url(namespace)).json()["items"]]
    assert left == ["c"]


def test_namespace_delete_leaves_it_terminating(api: httpx.Client) -> None:
    api.post("/api/v1/namespaces", json={"metadata": {"name": "going-away"}})
    assert api.delete("/api/v1/namespaces/going-away").status_code == 200
    ns = api.get("/api/v1/namespaces/going-away").json()
    assert ns["status"]["phase"] == "Terminating"
    r = api.post(pods_url("going-away"), json=pod("late"))
    assert r.status_code == 403 and "being terminated" in r.json()["message"]


def test_system_namespaces_and_kubernetes_service_exist(api: httpx.Client) -> None:
    names = {n["metadata"]["name"] for n in api.get("/api/v1/namespaces").json()["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
    svc = api.get("/api/v1/namespaces/default/services/kubernetes").json()
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"][0]["port"] == 443


@pytest.mark.parametrize("subresource", ["scale"])
def test_scale_subresource_reads_and_writes_replicas(api: httpx.Client, namespace: str, subresource: str) -> None:
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    api.post(url, json=deployment("sc", replicas=2))
    scale = api.get(f"{url}/sc/scale").json()
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2 and scale["status"]["selector"] == "app=sc"
    r = api.patch(f"{url}/sc/scale", content=b'{"spec":{"replicas":4}}',
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200 and r.json()["spec"]["replicas"] == 4
    assert api.get(f"{url}/sc").json()["spec"]["replicas"] == 4


def test_binding_assigns_a_node_once(api: httpx.Client, namespace: str) -> None:
    api.post(pods_url(namespace), json=pod("b"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    r = api.post(pods_url(namespace, "b") + "/binding", json=binding)
    assert r.status_code == 201, r.text
    bound = api.get(pods_url(namespace, "b")).json()
    assert bound["spec"]["nodeName"] == "node-1"
    assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in bound["status"]["conditions"])
    again = api.post(f"/api/v1/namespaces/{namespace}/bindings", json=dict(binding, target={"name": "node-2"}))
    assert again.status_code == 409


def test_service_gets_unique_cluster_ip_and_node_port(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/services"
    seen_ips, seen_ports = set(), set()
    for i in range(5):
        svc = {"metadata": {"name": f"s{i}"},
               "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [{"port": 80}]}}
        created = api.post(url, json=svc).json()
        seen_ips.add(created["spec"]["clusterIP"])
        seen_ports.add(created["spec"]["ports"][0]["nodePort"])
    assert len(seen_ips) == 5 and len(seen_ports) == 5
    taken = next(iter(seen_ports))
    dup = {"metadata": {"name": "dup"},
           "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": taken}]}}
    r = api.post(url, json=dup)
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"


def test_deleting_a_service_frees_its_node_port(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/services"
    svc = {"metadata": {"name": "free"}, "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 31999}]}}
    assert api.post(url, json=svc).status_code == 201
    api.delete(f"{url}/free")
    assert api.post(url, json=svc).status_code == 201


def test_merge_patch_labels(api: httpx.Client, namespace: str) -> None:
    api.post(pods_url(namespace), json=pod("m", {"a": "1"}))
    r = api.patch(pods_url(namespace, "m"), content=b'{"metadata":{"labels":{"b":"2","a":null}}}',
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200 and r.json()["metadata"]["labels"] == {"b": "2"}


def test_reads_right_after_writes_see_them(api: httpx.Client, namespace: str) -> None:
    """GETs are answered from the watch cache only once it holds every write acknowledged before them."""
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(30):
        created = api.post(url, json=configmap(f"rw-{i}", v="1")).json()
        assert api.get(f"{url}/rw-{i}").status_code == 200
        created["data"] = {"v": "2"}
        api.put(f"{url}/rw-{i}", json=created)
        assert api.get(f"{url}/rw-{i}").json()["data"] == {"v": "2"}
        api.delete(f"{url}/rw-{i}")
        assert api.get(f"{url}/rw-{i}").status_code == 404


def test_an_endpointslice_counts_changes_to_its_endpoints_and_labels_as_generations(api: httpx.Client,
                                                                                     namespace: str) -> None:
    url = f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"
    endpoint = {"addresses": ["10.0.0.1"], "conditions": {"ready": True}}
    created = api.post(url, json={"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                                  "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
                                  "addressType": "IPv4", "endpoints": [endpoint]}).json()
    assert created["metadata"]["generation"] == 1

    def patched(patch: str) -> int:
        r = api.patch(f"{url}/web-abc", content=patch.encode(), headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text
        return r.json()["metadata"]["generation"]

    assert patched('{"endpoints":[{"addresses":["10.0.0.2"]}]}') == 2
    assert patched('{"metadata":{"labels":{"extra":"yes"}}}') == 3
    assert patched('{"metadata":{"annotations":{"note":"hi"}}}') == 3

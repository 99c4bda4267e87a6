"""Bad input: each answered with a metav1.Status of the right code, nothing written, never a 500."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest

from minikube_py.store.etcd import EtcdStorage
from tests.apiserver.test_list_watch import Watcher
from tests.apiserver.test_rest import configmap, pods_url


def assert_status(r: httpx.Response, code: int, reason: str) -> dict:
    assert r.status_code == code, r.text
    body = r.json()
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code, body
    assert body["reason"] == reason, body
    return body


def cm_count(api: httpx.Client, ns: str) -> int:
    """ConfigMaps in `ns` besides the cluster CA's, which every namespace gets."""
    items = api.get(f"/api/v1/namespaces/{ns}/configmaps").json()["items"]
    return sum(item["metadata"]["name"] != "kube-root-ca.crt" for item in items)


@pytest.mark.parametrize("body,content_type", [
    (b'{"metadata": {"name": "x"', "application/json"),
    (b"metadata: [unclosed", "application/yaml"),
    (b"[1, 2, 3]", "application/json"),
    (b"", "application/json"),
])
def test_malformed_bodies_are_bad_requests(api: httpx.Client, namespace: str, body: bytes,
                                           content_type: str) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/configmaps", content=body, headers={"Content-Type": content_type})
    assert_status(r, 400, "BadRequest")
    assert cm_count(api, namespace) == 0


def test_yaml_body_is_accepted(api: httpx.Client, namespace: str) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/configmaps",
                 content=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n",
                 headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201 and r.json()["data"] == {"k": "v"}


@pytest.mark.parametrize("api_version,kind", [("apps/v1", "ConfigMap"), ("v1", "Secret")])
def test_wrong_api_version_or_kind(api: httpx.Client, namespace: str, api_version: str, kind: str) -> None:
    body = dict(configmap("wrong"), apiVersion=api_version, kind=kind)
    assert_status(api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=body), 400, "BadRequest")
    assert cm_count(api, namespace) == 0


@pytest.mark.parametrize("name", ["", "Upper", "has_underscore", "a" * 254, "-leading"])
def test_missing_or_invalid_names_are_invalid(api: httpx.Client, namespace: str, name: str) -> None:
    body = assert_status(api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap(name)),
                         422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert cm_count(api, namespace) == 0


def test_invalid_pod_lists_field_paths(api: httpx.Client, namespace: str) -> None:
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
           "spec": {"containers": [{"name": "c"}]}}
    body = assert_status(api.post(pods_url(namespace), json=bad), 422, "Invalid")
    assert "spec.containers[0].image" in {c["field"] for c in body["details"]["causes"]}


@pytest.mark.parametrize("path", ["/api/v1/namespaces/default/widgets", "/apis/nope.example.com/v1/things",
                                  "/apis/apps/v9/deployments", "/api/v1/namespaces/default/pods/x/nosuchsub"])
def test_unknown_resources_are_not_found(api: httpx.Client, path: str) -> None:
    assert_status(api.get(path), 404, "NotFound")


def test_body_over_3_mib_is_too_large(api: httpx.Client, namespace: str) -> None:
    big = configmap("big", blob="x" * (3 * 1024 * 1024 + 10))
    assert_status(api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=big), 413, "RequestEntityTooLarge")
    assert cm_count(api, namespace) == 0


def test_wrong_content_type_is_unsupported(api: httpx.Client, namespace: str) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/configmaps", content=b"name=x",
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert_status(r, 415, "UnsupportedMediaType")
    r = api.patch(f"/api/v1/namespaces/{namespace}/configmaps/x", content=b"{}",
                  headers={"Content-Type": "text/plain"})
    assert_status(r, 415, "UnsupportedMediaType")


@pytest.mark.parametrize("param,value", [
    ("labelSelector", "tier in (web"), ("labelSelector", "Bad Key=x"), ("labelSelector", "a=b=c"),
    ("fieldSelector", "spec.nosuch=x"), ("fieldSelector", "metadata.name"),
])
def test_invalid_selectors_are_bad_requests(api: httpx.Client, namespace: str, param: str, value: str) -> None:
    assert_status(api.get(pods_url(namespace), params={param: value}), 400, "BadRequest")
    assert_status(api.get(pods_url(namespace), params={param: value, "watch": "true"}), 400, "BadRequest")


@pytest.mark.parametrize("token", [
    "not-base64!!",
    base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":5,"start":"../../secrets/"}').decode(),
    base64.urlsafe_b64encode(b'{"v":"other","rv":5,"start":"x"}').decode(),
])
def test_tampered_continue_tokens(api: httpx.Client, namespace: str, token: str) -> None:
    assert_status(api.get(pods_url(namespace), params={"limit": 1, "continue": token}), 400, "BadRequest")


def test_stale_resource_version_conflict_writes_nothing(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    created = api.post(url, json=configmap("s", v="1")).json()
    created["metadata"]["resourceVersion"] = "1"
    created["data"] = {"v": "2"}
    assert_status(api.put(f"{url}/s", json=created), 409, "Conflict")
    assert api.get(f"{url}/s").json()["data"] == {"v": "1"}


def _compact(endpoint: str) -> None:
    async def run() -> None:
        storage = await EtcdStorage.connect([endpoint])
        try:
            await storage.compact(await storage.current_revision())
        finally:
            await storage.close()

    asyncio.run(run())


def test_compacted_revisions_are_expired(api: httpx.Client, control_plane, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(3):
        api.post(url, json=configmap(f"c{i}"))
    old = api.get(url, params={"limit": 1}).json()
    old_rv = old["metadata"]["resourceVersion"]
    api.post(url, json=configmap("after"))
    api.post(url, json=configmap("later"))  # compaction keeps its own revision: move two past old_rv
    _compact(control_plane.etcd.endpoint)
    assert_status(api.get(url, params={"limit": 1, "continue": old["metadata"]["continue"]}), 410, "Expired")
    assert_status(api.get(url, params={"resourceVersion": old_rv, "resourceVersionMatch": "Exact"}),
                  410, "Expired")
    # revision 1 is older than the watch cache's window, so the watch goes to etcd, which compacted it
    with control_plane.client() as watch_client:
        watcher = Watcher(watch_client, url, {"resourceVersion": "1", "timeoutSeconds": "5"})
        (event,) = watcher.wait_for(1)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"


def test_unknown_bearer_token_is_unauthorized(control_plane) -> None:
    with httpx.Client(base_url=control_plane.url, verify=control_plane.tls_context(with_admin_cert=False),
                      headers={"Authorization": "Bearer nope"}) as client:
        assert_status(client.get("/api/v1/pods"), 401, "Unauthorized")
    with httpx.Client(base_url=control_plane.url, verify=control_plane.tls_context(with_admin_cert=False),
                      headers={"Authorization": "Bearer"}) as client:  # no token: invalid, not anonymous
        assert_status(client.get("/api/v1/pods"), 401, "Unauthorized")


def test_bad_dry_run_and_delete_options(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert_status(api.post(url, params={"dryRun": "Yes"}, json=configmap("x")), 422, "Invalid")
    api.post(url, json=configmap("keep"))
    r = api.request("DELETE", f"{url}/keep", content=json.dumps({"propagationPolicy": "Sideways"}))
    assert_status(r, 400, "BadRequest")
    assert api.get(f"{url}/keep").status_code == 200


def test_dry_run_create_writes_nothing(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    r = api.post(url, params={"dryRun": "All"}, json=configmap("dry"))
    assert r.status_code == 201
    assert api.get(f"{url}/dry").status_code == 404

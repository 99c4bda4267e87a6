"""The built-in admission plugins against a real control plane: NamespaceLifecycle, LimitRanger,
ServiceAccount, DefaultTolerationSeconds, Priority and ResourceQuota (all on by default), and the controller
manager's controllers that give every namespace its `default` ServiceAccount and `kube-root-ca.crt` ConfigMap
and keep quota usage right (run by the test control plane, tests/harness.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from tests.harness import ControlPlane

TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod(name: str, *, resources: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "nginx", "image": "nginx"}
    if resources is not None:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [container], **spec}}


def pods_url(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def eventually(check: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def cached(api: httpx.Client, url: str, name: str) -> None:
    """Wait until the apiserver's watch cache (what admission reads) holds `name` (a list at RV 0 is
    answered from the cache)."""
    eventually(lambda: any(o["metadata"]["name"] == name
                           for o in api.get(url, params={"resourceVersion": "0"}).json()["items"]),
               f"{name} in the watch cache")


# NamespaceLifecycle -------------------------------------------------------------------------------

def test_system_namespaces_may_not_be_deleted(api: httpx.Client) -> None:
    for name in ("default", "kube-system", "kube-public"):
        r = api.delete(f"/api/v1/namespaces/{name}")
        assert r.status_code == 403, r.text
        assert r.json()["message"] == f'namespaces "{name}" is forbidden: this namespace may not be deleted'


def test_a_pod_in_a_missing_namespace_is_404(api: httpx.Client) -> None:
    r = api.post(pods_url("nowhere-at-all"), json=pod("p"))
    assert r.status_code == 404 and r.json()["message"] == 'namespaces "nowhere-at-all" not found'


def test_a_create_in_a_terminating_namespace_names_the_object(api: httpx.Client) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    api.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert api.delete(f"/api/v1/namespaces/{name}").status_code == 200
    eventually(lambda: api.get(f"/api/v1/namespaces/{name}").json()["status"]["phase"] == "Terminating",
               "a terminating namespace")
    r = api.post(f"/api/v1/namespaces/{name}/configmaps", json={"metadata": {"name": "late"}})
    assert r.status_code == 403
    body = r.json()
    assert body["message"] == (f'configmaps "late" is forbidden: unable to create new content in namespace {name} '
                               "because it is being terminated")
    assert body["details"]["causes"][0]["reason"] == "NamespaceTerminating"


# ServiceAccount and its controllers -------------------------------------------------------------

def test_a_new_namespace_gets_the_default_account_and_the_root_ca(api: httpx.Client, namespace: str,
                                                                   control_plane: ControlPlane) -> None:
    def found(url: str) -> httpx.Response | None:
        r = api.get(f"/api/v1/namespaces/{namespace}/{url}")
        return r if r.status_code == 200 else None

    sa = eventually(lambda: found("serviceaccounts/default"), "the default service account")
    assert sa.json()["metadata"]["name"] == "default"
    cm = eventually(lambda: found("configmaps/kube-root-ca.crt"), "the root CA configmap")
    assert cm.json()["data"]["ca.crt"] == control_plane.ca_file.read_text()


def test_a_pod_gets_the_default_account_and_the_projected_token_volume(api: httpx.Client, namespace: str) -> None:
    init = {"name": "setup", "image": "busybox"}
    r = api.post(pods_url(namespace), json=pod("web", initContainers=[init]))
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["serviceAccountName"] == "default"
    volume = spec["volumes"][0]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    sources = volume["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1]["configMap"] == {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    assert sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.namespace"
    for container in spec["containers"] + spec["initContainers"]:
        assert {"name": volume["name"], "readOnly": True, "mountPath": TOKEN_PATH} in container["volumeMounts"]


def test_automount_false_adds_no_volume(api: httpx.Client, namespace: str) -> None:
    r = api.post(pods_url(namespace), json=pod("quiet", automountServiceAccountToken=False))
    assert r.status_code == 201, r.text
    assert "volumes" not in r.json()["spec"]


def test_a_pod_naming_a_missing_account_is_refused(api: httpx.Client, namespace: str) -> None:
    r = api.post(pods_url(namespace), json=pod("lost", serviceAccountName="ghost"))
    assert r.status_code == 403
    assert r.json()["message"] == (f'pods "lost" is forbidden: error looking up service account {namespace}/ghost: '
                                   'serviceaccount "ghost" not found')


# DefaultTolerationSeconds and Priority ---------------------------------------------------------------

def test_a_pod_tolerates_unready_nodes_for_five_minutes_and_gets_priority_zero(api: httpx.Client,
                                                                                namespace: str) -> None:
    spec = api.post(pods_url(namespace), json=pod("tol")).json()["spec"]
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in spec["tolerations"]
    assert any(t["key"] == "node.kubernetes.io/unreachable" for t in spec["tolerations"])
    assert spec["priority"] == 0 and spec["preemptionPolicy"] == "PreemptLowerPriority"


def test_priority_comes_from_the_priority_class(api: httpx.Client, namespace: str) -> None:
    name = f"high-{namespace}"
    r = api.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                 json={"metadata": {"name": name}, "value": 1000, "preemptionPolicy": "Never"})
    assert r.status_code == 201, r.text
    try:
        cached(api, "/apis/scheduling.k8s.io/v1/priorityclasses", name)
        spec = api.post(pods_url(namespace), json=pod("vip", priorityClassName=name)).json()["spec"]
        assert spec["priority"] == 1000 and spec["preemptionPolicy"] == "Never"
        r = api.post(pods_url(namespace), json=pod("liar", priorityClassName=name, priority=5))
        assert r.status_code == 403 and "the integer value of priority (5) must not be provided" in r.text
    finally:
        api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def test_an_unknown_priority_class_is_refused(api: httpx.Client, namespace: str) -> None:
    r = api.post(pods_url(namespace), json=pod("nope", priorityClassName="no-such-class"))
    assert r.status_code == 403
    assert r.json()["message"] == 'pods "nope" is forbidden: no PriorityClass with name no-such-class was found'


def test_system_priority_classes_exist_and_are_usable(api: httpx.Client, namespace: str) -> None:
    spec = api.post(pods_url(namespace), json=pod("crit", priorityClassName="system-node-critical")).json()["spec"]
    assert spec["priority"] == 2000001000


# LimitRanger ----------------------------------------------------------------------------------------

def limit_range(namespace: str, api: httpx.Client, **container: Any) -> None:
    url = f"/api/v1/namespaces/{namespace}/limitranges"
    r = api.post(url, json={"metadata": {"name": "limits"}, "spec": {"limits": [{"type": "Container", **container}]}})
    assert r.status_code == 201, r.text
    cached(api, url, "limits")


def test_a_limit_range_fills_in_requests_and_limits(api: httpx.Client, namespace: str) -> None:
    limit_range(namespace, api, default={"cpu": "500m"}, defaultRequest={"cpu": "250m", "memory": "64Mi"})
    r = api.post(pods_url(namespace), json=pod("defaulted"))
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "250m", "memory": "64Mi"},
                                                             "limits": {"cpu": "500m"}}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container nginx; cpu limit for container nginx")
    assert created["status"]["qosClass"] == "Burstable"


def test_a_container_over_the_limit_range_max_is_refused(api: httpx.Client, namespace: str) -> None:
    limit_range(namespace, api, max={"cpu": "500m"})
    r = api.post(pods_url(namespace), json=pod("big", resources={"limits": {"cpu": "1"}}))
    assert r.status_code == 403
    assert r.json()["message"] == 'pods "big" is forbidden: maximum cpu usage per Container is 500m, but limit is 1'


# ResourceQuota -----------------------------------------------------------------------------------------

def quota(api: httpx.Client, namespace: str, hard: dict[str, str]) -> str:
    url = f"/api/v1/namespaces/{namespace}/resourcequotas"
    assert api.post(url, json={"metadata": {"name": "q"}, "spec": {"hard": hard}}).status_code == 201
    cached(api, url, "q")
    return f"{url}/q"


def test_a_quota_refuses_the_pod_over_it_and_reports_usage(api: httpx.Client, namespace: str) -> None:
    url = quota(api, namespace, {"pods": "2", "count/configmaps": "10"})
    status = eventually(lambda: api.get(url).json().get("status", {}).get("hard"), "the quota's status")
    assert status == {"pods": "2", "count/configmaps": "10"}
    for name in ("a", "b"):
        assert api.post(pods_url(namespace), json=pod(name)).status_code == 201
    assert api.post(pods_url(namespace), json=pod("dry"), params={"dryRun": "All"}).status_code == 403
    r = api.post(pods_url(namespace), json=pod("c"))
    assert r.status_code == 403 and r.json()["reason"] == "Forbidden"
    assert r.json()["message"] == ('pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, '
                                   "limited: pods=2")
    assert api.get(url).json()["status"]["used"]["pods"] == "2"
    api.delete(f"{pods_url(namespace)}/a", params={"gracePeriodSeconds": "0"})
    eventually(lambda: api.get(url).json()["status"]["used"]["pods"] == "1", "usage given back after a delete")


def test_a_dry_run_is_checked_but_not_charged(api: httpx.Client, namespace: str) -> None:
    url = quota(api, namespace, {"pods": "1"})
    eventually(lambda: api.get(url).json().get("status", {}).get("used"), "the quota's status")
    assert api.post(pods_url(namespace), json=pod("dry"), params={"dryRun": "All"}).status_code == 201
    assert api.get(url).json()["status"]["used"]["pods"] == "0"


def test_a_compute_quota_needs_requests_and_limits(api: httpx.Client, namespace: str) -> None:
    url = quota(api, namespace, {"requests.cpu": "1", "limits.cpu": "2", "requests.memory": "1Gi"})
    r = api.post(pods_url(namespace), json=pod("bare", resources={"requests": {"memory": "128Mi"}}))
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "bare" is forbidden: failed quota: q: must specify limits.cpu for: nginx; '
                                   "requests.cpu for: nginx")
    sized = {"requests": {"cpu": "600m", "memory": "128Mi"}, "limits": {"cpu": "1"}}
    assert api.post(pods_url(namespace), json=pod("one", resources=sized)).status_code == 201
    assert api.get(url).json()["status"]["used"] == {"requests.cpu": "600m", "limits.cpu": "1",
                                                      "requests.memory": "128Mi"}
    r = api.post(pods_url(namespace), json=pod("two", resources=sized))
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "two" is forbidden: exceeded quota: q, requested: requests.cpu=600m, '
                                   "used: requests.cpu=600m, limited: requests.cpu=1")


def test_object_counts_are_limited(api: httpx.Client, namespace: str) -> None:
    # the namespace's kube-root-ca.crt counts too
    eventually(lambda: api.get(f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt").status_code == 200,
               "the root CA configmap")
    quota(api, namespace, {"configmaps": "2"})
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.post(url, json={"metadata": {"name": "one"}}).status_code == 201
    r = api.post(url, json={"metadata": {"name": "two"}})
    assert r.status_code == 403
    assert r.json()["message"] == ('configmaps "two" is forbidden: exceeded quota: q, requested: configmaps=1, '
                                   "used: configmaps=2, limited: configmaps=2")

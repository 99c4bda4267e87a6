"""The controller manager's per-namespace controllers against a real control plane (tests/harness.py runs them
in a `mkpy kcm` process): the default ServiceAccount, `kube-root-ca.crt`, quota usage given back, and a
namespace deleted with everything in it, waiting for a custom resource's finalizer."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from tests.harness import ControlPlane

WAIT = 20.0
MERGE = {"content-type": "application/merge-patch+json"}


def eventually(check: Callable[[], Any], message: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {message}")


def test_new_namespace_gets_default_account_and_root_ca(control_plane: ControlPlane, api: httpx.Client,
                                                         namespace: str) -> None:
    eventually(lambda: api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default").status_code == 200,
               "the default ServiceAccount")
    path = f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt"
    configmap = eventually(lambda: (r := api.get(path)).status_code == 200 and r.json(), "kube-root-ca.crt")
    assert configmap["data"] == {"ca.crt": control_plane.ca_file.read_text()}
    # deleted or edited, both come back as they were
    assert api.patch(path, json={"data": {"ca.crt": "forged"}}, headers=MERGE).status_code == 200
    eventually(lambda: api.get(path).json()["data"] == configmap["data"], "the CA to be restored")
    assert api.delete(f"/api/v1/namespaces/{namespace}/serviceaccounts/default").status_code == 200
    eventually(lambda: api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default").status_code == 200,
               "the default ServiceAccount to come back")


def test_quota_usage_is_given_back_when_pods_go(api: httpx.Client, namespace: str) -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"pods": "2"}}}
    assert api.post(f"/api/v1/namespaces/{namespace}/resourcequotas", json=quota).status_code == 201
    path = f"/api/v1/namespaces/{namespace}/resourcequotas/q"
    eventually(lambda: (api.get(path).json().get("status") or {}).get("used") == {"pods": "0"}, "the first count")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod).status_code == 201
    assert api.get(path).json()["status"]["used"] == {"pods": "1"}  # charged by admission
    assert api.delete(f"/api/v1/namespaces/{namespace}/pods/p").status_code == 200
    eventually(lambda: api.get(path).json()["status"]["used"] == {"pods": "0"}, "the pod's use to be given back")


def test_namespace_deletion_empties_it_and_waits_for_finalizers(api: httpx.Client) -> None:
    group = f"ns{uuid.uuid4().hex[:6]}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"gadgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd).status_code == 201
    name = f"doomed-{uuid.uuid4().hex[:6]}"
    assert api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": name}}).status_code == 201
    eventually(lambda: api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").status_code == 200, "default SA")
    assert api.post(f"/api/v1/namespaces/{name}/configmaps", json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}}).status_code == 201
    gadgets = f"/apis/{group}/v1/namespaces/{name}/gadgets"
    created = eventually(lambda: api.post(gadgets, json={
        "apiVersion": f"{group}/v1", "kind": "Gadget",
        "metadata": {"name": "g", "finalizers": ["example.com/hold"]}}).status_code == 201, "the CRD to be served")
    assert created

    assert api.delete(f"/api/v1/namespaces/{name}").status_code == 200
    assert api.get(f"/api/v1/namespaces/{name}").json()["status"]["phase"] == "Terminating"

    def held() -> dict[str, Any] | None:
        conditions = {c["type"]: c for c in api.get(f"/api/v1/namespaces/{name}").json()["status"].get("conditions") or []}
        waiting = conditions.get("NamespaceFinalizersRemaining")
        return conditions if waiting and waiting["status"] == "True" else None
    conditions = eventually(held, "the namespace to report the finalizer")
    assert conditions["NamespaceFinalizersRemaining"]["message"] == \
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    assert conditions["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    assert f"gadgets.{group} has 1 resource instances" in conditions["NamespaceContentRemaining"]["message"]
    assert api.get(f"/api/v1/namespaces/{name}/configmaps/cm").status_code == 404  # the rest is gone already
    refused = api.post(f"/api/v1/namespaces/{name}/configmaps", json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}})
    assert refused.status_code == 403

    assert api.patch(f"{gadgets}/g", json={"metadata": {"finalizers": None}}, headers=MERGE).status_code == 200
    eventually(lambda: api.get(f"/api/v1/namespaces/{name}").status_code == 404, "the namespace to be gone")
    api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}")

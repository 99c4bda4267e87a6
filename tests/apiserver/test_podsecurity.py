"""PodSecurity in the real apiserver: namespace labels enforce, warn about and validate the Pod Security
Standards, with kube's status codes, messages and `Warning` headers.

Each test makes its own namespace, labelled at creation (the plugin reads labels from the watch cache, and
waits for a namespace created a moment ago); a test that changes labels later waits until the cache shows them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

L = "pod-security.kubernetes.io/"
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
RESTRICTED_SC = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
                 "seccompProfile": {"type": "RuntimeDefault"}}
PLAIN_RESTRICTED = (
    'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
    'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")')
PRIVILEGED = 'privileged (container "c" must not set securityContext.privileged=true)'


def labelled_namespace(api: httpx.Client, **labels: str) -> str:
    """A new namespace with the pod-security labels given as `enforce="restricted"`, `warn_version="v1.30"`."""
    name = f"psa-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {L + k.replace("_", "-"): v for k, v in labels.items()}}}
    r = api.post("/api/v1/namespaces", json=body)
    assert r.status_code == 201, r.text
    return with_default_account(api, name)


def with_default_account(api: httpx.Client, namespace: str) -> str:
    """Make sure `namespace` has its `default` ServiceAccount, which the ServiceAccount plugin (before
    PodSecurity in the chain) requires of every pod, whether or not something else made it already."""
    r = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                 json={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    assert r.status_code in (201, 409), r.text
    return namespace


def pod(name: str = "p", image: str = "nginx:1.27", **security: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": image}
    if security:
        container["securityContext"] = security
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def warnings(r: httpx.Response) -> list[str]:
    return r.headers.get_list("warning")


def wait_until(what: str, ready: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def test_a_privileged_pod_is_refused_in_a_restricted_namespace(api: httpx.Client) -> None:
    ns = labelled_namespace(api, enforce="restricted")
    r = api.post(f"/api/v1/namespaces/{ns}/pods", json=pod(privileged=True))
    assert r.status_code == 403, r.text
    status = r.json()
    assert status["reason"] == "Forbidden"
    assert status["details"] == {"name": "p", "kind": "pods"}
    assert status["message"] == \
        f'pods "p" is forbidden: violates PodSecurity "restricted:latest": {PRIVILEGED}, {PLAIN_RESTRICTED}'
    assert warnings(r) == []
    assert api.get(f"/api/v1/namespaces/{ns}/pods/p").status_code == 404


def test_a_privileged_pod_is_refused_in_a_baseline_namespace_even_on_dry_run(api: httpx.Client) -> None:
    ns = labelled_namespace(api, enforce="baseline")
    r = api.post(f"/api/v1/namespaces/{ns}/pods", params={"dryRun": "All"}, json=pod(privileged=True))
    assert r.status_code == 403, r.text
    assert r.json()["message"] == f'pods "p" is forbidden: violates PodSecurity "baseline:latest": {PRIVILEGED}'
    assert api.post(f"/api/v1/namespaces/{ns}/pods", json=pod()).status_code == 201  # baseline allows a plain pod


def test_an_unlabelled_namespace_admits_a_privileged_pod(api: httpx.Client, namespace: str) -> None:
    r = api.post(f"/api/v1/namespaces/{with_default_account(api, namespace)}/pods", json=pod(privileged=True))
    assert r.status_code == 201, r.text
    assert warnings(r) == []


def test_a_restricted_pod_is_admitted_in_a_restricted_namespace(api: httpx.Client) -> None:
    ns = labelled_namespace(api, enforce="restricted", enforce_version="v1.32")
    r = api.post(f"/api/v1/namespaces/{ns}/pods", json=pod(**RESTRICTED_SC))
    assert r.status_code == 201, r.text
    assert warnings(r) == []
    # the ServiceAccount plugin's token volume is a projected volume, which restricted allows
    assert [v for v in r.json()["spec"]["volumes"] if v["name"].startswith("kube-api-access-")][0]["projected"]


def test_warn_admits_the_pod_with_a_warning_header(api: httpx.Client) -> None:
    ns = labelled_namespace(api, warn="restricted")
    r = api.post(f"/api/v1/namespaces/{ns}/pods", json=pod())
    assert r.status_code == 201, r.text
    text = f'would violate PodSecurity "restricted:latest": {PLAIN_RESTRICTED}'
    assert warnings(r) == ['299 - "' + text.replace('"', '\\"') + '"']


def test_a_deployment_in_a_restricted_namespace_is_created_with_a_warning(api: httpx.Client) -> None:
    ns = labelled_namespace(api, enforce="restricted")
    labels = {"app": "web"}
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}
    r = api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=body)
    assert r.status_code == 201, r.text
    assert len(warnings(r)) == 1
    assert 'would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation != false' in warnings(r)[0]


def test_a_bad_level_label_makes_the_namespace_invalid(api: httpx.Client) -> None:
    name = f"psa-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {L + "enforce": "bogus"}}}
    r = api.post("/api/v1/namespaces", json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (f'Namespace "{name}" is invalid: metadata.labels[{L}enforce]: Invalid value: '
                                 '"bogus": must be one of privileged, baseline, restricted')
    ns = labelled_namespace(api)
    r = api.patch(f"/api/v1/namespaces/{ns}", headers=MERGE,
                  json={"metadata": {"labels": {L + "warn-version": "1.30"}}})
    assert r.status_code == 422, r.text
    assert r.json()["message"].endswith(f'metadata.labels[{L}warn-version]: Invalid value: "1.30": '
                                        'must be "latest" or "v1.x"')


def test_raising_the_enforce_level_warns_about_existing_pods(api: httpx.Client) -> None:
    ns = labelled_namespace(api)
    assert api.post(f"/api/v1/namespaces/{ns}/pods", json=pod("priv", privileged=True)).status_code == 201
    wait_until("the watch cache has the pod", lambda: api.get(
        f"/api/v1/namespaces/{ns}/pods", params={"resourceVersion": "0"}).json()["items"])
    r = api.patch(f"/api/v1/namespaces/{ns}", headers=MERGE, json={"metadata": {"labels": {L + "enforce": "baseline"}}})
    assert r.status_code == 200, r.text
    assert warnings(r) == [
        f'299 - "existing pods in namespace \\"{ns}\\" violate the new PodSecurity enforce level '
        '\\"baseline:latest\\""',
        '299 - "priv: privileged"',
    ]


def test_existing_pods_may_change_metadata_but_not_images(api: httpx.Client) -> None:
    ns = labelled_namespace(api)
    assert api.post(f"/api/v1/namespaces/{ns}/pods", json=pod()).status_code == 201
    r = api.patch(f"/api/v1/namespaces/{ns}", headers=MERGE,
                  json={"metadata": {"labels": {L + "enforce": "restricted"}}})
    assert r.status_code == 200, r.text
    wait_until("the watch cache has the label", lambda: L + "enforce" in api.get(
        f"/api/v1/namespaces/{ns}", params={"resourceVersion": "0"}).json()["metadata"]["labels"])
    r = api.patch(f"/api/v1/namespaces/{ns}/pods/p", headers=MERGE, json={"metadata": {"labels": {"a": "b"}}})
    assert r.status_code == 200, r.text
    r = api.patch(f"/api/v1/namespaces/{ns}/pods/p", headers=STRATEGIC,
                  json={"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}})
    assert r.status_code == 403, r.text
    assert 'violates PodSecurity "restricted:latest"' in r.json()["message"]

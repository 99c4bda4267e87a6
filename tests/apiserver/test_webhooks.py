"""Admission webhooks against the real control plane: a real HTTPS webhook server, started here with its own
CA and serving certificate, mutates and denies requests; failing webhooks follow their failurePolicy.

Every configuration is scoped to the test's namespace (a namespaceSelector on a label only that namespace
carries) and deleted in `finally`, because the control plane is shared with the rest of the session.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from minikube_py.auth import pki
from minikube_py.store.etcd_server import free_port
from tests.apiserver.webhookserver import (
    GROUP_PATH,
    WebhookServer,
    configured,
    eventually,
    scoped,
    server,
    webhook,
)

__all__ = ["scoped", "server"]  # fixtures


def configmap(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}},
            "data": {"k": "v"}}


def create_configmap(api: httpx.Client, namespace: str, labels: dict[str, str] | None = None,
                     query: str = "") -> httpx.Response:
    return api.post(f"/api/v1/namespaces/{namespace}/configmaps{query}",
                    json=configmap(f"cm-{uuid.uuid4().hex[:6]}", labels))


def test_a_mutating_webhook_labels_new_configmaps_and_pods(api: httpx.Client, scoped: str,
                                                           server: WebhookServer) -> None:
    hook = webhook("label.webhooks.mkpy.test", server.url("/mutate"), scoped, server.ca_bundle,
                   resources=("configmaps", "pods"))
    with configured(api, "MutatingWebhookConfiguration", hook):
        r = eventually(lambda: create_configmap(api, scoped, {"app": "x"}),
                       lambda r: "mutated-by" in r.json()["metadata"].get("labels", {}))
        assert r.status_code == 201, r.text
        assert r.json()["metadata"]["labels"] == {"app": "x", "mutated-by": "webhook"}
        assert "mutated by the test webhook" in r.headers.get("warning", "")
        # the field manager recorded the request before admission: nobody owns the webhook's label
        (entry,) = r.json()["metadata"]["managedFields"]
        assert entry["fieldsV1"]["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        r = api.post(f"/api/v1/namespaces/{scoped}/pods", json=pod)
        assert r.status_code == 201, r.text
        assert r.json()["metadata"]["labels"] == {"mutated-by": "webhook"}
        stored = api.get(f"/api/v1/namespaces/{scoped}/pods/p").json()
        assert stored["metadata"]["labels"] == {"mutated-by": "webhook"}


def create_deployment(api: httpx.Client, namespace: str, name: str) -> str:
    """A one-container Deployment `name`; its URL."""
    labels = {"app": name}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                  "spec": {"selector": {"matchLabels": labels}, "template": {
                      "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    assert api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json=deployment).status_code == 201
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"


def deployment_update_hook(name: str, path: str, namespace: str, server: WebhookServer) -> dict[str, Any]:
    return webhook(name, server.url(path), namespace, server.ca_bundle,
                   rules=[{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                           "resources": ["deployments"]}])


def touch(api: httpx.Client, url: str) -> httpx.Response:
    """An update that changes a label (a new value every time)."""
    return api.patch(url, json={"metadata": {"labels": {"touched": uuid.uuid4().hex}}},
                     headers={"Content-Type": "application/merge-patch+json"})


def test_what_a_mutating_webhook_adds_to_an_update_is_defaulted(api: httpx.Client, scoped: str,
                                                                 server: WebhookServer) -> None:
    url = create_deployment(api, scoped, "web")
    hook = deployment_update_hook("sidecar.webhooks.mkpy.test", "/sidecar", scoped, server)
    with configured(api, "MutatingWebhookConfiguration", hook):
        r = eventually(lambda: touch(api, url),
                       lambda r: r.status_code != 200 or len(r.json()["spec"]["template"]["spec"]["containers"]) == 2)
        assert r.status_code == 200, r.text
        sidecar = r.json()["spec"]["template"]["spec"]["containers"][1]
        assert sidecar["name"] == "sidecar"
        assert sidecar["imagePullPolicy"] == "IfNotPresent"
        assert sidecar["terminationMessagePath"] == "/dev/termination-log"
        assert sidecar["terminationMessagePolicy"] == "File"


def test_a_mutating_webhook_that_patches_in_a_wrongly_typed_value_fails_the_write(
        api: httpx.Client, scoped: str, server: WebhookServer) -> None:
    url = create_deployment(api, scoped, "typed")
    hook = deployment_update_hook("badtype.webhooks.mkpy.test", "/badtype", scoped, server)
    with configured(api, "MutatingWebhookConfiguration", hook):
        r = eventually(lambda: touch(api, url), lambda r: r.status_code != 200)
        # kube cannot decode the patched object into a Deployment: an internal error naming the webhook
        assert r.status_code == 500, r.text
        assert r.json()["reason"] == "InternalError"
        assert 'admission webhook "badtype.webhooks.mkpy.test" returned an object that cannot be decoded' in \
            r.json()["message"]
    assert api.get(url).json()["spec"]["replicas"] == 1  # nothing was written


def test_managed_fields_a_mutating_webhook_breaks_are_put_back_with_a_warning(
        api: httpx.Client, scoped: str, server: WebhookServer) -> None:
    hook = webhook("badfields.webhooks.mkpy.test", server.url("/badfields"), scoped, server.ca_bundle)
    with configured(api, "MutatingWebhookConfiguration", hook):
        r = eventually(lambda: create_configmap(api, scoped, {"app": "x"}),
                       lambda r: "managedFields" in r.headers.get("warning", ""))
        assert r.status_code == 201, r.text
        assert ".metadata.managedFields was in an invalid state after admission" in r.headers["warning"]
        (entry,) = r.json()["metadata"]["managedFields"]
        assert entry["operation"] == "Update" and entry["fieldsV1"]["f:data"] == {".": {}, "f:k": {}}
        stored = api.get(f"/api/v1/namespaces/{scoped}/configmaps/{r.json()['metadata']['name']}").json()
        assert stored["metadata"]["managedFields"] == r.json()["metadata"]["managedFields"]


def test_a_validating_webhook_denies_labelled_configmaps_with_kube_s_message(
        api: httpx.Client, scoped: str, server: WebhookServer) -> None:
    hook = webhook("deny.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle)
    with configured(api, "ValidatingWebhookConfiguration", hook):
        r = eventually(lambda: create_configmap(api, scoped, {"deny": "yes"}), lambda r: r.status_code == 403)
        assert r.status_code == 403, r.text
        assert r.json()["message"] == ('admission webhook "deny.webhooks.mkpy.test" denied the request: objects '
                                       "labelled deny=yes are refused")
        assert create_configmap(api, scoped, {"deny": "no"}).status_code == 201


def test_the_namespace_selector_leaves_other_namespaces_alone(api: httpx.Client, scoped: str,
                                                              server: WebhookServer) -> None:
    hook = webhook("deny.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle)
    other = f"t-{uuid.uuid4().hex[:8]}"
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": other}}).status_code == 201
    try:
        with configured(api, "ValidatingWebhookConfiguration", hook):
            eventually(lambda: create_configmap(api, scoped, {"deny": "yes"}), lambda r: r.status_code == 403)
            assert create_configmap(api, other, {"deny": "yes"}).status_code == 201
    finally:
        api.delete(f"/api/v1/namespaces/{other}")


def test_the_object_selector_leaves_unlabelled_objects_alone(api: httpx.Client, scoped: str,
                                                             server: WebhookServer) -> None:
    hook = webhook("label.webhooks.mkpy.test", server.url("/mutate"), scoped, server.ca_bundle,
                   objectSelector={"matchLabels": {"inject": "yes"}})
    with configured(api, "MutatingWebhookConfiguration", hook):
        r = eventually(lambda: create_configmap(api, scoped, {"inject": "yes"}),
                       lambda r: "mutated-by" in r.json()["metadata"].get("labels", {}))
        assert r.json()["metadata"]["labels"]["mutated-by"] == "webhook"
        r = create_configmap(api, scoped, {"inject": "no"})
        assert r.status_code == 201 and "mutated-by" not in r.json()["metadata"]["labels"]


def _unreachable(server: WebhookServer) -> str:
    return f"https://127.0.0.1:{free_port()}/"


@pytest.mark.parametrize("case, url, why", [
    ("timeout", lambda s: s.url("/slow"), '/slow?timeout=1s": context deadline exceeded'),
    ("garbage", lambda s: s.url("/garbage"), "failed to call webhook: couldn't get version/kind; json parse error"),
    ("unreachable", _unreachable, "connect: connection refused"),
])
@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_a_failing_webhook_follows_its_failure_policy(api: httpx.Client, scoped: str, server: WebhookServer,
                                                      case: str, url: Callable[[WebhookServer], str], why: str,
                                                      policy: str) -> None:
    hook = webhook(f"{case}.webhooks.mkpy.test", url(server), scoped, server.ca_bundle, failurePolicy=policy,
                   timeoutSeconds=1)
    # the working webhook, called first, tells when the configuration is in effect
    probe = webhook("deny.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle)
    with configured(api, "ValidatingWebhookConfiguration", probe, hook):
        eventually(lambda: create_configmap(api, scoped, {"deny": "yes"}), lambda r: r.status_code == 403)
        r = create_configmap(api, scoped)
        if policy == "Ignore":
            assert r.status_code == 201, r.text
            return
        assert r.status_code == 500, r.text
        status = r.json()
        assert status["reason"] == "InternalError"
        assert status["message"].startswith(f'Internal error occurred: failed calling webhook "{case}.webhooks.'
                                            'mkpy.test": ')
        assert why in status["message"]


def test_a_service_reference_that_cannot_be_resolved_is_an_unreachable_webhook(
        api: httpx.Client, scoped: str, server: WebhookServer) -> None:
    hook = webhook("svc.webhooks.mkpy.test", "", scoped, server.ca_bundle,
                   clientConfig={"service": {"name": "nope", "namespace": scoped, "path": "/deny"}})
    with configured(api, "ValidatingWebhookConfiguration", hook):
        r = eventually(lambda: create_configmap(api, scoped), lambda r: r.status_code == 500)
        assert r.json()["message"] == (
            'Internal error occurred: failed calling webhook "svc.webhooks.mkpy.test": failed to call webhook: '
            f'Post "https://nope.{scoped}.svc:443/deny?timeout=10s": service "nope" not found')


def test_a_dry_run_reaches_webhooks_without_side_effects_and_stores_nothing(
        api: httpx.Client, scoped: str, server: WebhookServer) -> None:
    hook = webhook("deny.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle,
                   sideEffects="NoneOnDryRun")
    with configured(api, "ValidatingWebhookConfiguration", hook):
        r = eventually(lambda: create_configmap(api, scoped, {"deny": "yes"}, "?dryRun=All"),
                       lambda r: r.status_code == 403)
        assert r.status_code == 403
        assert server.reviews[-1]["request"]["dryRun"] is True
        assert server.reviews[-1]["request"]["options"]["dryRun"] == ["All"]
        r = create_configmap(api, scoped, {"deny": "no"}, "?dryRun=All")
        assert r.status_code == 201
        name = r.json()["metadata"]["name"]
        assert api.get(f"/api/v1/namespaces/{scoped}/configmaps/{name}").status_code == 404


def test_a_webhook_with_side_effects_cannot_be_configured_in_v1(api: httpx.Client, scoped: str,
                                                                server: WebhookServer) -> None:
    # v1 only knows None and NoneOnDryRun; the dry-run refusal for other classes is a unit test
    hook = webhook("fx.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle, sideEffects="Some")
    r = api.post(f"{GROUP_PATH}/validatingwebhookconfigurations",
                 json={"metadata": {"name": f"fx-{uuid.uuid4().hex[:6]}"}, "webhooks": [hook]})
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["field"] == "webhooks[0].sideEffects"


@pytest.mark.parametrize("changes, field", [
    ({"sideEffects": None}, "webhooks[0].sideEffects"),
    ({"failurePolicy": "Maybe"}, "webhooks[0].failurePolicy"),
    ({"timeoutSeconds": 31}, "webhooks[0].timeoutSeconds"),
    ({"admissionReviewVersions": []}, "webhooks[0].admissionReviewVersions"),
    ({"admissionReviewVersions": ["v7"]}, "webhooks[0].admissionReviewVersions"),
    ({"name": "short"}, "webhooks[0].name"),
    ({"clientConfig": {}}, "webhooks[0].clientConfig"),
    ({"clientConfig": {"url": "http://127.0.0.1/"}}, "webhooks[0].clientConfig.url"),
])
@pytest.mark.parametrize("kind", ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"])
def test_bad_configurations_are_invalid(api: httpx.Client, scoped: str, server: WebhookServer,
                                        changes: dict[str, Any], field: str, kind: str) -> None:
    hook = {**webhook("bad.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle), **changes}
    hook = {key: value for key, value in hook.items() if value is not None}
    r = api.post(f"{GROUP_PATH}/{kind.lower()}s", json={"apiVersion": "admissionregistration.k8s.io/v1",
                                                          "kind": kind, "metadata": {"name": "bad"},
                                                          "webhooks": [hook]})
    assert r.status_code == 422, r.text
    assert r.json()["message"].startswith(f'{kind}.admissionregistration.k8s.io "bad" is invalid: {field}')
    assert field in [c["field"] for c in r.json()["details"]["causes"]]


def test_duplicate_webhook_names_are_invalid(api: httpx.Client, scoped: str, server: WebhookServer) -> None:
    hook = webhook("dup.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle)
    r = api.post(f"{GROUP_PATH}/validatingwebhookconfigurations",
                 json={"metadata": {"name": "dup"}, "webhooks": [hook, hook]})
    assert r.status_code == 422
    assert r.json()["details"]["causes"][0] == {"reason": "FieldValueDuplicate", "field": "webhooks[1].name",
                                                "message": 'Duplicate value: "dup.webhooks.mkpy.test"'}


def test_a_webhook_whose_certificate_the_ca_bundle_does_not_trust_is_a_failure_to_call(
        api: httpx.Client, scoped: str, server: WebhookServer, tmp_path: Path) -> None:
    other_ca = pki.ensure_ca(tmp_path, "other-ca")
    untrusted = base64.b64encode(other_ca.cert_path.read_bytes()).decode()
    probe = webhook("deny.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle)
    hook = webhook("tls.webhooks.mkpy.test", server.url("/deny"), scoped, untrusted)
    with configured(api, "ValidatingWebhookConfiguration", probe, hook):
        eventually(lambda: create_configmap(api, scoped, {"deny": "yes"}), lambda r: r.status_code == 403)
        r = create_configmap(api, scoped)
        assert r.status_code == 500
        assert r.json()["message"].endswith(": tls: failed to verify certificate: x509: certificate signed by "
                                            "unknown authority")


def test_a_scale_update_is_reviewed_as_a_scale(api: httpx.Client, scoped: str, server: WebhookServer) -> None:
    deployments = f"/apis/apps/v1/namespaces/{scoped}/deployments"
    labels = {"app": "web"}
    r = api.post(deployments, json={
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    assert r.status_code == 201, r.text
    rules = [{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
              "resources": ["deployments/scale"]}]
    hook = webhook("scale.webhooks.mkpy.test", server.url("/deny"), scoped, server.ca_bundle, rules=rules)

    def scale_reviews() -> list[dict[str, Any]]:
        return [review["request"] for review in server.reviews
                if review["request"].get("subResource") == "scale" and review["request"]["namespace"] == scoped]

    with configured(api, "ValidatingWebhookConfiguration", hook):
        eventually(lambda: api.patch(f"{deployments}/web/scale", json={"spec": {"replicas": 3}},
                                     headers={"Content-Type": "application/merge-patch+json"}),
                   lambda r: r.status_code == 200 and bool(scale_reviews()))
        review = scale_reviews()[-1]
        assert review["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        assert review["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
        assert review["object"]["spec"]["replicas"] == 3 and review["oldObject"]["kind"] == "Scale"
        scale = api.get(f"{deployments}/web/scale").json()
        scale["spec"]["replicas"] = 4
        assert api.put(f"{deployments}/web/scale", json=scale).status_code == 200
        assert scale_reviews()[-1]["object"]["spec"]["replicas"] == 4
    assert api.get(f"{deployments}/web").json()["spec"]["replicas"] == 4

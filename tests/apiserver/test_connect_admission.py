"""Admission on CONNECT: exec, attach and port-forward requests reach admission webhooks as kube sends them,
with their options (PodExecOptions, PodAttachOptions, PodPortForwardOptions) as the object.

No kubelet is needed: admission runs before the apiserver looks for the kubelet, so the pod is created
already bound to a node that does not exist, and an admitted request fails only after admission, when that
node is looked up.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.apiserver.webhookserver import WebhookServer, configured, eventually, scoped, server, webhook

__all__ = ["scoped", "server"]  # fixtures

NODE = "nowhere"
# subresource: (query, the options object the webhook must see)
CONNECTS = {
    "exec": ("command=ls&container=c&stdout=true",
             {"kind": "PodExecOptions", "apiVersion": "v1", "stdout": True, "container": "c", "command": ["ls"]}),
    "attach": ("container=c&stdin=false&stdout=true&stderr=1",
               {"kind": "PodAttachOptions", "apiVersion": "v1", "stdout": True, "stderr": True, "container": "c"}),
    "portforward": ("ports=8080,9090", {"kind": "PodPortForwardOptions", "apiVersion": "v1", "ports": [8080, 9090]}),
}


@pytest.fixture()
def pod(api: httpx.Client, scoped: str) -> str:
    """A pod bound to a node that does not exist, in the test's webhook-scoped namespace."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox"}]}}
    r = api.post(f"/api/v1/namespaces/{scoped}/pods", json=body)
    assert r.status_code == 201, r.text
    return "p"


def connect_hook(name: str, url: str, namespace: str, server: WebhookServer, operation: str = "CONNECT",
                 resources: tuple[str, ...] = ("pods/exec",)) -> dict[str, Any]:
    rules = [{"operations": [operation], "apiGroups": [""], "apiVersions": ["v1"], "resources": list(resources)}]
    return webhook(name, server.url(url), namespace, server.ca_bundle, rules=rules)


def connect(api: httpx.Client, namespace: str, pod: str, subresource: str) -> httpx.Response:
    return api.post(f"/api/v1/namespaces/{namespace}/pods/{pod}/{subresource}?{CONNECTS[subresource][0]}")


def reviews(server: WebhookServer, namespace: str, subresource: str) -> list[dict[str, Any]]:
    return [review["request"] for review in server.reviews
            if review["request"].get("namespace") == namespace and review["request"].get("subResource") == subresource]


def assert_node_not_found(r: httpx.Response) -> None:
    """The request got past admission and failed where the apiserver looks for the pod's kubelet."""
    assert r.status_code == 404, r.text
    assert r.json()["message"] == f'nodes "{NODE}" not found'


@pytest.mark.parametrize("subresource", list(CONNECTS))
def test_a_webhook_on_connect_denies_the_request_and_sees_its_options(
        api: httpx.Client, scoped: str, pod: str, server: WebhookServer, subresource: str) -> None:
    hook = connect_hook("connect.webhooks.mkpy.test", "/refuse", scoped, server, resources=(f"pods/{subresource}",))
    with configured(api, "ValidatingWebhookConfiguration", hook):
        r = eventually(lambda: connect(api, scoped, pod, subresource), lambda r: r.status_code == 403)
    status = r.json()
    assert (r.status_code, status["kind"], status["reason"]) == (403, "Status", "Forbidden"), r.text
    assert status["message"] == 'admission webhook "connect.webhooks.mkpy.test" denied the request: refused by the test'
    review = reviews(server, scoped, subresource)[-1]
    assert review["operation"] == "CONNECT"
    assert review["kind"] == {"group": "", "version": "v1", "kind": CONNECTS[subresource][1]["kind"]}
    assert review["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert (review["name"], review["namespace"], review["requestSubResource"]) == (pod, scoped, subresource)
    assert review["object"] == CONNECTS[subresource][1]
    assert review["oldObject"] is None and review.get("options") is None


def test_webhooks_see_connect_only_on_their_subresource_and_operation(
        api: httpx.Client, scoped: str, pod: str, server: WebhookServer) -> None:
    other_subresource = connect_hook("portforward.webhooks.mkpy.test", "/refuse", scoped, server,
                                     resources=("pods/portforward",))
    other_operation = connect_hook("create.webhooks.mkpy.test", "/refuse", scoped, server, operation="CREATE",
                                   resources=("pods", "pods/*"))
    with configured(api, "ValidatingWebhookConfiguration", other_subresource, other_operation):
        # the port-forward refusal tells when the configuration is in effect
        eventually(lambda: connect(api, scoped, pod, "portforward"), lambda r: r.status_code == 403)
        assert_node_not_found(connect(api, scoped, pod, "exec"))
    assert reviews(server, scoped, "exec") == []


def test_an_allowing_webhook_lets_the_request_go_on(api: httpx.Client, scoped: str, pod: str,
                                                    server: WebhookServer) -> None:
    hook = connect_hook("allow.webhooks.mkpy.test", "/allow", scoped, server)
    with configured(api, "ValidatingWebhookConfiguration", hook):
        r = eventually(lambda: connect(api, scoped, pod, "exec"), lambda r: bool(reviews(server, scoped, "exec")))
    assert_node_not_found(r)
    assert reviews(server, scoped, "exec")[-1]["object"]["command"] == ["ls"]


def test_ports_that_are_not_port_numbers_are_a_bad_request(api: httpx.Client, pod: str, scoped: str) -> None:
    r = api.post(f"/api/v1/namespaces/{scoped}/pods/{pod}/portforward?ports=80,http")
    assert (r.status_code, r.json()["reason"]) == (400, "BadRequest"), r.text
    assert r.json()["message"] == 'cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax'

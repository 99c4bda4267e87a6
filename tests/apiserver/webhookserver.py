"""A real HTTPS AdmissionReview server for the webhook tests, and helpers to configure webhooks against it.

Every configuration is scoped to the test's namespace (a namespaceSelector on a label only that namespace
carries, see `scoped`) and deleted when `configured` ends, because the control plane is shared with the rest
of the session.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import httpx
import pytest

from minikube_py.auth import pki

GROUP_PATH = "/apis/admissionregistration.k8s.io/v1"
SCOPE_LABEL = "webhooks.mkpy.test/namespace"
WAIT = 10.0


class WebhookServer:
    """An HTTPS AdmissionReview server: /mutate labels objects, /sidecar adds a container to the pod template
    of Deployments that have none called `sidecar` (with only a name and an image: defaulting the rest is
    the apiserver's job), /badtype patches a string into a Deployment's `spec.replicas`, /badfields replaces
    `metadata.managedFields` with an entry of an unknown operation, /deny refuses
    objects labelled deny=yes,
    /refuse refuses everything, /slow answers after 3 s, /garbage answers something that is not JSON; any
    other path allows. It records every review."""

    def __init__(self) -> None:
        self.pki_dir = Path(tempfile.mkdtemp(prefix="mkpy-webhook-"))  # removed by stop()
        ca = pki.ensure_ca(self.pki_dir, "webhook-ca")
        serving = pki.ensure_serving_cert(self.pki_dir, ca, "webhook", common_name="webhook",
                                          ip_addresses=[ip_address("127.0.0.1")], dns_names=["localhost"])
        self.ca_bundle = base64.b64encode(ca.cert_path.read_bytes()).decode()
        self.reviews: list[dict[str, Any]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(serving.cert_path), str(serving.key_path))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.pki_dir, ignore_errors=True)


def _answer(path: str, request: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    labels = ((request.get("object") or {}).get("metadata") or {}).get("labels")
    if path == "/mutate":
        op = ({"op": "add", "path": "/metadata/labels/mutated-by", "value": "webhook"} if labels else
              {"op": "add", "path": "/metadata/labels", "value": {"mutated-by": "webhook"}})
        response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps([op]).encode()).decode(),
                        warnings=["mutated by the test webhook"])
    elif path == "/sidecar":
        containers = request["object"]["spec"]["template"]["spec"]["containers"]
        if all(c["name"] != "sidecar" for c in containers):
            op = {"op": "add", "path": "/spec/template/spec/containers/-",
                  "value": {"name": "sidecar", "image": "busybox:1.36"}}
            response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps([op]).encode()).decode())
    elif path == "/badtype":
        op = {"op": "replace", "path": "/spec/replicas", "value": "three"}
        response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps([op]).encode()).decode())
    elif path == "/badfields":
        op = {"op": "add", "path": "/metadata/managedFields", "value": [{"manager": "hook", "operation": "Sideways"}]}
        response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps([op]).encode()).decode())
    elif path == "/deny" and (labels or {}).get("deny") == "yes":
        response.update(allowed=False, status={"code": 403, "message": "objects labelled deny=yes are refused"})
    elif path == "/refuse":
        response.update(allowed=False, status={"code": 403, "reason": "Forbidden", "message": "refused by the test"})
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def _handler(server: WebhookServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server.reviews.append(review)
            path, _, _ = self.path.partition("?")
            if path == "/slow":
                time.sleep(3)
            body = b"this is not json" if path == "/garbage" else json.dumps(_answer(path, review["request"])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the apiserver hangs up on /slow after its timeout
                self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def server() -> Iterator[WebhookServer]:
    s = WebhookServer()
    yield s
    s.stop()


@pytest.fixture()
def scoped(api: httpx.Client, namespace: str) -> str:
    """The test namespace, labelled so that only this test's webhooks select it."""
    r = api.patch(f"/api/v1/namespaces/{namespace}", json={"metadata": {"labels": {SCOPE_LABEL: namespace}}},
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    return namespace


def webhook(name: str, url: str, namespace: str, ca_bundle: str, *, resources: tuple[str, ...] = ("configmaps",),
            **changes: Any) -> dict[str, Any]:
    hook = {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": url, "caBundle": ca_bundle},
            "namespaceSelector": {"matchLabels": {SCOPE_LABEL: namespace}},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": list(resources)}]}
    hook.update(changes)
    return hook


@contextlib.contextmanager
def configured(api: httpx.Client, kind: str, *hooks: dict[str, Any]) -> Iterator[str]:
    plural = kind.lower() + "s"
    name = f"test-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(hooks)}
    r = api.post(f"{GROUP_PATH}/{plural}", json=body)
    assert r.status_code == 201, r.text
    try:
        yield name
    finally:
        api.delete(f"{GROUP_PATH}/{plural}/{name}")


def eventually(attempt: Callable[[], httpx.Response], done: Callable[[httpx.Response], bool]) -> httpx.Response:
    """Retry `attempt` (each under a fresh name) until the watch cache has the new configuration."""
    deadline = time.monotonic() + WAIT
    while True:
        r = attempt()
        if done(r) or time.monotonic() > deadline:
            return r
        time.sleep(0.1)

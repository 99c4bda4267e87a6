"""The kubelet server over TLS: client certificates and tokens authenticate, SubjectAccessReviews authorize."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from minikube_py.auth import pki
from minikube_py.kubelet.server import KubeletServer, uvicorn_config
from minikube_py.kubelet.server_auth import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, attributes
from tests.kubelet.server.backend import FakeNode, ServerThread
from tests.streaming.localruntime import LocalRuntime


class FakeAPI:
    """Answers TokenReviews (token "alice-token" is alice) and SubjectAccessReviews (only the apiserver's
    kubelet client, and only for nodes/proxy and nodes/stats), recording them."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []

    async def create(self, resource: Any, body: dict[str, Any]) -> dict[str, Any]:
        self.reviews.append(body)
        if resource is TOKEN_REVIEWS:
            ok = body["spec"]["token"] == "alice-token"
            return {"status": {"authenticated": ok, "user": {"username": "alice", "groups": ["devs"]}}}
        assert resource is SUBJECT_ACCESS_REVIEWS
        spec = body["spec"]
        allowed = spec["user"] == "kube-apiserver-kubelet-client" and \
            spec["resourceAttributes"]["subresource"] in ("proxy", "stats")
        return {"status": {"allowed": allowed}}


@pytest.fixture(scope="module")
def pki_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pki")


@pytest.fixture(scope="module")
def api() -> FakeAPI:
    return FakeAPI()


@pytest.fixture(scope="module")
def kubelet(pki_dir: Path, api: FakeAPI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    ca = pki.ensure_ca(pki_dir)
    serving = pki.ensure_serving_cert(pki_dir, ca, "kubelet", common_name="node-1",
                                      ip_addresses=pki.apiserver_sans("127.0.0.1", "10.96.0.0/12")[0],
                                      dns_names=["localhost"])
    runtime = LocalRuntime().start()
    server = KubeletServer(FakeNode(runtime, tmp_path_factory.mktemp("logs")), "node-1", api)  # type: ignore[arg-type]
    thread = ServerThread(lambda port: uvicorn_config(server, host="127.0.0.1", port=port,
                                                      cert_file=str(serving.cert_path),
                                                      key_file=str(serving.key_path),
                                                      client_ca_file=str(ca.cert_path))).start()
    yield f"https://127.0.0.1:{thread.port}"
    thread.stop()
    runtime.stop()


def client(pki_dir: Path, kubelet: str, user: str | None = None, **kwargs: Any) -> httpx.Client:
    ca = pki.ensure_ca(pki_dir)
    context = ssl.create_default_context(cafile=str(ca.cert_path))
    if user is not None:
        pair = pki.ensure_client_cert(pki_dir, ca, user, user=user, groups=["system:masters"])
        context.load_cert_chain(str(pair.cert_path), str(pair.key_path))
    return httpx.Client(base_url=kubelet, verify=context, timeout=10, **kwargs)


def test_the_apiservers_certificate_is_allowed_after_a_subject_access_review(pki_dir: Path, kubelet: str,
                                                                            api: FakeAPI) -> None:
    with client(pki_dir, kubelet, "kube-apiserver-kubelet-client") as c:
        assert c.get("/healthz").text == "ok"
        assert c.get("/stats/summary").status_code == 200
    spec = api.reviews[-1]["spec"]
    assert spec["user"] == "kube-apiserver-kubelet-client"
    assert spec["groups"] == ["system:masters", "system:authenticated"]
    assert spec["resourceAttributes"] == {"verb": "get", "resource": "nodes", "name": "node-1",
                                          "subresource": "stats"}


def test_no_credentials_is_401(pki_dir: Path, kubelet: str) -> None:
    with client(pki_dir, kubelet) as c:
        response = c.get("/pods")
    assert response.status_code == 401 and response.json()["reason"] == "Unauthorized"


def test_an_unknown_token_is_401_and_a_known_one_is_reviewed(pki_dir: Path, kubelet: str, api: FakeAPI) -> None:
    with client(pki_dir, kubelet, headers={"Authorization": "Bearer nope"}) as c:
        assert c.get("/pods").status_code == 401
    with client(pki_dir, kubelet, headers={"Authorization": "Bearer alice-token"}) as c:
        response = c.get("/pods")
    assert response.status_code == 403
    assert response.json()["message"] == "Forbidden (user=alice, verb=get, resource=nodes, subresource=proxy)"


def test_a_denied_certificate_user_is_403(pki_dir: Path, kubelet: str) -> None:
    with client(pki_dir, kubelet, "bob") as c:
        response = c.post("/exec/default/web/app?command=ls&stdout=true")
    assert response.status_code == 403
    assert response.json()["message"] == "Forbidden (user=bob, verb=create, resource=nodes, subresource=proxy)"


@pytest.mark.parametrize("method, path, verb, subresource", [
    ("GET", "/stats/summary", "get", "stats"),
    ("GET", "/metrics/cadvisor", "get", "metrics"),
    ("GET", "/logs/syslog", "get", "log"),
    ("GET", "/spec/", "get", "spec"),
    ("POST", "/checkpoint/ns/pod/c", "create", "checkpoint"),
    ("POST", "/exec/ns/pod/c", "create", "proxy"),
    ("GET", "/containerLogs/ns/pod/c", "get", "proxy"),
    ("DELETE", "/pods", "delete", "proxy"),
])
def test_request_attributes_follow_the_kubelets_table(method: str, path: str, verb: str, subresource: str) -> None:
    assert attributes("n1", method, path) == {"verb": verb, "resource": "nodes", "name": "n1",
                                              "subresource": subresource}

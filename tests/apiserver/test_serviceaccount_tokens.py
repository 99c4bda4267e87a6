"""Service-account tokens against a real apiserver: TokenRequest, using the tokens, TokenReview, revocation,
and every kind of bad credential (forged, expired, wrong audience, malformed, foreign or expired certs)."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from minikube_py.auth import pki
from minikube_py.auth.serviceaccount import TokenIssuer, load_signing_key
from tests.harness import SERVICE_ACCOUNT_ISSUER, ControlPlane

WAIT = 10.0  # seconds for a deletion to reach the watch cache the authenticator reads


def service_account(api: httpx.Client, namespace: str, name: str = "bot") -> dict[str, Any]:
    r = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json={"metadata": {"name": name}})
    assert r.status_code == 201, r.text
    return r.json()


def request_token(api: httpx.Client, namespace: str, name: str = "bot", **spec: Any) -> httpx.Response:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    return api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", json=body)


def token_for(api: httpx.Client, namespace: str, name: str = "bot", **spec: Any) -> str:
    r = request_token(api, namespace, name, **spec)
    assert r.status_code == 201, r.text
    return r.json()["status"]["token"]


def bearer(cp: ControlPlane, authorization: str | bytes) -> httpx.Client:
    return httpx.Client(base_url=cp.url, verify=cp.tls_context(with_admin_cert=False), timeout=30,
                        headers={"Authorization": authorization})


def whoami(cp: ControlPlane, authorization: str | bytes) -> httpx.Response:
    with bearer(cp, authorization) as client:
        return client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {WAIT}s: {what}")
        time.sleep(0.05)


def pod(api: httpx.Client, namespace: str, name: str, service_account_name: str = "bot") -> dict[str, Any]:
    body = {"metadata": {"name": name}, "spec": {"serviceAccountName": service_account_name,
                                                 "containers": [{"name": "c", "image": "nginx"}]}}
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def delete_now(api: httpx.Client, path: str) -> None:
    r = api.delete(path, params={"gracePeriodSeconds": "0"})
    assert r.status_code in (200, 202), r.text


# TokenRequest ---------------------------------------------------------------------------------------


def test_a_token_request_answers_a_token_that_authenticates_as_the_service_account(control_plane, api, namespace):
    sa = service_account(api, namespace)
    before = datetime.datetime.now(datetime.UTC)
    r = request_token(api, namespace)
    assert r.status_code == 201, r.text
    answer = r.json()
    assert (answer["kind"], answer["apiVersion"]) == ("TokenRequest", "authentication.k8s.io/v1")
    assert answer["spec"] == {"audiences": [SERVICE_ACCOUNT_ISSUER], "expirationSeconds": 3600}
    expires = datetime.datetime.fromisoformat(answer["status"]["expirationTimestamp"])
    assert abs((expires - before).total_seconds() - 3600) < 5
    token = answer["status"]["token"]
    info = whoami(control_plane, f"Bearer {token}").json()["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:{namespace}:bot"
    assert info["uid"] == sa["metadata"]["uid"]
    assert info["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]
    assert info["extra"]["authentication.kubernetes.io/credential-id"] == [f"JTI={jwt.decode(token, options={'verify_signature': False})['jti']}"]


def test_audiences_and_lifetime_are_the_requested_ones(control_plane, api, namespace):
    service_account(api, namespace)
    token = token_for(api, namespace, audiences=["vault"], expirationSeconds=700)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["aud"] == ["vault"] and claims["exp"] - claims["iat"] == 700
    r = whoami(control_plane, f"Bearer {token}")  # the apiserver is not "vault"
    assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"


def test_a_token_for_a_missing_service_account_is_not_found(api, namespace):
    r = request_token(api, namespace, "nope")
    assert r.status_code == 404 and r.json()["message"] == 'serviceaccounts "nope" not found'


@pytest.mark.parametrize("seconds,message", [
    (599, "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"),
    (2**32 + 1, "spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than "
                "2^32 seconds"),
])
def test_a_lifetime_out_of_range_is_invalid(api, namespace, seconds, message):
    service_account(api, namespace)
    r = request_token(api, namespace, expirationSeconds=seconds)
    assert r.status_code == 422, r.text
    assert r.json()["message"] == f'TokenRequest.authentication.k8s.io "" is invalid: {message}'


def test_a_token_request_naming_another_service_account_in_its_body_is_invalid(api, namespace):
    service_account(api, namespace)
    r = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/bot/token",
                 json={"metadata": {"name": "other"}, "spec": {}})
    assert r.status_code == 422 and "must match the service account name if specified" in r.json()["message"]


# bound tokens ---------------------------------------------------------------------------------------


def test_a_pod_bound_token_names_the_pod_and_dies_with_it(control_plane, api, namespace):
    service_account(api, namespace)
    web = pod(api, namespace, "web")
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": web["metadata"]["uid"]}
    token = token_for(api, namespace, boundObjectRef=ref)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["kubernetes.io"]["pod"] == {"name": "web", "uid": web["metadata"]["uid"]}
    extra = whoami(control_plane, f"Bearer {token}").json()["status"]["userInfo"]["extra"]
    assert extra["authentication.kubernetes.io/pod-name"] == ["web"]
    assert extra["authentication.kubernetes.io/pod-uid"] == [web["metadata"]["uid"]]
    delete_now(api, f"/api/v1/namespaces/{namespace}/pods/web")
    wait_until(lambda: whoami(control_plane, f"Bearer {token}").status_code == 401, "token of a deleted pod refused")
    pod(api, namespace, "web")  # the same name again is another pod
    assert whoami(control_plane, f"Bearer {token}").status_code == 401


def test_binding_to_a_missing_or_mismatched_object_is_refused_as_kube_does(api, namespace):
    service_account(api, namespace)
    service_account(api, namespace, "someone-else")
    other = pod(api, namespace, "other-sa", service_account_name="someone-else")
    web = pod(api, namespace, "web")
    cases = [
        ({"kind": "Pod", "apiVersion": "v1", "name": "ghost"}, 404, 'pods "ghost" not found'),
        ({"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "not-" + web["metadata"]["uid"]}, 409,
         f'Operation cannot be fulfilled on Pod "web": the UID in the bound object reference '
         f'(not-{web["metadata"]["uid"]}) does not match the UID in record. The object might have been deleted '
         "and then recreated"),
        ({"kind": "Pod", "apiVersion": "v1", "name": other["metadata"]["name"]}, 400,
         'cannot bind token for serviceaccount "bot" to pod running with different serviceaccount name.'),
        ({"kind": "Deployment", "apiVersion": "apps/v1", "name": "d"}, 400,
         "cannot bind token to object of type apps/v1, Kind=Deployment"),
        ({"kind": "Secret", "apiVersion": "v1", "name": "missing"}, 404, 'secrets "missing" not found'),
    ]
    for ref, code, message in cases:
        r = request_token(api, namespace, boundObjectRef=ref)
        assert (r.status_code, r.json()["message"]) == (code, message), ref


def test_deleting_the_service_account_revokes_its_tokens(control_plane, api, namespace):
    service_account(api, namespace)
    token = token_for(api, namespace)
    assert whoami(control_plane, f"Bearer {token}").status_code == 201
    delete_now(api, f"/api/v1/namespaces/{namespace}/serviceaccounts/bot")
    wait_until(lambda: whoami(control_plane, f"Bearer {token}").status_code == 401, "token of a deleted SA refused")


# TokenReview ----------------------------------------------------------------------------------------


def review(api: httpx.Client, spec: dict[str, Any]) -> httpx.Response:
    return api.post("/apis/authentication.k8s.io/v1/tokenreviews",
                    json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec})


def test_token_review_says_who_a_token_belongs_to_and_for_which_audiences(api, namespace):
    sa = service_account(api, namespace)
    token = token_for(api, namespace, audiences=["vault", SERVICE_ACCOUNT_ISSUER])
    r = review(api, {"token": token})
    assert r.status_code == 201, r.text
    status = r.json()["status"]
    assert status["authenticated"] is True and status["audiences"] == [SERVICE_ACCOUNT_ISSUER]
    assert status["user"]["username"] == f"system:serviceaccount:{namespace}:bot"
    assert status["user"]["uid"] == sa["metadata"]["uid"]
    assert "system:authenticated" in status["user"]["groups"]
    assert review(api, {"token": token, "audiences": ["vault"]}).json()["status"]["audiences"] == ["vault"]
    refused = review(api, {"token": token, "audiences": ["elsewhere"]}).json()["status"]
    assert "authenticated" not in refused and refused["user"] == {}
    assert refused["error"] == f'token audiences ["vault" "{SERVICE_ACCOUNT_ISSUER}"] is invalid for the target ' \
                               'audiences ["elsewhere"]'


def test_token_review_of_garbage_is_unauthenticated_and_of_nothing_a_bad_request(api):
    assert review(api, {"token": "garbage"}).json()["status"] == {"user": {}}
    r = review(api, {})
    assert r.status_code == 400 and r.json()["message"] == "token is required for TokenReview in authentication"


# bad credentials ------------------------------------------------------------------------------------


def claims(namespace: str, sa: dict[str, Any], **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": SERVICE_ACCOUNT_ISSUER, "aud": [SERVICE_ACCOUNT_ISSUER], "iat": now, "nbf": now,
            "exp": now + 600, "sub": f"system:serviceaccount:{namespace}:bot", "jti": str(uuid.uuid4()),
            "kubernetes.io": {"namespace": namespace,
                              "serviceaccount": {"name": "bot", "uid": sa["metadata"]["uid"]}}}
    return {**base, **changes}


def test_forged_expired_and_wrong_audience_tokens_are_unauthorized(control_plane, api, namespace):
    sa = service_account(api, namespace)
    cluster_key = load_signing_key(control_plane.sa_key)
    now = int(time.time())
    good = jwt.encode(claims(namespace, sa), cluster_key, algorithm="ES256")  # mkpy's key is ECDSA P-256
    assert whoami(control_plane, f"Bearer {good}").status_code == 201  # the control: our forging is right
    bad = {
        "forged": jwt.encode(claims(namespace, sa), ec.generate_private_key(ec.SECP256R1()), algorithm="ES256"),
        "forged with RSA": jwt.encode(claims(namespace, sa), rsa.generate_private_key(public_exponent=65537,
                                                                                     key_size=2048),
                                      algorithm="RS256"),
        "expired": jwt.encode(claims(namespace, sa, iat=now - 7200, nbf=now - 7200, exp=now - 3600), cluster_key,
                              algorithm="ES256"),
        "wrong audience": jwt.encode(claims(namespace, sa, aud=["vault"]), cluster_key, algorithm="ES256"),
        "unsigned": jwt.encode(claims(namespace, sa), None, algorithm="none"),
        "other issuer": TokenIssuer(cluster_key, "https://evil").issue(sa, [SERVICE_ACCOUNT_ISSUER], 600)[0],
    }
    for what, token in bad.items():
        r = whoami(control_plane, f"Bearer {token}")
        assert (r.status_code, r.json()["reason"]) == (401, "Unauthorized"), what


@pytest.mark.parametrize("authorization", ["Bearer", "bearer not.a.jwt", "Bearer a b", "Bearer e30.e30.e30",
                                           "Bearer eyJhbGciOiJSUzI1NiJ9.e30.", "Bearer \u00e9t\u00e9"])
def test_malformed_bearer_tokens_are_unauthorized(control_plane, authorization):
    r = whoami(control_plane, authorization.encode("utf-8"))
    assert (r.status_code, r.json()["reason"]) == (401, "Unauthorized")


def test_an_authorization_header_of_another_scheme_carries_no_credentials(control_plane):
    r = whoami(control_plane, "Basic YWxpY2U6c2VjcmV0")  # kube has no basic auth: the request is anonymous
    # answered (AlwaysAllow) or forbidden (RBAC grants anonymous no reviews), but as system:anonymous either way
    assert r.status_code in (201, 403) and "system:anonymous" in r.text


def test_client_certificates_from_another_ca_or_expired_are_refused_by_tls(control_plane, tmp_path):
    other_ca = pki.ensure_ca(tmp_path / "other")
    foreign = pki.ensure_client_cert(tmp_path / "other", other_ca, "eve", user="eve", groups=["system:masters"])
    cluster_ca = pki.ensure_ca(control_plane.workdir / "pki")
    long_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=400)
    expired = pki.ensure_client_cert(tmp_path / "old", cluster_ca, "old", user="old", now=long_ago)
    for pair in (foreign, expired):
        context = control_plane.tls_context(with_admin_cert=False)
        context.load_cert_chain(str(pair.cert_path), str(pair.key_path))
        with httpx.Client(base_url=control_plane.url, verify=context, timeout=10) as client:
            with pytest.raises(httpx.TransportError):
                client.get("/api/v1/namespaces")

"""Authentication with a static token file, next to client certificates (kube's --token-auth-file)."""

from __future__ import annotations

import httpx

from tests.harness import ControlPlane


def test_static_tokens_authenticate_and_unknown_ones_do_not(tmp_path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('s3cret,alice,uid-1,"devs,ops"\n')
    # authentication alone is under test here: every authenticated user may do anything
    cp = ControlPlane(extra_args=(f"--token-auth-file={tokens}", "--authorization-mode=AlwaysAllow")).start()
    try:
        context = cp.tls_context(with_admin_cert=False)
        with httpx.Client(base_url=cp.url, verify=context, headers={"Authorization": "Bearer s3cret"}) as alice:
            assert alice.get("/api/v1/namespaces").status_code == 200
        with httpx.Client(base_url=cp.url, verify=context, headers={"Authorization": "Bearer wrong"}) as nobody:
            r = nobody.get("/api/v1/namespaces")
            assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
    finally:
        cp.stop()


def test_without_anonymous_auth_a_request_without_credentials_is_unauthorized(tmp_path) -> None:
    cp = ControlPlane(extra_args=("--no-anonymous-auth",)).start()
    try:
        with httpx.Client(base_url=cp.url, verify=cp.tls_context(with_admin_cert=False)) as anonymous:
            for path in ("/api/v1/namespaces", "/healthz", "/version"):
                r = anonymous.get(path)
                assert r.status_code == 401 and r.json()["reason"] == "Unauthorized", path
        with cp.client() as admin:
            assert admin.get("/api/v1/namespaces").status_code == 200
    finally:
        cp.stop()

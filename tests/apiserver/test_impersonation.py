"""Impersonation headers against a real apiserver: who the request runs as, and who may ask for that."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.harness import ControlPlane

SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def whoami(client: httpx.Client, headers: list[tuple[str, str]]) -> httpx.Response:
    return client.post(SSR, json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                       headers=httpx.Headers(headers))


def user_info(client: httpx.Client, *headers: tuple[str, str]) -> dict[str, Any]:
    r = whoami(client, list(headers))
    assert r.status_code == 201, r.text
    return r.json()["status"]["userInfo"]


def test_the_admin_acts_as_a_user_with_groups_uid_and_extra(api):
    info = user_info(api, ("Impersonate-User", "alice"), ("Impersonate-Group", "devs"),
                     ("Impersonate-Group", "ops"), ("Impersonate-Uid", "u-1"),
                     ("Impersonate-Extra-Example.com%2Fteam", "blue"), ("Impersonate-Extra-Example.com%2Fteam", "red"))
    assert info == {"username": "alice", "uid": "u-1", "groups": ["devs", "ops", "system:authenticated"],
                    "extra": {"example.com/team": ["blue", "red"]}}


def test_the_admin_acts_as_a_service_account_with_its_groups(api):
    info = user_info(api, ("Impersonate-User", "system:serviceaccount:kube-system:bot"))
    assert info == {"username": "system:serviceaccount:kube-system:bot",
                    "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                               "system:authenticated"]}


@pytest.mark.parametrize("header", ["Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes"])
def test_impersonating_without_a_user_is_a_bad_request(api, header):
    r = whoami(api, [(header, "x")])
    assert (r.status_code, r.json()["reason"]) == (400, "BadRequest")
    assert "without impersonating a user" in r.json()["message"]


@pytest.fixture(scope="module")
def deny_all(tmp_path_factory):
    """A control plane where only system:masters may do anything, and `bob` has a static token."""
    tokens = tmp_path_factory.mktemp("impersonation") / "tokens.csv"
    tokens.write_text("bob-token,bob,bob-uid\n")
    cp = ControlPlane(extra_args=(f"--token-auth-file={tokens}", "--authorization-mode=AlwaysDeny")).start()
    try:
        yield cp
    finally:
        cp.stop()


def test_impersonation_without_permission_is_forbidden_in_kubes_words(deny_all):
    with httpx.Client(base_url=deny_all.url, verify=deny_all.tls_context(with_admin_cert=False), timeout=30,
                      headers={"Authorization": "Bearer bob-token"}) as bob:
        r = whoami(bob, [("Impersonate-User", "alice")])
        assert (r.status_code, r.json()["reason"]) == (403, "Forbidden")
        assert r.json()["message"] == ('users "alice" is forbidden: User "bob" cannot impersonate resource "users" '
                                       'in API group "" at the cluster scope: Everything is forbidden.')
        r = whoami(bob, [("Impersonate-User", "system:serviceaccount:ns1:robot")])
        assert r.json()["message"].startswith('serviceaccounts "robot" is forbidden: User "bob" cannot impersonate '
                                              'resource "serviceaccounts" in API group "" in the namespace "ns1"')


def test_an_impersonated_user_is_authorized_as_itself_not_as_the_impersonator(deny_all):
    with deny_all.client() as admin:  # system:masters may impersonate, but alice may do nothing here
        r = admin.get("/api/v1/namespaces", headers={"Impersonate-User": "alice"})
        assert r.status_code == 403 and 'User "alice" cannot list resource "namespaces"' in r.json()["message"]
        r = admin.get("/api/v1/namespaces",
                      headers=[("Impersonate-User", "alice"), ("Impersonate-Group", "system:masters")])
        assert r.status_code == 200

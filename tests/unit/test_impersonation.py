"""Impersonation (apiserver/impersonation.py): which headers ask for what, which checks run, who results.

The middleware runs here on hand-made ASGI scopes with a recording authorizer; no apiserver process.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from minikube_py.api.errors import APIError
from minikube_py.apiserver.impersonation import (
    ImpersonationMiddleware,
    checks,
    impersonated_user,
    parse_headers,
)
from minikube_py.auth.authn import UserInfo
from minikube_py.auth.authorizer import Attributes, Decision

BOB = UserInfo("bob", groups=("ops", "system:authenticated"))


def headers(*pairs: tuple[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode(), value.encode()) for name, value in pairs]


def test_no_impersonation_headers_ask_for_nothing():
    assert not parse_headers(headers(("Authorization", "Bearer x"), ("Accept", "application/json")))


def test_headers_are_read_as_kube_reads_them():
    request = parse_headers(headers(
        ("Impersonate-User", "alice"), ("Impersonate-User", "ignored"), ("Impersonate-Group", "devs"),
        ("Impersonate-Group", "a,b"), ("Impersonate-Uid", "42"), ("Impersonate-Extra-Scopes", "view"),
        ("Impersonate-Extra-Scopes", "edit"), ("Impersonate-Extra-Example.com%2fteam", "x")))
    assert request.user == "alice" and request.groups == ("devs", "a,b") and request.uid == "42"
    assert request.extra == (("scopes", "view"), ("scopes", "edit"), ("example.com/team", "x"))


@pytest.mark.parametrize("header", ["Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes"])
def test_groups_uid_or_extra_without_a_user_are_a_bad_request(header):
    with pytest.raises(APIError) as caught:
        parse_headers(headers((header, "devs")))
    assert caught.value.code == 400 and "without impersonating a user" in caught.value.message


def test_every_thing_asked_for_is_checked_with_the_impersonate_verb():
    request = parse_headers(headers(("Impersonate-User", "alice"), ("Impersonate-Group", "devs"),
                                    ("Impersonate-Extra-Scopes", "view"), ("Impersonate-Uid", "42")))
    found = [(a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name) for a in checks(BOB, request)]
    assert found == [
        ("impersonate", "", "users", "", "", "alice"),
        ("impersonate", "", "groups", "", "", "devs"),
        ("impersonate", "authentication.k8s.io", "userextras", "scopes", "", "view"),
        ("impersonate", "authentication.k8s.io", "uids", "", "", "42"),
    ]


def test_a_service_account_is_checked_as_one_and_gets_its_groups():
    request = parse_headers(headers(("Impersonate-User", "system:serviceaccount:ns:bot")))
    (check,) = checks(BOB, request)
    assert (check.resource, check.namespace, check.name) == ("serviceaccounts", "ns", "bot")
    user = impersonated_user(request)
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")


@pytest.mark.parametrize("user,groups,expected", [
    ("alice", [], ("system:authenticated",)),
    ("alice", ["devs"], ("devs", "system:authenticated")),
    ("alice", ["system:unauthenticated"], ("system:unauthenticated",)),
    ("system:anonymous", [], ("system:unauthenticated",)),
    ("system:serviceaccount:ns:bot", ["devs"], ("devs", "system:authenticated")),
])
def test_the_impersonated_user_gets_the_authenticated_group_as_in_kube(user, groups, expected):
    pairs = [("Impersonate-User", user), *(("Impersonate-Group", g) for g in groups)]
    assert impersonated_user(parse_headers(headers(*pairs))).groups == expected


class RecordingAuthorizer:
    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.asked: list[Attributes] = []

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        self.asked.append(attributes)
        if attributes.resource in self.allowed:
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""


def run(middleware_allowed: set[str], *pairs: tuple[str, str]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Call the middleware; the scope the next app saw (None if not called) and the messages sent."""
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.update(scope)

    server = type("Server", (), {"authorizer": RecordingAuthorizer(middleware_allowed)})()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/api/v1/pods", "headers": headers(*pairs), "user": BOB}
    asyncio.run(ImpersonationMiddleware(app, server)(scope, receive, send))
    return (seen or None), sent


def test_an_allowed_impersonation_switches_the_user_and_keeps_the_original():
    seen, _ = run({"users", "groups"}, ("Impersonate-User", "alice"), ("Impersonate-Group", "devs"),
                  ("Accept", "application/json"))
    assert seen is not None
    assert seen["user"] == UserInfo("alice", groups=("devs", "system:authenticated"))
    assert seen["mkpy.original_user"] == BOB
    assert seen["headers"] == headers(("Accept", "application/json"))


def test_a_refused_impersonation_is_a_403_in_kubes_words():
    seen, sent = run({"users"}, ("Impersonate-User", "alice"), ("Impersonate-Group", "admins"))
    assert seen is None
    assert sent[0]["status"] == 403
    status = orjson.loads(sent[1]["body"])
    assert status["message"] == ('groups "admins" is forbidden: User "bob" cannot impersonate resource "groups" '
                                 'in API group "" at the cluster scope')
    assert status["reason"] == "Forbidden"


def test_a_request_without_impersonation_passes_untouched():
    seen, _ = run(set(), ("Accept", "application/json"))
    assert seen is not None and seen["user"] == BOB and "mkpy.original_user" not in seen

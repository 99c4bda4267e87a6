"""Authentication: client certificates, static tokens, and the chain that combines them."""

from __future__ import annotations

import pytest

from minikube_py.auth.authn import (
    Authenticator,
    StaticTokenAuthenticator,
    TokenFileError,
    UserInfo,
    bearer_token,
    parse_token_file,
)


def peercert(cn: str | None = None, *orgs: str) -> dict:
    """What ssl's getpeercert() returns for a verified certificate with this subject."""
    subject = [(("countryName", "DE"),)]
    subject += [(("organizationName", org),) for org in orgs]
    if cn is not None:
        subject.append((("commonName", cn),))
    return {"subject": tuple(subject), "issuer": ((("commonName", "kubernetes"),),), "version": 3}


def token_file(tmp_path, text: str):
    path = tmp_path / "tokens.csv"
    path.write_text(text)
    return path


def chain(tmp_path, text='secret,alice,1001,"devs,ops"\n') -> Authenticator:
    return Authenticator.from_token_auth_file(str(token_file(tmp_path, text)))


@pytest.mark.parametrize("cert, user", [
    pytest.param(peercert("kubernetes-admin", "system:masters"),
                 UserInfo("kubernetes-admin", groups=("system:masters", "system:authenticated")), id="admin"),
    pytest.param(peercert("system:node:n1", "system:nodes"),
                 UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated")), id="node"),
    pytest.param(peercert("carol", "a", "b"), UserInfo("carol", groups=("a", "b", "system:authenticated")),
                 id="every O is a group"),
    pytest.param(peercert("dave"), UserInfo("dave", groups=("system:authenticated",)), id="no groups"),
    pytest.param(peercert(None, "devs"), None, id="no CN is nobody"),
    pytest.param({}, None, id="an unverified certificate is nobody"),
    pytest.param(None, None, id="no certificate is nobody"),
])
def test_a_client_certificate_names_the_user(cert, user):
    assert Authenticator().authenticate(cert, None) == user


def test_a_multi_valued_rdn_is_read_attribute_by_attribute():
    cert = {"subject": ((("organizationName", "g1"), ("commonName", "erin")),)}
    assert Authenticator().authenticate(cert, None) == UserInfo("erin", groups=("g1", "system:authenticated"))


@pytest.mark.parametrize("header, token", [
    ("Bearer abc", "abc"),
    ("bearer abc", "abc"),
    ("  Bearer abc  ", "abc"),
    ("Bearer", ""),  # a bearer header with an empty token: invalid (401), not anonymous
    ("Bearer ", ""),
    ("Bearer  abc", ""),  # split on single spaces, as kube does
    ("Basic dXNlcjpwYXNz", None),
    ("", None),
    (None, None),
])
def test_bearer_tokens_are_read_from_the_authorization_header(header, token):
    assert bearer_token(header) == token


@pytest.mark.parametrize("header, user", [
    (None, "system:anonymous"),
    ("Basic dXNlcjpwYXNz", "system:anonymous"),
    ("Bearer", None),
    ("Bearer  abc", None),
    ("Bearer unknown", None),
])
def test_only_requests_without_a_bearer_token_are_anonymous(header, user):
    found = Authenticator(anonymous=True).authenticate(None, header)
    assert (found.username if found else None) == user


def test_a_known_token_is_its_user_with_uid_and_groups(tmp_path):
    user = chain(tmp_path).authenticate(None, "Bearer secret")
    assert user == UserInfo("alice", uid="1001", groups=("devs", "ops", "system:authenticated"))


@pytest.mark.parametrize("header", ["Bearer wrong", "Bearer secretx", "Basic c2VjcmV0", None])
def test_a_request_without_recognised_credentials_is_unauthenticated(tmp_path, header):
    assert chain(tmp_path).authenticate(None, header) is None


def test_a_certificate_wins_over_a_token(tmp_path):
    user = chain(tmp_path).authenticate(peercert("kubernetes-admin", "system:masters"), "Bearer secret")
    assert user is not None and user.username == "kubernetes-admin"


def test_a_wrong_token_next_to_a_valid_certificate_is_still_the_certificate_user(tmp_path):
    user = chain(tmp_path).authenticate(peercert("bob"), "Bearer wrong")
    assert user is not None and user.username == "bob"


def test_system_authenticated_is_not_added_twice(tmp_path):
    user = chain(tmp_path, 't,u,1,"system:authenticated"\n').authenticate(None, "Bearer t")
    assert user is not None and user.groups == ("system:authenticated",)


def test_token_authenticators_are_tried_in_order():
    first = StaticTokenAuthenticator({"t": UserInfo("first")})
    second = StaticTokenAuthenticator({"t": UserInfo("second"), "u": UserInfo("only-second")})
    authenticator = Authenticator([first, second])
    assert authenticator.authenticate(None, "Bearer t").username == "first"
    assert authenticator.authenticate(None, "Bearer u").username == "only-second"


def test_no_token_file_means_certificates_only():
    assert Authenticator.from_token_auth_file("").authenticate(None, "Bearer anything") is None


@pytest.mark.parametrize("text, users", [
    pytest.param("t1,alice,1\n", {"t1": UserInfo("alice", uid="1")}, id="three columns"),
    pytest.param('t1,alice,1,"a,b"\n', {"t1": UserInfo("alice", uid="1", groups=("a", "b"))}, id="groups"),
    pytest.param("t1,alice,1,a\n", {"t1": UserInfo("alice", uid="1", groups=("a",))}, id="one group unquoted"),
    pytest.param('t1, alice, 1, " a , b "\n', {"t1": UserInfo("alice", uid="1", groups=("a", "b"))},
                 id="spaces are trimmed"),
    pytest.param("t1,alice,,\n", {"t1": UserInfo("alice")}, id="empty uid and groups"),
    pytest.param("\nt1,alice,1\n\n", {"t1": UserInfo("alice", uid="1")}, id="blank lines skipped"),
    pytest.param("t1,alice,1,a,extra\n", {"t1": UserInfo("alice", uid="1", groups=("a",))},
                 id="columns after the fourth ignored"),
    pytest.param("", {}, id="empty file"),
])
def test_token_file_lines_are_parsed_like_kube(tmp_path, text, users):
    assert parse_token_file(token_file(tmp_path, text)) == users


@pytest.mark.parametrize("text, message", [
    pytest.param("t1,alice\n", r"tokens.csv:1: expected at least 3 columns", id="too few columns"),
    pytest.param("t1,alice,1\n,bob,2\n", r"tokens.csv:2: empty token", id="empty token"),
    pytest.param("t1,,1\n", r"tokens.csv:1: empty user name", id="empty user"),
    pytest.param("t1,alice,1\nt1,bob,2\n", r"tokens.csv:2: duplicate token", id="duplicate token"),
])
def test_a_malformed_token_file_is_an_error_naming_the_line(tmp_path, text, message):
    with pytest.raises(TokenFileError, match=message):
        parse_token_file(token_file(tmp_path, text))


def test_a_missing_token_file_is_an_error(tmp_path):
    with pytest.raises(TokenFileError, match="cannot read token file"):
        StaticTokenAuthenticator.from_file(tmp_path / "absent.csv")


def test_repeated_requests_with_one_certificate_reuse_the_same_user():
    authenticator = Authenticator()
    first = authenticator.authenticate(peercert("kubernetes-admin", "system:masters"), None)
    assert authenticator.authenticate(peercert("kubernetes-admin", "system:masters"), None) is first


def test_a_token_that_authenticated_is_trusted_for_ten_seconds_and_a_failure_is_never_cached() -> None:
    class Counting:
        def __init__(self) -> None:
            self.asked = 0
            self.users = {"good": UserInfo("robot")}

        def authenticate_token(self, token: str) -> UserInfo | None:
            self.asked += 1
            return self.users.get(token)

    now = [100.0]
    tokens = Counting()
    chain = Authenticator([tokens], clock=lambda: now[0])
    for _ in range(3):
        assert chain.authenticate(None, "Bearer good") == UserInfo("robot", groups=("system:authenticated",))
    assert tokens.asked == 1
    now[0] += 10.0
    del tokens.users["good"]  # revoked: noticed once the cached success has expired
    assert chain.authenticate(None, "Bearer good") is None
    assert chain.authenticate(None, "Bearer good") is None
    assert tokens.asked == 3

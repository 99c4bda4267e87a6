"""Service-account tokens (auth/serviceaccount.py): kube's JWT shape, and every way a token is refused.

No apiserver here: objects come from a dict, time from an injected clock.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import jwt
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from minikube_py.auth import pki
from minikube_py.auth.serviceaccount import (
    BoundObject,
    KeyFileError,
    ServiceAccountTokenAuthenticator,
    TokenIssuer,
    key_id,
    load_public_keys,
    load_signing_key,
    split_username,
)

ISSUER = "https://kubernetes.default.svc.cluster.local"
NOW = 1_800_000_000.0


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Objects:
    """The cluster as the authenticator reads it: (resource, namespace, name) → object."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}

    def put(self, resource: str, namespace: str, name: str, uid: str, **extra: Any) -> dict[str, Any]:
        obj = {"metadata": {"name": name, "namespace": namespace, "uid": uid, **extra}}
        self.objects[(resource, namespace, name)] = obj
        return obj

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        assert group == ""
        return self.objects.get((resource, namespace, name))


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def world(key):
    objects, clock = Objects(), Clock()
    sa = objects.put("serviceaccounts", "ns", "bot", "sa-uid")
    issuer = TokenIssuer(key, ISSUER, clock=clock)
    authn = ServiceAccountTokenAuthenticator([key.public_key()], ISSUER, [ISSUER], objects, clock=clock)
    return objects, clock, sa, issuer, authn


def claims_of(token: str) -> dict[str, Any]:
    return jwt.decode(token, options={"verify_signature": False})


def test_an_issued_token_has_kubes_header_and_claims(world, key):
    _, _, sa, issuer, _ = world
    token, expires = issuer.issue(sa, ["api", "vault"], 600)
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
    assert jwt.get_unverified_header(token) == {"alg": "RS256", "kid": kid}
    claims = claims_of(token)
    assert set(claims) == {"aud", "exp", "iat", "iss", "jti", "kubernetes.io", "nbf", "sub"}
    assert claims["aud"] == ["api", "vault"] and claims["iss"] == ISSUER
    assert claims["iat"] == claims["nbf"] == NOW and claims["exp"] == expires == NOW + 600
    assert claims["sub"] == "system:serviceaccount:ns:bot"
    assert claims["kubernetes.io"] == {"namespace": "ns", "serviceaccount": {"name": "bot", "uid": "sa-uid"}}


def test_a_valid_token_authenticates_as_its_service_account(world):
    _, _, sa, issuer, authn = world
    token, _ = issuer.issue(sa, [ISSUER], 3600)
    user = authn.authenticate_token(token)
    assert user is not None
    assert (user.username, user.uid) == ("system:serviceaccount:ns:bot", "sa-uid")
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns")
    assert user.extra == {"authentication.kubernetes.io/credential-id": (f"JTI={claims_of(token)['jti']}",)}


def test_a_pod_bound_token_names_the_pod_and_its_node(world):
    objects, _, sa, issuer, authn = world
    objects.put("pods", "ns", "web", "pod-uid")
    objects.put("nodes", "", "n1", "node-uid")
    token, _ = issuer.issue(sa, [ISSUER], 3600, [BoundObject("Pod", "web", "pod-uid"),
                                                 BoundObject("Node", "n1", "node-uid")])
    assert claims_of(token)["kubernetes.io"]["pod"] == {"name": "web", "uid": "pod-uid"}
    user = authn.authenticate_token(token)
    assert user is not None and user.extra["authentication.kubernetes.io/pod-name"] == ("web",)
    assert user.extra["authentication.kubernetes.io/pod-uid"] == ("pod-uid",)
    assert user.extra["authentication.kubernetes.io/node-name"] == ("n1",)


def test_a_token_signed_by_another_key_is_refused(world):
    _, _, sa, _, authn = world
    forger = TokenIssuer(rsa.generate_private_key(public_exponent=65537, key_size=2048), ISSUER, clock=lambda: NOW)
    token, _ = forger.issue(sa, [ISSUER], 3600)
    result = authn.review(token)
    assert result is not None and result.user is None
    assert result.error == "go-jose/go-jose: error in cryptographic primitive"


@pytest.mark.parametrize("algorithm,secret", [("HS256", "x" * 32), ("none", None)])
def test_a_token_with_a_symmetric_or_no_signature_is_refused(world, algorithm, secret):
    _, _, sa, issuer, authn = world
    claims = claims_of(issuer.issue(sa, [ISSUER], 3600)[0])
    token = jwt.encode(claims, secret, algorithm=algorithm)
    assert authn.authenticate_token(token) is None


@pytest.mark.parametrize("offset,error", [
    (3600 + 61, "service account token has expired"),
    (3600 + 59, ""),  # go-jose's one-minute leeway
    (-61, "service account token is not valid yet"),
])
def test_the_validity_window_is_enforced_with_a_minute_of_leeway(world, offset, error):
    _, clock, sa, issuer, authn = world
    token, _ = issuer.issue(sa, [ISSUER], 3600)
    clock.now = NOW + offset
    result = authn.review(token)
    assert result is not None and result.error == error
    assert (result.user is not None) == (not error)


def test_a_token_for_another_audience_is_refused_with_kubes_message(world):
    _, _, sa, issuer, authn = world
    token, _ = issuer.issue(sa, ["vault", "other"], 3600)
    result = authn.review(token)
    assert result is not None and result.user is None
    assert result.error == f'token audiences ["vault" "other"] is invalid for the target audiences ["{ISSUER}"]'
    accepted = authn.review(token, ["vault"])
    assert accepted is not None and accepted.user is not None and accepted.audiences == ("vault",)


def test_a_token_without_audiences_is_refused(world):
    _, _, sa, issuer, authn = world
    result = authn.review(issuer.issue(sa, [], 3600)[0])
    assert result is not None and result.error == "token has no audiences"


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.bm90LWpzb24.c2ln", "Bearer x y"])
def test_malformed_tokens_are_not_ours(world, token):
    assert world[4].review(token) is None


def test_a_token_of_another_issuer_is_left_to_other_authenticators(world, key):
    _, _, sa, _, authn = world
    token, _ = TokenIssuer(key, "https://elsewhere", clock=lambda: NOW).issue(sa, [ISSUER], 3600)
    assert authn.review(token) is None


def test_deleting_or_recreating_the_service_account_revokes_its_tokens(world):
    objects, _, sa, issuer, authn = world
    token, _ = issuer.issue(sa, [ISSUER], 3600)
    objects.put("serviceaccounts", "ns", "bot", "new-uid")
    assert authn.review(token).error == "service account UID (new-uid) does not match claim (sa-uid)"
    del objects.objects[("serviceaccounts", "ns", "bot")]
    assert authn.review(token).error == "service account ns/bot has been deleted"


def test_deleting_or_recreating_the_bound_pod_revokes_the_token(world):
    objects, clock, sa, issuer, authn = world
    objects.put("pods", "ns", "web", "pod-uid")
    token, _ = issuer.issue(sa, [ISSUER], 3600, [BoundObject("Pod", "web", "pod-uid")])
    objects.put("pods", "ns", "web", "pod-uid", deletionTimestamp="2027-01-15T08:00:00Z")  # = NOW
    clock.now = NOW + 30  # a pod shutting down still vouches for its tokens for a minute
    assert authn.review(token).user is not None
    clock.now += 120
    assert authn.review(token).error == "pod ns/web has been deleted"
    objects.put("pods", "ns", "web", "other-uid")
    assert authn.review(token).error == "pod UID (other-uid) does not match claim (pod-uid)"
    del objects.objects[("pods", "ns", "web")]
    assert authn.review(token).error == "pod ns/web has been deleted"


def test_deleting_the_bound_secret_revokes_the_token(world):
    objects, _, sa, issuer, authn = world
    objects.put("secrets", "ns", "s", "secret-uid")
    token, _ = issuer.issue(sa, [ISSUER], 3600, [BoundObject("Secret", "s", "secret-uid")])
    assert authn.authenticate_token(token) is not None
    del objects.objects[("secrets", "ns", "s")]
    assert authn.review(token).error == "secret ns/s has been deleted"


@pytest.mark.parametrize("username,expected", [
    ("system:serviceaccount:ns:bot", ("ns", "bot")),
    ("system:serviceaccount:ns:bot.v2", ("ns", "bot.v2")),
    ("system:serviceaccount:ns", None),
    ("system:serviceaccount:ns:bot:x", None),
    ("system:serviceaccount:NS:bot", None),
    ("alice", None),
])
def test_service_account_user_names_split_as_kube_splits_them(username, expected):
    assert split_username(username) == expected


def test_verification_keys_load_from_public_keys_private_keys_and_certificates(tmp_path, key):
    ca = pki.ensure_ca(tmp_path)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "keys.pem").write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        + ec_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())
        + ca.cert.public_bytes(serialization.Encoding.PEM))
    keys = load_public_keys(tmp_path / "keys.pem")
    assert [key_id(k) for k in keys] == [key_id(key.public_key()), key_id(ec_key.public_key()),
                                         key_id(ca.cert.public_key())]


@pytest.mark.parametrize("content", [b"", b"not pem", b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"])
def test_a_key_file_without_a_usable_key_is_a_clear_error(tmp_path, content):
    path = tmp_path / "sa.pub"
    path.write_bytes(content)
    with pytest.raises(KeyFileError, match="sa.pub"):
        load_public_keys(path)
    with pytest.raises(KeyFileError, match="sa.pub"):
        load_signing_key(path)


def test_the_cluster_key_pair_is_made_once_and_replaced_when_broken(tmp_path):
    key_path, pub_path = pki.ensure_service_account_key(tmp_path)
    first = key_path.read_bytes()
    assert pki.ensure_service_account_key(tmp_path) == (key_path, pub_path) and key_path.read_bytes() == first
    assert key_path.stat().st_mode & 0o777 == 0o600
    pub_path.write_text("garbage")
    pki.ensure_service_account_key(tmp_path)
    assert key_path.read_bytes() != first
    signing = load_signing_key(key_path)
    assert [key_id(k) for k in load_public_keys(pub_path)] == [key_id(signing.public_key())]


def test_the_cluster_key_is_ecdsa_and_signs_es256_and_an_existing_rsa_pair_is_kept(tmp_path):
    key_path, pub_path = pki.ensure_service_account_key(tmp_path / "new")
    signing = load_signing_key(key_path)
    assert isinstance(signing, ec.EllipticCurvePrivateKey) and signing.curve.name == "secp256r1"
    sa = {"metadata": {"namespace": "ns", "name": "bot", "uid": "sa-uid"}}
    token, _ = TokenIssuer(signing, ISSUER).issue(sa, ["api"], 600)
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    jwt.decode(token, load_public_keys(pub_path)[0], algorithms=["ES256"], audience="api")
    old = tmp_path / "old"  # an RSA pair, as an earlier mkpy (or kubeadm) made it
    old.mkdir()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (old / "sa.key").write_bytes(rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    (old / "sa.pub").write_bytes(rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                                   serialization.PublicFormat.SubjectPublicKeyInfo))
    before = (old / "sa.key").read_bytes()
    pki.ensure_service_account_key(old)
    assert (old / "sa.key").read_bytes() == before
    token, _ = TokenIssuer(load_signing_key(old / "sa.key"), ISSUER).issue(sa, ["api"], 600)
    assert jwt.get_unverified_header(token)["alg"] == "RS256"


def test_a_kubelet_identity_is_system_node_in_system_nodes(tmp_path):
    ca = pki.ensure_ca(tmp_path)
    pair = pki.ensure_node_client_cert(tmp_path, ca, "worker-1")
    subject = pair.cert.subject
    assert subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "system:node:worker-1"
    assert [a.value for a in subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)] == ["system:nodes"]
    assert pair.cert_path.name == "kubelet-worker-1.crt"


def test_a_node_identity_comes_with_its_own_kubeconfig(tmp_path, monkeypatch):
    from minikube_py.cli.cluster import Cluster
    from minikube_py.cli.lifecycle import ensure_node_identity

    monkeypatch.setenv("MKPY_HOME", str(tmp_path))
    cluster = Cluster.create_or_load("dev")
    path = ensure_node_identity(cluster, "worker-1")
    assert path == cluster.dir / "kubeconfigs" / "kubelet-worker-1.conf" and path.stat().st_mode & 0o777 == 0o600
    user = yaml.safe_load(path.read_text())["users"][0]["user"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    assert cert.subject.rfc4514_string() == "CN=system:node:worker-1,O=system:nodes"

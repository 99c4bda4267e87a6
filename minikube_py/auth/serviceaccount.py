"""Service-account tokens: the bound JWTs the TokenRequest API issues and every request may carry.

A workload proves it runs as a service account with a JSON Web Token signed by the cluster's key pair
(`--service-account-signing-key-file`; `mkpy up` makes `pki/sa.key` and `pki/sa.pub` as kubeadm does).
`TokenIssuer.issue` writes the claims in kube's shape:

    header   {"alg": "ES256" (an ECDSA P-256 key, mkpy's) or "RS256" (an RSA key),
              "kid": <base64url(sha256(DER public key))>}
    payload  iss, aud (a list), exp, iat, nbf, jti, sub = system:serviceaccount:<ns>:<name>,
             kubernetes.io: {namespace, serviceaccount: {name, uid}, pod|secret|node: {name, uid}, ...}

`ServiceAccountTokenAuthenticator` is the apiserver's token authenticator for them (kube's
`serviceaccount.JWTTokenAuthenticator` with its validator). A token is this authenticator's only if its
unverified `iss` is the issuer; then it must be signed by one of `--service-account-key-file`'s keys, carry
an audience the request accepts (`--api-audiences`, or those a TokenReview asks for), be inside its
`nbf`..`exp` window (with go-jose's one-minute leeway), and the objects it names must still exist with the
same uids: the service account and the pod, secret or node it is bound to. Deleting any of them revokes
every token bound to it. The user is `system:serviceaccount:<ns>:<name>` in `system:serviceaccounts` and
`system:serviceaccounts:<ns>`, with the pod, node and token id (`JTI=<jti>`) as extra, as in kube.

Usage rules: verification runs on every request carrying a bearer token, so it never does I/O: objects are
read through `ObjectGetter` (the apiserver's watch caches). Failures are data (`TokenReview.error`, with
kube's messages), never exceptions.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ..api.names import is_dns1123_label, is_dns1123_subdomain
from .authn import UserInfo

USERNAME_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
# go-jose's default clock skew allowance when kube checks exp, nbf and iat.
LEEWAY_SECONDS = 60
# A pod or secret whose deletion began longer ago than this no longer vouches for its tokens (kube's rule).
DELETION_GRACE_SECONDS = 60
BINDABLE_KINDS = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


class KeyFileError(ValueError):
    """A service-account key file holds no usable key; the message names the file."""


class ObjectGetter(Protocol):
    """Reads an object by name without I/O (`apiserver.admitter.CachedClusterState` is one)."""

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...


def make_username(namespace: str, name: str) -> str:
    return f"{USERNAME_PREFIX}{namespace}:{name}"


def split_username(username: str) -> tuple[str, str] | None:
    """(namespace, name) of `system:serviceaccount:<ns>:<name>` with valid names, else None (as kube)."""
    if not username.startswith(USERNAME_PREFIX):
        return None
    parts = username[len(USERNAME_PREFIX):].split(":")
    if len(parts) != 2 or is_dns1123_label(parts[0]) or is_dns1123_subdomain(parts[1]):
        return None
    return parts[0], parts[1]


def groups_of(namespace: str) -> tuple[str, str]:
    """The groups every service account of `namespace` is in."""
    return ALL_SERVICE_ACCOUNTS_GROUP, f"{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"


def key_id(public_key: PublicKey) -> str:
    """The `kid` kube puts in token headers: the unpadded base64url SHA-256 of the DER public key."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def load_signing_key(path: str | Path) -> PrivateKey:
    """The private key (RSA or ECDSA, PEM) in `path`; raises KeyFileError."""
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as err:
        raise KeyFileError(f"cannot read service-account signing key {path}: {err}") from err
    if not isinstance(key, PrivateKey):
        raise KeyFileError(f"service-account signing key {path} is neither RSA nor ECDSA")
    return key


def load_public_keys(path: str | Path) -> list[PublicKey]:
    """Every public key in a PEM file of public keys, private keys or certificates (kube accepts all
    three); raises KeyFileError when there is none."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise KeyFileError(f"cannot read service-account key file {path}: {err}") from err
    keys = [key for block in _pem_blocks(data) if isinstance(key := _public_key(block), PublicKey)]
    if not keys:
        raise KeyFileError(f"service-account key file {path} holds no RSA or ECDSA key")
    return keys


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks, rest = [], data
    while (start := rest.find(b"-----BEGIN ")) >= 0:
        end_marker = rest.find(b"-----END ", start)
        end = rest.find(b"-----", end_marker + 9) + 5 if end_marker >= 0 else -1
        if end_marker < 0 or end < 5:
            break
        blocks.append(rest[start:end])
        rest = rest[end:]
    return blocks


def _public_key(block: bytes) -> object:
    loaders: tuple[Callable[[bytes], object], ...] = (
        serialization.load_pem_public_key,
        lambda b: serialization.load_pem_private_key(b, password=None).public_key(),
        lambda b: x509.load_pem_x509_certificate(b).public_key(),
    )
    for load in loaders:
        try:
            return load(block)
        except (ValueError, TypeError):
            continue
    return None


def _algorithm(key: PrivateKey | PublicKey) -> str:
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        return "RS256"
    return {256: "ES256", 384: "ES384", 521: "ES512"}.get(key.curve.key_size, "ES256")


@dataclass(frozen=True)
class BoundObject:
    """The pod, secret or node a token is bound to (the `kubernetes.io.pod` ... claims)."""

    kind: str  # Pod, Secret or Node
    name: str
    uid: str


class TokenIssuer:
    """Signs service-account tokens with the cluster's private key."""

    def __init__(self, signing_key: PrivateKey, issuer: str, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.signing_key = signing_key
        self.issuer = issuer
        self.clock = clock
        self._headers = {"kid": key_id(signing_key.public_key()), "typ": None}
        self._algorithm = _algorithm(signing_key)

    def issue(self, service_account: Mapping[str, Any], audiences: Sequence[str], expiration_seconds: int,
              bound: Sequence[BoundObject] = ()) -> tuple[str, int]:
        """A token for `service_account` (the object), and when it expires (Unix seconds).

        `bound` is the pod, secret or node it is bound to, plus for a pod the node it runs on."""
        now = int(self.clock())
        meta = service_account["metadata"]
        private: dict[str, Any] = {"namespace": meta["namespace"],
                                   "serviceaccount": {"name": meta["name"], "uid": meta.get("uid", "")}}
        for obj in bound:
            private[obj.kind.lower()] = {"name": obj.name, "uid": obj.uid}
        claims = {"aud": list(audiences), "exp": now + expiration_seconds, "iat": now, "iss": self.issuer,
                  "jti": str(uuid.uuid4()), "kubernetes.io": private, "nbf": now,
                  "sub": make_username(meta["namespace"], meta["name"])}
        token = jwt.encode(claims, self.signing_key, algorithm=self._algorithm, headers=self._headers)
        return token, claims["exp"]


@dataclass(frozen=True)
class TokenResult:
    """What verifying one token gave: the user (None when refused), the audiences it is good for, and why
    it was refused (kube's wording, shown in `TokenReview.status.error`)."""

    user: UserInfo | None
    audiences: tuple[str, ...] = ()
    error: str = ""


@dataclass
class ServiceAccountTokenAuthenticator:
    """Verifies service-account tokens (see the module docstring); a `TokenAuthenticator`."""

    public_keys: Sequence[PublicKey]
    issuer: str
    api_audiences: Sequence[str]
    objects: ObjectGetter
    clock: Callable[[], float] = time.time
    _keys: list[tuple[PublicKey, str]] = field(init=False)

    def __post_init__(self) -> None:
        self._keys = [(key, _algorithm(key)) for key in self.public_keys]

    def authenticate_token(self, token: str) -> UserInfo | None:
        result = self.review(token)
        return result.user if result is not None else None

    def review(self, token: str, audiences: Sequence[str] = ()) -> TokenResult | None:
        """Verify `token` for `audiences` (default: the API audiences); None if it is not one of ours."""
        if not self._has_our_issuer(token):
            return None
        claims = self._verified_claims(token)
        if claims is None:
            return TokenResult(None, error="go-jose/go-jose: error in cryptographic primitive")
        wanted = tuple(audiences) or tuple(self.api_audiences)
        token_audiences = _audiences(claims.get("aud"))
        if not token_audiences:
            return TokenResult(None, error="token has no audiences")
        matched = tuple(aud for aud in token_audiences if aud in wanted)
        if not matched:
            return TokenResult(None, error=f"token audiences {_go_quoted(token_audiences)} is invalid for "
                                           f"the target audiences {_go_quoted(wanted)}")
        try:
            user = self._validate(claims)
        except InvalidToken as err:
            return TokenResult(None, error=str(err))
        return TokenResult(user, matched)

    def _has_our_issuer(self, token: str) -> bool:
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return False
        return isinstance(unverified, dict) and unverified.get("iss") == self.issuer

    def _verified_claims(self, token: str) -> dict[str, Any] | None:
        """The payload if one of our keys signed the token, else None. Only the signature is checked here."""
        options = {"verify_signature": True, "verify_exp": False, "verify_nbf": False, "verify_iat": False,
                   "verify_aud": False, "verify_iss": False, "verify_sub": False, "verify_jti": False}
        for key, algorithm in self._keys:
            try:
                claims = jwt.decode(token, key, algorithms=[algorithm],
                                    options=options)  # type: ignore[arg-type]
            except jwt.PyJWTError:
                continue
            return claims if isinstance(claims, dict) else None
        return None

    def _validate(self, claims: dict[str, Any]) -> UserInfo:
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            raise InvalidToken("service account token claims could not be retrieved")
        self._check_times(claims)
        namespace = _text(private.get("namespace"))
        sa_ref = _ref(private.get("serviceaccount"))
        if not namespace or not sa_ref[0]:
            raise InvalidToken("service account token claims could not be retrieved")
        sa = self._live("serviceaccounts", "service account", namespace, sa_ref)
        extra: dict[str, tuple[str, ...]] = {}
        for kind, resource in BINDABLE_KINDS.items():
            ref = private.get(kind.lower())
            if ref is None:
                continue
            name, uid = self._check_bound(kind, resource, namespace, _ref(ref))
            if kind in ("Pod", "Node"):
                extra[f"authentication.kubernetes.io/{kind.lower()}-name"] = (name,)
                extra[f"authentication.kubernetes.io/{kind.lower()}-uid"] = (uid,)
        if _text(claims.get("jti")):
            extra[CREDENTIAL_ID_KEY] = (f"JTI={claims['jti']}",)
        return UserInfo(username=make_username(namespace, sa_ref[0]), uid=sa["metadata"].get("uid", ""),
                        groups=groups_of(namespace), extra=extra)

    def _check_times(self, claims: dict[str, Any]) -> None:
        now = self.clock()
        exp, nbf, iat = (claims.get(name) for name in ("exp", "nbf", "iat"))
        if not isinstance(exp, int | float):
            raise InvalidToken("service account token has no expiration")
        if now > exp + LEEWAY_SECONDS:
            raise InvalidToken("service account token has expired")
        if isinstance(nbf, int | float) and now + LEEWAY_SECONDS < nbf:
            raise InvalidToken("service account token is not valid yet")
        if isinstance(iat, int | float) and now + LEEWAY_SECONDS < iat:
            raise InvalidToken("service account token is issued in the future")

    def _check_bound(self, kind: str, resource: str, namespace: str, ref: tuple[str, str]) -> tuple[str, str]:
        """The bound object's (name, uid) when it still exists with the uid in the token."""
        # Nodes are cluster-scoped; pods and secrets live in the service account's namespace.
        obj = self._live(resource, kind.lower(), "" if kind == "Node" else namespace, ref)
        deleted_at = obj["metadata"].get("deletionTimestamp")
        if kind != "Node" and deleted_at and _seconds(deleted_at) < self.clock() - DELETION_GRACE_SECONDS:
            raise InvalidToken(f"{kind.lower()} {namespace}/{ref[0]} has been deleted")
        return ref

    def _live(self, resource: str, what: str, namespace: str, ref: tuple[str, str]) -> dict[str, Any]:
        name, uid = ref
        obj = self.objects.get("", resource, namespace, name)
        shown = f"{namespace}/{name}" if namespace else name
        if obj is None:
            raise InvalidToken(f"{what} {shown} has been deleted")
        live_uid = obj["metadata"].get("uid", "")
        if uid and live_uid != uid:
            raise InvalidToken(f"{what} UID ({live_uid}) does not match claim ({uid})")
        return obj


class InvalidToken(Exception):
    """A token of ours that must be refused; the message is kube's."""


def _audiences(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list):
        return tuple(item for item in value if isinstance(item, str) and item)
    return ()


def _ref(value: object) -> tuple[str, str]:
    if not isinstance(value, dict):
        return "", ""
    return _text(value.get("name")), _text(value.get("uid"))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _go_quoted(values: Sequence[str]) -> str:
    """A string list as Go's `%q` prints it: `["a" "b"]`."""
    return "[" + " ".join(f'"{value}"' for value in values) + "]"


def _seconds(timestamp: str) -> float:
    """Unix seconds of an RFC 3339 timestamp (`2026-01-02T03:04:05Z`); a malformed one counts as now-ish
    (the object is then treated as still there, which only delays revocation)."""
    try:
        return datetime.datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return time.time()

"""Authentication: who is making this request?

The first step of the apiserver's handler chain (authn → impersonation → authz → ...). For every request the
apiserver calls `Authenticator.authenticate(peercert, authorization_header)` and answers 401 when it returns
None. The answer is a `UserInfo`, the same four fields as kube's `user.Info`, which authorization (RBAC) and
`kubectl auth whoami` use later.

Authenticators are tried in kube's order and the first that recognises the request wins:
1. x509 client certificates. TLS has already verified the certificate against `--client-ca-file`, so this
   step only reads the subject of `ssl.SSLObject.getpeercert()`: user = Common Name, groups = every
   Organization. Results are cached per subject, because the same few clients send every request.
2. bearer tokens (`Authorization: Bearer <token>`), checked by each `TokenAuthenticator` in turn: the static
   token file (`--token-auth-file`), then service-account JWTs. A bearer token that nobody recognises
   is not anonymous access: the request is unauthenticated (401), as in kube. As kube-apiserver's token
   cache does, a token that authenticated is trusted for TOKEN_SUCCESS_CACHE_TTL (10 s) without being
   checked again (a controller sends the same token with every request; checking a JWT's signature and
   its bound objects each time is most of what authentication costs); failures are never cached.
Every authenticated user also gets the group `system:authenticated`. A request with no credentials at all
is anonymous (`system:anonymous` in `system:unauthenticated`) when `--anonymous-auth` is on, as it is by
default in kube; RBAC then decides what it may see (the health and version endpoints).

The static token file is kube's CSV format, one user a line: `token,user,uid[,"group1,group2"]`.
It is read once at startup; a malformed line is an error naming the file and line, so the apiserver refuses
to start rather than silently locking a user out.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

TOKEN_SUCCESS_CACHE_TTL = 10.0  # seconds, kube-apiserver's default
TOKEN_CACHE_SIZE = 4096
AUTHENTICATED_GROUP = "system:authenticated"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
ANONYMOUS_USER = "system:anonymous"


@dataclass(frozen=True)
class UserInfo:
    """An authenticated identity, as kube's `user.Info` (and `UserInfo` in SelfSubjectReview) has it."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


ANONYMOUS = UserInfo(username=ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))


def user_info(user: UserInfo) -> dict[str, Any]:
    """`user` as the API's UserInfo object (reviews, AdmissionReview, audit events): empty fields left out,
    as Go's `omitempty` does."""
    info: dict[str, Any] = {"username": user.username}
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra.items()}
    return info


class TokenAuthenticator(Protocol):
    """Recognises bearer tokens of one kind (static file, service-account JWT, ...)."""

    def authenticate_token(self, token: str) -> UserInfo | None:
        """The user this token belongs to, or None when the token is not one of this authenticator's.

        Called on every request carrying a bearer token: must be fast and must not raise for bad tokens.
        """
        ...


class TokenFileError(ValueError):
    """The static token file cannot be used; the message names the file and line."""


class StaticTokenAuthenticator:
    """Bearer tokens from a `--token-auth-file`, fixed for the life of the process."""

    def __init__(self, users_by_token: Mapping[str, UserInfo]) -> None:
        self._users_by_token = dict(users_by_token)

    @classmethod
    def from_file(cls, path: str | Path) -> StaticTokenAuthenticator:
        """Parse kube's token CSV; raises TokenFileError on any unusable line (see `parse_token_file`)."""
        return cls(parse_token_file(path))

    def authenticate_token(self, token: str) -> UserInfo | None:
        return self._users_by_token.get(token)


def parse_token_file(path: str | Path) -> dict[str, UserInfo]:
    """Read `token,user,uid[,groups]` lines; blank lines are skipped, columns after the fourth ignored."""
    try:
        with open(path, newline="", encoding="utf-8") as file:
            records = list(enumerate(csv.reader(file, skipinitialspace=True), start=1))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TokenFileError(f"cannot read token file {path}: {err}") from err
    users_by_token: dict[str, UserInfo] = {}
    for line, record in records:
        if not record:
            continue
        token, user = _parse_token_record(path, line, record)
        if token in users_by_token:
            # kube keeps the last duplicate with a warning; an error is kinder than a silently lost user.
            raise TokenFileError(f"{path}:{line}: duplicate token (already used for {users_by_token[token].username!r})")
        users_by_token[token] = user
    return users_by_token


def _parse_token_record(path: str | Path, line: int, record: list[str]) -> tuple[str, UserInfo]:
    if len(record) < 3:
        raise TokenFileError(
            f"{path}:{line}: expected at least 3 columns (token,user,uid[,\"group1,group2\"]), got {len(record)}")
    token, username, uid = (column.strip() for column in record[:3])
    if not token:
        raise TokenFileError(f"{path}:{line}: empty token")
    if not username:
        raise TokenFileError(f"{path}:{line}: empty user name")
    groups = tuple(group.strip() for group in record[3].split(",") if group.strip()) if len(record) > 3 else ()
    return token, UserInfo(username=username, uid=uid, groups=groups)


def bearer_token(authorization_header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else None.

    As in kube the header is split on single spaces, so `Bearer` followed by nothing, or by two spaces,
    carries an empty token ("": a 401), while another scheme (`Basic ...`) carries none (None: anonymous).
    """
    if not authorization_header:
        return None
    parts = authorization_header.strip().split(" ")
    if parts[0].lower() != "bearer":
        return None
    return parts[1] if len(parts) > 1 else ""


def _user_from_subject(subject: tuple[tuple[tuple[str, str], ...], ...]) -> UserInfo | None:
    common_name, organizations = "", []
    for rdn in subject:
        for attribute, value in rdn:
            if attribute == "commonName":
                common_name = value
            elif attribute == "organizationName":
                organizations.append(value)
    if not common_name:
        return None
    return UserInfo(username=common_name, groups=tuple(organizations))


class Authenticator:
    """The apiserver's authenticator chain: x509 first, then each token authenticator, then (with
    `--anonymous-auth`, kube's default) anonymous for requests that carry no credentials at all."""

    def __init__(self, token_authenticators: Sequence[TokenAuthenticator] = (), *, anonymous: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._token_authenticators = tuple(token_authenticators)
        self.anonymous = anonymous
        self._clock = clock
        self._token_cache: dict[bytes, tuple[UserInfo, float]] = {}  # sha256(token) → (user, expires)

    @classmethod
    def from_token_auth_file(cls, token_auth_file: str, *, anonymous: bool = False) -> Authenticator:
        """The chain for `--token-auth-file` (empty: x509 only). Raises TokenFileError."""
        if not token_auth_file:
            return cls(anonymous=anonymous)
        return cls([StaticTokenAuthenticator.from_file(token_auth_file)], anonymous=anonymous)

    def add(self, authenticator: TokenAuthenticator) -> None:
        """Append a token authenticator to the chain (the service-account one is added once the apiserver
        can look service accounts up)."""
        self._token_authenticators += (authenticator,)

    def authenticate(self, peercert: Mapping[str, Any] | None,
                     authorization_header: str | None) -> UserInfo | None:
        """The request's user (with `system:authenticated`, or `system:anonymous`), or None: answer 401.

        `peercert` is what `ssl.SSLObject.getpeercert()` returned for the connection (None or a dict).
        A bearer token nobody recognises is a 401 even when anonymous requests are allowed: only a request
        with no credentials at all is anonymous.
        """
        # None: no certificate was sent; {}: one was sent but not verified, so it proves nothing.
        if peercert:
            user = _authenticated_x509_user(peercert.get("subject", ()))
            if user is not None:
                return user
        token = bearer_token(authorization_header)
        if token is None:
            return ANONYMOUS if self.anonymous else None
        if not token:
            return None
        return self._token_user(token)

    def _token_user(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()  # the cache never holds the tokens themselves
        now = self._clock()
        cached = self._token_cache.get(key)
        if cached is not None and now < cached[1]:
            return cached[0]
        for authenticator in self._token_authenticators:
            user = authenticator.authenticate_token(token)
            if user is not None:
                user = with_authenticated_group(user)
                if len(self._token_cache) >= TOKEN_CACHE_SIZE:
                    self._token_cache.clear()
                self._token_cache[key] = (user, now + TOKEN_SUCCESS_CACHE_TTL)
                return user
        return None


@functools.lru_cache(maxsize=1024)
def _authenticated_x509_user(subject: tuple[tuple[tuple[str, str], ...], ...]) -> UserInfo | None:
    """Cached per subject: the handful of clients (admin, controllers, kubelets) send every request."""
    user = _user_from_subject(subject)
    return with_authenticated_group(user) if user is not None else None


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """`user` with `system:authenticated` added to its groups, once."""
    if AUTHENTICATED_GROUP in user.groups:
        return user
    return replace(user, groups=(*user.groups, AUTHENTICATED_GROUP))

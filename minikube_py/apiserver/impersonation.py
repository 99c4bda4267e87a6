"""The impersonation filter: act as another user, if allowed to (`kubectl --as alice --as-group devs`).

Runs after authentication (and audit) and before authorization. A request carrying
`Impersonate-User`, `Impersonate-Group` (repeatable), `Impersonate-Uid` or `Impersonate-Extra-<key>`
(the key percent-decoded, lower-cased) asks to be treated as that user. Each thing asked for is checked
separately with the verb `impersonate`, as kube does:

    Impersonate-User: alice                      → users "alice"            (group "")
    Impersonate-User: system:serviceaccount:ns:x → serviceaccounts "x" in ns (group "")
    Impersonate-Group: devs                      → groups "devs"            (group "")
    Impersonate-Uid: 42                          → uids "42"                (authentication.k8s.io)
    Impersonate-Extra-scopes: view               → userextras/scopes "view" (authentication.k8s.io)

Any refusal is a 403 naming the first thing refused. Groups, uid or extra without a user are refused
with 400 Bad Request (kube answers this with a 500; a client error is the honest answer). The new user gets
`system:authenticated` unless a group says otherwise (`system:anonymous` gets `system:unauthenticated`), and
a service account without explicit groups gets its two service-account groups.

After this filter `scope["user"]` is the impersonated user and `scope["mkpy.original_user"]` the one who
authenticated (audit records both); the impersonation headers are removed, so nothing later sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from ..api import errors
from ..auth.authn import ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, UserInfo
from ..auth.authorizer import Attributes, Decision
from ..auth.serviceaccount import groups_of, make_username, split_username
from .authorization import forbidden
from .responses import error_response

USER_HEADER = b"impersonate-user"
GROUP_HEADER = b"impersonate-group"
UID_HEADER = b"impersonate-uid"
EXTRA_PREFIX = b"impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"


@dataclass(frozen=True)
class ImpersonationRequest:
    """What the impersonation headers ask for."""

    user: str = ""
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, str], ...] = ()  # (key, value), one per header value

    def __bool__(self) -> bool:
        return bool(self.user or self.groups or self.uid or self.extra)


def parse_headers(headers: list[tuple[bytes, bytes]]) -> ImpersonationRequest:
    """The impersonation request in ASGI `headers` (names are lower-case there); raises 400 when groups,
    uid or extra come without a user."""
    user, uid, groups, extra = "", "", [], []
    for name, raw in headers:
        value = raw.decode("latin-1")
        if name == USER_HEADER:
            user = user or value  # the first one counts, as Go's Header.Get
        elif name == GROUP_HEADER:
            groups.append(value)
        elif name == UID_HEADER:
            uid = uid or value
        elif name.startswith(EXTRA_PREFIX):
            extra.append((unquote(name[len(EXTRA_PREFIX):].decode("latin-1")), value))
    request = ImpersonationRequest(user, tuple(groups), uid, tuple(extra))
    if not user and request:
        raise errors.bad_request(f"requested {_describe(request)} without impersonating a user")
    return request


def _describe(request: ImpersonationRequest) -> str:
    wanted = [f"group {group!r}" for group in request.groups]
    wanted += [f"uid {request.uid!r}"] if request.uid else []
    wanted += [f"user extra {key}={value!r}" for key, value in request.extra]
    return ", ".join(wanted)


def checks(requestor: UserInfo, request: ImpersonationRequest) -> list[Attributes]:
    """One `impersonate` check per thing asked for, in kube's order: user, groups, extra, uid."""
    def attributes(resource: str, name: str, *, group: str = "", namespace: str = "",
                   subresource: str = "") -> Attributes:
        return Attributes(user=requestor, verb="impersonate", api_group=group, resource=resource,
                          subresource=subresource, namespace=namespace, name=name)

    service_account = split_username(request.user)
    found = [attributes("serviceaccounts", service_account[1], namespace=service_account[0])
             if service_account else attributes("users", request.user)]
    found += [attributes("groups", group) for group in request.groups]
    found += [attributes("userextras", value, group=AUTHENTICATION_GROUP, subresource=key)
              for key, value in request.extra]
    if request.uid:
        found.append(attributes("uids", request.uid, group=AUTHENTICATION_GROUP))
    return found


def impersonated_user(request: ImpersonationRequest) -> UserInfo:
    """The user the request will run as once every check has passed."""
    service_account = split_username(request.user)
    groups = list(request.groups)
    if service_account and not groups:
        groups = list(groups_of(service_account[0]))
    username = make_username(*service_account) if service_account else request.user
    if username == ANONYMOUS_USER:
        if UNAUTHENTICATED_GROUP not in groups:
            groups.append(UNAUTHENTICATED_GROUP)
    elif AUTHENTICATED_GROUP not in groups and UNAUTHENTICATED_GROUP not in groups:
        groups.append(AUTHENTICATED_GROUP)
    extra: dict[str, tuple[str, ...]] = {}
    for key, value in request.extra:
        extra[key] = (*extra.get(key, ()), value)
    return UserInfo(username=username, uid=request.uid, groups=tuple(groups), extra=extra)


def _without_impersonation(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, value in headers
            if name not in (USER_HEADER, GROUP_HEADER, UID_HEADER) and not name.startswith(EXTRA_PREFIX)]


class ImpersonationMiddleware:
    """Switches `scope["user"]` to the impersonated user when the authenticated one may impersonate it."""

    def __init__(self, app: ASGIApp, server: Any) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        try:
            request = parse_headers(scope["headers"])
            if request:
                self._impersonate(scope, request)
        except errors.APIError as err:
            await error_response(err)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _impersonate(self, scope: Scope, request: ImpersonationRequest) -> None:
        requestor: UserInfo = scope["user"]
        for attributes in checks(requestor, request):
            decision, reason = self.server.authorizer.authorize(attributes)
            if decision is not Decision.ALLOW:
                raise forbidden(attributes, reason)
        scope["mkpy.original_user"] = requestor
        scope["user"] = impersonated_user(request)
        scope["headers"] = _without_impersonation(scope["headers"])

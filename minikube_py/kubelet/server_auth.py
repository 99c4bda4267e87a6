"""Who may use the kubelet's HTTPS API: authentication and authorization by asking the apiserver.

Like a kubeadm kubelet (`--anonymous-auth=false`, `--authorization-mode=Webhook`):

* authentication: a client certificate signed by the cluster CA names the user (CN) and groups (O), as
  the apiserver reads it; otherwise a bearer token is sent to the apiserver in a TokenReview. Nothing
  else gets in: 401.
* authorization: a SubjectAccessReview asks the apiserver whether that user may use this node's
  subresource: `nodes/stats` for /stats, `nodes/metrics` for /metrics, `nodes/log` for /logs,
  `nodes/spec` for /spec, `nodes/checkpoint` for /checkpoint, `nodes/proxy` for everything else
  (/exec, /containerLogs, /pods, ...). The verb follows the HTTP method (GET → get, POST → create, ...).
  The apiserver's own identity (kube-apiserver-kubelet-client) is allowed through RBAC's
  `system:kubelet-api-admin`. A denial is 403.

Answers are cached as the kubelet does: token reviews for 2 minutes, allowed decisions for 5 minutes,
denied ones for 30 seconds. `KubeletAuth` is a raw ASGI middleware, so it guards WebSocket requests too
(Starlette answers them with the HTTP error instead of the handshake).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..auth.authn import Authenticator, UserInfo, bearer_token, user_info
from ..client import errors as client_errors
from ..client.resources import builtin
from ..client.rest import RESTClient

TOKEN_REVIEWS = builtin("authentication.k8s.io", "v1", "tokenreviews")
SUBJECT_ACCESS_REVIEWS = builtin("authorization.k8s.io", "v1", "subjectaccessreviews")
TOKEN_TTL, ALLOWED_TTL, DENIED_TTL = 120.0, 300.0, 30.0
SUBRESOURCES = {"stats": "stats", "metrics": "metrics", "logs": "log", "spec": "spec", "checkpoint": "checkpoint"}
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def attributes(node_name: str, method: str, path: str) -> dict[str, Any]:
    """The resourceAttributes of a request for `path` on this node."""
    first = path.strip("/").split("/", 1)[0]
    return {"verb": VERBS.get(method, method.lower()), "resource": "nodes", "name": node_name,
            "subresource": SUBRESOURCES.get(first, "proxy")}


class _TTLCache:
    def __init__(self) -> None:
        self._entries: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if len(self._entries) > 4096:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + ttl, value)


class KubeletAuth:
    def __init__(self, app: ASGIApp, node_name: str, api: RESTClient) -> None:
        self.app = app
        self.node_name = node_name
        self.api = api
        self.x509 = Authenticator()  # certificates only: no token authenticators, no anonymous
        self._tokens = _TTLCache()
        self._decisions = _TTLCache()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        user = await self.authenticate(scope)
        if user is None:
            await JSONResponse(status(401, "Unauthorized", "Unauthorized"), 401)(scope, receive, send)
            return
        method = scope.get("method", "GET")
        attrs = attributes(self.node_name, method, scope["path"])
        if not await self.authorize(user, attrs):
            message = (f"Forbidden (user={user.username}, verb={attrs['verb']}, resource=nodes, "
                       f"subresource={attrs['subresource']})")
            await JSONResponse(status(403, "Forbidden", message), 403)(scope, receive, send)
            return
        scope["user"] = user
        await self.app(scope, receive, send)

    async def authenticate(self, scope: Scope) -> UserInfo | None:
        peercert = scope.get("extensions", {}).get("tls", {}).get("peercert")
        if peercert:
            user = self.x509.authenticate(peercert, None)
            if user is not None:
                return user
        header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
        token = bearer_token(header)
        return await self._review_token(token) if token else None

    async def _review_token(self, token: str) -> UserInfo | None:
        cached = self._tokens.get(token)
        if cached is not None:
            return cached or None
        try:
            review = await self.api.create(TOKEN_REVIEWS, {"apiVersion": "authentication.k8s.io/v1",
                                                           "kind": "TokenReview", "spec": {"token": token}})
        except (client_errors.APIStatusError, client_errors.TransportError):
            return None  # not cached: the apiserver may be back on the next request
        result = review.get("status", {})
        user = None
        if result.get("authenticated"):
            info = result.get("user", {})
            user = UserInfo(username=info.get("username", ""), uid=info.get("uid", ""),
                            groups=tuple(info.get("groups", [])),
                            extra={k: tuple(v) for k, v in info.get("extra", {}).items()})
        self._tokens.put(token, user or False, TOKEN_TTL)
        return user

    async def authorize(self, user: UserInfo, attrs: dict[str, Any]) -> bool:
        key = (user.username, user.uid, user.groups, tuple(sorted(attrs.items())))
        cached = self._decisions.get(key)
        if cached is not None:
            return bool(cached)
        spec = {k: v for k, v in user_info(user).items() if k != "username"}
        spec["user"] = user.username
        try:
            review = await self.api.create(SUBJECT_ACCESS_REVIEWS, {
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {**spec, "resourceAttributes": attrs}})
        except (client_errors.APIStatusError, client_errors.TransportError):
            return False
        allowed = bool(review.get("status", {}).get("allowed"))
        self._decisions.put(key, allowed, ALLOWED_TTL if allowed else DENIED_TTL)
        return allowed

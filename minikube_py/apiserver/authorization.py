"""The authorization filter: may this user make this request?

Runs after authentication (and impersonation), before anything reads the body. It describes the request
as `auth.authorizer.Attributes`, the way kube's RequestInfo does:

* a resource URL (`/api/v1/namespaces/ns/pods/web/log`) gives verb, group, version, resource, subresource,
  namespace and name. The verb is `get`/`list`/`watch` for reads (`watch=true` makes a list a watch),
  `create`, `update`, `patch`, `delete` or `deletecollection` for writes. A namespace's own URL
  (`/api/v1/namespaces/ns`) is "in" that namespace, so a RoleBinding there can grant reading it, and a
  list or watch with `fieldSelector=metadata.name=X` is about the object X;
* any other URL is a non-resource request: the path, and the HTTP method in lower case as the verb.

Then it asks the configured authorizer chain (`--authorization-mode`, built at start by `build_authorizer`)
and answers 403 Forbidden with kube's message unless some authorizer allows the request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from ..api import errors
from ..auth.authn import UserInfo
from ..auth.authorizer import (
    AlwaysAllow,
    AlwaysDeny,
    Attributes,
    Authorizer,
    AuthorizerChain,
    Decision,
    forbidden_message,
)
from ..auth.node import NodeAuthorizer
from .nodegraph import node_graph
from .request import query_params, request_info
from .responses import error_response

# How each `--authorization-mode` is built; a factory gets the APIServer, whose caches it may read.
MODES: dict[str, Callable[[Any], Authorizer]] = {
    "AlwaysAllow": lambda server: AlwaysAllow(),
    "AlwaysDeny": lambda server: AlwaysDeny(),
    "Node": lambda server: NodeAuthorizer(node_graph(server)),
    "RBAC": lambda server: server.rbac.authorizer,
}


def build_authorizer(modes: list[str], server: Any) -> AuthorizerChain:
    """The chain for `--authorization-mode` (validated by the CLI: every name is in MODES)."""
    return AuthorizerChain([MODES[mode](server) for mode in modes])


def attributes_for(scope: Scope, user: UserInfo) -> Attributes:
    """The request in `scope`, described for authorization."""
    path, method = scope["path"], scope["method"]
    query = query_params(scope)
    info = request_info(scope)
    if info is None or not info.parts_valid:
        return Attributes(user=user, verb=_NON_RESOURCE_VERBS.get(method, method.lower()),
                          resource_request=False, path=path)
    namespace, name = info.namespace, info.name
    if info.resource == "namespaces" and info.group == "" and name:
        namespace = name
    field_selector: tuple[tuple[str, str, str], ...] = ()
    if info.verb in ("list", "watch", "deletecollection"):
        field_selector = _field_requirements(query.get("fieldSelector", ""))
        if not name:
            name = next((value for field, op, value in field_selector if field == "metadata.name" and op != "!="),
                        "")
    return Attributes(user=user, verb=info.verb, namespace=namespace, api_group=info.group,
                      api_version=info.version, resource=info.resource, subresource=info.subresource, name=name,
                      field_selector=field_selector)


_NON_RESOURCE_VERBS = {"HEAD": "get"}


def _field_requirements(selector: str) -> tuple[tuple[str, str, str], ...]:
    """`a=x,b!=y` as (field, operator, value) triples; `==` is written `=`. Malformed parts are skipped:
    the handler rejects the selector itself with a 400 after authorization."""
    requirements = []
    for part in selector.split(","):
        for op in ("!=", "==", "="):
            field, found, value = part.partition(op)
            if found:
                requirements.append((field.strip(), "!=" if op == "!=" else "=", value.strip()))
                break
    return tuple(requirements)


def forbidden(attributes: Attributes, reason: str) -> errors.APIError:
    """The 403 for a denied request: `pods "web" is forbidden: User "alice" cannot get resource ...`."""
    message = forbidden_message(attributes)
    if reason:
        message += f": {reason}"
    if not attributes.resource_request:
        return errors.forbidden_object("", "", message)
    resource = attributes.resource
    if attributes.api_group:
        resource += "." + attributes.api_group
    return errors.forbidden_object(resource, attributes.name, message)


class AuthorizationMiddleware:
    """Answers 403 unless the server's authorizer allows the request of `scope["user"]`."""

    def __init__(self, app: ASGIApp, server: Any) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        attributes = attributes_for(scope, scope["user"])
        decision, reason = self.server.authorizer.authorize(attributes)
        if decision is not Decision.ALLOW:
            await error_response(forbidden(attributes, reason))(scope, receive, send)
            return
        await self.app(scope, receive, send)

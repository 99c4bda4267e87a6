"""Authorization: may this user do this verb on this thing?

The step after authentication (and impersonation) in the apiserver's handler chain. The apiserver turns
each request into `Attributes` (kube's `authorizer.Attributes`): who (`user`), the verb, and either a
resource (group, resource, subresource, namespace, name) or, for everything else, a URL path. It then asks
an `Authorizer`, which answers with a `Decision` and a reason.

Authorizers are chained (`--authorization-mode=Node,RBAC`) by `AuthorizerChain`: each in turn may allow,
deny, or have no opinion; the first that allows or denies decides, and a request nobody allows is
forbidden. Before the configured modes kube always puts one more: members of `system:masters` may do
anything (`PrivilegedGroups`), which is why the admin certificate works even with an empty RBAC policy.

Usage rules: `authorize` is called for every request, so it must be fast, must not block (no I/O) and must
not raise for any input. The reason is shown to the user in the 403 message, so it follows kube's wording.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .authn import UserInfo

PRIVILEGED_GROUP = "system:masters"


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True)
class Attributes:
    """One request, as authorization sees it.

    For a resource request (`resource_request=True`) the verb is an API verb (get, list, watch, create,
    update, patch, delete, deletecollection, or a special one such as impersonate, bind, escalate, use);
    for anything else (`/healthz`, `/version`, `/openapi/v3`, ...) `path` is set and the verb is the
    lower-cased HTTP method as kube names it (get, post, put, patch, delete).
    """

    user: UserInfo
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    # the list's or watch's field selector, as (field, operator, value) requirements: the Node authorizer
    # lets a kubelet list pods only with `spec.nodeName=<itself>`
    field_selector: tuple[tuple[str, str, str], ...] = ()


class Authorizer(Protocol):
    """One authorization mode (RBAC, Node, AlwaysAllow, ...)."""

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        """The decision for `attributes`, and why (may be ""). Fast, no I/O, never raises."""
        ...


class AlwaysAllow:
    """`--authorization-mode=AlwaysAllow`: every authenticated request may do anything (kube's default)."""

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""


class AlwaysDeny:
    """`--authorization-mode=AlwaysDeny`: only `system:masters` may do anything."""

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        return Decision.NO_OPINION, "Everything is forbidden."


class PrivilegedGroups:
    """Members of `system:masters` may do anything, whatever the other modes say."""

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if PRIVILEGED_GROUP in attributes.user.groups:
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""


class AuthorizerChain:
    """The modes in order; the first that allows or denies decides. Reasons of the modes that had no
    opinion are joined with ", " as kube does, so a 403 says what each mode thought."""

    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self.authorizers = (PrivilegedGroups(), *authorizers)

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        reasons = []
        for authorizer in self.authorizers:
            decision, reason = authorizer.authorize(attributes)
            if decision is not Decision.NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, ", ".join(reasons)


def forbidden_message(attributes: Attributes) -> str:
    """What a 403 says the user cannot do, in kube's words (before `: <reason>`)."""
    user = attributes.user.username
    if not attributes.resource_request:
        return f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    resource = attributes.resource
    if attributes.subresource:
        resource += "/" + attributes.subresource
    where = (f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope")
    return (f'User "{user}" cannot {attributes.verb} resource "{resource}" in API group '
            f'"{attributes.api_group}" {where}')

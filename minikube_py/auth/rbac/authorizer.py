"""The RBAC authorizer (`--authorization-mode=RBAC`): allow what some binding's role grants.

`RBACAuthorizer.authorize` asks the current `Policy` snapshot (Casbin, see `model.py`) once for the user
and once for each of its groups, skipping identities that no binding names; the first allow wins. The
answer follows kube's RBAC authorizer:

* allow, with the reason `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "alice"`;
* otherwise no opinion (never deny: a later authorizer may still allow), with the reason empty, or, when
  bindings that apply to the user point at roles that do not exist,
  `RBAC: clusterrole.rbac.authorization.k8s.io "x" not found` (several: `RBAC: [a, b]`).

`authorize` runs on every request, and Casbin walks every policy line for a denial, so decisions are
cached per (policy snapshot, user, groups, request): the cache starts empty whenever the snapshot
changes, so a new binding takes effect on the next request. The object's name is part of the key only
for resources some rule restricts with resourceNames, so deleting a thousand pods asks Casbin once. `policy()` is called on every request and
must be cheap (it returns the same snapshot until an RBAC object changed).
"""

from __future__ import annotations

from collections.abc import Callable

from ..authn import UserInfo
from ..authorizer import Attributes, Decision
from .policy import Policy, identities

CACHE_SIZE = 10_000  # decisions kept per snapshot; past this the cache starts over


class RBACAuthorizer:
    def __init__(self, policy: Callable[[], Policy]) -> None:
        self.policy = policy
        self._cached_for: Policy | None = None
        self._decisions: dict[tuple[object, ...], tuple[Decision, str]] = {}

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        policy = self.policy()
        if policy is not self._cached_for or len(self._decisions) >= CACHE_SIZE:
            self._cached_for, self._decisions = policy, {}
        user = attributes.user
        resource = f"{attributes.resource}/{attributes.subresource}" if attributes.subresource else \
            attributes.resource
        # most requests name objects no rule singles out: one decision then serves every name
        name = attributes.name if policy.name_matters(resource) else ""
        key = (user.username, user.groups, attributes.verb, attributes.namespace, attributes.api_group,
               resource, name, attributes.path, attributes.resource_request)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = decide(policy, attributes)
        return decision


def decide(policy: Policy, attributes: Attributes) -> tuple[Decision, str]:
    """The uncached decision for one request."""
    user = attributes.user
    namespace = attributes.namespace if attributes.resource_request else ""
    resource = attributes.resource
    if attributes.subresource:
        resource += "/" + attributes.subresource
    path = attributes.path if not attributes.resource_request else ""
    for identity in _bound_identities(policy, user, namespace):
        role = policy.enforce(identity, namespace, attributes.verb, attributes.api_group, resource,
                              attributes.name, path)
        if role is not None:
            grant = policy.grant_of([identity], namespace, role)
            return Decision.ALLOW, f"RBAC: allowed by {grant.describe()}" if grant else "RBAC: allowed"
    errors = list(dict.fromkeys(policy.rules_for(user, namespace)[1]))  # kube's aggregate drops repeats
    if not errors:
        return Decision.NO_OPINION, ""
    return Decision.NO_OPINION, "RBAC: " + (errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")


def allows(policy: Policy, user: UserInfo, namespace: str, verb: str, group: str, resource: str, name: str,
           path: str) -> bool:
    """Whether `user` may do this (a resource request when `path` is ""), without reasons or caching."""
    return any(policy.enforce(identity, namespace, verb, group, resource, name, path) is not None
               for identity in _bound_identities(policy, user, namespace))


def _bound_identities(policy: Policy, user: UserInfo, namespace: str) -> list[str]:
    """The user's identities that some binding applying here names; asking Casbin for others is waste."""
    domains = ("*", namespace) if namespace else ("*",)
    return [identity for identity in identities(user)
            if any((identity, domain) in policy.grants for domain in domains)]

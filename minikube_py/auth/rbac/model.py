"""The Casbin model that expresses Kubernetes RBAC, and the matching functions it calls.

Casbin evaluates a request `r` against every policy line `p` with a matcher expression, following role
links `g`. Kubernetes RBAC maps onto it like this:

* a role (Role `ns/name` or ClusterRole `name`) is a Casbin subject such as `clusterrole:view` or
  `role:team-a/reader`; each of its PolicyRules is one policy line `p = role, verbs, apiGroups,
  resources, resourceNames, nonResourceURLs`, each list one field where every value follows a "\\x1f" (a
  character no name can hold; the core group "" stays distinct from no group at all), so that one RBAC
  rule stays one line instead of the product of its lists;
* a binding is a role link in a domain, `g = identity, role, domain`: the identity is `user:<name>` or
  `group:<name>` (a ServiceAccount subject is the user `system:serviceaccount:<ns>:<name>`, which is how
  kube matches it), the domain is the RoleBinding's namespace or `*` for a ClusterRoleBinding. So a
  RoleBinding to a ClusterRole grants that ClusterRole's rules inside its namespace only;
* a request is `r = identity, namespace, verb, apiGroup, resource, name, path`: `resource` already joins
  the subresource (`pods/log`), `path` is set only for non-resource requests (`/healthz`). A user with
  groups is asked once per identity (the user, then each group) and any allow wins, as in kube.

The matching functions reproduce kube's `RuleAllows` exactly: `*` matches any verb, group or resource;
`*/scale` matches the scale subresource of anything (but `pods/*` is only the literal name, as in kube);
an empty resourceNames list matches any name, a non-empty one only those names (so never a create, which
has no name); a nonResourceURL ending in `*` is a prefix. Cluster-scoped and non-resource requests have
the domain "", so only ClusterRoleBindings (`*`) apply to them.

The same matcher decides whether a user "covers" a rule (escalation checks, `escalation.py`): a rule
broken into single verb/group/resource/name pieces is covered exactly when each piece, asked as a
request, is allowed (a piece naming `*` is only allowed by a rule holding `*` itself).
"""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = "\x1f"

MODEL_TEXT = """
[request_definition]
r = sub, dom, verb, group, res, name, path

[policy_definition]
p = sub, verbs, groups, resources, names, urls

[role_definition]
g = _, _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = (g(r.sub, p.sub, r.dom) || g(r.sub, p.sub, "*")) && listMatch(r.verb, p.verbs) && \
(r.path == "" && listMatch(r.group, p.groups) && resourceMatch(r.res, p.resources) && \
nameMatch(r.name, p.names) || r.path != "" && urlMatch(r.path, p.urls))
"""


def join(values: Iterable[str]) -> str:
    """A rule's list as one policy field."""
    return "".join(SEPARATOR + value for value in values)


def _split(field: str) -> list[str]:
    return field.split(SEPARATOR)[1:]


def list_match(requested: str, field: str) -> bool:
    """Verbs and API groups: `*` or the exact value."""
    return any(value == "*" or value == requested for value in _split(field))


def resource_match(requested: str, field: str) -> bool:
    """`*`, the exact `resource[/subresource]`, or `*/<subresource>` for a subresource request."""
    subresource = requested.partition("/")[2]
    for value in _split(field):
        if value == "*" or value == requested:
            return True
        if subresource and value == "*/" + subresource:
            return True
    return False


def name_match(requested: str, field: str) -> bool:
    """No resourceNames: any name; otherwise the request must name one of them."""
    names = _split(field)
    return not names or requested in names


def url_match(requested: str, field: str) -> bool:
    """`*`, the exact path, or a `prefix*` the path starts with."""
    for value in _split(field):
        if value == "*" or value == requested:
            return True
        if value.endswith("*") and requested.startswith(value.rstrip("*")):
            return True
    return False


FUNCTIONS = {"listMatch": list_match, "resourceMatch": resource_match, "nameMatch": name_match,
             "urlMatch": url_match}

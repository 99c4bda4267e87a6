"""The RBAC policy: Role, ClusterRole, RoleBinding and ClusterRoleBinding objects turned into Casbin.

`Policy.build(roles, cluster_roles, role_bindings, cluster_role_bindings)` takes the four resources' objects
as the API returns them and produces one immutable snapshot: a Casbin enforcer loaded with the model of
`model.py`, plus the indexes that answer what Casbin cannot say by itself — which binding granted an allow
(for the reason kube gives), which bindings point at roles that do not exist (they grant nothing; the
denial reason names them) and every rule a user holds in a namespace (SelfSubjectRulesReview, escalation
checks). The apiserver builds a new snapshot whenever one of the four watch caches changed
(`apiserver/rbac.py`); a snapshot is never changed after it is built, so a request sees one consistent
policy.

Usage rules: objects may be invalid in any way (a binding to a missing role, a subject of an unknown kind,
a rule without verbs): such parts grant nothing, and building never raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import casbin

from ..authn import UserInfo
from . import model

RBAC_GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Rule:
    """One PolicyRule, lists as tuples in the object's order."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_api(cls, rule: Mapping[str, Any]) -> Rule:
        def strings(key: str) -> tuple[str, ...]:
            values = rule.get(key) or []
            return tuple(str(v) for v in values) if isinstance(values, list) else ()
        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"),
                   strings("nonResourceURLs"))

    def to_api(self) -> dict[str, Any]:
        """The PolicyRule as JSON (empty lists left out, as kube serializes it)."""
        fields = (("verbs", self.verbs), ("apiGroups", self.api_groups), ("resources", self.resources),
                  ("resourceNames", self.resource_names), ("nonResourceURLs", self.non_resource_urls))
        return {key: list(values) for key, values in fields if values or key == "verbs"}


@dataclass(frozen=True)
class RoleRef:
    """What a binding grants: a ClusterRole (namespace "") or a Role in the binding's namespace."""

    kind: str
    name: str
    namespace: str = ""

    @property
    def casbin_subject(self) -> str:
        return f"role:{self.namespace}/{self.name}" if self.kind == "Role" else f"clusterrole:{self.name}"

    def not_found(self) -> str:
        """The lister's NotFound message, as kube's RBAC reports a missing role."""
        return f'{self.kind.lower()}.{RBAC_GROUP} "{self.name}" not found'


@dataclass(frozen=True)
class Grant:
    """One subject of one binding: the unit the allow reason describes."""

    binding_kind: str  # "ClusterRoleBinding" or "RoleBinding"
    binding_name: str
    binding_namespace: str
    role: RoleRef
    subject_kind: str
    subject_name: str
    subject_namespace: str = ""

    def describe(self) -> str:
        """`ClusterRoleBinding "x" of ClusterRole "y" to User "alice"` (kube's binding describers)."""
        name = self.binding_name
        if self.binding_kind == "RoleBinding":
            name += "/" + self.binding_namespace
        subject = self.subject_name
        if self.subject_kind == "ServiceAccount":
            subject += "/" + self.subject_namespace
        return (f'{self.binding_kind} "{name}" of {self.role.kind} "{self.role.name}" '
                f'to {self.subject_kind} "{subject}"')


def identities(user: UserInfo) -> list[str]:
    """The Casbin subjects a user is asked as: the user, then each group."""
    return [f"user:{user.username}", *(f"group:{group}" for group in user.groups)]


def _subject_identity(subject: Mapping[str, Any], binding_namespace: str) -> tuple[str, str] | None:
    """(identity, service account namespace) of a binding subject; None for kinds kube ignores."""
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if not name:
        return None
    if kind == "User":
        return f"user:{name}", ""
    if kind == "Group":
        return f"group:{name}", ""
    if kind == "ServiceAccount":
        namespace = str(subject.get("namespace") or binding_namespace)
        return f"user:{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}", namespace
    return None


@dataclass
class Policy:
    """An immutable snapshot of the RBAC objects, with the Casbin enforcer that evaluates it."""

    enforcer: casbin.Enforcer
    rules: dict[RoleRef, tuple[Rule, ...]] = field(default_factory=dict)
    # (identity, domain) → the grants that link the identity to a role there; domain "*" is cluster-wide
    grants: dict[tuple[str, str], list[Grant]] = field(default_factory=dict)
    # every `resources` entry of a rule that also lists resourceNames: only these make a name matter
    _named_resources_field: str = ""  # in Casbin's field form, for model.resource_match

    @classmethod
    def build(cls, roles: Iterable[Mapping[str, Any]], cluster_roles: Iterable[Mapping[str, Any]],
              role_bindings: Iterable[Mapping[str, Any]],
              cluster_role_bindings: Iterable[Mapping[str, Any]]) -> Policy:
        policy = cls(casbin.Enforcer(_model(), enable_log=False))
        for fn_name, fn in model.FUNCTIONS.items():
            policy.enforcer.add_function(fn_name, fn)
        for obj in cluster_roles:
            policy._add_role(RoleRef("ClusterRole", _name(obj)), obj)
        for obj in roles:
            policy._add_role(RoleRef("Role", _name(obj), _namespace(obj)), obj)
        for obj in cluster_role_bindings:
            policy._add_binding("ClusterRoleBinding", obj, "*")
        for obj in role_bindings:
            policy._add_binding("RoleBinding", obj, _namespace(obj))
        policy._named_resources_field = model.join(sorted({resource for rules in policy.rules.values()
                                                           for r in rules if r.resource_names
                                                           for resource in r.resources}))
        lines = [[role.casbin_subject, *map(model.join, (r.verbs, r.api_groups, r.resources, r.resource_names,
                                                         r.non_resource_urls))]
                 for role, rules in policy.rules.items() for r in rules]
        links = sorted({(identity, grant.role.casbin_subject, domain)
                        for (identity, domain), grants in policy.grants.items() for grant in grants})
        if lines:
            policy.enforcer.add_policies(lines)
        if links:
            policy.enforcer.add_grouping_policies([list(link) for link in links])
        return policy

    def _add_role(self, ref: RoleRef, obj: Mapping[str, Any]) -> None:
        rules = obj.get("rules") or []
        self.rules[ref] = tuple(Rule.from_api(r) for r in rules if isinstance(r, Mapping))

    def _add_binding(self, kind: str, obj: Mapping[str, Any], domain: str) -> None:
        ref = obj.get("roleRef") or {}
        if not isinstance(ref, Mapping) or ref.get("kind") not in ("Role", "ClusterRole"):
            return
        # a RoleBinding's Role lives in the binding's namespace; a ClusterRoleBinding may only name ClusterRoles
        if kind == "ClusterRoleBinding" and ref["kind"] == "Role":
            return
        role = RoleRef(ref["kind"], str(ref.get("name") or ""), _namespace(obj) if ref["kind"] == "Role" else "")
        for subject in obj.get("subjects") or []:
            found = _subject_identity(subject, _namespace(obj)) if isinstance(subject, Mapping) else None
            if found is None:
                continue
            identity, sa_namespace = found
            grant = Grant(kind, _name(obj), _namespace(obj), role, str(subject["kind"]), str(subject["name"]),
                          sa_namespace)
            self.grants.setdefault((identity, domain), []).append(grant)

    # questions ---------------------------------------------------------------------------------------

    def name_matters(self, resource: str) -> bool:
        """Whether a request's object name can change the decision for `resource[/subresource]`: only when
        some rule with resourceNames could match it."""
        return model.resource_match(resource, self._named_resources_field)

    def grants_for(self, user: UserInfo, namespace: str) -> list[Grant]:
        """Every grant that applies to `user` for a request in `namespace` ("" = cluster scope): the
        ClusterRoleBindings first, then the namespace's RoleBindings, as kube visits them."""
        domains = ("*", namespace) if namespace else ("*",)
        return [grant for domain in domains for identity in identities(user)
                for grant in self.grants.get((identity, domain), ())]

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """The rules `user` holds in `namespace`, and the errors met (roles that do not exist)."""
        rules: list[Rule] = []
        errors: list[str] = []
        for grant in self.grants_for(user, namespace):
            role_rules = self.rules.get(grant.role)
            if role_rules is None:
                errors.append(grant.role.not_found())
            else:
                rules.extend(role_rules)
        return rules, errors

    def enforce(self, identity: str, namespace: str, verb: str, group: str, resource: str, name: str,
                path: str) -> RoleRef | None:
        """The role whose rule allows this request for one identity, or None."""
        allowed, explain = self.enforcer.enforce_ex(identity, namespace, verb, group, resource, name, path)
        if not allowed or not explain:
            return None
        return _role_of(explain[0])

    def grant_of(self, identities_: Sequence[str], namespace: str, role: RoleRef) -> Grant | None:
        """Which grant links one of `identities_` to `role` where the request is (cluster ones first)."""
        domains = ("*", namespace) if namespace else ("*",)
        for domain in domains:
            for identity in identities_:
                for grant in self.grants.get((identity, domain), ()):
                    if grant.role == role:
                        return grant
        return None


def _role_of(subject: str) -> RoleRef:
    kind, _, rest = subject.partition(":")
    if kind == "clusterrole":
        return RoleRef("ClusterRole", rest)
    namespace, _, name = rest.partition("/")
    return RoleRef("Role", name, namespace)


def _model() -> casbin.model.Model:
    loaded = casbin.model.Model()
    loaded.load_model_from_text(model.MODEL_TEXT)
    return loaded


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")

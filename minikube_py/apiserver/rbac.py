"""RBAC in the apiserver: the policy kept in step with the RBAC objects, the bootstrap policy, aggregated
ClusterRoles, escalation checks and the access-review endpoints.

`install(server)` is called once from `APIServer.start`, after the stores, the watch caches and the system
namespaces exist. It

1. reconciles kube's bootstrap roles and bindings (`auth/rbac/bootstrap.py`) the way kube's
   `rbac/bootstrap-roles` post-start hook does: missing objects are created; existing ones get the rules,
   aggregation selectors, labels, annotations and subjects they lack, unless they carry
   `rbac.authorization.kubernetes.io/autoupdate: "false"`; nothing is ever removed;
2. starts the ClusterRole aggregation loop: every ClusterRole with `aggregationRule.clusterRoleSelectors`
   gets as `rules` the rules of all ClusterRoles its selectors match (by name order, without repeats),
   rewritten whenever the clusterroles watch cache changes. In kube this is the
   clusterrole-aggregation controller of kube-controller-manager; mkpy has no controller manager yet,
   so it runs here for now;
3. wraps the handler's admitter so that every create and update of a Role, ClusterRole, RoleBinding or
   ClusterRoleBinding passes `check_grant` (escalation prevention, `auth/rbac/escalation.py`) first. kube
   does this check in the RBAC registry with the request's user; here the admitter is the one place that
   already receives the user for every write, so the check runs there, before mutating admission, even
   when no admission plugin is enabled;
4. registers the SubjectAccessReview family of handlers (`accessreviews.py`).

`RBAC.policy()` is the current `Policy` snapshot, rebuilt lazily when any of the four watch caches applied
a change (or relisted) since the last build: a new binding takes effect on the next request.
`--authorization-mode=RBAC` uses `RBAC.authorizer`; the bootstrap policy and escalation checks exist in
every mode, as in kube.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from ..admission.chain import AdmissionChain
from ..admission.interface import CREATE, UPDATE
from ..api import errors
from ..api.selectors import LabelSelector
from ..auth.authn import UserInfo
from ..auth.authorizer import Attributes, Decision
from ..auth.rbac import bootstrap
from ..auth.rbac.authorizer import RBACAuthorizer
from ..auth.rbac.escalation import PRIVILEGED_GROUP, confirm_no_escalation, missing_rules
from ..auth.rbac.policy import RBAC_GROUP, Policy, RoleRef, Rule
from . import accessreviews
from .admitter import Admitter, RequestAdmission
from .registry.generic import ResourceStore

log = logging.getLogger(__name__)

ROLES, ROLE_BINDINGS = (RBAC_GROUP, "v1", "roles"), (RBAC_GROUP, "v1", "rolebindings")
CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS = (RBAC_GROUP, "v1", "clusterroles"), (RBAC_GROUP, "v1", "clusterrolebindings")
# what an aggregated ClusterRole may grant: anything, so only someone holding everything may create one
FULL_AUTHORITY = (Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",)))


class RBAC:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.authorizer = RBACAuthorizer(self.policy)
        self._policy: Policy | None = None
        self._built_from: tuple[tuple[int, int], ...] = ()

    # the policy --------------------------------------------------------------------------------------

    def policy(self) -> Policy:
        """The snapshot of the four RBAC caches, rebuilt when one of them changed."""
        gvrs = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
        cachers = [self.server.cachers[gvr] for gvr in gvrs]
        version = tuple((id(cacher.objects), cacher.applied_revision) for cacher in cachers)
        if self._policy is None or version != self._built_from:
            objects = [self._objects(gvr) for gvr in gvrs]
            self._policy, self._built_from = Policy.build(*objects), version
        return self._policy

    def _objects(self, gvr: tuple[str, str, str]) -> list[dict[str, Any]]:
        store = self.server.stores[gvr]
        return [store.decode(kv) for kv in list(self.server.cachers[gvr].objects.values())]

    def authorized(self, user: UserInfo, verb: str, resource: str, namespace: str, name: str) -> bool:
        """Whether the server's whole authorizer chain allows `verb` on an RBAC object (escalate, bind)."""
        attributes = Attributes(user=user, verb=verb, namespace=namespace, api_group=RBAC_GROUP,
                                api_version="v1", resource=resource, name=name)
        return self.server.authorizer.authorize(attributes)[0] is Decision.ALLOW

    # escalation --------------------------------------------------------------------------------------

    def check_grant(self, user: UserInfo, resource: str, namespace: str, obj: dict[str, Any],
                    old: dict[str, Any] | None) -> None:
        """Refuse (403, or 404 for a binding to a missing role) a write that grants more than `user`
        holds, unless `user` may `escalate` the role or `bind` the referenced role."""
        if PRIVILEGED_GROUP in user.groups or (old is not None and _grants(obj) == _grants(old)):
            return
        name = str((obj.get("metadata") or {}).get("name") or "")
        if resource in ("roles", "clusterroles"):
            if self.authorized(user, "escalate", resource, namespace, name):
                return
            rules: tuple[Rule, ...] = tuple(Rule.from_api(r) for r in obj.get("rules") or [] if isinstance(r, dict))
            if resource == "clusterroles" and obj.get("aggregationRule"):
                rules = FULL_AUTHORITY
        else:
            ref = obj.get("roleRef") or {}
            kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
            if self.authorized(user, "bind", "roles" if kind == "Role" else "clusterroles", namespace, role_name):
                return
            role = RoleRef(kind, role_name, namespace if kind == "Role" else "")
            found = self.policy().rules.get(role)
            if found is None:
                raise errors.not_found(f"{kind.lower()}.{RBAC_GROUP}", role_name)
            rules = found
        refusal = confirm_no_escalation(self.policy(), user, namespace, rules)
        if refusal is not None:
            raise errors.forbidden_object(f"{resource}.{RBAC_GROUP}", name, refusal)

    # bootstrap -----------------------------------------------------------------------------------------

    async def reconcile_bootstrap_policy(self) -> None:
        """Create or complete kube's bootstrap ClusterRoles and ClusterRoleBindings."""
        for role in bootstrap.cluster_roles():
            await _reconcile(self.server.stores[CLUSTER_ROLES], role, _missing_role_parts)
        for binding in bootstrap.cluster_role_bindings():
            await _reconcile(self.server.stores[CLUSTER_ROLE_BINDINGS], binding, _missing_subjects)

    # aggregation ---------------------------------------------------------------------------------------

    async def follow_cluster_roles(self) -> None:
        """Aggregate now and after every ClusterRole change: the body of the apiserver's "clusterrole
        aggregation" background task (which runs it again when the watch ends, and after a failure)."""
        cacher = self.server.cachers[CLUSTER_ROLES]
        watcher = cacher.watch(cacher.prefix, cacher.applied_revision) if cacher.ready else None
        if watcher is None:  # not listed yet, or relisting
            await asyncio.sleep(0.05)
            return
        try:
            await self.aggregate()
            async for _event in watcher:
                await self.aggregate()
        finally:
            watcher.close()

    async def aggregate(self) -> None:
        """Rewrite the rules of every aggregating ClusterRole that no longer match its sources."""
        roles = sorted(self._objects(CLUSTER_ROLES), key=lambda r: r["metadata"]["name"])
        for role in roles:
            selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
            if not selectors:
                continue
            wanted = aggregated_rules(role["metadata"]["name"], selectors, roles)
            if wanted != (role.get("rules") or []):
                await self.server.stores[CLUSTER_ROLES].guaranteed_update(
                    "", role["metadata"]["name"], _set_rules(wanted))


def aggregated_rules(name: str, selectors: list[Any], roles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules of the ClusterRoles (other than `name`) that any selector matches, without repeats."""
    matchers = [LabelSelector.from_api(selector) for selector in selectors if isinstance(selector, dict)]
    rules: list[dict[str, Any]] = []
    for role in roles:
        labels = role["metadata"].get("labels") or {}
        if role["metadata"]["name"] == name or not any(m.matches(labels) for m in matchers):
            continue
        rules += [rule for rule in role.get("rules") or [] if rule not in rules]
    return rules


def _set_rules(rules: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def mutate(role: dict[str, Any]) -> dict[str, Any]:
        role["rules"] = rules
        return role
    return mutate


def _grants(obj: dict[str, Any]) -> tuple[Any, ...]:
    """What a role or binding grants: an update that keeps it needs no escalation check."""
    return (obj.get("rules"), obj.get("aggregationRule"), obj.get("roleRef"), obj.get("subjects"))


# reconciliation -----------------------------------------------------------------------------------------

async def _reconcile(store: ResourceStore, expected: dict[str, Any],
                     complete: Callable[[dict[str, Any], dict[str, Any]], bool]) -> None:
    """Create `expected`, or complete the existing object with `complete` (which reports a change)."""
    name = expected["metadata"]["name"]
    try:
        existing = await store.get("", name)
    except errors.APIError as err:
        if err.code != 404:
            raise
        with contextlib.suppress(errors.APIError):  # lost a race with another apiserver: fine
            await store.create("", expected)
        return
    if (existing["metadata"].get("annotations") or {}).get(bootstrap.AUTOUPDATE) == "false":
        return

    def mutate(live: dict[str, Any]) -> dict[str, Any]:
        _merge_metadata(live, expected)
        complete(live, expected)
        return live
    await store.guaranteed_update("", name, mutate)


def _merge_metadata(live: dict[str, Any], expected: dict[str, Any]) -> None:
    for field in ("labels", "annotations"):
        merged = {**expected["metadata"].get(field, {}), **(live["metadata"].get(field) or {})}
        live["metadata"][field] = merged


def _missing_role_parts(live: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Add the aggregation selectors and (for roles whose rules are not aggregated) the rule pieces that
    the live role lacks."""
    changed = False
    if expected.get("aggregationRule"):
        selectors = (live.setdefault("aggregationRule", {}).setdefault("clusterRoleSelectors", []))
        for selector in expected["aggregationRule"]["clusterRoleSelectors"]:
            if selector not in selectors:
                selectors.append(selector)
                changed = True
        return changed
    probe = UserInfo(username="system:bootstrap-reconciler")
    held = Policy.build([], [live], [], [{"metadata": {"name": "probe"}, "roleRef": {
        "kind": "ClusterRole", "name": live["metadata"]["name"]}, "subjects": [{"kind": "User",
                                                                            "name": probe.username}]}])
    missing = missing_rules(held, probe, "", [Rule.from_api(r) for r in expected.get("rules") or []])
    live["rules"] = (live.get("rules") or []) + [piece.to_api() for piece in missing]
    return bool(missing)


def _missing_subjects(live: dict[str, Any], expected: dict[str, Any]) -> bool:
    subjects = live.setdefault("subjects", [])
    added = [subject for subject in expected.get("subjects") or [] if subject not in subjects]
    subjects += added
    if not live["subjects"]:
        del live["subjects"]
    return bool(added)


# wiring ---------------------------------------------------------------------------------------------------

class EscalationAdmission(RequestAdmission):
    """The request's admission, preceded by the RBAC escalation check for the object being written."""

    def __init__(self, rbac: RBAC, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rbac = rbac

    async def mutate(self, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
        if obj is not None:
            attributes = self.attributes
            self.rbac.check_grant(attributes.user, attributes.resource, attributes.namespace, obj, old)
        return await super().mutate(obj, old)


class EscalationAdmitter(Admitter):
    """The handler's admitter, adding the escalation check to writes of the four RBAC resources."""

    def __init__(self, chain: AdmissionChain, rbac: RBAC) -> None:
        super().__init__(chain)
        self.rbac = rbac

    def for_request(self, operation: str, store: ResourceStore, **kwargs: Any) -> RequestAdmission | None:
        res = store.resource
        if res.group != RBAC_GROUP or operation not in (CREATE, UPDATE) or kwargs.get("subresource"):
            return super().for_request(operation, store, **kwargs)
        options = kwargs.pop("options", None) or {}
        return EscalationAdmission(self.rbac, self.chain, operation, store, options=options, **kwargs)


async def install(server: Any) -> RBAC:
    """Set RBAC up in a starting apiserver (see the module docstring); returns it for `server.rbac`."""
    rbac = RBAC(server)
    await rbac.reconcile_bootstrap_policy()
    server.handler.admitter = EscalationAdmitter(server.handler.admitter.chain, rbac)
    accessreviews.register(server, rbac)
    return rbac

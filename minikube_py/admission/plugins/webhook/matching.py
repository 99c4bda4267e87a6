"""Whether a webhook is called for a request, and as which resource (kube's `ShouldCallHook`).

Where it sits: the dispatcher (`generic.py`) asks `invocation_for(webhook, attributes, state)` for every
configured webhook; None means "skip it". A webhook is called when

1. its `namespaceSelector` matches the labels of the request's namespace (for a Namespace itself, on create
   and update, the labels of the object sent; cluster-scoped objects other than Namespaces always pass),
2. its `objectSelector` matches the labels of the new or the old object (an empty selector always passes),
3. one of its `rules` matches the operation, group, version, resource/subresource and scope of the request,
   or, with `matchPolicy: Equivalent`, of an equivalent resource: another version mkpy serves of the same
   stored objects (autoscaling/v1 and v2 HPAs, core/v1 and events.k8s.io/v1 Events). The webhook then sees
   the object converted to the version its rule names.

Requests on the webhook configurations themselves never call webhooks (`exempt`), so that a broken webhook
can always be removed. A namespace selector on a namespace that does not exist is a 404, as in kube.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....api import errors
from ....api.kinds import Resource, default_registry
from ...interface import CREATE, UPDATE, Attributes, ClusterState
from .config import GROUP, MUTATING, VALIDATING, Webhook

_EXEMPT = frozenset({MUTATING, VALIDATING})
_BUILTINS = default_registry()


@dataclass(frozen=True)
class Invocation:
    """A webhook to call, and the resource and kind (group, version, ...) it is called for: the request's
    own, or an equivalent one under `matchPolicy: Equivalent` (then `resource` differs from the request's)."""

    webhook: Webhook
    resource: tuple[str, str, str]
    kind: tuple[str, str, str]

    def converts(self, attributes: Attributes) -> bool:
        """Whether the webhook sees the object at another version than the request's."""
        return self.resource != (attributes.group, attributes.version, attributes.resource)


def exempt(attributes: Attributes) -> bool:
    """Requests on webhook configurations are never sent to webhooks (kube exempts them the same way)."""
    return attributes.group == GROUP and attributes.resource in _EXEMPT


def invocation_for(webhook: Webhook, attributes: Attributes, state: ClusterState) -> Invocation | None:
    """How to call `webhook` for this request, or None when it does not apply."""
    if not _selects_object(webhook, attributes):
        return None
    request = (attributes.group, attributes.version, attributes.resource)
    invocation = None
    if any(rule_matches(rule, attributes, request) for rule in webhook.rules):
        invocation = Invocation(webhook, request, attributes.kind)
    elif webhook.match_policy == "Equivalent":
        invocation = _equivalent_invocation(webhook, attributes)
    if invocation is None or not _selects_namespace(webhook, attributes, state):
        return None
    return invocation


def rule_matches(rule: Mapping[str, Any], attributes: Attributes, resource: tuple[str, str, str]) -> bool:
    """kube's `rules.Matcher`: scope, operation, group, version and `resource[/subresource]` all match."""
    group, version, plural = resource
    return (_scope_matches(str(rule.get("scope") or "*"), attributes)
            and _listed(rule.get("operations"), attributes.operation)
            and _listed(rule.get("apiGroups"), group)
            and _listed(rule.get("apiVersions"), version)
            and any(_resource_matches(str(item), plural, attributes.subresource)
                    for item in rule.get("resources") or ()))


def _listed(values: Any, value: str) -> bool:
    return any(item in ("*", value) for item in values or ())


def _resource_matches(item: str, plural: str, subresource: str) -> bool:
    res, _, sub = item.partition("/")
    return res in ("*", plural) and sub in ("*", subresource)


def _scope_matches(scope: str, attributes: Attributes) -> bool:
    # A Namespace is cluster-scoped, though kube's attributes for it carry its own name as namespace.
    cluster_scoped = attributes.resource == "namespaces" and not attributes.group or not attributes.namespace
    if scope == "Cluster":
        return cluster_scoped
    if scope == "Namespaced":
        return not cluster_scoped
    return True


def _equivalent_invocation(webhook: Webhook, attributes: Attributes) -> Invocation | None:
    for rule in webhook.rules:  # earlier rules win, as in kube
        for other in equivalent_resources(attributes.group, attributes.version, attributes.resource):
            resource = (other.group, other.version, other.plural)
            if rule_matches(rule, attributes, resource):
                kind = (other.group, other.version, other.kind)
                if attributes.subresource not in ("", "status"):
                    kind = attributes.kind  # Scale, Binding, ... are the same kind at every version
                return Invocation(webhook, resource, kind)
    return None


@functools.cache
def equivalent_resources(group: str, version: str, plural: str) -> tuple[Resource, ...]:
    """The other built-in group/versions that serve the same stored objects as this resource."""
    this = builtin_resource(group, version, plural)
    if this is None:
        return ()
    return tuple(r for r in _BUILTINS.resources if r.key_prefix == this.key_prefix and r is not this)


def builtin_resource(group: str, version: str, plural: str) -> Resource | None:
    return _BUILTINS.lookup(group, version, plural)


def _selects_object(webhook: Webhook, attributes: Attributes) -> bool:
    selector = webhook.object_selector
    if selector.empty:
        return True
    return any(obj is not None and selector.matches(_labels(obj))
               for obj in (attributes.object, attributes.old_object))


def _selects_namespace(webhook: Webhook, attributes: Attributes, state: ClusterState) -> bool:
    selector = webhook.namespace_selector
    is_namespace = attributes.resource == "namespaces" and not attributes.group
    if selector.empty or (not attributes.namespace and not is_namespace):
        return True
    if is_namespace and not attributes.subresource and attributes.operation in (CREATE, UPDATE):
        return selector.matches(_labels(attributes.object or {}))
    name = attributes.namespace or attributes.object_name
    namespace = state.get("", "namespaces", "", name)
    if namespace is None:
        raise errors.not_found("namespaces", name)
    return selector.matches(_labels(namespace))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}

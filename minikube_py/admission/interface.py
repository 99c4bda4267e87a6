"""The admission contract: what a plugin sees of a request, and the two kinds of plugin.

Admission runs inside the apiserver after authentication and authorization, on every write that reaches a
resource: CREATE, UPDATE (PUT and PATCH, on the resource or a subresource), DELETE, and CONNECT (exec,
attach, port-forward). It runs on dry-run requests too. The handler builds one `Attributes` per request
and the chain (`chain.py`) hands it to each enabled plugin in order:

1. mutating plugins (`MutatingPlugin.admit`) may change `attributes.object` in place (set defaults, inject a
   volume, fill `priority`) or refuse the request;
2. then the object is defaulted and validated by the registry;
3. then validating plugins (`ValidatingPlugin.validate`) may only refuse it.

A plugin refuses by raising `APIError` (usually `forbidden(attributes, why)`, a 403 like kube's, or an
`invalid` 422); anything else it raises is an internal error. Plugins read the cluster through
`ClusterState` (the apiserver's watch caches, like kube's informer listers): never from etcd directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..api import errors
from ..auth.authn import UserInfo

CREATE, UPDATE, DELETE, CONNECT = "CREATE", "UPDATE", "DELETE", "CONNECT"


@dataclass
class Attributes:
    """One request, as admission plugins see it (kube's `admission.Attributes`).

    `object` is the new object (None for DELETE; for CONNECT the options, such as PodExecOptions); mutating
    plugins change it in place.
    `old_object` is the stored object for UPDATE and DELETE. `kind` is (group, version, kind) of `object`:
    for a subresource it is the subresource's kind (`Scale`, `Binding`, `PodExecOptions`).
    `options` is the CreateOptions/UpdateOptions/DeleteOptions object of the request, for webhooks.
    `warnings` go back to the client as `Warning` headers (kube's `warning.AddWarning`) when the request
    succeeds; `audit_annotations` go on the request's audit event (kube's `audit.AddAuditAnnotation`).
    `default` fills in kube's defaults on an object of `kind` (None where the request's object is not the
    resource's own, such as a Scale): the registry defaults the object before mutating admission, and a
    mutating webhook's changes are defaulted with it, as kube's webhook dispatcher does.
    """

    operation: str
    group: str
    version: str
    resource: str
    kind: tuple[str, str, str]
    user: UserInfo
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)
    default: Callable[[dict[str, Any]], None] | None = None

    @property
    def group_resource(self) -> str:
        """`pods` or `deployments.apps`, as messages name the resource."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def object_name(self) -> str:
        """The object's name: from the URL, else (on a create) from the object itself (its name, else its
        generateName, else "Unknown", as kube's admission errors say)."""
        if self.name:
            return self.name
        meta = (self.object or {}).get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "Unknown")


class ClusterState(Protocol):
    """What admission plugins may read (and, for ResourceQuota's usage, write) of the cluster."""

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object from the watch cache, or None. Never mutate it; copy first."""
        ...

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        """All objects of a resource (in `namespace`, or everywhere for ""), from the watch cache. The list
        and its objects may be shared with other callers: never mutate them; copy first."""
        ...

    async def update(self, group: str, resource: str, namespace: str, name: str,
                     mutate: Callable[[dict[str, Any]], dict[str, Any]], subresource: str = "") -> dict[str, Any]:
        """A read-modify-write of one object through the registry, retried on conflicts."""
        ...


class Plugin(Protocol):
    """What every plugin has: its name, and which operations it cares about."""

    name: str

    def handles(self, operation: str) -> bool:
        """False: skip this plugin for requests with this operation."""
        ...


class MutatingPlugin(Plugin, Protocol):
    async def admit(self, attributes: Attributes) -> None:
        """Change `attributes.object` in place, or raise APIError to refuse the request."""
        ...


class ValidatingPlugin(Plugin, Protocol):
    async def validate(self, attributes: Attributes) -> None:
        """Raise APIError to refuse the request; must not change anything."""
        ...


# A plugin factory: given the cluster state and the apiserver's options, build the plugin.
PluginFactory = Callable[[ClusterState, Any], "MutatingPlugin | ValidatingPlugin"]


def forbidden(attributes: Attributes, why: str) -> errors.APIError:
    """A 403 refusing the request, in kube's words: `pods "web" is forbidden: <why>`."""
    return errors.forbidden_object(attributes.group_resource, attributes.object_name, why)

"""NamespaceLifecycle: nothing new in a namespace that is missing or being deleted; system namespaces stay.

The first plugin of the chain (so later plugins never look up service accounts or quotas of a namespace
that is not there). On a request for an object in a namespace it answers, as kube does:

* 404 `namespaces "x" not found` when the namespace does not exist (for a create or an update);
* 403 `pods "web" is forbidden: unable to create new content in namespace x because it is being
  terminated` for a create in a namespace whose phase is Terminating (with a `NamespaceTerminating` cause);
* 403 `namespaces "kube-system" is forbidden: this namespace may not be deleted` for a delete of
  `default`, `kube-system` or `kube-public`.

Deletes of other objects and everything on cluster-scoped objects pass. Namespaces are read from the watch
cache; a namespace created a moment ago may not be in it yet, so a missing one is waited for briefly
(`wait_for`, shared with the ServiceAccount plugin) before the request is refused. The registry keeps its
own live check (`apiserver/namespaces.py`) for the apiserver's internal writes, which skip admission.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ...api import errors
from ..interface import CREATE, DELETE, UPDATE, Attributes, ClusterState, forbidden

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
MISSING_NAMESPACE_WAIT = 1.0  # seconds a missing namespace is waited for in the cache before a 404
POLL_INTERVAL = 0.01


async def wait_for(state: ClusterState, group: str, resource: str, namespace: str, name: str,
                   timeout: float) -> dict[str, Any] | None:
    """The object from the cache, waiting up to `timeout` seconds for it to appear (the cache trails etcd
    by the time a watch event takes); None if it never does."""
    found = state.get(group, resource, namespace, name)
    deadline = time.monotonic() + timeout
    while found is None and time.monotonic() < deadline:
        await asyncio.sleep(POLL_INTERVAL)
        found = state.get(group, resource, namespace, name)
    return found


class NamespaceLifecycle:
    name = "NamespaceLifecycle"

    def __init__(self, state: ClusterState, missing_wait: float = MISSING_NAMESPACE_WAIT) -> None:
        self.state = state
        self.missing_wait = missing_wait

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE, DELETE)

    async def admit(self, attributes: Attributes) -> None:
        is_namespace = attributes.group == "" and attributes.resource == "namespaces"
        if is_namespace:
            if attributes.operation == DELETE and attributes.name in IMMORTAL_NAMESPACES:
                raise forbidden(attributes, "this namespace may not be deleted")
            return
        if not attributes.namespace or attributes.operation == DELETE:
            return
        namespace = await wait_for(self.state, "", "namespaces", "", attributes.namespace,
                                   self.missing_wait if attributes.operation == CREATE else 0)
        if namespace is None:
            raise errors.not_found("namespaces", attributes.namespace)
        if attributes.operation == CREATE and (namespace.get("status") or {}).get("phase") == "Terminating":
            raise terminating(attributes)


def terminating(attributes: Attributes) -> errors.APIError:
    """kube's refusal of a create in a namespace being deleted, with the cause clients look for."""
    ns = attributes.namespace
    err = forbidden(attributes, f"unable to create new content in namespace {ns} because it is being terminated")
    err.details.setdefault("causes", []).append(
        {"reason": "NamespaceTerminating", "message": f"namespace {ns} is being terminated",
         "field": "metadata.namespace"})
    return err

"""The garbage collector's monitors: an informer on every resource an owner or a dependent can be of.

Any object may own any other, so the collector must see every kind the apiserver serves, custom resources
included. From discovery it takes each group's preferred version of every resource that supports `list`,
`watch` and `delete` (kube's `GetDeletableResources`), except events (core and events.k8s.io: they are many,
short-lived and never own anything). For each it registers a handler on the shared informer of that
resource, which turns every add, update and delete into a `GraphEvent` for the graph builder.

Discovery is read again every 30 seconds (kube's `GarbageCollector.Sync` period): a CRD created later gets a
monitor at the next pass, and a resource no longer served loses its handler. When a group's discovery
document cannot be read, its resources keep their monitors rather than being dropped for one bad answer.

Usage rules: monitors share informers with every other controller (one watch per resource per process),
so a resource from discovery is mapped to the built-in `Resource` of the same name when there is one.
`sync` may be called again at any time; it only adds and removes what changed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.client.discovery import Discovery, with_verbs
from minikube_py.client.informer import (
    FuncHandler,
    HandlerRegistration,
    SharedIndexInformer,
    SharedInformerFactory,
)
from minikube_py.client.store import DeletedFinalStateUnknown

from .builder import ADD, DELETE, UPDATE, GraphBuilder, GraphEvent

IGNORED_RESOURCES = {("", "events"), ("events.k8s.io", "events")}  # (group, plural)
ResourceKey = tuple[str, str, str]  # (group, version, plural)

log = logging.getLogger(__name__)


def deletable_resources(discovery: Discovery) -> dict[ResourceKey, Resource]:
    """The resources to monitor, by (group, version, plural)."""
    found = {}
    for resource in with_verbs(discovery.preferred(), "list", "watch", "delete"):
        if (resource.group, resource.plural) not in IGNORED_RESOURCES:
            found[_key(resource)] = resource
    return found


class Monitors:
    def __init__(self, informers: SharedInformerFactory, builder: GraphBuilder) -> None:
        self.informers = informers
        self.builder = builder
        self._monitors: dict[ResourceKey, tuple[SharedIndexInformer, HandlerRegistration]] = {}

    def sync(self, discovery: Discovery) -> None:
        """Monitor exactly the deletable resources of `discovery` (keeping those of groups it failed to read)."""
        wanted = deletable_resources(discovery)
        failed = {tuple(gv.rpartition("/")[::2]) for gv in discovery.failed}  # (group, version)
        for key in [key for key in self._monitors if key not in wanted and key[:2] not in failed]:
            informer, registration = self._monitors.pop(key)
            informer.remove_event_handler(registration)
            log.info("stopped monitoring %s: no longer served", informer.resource.group_resource)
        added = [resource for key, resource in wanted.items() if key not in self._monitors]
        for resource in added:
            informer = self.informers.informer_for(resource)
            registration = informer.add_event_handler(self._handler(resource), resync_period=0)
            self._monitors[_key(resource)] = (informer, registration)
        if added:
            log.info("monitoring %d more resource(s) (%d in all): %s", len(added), len(self._monitors),
                     ", ".join(sorted(r.group_resource for r in added)))

    def has_synced(self) -> bool:
        return bool(self._monitors) and all(reg.has_synced() for _, reg in self._monitors.values())

    async def wait_for_sync(self, timeout: float) -> bool:
        """Wait until every monitor has seen its first list; False if `timeout` seconds pass first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.has_synced():
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    def resources(self) -> list[Resource]:
        return [informer.resource for informer, _ in self._monitors.values()]

    def _handler(self, resource: Resource) -> FuncHandler:
        api_version, kind, process = resource.api_version, resource.kind, self.builder.process

        def on_delete(obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                obj = obj.obj
            process(GraphEvent(DELETE, obj, api_version, kind))

        return FuncHandler(on_add=lambda obj: process(GraphEvent(ADD, obj, api_version, kind)),
                           on_update=lambda old, new: process(GraphEvent(UPDATE, new, api_version, kind, old=old)),
                           on_delete=on_delete)


def _key(resource: Resource) -> ResourceKey:
    return (resource.group, resource.version, resource.plural)

"""The resource quota controller: keeps each ResourceQuota's `status` equal to what its namespace really uses.

Admission charges a quota as objects are created (admission/plugins/resourcequota.py), but nothing there
gives usage back: a deleted pod, a pod that finished, a create refused by a later check after the quota was
charged. This controller recounts. `status.hard` is copied from the spec and `status.used` summed over the
objects the quota tracks (`quota_status`, the same arithmetic admission uses), read from informer caches.

When it recounts a quota (kube's triggers):
* the quota is created, or its `spec.hard` or scopes change (not on status changes: those are admission's
  charges, and recounting then could race the object that was just charged into the cache);
* "replenishment": an object the quota counts is deleted, a pod finishes (Succeeded/Failed), a service
  changes type, a claim changes its request; all quotas of that namespace are recounted;
* every `resource_quota_sync_period` (5 minutes) all quotas, which settles whatever the triggers missed.

Which kinds a quota counts follows from its `hard` names (`pods`, `requests.cpu`, `count/deployments.apps`,
…); the informer for each is started the first time a quota needs it, and a `count/<resource>.<group>` of a
custom resource is looked up in discovery. The status is written with the quota's resourceVersion, so a
charge made meanwhile makes the write fail with Conflict and the quota is recounted.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minikube_py.api.kinds import Resource, default_registry
from minikube_py.api.quota import quota_status, tracked_resource
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.discovery import discover
from minikube_py.client.informer import FuncHandler, SharedIndexInformer
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext

CACHE_SYNC_TIMEOUT = 30.0
TERMINAL_PHASES = ("Succeeded", "Failed")

log = logging.getLogger(__name__)


class ResourceQuotaController:
    name = "resourcequota-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.clock = ctx.clock
        self.informers = ctx.informers
        self.period = ctx.settings.resource_quota_sync_period
        self.quotas = ctx.informers.informer_for(resources.RESOURCE_QUOTAS)
        self.queue = RateLimitingQueue(name="resourcequota_primary", clock=ctx.clock)
        self._tracked: dict[tuple[str, str], SharedIndexInformer] = {}
        self.quotas.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=self._quota_updated))

    async def run(self, workers: int = 1) -> None:
        await self.quotas.wait_for_cache_sync()
        try:
            await asyncio.gather(run_workers(self.queue, self.sync, workers, name="resourcequota", logger=log),
                                 self._resync_all())
        finally:
            self.queue.shut_down()

    async def _resync_all(self) -> None:
        while True:
            await self.clock.sleep(self.period)
            for quota in self.quotas.lister().list():
                self._enqueue(quota)

    # triggers ---------------------------------------------------------------------------------------------

    def _enqueue(self, quota: dict[str, Any], *_: Any) -> None:
        self.queue.add(meta_namespace_key(quota))

    def _quota_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _counting_rules(old) != _counting_rules(new) or \
                (new.get("status") or {}).get("hard") != (new.get("spec") or {}).get("hard"):
            self._enqueue(new)

    def _replenish(self, group: str, plural: str, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        namespace = obj["metadata"].get("namespace", "")
        for quota in self.quotas.lister().list(namespace):
            if (group, plural) in _tracked_resources(quota):
                self._enqueue(quota)

    def _tracked_changed(self, group: str, plural: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _usage_may_have_dropped(group, plural, old, new):
            self._replenish(group, plural, new)

    # sync -------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        quota = self.quotas.indexer.get_by_key(key)
        if quota is None:
            return
        for group, plural in _tracked_resources(quota):
            await self._informer(group, plural)
        status = quota_status(_Listers(self._tracked), quota)
        if status == quota.get("status"):
            return
        updated = {**quota, "status": status}
        try:
            await self.client.update(resources.RESOURCE_QUOTAS, updated, quota["metadata"]["namespace"],
                                     subresource="status")
        except errors.NotFound:
            return

    async def _informer(self, group: str, plural: str) -> SharedIndexInformer | None:
        """The synced informer for a tracked resource, started on first use; None if nobody serves it."""
        informer = self._tracked.get((group, plural))
        if informer is None:
            resource = await self._resource(group, plural)
            if resource is None:
                return None
            informer = self.informers.informer_for(resource)
            informer.add_event_handler(FuncHandler(
                on_update=lambda old, new: self._tracked_changed(group, plural, old, new),
                on_delete=lambda obj: self._replenish(group, plural, obj)))
            self._tracked[(group, plural)] = informer
        if not await informer.wait_for_cache_sync(CACHE_SYNC_TIMEOUT):
            raise TimeoutError(f"the cache of {plural}.{group} did not sync")
        return informer

    async def _resource(self, group: str, plural: str) -> Resource | None:
        builtin = next((r for r in default_registry().resources if (r.group, r.plural) == (group, plural)
                        and not r.storage_version), None)
        if builtin is not None:
            return builtin
        found = await discover(self.client)
        return next((r for r in found.preferred() if (r.group, r.plural) == (group, plural)), None)


class _Listers:
    """The informer caches, read the way `quota_status` reads objects."""

    def __init__(self, informers: dict[tuple[str, str], SharedIndexInformer]) -> None:
        self.informers = informers

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        informer = self.informers.get((group, resource))
        return informer.lister().list(namespace or None) if informer is not None else []


def _counting_rules(quota: dict[str, Any]) -> tuple[Any, ...]:
    spec = quota.get("spec") or {}
    return spec.get("hard"), spec.get("scopes"), spec.get("scopeSelector")


def _tracked_resources(quota: dict[str, Any]) -> set[tuple[str, str]]:
    hard = (quota.get("spec") or {}).get("hard") or {}
    return {tracked for tracked in map(tracked_resource, hard) if tracked is not None}


def _usage_may_have_dropped(group: str, plural: str, old: dict[str, Any], new: dict[str, Any]) -> bool:
    if group:
        return False
    if plural == "pods":
        phase = (new.get("status") or {}).get("phase")
        return phase in TERMINAL_PHASES and (old.get("status") or {}).get("phase") != phase
    if plural == "services":
        return (old.get("spec") or {}).get("type") != (new.get("spec") or {}).get("type")
    if plural == "persistentvolumeclaims":
        return ((old.get("spec") or {}).get("resources") != (new.get("spec") or {}).get("resources"))
    return False

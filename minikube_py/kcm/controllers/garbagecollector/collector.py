"""The garbage collector controller: deletes objects whose owners are gone, and carries out the Foreground
and Orphan propagation policies of deletes (kube's `GarbageCollector`).

The graph builder (builder.py) queues nodes; two kinds of workers take them:

`attempt_to_delete` (kube's `attemptToDeleteItem`) for one node:
1. an object already being deleted (without waiting for dependents) is left alone: it is on its way out;
2. the live object is read; if the apiserver has none with that uid, the graph is told (a "virtual"
   delete) and that ends it: this is how virtual owners are verified;
3. an owner deleting its dependents in the foreground (`foregroundDeletion` finalizer) loses the finalizer
   once no dependent with `blockOwnerDeletion: true` is left; until then its blocking dependents are queued;
4. otherwise each ownerReference is classified by a live GET of the owner (or the absent-owner cache):
   *dangling* (404, or another uid: the owner was deleted, maybe re-created), *waiting* (the owner is being
   deleted in the foreground) or *solid* (the owner exists);
5. with a solid owner the object stays, only its dangling and waiting references are removed (a patch);
   with none, it is deleted: in the foreground if a waiting owner needs that (and the object has dependents
   of its own), else as its own finalizers ask (`orphan`, `foregroundDeletion`) or in the background.
   In a cycle of foreground deletions an object first unblocks its own references, so nothing deadlocks.

`attempt_to_orphan` for an owner deleted with `propagationPolicy: Orphan` (the `orphan` finalizer): its
reference is removed from every dependent, then the finalizer, and the owner goes away.

A cluster-scoped object cannot be owned by a namespaced one: such a reference is never followed, the
object is never collected for it, and a Warning event `OwnerRefInvalidNamespace` says why.

Every decision is logged at info, naming the object and the owner that caused it, so a student can follow
a cascade in the controller manager's log. Failures (a 409, the apiserver down, a kind not served yet) put
the node back with exponential backoff (5 ms doubling to 1000 s), never in a hot loop. Discovery is read
again every 30 s (monitors.py), which also refreshes the apiVersion/kind → resource mapping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from minikube_py.client import errors
from minikube_py.client.discovery import discover
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext

from .builder import GraphBuilder
from .graph import FOREGROUND, ORPHAN, Node, ObjectReference, OwnerReference, has_finalizer
from .monitors import Monitors
from .operations import ObjectOperations, RESTMappingError

DISCOVERY_PERIOD = 30.0  # seconds between discovery passes (kube's GarbageCollector.Sync period)

log = logging.getLogger(__name__)


class InvalidOwnerReference(Exception):
    """A cluster-scoped object names an owner of a namespaced kind: not resolvable, never retried."""


class GarbageCollector:
    name = "garbage-collector-controller"

    def __init__(self, ctx: ControllerContext, discovery_period: float = DISCOVERY_PERIOD) -> None:
        self.clock = ctx.clock
        self.client = ctx.client
        self.builder = GraphBuilder(ctx.recorder, ctx.clock)
        self.monitors = Monitors(ctx.informers, self.builder)
        self.objects = ObjectOperations(ctx.client)
        self.discovery_period = discovery_period
        self.attempt_to_delete = self.builder.attempt_to_delete
        self.attempt_to_orphan = self.builder.attempt_to_orphan

    async def run(self, workers: int) -> None:
        await self.resync()
        if await self.monitors.wait_for_sync(self.discovery_period):
            log.info("garbage collector: all resource monitors have synced")
        else:
            log.info("garbage collector: not all resource monitors could be synced, proceeding anyway")
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._rediscover(), name="gc-discovery")
                for index in range(workers):
                    group.create_task(_work(self.attempt_to_delete, self.attempt_to_delete_worker),
                                      name=f"gc-attempt-to-delete-{index}")
                    group.create_task(_work(self.attempt_to_orphan, self.attempt_to_orphan_worker),
                                      name=f"gc-attempt-to-orphan-{index}")
        finally:
            self.attempt_to_delete.shut_down()
            self.attempt_to_orphan.shut_down()

    async def resync(self) -> None:
        """Read discovery; monitor what it serves and map kinds with it. A failure keeps the last state."""
        try:
            found = await discover(self.client)
        except (errors.APIStatusError, errors.TransportError, ValueError) as error:
            log.warning("garbage collector: discovery failed, keeping the resources monitored so far: %s", error)
            return
        if found.failed:
            log.info("garbage collector: failed to discover some groups: %s", found.failed)
        if not found.resources:
            return
        self.objects.discovery = found
        self.monitors.sync(found)

    async def _rediscover(self) -> None:
        while True:
            await self.clock.sleep(self.discovery_period)
            await self.resync()

    # attempt to delete ------------------------------------------------------------------------------------

    async def attempt_to_delete_worker(self, node: Node) -> bool:
        """Process one node; True to retry it later (with backoff)."""
        if self.builder.uid_to_node.get(node.identity.uid) is not node:
            return False  # removed from the graph (or replaced) since it was queued
        try:
            resolved = await self.attempt_to_delete_item(node)
        except InvalidOwnerReference:
            return False
        # a virtual node whose object exists waits to be observed, or it could stay in the graph for ever
        return not resolved and node.virtual

    async def attempt_to_delete_item(self, node: Node) -> bool:
        """One decision for `node`; True once the graph was told the object is gone."""
        identity = node.identity
        if node.being_deleted and not node.deleting_dependents:
            return False
        try:
            latest = await self.objects.get(identity)
        except errors.NotFound:
            self.builder.virtual_delete(identity)
            return True
        if latest["metadata"].get("uid") != identity.uid:
            self.builder.virtual_delete(identity)  # a new object of the same name: ours is gone
            return True
        if node.deleting_dependents:
            await self.process_deleting_dependents(node)
            return False
        owners: list[OwnerReference] = list(latest["metadata"].get("ownerReferences") or [])
        if not owners:
            return False
        solid, dangling, waiting = await self.classify_references(node, owners)
        if solid:
            if dangling or waiting:
                log.info("removing the ownerReferences of %s to %s: %s; it still has owner %s",
                         identity.describe(), _names(dangling + waiting), _why(dangling, waiting), _names(solid))
                await self.objects.remove_owner_references(identity, [str(r["uid"]) for r in dangling + waiting])
            return False
        if waiting and node.dependents:
            if any(dep.deleting_dependents for dep in node.dependents):
                log.info("%s and one of its dependents both wait for their dependents: unblocking its "
                         "ownerReferences so the cycle cannot deadlock", identity.describe())
                await self.objects.unblock_owner_references(identity, node.owners)
            policy = "Foreground"
        else:
            policy = "Orphan" if has_finalizer(latest, ORPHAN) else \
                "Foreground" if has_finalizer(latest, FOREGROUND) else "Background"
        log.info("deleting %s (propagation %s) because %s", identity.describe(), policy, _why(dangling, waiting))
        try:
            await self.objects.delete(identity, latest["metadata"].get("resourceVersion", ""), owners, policy)
        except errors.NotFound:
            self.builder.virtual_delete(identity)
            return True
        return False

    async def classify_references(self, node: Node, references: list[OwnerReference]
                                  ) -> tuple[list[OwnerReference], list[OwnerReference], list[OwnerReference]]:
        """(solid, dangling, waiting): owners that exist, owners that are gone, owners being deleted in the
        foreground (kube's `classifyReferences`)."""
        solid, dangling, waiting = [], [], []
        for ref in references:
            owner = await self.live_owner(node, ref)
            if owner is None:
                dangling.append(ref)
            elif owner["metadata"].get("deletionTimestamp") and has_finalizer(owner, FOREGROUND):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def live_owner(self, node: Node, ref: OwnerReference) -> dict[str, Any] | None:
        """The owner `ref` names, read from the apiserver; None if it is gone (kube's `isDangling`)."""
        namespace = node.identity.namespace
        resource = self.objects.resource_for(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        if resource is not None and resource.namespaced and not namespace:
            self.builder.report_invalid_namespace(node, str(ref.get("uid", "")))
            raise InvalidOwnerReference(f"{node.identity.describe()} is cluster-scoped but names the namespaced "
                                        f"owner {ref.get('kind')} {ref.get('name')}")
        absent = self.builder.absent_owners
        if ObjectReference.of_owner(ref, "") in absent or ObjectReference.of_owner(ref, namespace) in absent:
            return None
        if resource is None:
            raise RESTMappingError(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        owner = ObjectReference.of_owner(ref, namespace if resource.namespaced else "")
        try:
            live = await self.objects.get(owner)
        except errors.NotFound:
            absent.add(owner)
            return None
        if live["metadata"].get("uid") != owner.uid:
            absent.add(owner)  # deleted and re-created under the same name: not the owner any more
            return None
        return live

    async def process_deleting_dependents(self, node: Node) -> None:
        """An owner deleted in the foreground: finish it once nothing blocks it, else push its dependents."""
        blocking = node.blocking_dependents()
        if not blocking:
            if await self.objects.remove_finalizer(node.identity, FOREGROUND):
                log.info("removing the foregroundDeletion finalizer of %s: no dependent blocks its deletion "
                         "any more", node.identity.describe())
            return
        for dep in blocking:
            if not dep.deleting_dependents:
                self.attempt_to_delete.add(dep)

    # attempt to orphan -------------------------------------------------------------------------------------

    async def attempt_to_orphan_worker(self, owner: Node) -> bool:
        """Detach every dependent of `owner`, then drop its `orphan` finalizer; True to retry later."""
        dependents = list(owner.dependents)
        results = await asyncio.gather(*(self._orphan(owner.identity, dep) for dep in dependents),
                                       return_exceptions=True)
        failures = [result for result in results if isinstance(result, BaseException)]
        if failures:
            log.warning("orphaning the dependents of %s failed, retrying later: %s", owner.identity.describe(),
                        "; ".join(map(str, failures)))
            return True
        if await self.objects.remove_finalizer(owner.identity, ORPHAN):
            log.info("removing the orphan finalizer of %s: its %d dependent(s) are orphaned",
                     owner.identity.describe(), len(dependents))
        return False

    async def _orphan(self, owner: ObjectReference, dependent: Node) -> None:
        log.info("orphaning %s: removing its ownerReference to %s, which is being deleted with propagation Orphan",
                 dependent.identity.describe(), owner.describe())
        with contextlib.suppress(errors.NotFound):
            await self.objects.remove_owner_references(dependent.identity, [owner.uid])


async def _work(queue: RateLimitingQueue, attempt: Callable[[Node], Awaitable[bool]]) -> None:
    """A worker of one of the two queues. Unlike `client.controller.run_workers`, an attempt may ask for a
    retry without failing (a virtual node not observed yet), so the loop is written out here, as kube does."""
    while True:
        node, shutdown = await queue.get()
        if shutdown:
            return
        assert isinstance(node, Node)
        try:
            retry = await attempt(node)
        except RESTMappingError as error:
            log.warning("garbage collector: %s (for %r); retrying after the next discovery", error, node)
            retry = True
        except (errors.APIStatusError, errors.TransportError) as error:
            log.warning("garbage collector: error processing %r, retrying: %s", node, error)
            retry = True
        except Exception:
            log.exception("garbage collector: error processing %r, retrying", node)
            retry = True
        if retry:
            queue.add_rate_limited(node)
        else:
            queue.forget(node)
        queue.done(node)
        await asyncio.sleep(0)


def _names(refs: list[OwnerReference]) -> str:
    return ", ".join(f"{ref.get('kind')} {ref.get('name')}" for ref in refs)


def _why(dangling: list[OwnerReference], waiting: list[OwnerReference]) -> str:
    reasons = []
    if dangling:
        reasons.append(f"its owner {_names(dangling)} is gone" if len(dangling) == 1
                       else f"its owners {_names(dangling)} are gone")
    if waiting:
        reasons.append(f"its owner {_names(waiting)} is being deleted in the foreground" if len(waiting) == 1
                       else f"its owners {_names(waiting)} are being deleted in the foreground")
    return " and ".join(reasons)

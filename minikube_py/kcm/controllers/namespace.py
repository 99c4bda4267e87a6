"""The namespace controller: empties a namespace that is being deleted, then lets it go.

`kubectl delete namespace demo` does not delete anything but the namespace's own record at first: the
apiserver marks it (deletionTimestamp, phase `Terminating`) and keeps it because its `spec.finalizers` holds
`kubernetes`, and refuses new objects in it. This controller does the rest, for every namespace whose
deletion has started:

1. discovery: every namespaced kind the apiserver serves that can be deleted (custom resources included);
2. for each kind, a delete-collection of everything in the namespace (or list and delete one by one when
   the kind has no deletecollection); the objects go through their own deletion, so pods get their grace
   period and objects with finalizers wait for them;
3. a count of what is left: kinds with objects remaining and the finalizers holding them;
4. the namespace's status conditions report how far it got (kube's five condition types:
   `NamespaceDeletionDiscoveryFailure`, `NamespaceDeletionGroupVersionParsingFailure`,
   `NamespaceDeletionContentFailure`, `NamespaceContentRemaining`, `NamespaceFinalizersRemaining`);
5. when nothing is left, `kubernetes` is removed from `spec.finalizers` through the `finalize` subresource,
   and the apiserver deletes the namespace. While something remains, the namespace is looked at again
   after a few seconds (the shortest remaining grace period of its pods, at least `RECHECK_DELAY`).

`kubectl describe namespace demo` shows the conditions while it waits, e.g. "Some resources are
remaining: pods. has 2 resource instances".
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.api.timestamps import parse_time, time_string
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.discovery import discover, with_verbs
from minikube_py.client.informer import FuncHandler
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext

FINALIZER = "kubernetes"
RECHECK_DELAY = 2.0  # seconds before looking again at a namespace whose content is still going away
MAX_RECHECK_DELAY = 15.0

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """What one pass over a terminating namespace found."""

    discovery_failures: dict[str, str] = field(default_factory=dict)
    deletion_failures: list[str] = field(default_factory=list)
    remaining: Counter[str] = field(default_factory=Counter)  # "pods." -> objects left
    finalizers: Counter[str] = field(default_factory=Counter)  # finalizer -> objects it holds
    estimate: float = 0.0  # seconds until the slowest pod's grace period ends

    @property
    def done(self) -> bool:
        return not self.remaining and not self.deletion_failures and not self.discovery_failures


class NamespaceController:
    name = "namespace-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.clock = ctx.clock
        self.namespaces = ctx.informers.informer_for(resources.NAMESPACES)
        self.queue = RateLimitingQueue(name="namespace", clock=ctx.clock)
        self.namespaces.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda _, new: self._enqueue(new)))

    async def run(self, workers: int = 10) -> None:
        await self.namespaces.wait_for_cache_sync()
        try:
            await run_workers(self.queue, self.sync, workers, name="namespace", logger=log)
        finally:
            self.queue.shut_down()

    def _enqueue(self, namespace: dict[str, Any], *_: Any) -> None:
        if namespace["metadata"].get("deletionTimestamp"):
            self.queue.add(namespace["metadata"]["name"])

    async def sync(self, name: str) -> None:
        try:
            namespace = await self.client.get(resources.NAMESPACES, name)  # never act on a stale copy
        except errors.NotFound:
            return
        if not namespace["metadata"].get("deletionTimestamp") or \
                FINALIZER not in ((namespace.get("spec") or {}).get("finalizers") or []):
            return
        progress = await self.delete_content(name)
        namespace = await self._report(namespace, progress)
        if not progress.done:
            log.info("namespace %s: waiting for %s", name, _remaining_message(progress) or "failed deletions")
            self.queue.add_after(name, min(max(progress.estimate, RECHECK_DELAY), MAX_RECHECK_DELAY))
            return
        await self._finalize(namespace)
        log.info("namespace %s: content removed, finalizer %r dropped", name, FINALIZER)

    async def delete_content(self, namespace: str) -> Progress:
        progress = Progress()
        found = await discover(self.client)
        progress.discovery_failures = found.failed
        kinds = [r for r in with_verbs(found.preferred(), "list", "delete") if r.namespaced]
        now = self.clock.wall().timestamp()
        for outcome in await asyncio.gather(*(self._delete_all(r, namespace, now) for r in kinds)):
            failure, left, holders, estimate = outcome
            if failure:
                progress.deletion_failures.append(failure)
            for resource_name, count in left.items():
                progress.remaining[resource_name] += count
            progress.finalizers.update(holders)
            progress.estimate = max(progress.estimate, estimate)
        return progress

    async def _delete_all(self, resource: Resource, namespace: str,
                          now: float) -> tuple[str, Counter[str], Counter[str], float]:
        """Delete every object of `resource` in `namespace`; (failure, what is left, finalizers, estimate)."""
        try:
            if "deletecollection" in resource.verbs:
                await self.client.delete_collection(resource, namespace, propagation_policy="Background")
            else:
                for item in (await self.client.list(resource, namespace)).get("items") or []:
                    if not item["metadata"].get("deletionTimestamp"):
                        await _delete_quietly(self.client, resource, namespace, item["metadata"]["name"])
            items = (await self.client.list(resource, namespace)).get("items") or []
        except errors.APIStatusError as error:
            return f"{resource.group_resource}: {error}", Counter(), Counter(), 0.0
        left: Counter[str] = Counter()
        holders: Counter[str] = Counter()
        estimate = 0.0
        for item in items:
            left[f"{resource.plural}.{resource.group}"] += 1
            holders.update(item["metadata"].get("finalizers") or [])
            estimate = max(estimate, _grace_left(item, now))
        return "", left, holders, estimate

    async def _report(self, namespace: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Write the five deletion conditions when they changed; the namespace as it is now."""
        updated = copy.deepcopy(namespace)
        status = updated.setdefault("status", {})
        old = {c["type"]: c for c in status.get("conditions") or []}
        conditions = []
        for kind, true, reason, message in _conditions(progress):
            previous = old.get(kind)
            value = "True" if true else "False"
            if previous is not None and (previous.get("status"), previous.get("reason"), previous.get("message")) \
                    == (value, reason, message):
                conditions.append(previous)
                continue
            conditions.append({"type": kind, "status": value, "lastTransitionTime": time_string(self.clock.wall()),
                               "reason": reason, "message": message})
        if conditions == status.get("conditions"):
            return namespace
        status["conditions"] = conditions
        try:
            return await self.client.update(resources.NAMESPACES, updated, subresource="status")
        except errors.NotFound:
            return namespace
        # a Conflict propagates: the key is retried with backoff and the next pass reads the namespace anew

    async def _finalize(self, namespace: dict[str, Any]) -> None:
        body = copy.deepcopy(namespace)
        body.setdefault("spec", {})["finalizers"] = [f for f in body["spec"].get("finalizers") or [] if f != FINALIZER]
        try:
            await self.client.update(resources.NAMESPACES, body, subresource="finalize")
        except errors.NotFound:
            return


async def _delete_quietly(client: Any, resource: Resource, namespace: str, name: str) -> None:
    try:
        await client.delete(resource, name, namespace, propagation_policy="Background")
    except errors.NotFound:
        pass


def _grace_left(item: dict[str, Any], now: float) -> float:
    """Seconds until an object being deleted gracefully (a pod) reaches the end of its grace period."""
    stamp = item["metadata"].get("deletionTimestamp")
    return max(parse_time(stamp).timestamp() - now, 0.0) if stamp else 0.0


def _remaining_message(progress: Progress) -> str:
    if not progress.remaining:
        return ""
    parts = ", ".join(f"{name} has {count} resource instances" for name, count in sorted(progress.remaining.items()))
    return f"Some resources are remaining: {parts}"


def _conditions(progress: Progress) -> list[tuple[str, bool, str, str]]:
    """(type, is true, reason, message) of each deletion condition, in kube's order and words."""
    failures = progress.discovery_failures
    discovery = (f"Discovery failed for some groups, {len(failures)} failing: "
                 + ", ".join(f"{gv}: {why}" for gv, why in sorted(failures.items()))) if failures else \
        "All resources successfully discovered"
    content = ("Failed to delete all resource types, {} remaining: {}".format(
        len(progress.deletion_failures), ", ".join(progress.deletion_failures))
        if progress.deletion_failures else "All content successfully deleted, may be waiting on finalization")
    finalizers = ("Some content in the namespace has finalizers remaining: " + ", ".join(
        f"{name} in {count} resource instances" for name, count in sorted(progress.finalizers.items()))
        if progress.finalizers else "All content-preserving finalizers finished")
    return [
        ("NamespaceDeletionDiscoveryFailure", bool(failures),
         "DiscoveryFailed" if failures else "ResourcesDiscovered", discovery),
        ("NamespaceDeletionGroupVersionParsingFailure", False, "ParsedGroupVersions",
         "All legacy kube types successfully parsed"),
        ("NamespaceDeletionContentFailure", bool(progress.deletion_failures),
         "ContentDeletionFailed" if progress.deletion_failures else "ContentDeleted", content),
        ("NamespaceContentRemaining", bool(progress.remaining),
         "SomeResourcesRemain" if progress.remaining else "ContentRemoved",
         _remaining_message(progress) or "All content successfully removed"),
        ("NamespaceFinalizersRemaining", bool(progress.finalizers),
         "SomeFinalizersRemain" if progress.finalizers else "ContentHasNoFinalizers", finalizers),
    ]

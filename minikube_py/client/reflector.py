"""The reflector: keeps a store equal to the apiserver's view of one resource, by listing and then watching.

The loop (client-go's `Reflector.ListAndWatch`):
1. **List** every object, 500 a page (`limit` + `continue`; all pages read at the first page's revision),
   and `replace` the store's contents with them. The list's resourceVersion becomes
   `last_sync_resource_version`. The first list asks for resourceVersion "0" (any recent state, served from
   the apiserver's watch cache); a relist asks for "not older than what we had"; if that is gone too (410),
   for the latest state ("").
2. **Watch** from `last_sync_resource_version` with bookmarks allowed, applying each ADDED/MODIFIED/DELETED
   to the store and remembering each event's resourceVersion (a BOOKMARK only moves the resourceVersion,
   so a quiet resource's watch can resume from a recent point). When the server ends the watch (its
   timeout, a restart, a dropped connection), watch again from the last resourceVersion: nothing is missed
   and nothing is listed again.
3. **Relist** when the server says that resourceVersion is gone (410, after etcd compaction), or when a watch
   ends at once with nothing in it (something is wrong with watching: start over).

Failures never end the loop: a refused connection (apiserver down) or 429 retries the watch, anything else
relists, each after an exponential backoff (0.8 s doubling to 30 s, with jitter) that resets once a watch
is healthy again, so a dead apiserver costs one attempt every 30 s, not a spin.

Usage rules: `run()` runs until cancelled; the store is written only from `run()`'s task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from minikube_py.api.kinds import Resource

from . import errors
from .rest import RESTClient, WatchEvent

log = logging.getLogger(__name__)

PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300  # seconds; each watch asks the server to end it after between this and twice this
SHORT_WATCH = 1.0  # a watch that ends this fast with no events means watching is broken: relist


class Store(Protocol):
    """What a reflector writes to: an `Indexer`, or an informer that also notifies handlers."""

    def add(self, obj: dict[str, Any]) -> None: ...

    def update(self, obj: dict[str, Any]) -> None: ...

    def delete(self, obj: dict[str, Any]) -> None: ...

    def replace(self, items: Iterable[dict[str, Any]], resource_version: str) -> None: ...


class Backoff:
    """Exponential backoff with jitter: `initial` seconds, doubled per failure up to `cap`; `reset()` after
    a success. `sleep` is injectable so tests need not wait."""

    def __init__(self, initial: float = 0.8, cap: float = 30.0, *,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 rand: Callable[[], float] = random.random) -> None:
        self.initial, self.cap = initial, cap
        self._sleep, self._rand = sleep, rand
        self._step = initial

    def next_delay(self) -> float:
        """The delay to wait now (base plus up to 100% jitter, at most `cap`); the base then doubles."""
        delay = min(self.cap, self._step * (1.0 + self._rand()))
        self._step = min(self.cap, self._step * 2)
        return delay

    async def wait(self) -> None:
        await self._sleep(self.next_delay())

    def reset(self) -> None:
        self._step = self.initial


class Reflector:
    """Lists and watches `resource` (optionally one namespace, selected objects) into `store`."""

    def __init__(self, client: RESTClient, resource: Resource, store: Store, *, namespace: str | None = None,
                 label_selector: str = "", field_selector: str = "", backoff: Backoff | None = None) -> None:
        self.client, self.resource, self.store = client, resource, store
        self.namespace, self.label_selector, self.field_selector = namespace, label_selector, field_selector
        self.backoff = backoff or Backoff()
        self.last_sync_resource_version = ""
        self._last_resource_version_unavailable = False
        self.name = resource.plural + (f" in {namespace}" if namespace else "")

    async def run(self) -> None:
        """List and watch until cancelled, surviving any failure of the apiserver."""
        while True:
            try:
                await self.list_and_watch()
            except (errors.TransportError, errors.APIStatusError, ValueError) as err:
                log.warning("reflector for %s: %s: %s", self.name, type(err).__name__, err)
            except Exception:
                log.exception("reflector for %s failed; listing again", self.name)
            await self.backoff.wait()

    async def list_and_watch(self) -> None:
        """One list, then watches, until a relist is needed (returns) or a call fails (raises)."""
        await self._list()
        await self._watch_until_stale()

    async def _list(self) -> None:
        resource_version = self._relist_resource_version()
        try:
            items, list_resource_version = await self._list_pages(resource_version)
        except (errors.Gone, errors.ServerTimeout) as err:
            if resource_version == "" or not _is_stale_version_error(err):
                raise
            log.info("reflector for %s: resourceVersion %s unavailable (%s); listing the latest state",
                     self.name, resource_version, err)
            self._last_resource_version_unavailable = True
            items, list_resource_version = await self._list_pages("")
        self._last_resource_version_unavailable = False
        for obj in items:  # list items come without their kind; watch events carry it: make them alike
            obj.setdefault("apiVersion", self.resource.api_version)
            obj.setdefault("kind", self.resource.kind)
        self.store.replace(items, list_resource_version)
        self.last_sync_resource_version = list_resource_version

    def _relist_resource_version(self) -> str:
        if self._last_resource_version_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    async def _list_pages(self, resource_version: str) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            try:
                page = await self._list_page(resource_version if not token else "", token, PAGE_SIZE)
            except errors.Gone:
                if not token:
                    raise
                # the continue token expired between pages: read everything in one request instead
                page = await self._list_page(resource_version, "", 0)
                items = []
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or ""
            if not token:
                return items, str(metadata.get("resourceVersion") or "")

    async def _list_page(self, resource_version: str, token: str, limit: int) -> dict[str, Any]:
        return await self.client.list(self.resource, self.namespace, label_selector=self.label_selector,
                                      field_selector=self.field_selector, limit=limit, continue_=token,
                                      resource_version=resource_version)

    async def _watch_until_stale(self) -> None:
        while True:
            started = time.monotonic()
            try:
                count = await self._watch_once()
            except errors.Gone as err:
                log.info("reflector for %s: watch closed: %s; relisting", self.name, err)
                return
            except (errors.ConnectError, errors.TooManyRequests) as err:
                log.warning("reflector for %s: cannot watch (%s); retrying", self.name, str(err) or type(err).__name__)
                await self.backoff.wait()
                continue
            if count == 0 and time.monotonic() - started < SHORT_WATCH:
                log.warning("reflector for %s: watch ended within a second with no events; relisting", self.name)
                return
            self.backoff.reset()

    async def _watch_once(self) -> int:
        count = 0
        events = self.client.watch(self.resource, self.namespace,
                                   resource_version=self.last_sync_resource_version, allow_bookmarks=True,
                                   label_selector=self.label_selector, field_selector=self.field_selector,
                                   timeout_seconds=int(MIN_WATCH_TIMEOUT * (1.0 + random.random())))
        async with contextlib.aclosing(events):
            async for event in events:
                self._apply(event)
                count += 1
        return count

    def _apply(self, event: WatchEvent) -> None:
        obj = event.object
        if event.type == "ADDED":
            self.store.add(obj)
        elif event.type == "MODIFIED":
            self.store.update(obj)
        elif event.type == "DELETED":
            self.store.delete(obj)
        elif event.type != "BOOKMARK":
            log.warning("reflector for %s: ignoring a watch event of type %r", self.name, event.type)
            return
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if resource_version:
            self.last_sync_resource_version = str(resource_version)


def _is_stale_version_error(err: errors.APIStatusError) -> bool:
    """410 (compacted) or 504 "Too large resource version" (an etcd newer than ours was replaced)."""
    if isinstance(err, errors.Gone):
        return True
    causes = err.details.get("causes") or []
    return any(isinstance(cause, dict) and cause.get("reason") == "ResourceVersionTooLarge" for cause in causes)

"""The watch cache: one etcd watch per resource, fanned out to every client watching it.

Without it, each client watch is an etcd watch of its own, so a write seen by ten watchers crosses gRPC ten
times and is decoded ten times. kube-apiserver's "cacher" instead keeps, per resource:

* the current objects (`objects`), filled by one list and kept current by one etcd watch;
* a window of recent changes (`history`), so a watch from a recent resourceVersion is replayed from memory;
* the revision of the last change it applied (`applied_revision`), so a read can tell whether the cache
  already holds everything etcd had when the read arrived (`wait_fresh`, used for consistent reads; see
  `consistency.py`), and the revision it has caught up to (`revision`, which etcd's progress notifications
  also advance) for watches and bookmarks;
* the set of client watchers, each with a queue the change is put into once.

A `CachedEvent` decodes its object once per resource and remembers the JSON line it was sent as, so
watchers asking for the same thing share the work. A watch from a revision older than the window is not
the cache's to serve (`watch()` returns None) and goes to etcd directly; lists with `resourceVersion=0` are
answered from `objects`. If the etcd watch breaks, the cache relists and ends its client watches: clients
re-watch from the last resourceVersion they saw, as they would against kube.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any, Protocol

import orjson

from ..store.errors import StoreError
from ..store.interface import KeyValue, Storage, WatchEvent

log = logging.getLogger(__name__)
# How long a read waits for the cache to catch up before going to etcd instead. Short: when etcd's revision
# moved because of writes elsewhere, no event will come for this cache.
FRESHNESS_TIMEOUT = 0.02
HISTORY_SIZE = 1000  # recent changes kept per resource for watches that start in the past
QUEUE_SIZE = 1000  # a watcher this far behind is ended instead of holding memory for it


class Decodes(Protocol):
    """What a CachedEvent needs of a resource's store: turning a stored value into an API object."""

    def decode(self, kv: KeyValue) -> dict[str, Any]: ...


class CachedEvent:
    """One change from etcd, decoded lazily and at most once per resource (API version)."""

    __slots__ = ("type", "revision", "kv", "prev", "_objects", "_lines")

    def __init__(self, event: WatchEvent) -> None:
        self.type, self.revision, self.kv, self.prev = event.type, event.revision, event.kv, event.prev
        self._objects: dict[tuple[int, str], dict[str, Any] | None] = {}
        self._lines: dict[tuple[int, str, str], bytes] = {}

    @property
    def key(self) -> str:
        kv = self.kv or self.prev
        return kv.key if kv is not None else ""

    def object(self, store: Decodes, which: str) -> dict[str, Any] | None:
        """The object after ("current") or before ("previous") the change, decoded once per store; a
        deleted object carries the delete's revision. Shared between watchers: never mutate it."""
        slot = (id(store), which)
        if slot not in self._objects:
            kv = self.kv if which == "current" else self.prev
            obj = store.decode(kv) if kv is not None else None
            if obj is not None and which == "previous" and self.type == "DELETE":
                obj["metadata"]["resourceVersion"] = str(self.revision)
            self._objects[slot] = obj
        return self._objects[slot]

    def line(self, store: Decodes, kind: str, which: str) -> bytes:
        """`{"type": kind, "object": <that object>}` as one JSON line, encoded once for all watchers."""
        slot = (id(store), kind, which)
        line = self._lines.get(slot)
        if line is None:
            line = self._lines[slot] = orjson.dumps({"type": kind, "object": self.object(store, which)}) + b"\n"
        return line


class CacheWatcher:
    """A client's subscription: the changes under one key prefix (or one key), in revision order."""

    def __init__(self, cacher: Cacher, prefix: str, exact: bool) -> None:
        self.cacher, self.prefix, self.exact = cacher, prefix, exact
        self.queue: asyncio.Queue[CachedEvent | None] = asyncio.Queue(QUEUE_SIZE)

    def wants(self, key: str) -> bool:
        return key == self.prefix if self.exact else key.startswith(self.prefix)

    def offer(self, event: CachedEvent | None) -> bool:
        try:
            self.queue.put_nowait(event)
            return True
        except asyncio.QueueFull:
            return False

    def __aiter__(self) -> CacheWatcher:
        return self

    async def __anext__(self) -> CachedEvent:
        event = await self.queue.get()
        if event is None:  # the cache ended this watch (too slow, or the cache restarted)
            raise StopAsyncIteration
        return event

    def close(self) -> None:
        self.cacher.watchers.discard(self)


class Cacher:
    """The cache of every key under one storage prefix (e.g. `/registry/pods/`)."""

    def __init__(self, storage: Storage, prefix: str) -> None:
        self.storage, self.prefix = storage, prefix
        self.objects: dict[str, KeyValue] = {}
        self.history: deque[CachedEvent] = deque(maxlen=HISTORY_SIZE)
        self.revision = 0
        self.watchers: set[CacheWatcher] = set()
        self.ready = False
        self._task: asyncio.Task[None] | None = None
        self.applied_revision = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._encoded: dict[str, tuple[int, int, bytes]] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"cacher {self.prefix}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._end_watchers()

    # serving ---------------------------------------------------------------------------------------

    def snapshot(self, prefix: str, exact: bool = False) -> tuple[list[KeyValue], int]:
        """The objects under `prefix` (or at key `prefix`) in key order, and the revision they are at."""
        if exact:
            kv = self.objects.get(prefix)
            return ([kv] if kv is not None else []), self.revision
        found = [kv for key, kv in self.objects.items() if key.startswith(prefix)]
        found.sort(key=lambda kv: kv.key)
        return found, self.revision

    def encoded(self, store: Decodes, kv: KeyValue) -> bytes:
        """The object at `kv` as JSON for `store`'s API version, encoded once per change."""
        memo = self._encoded.get(kv.key)
        if memo is not None and memo[0] == kv.mod_revision and memo[1] == id(store):
            return memo[2]
        body = orjson.dumps(store.decode(kv))
        self._encoded[kv.key] = (kv.mod_revision, id(store), body)
        return body

    async def wait_fresh(self, revision: int) -> bool:
        """Wait until the cache has applied every change up to `revision`; False after FRESHNESS_TIMEOUT.

        Only changes count, not progress notifications: the etcd 3.5.1 we run may report progress at a
        revision whose events it has not sent yet (fixed in later etcd releases, which kube relies on)."""
        if self.applied_revision >= revision:
            return True
        waiter = asyncio.get_running_loop().create_future()
        entry = (revision, waiter)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(waiter, FRESHNESS_TIMEOUT)
            return True
        except TimeoutError:
            return False
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    def watch(self, prefix: str, after_revision: int, exact: bool = False) -> CacheWatcher | None:
        """Subscribe to changes after `after_revision`, replaying those already in the window; None when
        the window does not reach back that far (or the cache is not ready)."""
        if not self.ready:
            return None
        oldest = self.history[0].revision if self.history else self.revision + 1
        if after_revision < min(oldest - 1, self.revision):
            return None
        watcher = CacheWatcher(self, prefix, exact)
        for event in self.history:
            if event.revision > after_revision and watcher.wants(event.key):
                watcher.offer(event)
        self.watchers.add(watcher)
        return watcher

    # filling ---------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self._list_and_watch()
            except StoreError as exc:
                log.info("watch cache for %s restarting: %s", self.prefix, exc)
            self.ready = False
            self._end_watchers()
            await asyncio.sleep(0.2)

    async def _list_and_watch(self) -> None:
        listed = await self.storage.list(self.prefix)
        self.objects = {kv.key: kv for kv in listed.items}
        self.history.clear()
        self.revision = listed.revision
        self.ready = True
        self.applied_revision = listed.revision
        async with self.storage.watch(self.prefix, start_revision=listed.revision + 1) as events:
            async for event in events:
                self._apply(CachedEvent(event))

    def _apply(self, event: CachedEvent) -> None:
        if event.type == "PUT" and event.kv is not None:
            self.objects[event.kv.key] = event.kv
        elif event.type == "DELETE":
            self.objects.pop(event.key, None)
            self._encoded.pop(event.key, None)
        self.revision = max(self.revision, event.revision)
        if event.type != "PROGRESS":
            self.history.append(event)
            self.applied_revision = event.revision
            self._wake_waiters()
        for watcher in list(self.watchers):
            if (event.type == "PROGRESS" or watcher.wants(event.key)) and not watcher.offer(event):
                log.warning("ending a watch on %s that fell %d events behind", self.prefix, QUEUE_SIZE)
                self.watchers.discard(watcher)
                watcher.queue = asyncio.Queue(1)
                watcher.offer(None)

    def _wake_waiters(self) -> None:
        if not self._waiters:
            return
        waiting = []
        for revision, waiter in self._waiters:
            if revision <= self.applied_revision:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                waiting.append((revision, waiter))
        self._waiters = waiting

    def _end_watchers(self) -> None:
        for watcher in list(self.watchers):
            watcher.queue = asyncio.Queue(1)
            watcher.offer(None)
        self.watchers.clear()

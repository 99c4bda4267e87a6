"""The watch cache: every resource's objects in memory, fed by one etcd watch, fanned out to client watches.

Without it, each client watch is an etcd watch of its own, so a write seen by ten watchers crosses gRPC ten
times and is decoded ten times. kube-apiserver's "cacher" instead keeps, per resource:

* the current objects (`objects`), filled by one list and kept current by the changes etcd sends;
* a window of recent changes (`history`), so a watch from a recent resourceVersion is replayed from memory
  (and the Node authorizer's graph, nodegraph.py, re-reads only the objects that changed: `changes_since`);
* the revision it has caught up to (`revision`, which etcd's progress notifications also advance) for
  watches and bookmarks, and the revision of the last change it applied (`applied_revision`);
* the set of client watchers, each with a queue the change is put into once.

A resource may declare an *indexed trigger* (kube's trigger functions; pods: `spec.nodeName`, see
`app.INDEXED_TRIGGERS`): a selectable field that a watcher's field selector often pins to one value. Such a
watcher (a kubelet's `fieldSelector=spec.nodeName=<node>`) is kept under that value, and a change is offered
only to the watchers under its object's value after *and* before the change (so a pod that moves away or is
bound from "" reaches both sides), plus every watcher the trigger does not index. A hundred kubelets then
wake once per change of a pod on their node instead of a hundred times for every pod change. The trigger
reads the value with `CachedEvent.fields`, so the decode is shared with the watchers' own filters.

All caches hang off one `WatchHub`: a single etcd watch on everything under `/registry/`, whose changes
arrive in revision order and are applied to their resource's cache as they arrive. So once the hub has
delivered revision R, every cache holds every change up to R, whichever resource it touched: a read can
tell whether the cache already holds everything etcd had when the read arrived (`wait_fresh`, used for
consistent reads; see `consistency.py`) even when the last writes were to other resources. (With one etcd
watch per resource, a quiet resource could not tell "nothing happened here" from "not arrived yet" without
trusting progress notifications, which the etcd 3.5.1 we run may send ahead of events.) The hub's watch
asks etcd for no previous values: each cache already holds what a key held before a change (kube's watch
cache, too, takes the previous object from its own store), and etcd would read an old revision of the key
for every event it sends.

A `CachedEvent` decodes its object once per resource and remembers the JSON line it was sent as, so
watchers asking for the same thing share the work. A watch from a revision older than the window is not
the cache's to serve (`watch()` returns None) and goes to etcd directly; lists with `resourceVersion=0` are
answered from `objects`. A cache joins the hub, lists its prefix at the hub's revision and then applies the
changes that came meanwhile. If the etcd watch breaks, every cache relists and ends its client watches:
clients re-watch from the last resourceVersion they saw, as they would against kube.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any, Protocol

import orjson

from ..api.fields import field_set
from ..api.kinds import Resource
from ..store.errors import StoreError
from ..store.interface import KeyValue, Storage, WatchEvent

log = logging.getLogger(__name__)
ROOT = "/registry/"  # every key the apiserver stores is under it
# How long a read waits for the hub to deliver etcd's current revision before going to etcd instead. Short:
# only a write outside ROOT (an `etcdctl put` by hand) moves etcd's revision without an event coming.
FRESHNESS_TIMEOUT = 0.02
HISTORY_SIZE = 1000  # recent changes kept per resource for watches that start in the past
QUEUE_SIZE = 1000  # a watcher this far behind is ended instead of holding memory for it


class Decodes(Protocol):
    """What a CachedEvent needs of a resource's store: turning a stored value into an API object."""

    resource: Resource

    def decode(self, kv: KeyValue) -> dict[str, Any]: ...


class CachedEvent:
    """One change from etcd, decoded lazily and at most once per resource (API version)."""

    __slots__ = ("type", "revision", "key", "kv", "prev", "_objects", "_lines", "_fields")

    def __init__(self, event: WatchEvent) -> None:
        self.type, self.revision, self.key = event.type, event.revision, event.key
        self.kv, self.prev = event.kv, event.prev  # `prev`: filled in by the cache (`_apply`)
        self._objects: dict[tuple[int, str], dict[str, Any] | None] = {}
        self._lines: dict[tuple[int, str, str], bytes] = {}
        self._fields: dict[tuple[int, str], dict[str, str]] = {}

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

    def fields(self, store: Decodes, which: str) -> dict[str, str]:
        """The selectable fields of `object(store, which)`, computed once for every watcher's field selector
        (a hundred kubelets each watch `spec.nodeName=<their node>`)."""
        slot = (id(store), which)
        fields = self._fields.get(slot)
        if fields is None:
            fields = self._fields[slot] = field_set(store.resource, self.object(store, which) or {})
        return fields

    def line(self, store: Decodes, kind: str, which: str) -> bytes:
        """`{"type": kind, "object": <that object>}` as one JSON line, encoded once for all watchers."""
        slot = (id(store), kind, which)
        line = self._lines.get(slot)
        if line is None:
            line = self._lines[slot] = orjson.dumps({"type": kind, "object": self.object(store, which)}) + b"\n"
        return line


class CacheWatcher:
    """A client's subscription: the changes under one key prefix (or one key), in revision order."""

    def __init__(self, cacher: Cacher, prefix: str, exact: bool, trigger_value: str | None = None) -> None:
        self.cacher, self.prefix, self.exact = cacher, prefix, exact
        self.trigger_value = trigger_value  # the value of the cache's indexed trigger it is kept under, if any
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
        self.cacher.forget(self)


class IndexedTrigger:
    """kube's "indexed trigger" of a resource: the selectable field (pods: `spec.nodeName`) whose value a
    watcher's field selector may pin, read from each change through `store` (the resource's store, whose
    decoded objects and fields the watchers share)."""

    def __init__(self, field: str, store: Decodes) -> None:
        self.field, self.store = field, store

    def values(self, event: CachedEvent) -> tuple[str, ...]:
        """The field's value in the object after the change and in the one before it, where there is one
        ("" when the object leaves it unset, e.g. a pod not bound to a node yet)."""
        found = []
        if event.kv is not None:
            found.append(event.fields(self.store, "current").get(self.field, ""))
        if event.prev is not None:
            found.append(event.fields(self.store, "previous").get(self.field, ""))
        return tuple(found)


class WatchHub:
    """The one etcd watch that feeds every cache: changes under ROOT, handed to their resource's cache in
    revision order as they arrive."""

    def __init__(self, storage: Storage, root: str = ROOT) -> None:
        self.storage, self.root = storage, root
        self.caches: dict[str, Cacher] = {}  # prefix -> the cache that joined with it
        self.revision = 0  # every change up to this one has been applied to the joined caches
        self._positioned = asyncio.Event()  # set while the watch runs (`revision` means something)
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="watch hub")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def join(self, cache: Cacher) -> int:
        """Deliver the changes under `cache.prefix` to `cache` from now on; returns the revision they start
        after, which the cache lists at."""
        await self._positioned.wait()
        self.caches[cache.prefix] = cache
        return self.revision

    def leave(self, cache: Cacher) -> None:
        if self.caches.get(cache.prefix) is cache:
            del self.caches[cache.prefix]

    async def wait_delivered(self, revision: int) -> bool:
        """Wait until every change up to `revision` has been applied; False after FRESHNESS_TIMEOUT."""
        if self.revision >= revision:
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

    async def _run(self) -> None:
        while True:
            try:
                await self._watch()
            except StoreError as exc:
                log.info("the watch caches' etcd watch is restarting: %s", exc)
            self._positioned.clear()
            for cache in list(self.caches.values()):
                cache.lost()
            self.caches.clear()
            await asyncio.sleep(0.2)

    async def _watch(self) -> None:
        start = await self.storage.current_revision()
        async with self.storage.watch(self.root, start_revision=start + 1, prev_kv=False) as events:
            self.revision = start
            self._positioned.set()
            async for event in events:
                self._dispatch(CachedEvent(event))

    def _dispatch(self, event: CachedEvent) -> None:
        if event.type == "PROGRESS":  # for bookmarks only: etcd 3.5.1 may send it ahead of events
            for cache in list(self.caches.values()):
                cache.receive(event)
            return
        cache = self._cache_of(event.key)
        if cache is not None:
            cache.receive(event)
        self.revision = event.revision
        if self._waiters:
            waiting = []
            for revision, waiter in self._waiters:
                if revision > self.revision:
                    waiting.append((revision, waiter))
                elif not waiter.done():
                    waiter.set_result(None)
            self._waiters = waiting

    def _cache_of(self, key: str) -> Cacher | None:
        """The cache whose prefix the key is under: prefixes end at a "/" of the key (`/registry/pods/`,
        `/registry/services/specs/`, `/registry/<group>/<plural>/`)."""
        end = key.find("/", len(self.root))
        while end != -1:
            cache = self.caches.get(key[:end + 1])
            if cache is not None:
                return cache
            end = key.find("/", end + 1)
        return None


class Cacher:
    """The cache of every key under one storage prefix (e.g. `/registry/pods/`)."""

    def __init__(self, hub: WatchHub, prefix: str, trigger: IndexedTrigger | None = None, *,
                 history_size: int = HISTORY_SIZE) -> None:
        self.hub, self.storage, self.prefix = hub, hub.storage, prefix
        self.objects: dict[str, KeyValue] = {}
        self.history: deque[CachedEvent] = deque(maxlen=history_size)
        self.history_from = 0  # `history` holds every change after this revision
        self.revision = 0
        self.watchers: set[CacheWatcher] = set()  # all of them: progress notifications go to every one
        # set at most once, before a watcher pins its value (app.py sets it once the resource's store exists)
        self.trigger = trigger
        self._unindexed: set[CacheWatcher] = set()
        self._indexed: dict[str, set[CacheWatcher]] = {}  # trigger value -> the watchers kept under it
        self.ready = False
        self._task: asyncio.Task[None] | None = None
        self.applied_revision = 0
        self._pending: list[CachedEvent] | None = None  # changes that came while the cache was listing
        self._lost: asyncio.Future[None] | None = None
        self._encoded: dict[str, tuple[int, int, bytes]] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"cacher {self.prefix}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.hub.leave(self)
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
        """The object at `kv` as JSON for `store`'s API version, encoded once per change (a value read from etcd
        rather than this cache is encoded but not remembered: the cache may no longer hold its key)."""
        memo = self._encoded.get(kv.key)
        if memo is not None and memo[0] == kv.mod_revision and memo[1] == id(store):
            return memo[2]
        body = orjson.dumps(store.decode(kv))
        if self.objects.get(kv.key) is kv:
            self._encoded[kv.key] = (kv.mod_revision, id(store), body)
        return body

    def changes_since(self, revision: int) -> list[CachedEvent] | None:
        """The changes applied after `revision`, oldest first; None when the window no longer holds all of
        them."""
        if revision < self.history_from:
            return None
        changes = []
        for event in reversed(self.history):
            if event.revision <= revision:
                break
            changes.append(event)
        changes.reverse()
        return changes

    async def wait_fresh(self, revision: int) -> bool:
        """Wait until the cache holds every change up to `revision`; False if it is not ready, or after
        FRESHNESS_TIMEOUT."""
        return self.ready and await self.hub.wait_delivered(revision) and self.ready

    def watch(self, prefix: str, after_revision: int, exact: bool = False,
              trigger_value: str | None = None) -> CacheWatcher | None:
        """Subscribe to changes after `after_revision`, replaying those already in the window; None when
        the window does not reach back that far (or the cache is not ready). With a `trigger_value` (the
        value the watcher's field selector pins the trigger's field to) only the changes of objects that have
        or had that value are offered; it is ignored by a cache without a trigger."""
        if not self.ready:
            return None
        oldest = self.history[0].revision if self.history else self.revision + 1
        if after_revision < min(oldest - 1, self.revision):
            return None
        watcher = CacheWatcher(self, prefix, exact, trigger_value if self.trigger is not None else None)
        for event in self.history:
            if event.revision > after_revision and watcher.wants(event.key) and self._reaches(watcher, event):
                watcher.offer(event)
        self.watchers.add(watcher)
        if watcher.trigger_value is None:
            self._unindexed.add(watcher)
        else:
            self._indexed.setdefault(watcher.trigger_value, set()).add(watcher)
        return watcher

    def forget(self, watcher: CacheWatcher) -> None:
        """Stop offering changes to `watcher`."""
        self.watchers.discard(watcher)
        if watcher.trigger_value is None:
            self._unindexed.discard(watcher)
            return
        under = self._indexed.get(watcher.trigger_value)
        if under is not None:
            under.discard(watcher)
            if not under:
                del self._indexed[watcher.trigger_value]

    # filling ---------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self._list_and_follow()
            except StoreError as exc:
                log.info("watch cache for %s restarting: %s", self.prefix, exc)
            self.hub.leave(self)
            self.ready = False
            self._end_watchers()
            await asyncio.sleep(0.2)

    async def _list_and_follow(self) -> None:
        """Join the hub, list at its revision, apply what came meanwhile, then follow until the hub's watch
        breaks (`lost`)."""
        self._lost = asyncio.get_running_loop().create_future()
        self._pending = []
        start = await self.hub.join(self)
        listed = await self.storage.list(self.prefix, revision=start)
        self.objects = {kv.key: kv for kv in listed.items}
        self._encoded.clear()
        self.history.clear()
        self.revision = self.applied_revision = self.history_from = start
        pending, self._pending = self._pending, None
        if self._lost.done():  # the hub's watch broke while we listed: those changes may be incomplete
            return
        for event in pending:
            self._apply(event)
        self.ready = True
        await self._lost

    def receive(self, event: CachedEvent) -> None:
        """A change (or progress notification) from the hub."""
        if self._pending is not None:
            self._pending.append(event)
        else:
            self._apply(event)

    def lost(self) -> None:
        """The hub's watch broke: stop answering from memory until relisted."""
        self.ready = False
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)

    def _apply(self, event: CachedEvent) -> None:
        if event.type != "PROGRESS":  # what the key held before: the value this cache has for it
            event.prev = self.objects.get(event.key)
        if event.type == "PUT" and event.kv is not None:
            self.objects[event.kv.key] = event.kv
        elif event.type == "DELETE":
            self.objects.pop(event.key, None)
            self._encoded.pop(event.key, None)
        self.revision = max(self.revision, event.revision)
        if event.type != "PROGRESS":
            if len(self.history) == self.history.maxlen:  # the oldest change leaves the window
                self.history_from = self.history[0].revision
            self.history.append(event)
            self.applied_revision = event.revision
        for watcher in self._watchers_of(event):
            if (event.type == "PROGRESS" or watcher.wants(event.key)) and not watcher.offer(event):
                log.warning("ending a watch on %s that fell %d events behind", self.prefix, QUEUE_SIZE)
                self.forget(watcher)
                watcher.queue = asyncio.Queue(1)
                watcher.offer(None)

    def _watchers_of(self, event: CachedEvent) -> list[CacheWatcher]:
        """The watchers a change is offered to: the unindexed ones, and those kept under the trigger's
        values before and after the change; every watcher for a progress notification."""
        if event.type == "PROGRESS":
            return list(self.watchers)
        if not self._indexed:
            return list(self._unindexed)
        values = self._trigger_values(event)
        if values is None:
            return list(self.watchers)
        found = list(self._unindexed)
        for value in set(values):
            found.extend(self._indexed.get(value, ()))
        return found

    def _reaches(self, watcher: CacheWatcher, event: CachedEvent) -> bool:
        """Whether `_watchers_of(event)` includes `watcher` (for replaying the history to a new one)."""
        if watcher.trigger_value is None:
            return True
        values = self._trigger_values(event)
        return values is None or watcher.trigger_value in values

    def _trigger_values(self, event: CachedEvent) -> tuple[str, ...] | None:
        """The trigger's values of a change; None when they cannot be read (every watcher then gets the
        change, and fails on it as it would without the index)."""
        assert self.trigger is not None
        try:
            return self.trigger.values(event)
        except Exception:  # whatever a bad stored value raises, the hub must go on
            log.warning("cannot read %s of %s at revision %d", self.trigger.field, event.key, event.revision,
                        exc_info=True)
            return None

    def _end_watchers(self) -> None:
        for watcher in list(self.watchers):
            watcher.queue = asyncio.Queue(1)
            watcher.offer(None)
        self.watchers.clear()
        self._unindexed.clear()
        self._indexed.clear()

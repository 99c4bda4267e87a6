"""Shared informers: one cache per resource, kept by a reflector, with event handlers told of every change.

A `SharedIndexInformer` runs a `reflector.Reflector` whose store is the informer itself: each change the
reflector applies updates the `indexer` (the cache listers read) and is then handed to every registered
`ResourceEventHandler`:

* `on_add(obj, is_in_initial_list)`: a new object; `is_in_initial_list` is True for the objects of the
  first list (and for the cache's contents handed to a handler registered after the informer started);
* `on_update(old, new)`: a changed object; relisted objects whose resourceVersion did not change are not
  reported. A periodic resync re-delivers every cached object as `on_update(obj, obj)` to the handlers that
  asked for one (`resync_period`, at least one second), so a controller re-checks state it may have lost;
* `on_delete(obj)`: a deleted object, or a `store.DeletedFinalStateUnknown(key, last_known_obj)` when a
  relist found it gone (its deletion happened while the watch was down).

Each handler has its own unbounded queue and task, so handlers see changes in order, and a slow handler
(an `async def` one that awaits) delays only itself. `has_synced()` turns True once the first list is in
the cache; `wait_for_cache_sync()` waits for that.

`SharedInformerFactory` hands out one informer per (resource, namespace, selectors), so the scheduler's
plugins and its event handlers share one pods cache; `lister(resource)` is the shortcut plugins use.

Usage rules: handlers must not mutate the objects they get (copy first); handler methods may be plain or
`async def`; an exception in a handler is logged and the next notification is delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from minikube_py.api.kinds import Resource

from .listers import Lister
from .reflector import Reflector
from .rest import RESTClient
from .store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    meta_namespace_index_func,
    meta_namespace_key,
)

log = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0
ADD, UPDATE, DELETE = "add", "update", "delete"


class ResourceEventHandler(Protocol):
    """Told of every change to an informer's objects; each method may return an awaitable."""

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> Any: ...

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> Any: ...

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> Any: ...


class FuncHandler:
    """A handler from functions, any of which may be left out. `on_add` may take `(obj)` or
    `(obj, is_in_initial_list)`; functions may be `async def`."""

    def __init__(self, on_add: Callable[..., Any] | None = None,
                 on_update: Callable[[Any, Any], Any] | None = None,
                 on_delete: Callable[[Any], Any] | None = None) -> None:
        self._add, self._update, self._delete = on_add, on_update, on_delete
        self._add_takes_flag = on_add is not None and _positional_count(on_add) >= 2

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> Any:
        if self._add is None:
            return None
        return self._add(obj, is_in_initial_list) if self._add_takes_flag else self._add(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> Any:
        return None if self._update is None else self._update(old, new)

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> Any:
        return None if self._delete is None else self._delete(obj)


class HandlerRegistration:
    """One handler's queue and delivery task; `has_synced()` once it has been given the initial list."""

    def __init__(self, handler: ResourceEventHandler, resync_period: float,
                 informer_synced: Callable[[], bool]) -> None:
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = time.monotonic() + resync_period
        self._queue: asyncio.Queue[tuple[str, Any, Any]] = asyncio.Queue()
        self._informer_synced = informer_synced
        self._pending_initial = 0
        self.task: asyncio.Task[None] | None = None

    def has_synced(self) -> bool:
        return self._informer_synced() and self._pending_initial == 0

    def add(self, kind: str, first: Any, second: Any = None) -> None:
        if kind == ADD and second:
            self._pending_initial += 1
        self._queue.put_nowait((kind, first, second))

    async def run(self) -> None:
        while True:
            kind, first, second = await self._queue.get()
            try:
                await self._deliver(kind, first, second)
            except Exception:
                log.exception("event handler %r failed on %s", self.handler, kind)
            finally:
                if kind == ADD and second:
                    self._pending_initial -= 1

    async def _deliver(self, kind: str, first: Any, second: Any) -> None:
        if kind == ADD:
            result = self.handler.on_add(first, bool(second))
        elif kind == UPDATE:
            result = self.handler.on_update(first, second)
        else:
            result = self.handler.on_delete(first)
        if inspect.isawaitable(result):
            await result


class SharedIndexInformer:
    """A reflector-fed cache of one resource with indexes, a lister and event handlers."""

    def __init__(self, client: RESTClient, resource: Resource, *, resync_period: float = 0.0,
                 indexers: dict[str, IndexFunc] | None = None, namespace: str | None = None,
                 label_selector: str = "", field_selector: str = "") -> None:
        self.resource = resource
        self.default_resync_period = resync_period
        self.indexer = Indexer({NAMESPACE_INDEX: meta_namespace_index_func, **(indexers or {})})
        self.reflector = Reflector(client, resource, _Notifier(self), namespace=namespace,
                                   label_selector=label_selector, field_selector=field_selector)
        self._lister = Lister(self.indexer, resource)
        self._registrations: list[HandlerRegistration] = []
        self._synced = asyncio.Event()
        self._resync_changed = asyncio.Event()
        self._tasks: asyncio.TaskGroup | None = None
        self._started = False

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    def lister(self) -> Lister:
        return self._lister

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until the first list is in the cache; False if `timeout` seconds pass first."""
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        if self._started:
            raise RuntimeError(f"informer for {self.resource.plural} has already started: add indexers before")
        self.indexer.add_indexers(indexers)

    def add_event_handler(self, handler: ResourceEventHandler,
                          resync_period: float | None = None) -> HandlerRegistration:
        """Register `handler`; if the informer runs already, it first gets the cache's contents as adds."""
        period = self.default_resync_period if resync_period is None else resync_period
        if 0 < period < MINIMUM_RESYNC_PERIOD:
            log.warning("resync period %.3fs is too small; using %.0fs", period, MINIMUM_RESYNC_PERIOD)
            period = MINIMUM_RESYNC_PERIOD
        registration = HandlerRegistration(handler, period, self.has_synced)
        self._registrations.append(registration)
        if self._started:
            for obj in self.indexer.list():
                registration.add(ADD, obj, True)
        if self._tasks is not None:
            registration.task = self._tasks.create_task(registration.run())
        self._resync_changed.set()
        return registration

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        if registration in self._registrations:
            self._registrations.remove(registration)
            if registration.task is not None:
                registration.task.cancel()

    async def run(self) -> None:
        """Run the reflector, the handlers and the resync timer until cancelled."""
        if self._started:
            raise RuntimeError(f"informer for {self.resource.plural} has already started")
        self._started = True
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                for registration in self._registrations:
                    registration.task = tasks.create_task(registration.run())
                tasks.create_task(self._resync_loop())
                tasks.create_task(self.reflector.run())
        finally:
            self._tasks = None

    def _distribute(self, kind: str, first: Any, second: Any = None) -> None:
        for registration in self._registrations:
            registration.add(kind, first, second)

    def _mark_synced(self) -> None:
        self._synced.set()

    async def _resync_loop(self) -> None:
        while True:
            self._resync_changed.clear()
            due = min((r.next_resync for r in self._registrations if r.resync_period > 0), default=None)
            timeout = None if due is None else max(0.0, due - time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._resync_changed.wait(), timeout)
            self._resync(time.monotonic())

    def _resync(self, now: float) -> None:
        for registration in self._registrations:
            if registration.resync_period <= 0 or registration.next_resync > now:
                continue
            registration.next_resync = now + registration.resync_period
            if self.has_synced():
                for obj in self.indexer.list():
                    registration.add(UPDATE, obj, obj)


class _Notifier:
    """The store the informer's reflector writes to: each change goes into the indexer, then to handlers."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self._informer = informer
        self._indexer = informer.indexer

    def add(self, obj: dict[str, Any]) -> None:
        self.update(obj)

    def update(self, obj: dict[str, Any]) -> None:
        old = self._indexer.get(obj)
        self._indexer.update(obj)
        if old is None:
            self._informer._distribute(ADD, obj, False)
        else:
            self._informer._distribute(UPDATE, old, obj)

    def delete(self, obj: dict[str, Any]) -> None:
        if self._indexer.get(obj) is None:
            return  # never seen, so nobody needs telling
        self._indexer.delete(obj)
        self._informer._distribute(DELETE, obj)

    def replace(self, items: Iterable[dict[str, Any]], resource_version: str) -> None:
        initial = not self._informer.has_synced()
        listed = {meta_namespace_key(obj): obj for obj in items}
        for key, obj in listed.items():
            old = self._indexer.get_by_key(key)
            self._indexer.update(obj)
            if old is None:
                self._informer._distribute(ADD, obj, initial)
            elif _resource_version(old) != _resource_version(obj):
                self._informer._distribute(UPDATE, old, obj)
        for key in [key for key in self._indexer.list_keys() if key not in listed]:
            old = self._indexer.get_by_key(key)
            self._indexer.delete(key)
            self._informer._distribute(DELETE, DeletedFinalStateUnknown(key, old or {}))
        self._informer._mark_synced()


class SharedInformerFactory:
    """One shared informer per (resource, namespace, selectors), started and stopped together."""

    def __init__(self, client: RESTClient, resync_period: float = 0.0) -> None:
        self.client = client
        self.resync_period = resync_period
        self._informers: dict[tuple[Resource, str, str, str], SharedIndexInformer] = {}
        self._tasks: dict[SharedIndexInformer, asyncio.Task[None]] = {}
        self._started = self._stopped = False

    def informer_for(self, resource: Resource, *, namespace: str | None = None, label_selector: str = "",
                     field_selector: str = "", indexers: dict[str, IndexFunc] | None = None
                     ) -> SharedIndexInformer:
        """The shared informer for these filters (created on first use; started if the factory runs)."""
        key = (resource, namespace or "", label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedIndexInformer(self.client, resource, resync_period=self.resync_period,
                                           namespace=namespace, label_selector=label_selector,
                                           field_selector=field_selector)
            self._informers[key] = informer
        if indexers:
            missing = {name: fn for name, fn in indexers.items() if name not in informer.indexer.get_indexers()}
            if missing:
                informer.add_indexers(missing)
        if self._started:
            self.start()
        return informer

    def lister(self, resource: Resource) -> Lister:
        return self.informer_for(resource).lister()

    def start(self) -> None:
        """Start every informer not yet running (call from the event loop)."""
        if self._stopped:
            raise RuntimeError("the informer factory was stopped; informers cannot be restarted")
        self._started = True
        for informer in self._informers.values():
            if informer not in self._tasks:
                self._tasks[informer] = asyncio.create_task(informer.run(),
                                                            name=f"informer-{informer.resource.plural}")

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until every started informer has synced; False if `timeout` seconds pass first."""
        waits = [informer.wait_for_cache_sync() for informer in self._tasks]
        try:
            await asyncio.wait_for(asyncio.gather(*waits), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        """Cancel every informer and wait for them to finish; the factory cannot be started again."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._stopped = True


def _resource_version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 2
    return sum(1 for p in parameters if p.kind in kinds)

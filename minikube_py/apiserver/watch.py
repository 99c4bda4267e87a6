"""Watch: a stream of ADDED / MODIFIED / DELETED / BOOKMARK / ERROR events for one resource.

Changes come from the resource's watch cache (`cacher.py`), or straight from an etcd watch when the client
asks for a resourceVersion older than the cache's window. Either way they are translated into kube's events:

* from resourceVersion N: every change after N, in revision order;
* from "0" or with no resourceVersion: first a synthetic ADDED for every object that exists now, then the
  changes after that snapshot (what `kubectl get -w` and a reflector's first watch see);
* with selectors, an object that starts matching is ADDED and one that stops matching is DELETED, so a
  client's view of "the objects matching my selector" stays right;
* etcd's progress notifications become BOOKMARK events when the client allows them;
* a resourceVersion that compaction has removed ends the stream with an ERROR event carrying a 410 Expired
  Status; the client relists.

Events are yielded as ready-to-send JSON lines (`encode` shapes the object, e.g. into a Table row).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import orjson

from ..api import errors
from ..store.errors import CompactedError
from .cacher import CachedEvent, Cacher
from .registry.generic import ResourceStore
from .registry.listing import ListOptions, ObjectFilter, object_filter

Encoder = Callable[[str, dict[str, Any]], bytes] | None  # None: plain `{"type","object"}` lines


async def watch_events(store: ResourceStore, cacher: Cacher, namespace: str, options: ListOptions,
                       encode: Encoder) -> AsyncIterator[bytes]:
    """Yield event lines until the client goes away or the caller's timeout cancels us."""
    keep = object_filter(store.resource, options)
    key, exact = _watch_key(store, namespace, options)
    pinned = _trigger_value(cacher, options)
    rv = options.resource_version
    async with AsyncExitStack() as stack:
        if rv is None or rv == "0":
            if not cacher.ready:
                raise errors.service_unavailable(f"the watch cache for {store.resource.group_resource} "
                                                 "is not ready yet, please retry")
            kvs, revision = cacher.snapshot(key, exact)
            watcher = cacher.watch(key, revision, exact, pinned)
            assert watcher is not None
            stack.callback(watcher.close)
            for kv in kvs:
                obj = store.decode(kv)
                if keep is None or keep(obj):
                    yield _line("ADDED", obj, encode)
            events: AsyncIterator[CachedEvent] = watcher
            start = revision + 1
        else:
            start = int(rv) + 1
            cached = cacher.watch(key, start - 1, exact, pinned)
            if cached is not None:
                stack.callback(cached.close)
                events = cached
            else:
                events = await stack.enter_async_context(_etcd_events(store, key, start))
        try:
            async for event in events:
                if event.type == "PROGRESS":
                    if options.allow_bookmarks:
                        yield _line("BOOKMARK", _bookmark(store, event.revision), encode)
                    continue
                if event.revision < start:  # already covered by the snapshot or the client's own list
                    continue
                translated = _translate(store, event, keep)
                if translated is not None:
                    kind, which = translated
                    if encode is None:
                        yield event.line(store, kind, which)
                    else:
                        yield encode(kind, event.object(store, which) or {})
        except CompactedError as exc:
            status = errors.expired(f"too old resource version: {start - 1} ({exc.compacted})").to_status()
            yield _line("ERROR", status, None)


def _line(kind: str, obj: dict[str, Any], encode: Encoder) -> bytes:
    if encode is not None:
        return encode(kind, obj)
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


class _etcd_events:  # noqa: N801 - used like a function: `async with _etcd_events(...) as events`
    """Changes straight from an etcd watch, as CachedEvents, for resourceVersions older than the cache."""

    def __init__(self, store: ResourceStore, key: str, start: int) -> None:
        self._context = store.storage.watch(key, start_revision=start)

    async def __aenter__(self) -> AsyncIterator[CachedEvent]:
        raw = await self._context.__aenter__()

        async def wrapped() -> AsyncIterator[CachedEvent]:
            async for event in raw:
                yield CachedEvent(event)

        return wrapped()

    async def __aexit__(self, *exc: object) -> None:
        await self._context.__aexit__(*exc)  # type: ignore[arg-type]


def _watch_key(store: ResourceStore, namespace: str, options: ListOptions) -> tuple[str, bool]:
    name = options.field_selector.requires_exact_match("metadata.name")
    if name and (namespace or not store.resource.namespaced):
        return store.key(namespace, name), True
    return store.prefix(namespace), False


def _trigger_value(cacher: Cacher, options: ListOptions) -> str | None:
    """The value the field selector pins the cache's indexed trigger to (a kubelet's `spec.nodeName=<node>`):
    the cache then offers this watch only the changes of objects that have or had it."""
    if cacher.trigger is None:
        return None
    return options.field_selector.requires_exact_match(cacher.trigger.field)


def _bookmark(store: ResourceStore, revision: int) -> dict[str, Any]:
    res = store.resource
    return {"kind": res.kind, "apiVersion": res.api_version, "metadata": {"resourceVersion": str(revision)}}


def _translate(store: ResourceStore, event: CachedEvent, keep: ObjectFilter | None) -> tuple[str, str] | None:
    """The event type a watcher with filter `keep` sees, and which object ("current"/"previous") it shows."""
    old = event.object(store, "previous")
    if event.type == "DELETE":
        if old is None or (keep is not None and not keep(old, lambda: event.fields(store, "previous"))):
            return None
        return "DELETED", "previous"
    new = event.object(store, "current")
    assert new is not None and event.kv is not None
    now_matches = keep is None or keep(new, lambda: event.fields(store, "current"))
    if old is None:  # a create, or a change whose previous value etcd no longer had
        created = event.kv.create_revision == event.kv.mod_revision
        return (("ADDED" if created else "MODIFIED"), "current") if now_matches else None
    was_matching = keep is None or keep(old, lambda: event.fields(store, "previous"))
    if now_matches:
        return ("MODIFIED" if was_matching else "ADDED"), "current"
    if was_matching:
        return "DELETED", "current"
    return None

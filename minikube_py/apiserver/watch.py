"""Watch: a stream of ADDED / MODIFIED / DELETED / BOOKMARK / ERROR events for one resource.

A watch is an etcd watch on the resource's key prefix (or on one key, for a `metadata.name=` field
selector in a namespace) translated into kube's events:

* from resourceVersion N: every change after N, in revision order;
* from "0" or with no resourceVersion: first a synthetic ADDED for every object that exists now, then the
  changes after that snapshot (what `kubectl get -w` and a reflector's first watch see);
* with selectors, an object that starts matching is ADDED and one that stops matching is DELETED, so a
  client's view of "the objects matching my selector" stays right;
* etcd's progress notifications become BOOKMARK events when the client allows them;
* a resourceVersion that compaction has removed ends the stream with an ERROR event carrying a 410 Expired
  Status; the client relists.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from ..api import errors
from ..store.errors import CompactedError
from ..store.interface import WatchEvent
from .registry.generic import ResourceStore
from .registry.listing import ListOptions, object_filter

Event = tuple[str, dict[str, Any]]


async def watch_events(store: ResourceStore, namespace: str, options: ListOptions) -> AsyncIterator[Event]:
    """Yield (type, object) pairs until the client goes away or the caller's timeout cancels us."""
    keep = object_filter(store.resource, options)
    rv = options.resource_version
    if rv is None or rv == "0":
        page = await store.list(namespace, replace(options, limit=0, continue_token="", resource_version=None,
                                                   resource_version_match=""))
        for obj in page.objects:
            yield "ADDED", obj
        start = page.revision + 1
    else:
        start = int(rv) + 1
    key = _watch_key(store, namespace, options)
    try:
        async with store.storage.watch(key, start_revision=start) as events:
            async for event in events:
                translated = _translate(store, event, keep, options.allow_bookmarks)
                if translated is not None:
                    yield translated
    except CompactedError as exc:
        status = errors.expired(f"too old resource version: {start - 1} ({exc.compacted})").to_status()
        yield "ERROR", status


def _watch_key(store: ResourceStore, namespace: str, options: ListOptions) -> str:
    name = options.field_selector.requires_exact_match("metadata.name")
    if name and (namespace or not store.resource.namespaced):
        return store.key(namespace, name)
    return store.prefix(namespace)


def _translate(store: ResourceStore, event: WatchEvent, keep: Callable[[dict[str, Any]], bool] | None,
               bookmarks: bool) -> Event | None:
    if event.type == "PROGRESS":
        if not bookmarks:
            return None
        res = store.resource
        return "BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version,
                            "metadata": {"resourceVersion": str(event.revision)}}
    new = store.decode(event.kv) if event.type == "PUT" and event.kv is not None else None
    old = store.decode(event.prev) if event.prev is not None else None
    if event.type == "DELETE":
        if old is None or (keep is not None and not keep(old)):
            return None
        old["metadata"]["resourceVersion"] = str(event.revision)
        return "DELETED", old
    assert new is not None
    now_matches = keep is None or keep(new)
    was_matching = old is not None and (keep is None or keep(old))
    if now_matches:
        return ("MODIFIED" if was_matching else "ADDED"), new
    if was_matching:
        return "DELETED", new
    return None

"""Namespace lifecycle: no new objects in a namespace that does not exist or is being deleted.

Kube enforces this in its NamespaceLifecycle admission plugin, reading namespaces from an informer cache
so that a create does not cost an extra etcd read. This is the same idea in miniature: a background watch
keeps `phases` (namespace name → phase) current, and a create checks it, falling back to a live read when
the namespace is not in the cache yet (it may have been created a moment ago).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import orjson

from ..api import errors
from ..store.errors import CompactedError, StoreError
from ..store.interface import Storage

PREFIX = "/registry/namespaces/"
log = logging.getLogger(__name__)


class NamespaceLifecycle:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.phases: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._synced = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="namespace-lifecycle")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._synced.wait(), 5)

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def check(self, namespace: str) -> None:
        """Raise 404 if `namespace` does not exist, 403 if it is terminating."""
        phase = self.phases.get(namespace)
        if phase is None:
            kv = await self.storage.get(PREFIX + namespace)
            if kv is None:
                raise errors.not_found("namespaces", namespace)
            phase = _phase(kv.value)
        if phase == "Terminating":
            err = errors.namespace_forbidden("namespaces", namespace,
                                             f"unable to create new content in namespace {namespace} "
                                             "because it is being terminated")
            err.details["causes"] = [{"reason": "NamespaceTerminating", "message": "namespace "
                                      f"{namespace} is being terminated", "field": "metadata.namespace"}]
            raise err

    async def _run(self) -> None:
        while True:
            try:
                await self._list_and_watch()
            except (CompactedError, StoreError) as exc:
                log.info("namespace cache restarting: %s", exc)
                await asyncio.sleep(0.5)

    async def _list_and_watch(self) -> None:
        listed = await self.storage.list(PREFIX)
        self.phases = {kv.key[len(PREFIX):]: _phase(kv.value) for kv in listed.items}
        self._synced.set()
        async with self.storage.watch(PREFIX, start_revision=listed.revision + 1) as events:
            async for event in events:
                if event.type == "PUT" and event.kv is not None:
                    self.phases[event.kv.key[len(PREFIX):]] = _phase(event.kv.value)
                elif event.type == "DELETE" and event.prev is not None:
                    self.phases.pop(event.prev.key[len(PREFIX):], None)


def _phase(value: bytes) -> str:
    obj = orjson.loads(value)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return (obj.get("status") or {}).get("phase") or "Active"

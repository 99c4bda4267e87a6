"""Consistent reads from the watch cache (kube's KEP-2340, "Consistent Reads from Cache").

A GET without a resourceVersion must see every write acknowledged before it arrived, which etcd gives with a
quorum read. The watch cache can give the same guarantee more cheaply: ask etcd for its current revision
(itself a quorum read, but of nothing), wait until the cache has applied every change up to that revision,
and answer from memory.

`LatestRevision` makes that first step cheap under load: requests that arrive while a revision read is in
flight share the *next* read (one that starts after they arrived, so it still covers every write they must
see), so one etcd round trip serves a whole batch of concurrent GETs.
"""

from __future__ import annotations

import asyncio

from ..store.interface import Storage
from .cacher import Cacher


class LatestRevision:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._next: asyncio.Future[int] | None = None
        self._reading = False

    async def get(self) -> int:
        """etcd's current revision, read no earlier than this call."""
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
            if not self._reading:
                self._reading = True
                asyncio.create_task(self._read_batches())
        return await asyncio.shield(self._next)

    async def _read_batches(self) -> None:
        try:
            # one loop turn lets every request already received join this batch
            await asyncio.sleep(0)
            while self._next is not None:
                batch, self._next = self._next, None
                try:
                    batch.set_result(await self.storage.current_revision())
                except Exception as exc:  # every waiter of the batch gets the storage error
                    batch.set_exception(exc)
        finally:
            self._reading = False


class ConsistentReads:
    def __init__(self, storage: Storage) -> None:
        self.latest = LatestRevision(storage)

    async def fresh(self, cacher: Cacher, resource_version: str | None) -> bool:
        """Whether `cacher` may answer a read at this resourceVersion (unset: a consistent read)."""
        if not cacher.ready:
            return False
        if resource_version == "0":
            return True
        wanted = int(resource_version) if resource_version else await self.latest.get()
        return await cacher.wait_fresh(wanted)

"""The compactor: discards etcd history older than one compaction interval, as kube-apiserver does.

Where it sits: the apiserver starts one `Compactor` next to its storage. Without it etcd keeps every version
of every object forever; with it, a client holding a resourceVersion older than about one interval gets
`410 Gone` (CompactedError) and must relist.

How a tick works: each tick records the store's current revision by writing the key `compact_rev_key`
(the key kube-apiserver uses), and compacts at the revision recorded on the previous tick. The write is a
compare-and-swap on the key's mod_revision, so when several apiservers share one etcd only the one whose
previous write is still the latest compacts; the others adopt the revision they find and stay idle, and
take over if that apiserver stops.

Usage rules: `start()` inside a running event loop and `await stop()` on shutdown; `interval=0` disables
the periodic task. `compact_now()` runs one tick immediately (tests, `mkpy` maintenance commands).
"""

from __future__ import annotations

import asyncio
import logging

from .errors import CompactedError, ConflictError, KeyExistsError, KeyNotFoundError, StoreError
from .interface import Storage

log = logging.getLogger(__name__)

COMPACT_REVISION_KEY = "compact_rev_key"
DEFAULT_INTERVAL = 300.0  # seconds, kube-apiserver's --etcd-compaction-interval default


class Compactor:
    """Compacts `storage` every `interval` seconds at the revision recorded one tick earlier."""

    def __init__(self, storage: Storage, *, interval: float = DEFAULT_INTERVAL) -> None:
        self._storage = storage
        self.interval = interval
        self.observed_revision: int | None = None  # recorded at the last tick; the next tick compacts here
        self.compacted_revision: int | None = None  # where this compactor last compacted
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the periodic task (a no-op when `interval` is 0 or it is already running)."""
        if self.interval > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="etcd-compactor")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def compact_now(self) -> int | None:
        """Run one tick: the revision compacted at, or None if this tick only recorded a revision."""
        previous = self.observed_revision
        recorded, self.observed_revision = await self._record(previous)
        if not recorded or previous is None:
            return None
        await self._compact(previous)
        return previous

    async def _record(self, previous: int | None) -> tuple[bool, int | None]:
        """Write the record key if it is still at `previous` (None: if absent).

        Returns whether this compactor wrote it, and the key's mod_revision now: the current revision if it
        did, otherwise the revision recorded by whoever wrote it last (None if the key was deleted).
        """
        try:
            if previous is None:
                return True, await self._storage.create(COMPACT_REVISION_KEY, b"")
            return True, await self._storage.update(COMPACT_REVISION_KEY, b"", expected_revision=previous)
        except KeyExistsError:
            current = await self._storage.get(COMPACT_REVISION_KEY)
        except ConflictError as err:
            current = err.current
        except KeyNotFoundError:
            current = None
        return False, current.mod_revision if current else None

    async def _compact(self, revision: int) -> None:
        try:
            await self._storage.compact(revision)
        except CompactedError:
            pass  # someone (etcdctl, another cluster tool) already compacted further: nothing left to do
        self.compacted_revision = revision
        log.info("compacted etcd history before revision %d", revision)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.compact_now()
            except StoreError as err:
                # Try again next interval, like kube-apiserver: compaction is housekeeping, not correctness.
                log.warning("etcd compaction failed: %s", err)

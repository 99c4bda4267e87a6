"""The heaps behind the scheduling queue's activeQ and backoffQ: QueuedPodInfos by key, in a given order.

`Heap(less)` pops in the order `less(a, b)` defines (QueueSort's for activeQ, backoff expiry for backoffQ);
pods that compare equal leave in the order they came. Lookup and removal by key are O(1): removal only
forgets the key, and the stale heap entry is skipped when it surfaces.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from minikube_py.scheduler.framework.types import QueuedPodInfo

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


class Entry:
    __slots__ = ("key", "qpi", "seq", "less")

    def __init__(self, key: str, qpi: QueuedPodInfo, seq: int, less: Less) -> None:
        self.key, self.qpi, self.seq, self.less = key, qpi, seq, less

    def __lt__(self, other: Entry) -> bool:
        if self.less(self.qpi, other.qpi):
            return True
        return not self.less(other.qpi, self.qpi) and self.seq < other.seq


class Heap:
    """QueuedPodInfos by key, popped in `less` order (ties: first pushed first). Removal is lazy, so the
    QueuedPodInfo in an entry must not change in ways `less` sees; push a copy instead."""

    def __init__(self, less: Less) -> None:
        self._less = less
        self._heap: list[Entry] = []
        self._entries: dict[str, Entry] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> QueuedPodInfo | None:
        entry = self._entries.get(key)
        return entry.qpi if entry is not None else None

    def values(self) -> list[QueuedPodInfo]:
        return [entry.qpi for entry in self._entries.values()]

    def push(self, key: str, qpi: QueuedPodInfo) -> None:
        """Add, or replace the pod under `key` (keeping its place among equals)."""
        old = self._entries.get(key)
        entry = self._entries[key] = Entry(key, qpi, old.seq if old else next(self._counter), self._less)
        heapq.heappush(self._heap, entry)
        if len(self._heap) > 2 * len(self._entries) + 64:  # too many removed entries: compact
            self._heap = list(self._entries.values())
            heapq.heapify(self._heap)

    def remove(self, key: str) -> QueuedPodInfo | None:
        entry = self._entries.pop(key, None)
        return entry.qpi if entry is not None else None

    def peek(self) -> QueuedPodInfo | None:
        while self._heap and self._entries.get(self._heap[0].key) is not self._heap[0]:
            heapq.heappop(self._heap)
        return self._heap[0].qpi if self._heap else None

    def pop(self) -> QueuedPodInfo | None:
        qpi = self.peek()
        if qpi is not None:
            del self._entries[heapq.heappop(self._heap).key]
        return qpi

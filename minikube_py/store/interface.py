"""The storage interface the apiserver's registry is written against.

Keys are strings such as `/registry/pods/default/web-1`; values are the serialized objects (JSON bytes).
Every write returns the etcd revision it produced, which the apiserver hands out as the object's
`resourceVersion`; optimistic concurrency is a compare on the key's `mod_revision` (see notes in
docs/apiserver.md). Only the apiserver imports this package.

Contracts shared by every backend:
* `get` returns None for a missing key; `list` pages through a prefix at one pinned revision.
* `create` fails with `KeyExistsError` if the key exists; `update`/`delete` with `expected_revision` fail
  with `ConflictError` (carrying the current value) when the key's mod_revision differs, and with
  `KeyNotFoundError` when the key is gone.
* Reading or watching at a revision that compaction removed raises `CompactedError`; reading at a revision
  the store has not reached yet raises `FutureRevisionError`; an unreachable backend, `UnavailableError`.
* A write with `ttl` > 0 (whole seconds) makes the key expire: unless written again first, the backend
  deletes it (a DELETE for watchers, as if `delete` had been called) no sooner than `ttl` seconds after
  that write and not much later (etcd: within min(60, 5% of `ttl`) more seconds, see leases.py). Every
  write sets the expiry anew: after a write with `ttl` 0, the default, the key lives until deleted.
* `watch` yields `WatchEvent`s strictly after `start_revision - 1` (i.e. `start_revision` is inclusive),
  each naming its key and, unless asked not to (`prev_kv=False`), carrying the previous value, plus
  `PROGRESS` events (bookmarks) with the current revision.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    # read through a storage transformer other than the one writes use (an old encryption key): an update
    # must write the value back even when the object did not change, which is how key rotation works
    stale: bool = False


@dataclass(frozen=True)
class ListResult:
    items: list[KeyValue]
    revision: int  # the revision the list was read at
    more: bool  # another page exists after the last item
    remaining: int  # how many keys follow the last item returned (0 when more is False)


EventType = Literal["PUT", "DELETE", "PROGRESS"]


@dataclass(frozen=True)
class WatchEvent:
    type: EventType
    revision: int  # the revision of this change (for PROGRESS: the store's current revision)
    key: str = ""  # the key that changed ("" for PROGRESS)
    kv: KeyValue | None = None  # the new value (PUT) or None (DELETE, PROGRESS)
    prev: KeyValue | None = None  # the previous value, if there was one and the watch asked for it

    @property
    def created(self) -> bool:
        return self.type == "PUT" and self.kv is not None and self.kv.create_revision == self.kv.mod_revision


class Storage(Protocol):
    async def get(self, key: str) -> KeyValue | None:
        """The current value of `key`, or None."""

    async def list(self, prefix: str, *, limit: int = 0, start_key: str | None = None,
                   revision: int = 0) -> ListResult:
        """Keys under `prefix` in key order, from `start_key` (inclusive) on, at `revision` (0 = now).

        `prefix` is a plain byte prefix: "/registry/pods/" lists a directory, "/registry/pods" would also
        match "/registry/podsecuritypolicies/...". Page on with `start_key=last_key + "\\0"` and the first
        page's `revision`.
        """

    async def count(self, prefix: str) -> int:
        """How many keys exist under `prefix` now."""

    async def create(self, key: str, value: bytes, *, ttl: int = 0) -> int:
        """Store `value` at `key` only if absent; returns the new revision. `ttl` > 0: seconds (whole) after
        which the key expires, see above."""

    async def update(self, key: str, value: bytes, *, expected_revision: int | None, ttl: int = 0) -> int:
        """Replace the value at `key`, only if its mod_revision equals `expected_revision` (None = any);
        `ttl` as for `create`."""

    async def delete(self, key: str, *, expected_revision: int | None = None) -> KeyValue:
        """Delete `key`, returning the deleted value (with the delete's revision as mod_revision)."""

    def watch(self, prefix: str, *, start_revision: int,
              prev_kv: bool = True) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        """Watch every key under `prefix` (or exactly `prefix` if it does not end in "/").

        `start_revision` 0 means "from now". `prev_kv=False` leaves the previous values out: a watcher that
        keeps every value itself (the watch cache) knows them already, and etcd then reads no old revision
        for each event it sends. Errors (CompactedError, UnavailableError) are raised by the
        iterator; leaving the `async with` block cancels the watch in the backend.
        """

    async def current_revision(self) -> int:
        """The store's latest revision."""

    async def compact(self, revision: int) -> None:
        """Discard history before `revision`."""

    async def close(self) -> None:
        """Release connections."""

"""Leases for keys that expire by themselves: what makes Events vanish an hour after their last write.

Where it sits: `EtcdStorage.create` and `update` called with `ttl > 0` (the apiserver does so for Events,
`--event-ttl`) ask `LeaseManager.get_lease(ttl)` for an etcd lease and put the key with it. Nobody keeps
the lease alive, so once its TTL has passed etcd revokes it and deletes every key attached to it; watchers
see a DELETE for each, the apiserver's watch cache included, hence DELETED for HTTP watchers.

A lease per write would double the round trips of every Event and leave etcd tracking thousands of
leases, so, as kube-apiserver does, one lease serves many writes. With a reuse window
`w = min(LEASE_REUSE_SECONDS, LEASE_REUSE_FRACTION × ttl)` in whole seconds, the last lease granted is
handed out again for a write with `ttl` while
* it still lives more than `ttl` seconds (the key must not go early),
* it lives at most `ttl + w` seconds (nor too late: a lease granted for a longer TTL does not serve a
  shorter one), and
* fewer than LEASE_MAX_OBJECT_COUNT writes have been attached to it (revoking a lease deletes all of its
  keys in one etcd transaction, which must stay short);
otherwise a new lease of `ttl + w` seconds is granted. So a key goes between `ttl` and `ttl + w` seconds
after its last write; with a window of 0 (a TTL under 20 s) every write gets a lease of its own.

Usage rules: one manager per etcd client. Callers arriving together wait for a single grant (the lock is
held across it) and then share its lease. A failed grant raises the gRPC error for the caller to translate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aetcd import rpc

LEASE_REUSE_SECONDS = 60  # the reuse window's upper bound
LEASE_REUSE_FRACTION = 0.05  # the reuse window as a fraction of the TTL asked for
LEASE_MAX_OBJECT_COUNT = 1000  # writes attached to one lease at most


def reuse_window(ttl: int) -> int:
    """Seconds a lease granted for `ttl` may outlive it: 5% of it, at most a minute."""
    return min(LEASE_REUSE_SECONDS, int(LEASE_REUSE_FRACTION * ttl))


class LeaseManager:
    """Hands out etcd lease ids to writes that must expire, granting as few leases as the rules above allow."""

    def __init__(self, stub: rpc.LeaseStub, *, timeout: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stub = stub
        self._timeout = timeout
        self._clock = clock
        self._lock = asyncio.Lock()
        self._lease_id = 0
        # when the lease ends, on `clock`; etcd starts its own count a little later, never sooner
        self._expiry = 0.0
        self._attached = 0

    async def get_lease(self, ttl: int) -> int:
        """The id of a lease that ends between `ttl` and `ttl + reuse_window(ttl)` seconds from now."""
        async with self._lock:
            now = self._clock()
            window = reuse_window(ttl)
            if self._attached < LEASE_MAX_OBJECT_COUNT and now + ttl < self._expiry <= now + ttl + window:
                self._attached += 1
                return self._lease_id
            request = rpc.LeaseGrantRequest(TTL=ttl + window)
            granted = await self._stub.LeaseGrant(request, timeout=self._timeout, wait_for_ready=True)
            self._lease_id, self._expiry, self._attached = int(granted.ID), now + ttl + window, 1
            return self._lease_id

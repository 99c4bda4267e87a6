"""Expectations: what a controller is still waiting to see in its cache after its own writes.

A ReplicaSet controller that just created 3 pods must not count pods again before its informer has
delivered those 3: the cache lags the apiserver, and counting too early would create 3 more. So before
creating (or deleting) N pods it records "expect N adds" (or deletes) for the owner's key (`expect` records
both at once, for a controller that creates and deletes in one sync, as a DaemonSet's does); the pod
informer's handlers lower the count as the pods arrive, and `sync` only manages replicas once
`satisfied(key)`. A write that failed is given back with `creation_observed` / `deletion_observed` at once,
since its event will never come.

Usage rules: expectations older than `ttl` (5 minutes, as kube) count as satisfied, so a lost event cannot
stall an owner forever. Deleting the owner deletes its expectations. Deletions are tracked per pod key, so
the same pod's delete event seen twice lowers the count once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.client.clock import Clock

EXPECTATIONS_TTL = 300.0


@dataclass
class _Expected:
    adds: int
    deletes: set[str] = field(default_factory=set)  # keys of the pods whose deletion is awaited
    since: float = 0.0


class ControllerExpectations:
    def __init__(self, clock: Clock, ttl: float = EXPECTATIONS_TTL) -> None:
        self.clock = clock
        self.ttl = ttl
        self._expected: dict[str, _Expected] = {}

    def satisfied(self, key: str) -> bool:
        """Whether the cache has caught up with this owner's writes (or they are too old to wait for)."""
        expected = self._expected.get(key)
        if expected is None:
            return True
        if expected.adds <= 0 and not expected.deletes:
            return True
        return self.clock.now() - expected.since > self.ttl

    def expect(self, key: str, adds: int, pod_keys: list[str]) -> None:
        """Await `adds` creations and the deletion of the pods `pod_keys` at once (kube's SetExpectations)."""
        self._expected[key] = _Expected(adds=adds, deletes=set(pod_keys), since=self.clock.now())

    def expect_creations(self, key: str, count: int) -> None:
        self.expect(key, count, [])

    def expect_deletions(self, key: str, pod_keys: list[str]) -> None:
        self.expect(key, 0, pod_keys)

    def creation_observed(self, key: str) -> None:
        expected = self._expected.get(key)
        if expected is not None:
            expected.adds -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        expected = self._expected.get(key)
        if expected is not None:
            expected.deletes.discard(pod_key)

    def delete(self, key: str) -> None:
        self._expected.pop(key, None)

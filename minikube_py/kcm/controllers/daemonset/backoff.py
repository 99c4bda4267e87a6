"""Per-key exponential backoff for deleting failed daemon pods (kube's `flowcontrol.Backoff` as the DaemonSet
controller uses it: 1 s doubling to 15 min).

A kubelet may refuse a daemon pod at once (a port taken, a resource it lacks): the pod goes Failed, the
controller deletes it and creates it again, and without a brake the two would fight in a tight loop. So the
controller deletes a failed pod on a node only when the node's key (DaemonSet uid, observed generation, node
name) is out of backoff; each deletion doubles the wait. A key left alone for twice the maximum starts over
and is forgotten, so a new generation or a node that behaved for half an hour gets prompt action again.

Usage rules: `in_backoff(key)` to decide, `delay(key)` to requeue for when it ends (only after `in_backoff`
said yes), `next(key)` when acting. Time comes from the injected clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from minikube_py.client.clock import Clock

INITIAL_DELAY, MAX_DELAY = 1.0, 15 * 60.0


@dataclass
class _Delay:
    delay: float
    last_update: float


class FailedPodBackoff:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._delays: dict[str, _Delay] = {}

    def in_backoff(self, key: str) -> bool:
        entry = self._delays.get(key)
        return entry is not None and self.clock.now() - entry.last_update < entry.delay

    def delay(self, key: str) -> float:
        return self._delays[key].delay

    def next(self, key: str) -> None:
        now = self.clock.now()
        for stale in [k for k, e in self._delays.items() if now - e.last_update > 2 * MAX_DELAY]:
            del self._delays[stale]
        entry = self._delays.get(key)
        if entry is None:
            self._delays[key] = _Delay(INITIAL_DELAY, now)
        else:
            entry.delay, entry.last_update = min(2 * entry.delay, MAX_DELAY), now

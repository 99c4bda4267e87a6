"""Per-key exponential back-off (kube's `flowcontrol.Backoff`), for restarting crashed containers
(CrashLoopBackOff: 10 s, 20 s, 40 s, ... up to 5 min) and retrying image pulls (ImagePullBackOff).

    if backoff.in_backoff_since(key, finished_at, now):   # too soon after the last failure: keep waiting
        ...report CrashLoopBackOff...
    else:
        backoff.next(key, now)                           # trying again; the next wait doubles
        ...restart...

As in kube, the first retry is immediate (there is no entry yet), the second comes 10 s after the failure it
answers, then 20 s, 40 s... A key untouched for twice the cap starts again from `initial`: a container that
ran fine for ten minutes and then crashed is restarted promptly, not after 5 min.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Entry:
    delay: float
    last_update: float


class Backoff:
    def __init__(self, initial: float, cap: float) -> None:
        self.initial = initial
        self.cap = cap
        self._entries: dict[str, _Entry] = {}

    def next(self, key: str, now: float) -> float:
        """A retry at `now`: double the key's delay (or start it at `initial`); the new delay."""
        entry = self._entries.get(key)
        if entry is None or now - entry.last_update > 2 * self.cap:
            entry = self._entries[key] = _Entry(self.initial, now)
        else:
            entry.delay = min(entry.delay * 2, self.cap)
            entry.last_update = now
        return entry.delay

    def in_backoff_since(self, key: str, since: float, now: float) -> bool:
        """Whether less than the key's delay has passed since `since` (the failure being answered)."""
        return self.remaining(key, since, now) > 0

    def in_backoff_since_update(self, key: str, now: float) -> bool:
        """Whether less than the key's delay has passed since its last retry (image pulls)."""
        return self.until_retry(key, now) > 0

    def until_retry(self, key: str, now: float) -> float:
        """Seconds until the key's delay since its last retry has passed."""
        entry = self._entries.get(key)
        return 0.0 if entry is None else max(0.0, entry.last_update + entry.delay - now)

    def remaining(self, key: str, since: float, now: float) -> float:
        entry = self._entries.get(key)
        return 0.0 if entry is None else max(0.0, since + entry.delay - now)

    def delay(self, key: str) -> float:
        entry = self._entries.get(key)
        return 0.0 if entry is None else entry.delay

    def forget(self, prefix: str) -> None:
        """Drop every key starting with `prefix` (a pod's keys once it is gone)."""
        for key in [key for key in self._entries if key.startswith(prefix)]:
            del self._entries[key]

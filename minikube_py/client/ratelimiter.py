"""How long a work item waits before it is retried: kube's rate limiters for the rate-limiting work queue.

A controller that fails to sync a key calls `queue.add_rate_limited(key)`; the queue asks its limiter
`when(key)` for the delay. Per-item limiters (exponential, fast/slow) grow the delay with the item's failure
count until `forget(key)` after a successful sync resets it; the token bucket limits the overall retry rate
across all items. `default_controller_rate_limiter()` combines both exactly as client-go does: the larger of
exponential backoff (5 ms doubling up to 1000 s) and a 10 qps / 100 burst bucket.

Usage rules: limiters keep state per item, so items must be hashable (controllers use "namespace/name"
keys); every limiter that measures time takes an injected `Clock`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from minikube_py.client.clock import Clock, RealClock

# Beyond this many doublings the delay is far past any sensible max_delay, and 2**exp would overflow a float.
_MAX_EXPONENT = 62


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds `item` should wait before its next retry; records one more failure for it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (it succeeded): its next failure starts from the shortest delay again."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many times `item` has failed since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """Delay `base_delay * 2**failures` for each item, capped at `max_delay`."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError(f"base_delay ({base_delay}) and max_delay ({max_delay}) must not be negative")
        if max_delay < base_delay:
            raise ValueError(f"max_delay ({max_delay}) must not be less than base_delay ({base_delay})")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        if exponent > _MAX_EXPONENT:
            return self.max_delay
        return min(self.base_delay * 2**exponent, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """`fast_delay` for an item's first `max_fast_attempts` failures, `slow_delay` after that."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        if fast_delay < 0 or slow_delay < 0:
            raise ValueError(f"fast_delay ({fast_delay}) and slow_delay ({slow_delay}) must not be negative")
        if max_fast_attempts < 0:
            raise ValueError(f"max_fast_attempts ({max_fast_attempts}) must not be negative")
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._attempts: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        attempts = self._attempts.get(item, 0) + 1
        self._attempts[item] = attempts
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        self._attempts.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._attempts.get(item, 0)


class BucketRateLimiter:
    """One token bucket for all items: `burst` retries at once, then `qps` per second.

    Like Go's `rate.Limiter.Reserve()`, every call takes a token even when the bucket is empty, so a caller
    is told how long until its own token exists rather than being refused. The bucket starts full.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be greater than zero, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self.clock = clock or RealClock()
        self._tokens = float(burst)
        self._last = self.clock.now()

    def when(self, item: Hashable) -> float:
        now = self.clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        """The bucket keeps no per-item state."""

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Asks every limiter and waits for the longest delay; failure counts are the largest of theirs."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one rate limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's DefaultControllerRateLimiter: per item 5 ms→1000 s backoff; overall 10 qps, burst 100."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0),
                            BucketRateLimiter(qps=10.0, burst=100, clock=clock))

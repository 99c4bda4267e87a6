"""Rate limiters: per-item exponential and fast/slow delays, the token bucket, their max, kube's default."""

from __future__ import annotations

import pytest

from minikube_py.client.clock import FakeClock
from minikube_py.client.ratelimiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)


def delays(limiter, item: str, times: int) -> list[float]:
    return [limiter.when(item) for _ in range(times)]


def test_exponential_delay_doubles_per_failure_and_caps_at_max_delay() -> None:
    limiter = ItemExponentialFailureRateLimiter(base_delay=0.001, max_delay=0.010)
    assert delays(limiter, "a", 6) == [0.001, 0.002, 0.004, 0.008, 0.010, 0.010]
    assert limiter.num_requeues("a") == 6


def test_exponential_delay_is_per_item_and_forget_resets_it() -> None:
    limiter = ItemExponentialFailureRateLimiter(base_delay=0.001, max_delay=1.0)
    delays(limiter, "a", 3)
    assert limiter.when("b") == 0.001
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.001


def test_exponential_delay_survives_thousands_of_failures_without_overflow() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    assert delays(limiter, "a", 2000)[-1] == 1000.0


def test_fast_slow_limiter_switches_after_max_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(fast_delay=0.1, slow_delay=5.0, max_fast_attempts=2)
    assert delays(limiter, "a", 4) == [0.1, 0.1, 5.0, 5.0]
    limiter.forget("a")
    assert limiter.when("a") == 0.1


def test_bucket_allows_the_burst_then_spaces_retries_at_qps() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=10, burst=3, clock=clock)
    assert delays(limiter, "any", 3) == [0.0, 0.0, 0.0]
    assert limiter.when("any") == pytest.approx(0.1)
    assert limiter.when("other") == pytest.approx(0.2)  # the bucket is shared by all items
    clock.advance(10)
    assert limiter.when("any") == 0.0  # refilled (up to the burst)
    assert limiter.num_requeues("any") == 0


def test_max_of_takes_the_longest_delay_and_forgets_everywhere() -> None:
    clock = FakeClock()
    limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.001, 1.0),
                               BucketRateLimiter(qps=1, burst=1, clock=clock))
    assert limiter.when("a") == 0.0 + 0.001  # bucket has a token: exponential wins
    assert limiter.when("a") == pytest.approx(1.0)  # bucket empty: one second until the next token
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_default_controller_rate_limiter_is_kubes_5ms_exponential_and_10qps_100_burst() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    first = [limiter.when(f"key-{i}") for i in range(100)]
    assert first == [0.005] * 100
    assert limiter.when("key-100") == pytest.approx(0.1)  # the 101st retry waits for a token
    assert delays(limiter, "key-0", 1) == [pytest.approx(0.2)]
    clock.advance(1000)
    assert delays(limiter, "key-0", 3) == [0.02, 0.04, 0.08]


@pytest.mark.parametrize(("build", "message"), [
    (lambda: ItemExponentialFailureRateLimiter(-1, 1), "must not be negative"),
    (lambda: ItemExponentialFailureRateLimiter(2, 1), "must not be less than base_delay"),
    (lambda: ItemFastSlowRateLimiter(0.1, 1, -1), "max_fast_attempts"),
    (lambda: ItemFastSlowRateLimiter(-0.1, 1, 1), "must not be negative"),
    (lambda: BucketRateLimiter(qps=0), "qps must be greater than zero"),
    (lambda: BucketRateLimiter(qps=1, burst=0), "burst must be at least 1"),
    (lambda: MaxOfRateLimiter(), "at least one rate limiter"),
], ids=["a negative base delay is refused", "a max delay below the base delay is refused",
        "negative fast attempts are refused", "a negative fast delay is refused", "zero qps is refused",
        "a zero burst is refused", "max of nothing is refused"])
def test_bad_configuration_is_a_clear_value_error(build, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()

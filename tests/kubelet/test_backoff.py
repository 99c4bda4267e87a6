"""Unit tests of the kubelet's back-off: kube's CrashLoopBackOff and image pull timings."""

from minikube_py.kubelet.backoff import Backoff


def test_crash_loop_restarts_at_once_then_waits_ten_seconds_doubling_to_the_cap() -> None:
    backoff = Backoff(10, 300)
    assert not backoff.in_backoff_since("c", since=0, now=0)  # first crash: restart at once
    delays = [backoff.next("c", now) for now in (0, 11, 32, 73, 154, 315, 616)]
    assert delays == [10, 20, 40, 80, 160, 300, 300]
    assert backoff.in_backoff_since("c", since=620, now=800) and not backoff.in_backoff_since("c", 620, 921)


def test_a_key_quiet_for_twice_the_cap_starts_again_from_the_initial_delay() -> None:
    backoff = Backoff(10, 300)
    backoff.next("c", 0)
    backoff.next("c", 20)
    assert backoff.delay("c") == 20
    assert backoff.next("c", 20 + 601) == 10


def test_image_pull_back_off_counts_from_the_last_attempt() -> None:
    backoff = Backoff(10, 300)
    assert not backoff.in_backoff_since_update("img", 0)
    backoff.next("img", 100)
    assert backoff.in_backoff_since_update("img", 105) and backoff.until_retry("img", 105) == 5
    assert not backoff.in_backoff_since_update("img", 110.5)
    backoff.forget("im")
    assert backoff.delay("img") == 0

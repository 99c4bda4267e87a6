"""The scheduler cache: bound pods, assumed pods (confirm, forget, expire), deleted nodes, image states."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from minikube_py.client.clock import FakeClock
from minikube_py.scheduler.cache import Cache, CacheError
from minikube_py.scheduler.framework.types import ImageStateSummary, PodInfo
from minikube_py.scheduler.snapshot import Snapshot


def node(name: str, *, cpu: str = "4", images: list[Any] | None = None, zone: str = "") -> dict[str, Any]:
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}, "images": images or []}}


def pod(name: str, node_name: str = "", cpu: str = "1", uid: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


def image(size: int, *names: str) -> dict[str, Any]:
    return {"names": list(names), "sizeBytes": size}


def requested_cpu(cache: Cache, node_name: str) -> int:
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    info = snapshot.get(node_name)
    assert info is not None
    return info.requested.milli_cpu


def cache_with(*names: str, **kwargs: Any) -> Cache:
    cache = Cache(**kwargs)
    for name in names:
        cache.add_node(node(name))
    return cache


# --- bound and assumed pods ---------------------------------------------------------------------------------


def test_bound_pods_count_on_their_node() -> None:
    cache = cache_with("n1")
    cache.add_pod(pod("a", "n1", cpu="1"))
    cache.add_pod(pod("b", "n1", cpu="500m"))
    assert requested_cpu(cache, "n1") == 1500
    cache.update_pod(pod("b", "n1", cpu="500m"), pod("b", "n1", cpu="250m"))
    assert requested_cpu(cache, "n1") == 1250
    cache.remove_pod(pod("a", "n1"))
    assert requested_cpu(cache, "n1") == 250
    assert cache.get_pod(pod("b")) is not None and cache.get_pod(pod("a")) is None


def test_an_assumed_pod_counts_until_forgotten() -> None:
    cache = cache_with("n1")
    cache.assume_pod(pod("a", "n1", cpu="2"))
    assert cache.is_assumed_pod(pod("a")) and requested_cpu(cache, "n1") == 2000
    cache.forget_pod(pod("a", "n1"))
    assert not cache.is_assumed_pod(pod("a")) and requested_cpu(cache, "n1") == 0
    cache.forget_pod(pod("a", "n1"))  # already gone: nothing to do


def test_assume_accepts_a_pod_info() -> None:
    cache = cache_with("n1")
    cache.assume_pod(PodInfo.of(pod("a", "n1", cpu="3")))
    assert requested_cpu(cache, "n1") == 3000


def test_the_informers_add_confirms_an_assumed_pod() -> None:
    cache = cache_with("n1")
    cache.assume_pod(pod("a", "n1"))
    cache.finish_binding(pod("a", "n1"))
    cache.add_pod(pod("a", "n1"))
    assert not cache.is_assumed_pod(pod("a"))
    assert requested_cpu(cache, "n1") == 1000, "counted once"
    with pytest.raises(CacheError, match="is not assumed"):
        cache.forget_pod(pod("a", "n1"))


def test_a_confirmation_on_another_node_moves_the_pod() -> None:
    cache = cache_with("n1", "n2")
    cache.assume_pod(pod("a", "n1"))
    cache.add_pod(pod("a", "n2"))
    assert (requested_cpu(cache, "n1"), requested_cpu(cache, "n2")) == (0, 1000)
    assert cache.get_pod(pod("a"))["spec"]["nodeName"] == "n2"  # type: ignore[index]


@pytest.mark.parametrize("case, prepare, call, message", [
    ("assuming a pod already in the cache", lambda c: c.add_pod(pod("a", "n1")),
     lambda c: c.assume_pod(pod("a", "n1")), "is in the cache, so can't be assumed"),
    ("assuming a pod without a node", lambda c: None, lambda c: c.assume_pod(pod("a")),
     "has no spec.nodeName"),
    ("forgetting a pod assumed elsewhere", lambda c: c.assume_pod(pod("a", "n1")),
     lambda c: c.forget_pod(pod("a", "n2")), "was assumed on n2 but assigned to n1"),
])
def test_misuse_raises_cache_error(case: str, prepare: Any, call: Any, message: str) -> None:
    cache = cache_with("n1", "n2")
    prepare(cache)
    with pytest.raises(CacheError, match=message):
        call(cache)


@pytest.mark.parametrize("case, call, logged", [
    ("removing an unknown pod", lambda c: c.remove_pod(pod("x", "n1")), "cannot be removed"),
    ("updating an unknown pod", lambda c: c.update_pod(pod("x", "n1"), pod("x", "n1")), "cannot be updated"),
    ("adding a pod twice", lambda c: (c.add_pod(pod("x", "n1")), c.add_pod(pod("x", "n1"))),
     "already in added"),
    ("removing an unknown node", lambda c: c.remove_node(node("nx")), "nothing to remove"),
])
def test_contradicting_informer_events_are_logged_not_raised(case: str, call: Any, logged: str,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    cache = cache_with("n1")
    with caplog.at_level(logging.WARNING, logger="mkpy.scheduler.cache"):
        call(cache)
    assert logged in caplog.text, case


def test_assumed_pods_expire_only_with_a_ttl_after_binding_finished() -> None:
    clock = FakeClock()
    cache = cache_with("n1", clock=clock, assumed_pod_ttl=30)
    cache.assume_pod(pod("bound", "n1"))
    cache.assume_pod(pod("binding", "n1"))
    cache.finish_binding(pod("bound", "n1"))
    clock.advance(29)
    assert cache.cleanup_assumed_pods() == []
    clock.advance(1)
    assert [p["metadata"]["name"] for p in cache.cleanup_assumed_pods()] == ["bound"]
    assert cache.is_assumed_pod(pod("binding")) and not cache.is_assumed_pod(pod("bound"))


def test_without_a_ttl_assumed_pods_never_expire() -> None:
    clock = FakeClock()
    cache = cache_with("n1", clock=clock)
    cache.assume_pod(pod("a", "n1"))
    cache.finish_binding(pod("a", "n1"))
    clock.advance(10**6)
    assert cache.cleanup_assumed_pods() == [] and cache.is_assumed_pod(pod("a"))


# --- nodes --------------------------------------------------------------------------------------------------


def test_a_deleted_node_keeps_its_pods_until_they_go() -> None:
    cache = cache_with("n1", "n2")
    cache.add_pod(pod("a", "n1"))
    cache.remove_node(node("n1"))
    assert cache.node_count() == 2, "n1 stays while a pod is on it"
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [info.name for info in snapshot.list()] == ["n2"] and snapshot.get("n1") is None
    cache.remove_pod(pod("a", "n1"))
    assert cache.node_count() == 1


def test_a_deleted_node_that_comes_back_gets_its_pods_back() -> None:
    cache = cache_with("n1")
    cache.add_pod(pod("a", "n1"))
    cache.remove_node(node("n1"))
    cache.add_node(node("n1"))
    assert requested_cpu(cache, "n1") == 1000


def test_pods_can_arrive_before_their_node() -> None:
    cache = Cache()
    cache.add_pod(pod("a", "late"))
    assert cache.node_count() == 1 and requested_cpu_or_none(cache, "late") is None
    cache.add_node(node("late"))
    assert requested_cpu(cache, "late") == 1000


def requested_cpu_or_none(cache: Cache, name: str) -> int | None:
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    info = snapshot.get(name)
    return None if info is None else info.requested.milli_cpu


def test_a_node_with_malformed_allocatable_is_kept_with_an_error(caplog: pytest.LogCaptureFixture) -> None:
    cache = Cache()
    bad = node("bad", cpu="lots")
    with caplog.at_level(logging.WARNING, logger="mkpy.scheduler.cache"):
        cache.add_node(bad)
    assert "malformed allocatable cpu" in caplog.text
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    info = snapshot.get("bad")
    assert info is not None and info.allocatable.milli_cpu == 0 and info.node_error


def test_a_nodes_labels_taints_and_cordon_are_read_once_and_follow_its_updates() -> None:
    cache, snapshot = cache_with("n1"), Snapshot()
    cache.update_snapshot(snapshot)
    info = snapshot.get("n1")
    assert info is not None and (info.labels, info.taints, info.unschedulable) == ({}, None, False)
    taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    updated = {**node("n1", zone="z1"), "spec": {"taints": taints, "unschedulable": True}}
    cache.update_node(node("n1"), updated)
    cache.update_snapshot(snapshot)
    assert (info.labels, info.taints, info.unschedulable) == ({"topology.kubernetes.io/zone": "z1"}, taints, True)
    assert (info.clone().labels, info.clone().taints, info.clone().unschedulable) == (info.labels, taints, True)


# --- images -------------------------------------------------------------------------------------------------


def test_image_states_count_the_nodes_having_each_image() -> None:
    cache = Cache()
    cache.add_node(node("n1", images=[image(100, "nginx:1", "nginx@sha256:x"), image(5, "pause")]))
    cache.add_node(node("n2", images=[image(100, "nginx:1")]))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    n1, n2 = snapshot.get("n1"), snapshot.get("n2")
    assert n1 is not None and n2 is not None
    assert n1.image_states == {"nginx:1": ImageStateSummary(100, 2),
                               "nginx@sha256:x": ImageStateSummary(100, 1), "pause": ImageStateSummary(5, 1)}
    assert n2.image_states == {"nginx:1": ImageStateSummary(100, 2)}
    cache.remove_node(node("n2", images=[image(100, "nginx:1")]))
    assert cache.image_state("nginx:1") == ImageStateSummary(100, 1)
    cache.update_node(node("n1"), node("n1", images=[image(5, "pause")]))
    assert cache.image_state("nginx:1") is None
    cache.update_snapshot(snapshot)
    assert snapshot.get("n1").image_states == {"pause": ImageStateSummary(5, 1)}  # type: ignore[union-attr]


@pytest.mark.parametrize("case, images", [
    ("an image entry that is not an object", ["nginx"]),
    ("an image whose names are not a list", [{"names": "nginx", "sizeBytes": 3}]),
    ("an image whose size is not a number", [{"names": ["nginx"], "sizeBytes": "big"}]),
])
def test_malformed_images_are_skipped(case: str, images: list[Any]) -> None:
    cache = Cache()
    cache.add_node(node("n1", images=images + [image(7, "ok")]))
    assert cache.image_state("nginx") is None and cache.image_state("ok") == ImageStateSummary(7, 1), case

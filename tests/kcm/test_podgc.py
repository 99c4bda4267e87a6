"""The pod garbage collector's passes, against hand-filled caches and a recording client (no sleeps)."""

from __future__ import annotations

from typing import Any

from minikube_py.client import resources
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.podgc import NODE_GONE_MESSAGE, OUT_OF_SERVICE_TAINT, PodGCController
from tests.kcm.fakes import cache, context


def pod(name: str, node: str = "", phase: str = "Running", created: str = "2026-01-01T00:00:00Z",
        deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}}


def node(name: str, ready: bool = True, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": taints or []},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def deleted(client: Any) -> list[str]:
    return [a.name for a in client.writes("delete")]


async def test_pods_of_a_missing_node_are_deleted_only_after_the_quarantine() -> None:
    ctx, client, clock = context()
    cache(ctx, resources.PODS, pod("orphan", node="gone"), pod("fine", node="n1"))
    cache(ctx, resources.NODES, node("n1"))
    gc = PodGCController(ctx)
    await gc.gc()
    assert deleted(client) == []
    clock.advance(39)
    await gc.gc()
    assert deleted(client) == []
    clock.advance(1)
    await gc.gc()
    assert deleted(client) == ["orphan"]
    marked = client.writes("patch")[0]
    assert (marked.resource, marked.name) == ("pods/status", "orphan")
    condition = marked.body["status"]["conditions"][0]
    assert marked.body["status"]["phase"] == "Failed"
    assert (condition["type"], condition["reason"], condition["message"]) == (
        "DisruptionTarget", "DeletionByPodGC", NODE_GONE_MESSAGE)
    delete = client.writes("delete")[0]
    assert delete.options == {"grace_period_seconds": 0, "preconditions": {"uid": "uid-orphan"}}


async def test_a_node_missing_only_from_the_cache_costs_no_pod() -> None:
    ctx, client, clock = context()
    cache(ctx, resources.PODS, pod("p", node="lagging"))
    client.put(resources.NODES, node("lagging"))  # the apiserver has it; the cache has not caught up
    gc = PodGCController(ctx)
    await gc.gc()
    clock.advance(60)
    await gc.gc()
    assert deleted(client) == []
    assert [a.name for a in client.actions if a.verb == "get"] == ["lagging"]


async def test_a_node_that_comes_back_restarts_the_quarantine() -> None:
    ctx, client, clock = context()
    cache(ctx, resources.PODS, pod("p", node="flaky"))
    gc = PodGCController(ctx)
    await gc.gc()
    clock.advance(30)
    cache(ctx, resources.NODES, node("flaky"))
    await gc.gc()
    ctx.informers.informer_for(resources.NODES).indexer.delete("flaky")
    clock.advance(30)
    await gc.gc()
    assert deleted(client) == []


async def test_the_oldest_terminated_pods_over_the_threshold_are_deleted() -> None:
    ctx, client, _ = context(ControllerSettings(terminated_pod_gc_threshold=2))
    cache(ctx, resources.NODES, node("n1"))
    cache(ctx, resources.PODS,
          pod("newest", "n1", "Succeeded", "2026-01-04T00:00:00Z"), pod("oldest", "n1", "Failed", "2026-01-01T00:00:00Z"),
          pod("older", "n1", "Succeeded", "2026-01-02T00:00:00Z"), pod("new", "n1", "Failed", "2026-01-03T00:00:00Z"),
          pod("running", "n1", "Running", "2025-01-01T00:00:00Z"))
    await PodGCController(ctx).gc()
    assert deleted(client) == ["oldest", "older"]
    assert client.writes("patch") == []  # already terminated: nothing to mark


async def test_a_threshold_of_zero_keeps_every_terminated_pod() -> None:
    ctx, client, _ = context(ControllerSettings(terminated_pod_gc_threshold=0))
    cache(ctx, resources.NODES, node("n1"))
    cache(ctx, resources.PODS, *(pod(f"done-{i}", "n1", "Succeeded") for i in range(5)))
    await PodGCController(ctx).gc()
    assert deleted(client) == []


async def test_unscheduled_pods_being_deleted_are_removed_at_once() -> None:
    ctx, client, _ = context()
    cache(ctx, resources.PODS, pod("never-scheduled", deleting=True, phase="Pending"), pod("waiting", phase="Pending"))
    await PodGCController(ctx).gc()
    assert deleted(client) == ["never-scheduled"]


async def test_terminating_pods_on_an_out_of_service_node_that_is_not_ready_are_removed() -> None:
    ctx, client, _ = context()
    taint = [{"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}]
    cache(ctx, resources.NODES, node("down", ready=False, taints=taint), node("tainted-but-ready", taints=taint))
    cache(ctx, resources.PODS, pod("stuck", "down", deleting=True), pod("alive", "down"),
          pod("elsewhere", "tainted-but-ready", deleting=True))
    await PodGCController(ctx).gc()
    assert deleted(client) == ["stuck"]

"""The route controller's pass (minikube_py/ccm/controllers/route.py) against the fake cloud and a recording
client: which routes it creates and deletes, which NetworkUnavailable conditions it patches, and what a failing
or hanging provider costs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.cloud.interface import CloudProviderError, Route
from minikube_py.ccm.context import CloudCallTimeout, CloudSettings
from minikube_py.ccm.controllers.route import RouteController, RouteReconcileError
from minikube_py.client import errors, resources
from tests.ccm.fakes import RecordingClient, cache, context
from tests.kcm.fakes import FakeRecorder

SETTINGS = CloudSettings(configure_cloud_routes=True, cluster_cidr="10.244.0.0/16", cloud_call_timeout=0.05)


def node(name: str, *pod_cidrs: str, network_unavailable: tuple[str, str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"uid-{name}"},
                           "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    if pod_cidrs:
        obj["spec"] = {"podCIDR": pod_cidrs[0], "podCIDRs": list(pod_cidrs)}
    if network_unavailable:
        status, reason = network_unavailable
        obj["status"]["conditions"].append({"type": "NetworkUnavailable", "status": status, "reason": reason})
    return obj


def controller(*nodes: dict[str, Any], routes: list[Route] = (), instances: tuple[str, ...] = ("a", "b"),
               settings: CloudSettings = SETTINGS) -> tuple[RouteController, RecordingClient, FakeCloud, FakeRecorder]:
    ctx, client, cloud, _ = context(settings)
    recorder = FakeRecorder()
    ctx.recorder = recorder  # type: ignore[assignment]
    for name in instances:
        cloud.add_instance(name)
    for route in routes:
        cloud.route_table[route.name] = route
    cache(ctx, resources.NODES, *nodes)
    return RouteController(ctx), client, cloud, recorder


def conditions_patched(client: RecordingClient) -> dict[str, tuple[str, str, str]]:
    """node name -> (status, reason, message) of the NetworkUnavailable each status patch set."""
    result = {}
    for action in client.writes("patch"):
        assert (action.resource, action.options.get("patch_type")) == ("nodes/status", "strategic")
        (condition,) = action.body["status"]["conditions"]  # only ours: the kubelet's stay as they are
        assert condition["type"] == "NetworkUnavailable"
        assert condition["lastTransitionTime"] and condition["lastHeartbeatTime"]
        result[action.name] = (condition["status"], condition["reason"], condition["message"])
    return result


CREATED = ("False", "RouteCreated", "RouteController created a route")
NOT_CREATED = ("True", "NoRouteCreated", "RouteController failed to create a route")


async def test_each_node_pod_cidr_gets_a_route_named_after_the_node_uid_and_the_node_network_available() -> None:
    rc, client, cloud, recorder = controller(node("a", "10.244.1.0/24", "fd00:1::/64"), node("b", "10.244.2.0/24"),
                                             node("no-cidr-yet"))
    await rc.sync("routes")
    assert sorted(cloud.calls_to("create_route")) == [
        ("create_route", ("kubernetes", "uid-a", "a", "10.244.1.0/24")),
        ("create_route", ("kubernetes", "uid-a", "a", "fd00:1::/64")),
        ("create_route", ("kubernetes", "uid-b", "b", "10.244.2.0/24"))]
    assert conditions_patched(client) == {"a": CREATED, "b": CREATED}  # no podCIDR, no route: left alone
    assert recorder.events == []


async def test_a_cluster_already_routed_costs_one_list_and_no_writes() -> None:
    rc, client, cloud, _ = controller(node("a", "10.244.1.0/24", network_unavailable=("False", "RouteCreated")),
                                      routes=[Route("r-a", "a", "10.244.1.0/24")])
    await rc.sync("routes")
    assert [method for method, _ in cloud.calls] == ["list_routes"]
    assert client.writes() == []


async def test_a_condition_set_by_someone_else_is_taken_over_with_our_reason() -> None:
    rc, client, _, _ = controller(node("a", "10.244.1.0/24", network_unavailable=("False", "CalicoIsUp")),
                                  routes=[Route("r-a", "a", "10.244.1.0/24")])
    await rc.sync("routes")
    assert conditions_patched(client) == {"a": CREATED}


async def test_blackholed_orphaned_and_unwanted_routes_in_the_cluster_cidr_are_deleted() -> None:
    routes = [Route("keep", "a", "10.244.1.0/24"),
              Route("old-cidr", "a", "10.244.9.0/24"),  # a's podCIDR is not this one any more
              Route("gone-node", "c", "10.244.3.0/24"),  # no Node c
              Route("blackhole", "b", "10.244.2.0/24"),  # b's instance is gone: the fake cloud blackholes it
              Route("not-ours", "c", "192.168.0.0/24"),  # outside --cluster-cidr
              Route("garbage", "c", "not-a-cidr")]
    rc, client, cloud, _ = controller(node("a", "10.244.1.0/24"), node("b", "10.244.2.0/24"), routes=routes,
                                      instances=("a",))
    await rc.sync("routes")
    assert sorted(args[1] for _, args in cloud.calls_to("delete_route")) == ["blackhole", "gone-node", "old-cidr"]
    assert cloud.calls_to("create_route") == []  # b's blackholed route is replaced at the next pass, as kube
    assert sorted(cloud.route_table) == ["garbage", "keep", "not-ours"]


async def test_without_a_cluster_cidr_every_route_of_the_cluster_is_ours() -> None:
    rc, _, cloud, _ = controller(node("a", "10.244.1.0/24"), routes=[Route("not-ours", "c", "192.168.0.0/24")],
                                 settings=CloudSettings(configure_cloud_routes=True))
    await rc.sync("routes")
    assert [args[1] for _, args in cloud.calls_to("delete_route")] == ["not-ours"]


async def test_a_node_routes_point_at_but_without_pod_cidrs_is_marked_network_unavailable() -> None:
    rc, client, cloud, _ = controller(node("a"), routes=[Route("r-a", "a", "10.244.1.0/24")])
    await rc.sync("routes")
    assert [args[1] for _, args in cloud.calls_to("delete_route")] == ["r-a"]
    assert conditions_patched(client) == {"a": NOT_CREATED}


@pytest.mark.parametrize("fault", ["raises", "hangs"])
async def test_a_route_that_cannot_be_created_gives_an_event_and_network_unavailable_and_a_retry(fault: str) -> None:
    rc, client, cloud, recorder = controller(node("a", "10.244.1.0/24"), node("b", "10.244.2.0/24"),
                                             routes=[Route("r-b", "b", "10.244.2.0/24")])
    if fault == "raises":
        cloud.errors["create_route"] = CloudProviderError("quota exceeded")
    else:
        cloud.hang.add("create_route")
    with pytest.raises(RouteReconcileError):
        await rc.sync("routes")
    assert conditions_patched(client) == {"a": NOT_CREATED, "b": CREATED}
    ((kind, reason, message),) = recorder.events
    assert (kind, reason) == ("Warning", "FailedToCreateRoute")
    assert message.startswith("Could not create route uid-a 10.244.1.0/24 for node a after ")
    assert message.endswith("quota exceeded" if fault == "raises" else "did not answer within 0.05s")

    cloud.errors.clear()
    cloud.hang.clear()
    client.actions.clear()
    await rc.sync("routes")  # the retry: the cache still shows the old condition, so it is written again
    assert conditions_patched(client) == {"a": CREATED, "b": CREATED}
    assert "kubernetes-uid-a" in cloud.route_table


@pytest.mark.parametrize("fault", ["raises", "hangs"])
async def test_a_failing_route_list_writes_nothing_and_fails_the_pass(fault: str) -> None:
    rc, client, cloud, _ = controller(node("a", "10.244.1.0/24"))
    if fault == "raises":
        cloud.errors["list_routes"] = CloudProviderError("cloud down")
    else:
        cloud.hang.add("list_routes")
    with pytest.raises(CloudCallTimeout if fault == "hangs" else CloudProviderError):
        await rc.sync("routes")
    assert [method for method, _ in cloud.calls] == ["list_routes"]
    assert client.writes() == []


async def test_a_failed_delete_does_not_stop_the_others_and_fails_the_pass() -> None:
    rc, _, cloud, _ = controller(node("a", "10.244.1.0/24"), routes=[Route("gone", "c", "10.244.3.0/24")])
    cloud.errors["delete_route"] = CloudProviderError("busy")
    with pytest.raises(RouteReconcileError):
        await rc.sync("routes")
    assert "kubernetes-uid-a" in cloud.route_table and "gone" in cloud.route_table


async def test_a_refused_status_patch_fails_the_pass_after_the_routes_are_made() -> None:
    rc, client, cloud, _ = controller(node("a", "10.244.1.0/24"))
    client.failures[("patch", "nodes/status")] = errors.Conflict({"message": "the object has been modified"})
    with pytest.raises(RouteReconcileError):
        await rc.sync("routes")
    assert "kubernetes-uid-a" in cloud.route_table


def test_an_unparsable_cluster_cidr_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="--cluster-cidr"):
        controller(settings=CloudSettings(configure_cloud_routes=True, cluster_cidr="10.244.0.0/33"))


@pytest.mark.parametrize("settings, disabled", [
    (CloudSettings(configure_cloud_routes=False, cluster_cidr="not even parsed"), set()),
    (CloudSettings(configure_cloud_routes=True), {"routes"})])
async def test_without_configure_cloud_routes_or_a_routes_capability_run_returns_at_once(
        settings: CloudSettings, disabled: set[str]) -> None:
    ctx, client, cloud, _ = context(settings)
    cloud.disabled = disabled
    rc = RouteController(ctx)
    rc.nodes.indexer.add(node("a", "10.244.1.0/24"))
    await asyncio.wait_for(rc.run(1), timeout=1)  # not even waiting for the node cache
    assert cloud.calls == [] and client.writes() == []
    assert len(rc.queue) == 0


def test_only_node_changes_that_can_change_routes_queue_a_pass() -> None:
    rc, _, _, _ = controller()
    rc._node_updated(node("a"), node("a", network_unavailable=("False", "RouteCreated")))
    assert len(rc.queue) == 0
    rc._node_updated(node("a"), node("a", "10.244.1.0/24"))
    rc._enqueue(node("b"))
    assert len(rc.queue) == 1  # the whole cluster is one work item


async def test_the_controller_keeps_running_after_failed_passes_and_resyncs_every_period() -> None:
    ctx, _, cloud, clock = context(CloudSettings(configure_cloud_routes=True, route_reconciliation_period=10.0))
    ctx.recorder = FakeRecorder()  # type: ignore[assignment]
    cloud.add_instance("a")
    cloud.errors["list_routes"] = CloudProviderError("cloud down")
    cache(ctx, resources.NODES, node("a", "10.244.1.0/24"))
    task = asyncio.create_task(RouteController(ctx).run(1))
    try:
        await _until(lambda: len(cloud.calls_to("list_routes")) >= 2, clock, step=1.0)  # retried with backoff
        assert not task.done()
        del cloud.errors["list_routes"]
        await _until(lambda: "kubernetes-uid-a" in cloud.route_table, clock, step=1.0)
        passes = len(cloud.calls_to("list_routes"))
        await _until(lambda: len(cloud.calls_to("list_routes")) > passes, clock, step=10.0)  # the period
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _until(check: Any, clock: Any, step: float) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.01)
        clock.advance(step)
    raise AssertionError("the controller never got there")

"""The cloud-node-lifecycle controller's pass over the nodes, against the fake cloud and a recording client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.cloud.interface import Unimplemented
from minikube_py.ccm.context import CloudSettings
from minikube_py.ccm.controllers.nodelifecycle import SHUTDOWN_TAINT, CloudNodeLifecycleController
from minikube_py.client import errors, resources
from tests.ccm.fakes import RecordingClient, cache, context
from tests.ccm.test_node import conflict, fail_once, settle
from tests.kcm.fakes import FakeRecorder

OTHER_TAINT = {"key": "example.com/dedicated", "value": "db", "effect": "NoSchedule"}


def node(name: str, ready: str | None, *, taints: tuple[dict[str, Any], ...] = (), provider_id: str = "",
         resource_version: str = "7") -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    spec: dict[str, Any] = {"taints": list(taints)} if taints else {}
    if provider_id:
        spec["providerID"] = provider_id
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": resource_version},
            "spec": spec, "status": {"conditions": conditions}}


def controller(*nodes: dict[str, Any], cloud: FakeCloud, settings: CloudSettings | None = None,
               ) -> tuple[CloudNodeLifecycleController, RecordingClient, FakeRecorder, Any]:
    ctx, client, _, clock = context(settings, cloud)
    recorder = FakeRecorder()
    ctx.recorder = recorder  # type: ignore[assignment]
    lifecycle = CloudNodeLifecycleController(ctx)
    cache(ctx, resources.NODES, *nodes)  # type: ignore[arg-type]
    for obj in nodes:
        client.put(resources.NODES, obj)
    return lifecycle, client, recorder, clock


def cloud_with(*names: str, shutdown: tuple[str, ...] = (), disabled: tuple[str, ...] = ()) -> FakeCloud:
    cloud = FakeCloud()
    for name in names:
        cloud.add_instance(name)
    cloud.shutdown.update(shutdown)
    cloud.disabled.update(disabled)
    return cloud


def writes(client: RecordingClient) -> list[tuple[str, str, str, Any]]:
    return [(a.verb, a.resource, a.name, a.body) for a in client.writes()]


def taint_patch(name: str, taints: list[dict[str, Any]], rv: str = "7") -> tuple[str, str, str, Any]:
    return ("patch", "nodes", name, {"metadata": {"resourceVersion": rv}, "spec": {"taints": taints}})


# Ready nodes ----------------------------------------------------------------------------------------------

async def test_a_ready_node_loses_the_shutdown_taint_without_asking_the_cloud() -> None:
    cloud = cloud_with("a", "b", shutdown=("a",))
    lifecycle, client, _, _ = controller(node("a", "True", taints=(OTHER_TAINT, SHUTDOWN_TAINT)),
                                         node("b", "True"), cloud=cloud)
    await lifecycle.monitor_nodes()
    assert writes(client) == [taint_patch("a", [OTHER_TAINT])]
    assert client.writes()[0].options["patch_type"] == "strategic"
    assert cloud.calls == []


# NotReady nodes -------------------------------------------------------------------------------------------

async def test_a_not_ready_node_whose_instance_is_gone_is_deleted_with_an_event() -> None:
    cloud = cloud_with()
    lifecycle, client, recorder, _ = controller(node("a", "False"), cloud=cloud)
    await lifecycle.monitor_nodes()
    assert writes(client) == [("delete", "nodes", "a", None)]
    assert recorder.events == [("Normal", "DeletingNode",
                                "Deleting node a because it does not exist in the cloud provider")]
    assert cloud.calls == [("instance_exists", ("a",))]


async def test_a_node_without_a_ready_condition_counts_as_not_ready() -> None:
    lifecycle, client, _, _ = controller(node("a", None), cloud=cloud_with())
    await lifecycle.monitor_nodes()
    assert writes(client) == [("delete", "nodes", "a", None)]


async def test_a_not_ready_node_whose_instance_is_shut_down_gets_the_shutdown_taint() -> None:
    cloud = cloud_with("a", shutdown=("a",))
    lifecycle, client, recorder, _ = controller(node("a", "Unknown", taints=(OTHER_TAINT,)), cloud=cloud)
    await lifecycle.monitor_nodes()
    assert writes(client) == [taint_patch("a", [OTHER_TAINT, SHUTDOWN_TAINT])]
    assert cloud.calls == [("instance_exists", ("a",)), ("instance_shutdown", ("a",))]
    assert recorder.events == []


@pytest.mark.parametrize(("shutdown", "taints"), [
    (("a",), (SHUTDOWN_TAINT,)),  # tainted already
    ((), ()),  # running: a NotReady node whose VM runs is left alone
    ((), (SHUTDOWN_TAINT,)),  # running again but not Ready yet: the taint stays until Ready, as in kube
])
async def test_a_not_ready_node_needs_no_write_when_its_taint_already_says_it(shutdown: tuple[str, ...],
                                                                              taints: tuple[dict[str, Any], ...],
                                                                              ) -> None:
    lifecycle, client, _, _ = controller(node("a", "False", taints=taints), cloud=cloud_with("a", shutdown=shutdown))
    await lifecycle.monitor_nodes()
    assert writes(client) == []


async def test_a_shutdown_taint_with_another_value_is_replaced_in_place() -> None:
    odd = {"key": SHUTDOWN_TAINT["key"], "value": "x", "effect": "NoSchedule"}
    lifecycle, client, _, _ = controller(node("a", "False", taints=(odd, OTHER_TAINT)),
                                         cloud=cloud_with("a", shutdown=("a",)))
    await lifecycle.monitor_nodes()
    assert writes(client) == [taint_patch("a", [SHUTDOWN_TAINT, OTHER_TAINT])]


# a provider with only the name-based Instances ------------------------------------------------------------

async def test_a_v1_provider_is_asked_by_provider_id_made_from_the_instance_id_when_the_node_has_none() -> None:
    cloud = cloud_with("a", "b", shutdown=("b",), disabled=("instances_v2",))
    lifecycle, client, _, _ = controller(node("a", "False"), node("b", "False", provider_id="fake://b"),
                                         cloud=cloud)
    await lifecycle.monitor_nodes()
    assert cloud.calls == [
        ("instance_id", ("a",)), ("instance_exists_by_provider_id", ("fake://a",)),
        ("instance_id", ("a",)), ("instance_shutdown_by_provider_id", ("fake://a",)),
        ("instance_exists_by_provider_id", ("fake://b",)), ("instance_shutdown_by_provider_id", ("fake://b",))]
    assert writes(client) == [taint_patch("b", [SHUTDOWN_TAINT])]


async def test_a_v1_instance_unknown_by_name_counts_as_gone() -> None:
    cloud = cloud_with(disabled=("instances_v2",))
    lifecycle, client, recorder, _ = controller(node("a", "False"), cloud=cloud)
    await lifecycle.monitor_nodes()
    assert writes(client) == [("delete", "nodes", "a", None)] and recorder.reasons() == ["DeletingNode"]


async def test_a_v1_shutdown_check_the_cloud_does_not_implement_means_not_shut_down() -> None:
    cloud = cloud_with("a", shutdown=("a",), disabled=("instances_v2",))
    cloud.errors["instance_shutdown_by_provider_id"] = Unimplemented("shutdown")
    lifecycle, client, recorder, _ = controller(node("a", "False", provider_id="fake://a"), cloud=cloud)
    await lifecycle.monitor_nodes()
    assert writes(client) == [] and recorder.events == []


async def test_a_provider_without_instances_turns_the_controller_off() -> None:
    cloud = cloud_with(disabled=("instances", "instances_v2"))
    lifecycle, client, _, _ = controller(node("a", "False"), cloud=cloud)
    assert not lifecycle.enabled
    await asyncio.wait_for(lifecycle.run(1), 1)
    assert client.actions == [] and cloud.calls == []


# failures --------------------------------------------------------------------------------------------------

async def test_a_provider_error_for_one_node_is_reported_and_the_pass_goes_on() -> None:
    cloud = cloud_with("b")
    cloud.errors["instance_exists"] = RuntimeError("cloud API 500")
    lifecycle, client, recorder, _ = controller(node("a", "False"), node("b", "True", taints=(SHUTDOWN_TAINT,)),
                                                cloud=cloud)
    await lifecycle.monitor_nodes()
    assert recorder.events == [("Warning", "FailedToCheckNodeInstance",
                                "error checking if node a exists: cloud API 500")]
    assert writes(client) == [taint_patch("b", [])]  # node b still handled


async def test_a_hanging_shutdown_check_times_out_and_the_other_nodes_are_still_handled() -> None:
    cloud = cloud_with("a", shutdown=("a",))
    cloud.hang = {"instance_shutdown"}
    lifecycle, client, recorder, _ = controller(node("a", "False"), node("gone", "False"), cloud=cloud,
                                                settings=CloudSettings(cloud_call_timeout=0.01))
    await lifecycle.monitor_nodes()
    assert [(type, reason) for type, reason, _ in recorder.events] == [
        ("Warning", "FailedToCheckNodeInstance"), ("Normal", "DeletingNode")]
    assert "error checking if node a is shutdown: instance_shutdown(a): the cloud provider did not answer " \
           "within 0.01s" == recorder.events[0][2]
    assert writes(client) == [("delete", "nodes", "gone", None)]


async def test_a_failed_delete_gets_the_deleting_node_failed_event() -> None:
    lifecycle, client, recorder, _ = controller(node("a", "False"), cloud=cloud_with())
    client.failures[("delete", "nodes")] = errors.Forbidden({"code": 403, "message": "nodes \"a\" is forbidden"})
    await lifecycle.monitor_nodes()
    assert recorder.reasons() == ["DeletingNode", "DeletingNodeFailed"]
    assert recorder.events[1][2].startswith("Failed deleting node a: ")


async def test_a_conflicting_taint_patch_is_recomputed_from_a_fresh_read() -> None:
    lifecycle, client, _, _ = controller(node("a", "False"), cloud=cloud_with("a", shutdown=("a",)))
    client.put(resources.NODES, node("a", "False", taints=(OTHER_TAINT,), resource_version="8"))
    fail_once(client, "patch", "nodes", conflict())
    await lifecycle.monitor_nodes()
    assert [(a.verb, a.resource) for a in client.actions] == [("patch", "nodes"), ("get", "nodes"),
                                                              ("patch", "nodes")]
    assert writes(client)[1] == taint_patch("a", [OTHER_TAINT, SHUTDOWN_TAINT], rv="8")


async def test_a_taint_the_fresh_read_already_has_is_not_written_again() -> None:
    lifecycle, client, _, _ = controller(node("a", "False"), cloud=cloud_with("a", shutdown=("a",)))
    client.put(resources.NODES, node("a", "False", taints=(SHUTDOWN_TAINT,), resource_version="8"))
    fail_once(client, "patch", "nodes", conflict())
    await lifecycle.monitor_nodes()
    assert [a.verb for a in client.actions] == ["patch", "get"]


async def test_conflicts_that_persist_are_given_up_after_a_few_attempts_without_failing_the_pass() -> None:
    lifecycle, client, _, _ = controller(node("a", "False"), node("gone", "False"),
                                         cloud=cloud_with("a", shutdown=("a",)))
    client.failures[("patch", "nodes")] = conflict()
    await lifecycle.monitor_nodes()
    assert len(client.writes("patch")) == 5
    assert client.writes("delete")[0].name == "gone"


# the period -----------------------------------------------------------------------------------------------

async def test_running_checks_the_nodes_at_start_and_every_node_monitor_period() -> None:
    cloud = cloud_with("a")
    lifecycle, client, _, clock = controller(node("a", "False"), cloud=cloud,
                                             settings=CloudSettings(node_monitor_period=5))
    task = asyncio.create_task(lifecycle.run(1))
    try:
        await settle()
        assert [call[0] for call in cloud.calls] == ["instance_exists", "instance_shutdown"]
        cloud.remove_instance("a")
        clock.advance(4.9)
        await settle()
        assert client.writes() == []
        clock.advance(0.1)
        await settle()
        assert writes(client) == [("delete", "nodes", "a", None)]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

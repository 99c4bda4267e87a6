"""The cloud-node controller's sync and address refresh, against the fake cloud and a recording client."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.cloud.interface import CloudProviderError, InstanceMetadata, Node, Unimplemented
from minikube_py.ccm.context import CloudCallTimeout, CloudSettings
from minikube_py.ccm.controllers.node import (
    UNINITIALIZED_TAINT_KEY,
    CloudNodeController,
    addresses_changed,
    addresses_from_node_ip,
)
from minikube_py.client import errors, resources
from minikube_py.client.controller import process_next_work_item
from tests.ccm.fakes import RecordingClient, cache, context
from tests.kcm.fakes import FakeRecorder

UNINITIALIZED = {"key": UNINITIALIZED_TAINT_KEY, "value": "true", "effect": "NoSchedule"}
OTHER_TAINT = {"key": "example.com/dedicated", "value": "db", "effect": "NoSchedule"}
INTERNAL = {"type": "InternalIP", "address": "10.0.0.5"}
EXTERNAL = {"type": "ExternalIP", "address": "203.0.113.5"}
HOSTNAME = {"type": "Hostname", "address": "node-1"}

log = logging.getLogger(__name__)


def node(name: str = "node-1", *, taints: tuple[dict[str, Any], ...] = (UNINITIALIZED,), provider_id: str = "",
         labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
         addresses: list[dict[str, str]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7",
                            "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"taints": list(taints)} if taints else {}
    if provider_id:
        spec["providerID"] = provider_id
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec,
            "status": {"addresses": addresses if addresses is not None else [INTERNAL, HOSTNAME]}}


def controller(*nodes: dict[str, Any], cloud: FakeCloud | None = None, settings: CloudSettings | None = None,
               ) -> tuple[CloudNodeController, RecordingClient, FakeCloud, FakeRecorder, Any]:
    ctx, client, cloud, clock = context(settings, cloud)
    recorder = FakeRecorder()
    ctx.recorder = recorder  # type: ignore[assignment]
    cnc = CloudNodeController(ctx)
    cache(ctx, resources.NODES, *nodes)  # type: ignore[arg-type]
    for obj in nodes:
        client.put(resources.NODES, obj)
    return cnc, client, cloud, recorder, clock


def cloud_with(*names: str, **fields: Any) -> FakeCloud:
    cloud = FakeCloud()
    for name in names:
        cloud.add_instance(name, addresses=[{"type": "InternalIP", "address": "10.0.0.5"}, EXTERNAL], **fields)
    return cloud


def fail_once(client: RecordingClient, verb: str, resource: str, error: errors.APIStatusError) -> None:
    """Make the next `verb` on `resource` fail with `error`, and only that one."""
    record = client._record

    def once(action: Any) -> None:
        failing = (action.verb, action.resource) == (verb, resource) and (verb, resource) in client.failures
        try:
            record(action)
        finally:
            if failing:
                del client.failures[(verb, resource)]

    client.failures[(verb, resource)] = error
    client._record = once  # type: ignore[method-assign]


def conflict() -> errors.Conflict:
    return errors.Conflict({"code": 409, "message": "the object has been modified"})


# initializing a node ---------------------------------------------------------------------------------------

async def test_a_tainted_node_gets_provider_id_labels_and_loses_the_taint_in_one_update() -> None:
    cloud = cloud_with("node-1", instance_type="fake.large", zone="zone-b", region="region-2",
                       labels={"cloud.example.com/rack": "r7"})
    cnc, client, cloud, recorder, _ = controller(node(taints=(OTHER_TAINT, UNINITIALIZED)), cloud=cloud)

    await cnc.sync("node-1")

    updates = client.writes("update")
    assert [(u.resource, u.name) for u in updates] == [("nodes", "node-1")]
    body = updates[0].body
    assert body["spec"]["providerID"] == "fake://node-1"
    assert body["spec"]["taints"] == [OTHER_TAINT]
    assert body["metadata"]["resourceVersion"] == "7"
    assert body["metadata"]["labels"] == {
        "kubernetes.io/hostname": "node-1",
        "node.kubernetes.io/instance-type": "fake.large", "beta.kubernetes.io/instance-type": "fake.large",
        "topology.kubernetes.io/zone": "zone-b", "failure-domain.beta.kubernetes.io/zone": "zone-b",
        "topology.kubernetes.io/region": "region-2", "failure-domain.beta.kubernetes.io/region": "region-2",
        "cloud.example.com/rack": "r7"}
    assert cloud.calls == [("instance_metadata", ("node-1",))]
    assert recorder.events == [("Normal", "Synced", "Node synced successfully")]


async def test_after_initializing_the_cloud_addresses_replace_the_kubelets_keeping_its_hostname() -> None:
    cnc, client, _, _, _ = controller(node(addresses=[{"type": "InternalIP", "address": "127.0.0.1"}, HOSTNAME]),
                                      cloud=cloud_with("node-1"))
    await cnc.sync("node-1")
    patches = client.writes("patch")
    assert [(p.resource, p.name, p.options["patch_type"]) for p in patches] == [("nodes/status", "node-1", "strategic")]
    assert patches[0].body == {"status": {"addresses": [INTERNAL, EXTERNAL, HOSTNAME, {"$patch": "replace"}]}}


async def test_a_provider_id_the_kubelet_set_is_kept() -> None:
    cnc, client, _, _, _ = controller(node(provider_id="fake://node-1-by-kubelet"), cloud=cloud_with("node-1"))
    cnc.cloud.instances_by_name["node-1-by-kubelet"] = cnc.cloud.instances_by_name["node-1"]  # type: ignore[attr-defined]
    await cnc.sync("node-1")
    assert client.writes("update")[0].body["spec"]["providerID"] == "fake://node-1-by-kubelet"


async def test_additional_labels_never_enter_kubernetes_namespaces_nor_overwrite_labels() -> None:
    cloud = cloud_with("node-1", labels={"node.kubernetes.io/exclude-from-external-load-balancers": "true",
                                         "sub.k8s.io/x": "1", "team": "cloud", "tier": "gold"})
    cnc, client, _, _, _ = controller(node(labels={"team": "mine"}), cloud=cloud)
    await cnc.sync("node-1")
    labels = client.writes("update")[0].body["metadata"]["labels"]
    assert labels["team"] == "mine" and labels["tier"] == "gold"
    assert "node.kubernetes.io/exclude-from-external-load-balancers" not in labels and "sub.k8s.io/x" not in labels


class NoProviderIDCloud(FakeCloud):
    async def instance_metadata(self, node: Node) -> InstanceMetadata:
        return InstanceMetadata(provider_id="", instance_type="t")


async def test_instances_v2_without_a_provider_id_fails_unless_the_node_has_one() -> None:
    cnc, client, _, recorder, _ = controller(node(), cloud=NoProviderIDCloud())
    with pytest.raises(CloudProviderError, match="cloud provider does not set node provider ID for node node-1"):
        await cnc.sync("node-1")
    assert client.writes() == []
    assert recorder.reasons() == ["FailedToInitializeNode"]

    cnc, client, _, _, _ = controller(node(provider_id="other://x"), cloud=NoProviderIDCloud())
    await cnc.sync("node-1")
    assert client.writes("update")[0].body["spec"]["providerID"] == "other://x"


# a provider with only the name-based Instances ------------------------------------------------------------

async def test_a_v1_provider_is_asked_by_name_for_id_addresses_type_and_zone() -> None:
    cloud = cloud_with("node-1", zone="zone-c", region="region-3")
    cloud.disabled = {"instances_v2"}
    cnc, client, cloud, _, _ = controller(node(), cloud=cloud)
    await cnc.sync("node-1")
    assert [call[0] for call in cloud.calls] == ["instance_id", "node_addresses", "instance_type",
                                                 "get_zone_by_provider_id"]
    body = client.writes("update")[0].body
    assert body["spec"]["providerID"] == "fake://node-1"
    assert body["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-c"
    assert body["metadata"]["labels"]["failure-domain.beta.kubernetes.io/region"] == "region-3"
    assert client.writes("patch")[0].body["status"]["addresses"][:2] == [INTERNAL, EXTERNAL]


async def test_a_v1_zone_lookup_falls_back_to_the_node_name_and_a_cloud_without_zones_sets_no_zone() -> None:
    cloud = cloud_with("node-1")
    cloud.disabled = {"instances_v2"}
    cloud.errors["get_zone_by_provider_id"] = CloudProviderError("no such id")
    cnc, client, cloud, _, _ = controller(node(), cloud=cloud)
    await cnc.sync("node-1")
    assert [call[0] for call in cloud.calls][-2:] == ["get_zone_by_provider_id", "get_zone_by_node_name"]
    assert client.writes("update")[0].body["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-a"

    cloud = cloud_with("node-1")
    cloud.disabled = {"instances_v2", "zones"}
    cnc, client, _, _, _ = controller(node(), cloud=cloud)
    await cnc.sync("node-1")
    labels = client.writes("update")[0].body["metadata"]["labels"]
    assert "topology.kubernetes.io/zone" not in labels and labels["node.kubernetes.io/instance-type"] == "fake.small"


async def test_a_v1_zone_failing_both_ways_keeps_the_node_tainted() -> None:
    cloud = cloud_with("node-1")
    cloud.disabled = {"instances_v2"}
    cloud.errors["get_zone_by_provider_id"] = CloudProviderError("by id")
    cloud.errors["get_zone_by_node_name"] = CloudProviderError("by name")
    cnc, client, _, recorder, _ = controller(node(), cloud=cloud)
    with pytest.raises(CloudProviderError, match="Error fetching by providerID: by id Error fetching by NodeName: by name"):
        await cnc.sync("node-1")
    assert client.writes() == [] and recorder.reasons() == ["FailedToInitializeNode"]


async def test_a_v1_cloud_without_instance_ids_initializes_the_node_without_a_provider_id() -> None:
    cloud = cloud_with("node-1")
    cloud.disabled = {"instances_v2"}
    cloud.errors["instance_id"] = Unimplemented("instance_id")
    cnc, client, cloud, _, _ = controller(node(), cloud=cloud)
    await cnc.sync("node-1")
    body = client.writes("update")[0].body
    assert "providerID" not in body["spec"] and "taints" not in body["spec"]
    assert ("get_zone_by_node_name", ("node-1",)) in cloud.calls


async def test_a_provider_without_instances_turns_the_controller_off() -> None:
    cloud = FakeCloud()
    cloud.disabled = {"instances", "instances_v2"}
    cnc, client, cloud, _, _ = controller(node(), cloud=cloud)
    assert not cnc.enabled
    await asyncio.wait_for(cnc.run(1), 1)  # returns at once instead of working
    assert client.actions == [] and cloud.calls == []


# failures --------------------------------------------------------------------------------------------------

async def test_an_unknown_instance_leaves_the_node_tainted_with_a_warning_and_is_retried_with_backoff() -> None:
    cnc, client, cloud, recorder, clock = controller(node(), cloud=FakeCloud())
    cnc.queue.add("node-1")
    await process_next_work_item(cnc.queue, cnc.sync, name="cloud_node", max_retries=None, log=log)
    assert client.writes() == []
    assert recorder.events == [("Warning", "FailedToInitializeNode",
                                "failed to get instance metadata for node node-1: instance not found: node-1")]
    assert cnc.queue.num_requeues("node-1") == 1 and len(cnc.queue) == 0  # waiting out its backoff

    cloud.add_instance("node-1")
    clock.advance(1)
    await settle()
    assert len(cnc.queue) == 1
    await process_next_work_item(cnc.queue, cnc.sync, name="cloud_node", max_retries=None, log=log)
    assert [u.name for u in client.writes("update")] == ["node-1"]
    assert cnc.queue.num_requeues("node-1") == 0  # forgotten after success
    cnc.queue.shut_down()


async def test_a_provider_that_raises_gets_a_warning_event_with_its_error() -> None:
    cloud = cloud_with("node-1")
    cloud.errors["instance_metadata"] = RuntimeError("cloud API 500")
    cnc, client, _, recorder, _ = controller(node(), cloud=cloud)
    with pytest.raises(CloudProviderError, match="cloud API 500"):
        await cnc.sync("node-1")
    assert client.writes() == []
    assert recorder.events == [("Warning", "FailedToInitializeNode",
                                "failed to get instance metadata for node node-1: cloud API 500")]


async def test_a_provider_that_hangs_times_out_and_the_node_stays_tainted() -> None:
    cloud = cloud_with("node-1")
    cloud.hang = {"instance_metadata"}
    cnc, client, _, recorder, _ = controller(node(), cloud=cloud, settings=CloudSettings(cloud_call_timeout=0.01))
    with pytest.raises(CloudProviderError) as raised:
        await cnc.sync("node-1")
    assert isinstance(raised.value.__cause__, CloudCallTimeout)
    assert client.writes() == []
    assert recorder.reasons() == ["FailedToInitializeNode"] and "did not answer within 0.01s" in recorder.events[0][2]


async def test_a_conflicting_update_is_retried_on_a_fresh_read_of_the_node() -> None:
    cnc, client, _, recorder, _ = controller(node(), cloud=cloud_with("node-1"))
    fresh = node(labels={"added": "meanwhile"})
    fresh["metadata"]["resourceVersion"] = "8"
    client.put(resources.NODES, fresh)
    fail_once(client, "update", "nodes", conflict())

    await cnc.sync("node-1")

    assert [a.verb for a in client.actions if a.resource == "nodes"] == ["update", "get", "update"]
    second = client.writes("update")[1].body
    assert second["metadata"]["resourceVersion"] == "8" and second["metadata"]["labels"]["added"] == "meanwhile"
    assert "taints" not in second["spec"]
    assert recorder.reasons() == ["Synced"]


async def test_conflicts_that_persist_fail_the_sync_for_a_requeue() -> None:
    cnc, client, _, recorder, _ = controller(node(), cloud=cloud_with("node-1"))
    client.failures[("update", "nodes")] = conflict()
    with pytest.raises(errors.Conflict):
        await cnc.sync("node-1")
    assert len(client.writes("update")) == 5
    assert "Synced" not in recorder.reasons()


async def test_a_failed_address_patch_is_logged_and_the_node_still_counts_as_initialized() -> None:
    cnc, client, _, recorder, _ = controller(node(addresses=[]), cloud=cloud_with("node-1"))
    client.failures[("patch", "nodes/status")] = errors.Forbidden({"code": 403, "message": "no"})
    await cnc.sync("node-1")
    assert recorder.reasons() == ["Synced"]


# the provided node IP -------------------------------------------------------------------------------------

async def test_the_provided_node_ip_comes_first_and_is_the_only_address_of_its_type() -> None:
    cloud = FakeCloud()
    cloud.add_instance("node-1", addresses=[{"type": "InternalIP", "address": "10.0.0.5"},
                                            {"type": "InternalIP", "address": "10.0.0.6"}, EXTERNAL])
    annotated = node(annotations={"alpha.kubernetes.io/provided-node-ip": "10.0.0.6"})
    cnc, client, _, _, _ = controller(annotated, cloud=cloud)
    await cnc.sync("node-1")
    assert client.writes("patch")[0].body["status"]["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.6"}, EXTERNAL, HOSTNAME, {"$patch": "replace"}]


@pytest.mark.parametrize(("provided", "message"), [
    ("10.9.9.9", "failed to get node address from cloud provider that matches ip: 10.9.9.9"),
    ("not-an-ip", 'failed to parse node IP "not-an-ip": could not parse "not-an-ip"'),
    ("10.0.0.5,10.0.0.6", "must contain either a single IP or a dual-stack pair of IPs"),
])
async def test_a_provided_node_ip_the_cloud_does_not_list_keeps_the_node_tainted(provided: str, message: str) -> None:
    annotated = node(annotations={"alpha.kubernetes.io/provided-node-ip": provided})
    cnc, client, _, recorder, _ = controller(annotated, cloud=cloud_with("node-1"))
    with pytest.raises(ValueError, match='provided node ip for node "node-1" is not valid'):
        await cnc.sync("node-1")
    assert client.writes() == []
    assert recorder.reasons() == ["FailedToInitializeNode"] and message in recorder.events[0][2]


def test_a_dual_stack_provided_pair_orders_both_families() -> None:
    addresses = [{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "InternalIP", "address": "fd00::5"},
                 {"type": "ExternalIP", "address": "fd00::9"}, {"type": "ExternalIP", "address": "203.0.113.5"}]
    annotated = node(annotations={"alpha.kubernetes.io/provided-node-ip": "fd00::9,10.0.0.5"})
    assert addresses_from_node_ip(annotated, addresses) == [
        {"type": "ExternalIP", "address": "fd00::9"}, {"type": "InternalIP", "address": "10.0.0.5"}]
    assert addresses_from_node_ip(node(), addresses) == addresses  # no annotation: unchanged


def test_an_address_change_is_another_count_or_another_address_of_a_type() -> None:
    assert not addresses_changed([INTERNAL, HOSTNAME], [HOSTNAME, INTERNAL])
    assert addresses_changed([INTERNAL], [INTERNAL, HOSTNAME])
    assert addresses_changed([INTERNAL], [{"type": "InternalIP", "address": "10.0.0.6"}])


# initialized nodes ----------------------------------------------------------------------------------------

async def test_an_initialized_node_only_gets_its_ga_labels_made_equal_to_the_beta_ones() -> None:
    labels = {"failure-domain.beta.kubernetes.io/zone": "zone-b", "topology.kubernetes.io/zone": "zone-a",
              "beta.kubernetes.io/instance-type": "big", "failure-domain.beta.kubernetes.io/region": "r",
              "topology.kubernetes.io/region": "r"}
    cnc, client, cloud, _, _ = controller(node(taints=(), labels=labels), cloud=cloud_with("node-1"))
    await cnc.sync("node-1")
    assert [(p.resource, p.body) for p in client.writes()] == [
        ("nodes", {"metadata": {"labels": {"topology.kubernetes.io/zone": "zone-b",
                                           "node.kubernetes.io/instance-type": "big"}}})]
    assert cloud.calls == []


async def test_an_initialized_node_with_consistent_labels_and_a_vanished_node_need_nothing() -> None:
    cnc, client, cloud, _, _ = controller(node(taints=()), cloud=cloud_with("node-1"))
    await cnc.sync("node-1")
    await cnc.sync("gone")
    assert client.actions == [] and cloud.calls == []


# the periodic address refresh -----------------------------------------------------------------------------

async def test_the_refresh_patches_changed_addresses_skips_tainted_nodes_and_survives_a_failing_node() -> None:
    cloud = cloud_with("node-1", "node-2", "node-3")
    cloud.instances_by_name["node-2"].addresses = [INTERNAL, EXTERNAL]
    nodes = [node("node-1", taints=()), node("node-2", taints=(), addresses=[INTERNAL, EXTERNAL]),
             node("node-3"), node("node-4", taints=())]  # node-4: no instance
    cnc, client, cloud, recorder, _ = controller(*nodes, cloud=cloud)

    await cnc.update_node_status()

    assert [(p.resource, p.name) for p in client.writes()] == [("nodes/status", "node-1")]
    assert sorted(call[1][0] for call in cloud.calls) == ["node-1", "node-2", "node-4"]
    assert recorder.events == [("Warning", "FailedToUpdateNodeAddresses",
                                "failed to get the addresses of node node-4 from the cloud provider: "
                                "instance not found: node-4")]


async def test_a_v1_refresh_asks_only_for_the_addresses() -> None:
    cloud = cloud_with("node-1")
    cloud.disabled = {"instances_v2"}
    cnc, client, cloud, _, _ = controller(node(taints=()), cloud=cloud)
    await cnc.update_node_status()
    assert cloud.calls == [("node_addresses", ("node-1",))]
    assert [p.resource for p in client.writes()] == ["nodes/status"]


async def test_running_refreshes_addresses_at_start_and_every_node_status_update_frequency() -> None:
    cloud = cloud_with("node-1")
    cnc, client, cloud, _, clock = controller(node(taints=(), addresses=[INTERNAL, EXTERNAL]), cloud=cloud,
                                              settings=CloudSettings(node_status_update_frequency=60))
    task = asyncio.create_task(cnc.run(1))
    try:
        await settle()
        assert cloud.calls == [("instance_metadata", ("node-1",))] and client.writes() == []
        cloud.instances_by_name["node-1"].addresses = [{"type": "InternalIP", "address": "10.0.0.77"}]
        clock.advance(59)
        await settle()
        assert len(cloud.calls) == 1
        clock.advance(1)
        await settle()
        assert len(cloud.calls) == 2
        assert client.writes("patch")[0].body["status"]["addresses"][0]["address"] == "10.0.0.77"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)

"""The service (load balancer) controller's sync against the fake cloud and a recording client."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.cloud.interface import CloudProviderError
from minikube_py.ccm.context import CloudControllerContext, CloudSettings
from minikube_py.ccm.controllers.service import (
    LOAD_BALANCER_CLEANUP_FINALIZER,
    NODE_SYNC_KEY,
    ServiceController,
    needs_update,
    stable_node_set,
)
from minikube_py.client import errors, resources
from minikube_py.client.clock import FakeClock
from minikube_py.client.controller import process_next_work_item
from tests.ccm.fakes import RecordingClient, cache, context

KEY = "default/web"
ENSURED = [("Normal", "EnsuringLoadBalancer", "Ensuring load balancer"),
           ("Normal", "EnsuredLoadBalancer", "Ensured load balancer")]
DELETED = [("Normal", "DeletingLoadBalancer", "Deleting load balancer"),
           ("Normal", "DeletedLoadBalancer", "Deleted load balancer")]


# builders --------------------------------------------------------------------------------------------------

def service(name: str = "web", *, type: str = "LoadBalancer", finalizer: bool = False, ingress: str = "",
            lb_class: str | None = None, deleting: bool = False, uid: str = "", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}",
                            "resourceVersion": "7"}
    if finalizer:
        meta["finalizers"] = [LOAD_BALANCER_CLEANUP_FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec = {"type": type, "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080,
                                     "nodePort": 30080}], **spec}
    if lb_class is not None:
        spec["loadBalancerClass"] = lb_class
    status = {"loadBalancer": {"ingress": [{"ip": ingress, "ipMode": "VIP"}]} if ingress else {}}
    return {"metadata": meta, "spec": spec, "status": status}


def node(name: str, *, ready: bool = True, labels: dict[str, str] | None = None, taints: tuple[str, ...] = (),
         provider_id: str = "", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "labels": labels or {}}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {"taints": [{"key": key, "effect": "NoSchedule"} for key in taints]}
    if provider_id:
        spec["providerID"] = provider_id
    return {"metadata": meta, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


class EventLog:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        assert (obj["kind"], obj["apiVersion"], obj["metadata"]["name"]) == ("Service", "v1", "web")
        self.events.append((type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]


@dataclass
class Harness:
    ctx: CloudControllerContext
    controller: ServiceController
    client: RecordingClient
    cloud: FakeCloud
    clock: FakeClock
    events: EventLog

    def put(self, obj: dict[str, Any]) -> None:
        """Add or replace a Service or Node in the informer cache."""
        cache(self.ctx, resources.SERVICES if "namespace" in obj["metadata"] else resources.NODES, obj)

    def writes(self) -> list[tuple[str, str, Any]]:
        return [(a.verb, a.resource, a.body) for a in self.client.writes()]

    def cloud_calls(self) -> list[str]:
        return [method for method, _ in self.cloud.calls]


def harness(*objects: dict[str, Any], settings: CloudSettings | None = None,
            cloud: FakeCloud | None = None) -> Harness:
    ctx, client, cloud, clock = context(settings, cloud)
    events = EventLog()
    ctx.recorder = events  # type: ignore[assignment]
    cache(ctx, resources.SERVICES, *[obj for obj in objects if "namespace" in obj["metadata"]])
    cache(ctx, resources.NODES, *[obj for obj in objects if "namespace" not in obj["metadata"]])
    return Harness(ctx, ServiceController(ctx), client, cloud, clock, events)


FINALIZER_ADDED = ("patch", "services", {"metadata": {"finalizers": [LOAD_BALANCER_CLEANUP_FINALIZER]}})
FINALIZER_REMOVED = ("patch", "services",
                     {"metadata": {"$deleteFromPrimitiveList/finalizers": [LOAD_BALANCER_CLEANUP_FINALIZER]}})


def status_patch(ip: str | None) -> tuple[str, str, Any]:
    return ("patch", "services/status", {"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}] if ip else None}}})


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


# ensuring --------------------------------------------------------------------------------------------------

async def test_a_new_load_balancer_service_gets_the_finalizer_then_a_load_balancer_then_its_ingress() -> None:
    h = harness(service(), node("n1"), node("n2"))
    await h.controller.sync(KEY)
    assert h.writes() == [FINALIZER_ADDED, status_patch("192.0.2.1")]
    assert h.client.writes()[0].options["patch_type"] == "strategic"
    assert h.cloud.calls == [("ensure_load_balancer", ("kubernetes", KEY))]
    assert h.cloud.balancer_nodes == {"auidweb": ["n1", "n2"]}
    assert h.events.events == ENSURED


async def test_the_finalizer_is_on_before_the_cloud_is_asked_even_when_the_cloud_then_fails() -> None:
    h = harness(service(), node("n1"))
    h.cloud.errors["ensure_load_balancer"] = CloudProviderError("boom")
    with pytest.raises(RuntimeError):
        await h.controller.sync(KEY)
    assert h.writes() == [FINALIZER_ADDED]
    assert h.cloud_calls() == ["ensure_load_balancer"]


async def test_a_synced_service_whose_ingress_did_not_change_gets_no_writes() -> None:
    h = harness(service(finalizer=True, ingress="192.0.2.1"), node("n1"))
    await h.controller.sync(KEY)
    assert h.writes() == []
    assert h.events.events == ENSURED


async def test_a_changed_ingress_is_patched_into_the_status() -> None:
    h = harness(service(finalizer=True, ingress="198.51.100.9"), node("n1"))
    await h.controller.sync(KEY)
    assert h.writes() == [status_patch("192.0.2.1")]


async def test_a_cluster_without_backend_nodes_warns_but_still_gets_a_load_balancer() -> None:
    h = harness(service(), node("n1", labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""}))
    await h.controller.sync(KEY)
    assert h.events.reasons() == ["EnsuringLoadBalancer", "UnAvailableLoadBalancer", "EnsuredLoadBalancer"]
    assert h.events.events[1] == ("Warning", "UnAvailableLoadBalancer", "There are no available nodes for LoadBalancer")
    assert h.cloud.balancer_nodes == {"auidweb": []}


async def test_a_service_missing_from_the_cache_that_we_never_synced_is_ignored() -> None:
    h = harness()
    await h.controller.sync(KEY)
    assert (h.writes(), h.cloud.calls, h.events.events) == ([], [], [])


# which nodes are backends (kube 1.32: readiness is not asked) ---------------------------------------------

@pytest.mark.parametrize(("case", "candidate", "backend"), [
    ("a ready node is a backend", node("n"), True),
    ("a not-ready node is still a backend", node("n", ready=False), True),
    ("a node without conditions is a backend", {"metadata": {"name": "n"}}, True),
    ("a node labelled for exclusion is not", node("n", labels={
        "node.kubernetes.io/exclude-from-external-load-balancers": "false"}), False),
    ("a node the autoscaler is removing is not", node("n", taints=("ToBeDeletedByClusterAutoscaler",)), False),
    ("a node with another taint is", node("n", taints=("node.kubernetes.io/unschedulable",)), True),
    ("a node being deleted is not", node("n", deleting=True), False),
])
def test_backend_node_predicates(case: str, candidate: dict[str, Any], backend: bool) -> None:
    assert (stable_node_set([candidate]) == [candidate]) is backend, case


# node changes ----------------------------------------------------------------------------------------------

async def test_a_new_node_updates_every_synced_load_balancer_once() -> None:
    h = harness(service(), node("n1"))
    await h.controller.sync(KEY)
    h.events.events.clear()
    h.put(node("n2"))
    assert await h.controller.sync_nodes() == set()
    assert h.cloud_calls() == ["ensure_load_balancer", "update_load_balancer"]
    assert h.cloud.balancer_nodes == {"auidweb": ["n1", "n2"]}
    assert h.events.events == [("Normal", "UpdatedLoadBalancer", "Updated load balancer with new hosts")]
    await h.controller.sync_nodes()
    assert h.cloud_calls() == ["ensure_load_balancer", "update_load_balancer"], "nothing changed: no call"


async def test_a_changed_provider_id_is_a_change_but_readiness_is_not() -> None:
    h = harness(service(), node("n1"))
    await h.controller.sync(KEY)
    h.put(node("n1", ready=False))
    await h.controller.sync_nodes()
    assert h.cloud.calls_to("update_load_balancer") == []
    h.put(node("n1", provider_id="fake://n1"))
    await h.controller.sync_nodes()
    assert len(h.cloud.calls_to("update_load_balancer")) == 1


async def test_only_node_changes_that_can_change_the_backends_queue_a_node_sync() -> None:
    h = harness()
    ctrl = h.controller
    ctrl._node_updated(node("n1"), node("n1", ready=False))
    ctrl._node_updated(node("n1"), node("n1", taints=("ToBeDeletedByClusterAutoscaler",)))
    assert len(ctrl.node_queue) == 0
    ctrl._node_updated(node("n1"), node("n1", labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""}))
    ctrl._node_updated(node("n1"), node("n1", provider_id="fake://n1"))
    ctrl._enqueue_node_sync(node("n3"), True)
    assert len(ctrl.node_queue) == 1, "one pass covers every change"


async def test_a_node_sync_pass_schedules_the_next_one_after_node_sync_period() -> None:
    h = harness(settings=CloudSettings(node_sync_period=100.0))
    await h.controller.sync_nodes()
    h.clock.advance(99)
    await settle()
    assert len(h.controller.node_queue) == 0
    h.clock.advance(1)
    await settle()
    assert await h.controller.node_queue.get() == (NODE_SYNC_KEY, False)
    h.controller.node_queue.shut_down()


async def test_a_failed_update_is_a_warning_and_a_full_sync_of_that_service() -> None:
    h = harness(service(), node("n1"))
    await h.controller.sync(KEY)
    h.events.events.clear()
    h.cloud.errors["update_load_balancer"] = CloudProviderError("the cloud is down")
    h.put(node("n2"))
    assert await h.controller.sync_nodes() == {KEY}
    assert h.events.events == [("Warning", "UpdateLoadBalancerFailed",
                                "Error updating load balancer with new hosts [n1 n2] [node names limited, total "
                                "number of nodes: 2], error: the cloud is down")]
    assert await h.controller.queue.get() == (KEY, False)
    h.controller.queue.shut_down()


async def test_a_failed_update_of_a_load_balancer_that_is_gone_is_no_failure() -> None:
    h = harness(service(), node("n1"))
    await h.controller.sync(KEY)
    h.events.events.clear()
    h.cloud.balancers.clear()
    h.cloud.errors["update_load_balancer"] = CloudProviderError("no such load balancer")
    h.put(node("n2"))
    assert await h.controller.sync_nodes() == set()
    assert h.events.events == []


# cleaning up -----------------------------------------------------------------------------------------------

async def test_a_service_changed_to_cluster_ip_releases_its_load_balancer_and_finalizer() -> None:
    h = harness(service(), node("n1"))
    await h.controller.sync(KEY)
    h.client.actions.clear()
    h.events.events.clear()
    h.put(service(type="ClusterIP", finalizer=True, ingress="192.0.2.1"))
    await h.controller.sync(KEY)
    assert h.cloud_calls()[1:] == ["get_load_balancer", "ensure_load_balancer_deleted"]
    assert h.cloud.balancers == {}
    assert h.writes() == [FINALIZER_REMOVED, status_patch(None)]
    assert h.events.events == DELETED
    assert h.controller.cache == {}
    await h.controller.sync_nodes()
    assert h.cloud.calls_to("update_load_balancer") == [], "a released service is no longer node-synced"


async def test_a_deleted_service_is_cleaned_up_before_its_finalizer_goes() -> None:
    h = harness(service(finalizer=True, ingress="192.0.2.1", deleting=True), node("n1"))
    h.cloud.balancers["auidweb"] = {"ingress": [{"ip": "192.0.2.1", "ipMode": "VIP"}]}
    h.client.failures[("patch", "services/status")] = errors.new_not_found("services", "web")
    await h.controller.sync(KEY)  # the status patch finds the Service gone: that is fine
    assert h.cloud_calls() == ["get_load_balancer", "ensure_load_balancer_deleted"]
    assert h.writes() == [FINALIZER_REMOVED, status_patch(None)]
    assert h.events.events == DELETED


async def test_a_service_without_a_load_balancer_left_only_loses_its_finalizer() -> None:
    h = harness(service(type="NodePort", finalizer=True))
    await h.controller.sync(KEY)
    assert h.cloud_calls() == ["get_load_balancer"]
    assert h.writes() == [FINALIZER_REMOVED]
    assert h.events.events == [DELETED[1]]


async def test_a_service_deleted_without_the_finalizer_still_loses_its_load_balancer() -> None:
    h = harness(service(), node("n1"))
    await h.controller.sync(KEY)
    h.controller.services.indexer.delete(KEY)
    h.controller._service_deleted(service())
    assert await h.controller.queue.get() == (KEY, False)
    h.events.events.clear()
    await h.controller.sync(KEY)
    assert h.cloud.calls[-1] == ("ensure_load_balancer_deleted", ("kubernetes", KEY))
    assert h.events.events == DELETED
    assert h.controller.cache == {}


async def test_a_service_recreated_with_a_new_uid_first_loses_the_old_load_balancer() -> None:
    h = harness(service(), node("n1"))
    await h.controller.sync(KEY)
    h.put(service(uid="uid-new"))
    await h.controller.sync(KEY)
    assert h.cloud_calls() == ["ensure_load_balancer", "ensure_load_balancer_deleted", "ensure_load_balancer"]
    assert sorted(h.cloud.balancers) == ["auidnew"]


# which services --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "svc", "queued"), [
    ("a LoadBalancer service is ours", service(), True),
    ("one with a loadBalancerClass is someone else's", service(lb_class="example.com/metallb"), False),
    ("a ClusterIP service is not ours", service(type="ClusterIP"), False),
    ("a ClusterIP service still holding our finalizer needs cleanup", service(type="ClusterIP", finalizer=True), True),
    ("a service being deleted with our finalizer needs cleanup", service(deleting=True, finalizer=True), True),
])
async def test_which_services_are_queued_when_seen(case: str, svc: dict[str, Any], queued: bool) -> None:
    h = harness()
    h.controller._service_added(svc)
    assert (len(h.controller.queue) == 1) is queued, case


@pytest.mark.parametrize(("case", "old", "new", "update"), [
    ("nothing changed", service(), service(), False),
    ("only the status changed", service(), service(ingress="192.0.2.1"), False),
    ("only our finalizer was added", service(), service(finalizer=True), False),
    ("the type changed to ClusterIP", service(), service(type="ClusterIP"), True),
    ("a port changed", service(), service(ports=[{"name": "http", "protocol": "TCP", "port": 81}]), True),
    ("the loadBalancerIP changed", service(), service(loadBalancerIP="192.0.2.50"), True),
    ("the traffic policy changed", service(), service(externalTrafficPolicy="Local"), True),
    ("the source ranges changed", service(), service(loadBalancerSourceRanges=["10.0.0.0/8"]), True),
    ("a loadBalancerClass service changed", service(lb_class="x"), service(lb_class="x", loadBalancerIP="1.2.3.4"),
     False),
    ("two ClusterIP services differ", service(type="ClusterIP"), service(type="ClusterIP", clusterIP="10.0.0.9"),
     False),
])
def test_which_changes_need_a_load_balancer_update(case: str, old: dict[str, Any], new: dict[str, Any],
                                                   update: bool) -> None:
    assert needs_update(old, new) is update, case


# failures --------------------------------------------------------------------------------------------------

async def run_once(h: Harness) -> None:
    """One worker turn, as `run_workers` takes it: sync, then forget or requeue with backoff."""
    await process_next_work_item(h.controller.queue, h.controller.sync, name="service", max_retries=None,
                                 log=logging.getLogger("test"))


async def arrives_after(h: Harness, seconds: float) -> bool:
    """Whether the requeued key is back in the queue after exactly `seconds` (and not before)."""
    h.clock.advance(seconds - 0.01)
    await settle()
    early = len(h.controller.queue)
    h.clock.advance(0.01)
    await settle()
    return early == 0 and len(h.controller.queue) == 1


async def test_a_failing_cloud_is_reported_and_retried_with_backoff_from_5_seconds() -> None:
    h = harness(service(), node("n1"))
    h.cloud.errors["ensure_load_balancer"] = CloudProviderError("address 127.0.0.5:80 already in use")
    h.controller.queue.add(KEY)
    await run_once(h)
    assert h.events.events[-1] == ("Warning", "SyncLoadBalancerFailed", "Error syncing load balancer: failed to "
                                   "ensure load balancer: address 127.0.0.5:80 already in use")
    assert await arrives_after(h, 5)
    await run_once(h)
    assert await arrives_after(h, 10)
    del h.cloud.errors["ensure_load_balancer"]
    await run_once(h)
    assert h.events.reasons()[-1] == "EnsuredLoadBalancer"
    assert h.controller.queue.num_requeues(KEY) == 0, "success resets the backoff"
    h.controller.queue.shut_down()


async def test_the_backoff_stops_growing_at_300_seconds() -> None:
    h = harness()
    delays = [h.controller.queue.rate_limiter.when(KEY) for _ in range(8)]
    assert delays == [5, 10, 20, 40, 80, 160, 300, 300]


async def test_a_hung_cloud_times_out_and_is_reported() -> None:
    h = harness(service(), node("n1"), settings=CloudSettings(cloud_call_timeout=0.05))
    h.cloud.hang.add("ensure_load_balancer")
    h.controller.queue.add(KEY)
    await run_once(h)
    type, reason, message = h.events.events[-1]
    assert (type, reason) == ("Warning", "SyncLoadBalancerFailed")
    assert "ensure_load_balancer: the cloud provider did not answer within 0.05s" in message
    assert await arrives_after(h, 5)
    h.controller.queue.shut_down()


async def test_a_hung_cleanup_keeps_the_finalizer() -> None:
    h = harness(service(type="ClusterIP", finalizer=True), settings=CloudSettings(cloud_call_timeout=0.05))
    h.cloud.balancers["auidweb"] = {"ingress": [{"ip": "192.0.2.1", "ipMode": "VIP"}]}
    h.cloud.hang.add("ensure_load_balancer_deleted")
    with pytest.raises(RuntimeError, match="failed to delete load balancer"):
        await h.controller.sync(KEY)
    assert h.writes() == []
    assert h.events.reasons() == ["DeletingLoadBalancer", "SyncLoadBalancerFailed"]


async def test_a_refused_finalizer_patch_is_reported_and_the_cloud_not_asked() -> None:
    h = harness(service(), node("n1"))
    h.client.failures[("patch", "services")] = errors.Conflict(
        {"code": 409, "reason": "Conflict", "message": "the object has been modified"})
    with pytest.raises(RuntimeError):
        await h.controller.sync(KEY)
    assert h.cloud.calls == []
    assert h.events.events[-1] == ("Warning", "SyncLoadBalancerFailed", "Error syncing load balancer: failed to add "
                                   "load balancer cleanup finalizer: the object has been modified")


async def test_a_refused_status_patch_is_retried() -> None:
    h = harness(service(), node("n1"))
    h.client.failures[("patch", "services/status")] = errors.ServerTimeout(
        {"code": 504, "reason": "Timeout", "message": "request timed out"})
    h.controller.queue.add(KEY)
    await run_once(h)
    assert h.events.events[-1] == ("Warning", "SyncLoadBalancerFailed", "Error syncing load balancer: failed to "
                                   "update load balancer status: request timed out")
    assert h.controller.queue.num_requeues(KEY) == 1
    h.controller.queue.shut_down()


# a cloud without load balancers ----------------------------------------------------------------------------

async def test_a_cloud_without_load_balancers_leaves_services_alone(caplog: pytest.LogCaptureFixture) -> None:
    cloud = FakeCloud()
    cloud.disabled.add("load_balancer")
    h = harness(service(), node("n1"), cloud=cloud)
    with caplog.at_level(logging.INFO, logger="minikube_py.ccm.controllers.service"):
        await asyncio.wait_for(h.controller.run(1), 1)
    assert "does not support external load balancers" in caplog.text
    assert h.controller.services._registrations == [] and h.controller.nodes._registrations == []
    assert h.cloud.calls == []

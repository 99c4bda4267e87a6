"""The Endpoints controller's sync against hand-filled caches and a recording client (no sleeps)."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.kcm.controllers import endpointutil as util
from minikube_py.kcm.controllers.endpoints import (
    MAX_CAPACITY,
    OVER_CAPACITY_ANNOTATION,
    EndpointsController,
    StaleCache,
    repack_subsets,
)
from tests.kcm.fakes import RecordingClient, cache, context

NS = "default"
CREATED = "2026-01-01T00:00:00Z"


class Events:
    """A recorder that keeps (involved kind, type, reason, message)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.seen.append((obj["kind"], type, reason, message))


def service(selector: dict[str, str] | None = None, ports: list[dict[str, Any]] | None = None,
            **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": NS, "uid": "svc-uid", "creationTimestamp": CREATED,
                         "labels": {"team": "a"}, "resourceVersion": "1"},
            "spec": {"selector": {"app": "web"} if selector is None else selector, "clusterIP": "10.96.0.10",
                     "ipFamilies": ["IPv4"],
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]
                     if ports is None else ports, **spec}}


def pod(name: str, ip: str | None = "10.0.0.1", ready: bool = True, node: str = "n1", phase: str = "Running",
        deleting: bool = False, container_ports: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
        rv: str = "1", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": rv,
                            "labels": {"app": "web"} if labels is None else labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    status: dict[str, Any] = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}
    if ip:
        status["podIP"], status["podIPs"] = ip, [{"ip": ip}]
    container = {"name": "c", "image": "nginx", "ports": container_ports or []}
    return {"metadata": meta, "spec": {"nodeName": node, "containers": [container], **spec}, "status": status}


def address(name: str, ip: str, node: str = "n1") -> dict[str, Any]:
    return {"ip": ip, "nodeName": node,
            "targetRef": {"kind": "Pod", "namespace": NS, "name": name, "uid": f"uid-{name}"}}


def controller(svc: dict[str, Any] | None, *pods: dict[str, Any],
               endpoints: dict[str, Any] | None = None) -> tuple[EndpointsController, RecordingClient, Events]:
    ctx, client, _ = context()
    events = Events()
    ctx.recorder = events  # type: ignore[assignment]
    cache(ctx, resources.SERVICES, *([svc] if svc else []))
    cache(ctx, resources.PODS, *pods)
    cache(ctx, resources.ENDPOINTS, *([endpoints] if endpoints else []))
    return EndpointsController(ctx), client, events


async def written(svc: dict[str, Any], *pods: dict[str, Any]) -> dict[str, Any]:
    epc, client, _ = controller(svc, *pods)
    await epc.sync("default/web")
    [create] = client.writes("create")
    return create.body


async def test_ready_and_not_ready_pods_are_published_with_their_pod_and_node() -> None:
    body = await written(service(), pod("a", "10.0.0.2"), pod("b", "10.0.0.1"), pod("c", "10.0.0.3", ready=False))
    assert body["metadata"]["name"] == "web" and body["metadata"]["labels"] == {"team": "a"}
    assert body["metadata"]["annotations"] == {util.TRIGGER_TIME_ANNOTATION: CREATED}
    assert body["subsets"] == [{"addresses": [address("b", "10.0.0.1"), address("a", "10.0.0.2")],
                                "notReadyAddresses": [address("c", "10.0.0.3")],
                                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]


async def test_terminating_finished_and_ip_less_pods_are_left_out() -> None:
    body = await written(service(), pod("ok"), pod("going", "10.0.0.2", deleting=True), pod("no-ip", ip=None),
                         pod("done", "10.0.0.3", phase="Succeeded"))
    assert [a["targetRef"]["name"] for s in body["subsets"] for a in s.get("addresses", [])] == ["ok"]
    assert all("notReadyAddresses" not in s for s in body["subsets"])


async def test_publish_not_ready_addresses_puts_every_pod_in_addresses_terminating_ones_included() -> None:
    body = await written(service(publishNotReadyAddresses=True), pod("a", ready=False),
                         pod("b", "10.0.0.2", deleting=True))
    assert [a["ip"] for a in body["subsets"][0]["addresses"]] == ["10.0.0.1", "10.0.0.2"]
    assert "notReadyAddresses" not in body["subsets"][0]


async def test_a_named_target_port_is_resolved_per_pod_and_pods_without_it_get_no_address() -> None:
    svc = service(ports=[{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "web"}])
    body = await written(svc, pod("old", "10.0.0.1", container_ports=[{"name": "web", "containerPort": 8080}]),
                         pod("new", "10.0.0.2", container_ports=[{"name": "web", "containerPort": 9090}]),
                         pod("other", "10.0.0.3", container_ports=[{"name": "metrics", "containerPort": 9100}]))
    ports = sorted((s["ports"][0]["port"], [a["targetRef"]["name"] for a in s["addresses"]]) for s in body["subsets"])
    assert ports == [(8080, ["old"]), (9090, ["new"])]


async def test_a_target_port_name_no_pod_defines_gives_empty_endpoints_without_error() -> None:
    svc = service(ports=[{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "nope"}])
    body = await written(svc, pod("a"))
    assert "subsets" not in body


async def test_hostname_is_published_for_pods_whose_subdomain_is_the_service_and_headless_is_labelled() -> None:
    svc = service(clusterIP="None")
    body = await written(svc, pod("a", hostname="a", subdomain="web"), pod("b", "10.0.0.2", hostname="b"))
    by_name = {a["targetRef"]["name"]: a for a in body["subsets"][0]["addresses"]}
    assert by_name["a"]["hostname"] == "a" and "hostname" not in by_name["b"]
    assert body["metadata"]["labels"] == {"team": "a", util.HEADLESS_LABEL: ""}


async def test_a_headless_service_without_ports_gets_port_less_addresses() -> None:
    body = await written(service(ports=[], clusterIP="None"), pod("a"))
    assert body["subsets"] == [{"addresses": [address("a", "10.0.0.1")]}]


@pytest.mark.parametrize("svc", [service(selector={}), service(type="ExternalName")], ids=["no selector", "ExternalName"])
async def test_services_without_a_selector_or_of_type_external_name_are_left_alone(svc: dict[str, Any]) -> None:
    epc, client, _ = controller(svc, pod("a"))
    await epc.sync("default/web")
    assert client.writes() == []


async def test_the_endpoints_of_a_deleted_service_are_deleted_and_already_gone_is_fine() -> None:
    epc, client, _ = controller(None)
    client.failures[("delete", "endpoints")] = errors.new_not_found("endpoints", "web")
    await epc.sync("default/web")
    assert [(a.verb, a.name) for a in client.writes()] == [("delete", "web")]


async def test_nothing_is_written_when_the_endpoints_are_current_even_if_pods_changed_resource_version() -> None:
    current_address = address("a", "10.0.0.1")
    current_address["targetRef"]["resourceVersion"] = "41"
    current = {"metadata": {"name": "web", "namespace": NS, "resourceVersion": "7", "labels": {"team": "a"}},
               "subsets": [{"addresses": [current_address],
                            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}
    epc, client, _ = controller(service(), pod("a", rv="42"), endpoints=current)
    await epc.sync("default/web")
    assert client.writes() == []


async def test_changed_endpoints_are_updated_in_place_and_a_stale_cache_is_not_written_twice() -> None:
    current = {"metadata": {"name": "web", "namespace": NS, "resourceVersion": "7", "labels": {"team": "a"}},
               "subsets": []}
    epc, client, _ = controller(service(), pod("a"), endpoints=current)
    await epc.sync("default/web")
    [update] = client.writes("update")
    assert update.body["metadata"]["resourceVersion"] == "7" and update.body["subsets"][0]["addresses"]
    epc.client.update = _returning_version("8")  # type: ignore[method-assign]
    await epc.sync("default/web")  # the fake's update answered the same version: nothing to fear
    with pytest.raises(StaleCache):
        await epc.sync("default/web")  # the cache still shows version 7, which was replaced by 8


def _returning_version(version: str) -> Any:
    async def update(resource: Any, body: dict[str, Any], namespace: str | None = None, **_: Any) -> dict[str, Any]:
        return {**body, "metadata": {**body["metadata"], "resourceVersion": version}}
    return update


async def test_over_capacity_endpoints_are_truncated_ready_addresses_first_and_annotated() -> None:
    pods = [pod(f"p{i}", f"10.1.{i // 250}.{i % 250}", ready=i % 2 == 0) for i in range(1200)]
    body = await written(service(), *pods)
    [subset] = body["subsets"]
    assert len(subset["addresses"]) == 600 and len(subset["notReadyAddresses"]) == MAX_CAPACITY - 600
    assert body["metadata"]["annotations"][OVER_CAPACITY_ANNOTATION] == "truncated"


async def test_a_write_conflict_records_a_warning_and_is_retried_by_the_worker() -> None:
    current = {"metadata": {"name": "web", "namespace": NS, "resourceVersion": "7"}}
    epc, client, events = controller(service(), pod("a"), endpoints=current)
    client.failures[("update", "endpoints")] = errors.Conflict({"message": "the object has been modified"})
    with pytest.raises(errors.Conflict):
        await epc.sync("default/web")
    assert events.seen == [("Endpoints", "Warning", "FailedToUpdateEndpoint",
                            "Failed to update endpoint default/web: the object has been modified")]


async def test_endpoints_someone_else_created_first_make_the_create_fail_and_retry() -> None:
    epc, client, events = controller(service(), pod("a"))
    client.failures[("create", "endpoints")] = errors.AlreadyExists({"message": 'endpoints "web" already exists'})
    with pytest.raises(errors.AlreadyExists):
        await epc.sync("default/web")
    assert events.seen[0][2] == "FailedToCreateEndpoint"


async def test_a_namespace_being_terminated_drops_the_create() -> None:
    epc, client, events = controller(service(), pod("a"))
    client.failures[("create", "endpoints")] = errors.Forbidden(
        {"message": "forbidden", "details": {"causes": [{"reason": "NamespaceTerminating"}]}})
    await epc.sync("default/web")
    assert events.seen == []


async def queued(queue: Any) -> list[str]:
    keys = []
    while len(queue):
        key, _ = await queue.get()
        queue.done(key)
        keys.append(key)
    return sorted(keys)


async def test_pod_changes_enqueue_the_services_selecting_the_old_and_the_new_labels() -> None:
    other = {**service(selector={"app": "api"}), "metadata": {**service()["metadata"], "name": "api"}}
    epc, _, _ = controller(service(), endpoints=None)
    epc.services.indexer.add(other)
    epc.pod_handler.on_update(pod("a", rv="1"), pod("a", rv="2", labels={"app": "api"}))
    assert await queued(epc.queue) == ["default/api", "default/web"]


def test_a_resync_or_an_irrelevant_pod_change_enqueues_nothing() -> None:
    epc, _, _ = controller(service())
    epc.pod_handler.on_update(pod("a", rv="1"), pod("a", rv="1", ready=False))
    annotated = pod("a", rv="2")
    annotated["metadata"]["annotations"] = {"note": "changed"}
    epc.pod_handler.on_update(pod("a", rv="1"), annotated)
    assert len(epc.queue) == 0


async def test_leftover_endpoints_are_checked_at_start_except_leader_election_records() -> None:
    lock = {"metadata": {"name": "lock", "namespace": NS,
                         "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}}
    epc, _, _ = controller(None, endpoints={"metadata": {"name": "gone", "namespace": NS}})
    epc.endpoints.indexer.add(lock)
    epc.check_leftover_endpoints()
    assert await queued(epc.queue) == ["default/gone"]


def test_repacking_groups_addresses_by_the_ports_they_serve_and_not_ready_wins() -> None:
    a, b = address("a", "10.0.0.1"), address("b", "10.0.0.2")
    p80, p81 = {"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}
    subsets = repack_subsets([{"addresses": [a], "ports": [p80]}, {"addresses": [a], "ports": [p81]},
                              {"addresses": [b], "ports": [p80]}, {"notReadyAddresses": [b], "ports": [p80]}])
    assert sorted(subsets, key=lambda s: len(s["ports"])) == [
        {"addresses": [a], "notReadyAddresses": [b], "ports": [p80]}, {"addresses": [a], "ports": [p81]}]
    assert repack_subsets(list(reversed(subsets))) == subsets  # canonical whatever the input order


def test_the_go_dump_of_a_port_is_go_spews() -> None:
    assert util.go_dump({"name": "http", "port": 80, "protocol": "TCP"}, util.ENDPOINT_PORT) == \
        "(v1.EndpointPort){Name:(string)http Port:(int32)80 Protocol:(v1.Protocol)TCP AppProtocol:(*string)<nil>}"
    assert util.go_dump({"name": "", "port": 80, "protocol": "UDP", "appProtocol": "dns"}, util.SLICE_PORT) == \
        "(v1.EndpointPort){Name:(*string) Protocol:(*v1.Protocol)UDP Port:(*int32)80 AppProtocol:(*string)dns}"


def test_the_trigger_time_is_the_earliest_unpublished_change() -> None:
    tracker = util.TriggerTimeTracker()
    svc, a, b = service(), pod("a"), pod("b", "10.0.0.2")
    assert tracker.compute(svc, [a, b]) == CREATED  # first sight: the Service's creation
    assert tracker.compute(svc, [a, b]) is None  # nothing new since
    later = pod("b", "10.0.0.2", ready=False)
    later["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:05:00Z"
    assert tracker.compute(svc, [a, later]) == "2026-01-01T00:05:00Z"

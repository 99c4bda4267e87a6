"""Node IPAM: the CIDR set, the controller's sync against fakes, and one run against a real apiserver."""

from __future__ import annotations

import ipaddress
from typing import Any

import httpx
import pytest

from minikube_py.client import errors, resources
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.cidrset import CIDRSet, CIDRSetError
from minikube_py.kcm.controllers.nodeipam import NodeIpamController, cluster_cidr_sets
from tests.harness import ControlPlane
from tests.kcm.fakes import cache, context
from tests.kcm.running import running, wait_for

net = ipaddress.ip_network


class EventLog:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((obj["name"], type, reason, message))


def node(name: str, *cidrs: str) -> dict[str, Any]:
    spec = {"podCIDR": cidrs[0], "podCIDRs": list(cidrs)} if cidrs else {}
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec}


def controller(*nodes: dict[str, Any], cluster_cidr: str = "10.244.0.0/16",
               mask: int = 24) -> tuple[NodeIpamController, Any, EventLog]:
    ctx, client, _ = context(ControllerSettings(allocate_node_cidrs=True, cluster_cidr=cluster_cidr,
                                                node_cidr_mask_size=mask))
    events = EventLog()
    ctx.recorder = events  # type: ignore[assignment]
    cache(ctx, resources.NODES, *nodes)
    ipam = NodeIpamController(ctx)
    ipam.occupy_existing()
    return ipam, client, events


def assigned(client: Any) -> list[tuple[str, Any]]:
    return [(a.name, a.body["spec"]["podCIDRs"]) for a in client.writes("patch")]


# the CIDR set -----------------------------------------------------------------------------------------------

def test_cidrs_are_handed_out_in_order_and_a_released_one_only_after_wrapping_around() -> None:
    cidrs = CIDRSet(net("10.0.0.0/22"), 24)
    assert [str(cidrs.allocate_next()) for _ in range(3)] == ["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"]
    cidrs.release(net("10.0.0.0/24"))
    assert str(cidrs.allocate_next()) == "10.0.3.0/24"
    assert str(cidrs.allocate_next()) == "10.0.0.0/24"
    with pytest.raises(CIDRSetError, match="no remaining CIDRs left to allocate"):
        cidrs.allocate_next()


def test_occupying_marks_every_node_cidr_a_network_overlaps() -> None:
    cidrs = CIDRSet(net("10.0.0.0/16"), 24)
    cidrs.occupy(net("10.0.4.0/23"))  # two node CIDRs
    cidrs.occupy(net("10.0.9.128/25"))  # part of one
    cidrs.occupy(net("10.0.0.0/8"))  # a range around the whole cluster CIDR (a service range): everything
    assert len(cidrs) == 256
    cidrs.release(net("10.0.0.0/16"))
    assert len(cidrs) == 0


@pytest.mark.parametrize(("cluster", "mask", "problem"), [
    ("10.0.0.0/16", 8, "smaller than the cluster CIDR"),
    ("10.0.0.0/8", 30, "the node CIDR size is too big"),
    ("10.0.0.0/16", 33, "too long"),
])
def test_a_node_mask_that_does_not_fit_is_refused(cluster: str, mask: int, problem: str) -> None:
    with pytest.raises(CIDRSetError, match=problem):
        CIDRSet(net(cluster), mask)


def test_a_cidr_outside_the_cluster_cidr_cannot_be_occupied() -> None:
    with pytest.raises(CIDRSetError, match="is out the range of cluster cidr"):
        CIDRSet(net("10.244.0.0/16"), 24).occupy(net("192.168.1.0/24"))


@pytest.mark.parametrize(("cluster_cidr", "problem"), [
    ("", "--cluster-cidr must be set"),
    ("10.244.0.0/33", "--cluster-cidr"),
    ("10.0.0.0/16,10.1.0.0/16", "dual-stack"),
    ("10.0.0.0/16,fd00::/48,10.1.0.0/16", "more than max allowed of 2"),
])
def test_unusable_cluster_cidrs_are_refused_at_start(cluster_cidr: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        cluster_cidr_sets(ControllerSettings(allocate_node_cidrs=True, cluster_cidr=cluster_cidr))


# the controller -----------------------------------------------------------------------------------------------

async def test_a_node_without_a_pod_cidr_gets_the_next_free_one() -> None:
    ipam, client, _ = controller(node("old", "10.244.0.0/24"), node("new"))
    await ipam.sync("old")
    await ipam.sync("new")
    [patch] = client.writes("patch")
    assert (patch.name, patch.options["patch_type"]) == ("new", "strategic")
    assert patch.body == {"spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]}}


async def test_a_dual_stack_cluster_gives_one_cidr_of_each_family() -> None:
    ipam, client, _ = controller(node("n1"), cluster_cidr="10.244.0.0/16,fd00:10::/56")
    await ipam.sync("n1")
    assert assigned(client) == [("n1", ["10.244.0.0/24", "fd00:10::/64"])]


async def test_a_deleted_nodes_cidr_is_free_again() -> None:
    ipam, client, _ = controller(node("a", "10.0.0.0/25"), node("b", "10.0.0.128/25"), node("c"),
                                 cluster_cidr="10.0.0.0/24", mask=25)
    ipam._node_deleted(node("a", "10.0.0.0/25"))
    await ipam.sync("c")
    assert assigned(client) == [("c", ["10.0.0.0/25"])]


async def test_an_exhausted_range_is_reported_on_the_node_and_retried_with_backoff() -> None:
    ipam, client, events = controller(node("a", "10.0.0.0/25"), node("b", "10.0.0.128/25"), node("c"),
                                      cluster_cidr="10.0.0.0/24", mask=25)
    with pytest.raises(CIDRSetError):
        await ipam.sync("c")  # the worker requeues the key rate-limited
    assert client.writes() == []
    assert events.events == [("c", "Normal", "CIDRNotAvailable", "Node c status is now: CIDRNotAvailable")]


async def test_a_pod_cidr_outside_the_cluster_cidr_is_reported_not_retried() -> None:
    ipam, client, events = controller(node("odd", "192.168.7.0/24"), node("garbage", "not-a-cidr"))
    await ipam.sync("odd")
    await ipam.sync("garbage")
    assert client.writes() == []
    assert [(name, type, reason) for name, type, reason, _ in events.events] == [
        ("odd", "Warning", "InvalidPodCIDR"), ("garbage", "Warning", "InvalidPodCIDR")]
    assert "192.168.7.0/24 is out the range of cluster cidr 10.244.0.0/16" in events.events[0][3]


async def test_cidrs_reserved_for_a_node_that_got_some_meanwhile_are_given_back() -> None:
    ipam, client, _ = controller(node("n1", "10.244.5.0/24"))
    reserved = [ipam.cidr_sets[0].allocate_next()]
    await ipam.update_cidrs_allocation("n1", reserved)
    assert client.writes() == []
    assert len(ipam.cidr_sets[0]) == 1  # only the node's own


async def test_a_failed_assignment_is_reported_released_and_retried() -> None:
    ipam, client, events = controller(node("n1"))
    client.failures[("patch", "nodes")] = errors.Forbidden({"message": "forbidden"})
    with pytest.raises(errors.Forbidden):
        await ipam.sync("n1")
    assert len(client.writes("patch")) == 3
    assert events.events == [("n1", "Normal", "CIDRAssignmentFailed", "Node n1 status is now: CIDRAssignmentFailed")]
    assert len(ipam.cidr_sets[0]) == 0


async def test_updates_of_nodes_that_have_a_cidr_are_not_queued() -> None:
    ipam, _, _ = controller()
    ipam._node_updated(node("n1", "10.244.0.0/24"), node("n1", "10.244.0.0/24"))
    assert len(ipam.queue) == 0
    ipam._node_updated(node("n2"), node("n2"))
    assert len(ipam.queue) == 1


async def test_off_unless_allocate_node_cidrs() -> None:
    ctx, _, _ = context()
    ipam = NodeIpamController(ctx)
    await ipam.run(1)  # returns at once
    assert ipam.cidr_sets == []


# against a real apiserver ---------------------------------------------------------------------------------

async def test_new_nodes_get_pod_cidrs_from_the_apiserver_view(control_plane: ControlPlane, api: httpx.Client,
                                                               namespace: str) -> None:
    suffix = namespace[2:]
    first, second = f"ipam-a-{suffix}", f"ipam-b-{suffix}"
    assert api.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": first},
                                           "spec": {"podCIDR": "10.250.0.0/24"}}).status_code == 201
    assert api.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                           "metadata": {"name": second}}).status_code == 201
    settings = ControllerSettings(allocate_node_cidrs=True, cluster_cidr="10.250.0.0/16")
    try:
        async with running(control_plane, NodeIpamController, settings=settings):
            spec = await wait_for(lambda: api.get(f"/api/v1/nodes/{second}").json().get("spec", {}).get("podCIDRs"), 15,
                                  "a pod CIDR for the new node")
        assert spec != ["10.250.0.0/24"]  # the one the first node holds is never handed out again
        assert api.get(f"/api/v1/nodes/{second}").json()["spec"]["podCIDR"] == spec[0]
        assert ipaddress.ip_network(spec[0]).subnet_of(ipaddress.ip_network("10.250.0.0/16"))
    finally:
        for name in (first, second):
            api.delete(f"/api/v1/nodes/{name}")

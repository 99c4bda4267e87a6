"""The `local` cloud provider over a temporary state file: launching VMs, InstancesV2 and Zones, routes, the
provider object and its factory's errors. Nothing here starts a process or a listener."""

from __future__ import annotations

import re

import pytest

from minikube_py.ccm.cloud import registry
from minikube_py.ccm.cloud.interface import (
    CloudProviderError,
    InstanceMetadata,
    InstanceNotFound,
    InvalidCloudConfig,
    Route,
    Zone,
)
from minikube_py.ccm.cloud.local.config import LocalCloudConfig, render
from minikube_py.ccm.cloud.local.instances import LocalInstances, launch_instances
from minikube_py.ccm.cloud.local.loadbalancer import LocalLoadBalancers
from minikube_py.ccm.cloud.local.provider import LocalCloud
from minikube_py.ccm.cloud.local.routes import LocalRoutes
from minikube_py.ccm.cloud.local.state import CloudStateStore


@pytest.fixture
def config(tmp_path):
    return LocalCloudConfig(cluster_name="dev", state_file=tmp_path / "cloud" / "state.json",
                            zones=("zone-a", "zone-b"), instance_type="local.small", region="here")


@pytest.fixture
def store(config):
    return CloudStateStore(config.state_file)


@pytest.fixture
def launched(config, store):
    launch_instances(config, store, ["dev", "dev-m02", "dev-m03"])
    return LocalInstances(config, store)


def node(name, provider_id="", annotations=None, addresses=()):
    return {"metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"providerID": provider_id} if provider_id else {},
            "status": {"addresses": [{"type": kind, "address": value} for kind, value in addresses]}}


def set_state(store, name, state):
    with store.edit() as cloud_state:
        cloud_state["instances"][name]["state"] = state


# launching -------------------------------------------------------------------------------------------------

def test_launched_nodes_become_running_vms_placed_in_the_zones_in_turn(config, store):
    assert launch_instances(config, store, ["dev", "dev-m02", "dev-m03"]) == ["dev", "dev-m02", "dev-m03"]
    instances = store.read()["instances"]
    assert instances["dev-m02"] == {"providerID": "local://dev/dev-m02", "instanceType": "local.small",
                                    "zone": "zone-b", "region": "here", "state": "running"}
    assert [instances[n]["zone"] for n in ("dev", "dev-m02", "dev-m03")] == ["zone-a", "zone-b", "zone-a"]


def test_launching_again_changes_nothing(config, store, launched):
    set_state(store, "dev", "stopped")
    before = store.read()
    assert launch_instances(config, store, ["dev", "dev-m02"]) == []
    assert store.read() == before


def test_a_terminated_name_launched_again_is_a_fresh_running_vm_in_the_emptiest_zone(config, store, launched):
    set_state(store, "dev-m02", "terminated")  # zone-b is now empty: zone-a 2, zone-b 0
    assert launch_instances(config, store, ["dev-m02"]) == ["dev-m02"]
    assert store.read()["instances"]["dev-m02"]["state"] == "running"
    assert store.read()["instances"]["dev-m02"]["zone"] == "zone-b"


# InstancesV2 -----------------------------------------------------------------------------------------------

async def test_metadata_of_a_node_without_provider_id_is_found_by_name(launched):
    metadata = await launched.instance_metadata(node("dev-m02", addresses=[("InternalIP", "127.0.0.1")]))
    assert metadata == InstanceMetadata(
        provider_id="local://dev/dev-m02", instance_type="local.small", zone="zone-b", region="here",
        node_addresses=[{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": "dev-m02"}])


async def test_metadata_of_a_node_with_provider_id_is_found_by_it_not_by_name(launched):
    metadata = await launched.instance_metadata(node("renamed", provider_id="local://dev/dev-m02"))
    assert (metadata.provider_id, metadata.zone) == ("local://dev/dev-m02", "zone-b")
    assert metadata.node_addresses == [{"type": "Hostname", "address": "renamed"}]


async def test_the_provided_node_ip_annotation_wins_over_the_reported_address(launched):
    metadata = await launched.instance_metadata(node(
        "dev", annotations={"alpha.kubernetes.io/provided-node-ip": "10.0.0.5"}, addresses=[("InternalIP", "127.0.0.1")]))
    assert metadata.node_addresses[0] == {"type": "InternalIP", "address": "10.0.0.5"}


@pytest.mark.parametrize("provider_id", ["aws:///us-east-1a/i-0abc", "local://other/dev", "local://dev", "dev"],
                         ids=["another provider", "another cluster", "no node part", "no provider"])
async def test_a_foreign_provider_id_is_not_found_and_its_existence_is_not_judged(launched, provider_id):
    foreign = node("dev", provider_id=provider_id)
    with pytest.raises(InstanceNotFound):
        await launched.instance_metadata(foreign)
    with pytest.raises(InstanceNotFound):
        await launched.instance_shutdown(foreign)
    with pytest.raises(CloudProviderError) as raised:
        await launched.instance_exists(foreign)
    assert not isinstance(raised.value, InstanceNotFound)


@pytest.mark.parametrize("name", ["dev-m03", "never-launched"], ids=["terminated", "absent"])
async def test_a_terminated_or_absent_vm_does_not_exist(launched, store, name):
    set_state(store, "dev-m03", "terminated")
    for asked in (node(name), node("x", provider_id=f"local://dev/{name}")):
        assert await launched.instance_exists(asked) is False
        with pytest.raises(InstanceNotFound):
            await launched.instance_metadata(asked)
        with pytest.raises(InstanceNotFound):
            await launched.instance_shutdown(asked)


async def test_a_stopped_vm_exists_and_is_shut_down(launched, store):
    set_state(store, "dev-m02", "stopped")
    assert await launched.instance_exists(node("dev-m02")) is True
    assert await launched.instance_shutdown(node("dev-m02")) is True
    assert await launched.instance_shutdown(node("dev")) is False


# Zones -----------------------------------------------------------------------------------------------------

async def test_zones_by_node_name_and_by_provider_id(launched):
    assert await launched.get_zone_by_node_name("dev-m02") == Zone("zone-b", "here")
    assert await launched.get_zone_by_provider_id("local://dev/dev-m03") == Zone("zone-a", "here")
    with pytest.raises(InstanceNotFound):
        await launched.get_zone_by_provider_id("local://other/dev")
    with pytest.raises(InstanceNotFound):
        await launched.get_zone_by_node_name("nope")


# Routes ----------------------------------------------------------------------------------------------------

async def test_routes_are_created_listed_blackholed_when_their_vm_goes_and_deleted(launched, store):
    routes = LocalRoutes(store)
    await routes.create_route("dev", "uid-2", Route("", "dev-m02", "10.200.1.0/24"))
    await routes.create_route("dev", "uid-3", Route("", "dev-m03", "10.200.2.0/24"))
    assert await routes.list_routes("dev") == [Route("dev-uid-2", "dev-m02", "10.200.1.0/24"),
                                               Route("dev-uid-3", "dev-m03", "10.200.2.0/24")]
    assert store.read()["routes"]["dev-uid-2"] == {"targetNode": "dev-m02", "destinationCIDR": "10.200.1.0/24"}
    set_state(store, "dev-m03", "terminated")
    assert [r.blackhole for r in await routes.list_routes("dev")] == [False, True]
    await routes.delete_route("dev", Route("dev-uid-3", "dev-m03", "10.200.2.0/24"))
    assert [r.name for r in await routes.list_routes("dev")] == ["dev-uid-2"]


async def test_routes_of_another_cluster_are_not_listed(launched, store):
    await LocalRoutes(store).create_route("other", "uid-1", Route("", "dev", "10.201.0.0/24"))
    assert await LocalRoutes(store).list_routes("dev") == []


async def test_a_route_to_a_vm_that_does_not_exist_or_to_a_bad_cidr_is_refused(launched, store):
    routes = LocalRoutes(store)
    with pytest.raises(InstanceNotFound):
        await routes.create_route("dev", "uid-9", Route("", "ghost", "10.200.9.0/24"))
    with pytest.raises(CloudProviderError, match="10.200.1.1/24"):
        await routes.create_route("dev", "uid-2", Route("", "dev-m02", "10.200.1.1/24"))
    assert store.read()["routes"] == {}


# the provider object and its factory ----------------------------------------------------------------------

def test_the_provider_offers_instances_v2_zones_routes_and_load_balancers_only(config):
    cloud = LocalCloud(config)
    assert isinstance(cloud.instances_v2(), LocalInstances) and cloud.zones() is cloud.instances_v2()
    assert isinstance(cloud.routes(), LocalRoutes)
    assert isinstance(cloud.load_balancer(), LocalLoadBalancers)
    assert cloud.instances() is None and cloud.clusters() is None
    assert (cloud.provider_name(), cloud.has_cluster_id()) == ("local", True)


async def test_initialize_starts_the_load_balancers(config, monkeypatch):
    started = []

    async def start(self, client_builder, stop):
        started.append((client_builder, stop))

    monkeypatch.setattr(LocalLoadBalancers, "start", start)
    stop = object()
    await LocalCloud(config).initialize("builder", stop)
    assert started == [("builder", stop)]


def test_the_registry_builds_the_local_cloud_from_its_config_file(config, tmp_path):
    path = tmp_path / "cloud-config.yaml"
    path.write_text(render(config))
    cloud = registry.get_cloud_provider("local", str(path))
    assert isinstance(cloud, LocalCloud) and cloud.config == config


@pytest.mark.parametrize(("text", "message"), [
    (None, "needs --cloud-config"),
    ("clusterName: dev\nstateFile: /tmp/x.json\nzone: [a]\n", "unknown key(s) zone"),
    ("clusterName: dev\n", "stateFile is required"),
    ("clusterName: dev\nstateFile: /tmp/x.json\nzones: []\n", "zones must be a non-empty list"),
    ("[unclosed\n", "not YAML"),
], ids=["no config", "a typo", "no state file", "no zones", "not YAML"])
def test_a_bad_config_stops_the_provider_with_one_line(tmp_path, text, message):
    path = tmp_path / "cloud-config.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InvalidCloudConfig, match=re.escape(message)) as raised:
        registry.get_cloud_provider("local", str(path) if text is not None else "")
    assert "\n" not in str(raised.value)


def test_an_unreadable_state_file_stops_the_provider_at_start(config, tmp_path):
    config.state_file.parent.mkdir(parents=True)
    config.state_file.write_text("{not json")
    path = tmp_path / "cloud-config.yaml"
    path.write_text(render(config))
    with pytest.raises(InvalidCloudConfig, match=re.escape(f"could not start: cloud state {config.state_file}")):
        registry.get_cloud_provider("local", str(path))

"""The `fake` cloud provider: every capability in memory, every call recorded (kube's `cloud-provider/fake`).

Controller unit tests drive the CCM's controllers against it and then assert on what the controllers asked:

    cloud = FakeCloud()
    cloud.add_instance("node-1", zone="zone-a", instance_type="fake.small")
    ... run a controller's sync ...
    assert cloud.calls_to("ensure_load_balancer") == [("ensure_load_balancer", ("kubernetes", "default/web"))]

What a test can switch:
* `disabled`: capability names ("load_balancer", "instances", "instances_v2", "zones", "clusters", "routes")
  whose accessor returns None, as a cloud without them would;
* `errors[method]`: an exception the next calls of `method` raise (until removed);
* `hang`: method names that never return, to exercise the controllers' timeouts;
* instance power state: `shutdown` (stopped VMs) and `remove_instance` (terminated ones).

Calls are recorded as `(method, args)` with Services as "namespace/name" and Nodes by name, so assertions
stay short. The fake runs no background tasks: `initialize` only records.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from minikube_py.ccm.cloud.interface import (
    ClientBuilder,
    InstanceMetadata,
    InstanceNotFound,
    LoadBalancerStatus,
    Node,
    NodeAddress,
    Route,
    Service,
    Zone,
    default_load_balancer_name,
    provider_id_parts,
)

PROVIDER_NAME = "fake"
CAPABILITIES = ("load_balancer", "instances", "instances_v2", "zones", "clusters", "routes")


@dataclass
class FakeInstance:
    name: str
    instance_type: str = "fake.small"
    zone: str = "zone-a"
    region: str = "region-1"
    addresses: list[NodeAddress] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def provider_id(self) -> str:
        return f"{PROVIDER_NAME}://{self.name}"


class FakeCloud:
    """A cloud provider whose instances, balancers and routes are dicts, and which records every call."""

    def __init__(self, *, cluster_name: str = "kubernetes", ingress_ip: str = "192.0.2.1") -> None:
        self.cluster_name = cluster_name
        self.ingress_ip = ingress_ip  # first address handed to load balancers; later ones count up
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.disabled: set[str] = set()
        self.errors: dict[str, BaseException] = {}
        self.hang: set[str] = set()
        self.instances_by_name: dict[str, FakeInstance] = {}
        self.shutdown: set[str] = set()  # names of stopped instances
        self.balancers: dict[str, LoadBalancerStatus] = {}  # load balancer name -> status
        self.balancer_nodes: dict[str, list[str]] = {}  # load balancer name -> node names it sends to
        self.route_table: dict[str, Route] = {}  # route name -> route
        self.initialized = False

    # test set-up -------------------------------------------------------------------------------------------

    def add_instance(self, name: str, **fields: Any) -> FakeInstance:
        instance = FakeInstance(name, **fields)
        self.instances_by_name[name] = instance
        return instance

    def remove_instance(self, name: str) -> None:
        self.instances_by_name.pop(name, None)
        self.shutdown.discard(name)

    def calls_to(self, method: str) -> list[tuple[str, tuple[Any, ...]]]:
        return [call for call in self.calls if call[0] == method]

    # Interface ---------------------------------------------------------------------------------------------

    async def initialize(self, client_builder: ClientBuilder, stop: asyncio.Event) -> None:
        await self._call("initialize")
        self.initialized = True

    def load_balancer(self) -> FakeCloud | None:
        return self._capability("load_balancer")

    def instances(self) -> FakeCloud | None:
        return self._capability("instances")

    def instances_v2(self) -> FakeCloud | None:
        return self._capability("instances_v2")

    def zones(self) -> FakeCloud | None:
        return self._capability("zones")

    def clusters(self) -> FakeCloud | None:
        return self._capability("clusters")

    def routes(self) -> FakeCloud | None:
        return self._capability("routes")

    def provider_name(self) -> str:
        return PROVIDER_NAME

    def has_cluster_id(self) -> bool:
        return True

    # LoadBalancer ------------------------------------------------------------------------------------------

    async def get_load_balancer(self, cluster_name: str, service: Service) -> LoadBalancerStatus | None:
        await self._call("get_load_balancer", cluster_name, _service_key(service))
        return self.balancers.get(self.get_load_balancer_name(cluster_name, service))

    def get_load_balancer_name(self, cluster_name: str, service: Service) -> str:
        return default_load_balancer_name(service)

    async def ensure_load_balancer(self, cluster_name: str, service: Service, nodes: list[Node]) -> LoadBalancerStatus:
        await self._call("ensure_load_balancer", cluster_name, _service_key(service))
        name = self.get_load_balancer_name(cluster_name, service)
        if name not in self.balancers:
            octets = self.ingress_ip.rsplit(".", 1)
            self.balancers[name] = {"ingress": [{"ip": f"{octets[0]}.{int(octets[1]) + len(self.balancers)}",
                                                 "ipMode": "VIP"}]}
        self.balancer_nodes[name] = sorted(node["metadata"]["name"] for node in nodes)
        return self.balancers[name]

    async def update_load_balancer(self, cluster_name: str, service: Service, nodes: list[Node]) -> None:
        await self._call("update_load_balancer", cluster_name, _service_key(service))
        self.balancer_nodes[self.get_load_balancer_name(cluster_name, service)] = sorted(
            node["metadata"]["name"] for node in nodes)

    async def ensure_load_balancer_deleted(self, cluster_name: str, service: Service) -> None:
        await self._call("ensure_load_balancer_deleted", cluster_name, _service_key(service))
        name = self.get_load_balancer_name(cluster_name, service)
        self.balancers.pop(name, None)
        self.balancer_nodes.pop(name, None)

    # InstancesV2 -------------------------------------------------------------------------------------------

    async def instance_exists(self, node: Node) -> bool:
        await self._call("instance_exists", node["metadata"]["name"])
        return self._find(node) is not None

    async def instance_shutdown(self, node: Node) -> bool:
        await self._call("instance_shutdown", node["metadata"]["name"])
        instance = self._find(node)
        if instance is None:
            raise InstanceNotFound(node["metadata"]["name"])
        return instance.name in self.shutdown

    async def instance_metadata(self, node: Node) -> InstanceMetadata:
        await self._call("instance_metadata", node["metadata"]["name"])
        instance = self._find(node)
        if instance is None:
            raise InstanceNotFound(node["metadata"]["name"])
        return InstanceMetadata(provider_id=instance.provider_id, instance_type=instance.instance_type,
                                node_addresses=list(instance.addresses), zone=instance.zone,
                                region=instance.region, additional_labels=dict(instance.labels))

    # Instances (v1) ----------------------------------------------------------------------------------------

    async def node_addresses(self, name: str) -> list[NodeAddress]:
        await self._call("node_addresses", name)
        return list(self._by_name(name).addresses)

    async def instance_id(self, name: str) -> str:
        await self._call("instance_id", name)
        return self._by_name(name).name

    async def instance_type(self, name: str) -> str:
        await self._call("instance_type", name)
        return self._by_name(name).instance_type

    async def instance_exists_by_provider_id(self, provider_id: str) -> bool:
        await self._call("instance_exists_by_provider_id", provider_id)
        return provider_id_parts(provider_id)[1] in self.instances_by_name

    async def instance_shutdown_by_provider_id(self, provider_id: str) -> bool:
        await self._call("instance_shutdown_by_provider_id", provider_id)
        return self._by_name(provider_id_parts(provider_id)[1]).name in self.shutdown

    # Zones -------------------------------------------------------------------------------------------------

    async def get_zone_by_node_name(self, name: str) -> Zone:
        await self._call("get_zone_by_node_name", name)
        instance = self._by_name(name)
        return Zone(instance.zone, instance.region)

    async def get_zone_by_provider_id(self, provider_id: str) -> Zone:
        await self._call("get_zone_by_provider_id", provider_id)
        instance = self._by_name(provider_id_parts(provider_id)[1])
        return Zone(instance.zone, instance.region)

    # Clusters ----------------------------------------------------------------------------------------------

    async def list_clusters(self) -> list[str]:
        await self._call("list_clusters")
        return [self.cluster_name]

    async def master(self, cluster_name: str) -> str:
        await self._call("master", cluster_name)
        return "127.0.0.1"

    # Routes ------------------------------------------------------------------------------------------------

    async def list_routes(self, cluster_name: str) -> list[Route]:
        await self._call("list_routes", cluster_name)
        return [Route(r.name, r.target_node, r.destination_cidr, blackhole=r.target_node not in self.instances_by_name)
                for r in self.route_table.values()]

    async def create_route(self, cluster_name: str, name_hint: str, route: Route) -> None:
        await self._call("create_route", cluster_name, name_hint, route.target_node, route.destination_cidr)
        name = f"{cluster_name}-{name_hint}"
        self.route_table[name] = Route(name, route.target_node, route.destination_cidr)

    async def delete_route(self, cluster_name: str, route: Route) -> None:
        await self._call("delete_route", cluster_name, route.name)
        self.route_table.pop(route.name, None)

    # helpers -----------------------------------------------------------------------------------------------

    async def _call(self, method: str, *args: Any) -> None:
        self.calls.append((method, args))
        if method in self.hang:
            await asyncio.Event().wait()
        error = self.errors.get(method)
        if error is not None:
            raise error

    def _capability(self, name: str) -> FakeCloud | None:
        return None if name in self.disabled else self

    def _find(self, node: Node) -> FakeInstance | None:
        provider_id = (node.get("spec") or {}).get("providerID", "")
        name = provider_id_parts(provider_id)[1] if provider_id else node["metadata"]["name"]
        return self.instances_by_name.get(name)

    def _by_name(self, name: str) -> FakeInstance:
        instance = self.instances_by_name.get(name)
        if instance is None:
            raise InstanceNotFound(name)
        return instance


def new_provider(config: str | None) -> FakeCloud:
    """The registry's factory: the fake takes no configuration."""
    return FakeCloud()


def _service_key(service: Service) -> str:
    meta = service.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"

"""The cloud-provider contract: what the cloud-controller-manager asks of a cloud (kube's `cloud-provider/cloud.go`).

A cloud provider is one object implementing `Interface`. The controllers never know which cloud they run
against; they ask the provider for one capability at a time and do without it when the answer is None:

    cloud = registry.get_cloud_provider("local", config_text)
    await cloud.initialize(client_builder, stop)        # once, before any controller runs
    balancers = cloud.load_balancer()                   # None: this cloud has no load balancers
    if balancers is not None:
        status = await balancers.ensure_load_balancer(cluster_name, service, nodes)

Capabilities, each optional: `LoadBalancer` (Services of type LoadBalancer), `InstancesV2` (what a node's VM is
and whether it still exists or is shut down; the older `Instances` asks the same by node name), `Zones`,
`Clusters`, `Routes` (pod-network routes between nodes).

One addition of mkpy's, `InProcessLoadBalancer`: a load balancer capability whose traffic flows through the
CCM's own process (the local cloud's) also offers `serve_recorded`, which the CCM calls as soon as it starts,
before it leads, so a restarted CCM's load balancers are down only while no CCM process runs.

Usage rules, the same for every provider:
* Objects passed in (Services, Nodes) are the controllers' cached copies, as JSON dicts: read them, never
  change them.
* Every method that talks to the cloud is a coroutine. It may fail by raising: `InstanceNotFound` when the
  instance does not exist, `Unimplemented` for an operation this cloud does not offer, any other exception
  for a failed call. The controllers bound each call with a timeout and retry with backoff, so a provider
  need not retry by itself and may simply hang on a dead cloud.
* Methods that only compute (`provider_name`, `has_cluster_id`, `get_load_balancer_name`) are plain
  functions and must not block.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from minikube_py.client.rest import RESTClient

Node = dict[str, Any]
Service = dict[str, Any]
NodeAddress = dict[str, str]  # {"type": "InternalIP" | "ExternalIP" | "Hostname" | ..., "address": ...}
LoadBalancerStatus = dict[str, Any]  # a Service's status.loadBalancer: {"ingress": [{"ip": ...}]}


class CloudProviderError(Exception):
    """A cloud call failed."""


class InstanceNotFound(CloudProviderError):
    """The instance (VM) asked about does not exist in the cloud (kube's `cloudprovider.InstanceNotFound`)."""

    def __init__(self, what: str = "") -> None:
        super().__init__(f"instance not found{': ' + what if what else ''}")


class Unimplemented(CloudProviderError):
    """This cloud does not offer the operation (kube's `cloudprovider.NotImplemented`)."""

    def __init__(self, what: str = "") -> None:
        super().__init__(f"unimplemented{': ' + what if what else ''}")


class InvalidCloudConfig(CloudProviderError):
    """The `--cloud-config` file cannot be used; a provider factory raises it and the CCM refuses to start."""


@dataclass(frozen=True)
class Zone:
    """Where an instance runs: `topology.kubernetes.io/zone` and `topology.kubernetes.io/region`."""

    failure_domain: str
    region: str


@dataclass(frozen=True)
class InstanceMetadata:
    """What InstancesV2 says about a node's instance; the cloud-node controller copies it onto the Node."""

    provider_id: str  # spec.providerID, "<provider>://<cloud-specific id>"
    instance_type: str = ""  # label node.kubernetes.io/instance-type
    node_addresses: list[NodeAddress] = field(default_factory=list)  # status.addresses
    zone: str = ""  # label topology.kubernetes.io/zone
    region: str = ""  # label topology.kubernetes.io/region
    additional_labels: dict[str, str] = field(default_factory=dict)  # any other labels the cloud sets


@dataclass(frozen=True)
class Route:
    """A pod-network route: traffic for `destination_cidr` goes to the node `target_node`."""

    name: str  # the cloud's name for it; "" in a route not yet created
    target_node: str
    destination_cidr: str
    blackhole: bool = False  # the target is gone: the route drops traffic and should be deleted


class ClientBuilder(Protocol):
    """How a provider gets API clients of its own (kube's `ControllerClientBuilder`)."""

    async def client(self, name: str) -> RESTClient:
        """A client to the apiserver, for the part of the provider called `name`."""


class LoadBalancer(Protocol):
    """Load balancers for Services of `type: LoadBalancer`."""

    async def get_load_balancer(self, cluster_name: str, service: Service) -> LoadBalancerStatus | None:
        """The status of the service's load balancer, or None when it has none."""

    def get_load_balancer_name(self, cluster_name: str, service: Service) -> str:
        """The cloud's name for the service's load balancer; stable for the life of the Service."""

    async def ensure_load_balancer(self, cluster_name: str, service: Service, nodes: list[Node]) -> LoadBalancerStatus:
        """Create the service's load balancer, or bring an existing one up to date, sending traffic to `nodes`
        (every node that may carry load-balancer traffic, Ready or not: the load balancer's own health checks
        keep traffic off a node that does not answer); its status, for `status.loadBalancer`."""

    async def update_load_balancer(self, cluster_name: str, service: Service, nodes: list[Node]) -> None:
        """Point an existing load balancer at a new set of nodes (called when the cluster's nodes change)."""

    async def ensure_load_balancer_deleted(self, cluster_name: str, service: Service) -> None:
        """Delete the service's load balancer if there is one; succeeding when there is none."""


@runtime_checkable
class InProcessLoadBalancer(Protocol):
    """mkpy's addition to LoadBalancer, for a cloud whose load balancers carry their traffic inside the CCM's
    process (kube has nothing like it: a real cloud's load balancers outlive any CCM)."""

    async def serve_recorded(self, stop: asyncio.Event, hand_back_after: float | None) -> None:
        """Called once when the CCM starts, before it leads: serve the load balancers the cloud has recorded on
        every address that is free, leaving alone those in use (a live leader serves them). `initialize` takes
        them over when this CCM leads; until then they are closed when `stop` is set or when `hand_back_after`
        seconds (None: never) pass without this CCM leading, since then another CCM leads and needs them."""


class InstancesV2(Protocol):
    """The instance (VM) behind each node, asked about by Node object."""

    async def instance_exists(self, node: Node) -> bool:
        """Whether the node's instance exists; False only when the cloud is sure it is gone."""

    async def instance_shutdown(self, node: Node) -> bool:
        """Whether the node's instance exists but is shut down (stopped)."""

    async def instance_metadata(self, node: Node) -> InstanceMetadata:
        """The instance's providerID, type, addresses, zone, region and extra labels; InstanceNotFound if none."""


class Instances(Protocol):
    """The older, node-name based instance API; a provider offers this or InstancesV2 (the CCM prefers v2)."""

    async def node_addresses(self, name: str) -> list[NodeAddress]:
        """The addresses of the instance of node `name`."""

    async def instance_id(self, name: str) -> str:
        """The cloud's id of the instance of node `name` (the part after `<provider>://` in providerID)."""

    async def instance_type(self, name: str) -> str:
        """The type of the instance of node `name`."""

    async def instance_exists_by_provider_id(self, provider_id: str) -> bool:
        """Whether the instance still exists."""

    async def instance_shutdown_by_provider_id(self, provider_id: str) -> bool:
        """Whether the instance exists but is shut down."""


class Zones(Protocol):
    """Zones and regions of instances, for providers without InstancesV2."""

    async def get_zone_by_node_name(self, name: str) -> Zone:
        """The zone of the instance of node `name`."""

    async def get_zone_by_provider_id(self, provider_id: str) -> Zone:
        """The zone of the instance with this providerID."""


class Clusters(Protocol):
    """The clusters this cloud account runs."""

    async def list_clusters(self) -> list[str]:
        """The names of the clusters."""

    async def master(self, cluster_name: str) -> str:
        """The address of the cluster's control plane."""


class Routes(Protocol):
    """Pod-network routes: one per node, sending its pod CIDR to it."""

    async def list_routes(self, cluster_name: str) -> list[Route]:
        """Every route of the cluster, blackholed ones included."""

    async def create_route(self, cluster_name: str, name_hint: str, route: Route) -> None:
        """Create `route` (its name is the provider's choice; `name_hint` is a stable unique suggestion)."""

    async def delete_route(self, cluster_name: str, route: Route) -> None:
        """Delete `route`, found by its name."""


class Interface(Protocol):
    """A cloud provider: one object per CCM process."""

    async def initialize(self, client_builder: ClientBuilder, stop: asyncio.Event) -> None:
        """Called once before any controller runs: start whatever the provider runs in the background (it must
        end once `stop` is set) and make API clients it needs from `client_builder`."""

    def load_balancer(self) -> LoadBalancer | None:
        """Load balancers, or None when this cloud has none."""

    def instances(self) -> Instances | None:
        """The node-name based instance API, or None."""

    def instances_v2(self) -> InstancesV2 | None:
        """The Node based instance API, or None."""

    def zones(self) -> Zones | None:
        """Zones, or None."""

    def clusters(self) -> Clusters | None:
        """Clusters, or None."""

    def routes(self) -> Routes | None:
        """Routes, or None (then `--configure-cloud-routes` has nothing to work with)."""

    def provider_name(self) -> str:
        """The provider's name, as `--cloud-provider` names it and providerIDs start (`local://...`)."""

    def has_cluster_id(self) -> bool:
        """Whether the provider can tell this cluster's resources from other clusters' (a cluster id is set)."""


def default_load_balancer_name(service: Service) -> str:
    """kube's default load balancer name: "a" and the Service's uid without dashes, at most 32 characters."""
    uid = (service.get("metadata") or {}).get("uid", "")
    return ("a" + uid.replace("-", ""))[:32]


def provider_id_parts(provider_id: str) -> tuple[str, str]:
    """Split "<provider>://<id>" into ("<provider>", "<id>"); ValueError for anything else."""
    provider, sep, rest = provider_id.partition("://")
    if not sep or not provider or not rest:
        raise ValueError(f"providerID {provider_id!r} is not of the form <provider>://<id>")
    return provider, rest

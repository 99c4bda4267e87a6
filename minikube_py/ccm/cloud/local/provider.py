"""The `local` cloud provider object: what `--cloud-provider local --cloud-config FILE` builds.

It only puts the local cloud's parts together over one state file and hands them to the CCM:

    load_balancer()   LocalLoadBalancers (loadbalancer.py): real TCP listeners on loopback addresses
    instances_v2()    LocalInstances (instances.py): the cluster's nodes as VMs
    zones()           the same LocalInstances
    routes()          LocalRoutes (routes.py): a route table in the state, not installed on the host
    instances()       None: the CCM prefers InstancesV2, so the older node-name API is not offered
    clusters()        None: no controller asks, and the cloud config does not know the apiserver's address

The load balancers' listeners live in the CCM's process, so they are an `InProcessLoadBalancer`: the CCM has
them serve the balancers recorded in the state as soon as it starts (`serve_recorded`), and `initialize`, once
it leads, starts their background work (their endpoints watch, and the adoption of every recorded balancer).
`has_cluster_id` is True: every resource carries the cluster's name (providerIDs `local://<clusterName>/<node>`,
route names `<clusterName>-...`).

The factory `new_provider(config_text)` reads the cloud config and the state file once, so a bad config or an
unreadable state stops the CCM at start with one line, not at its first cloud call.
"""

from __future__ import annotations

import asyncio

from minikube_py.ccm.cloud.interface import ClientBuilder
from minikube_py.ccm.cloud.local.config import LocalCloudConfig, parse
from minikube_py.ccm.cloud.local.instances import PROVIDER_NAME, LocalInstances
from minikube_py.ccm.cloud.local.loadbalancer import LocalLoadBalancers
from minikube_py.ccm.cloud.local.routes import LocalRoutes
from minikube_py.ccm.cloud.local.state import CloudStateStore


class LocalCloud:
    """A cloud simulated on this machine (interface.Interface)."""

    def __init__(self, config: LocalCloudConfig) -> None:
        self.config = config
        store = CloudStateStore(config.state_file)
        self._load_balancers = LocalLoadBalancers(config, store, PROVIDER_NAME)
        self._instances = LocalInstances(config, store)
        self._routes = LocalRoutes(store)

    async def initialize(self, client_builder: ClientBuilder, stop: asyncio.Event) -> None:
        await self._load_balancers.start(client_builder, stop)

    def load_balancer(self) -> LocalLoadBalancers:
        return self._load_balancers

    def instances(self) -> None:
        return None

    def instances_v2(self) -> LocalInstances:
        return self._instances

    def zones(self) -> LocalInstances:
        return self._instances

    def clusters(self) -> None:
        return None

    def routes(self) -> LocalRoutes:
        return self._routes

    def provider_name(self) -> str:
        return PROVIDER_NAME

    def has_cluster_id(self) -> bool:
        return True


def new_provider(config_text: str | None) -> LocalCloud:
    """The registry's factory: InvalidCloudConfig for a bad config, CloudStateError for an unreadable state."""
    config = parse(config_text)
    CloudStateStore(config.state_file).read()
    return LocalCloud(config)

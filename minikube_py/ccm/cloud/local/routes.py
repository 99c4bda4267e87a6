"""The local cloud's route table (kube's `Routes`): one route per node, sending its pod CIDR to its VM.

On a cloud whose network knows nothing of pods, the route controller asks the cloud for one route per node:
"traffic for 10.200.1.0/24 goes to the VM of mkpy-m02". The local cloud keeps its route table in the cloud
state, under names `<clusterName>-<name_hint>` (the route controller's hint is the node's uid):

    "routes": {"mkpy-5c0d...": {"targetNode": "mkpy-m02", "destinationCIDR": "10.200.1.0/24"}}

A route whose target VM is gone (absent or terminated) is listed as a blackhole, which the route controller
deletes, as it would on a cloud that keeps routes to deleted instances.

The routes are only recorded, never installed on the host: every node of an mkpy cluster runs on this one
machine, and each node's CNI bridge already gives the host a connected route to that node's pod CIDR, so
cross-node pod traffic needs no extra host route. `mkpy cloud routes` shows the table.
"""

from __future__ import annotations

import asyncio
import ipaddress

from minikube_py.ccm.cloud.interface import CloudProviderError, InstanceNotFound, Route
from minikube_py.ccm.cloud.local.instances import TERMINATED
from minikube_py.ccm.cloud.local.state import CloudStateStore, State


class LocalRoutes:
    """Routes over the cloud state."""

    def __init__(self, store: CloudStateStore) -> None:
        self._store = store

    async def list_routes(self, cluster_name: str) -> list[Route]:
        state = await asyncio.to_thread(self._store.read)
        return [Route(name=name, target_node=record["targetNode"], destination_cidr=record["destinationCIDR"],
                      blackhole=not _alive(state, record["targetNode"]))
                for name, record in sorted(state["routes"].items()) if name.startswith(f"{cluster_name}-")]

    async def create_route(self, cluster_name: str, name_hint: str, route: Route) -> None:
        try:
            cidr = str(ipaddress.ip_network(route.destination_cidr))
        except ValueError as error:
            raise CloudProviderError(f"route to {route.target_node}: {error}") from None
        await asyncio.to_thread(self._create, f"{cluster_name}-{name_hint}", route.target_node, cidr)

    async def delete_route(self, cluster_name: str, route: Route) -> None:
        await asyncio.to_thread(self._delete, route.name)

    def _create(self, name: str, target_node: str, cidr: str) -> None:
        with self._store.edit() as state:
            if not _alive(state, target_node):
                raise InstanceNotFound(f"{target_node}: cannot route {cidr} to a VM that does not exist")
            state["routes"][name] = {"targetNode": target_node, "destinationCIDR": cidr}

    def _delete(self, name: str) -> None:
        with self._store.edit() as state:
            state["routes"].pop(name, None)


def _alive(state: State, node_name: str) -> bool:
    record = state["instances"].get(node_name)
    return record is not None and record["state"] != TERMINATED

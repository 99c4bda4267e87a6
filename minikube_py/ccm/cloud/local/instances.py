"""The local cloud's instances: one VM per node of the cluster, kept in the cloud state.

A real cloud launches a VM first and the kubelet on it registers a Node later; the cloud-node controller then
asks the cloud about the VM behind the Node. Here `mkpy up` plays the launching part: for every node it plans
it calls `launch_instances`, which records a VM in the state file

    "mkpy-m02": {"providerID": "local://mkpy/mkpy-m02", "instanceType": "local.standard",
                 "zone": "local-b", "region": "local", "state": "running"}

and `mkpy cloud instance stop|start|terminate` (the cloud console) changes its `state` later. New VMs go to
the zone with the fewest live VMs, ties broken by the order of `zones` in the cloud config, so VMs launched one
after another fill the zones in turn. A terminated VM stays in the state (a cloud remembers it for a while);
launching its name again makes a fresh running VM.

`LocalInstances` answers the CCM from the state (kube's `InstancesV2` and `Zones`): it finds a Node's VM by
`spec.providerID` when the node has one, else by the node's name. A providerID of another provider or another
cluster is none of this cloud's business: InstanceNotFound for metadata, shutdown and zone, and an error (not
"gone") from `instance_exists`, so the cloud-node-lifecycle controller never deletes a Node it cannot judge
(kube's providers do the same with a providerID they cannot parse).

Addresses: the cloud has no network of its own, so a VM's InternalIP is the one its node asked for
(`alpha.kubernetes.io/provided-node-ip`, set by a kubelet started with `--node-ip` and
`--cloud-provider=external`), else the InternalIP the node reports, plus the node name as its Hostname.
Usage rules: state reads and writes run in a thread (`asyncio.to_thread`), since the state file's lock may
be held for a moment by another process.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from typing import Any

from minikube_py.ccm.cloud.interface import (
    CloudProviderError,
    InstanceMetadata,
    InstanceNotFound,
    Node,
    NodeAddress,
    Zone,
    provider_id_parts,
)
from minikube_py.ccm.cloud.local.config import LocalCloudConfig
from minikube_py.ccm.cloud.local.state import CloudStateStore

PROVIDER_NAME = "local"
RUNNING, STOPPED, TERMINATED = "running", "stopped", "terminated"
PROVIDED_NODE_IP = "alpha.kubernetes.io/provided-node-ip"


def provider_id(config: LocalCloudConfig, node_name: str) -> str:
    """`local://<clusterName>/<node>`: the providerID of the VM of node `node_name`."""
    return f"{PROVIDER_NAME}://{config.cluster_name}/{node_name}"


def instance_name(config: LocalCloudConfig, provider_id: str) -> str | None:
    """The node name in a providerID of this cloud and cluster; None for any other providerID."""
    try:
        provider, rest = provider_id_parts(provider_id)
    except ValueError:
        return None
    cluster, _, name = rest.partition("/")
    if provider != PROVIDER_NAME or cluster != config.cluster_name or not name or "/" in name:
        return None
    return name


def launch_instances(config: LocalCloudConfig, store: CloudStateStore, node_names: Iterable[str]) -> list[str]:
    """Record a running VM for each node that has none (or only a terminated one); the names launched."""
    launched = []
    with store.edit() as state:
        instances = state["instances"]
        for name in node_names:
            if name in instances and instances[name]["state"] != TERMINATED:
                continue
            instances[name] = {"providerID": provider_id(config, name), "instanceType": config.instance_type,
                               "zone": _emptiest_zone(config, instances), "region": config.region,
                               "state": RUNNING}
            launched.append(name)
    return launched


def _emptiest_zone(config: LocalCloudConfig, instances: dict[str, dict[str, Any]]) -> str:
    live = Counter(record["zone"] for record in instances.values() if record["state"] != TERMINATED)
    return min(config.zones, key=lambda zone: live[zone])  # min keeps the first of equals: config order


class LocalInstances:
    """InstancesV2 and Zones over the cloud state."""

    def __init__(self, config: LocalCloudConfig, store: CloudStateStore) -> None:
        self._config = config
        self._store = store

    # InstancesV2 -------------------------------------------------------------------------------------------

    async def instance_exists(self, node: Node) -> bool:
        name = self._node_instance_name(node)
        if name is None:
            raise CloudProviderError(f"node {node['metadata']['name']}: providerID {node['spec']['providerID']} "
                                     f"is not a VM of the local cloud of cluster {self._config.cluster_name}")
        return await self._live_record(name) is not None

    async def instance_shutdown(self, node: Node) -> bool:
        record = await self._node_record(node)
        return record["state"] == STOPPED

    async def instance_metadata(self, node: Node) -> InstanceMetadata:
        record = await self._node_record(node)
        return InstanceMetadata(provider_id=record["providerID"], instance_type=record["instanceType"],
                                node_addresses=node_addresses(node), zone=record["zone"], region=record["region"])

    # Zones -------------------------------------------------------------------------------------------------

    async def get_zone_by_node_name(self, name: str) -> Zone:
        return _zone(await self._required(name, name))

    async def get_zone_by_provider_id(self, provider_id: str) -> Zone:
        name = instance_name(self._config, provider_id)
        if name is None:
            raise InstanceNotFound(f"{provider_id} (not a VM of cluster {self._config.cluster_name})")
        return _zone(await self._required(name, provider_id))

    # helpers -----------------------------------------------------------------------------------------------

    def _node_instance_name(self, node: Node) -> str | None:
        given = (node.get("spec") or {}).get("providerID", "")
        return instance_name(self._config, given) if given else node["metadata"]["name"]

    async def _node_record(self, node: Node) -> dict[str, Any]:
        name = self._node_instance_name(node)
        if name is None:
            raise InstanceNotFound(f"node {node['metadata']['name']}: providerID {node['spec']['providerID']} is "
                                   f"not a VM of cluster {self._config.cluster_name}")
        return await self._required(name, node["metadata"]["name"])

    async def _required(self, name: str, what: str) -> dict[str, Any]:
        record = await self._live_record(name)
        if record is None:
            raise InstanceNotFound(what)
        return record

    async def _live_record(self, name: str) -> dict[str, Any] | None:
        state = await asyncio.to_thread(self._store.read)
        record = state["instances"].get(name)
        return record if record is not None and record["state"] != TERMINATED else None


def node_addresses(node: Node) -> list[NodeAddress]:
    """The VM's addresses: InternalIP(s) as the node asked for or reports them, then its Hostname."""
    metadata = node["metadata"]
    provided = (metadata.get("annotations") or {}).get(PROVIDED_NODE_IP, "")
    internal = [ip.strip() for ip in provided.split(",") if ip.strip()] or [
        address["address"] for address in (node.get("status") or {}).get("addresses") or []
        if address.get("type") == "InternalIP"]
    return [*({"type": "InternalIP", "address": ip} for ip in internal),
            {"type": "Hostname", "address": metadata["name"]}]


def _zone(record: dict[str, Any]) -> Zone:
    return Zone(failure_domain=record["zone"], region=record["region"])

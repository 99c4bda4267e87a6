"""The cloud-node controller (kube's `cloud-provider/controllers/node`): copies what the cloud knows about a
node's VM onto its Node object, then lets pods schedule there.

A kubelet started with `--cloud-provider=external` cannot ask the cloud about its own machine, so it registers
its Node with the taint `node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule` and waits. This
controller initializes such a node: it asks the provider for the instance's metadata (`InstancesV2.
instance_metadata`, or, for a provider with only the older name-based `Instances`, the instance id, type,
addresses and its `Zones`), then writes, in one update of the Node:
* `spec.providerID` ("<provider>://<id>") when the kubelet did not set it (it never changes afterwards);
* the labels `node.kubernetes.io/instance-type`, `topology.kubernetes.io/zone` and `topology.kubernetes.io/
  region`, each with its legacy beta twin (`beta.kubernetes.io/instance-type`, `failure-domain.beta.
  kubernetes.io/zone|region`), and the provider's additional labels (never in a kubernetes.io or k8s.io
  namespace, never overwriting a label the node already has);
* the taint list without the uninitialized taint, so the scheduler may now place pods there.
The update carries the resourceVersion it read: on a Conflict the node is read again and the changes applied
anew, a few times. Then `status.addresses` come from the cloud (a PATCH of `nodes/status` replacing the list)
and the node gets the event Synced "Node synced successfully".

When the kubelet was given `--node-ip`, it annotates the node `alpha.kubernetes.io/provided-node-ip` (one IP,
or an IPv4,IPv6 pair). Each of those IPs must be among the cloud's addresses; it then comes first and is the
only address of its type (InternalIP, ExternalIP), the cloud's other types follow. A provided IP the cloud
does not know keeps the node tainted: better unschedulable than reachable at the wrong address.

Failures are retried with the queue's exponential backoff (5 ms doubling up to 1000 s) and the node stays
tainted meanwhile: an instance the cloud does not know (yet), a provider call that raises or hangs longer than
`--cloud-call-timeout`, a provided IP the cloud does not know. Each failure also records a Warning event
FailedToInitializeNode on the Node (an mkpy addition: kube only logs), so `kubectl describe node` says why.

Every `--node-status-update-frequency` (300 s) `update_node_status` re-reads the addresses of every
initialized node from the cloud and patches them when they changed (kube's UpdateNodeStatus); a provider
failure there gets the Warning event FailedToUpdateNodeAddresses (an mkpy addition) and waits for the next
pass. The sync of an initialized node only keeps the GA labels equal to their beta twins.

A provider offering neither `instances_v2()` nor `instances()` has nothing to say about nodes: the controller
then logs that and does not run, as kube's cloud-controller-manager skips it.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import ipaddress
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from minikube_py.api.gofmt import go_quote
from minikube_py.ccm.cloud.interface import (
    CloudProviderError,
    InstanceMetadata,
    Instances,
    Interface,
    NodeAddress,
    Unimplemented,
    Zone,
    Zones,
)
from minikube_py.ccm.context import CloudControllerContext, cloud_call
from minikube_py.client import errors, resources
from minikube_py.client.clock import Clock
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.workqueue import RateLimitingQueue

UNINITIALIZED_TAINT_KEY = "node.cloudprovider.kubernetes.io/uninitialized"
PROVIDED_NODE_IP_ANNOTATION = "alpha.kubernetes.io/provided-node-ip"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_INSTANCE_TYPE_BETA = "beta.kubernetes.io/instance-type"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
# On initialized nodes the GA label follows its beta twin, the source of truth as in kube.
RECONCILED_LABELS = {LABEL_ZONE_BETA: LABEL_ZONE, LABEL_REGION_BETA: LABEL_REGION,
                     LABEL_INSTANCE_TYPE_BETA: LABEL_INSTANCE_TYPE}
KUBERNETES_LABEL_NAMESPACE = re.compile(r"(^|\.)(kubernetes|k8s)\.io/")
UPDATE_NODE_RETRIES = 5  # attempts at the initializing update, re-reading the node after each Conflict
FAILED_TO_INITIALIZE = "FailedToInitializeNode"  # mkpy's event reasons; kube only logs these failures
FAILED_TO_UPDATE_ADDRESSES = "FailedToUpdateNodeAddresses"

log = logging.getLogger(__name__)
T = TypeVar("T")


class CloudNodeController:
    name = "cloud-node-controller"

    def __init__(self, ctx: CloudControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.cloud = ctx.cloud
        self.settings = ctx.settings
        self.instances_v2 = ctx.cloud.instances_v2()
        self.instances = ctx.cloud.instances()
        self.enabled = self.instances_v2 is not None or self.instances is not None
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.queue = RateLimitingQueue(name="cloud_node", clock=ctx.clock)
        if self.enabled:
            self.nodes.add_event_handler(FuncHandler(on_add=self._enqueue,
                                                     on_update=lambda old, new: self._enqueue(new)))

    async def run(self, workers: int) -> None:
        if not self.enabled:
            log.warning("%s is off: the cloud provider does not support instances", self.name)
            return
        await self.nodes.wait_for_cache_sync()
        try:
            await asyncio.gather(
                run_workers(self.queue, self.sync, workers, name="cloud_node", logger=log),
                every(self.clock, self.settings.node_status_update_frequency, self.update_node_status))
        finally:
            self.queue.shut_down()

    def _enqueue(self, node: dict[str, Any], *_: Any) -> None:
        self.queue.add(node["metadata"]["name"])

    # sync: initialize a tainted node ---------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            return
        if not has_uninitialized_taint(node):
            await self.reconcile_node_labels(node)
            return
        try:
            metadata = await self.initialization_metadata(node)
        except Exception as error:  # whatever went wrong, the node stays tainted and is retried
            node_event(self.recorder, node, "Warning", FAILED_TO_INITIALIZE, str(error))
            raise
        updated = await self.update_initialized_node(node, metadata)
        log.info("initialized node %s with cloud provider", name)
        await self.update_node_address(updated, metadata.node_addresses)
        node_event(self.recorder, node, "Normal", "Synced", "Node synced successfully")

    async def initialization_metadata(self, node: dict[str, Any]) -> InstanceMetadata:
        """The instance's metadata, checked against the kubelet's provided node IP; errors in kube's words."""
        name = node["metadata"]["name"]
        try:
            metadata = await self.instance_metadata(node)
        except Exception as error:
            raise CloudProviderError(f"failed to get instance metadata for node {name}: {error}") from error
        try:
            addresses_from_node_ip(node, metadata.node_addresses)
        except ValueError as error:
            raise ValueError(f"failed to get node modifiers from cloud provider: provided node ip for node "
                             f"{go_quote(name)} is not valid: {error}") from None
        return metadata

    async def update_initialized_node(self, node: dict[str, Any], metadata: InstanceMetadata) -> dict[str, Any]:
        """PUT the node with the cloud's data and without the taint, re-reading it after each Conflict."""
        for _ in range(UPDATE_NODE_RETRIES - 1):
            try:
                return await self.client.update(resources.NODES, initialized(node, metadata))
            except errors.Conflict:
                node = await self.client.get(resources.NODES, node["metadata"]["name"])
        return await self.client.update(resources.NODES, initialized(node, metadata))

    async def reconcile_node_labels(self, node: dict[str, Any]) -> None:
        labels = node["metadata"].get("labels") or {}
        missing = {ga: labels[beta] for beta, ga in RECONCILED_LABELS.items()
                   if beta in labels and labels.get(ga) != labels[beta]}
        if missing:
            await self.client.patch(resources.NODES, node["metadata"]["name"], {"metadata": {"labels": missing}},
                                    patch_type="strategic")

    # the cloud's view of a node ----------------------------------------------------------------------------

    async def instance_metadata(self, node: dict[str, Any]) -> InstanceMetadata:
        """What the cloud says about the node's instance (kube's getInstanceMetadata)."""
        name = node["metadata"]["name"]
        provider_id = (node.get("spec") or {}).get("providerID", "")
        if self.instances_v2 is not None:
            metadata = await self._call(self.instances_v2.instance_metadata(node), f"instance_metadata({name})")
            if metadata.provider_id:
                return metadata
            if not provider_id:
                raise CloudProviderError(f"cloud provider does not set node provider ID for node {name}")
            return dataclasses.replace(metadata, provider_id=provider_id)
        assert self.instances is not None
        if not provider_id:
            try:
                provider_id = await instance_provider_id(self.cloud, self.instances, name,
                                                         self.settings.cloud_call_timeout)
            except Unimplemented:  # a cloud without instance ids: the node is found by name
                log.warning("cloud provider does not set node provider ID, using node name to discover node %s",
                            name)
        addresses = await self._call(self.instances.node_addresses(name), f"node_addresses({name})")
        instance_type = await self._call(self.instances.instance_type(name), f"instance_type({name})")
        zones = self.cloud.zones()
        zone = await self._zone(zones, provider_id, name) if zones is not None else Zone("", "")
        return InstanceMetadata(provider_id=provider_id, instance_type=instance_type, node_addresses=addresses,
                                zone=zone.failure_domain, region=zone.region)

    async def _zone(self, zones: Zones, provider_id: str, name: str) -> Zone:
        by_provider_id: Exception = CloudProviderError("the node has no provider ID")
        if provider_id:
            try:
                return await self._call(zones.get_zone_by_provider_id(provider_id),
                                        f"get_zone_by_provider_id({provider_id})")
            except Exception as error:  # kube falls back to the node name
                by_provider_id = error
        try:
            return await self._call(zones.get_zone_by_node_name(name), f"get_zone_by_node_name({name})")
        except Exception as error:
            raise CloudProviderError(f"failed to get zone from cloud provider: Zone: Error fetching by providerID: "
                                     f"{by_provider_id} Error fetching by NodeName: {error}") from error

    async def cloud_node_addresses(self, node: dict[str, Any]) -> list[NodeAddress]:
        """Only the addresses: one call, whichever instances API the provider has."""
        name = node["metadata"]["name"]
        if self.instances_v2 is not None:
            metadata = await self._call(self.instances_v2.instance_metadata(node), f"instance_metadata({name})")
            return metadata.node_addresses
        assert self.instances is not None
        return await self._call(self.instances.node_addresses(name), f"node_addresses({name})")

    async def _call(self, call: Awaitable[T], what: str) -> T:
        return await cloud_call(call, self.settings.cloud_call_timeout, what)

    # addresses ---------------------------------------------------------------------------------------------

    async def update_node_status(self) -> None:
        """One pass over the initialized nodes, refreshing their addresses from the cloud."""
        for node in self.nodes.lister().list():
            if has_uninitialized_taint(node):
                continue  # sync initializes it
            try:
                addresses = await self.cloud_node_addresses(node)
            except Exception as error:  # the next pass asks again
                name = node["metadata"]["name"]
                log.error("error getting the cloud addresses of node %s: %s", name, error)
                node_event(self.recorder, node, "Warning", FAILED_TO_UPDATE_ADDRESSES,
                           f"failed to get the addresses of node {name} from the cloud provider: {error}")
                continue
            await self.update_node_address(node, addresses)

    async def update_node_address(self, node: dict[str, Any], cloud_addresses: list[NodeAddress]) -> None:
        """Patch `status.addresses` to the cloud's when they differ (kube's updateNodeAddress); errors are logged."""
        name = node["metadata"]["name"]
        if not cloud_addresses:
            return
        current = (node.get("status") or {}).get("addresses") or []
        addresses = [dict(address) for address in cloud_addresses]
        if not any(address["type"] == "Hostname" for address in addresses):
            addresses += [address for address in current if address.get("type") == "Hostname"]
        try:
            addresses = addresses_from_node_ip(node, addresses)
        except ValueError as error:
            log.error("failed to update node addresses for node %s: %s", name, error)
            return
        if not addresses_changed(current, addresses):
            return
        # the list merges by "type", yet two addresses may share a type: the patch replaces the whole list
        patch = {"status": {"addresses": [*addresses, {"$patch": "replace"}]}}
        try:
            await self.client.patch(resources.NODES, name, patch, patch_type="strategic", subresource="status")
        except errors.APIStatusError as error:
            log.error("error patching node %s with cloud ip addresses: %s", name, error)


def initialized(node: dict[str, Any], metadata: InstanceMetadata) -> dict[str, Any]:
    """A copy of `node` with the cloud's providerID and labels and without the uninitialized taint."""
    node = copy.deepcopy(node)
    spec = node.setdefault("spec", {})
    labels = node["metadata"].setdefault("labels", {})
    if not spec.get("providerID") and metadata.provider_id:
        spec["providerID"] = metadata.provider_id
    for value, keys in ((metadata.instance_type, (LABEL_INSTANCE_TYPE_BETA, LABEL_INSTANCE_TYPE)),
                        (metadata.zone, (LABEL_ZONE_BETA, LABEL_ZONE)),
                        (metadata.region, (LABEL_REGION_BETA, LABEL_REGION))):
        if value:
            labels.update(dict.fromkeys(keys, value))
    for key, value in metadata.additional_labels.items():
        if KUBERNETES_LABEL_NAMESPACE.search(key):
            log.warning("discarding node label %s with kubernetes namespace", key)
        elif key not in labels:
            labels[key] = value
    taints = [taint for taint in spec.get("taints") or [] if taint.get("key") != UNINITIALIZED_TAINT_KEY]
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)  # as kube's JSON (omitempty): no `taints: []` left behind
    return node


def has_uninitialized_taint(node: dict[str, Any]) -> bool:
    return any(taint.get("key") == UNINITIALIZED_TAINT_KEY for taint in (node.get("spec") or {}).get("taints") or [])


def addresses_from_node_ip(node: dict[str, Any], addresses: list[NodeAddress]) -> list[NodeAddress]:
    """The cloud's addresses ordered by the kubelet's provided node IP(s), if the node has the annotation:
    each provided IP first and the only address of its type. ValueError when the annotation is malformed or
    names an IP the cloud does not list."""
    provided = (node["metadata"].get("annotations") or {}).get(PROVIDED_NODE_IP_ANNOTATION)
    if provided is None:
        return addresses
    try:
        node_ips = parse_node_ip_annotation(provided)
    except ValueError as error:
        raise ValueError(f"failed to parse node IP {go_quote(provided)}: {error}") from None
    enforced: list[NodeAddress] = []
    for node_ip in node_ips:
        matching = [address for address in addresses if _ip(address["address"]) == node_ip]
        if not matching:
            raise ValueError(f"failed to get node address from cloud provider that matches ip: {node_ip}")
        enforced += matching
    enforced_types = {address["type"] for address in enforced}
    return enforced + [address for address in addresses if address["type"] not in enforced_types]


def parse_node_ip_annotation(value: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """One IP, or a dual-stack pair "IPv4,IPv6" (either order), as the kubelet writes it."""
    node_ips = []
    for part in value.split(","):
        parsed = _ip(part)
        if parsed is None:
            raise ValueError(f"could not parse {go_quote(part)}")
        node_ips.append(parsed)
    if len(node_ips) > 2 or (len(node_ips) == 2 and node_ips[0].version == node_ips[1].version):
        raise ValueError("must contain either a single IP or a dual-stack pair of IPs")
    if len(node_ips) == 2 and any(ip.is_unspecified for ip in node_ips):
        raise ValueError("dual-stack node IP cannot include '0.0.0.0' or '::'")
    return node_ips


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def addresses_changed(old: list[NodeAddress], new: list[NodeAddress]) -> bool:
    """kube's nodeAddressesChangeDetected: another count, or an address of some type that differs."""
    if len(old) != len(new):
        return True
    by_type = {address.get("type"): address.get("address") for address in old}
    return any(by_type.get(address["type"]) != address["address"] for address in new)


# shared with the cloud-node-lifecycle controller ---------------------------------------------------------

async def instance_provider_id(cloud: Interface, instances: Instances, name: str, timeout: float) -> str:
    """"<provider>://<instance id>" from the name-based Instances (kube's GetInstanceProviderID)."""
    instance_id = await cloud_call(instances.instance_id(name), timeout, f"instance_id({name})")
    return f"{cloud.provider_name()}://{instance_id}"


def node_event(recorder: Any, node: dict[str, Any], type: str, reason: str, message: str) -> None:
    meta = node["metadata"]
    recorder.event({"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta.get("uid", "")},
                   type, reason, message)


async def every(clock: Clock, period: float, job: Callable[[], Awaitable[None]]) -> None:
    """Run `job` now and then every `period` seconds on `clock` (kube's wait.Until); a failed run is logged
    and the next one comes on time."""
    while True:
        try:
            await job()
        except Exception as error:  # a failed pass is retried next period, never fatal
            log.error("%s failed: %s", job.__name__, error, exc_info=error)
        await clock.sleep(period)

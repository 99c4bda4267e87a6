"""The cloud-node-lifecycle controller (kube's `cloud-provider/controllers/nodelifecycle`): asks the cloud
about nodes that stopped reporting, and deletes those whose VM is gone.

The kube-controller-manager's node lifecycle controller sees that a node stopped reporting (its Ready
condition goes False or Unknown) but cannot tell why: the VM may be rebooting, cut off from the network,
stopped, or deleted for good. Only the cloud knows, so every `--node-monitor-period` (5 s) this controller
makes one pass over the nodes in its informer cache (kube's MonitorNodes):
* Ready is True → the node loses the taint `node.cloudprovider.kubernetes.io/shutdown:NoSchedule`, if it has it;
* otherwise the provider is asked whether the node's instance still exists (`InstancesV2.instance_exists`, or
  `Instances.instance_exists_by_provider_id`). If it does not, the Node is deleted, with the event
  DeletingNode "Deleting node NAME because it does not exist in the cloud provider" (and DeletingNodeFailed
  when the delete fails): its pods are then garbage-collected and rescheduled at once instead of waiting
  out the eviction timeouts;
* if it exists but the cloud says it is shut down (`instance_shutdown`), the node gets the shutdown taint, so
  no new pods are placed there until it is Ready again. A NotReady node whose instance runs keeps whatever
  taints it has, as in kube: only Ready removes the shutdown taint.

A provider that raises or hangs (longer than `--cloud-call-timeout`) for one node is logged and reported with
the Warning event FailedToCheckNodeInstance on that node (an mkpy addition: kube only logs); the pass goes on
with the other nodes and the next pass asks again. A provider with only the name-based `Instances` is asked
by providerID, derived from the instance id when the node has none; an instance the cloud cannot find by
name counts as gone, an `Unimplemented` shutdown check as "not shut down".

Taints are written as kube's taint helpers do: a strategic merge patch of the whole `spec.taints` list (it
has no merge key) carrying the resourceVersion it was computed from, so a concurrent change is a Conflict;
the node is then read again and the patch recomputed, up to TAINT_UPDATE_RETRIES times.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from minikube_py.api.taints import NO_SCHEDULE
from minikube_py.ccm.cloud.interface import InstanceNotFound, Unimplemented
from minikube_py.ccm.context import CloudControllerContext, cloud_call
from minikube_py.ccm.controllers.node import every, instance_provider_id, node_event
from minikube_py.client import errors, resources

SHUTDOWN_TAINT = {"key": "node.cloudprovider.kubernetes.io/shutdown", "effect": NO_SCHEDULE}
DELETE_NODE_EVENT = "DeletingNode"
DELETE_NODE_FAILED_EVENT = "DeletingNodeFailed"
FAILED_TO_CHECK_INSTANCE = "FailedToCheckNodeInstance"  # mkpy's; kube only logs
TAINT_UPDATE_RETRIES = 5

log = logging.getLogger(__name__)
T = TypeVar("T")
Taints = list[dict[str, Any]]


class CloudNodeLifecycleController:
    name = "cloud-node-lifecycle-controller"

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

    async def run(self, workers: int) -> None:
        if not self.enabled:
            log.warning("%s is off: the cloud provider does not support instances", self.name)
            return
        await self.nodes.wait_for_cache_sync()
        await every(self.clock, self.settings.node_monitor_period, self.monitor_nodes)

    async def monitor_nodes(self) -> None:
        """One pass over every node in the cache."""
        for node in self.nodes.lister().list():
            await self.monitor_node(node)

    async def monitor_node(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        if ready_status(node) == "True":
            await self.remove_shutdown_taint(node)
            return
        try:
            exists = await self.instance_exists(node)
        except Exception as error:  # this node waits for the next pass; the others go on
            self._report(node, f"error checking if node {name} exists: {error}")
            return
        if not exists:
            await self.delete_node(node)
            return
        try:
            shutdown = await self.instance_shutdown(node)
        except Exception as error:
            self._report(node, f"error checking if node {name} is shutdown: {error}")
            return
        if shutdown:
            await self.add_shutdown_taint(node)

    def _report(self, node: dict[str, Any], message: str) -> None:
        log.error("%s", message)
        node_event(self.recorder, node, "Warning", FAILED_TO_CHECK_INSTANCE, message)

    async def delete_node(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        log.info("deleting node since it is no longer present in cloud provider: %s", name)
        node_event(self.recorder, node, "Normal", DELETE_NODE_EVENT,
                   f"Deleting node {name} because it does not exist in the cloud provider")
        try:
            await self.client.delete(resources.NODES, name)
        except errors.APIStatusError as error:
            log.error("unable to delete node %s: %s", name, error)
            node_event(self.recorder, node, "Warning", DELETE_NODE_FAILED_EVENT, f"Failed deleting node {name}: {error}")

    # the cloud's answers -------------------------------------------------------------------------------

    async def instance_exists(self, node: dict[str, Any]) -> bool:
        name = node["metadata"]["name"]
        if self.instances_v2 is not None:
            return await self._call(self.instances_v2.instance_exists(node), f"instance_exists({name})")
        assert self.instances is not None
        try:
            provider_id = await self.provider_id(node)
        except InstanceNotFound:
            return False
        return await self._call(self.instances.instance_exists_by_provider_id(provider_id),
                                f"instance_exists_by_provider_id({provider_id})")

    async def instance_shutdown(self, node: dict[str, Any]) -> bool:
        name = node["metadata"]["name"]
        if self.instances_v2 is not None:
            return await self._call(self.instances_v2.instance_shutdown(node), f"instance_shutdown({name})")
        assert self.instances is not None
        try:
            provider_id = await self.provider_id(node)
        except InstanceNotFound:
            return False
        try:
            return await self._call(self.instances.instance_shutdown_by_provider_id(provider_id),
                                    f"instance_shutdown_by_provider_id({provider_id})")
        except Unimplemented:
            return False

    async def provider_id(self, node: dict[str, Any]) -> str:
        """The node's providerID, or, when it has none yet, one made from the cloud's instance id."""
        provider_id: str = (node.get("spec") or {}).get("providerID", "")
        if provider_id:
            return provider_id
        assert self.instances is not None
        return await instance_provider_id(self.cloud, self.instances, node["metadata"]["name"],
                                          self.settings.cloud_call_timeout)

    async def _call(self, call: Awaitable[T], what: str) -> T:
        return await cloud_call(call, self.settings.cloud_call_timeout, what)

    # the shutdown taint ----------------------------------------------------------------------------------

    async def add_shutdown_taint(self, node: dict[str, Any]) -> None:
        await self._patch_taints(node, with_shutdown_taint, "failed to apply shutdown taint to node %s, "
                                                            "it may have been deleted: %s")

    async def remove_shutdown_taint(self, node: dict[str, Any]) -> None:
        await self._patch_taints(node, without_shutdown_taint, "error patching node %s taints: %s")

    async def _patch_taints(self, node: dict[str, Any], change: Callable[[Taints], Taints], failure: str) -> None:
        """Write `change(taints)` unless it is no change, from the cached node first, then from fresh reads."""
        name = node["metadata"]["name"]
        try:
            for attempt in range(1, TAINT_UPDATE_RETRIES + 1):
                taints = (node.get("spec") or {}).get("taints") or []
                wanted = change(taints)
                if wanted == taints:
                    return
                patch = {"metadata": {"resourceVersion": node["metadata"].get("resourceVersion", "")},
                         "spec": {"taints": wanted}}
                try:
                    await self.client.patch(resources.NODES, name, patch, patch_type="strategic")
                    return
                except errors.Conflict:
                    if attempt == TAINT_UPDATE_RETRIES:
                        raise
                node = await self.client.get(resources.NODES, name)
        except errors.APIStatusError as error:
            log.error(failure, name, error)


def ready_status(node: dict[str, Any]) -> str:
    """The status of the node's Ready condition: "True", "False", or "Unknown" (also when there is none)."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status", "Unknown"))
    return "Unknown"


def _is_shutdown_taint(taint: dict[str, Any]) -> bool:
    return taint.get("key") == SHUTDOWN_TAINT["key"] and taint.get("effect") == SHUTDOWN_TAINT["effect"]


def with_shutdown_taint(taints: Taints) -> Taints:
    """The taints with the shutdown taint: in place of one with its key and effect, else appended."""
    if SHUTDOWN_TAINT in taints:
        return taints
    if any(_is_shutdown_taint(taint) for taint in taints):
        return [dict(SHUTDOWN_TAINT) if _is_shutdown_taint(taint) else taint for taint in taints]
    return [*taints, dict(SHUTDOWN_TAINT)]


def without_shutdown_taint(taints: Taints) -> Taints:
    return [taint for taint in taints if not _is_shutdown_taint(taint)]

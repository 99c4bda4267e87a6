"""The node IPAM controller (kube's `nodeipam` with the RangeAllocator): gives every node a pod CIDR.

With `--allocate-node-cidrs` the cluster's pod range (`--cluster-cidr`, e.g. 10.244.0.0/16) is cut into node
CIDRs of `--node-cidr-mask-size` (/24: 254 pods a node), and each Node without `spec.podCIDR` gets the next
free one, patched into `spec.podCIDR` and `spec.podCIDRs`. The kubelet (or the network plugin) then hands
the node's pods addresses from it. With two cluster CIDRs, one IPv4 and one IPv6 (dual-stack), a node gets
one of each; IPv6 node CIDRs are /64.

Which CIDRs are taken lives only in memory (cidrset.py), rebuilt from the Nodes themselves: before the
workers start, every podCIDR already on a Node is marked used, so a restarted controller never hands out a
CIDR twice. A deleted Node's CIDRs are released at once by the delete handler.

Handlers only enqueue node names (a node added, or changed while it still has no podCIDR); `sync(name)`
occupies the CIDRs a node already has or allocates new ones. When the range is exhausted the node gets the
event CIDRNotAvailable and the key is retried with the queue's exponential backoff, so a full range costs
a few requests an hour, not a loop. A podCIDR outside the cluster CIDR cannot be tracked: the node gets a
Warning event InvalidPodCIDR (an mkpy addition; kube only logs) and is otherwise left alone.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext, ControllerSettings
from minikube_py.kcm.controllers.cidrset import CIDRSet, CIDRSetError, Network

IPV6_NODE_MASK_SIZE = 64
CIDR_UPDATE_RETRIES = 3

log = logging.getLogger(__name__)


def cluster_cidr_sets(settings: ControllerSettings) -> list[CIDRSet]:
    """One CIDRSet per cluster CIDR in `--cluster-cidr`; ValueError with kube's wording when it is unusable."""
    specs = [spec.strip() for spec in settings.cluster_cidr.split(",") if spec.strip()]
    if not specs:
        raise ValueError("--cluster-cidr must be set when --allocate-node-cidrs is true")
    try:
        cidrs = [ipaddress.ip_network(spec) for spec in specs]
    except ValueError as error:
        raise ValueError(f"--cluster-cidr: {error}") from None
    if len(cidrs) > 2:
        raise ValueError(f"len of clusters cidrs is:{len(cidrs)} > more than max allowed of 2")
    if len(cidrs) == 2 and cidrs[0].version == cidrs[1].version:
        raise ValueError("cluster cidrs must be dual-stack: one IPv4 and one IPv6")
    return [CIDRSet(cidr, settings.node_cidr_mask_size if cidr.version == 4 else IPV6_NODE_MASK_SIZE)
            for cidr in cidrs]


class NodeIpamController:
    name = "node-ipam-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.enabled = ctx.settings.allocate_node_cidrs
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.queue = RateLimitingQueue(name="node_ipam", clock=ctx.clock)
        self.cidr_sets = cluster_cidr_sets(ctx.settings) if self.enabled else []
        if self.enabled:
            self.nodes.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=self._node_updated,
                                                     on_delete=self._node_deleted))

    async def run(self, workers: int) -> None:
        if not self.enabled:
            log.info("%s is off: --allocate-node-cidrs is false", self.name)
            return
        await self.nodes.wait_for_cache_sync()
        self.occupy_existing()
        try:
            await run_workers(self.queue, self.sync, workers, name="node_ipam", logger=log)
        finally:
            self.queue.shut_down()

    def occupy_existing(self) -> None:
        """Mark every CIDR the nodes already have, before any allocation: a restart must not hand them out again."""
        for node in self.nodes.lister().list():
            try:
                self.occupy(node)
            except CIDRSetError:
                pass  # reported by the node's sync

    def _enqueue(self, node: dict[str, Any], *_: Any) -> None:
        self.queue.add(node["metadata"]["name"])

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not _pod_cidrs(new):
            self._enqueue(new)

    def _node_deleted(self, node: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        obj = node.obj if isinstance(node, DeletedFinalStateUnknown) else node
        try:
            self.release(obj)
        except CIDRSetError as error:
            log.warning("node %s: %s", obj["metadata"]["name"], error)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        node = self.nodes.indexer.get_by_key(name)
        if node is None or node["metadata"].get("deletionTimestamp"):
            return
        if _pod_cidrs(node):
            try:
                self.occupy(node)
            except CIDRSetError as error:
                log.warning("node %s: %s", name, error)
                self._event(node, "Warning", "InvalidPodCIDR", f"Node {name} pod CIDRs are not tracked: {error}")
            return
        allocated: list[Network] = []
        for cidr_set in self.cidr_sets:
            try:
                allocated.append(cidr_set.allocate_next())
            except CIDRSetError:
                self._release_reserved(allocated)
                self._event(node, "Normal", "CIDRNotAvailable", f"Node {name} status is now: CIDRNotAvailable")
                raise
        await self.update_cidrs_allocation(name, allocated)

    async def update_cidrs_allocation(self, name: str, allocated: list[Network]) -> None:
        """Patch the reserved CIDRs into the node, unless it got CIDRs meanwhile (then give ours back)."""
        cidrs = [str(cidr) for cidr in allocated]
        node = self.nodes.indexer.get_by_key(name)
        current = _pod_cidrs(node) if node is not None else []
        if node is None or current:
            if current != cidrs:
                self._release_reserved(allocated)
            return
        failure: errors.APIStatusError | None = None
        for _ in range(CIDR_UPDATE_RETRIES):
            try:
                await self.client.patch(resources.NODES, name, {"spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs}},
                                        patch_type="strategic")
                log.info("node %s: podCIDRs %s", name, ",".join(cidrs))
                return
            except errors.APIStatusError as error:
                failure = error
        self._event(node, "Normal", "CIDRAssignmentFailed", f"Node {name} status is now: CIDRAssignmentFailed")
        if not isinstance(failure, errors.ServerTimeout):  # after a timeout the patch may yet have been applied
            self._release_reserved(allocated)
        assert failure is not None
        raise failure

    def occupy(self, node: dict[str, Any]) -> None:
        for cidr_set, cidr in self._tracked(node):
            cidr_set.occupy(cidr)

    def release(self, node: dict[str, Any]) -> None:
        for cidr_set, cidr in self._tracked(node):
            cidr_set.release(cidr)

    def _tracked(self, node: dict[str, Any]) -> list[tuple[CIDRSet, Network]]:
        """The node's pod CIDRs paired with the cluster CIDR each belongs to (in order, as kube)."""
        cidrs = _pod_cidrs(node)
        if len(cidrs) > len(self.cidr_sets):
            raise CIDRSetError(f"has {len(cidrs)} pod CIDRs but the cluster has {len(self.cidr_sets)} cluster CIDRs")
        try:
            return [(cidr_set, ipaddress.ip_network(cidr)) for cidr_set, cidr in zip(self.cidr_sets, cidrs, strict=False)]
        except ValueError as error:
            raise CIDRSetError(str(error)) from None

    def _release_reserved(self, allocated: list[Network]) -> None:
        for cidr_set, cidr in zip(self.cidr_sets, allocated, strict=False):
            cidr_set.release(cidr)

    def _event(self, node: dict[str, Any], type: str, reason: str, message: str) -> None:
        meta = node["metadata"]
        self.recorder.event({"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta.get("uid", "")},
                            type, reason, message)


def _pod_cidrs(node: dict[str, Any]) -> list[str]:
    spec = node.get("spec") or {}
    return list(spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []))

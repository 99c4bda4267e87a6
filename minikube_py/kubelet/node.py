"""Registering the Node and keeping it alive: the Node's status and the node Lease (kube's
`kubelet_node_status.go` and `nodelease` controller).

Two heartbeats, as in kube since 1.17:

* the **Lease** `kube-node-lease/<node>` is renewed every `lease duration / 4` (10 s): a cheap write the node
  lifecycle controller watches to tell a live node from a dead one;
* the **Node status** is computed every `--node-status-update-frequency` (10 s) and patched only when it
  differs from the Node the apiserver holds, or when `--node-status-report-frequency` (1 min) has passed since
  the last report.

"The Node the apiserver holds" comes from a watch on this one Node (an informer with the field selector
`metadata.name=<node>`, as kube's kubelet has), not from the kubelet's memory of its last report: when the node
lifecycle controller marked the conditions Unknown while the kubelet was stopped or slow, the next tick sees the
difference and reports Ready again, instead of waiting for the periodic report. Watching costs nothing while
the Node does not change, where reading it every tick would cost a request per node every 10 s.

The status is sent as a strategic merge patch of `nodes/status`, as kube's kubelet sends it (kube computes a
two-way patch from the Node it read to the one it wants; the effect on the fields the kubelet writes is the same).
A JSON merge patch would replace the `conditions` list whole and so wipe the conditions other writers own, such
as the route controller's `NetworkUnavailable`; a strategic merge patch merges `conditions` by `type`, so the
kubelet sends only its own four and the others stay. It also needs no read-modify-write: carrying the others'
conditions over from the watched Node would lose one written between that read and the patch.

The Node also carries the node's pod CIDRs (`spec.podCIDRs`), written by the controller manager's node-ipam
controller soon after the Node is created; the kubelet never writes them. It passes them on to the container
runtime (CRI UpdateRuntimeConfig, the CIDRs joined by ","), which sets up its pod network from them
(containerd renders its CNI config; until then it reports NetworkReady=false and the Node is not Ready).
It does so whenever they differ from what it last passed on, checked on every status tick and at once when
the watch sees them change, then reports the status at once: a new node turns Ready as soon as it has its
CIDR, not a tick later. `--pod-cidr` is only a start value: passed on at registration, and until the Node has
CIDRs of its own. One mkpy addition: while the runtime says its network is not ready, the CIDRs are passed on
again at each tick, because a fake runtime that restarted lost them (containerd ignores the repeat).

Usage rules: `register()` returns once the Node exists (created by this kubelet or adopted from an earlier run of
it; labels the kubelet owns are reconciled then); `run()` keeps both heartbeats going until cancelled. API errors
in a heartbeat are logged and retried on the next tick; they never stop the kubelet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from minikube_py.api.timestamps import micro_time_string, time_string
from minikube_py.client import errors as api_errors
from minikube_py.client import resources
from minikube_py.client.informer import FuncHandler, SharedIndexInformer
from minikube_py.client.rest import RESTClient
from minikube_py.kubelet import nodestatus
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri.errors import CRIError

log = logging.getLogger("mkpy.kubelet.node")

NODE_LEASE_NAMESPACE = "kube-node-lease"
REGISTER_RETRY = 1.0  # seconds between attempts to register (kube starts at 100 ms and backs off to 7 s)


class NodeAgent:
    """One node's registration, status and Lease. `observe` gathers what the status is computed from;
    `update_pod_cidr` passes the node's pod CIDRs on to the runtime (CRI UpdateRuntimeConfig)."""

    def __init__(self, client: RESTClient, config: KubeletConfig,
                 observe: Callable[[], Awaitable[nodestatus.Observed]],
                 update_pod_cidr: Callable[[str], Awaitable[None]],
                 event: Callable[[str, str, str], None] = lambda type, reason, message: None) -> None:
        self._client = client
        self._config = config
        self._observe = observe
        self._update_pod_cidr = update_pod_cidr
        self._event = event  # (type, reason, message) about the Node: NodeReady, NodeHasSufficientMemory, ...
        self.machine = nodestatus.machine_info(config)
        self._written: dict[str, Any] | None = None  # the Node as our last write returned it
        self._reported_at = 0.0
        self.pod_cidr = ""  # what the runtime was last given
        self._pod_cidr_changed = asyncio.Event()  # the watch saw CIDRs other than pod_cidr: tick now
        self.node_uid = ""
        # this Node as the apiserver holds it; started by run(), filled by the tests of update_status
        self.informer = SharedIndexInformer(client, resources.NODES, field_selector=f"metadata.name={self.name}")
        self.informer.add_event_handler(FuncHandler(on_add=self._node_changed,
                                                    on_update=lambda old, new: self._node_changed(new)))

    @property
    def name(self) -> str:
        return self._config.node_name

    async def register(self) -> dict[str, Any]:
        """Create the Node, or adopt the one a previous run of this kubelet created."""
        while True:
            observed, _ = await self._observe_and_pass_pod_cidr()
            node = nodestatus.initial_node(self._config, self.machine, observed, time_string())
            try:
                created = await self._client.create(resources.NODES, node)
                log.info("registered node %s", self.name)
                self._condition_events(None, created.get("status") or {})
                return self._remember(created)
            except api_errors.AlreadyExists:
                try:
                    return self._remember(await self._reconcile_existing(node))
                except api_errors.APIStatusError as error:
                    log.warning("cannot update the existing node %s: %s", self.name, error)
            except (api_errors.APIStatusError, OSError) as error:
                log.warning("cannot register node %s: %s; retrying", self.name, error)
            await asyncio.sleep(REGISTER_RETRY)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.informer.run())
            group.create_task(self._status_loop())
            group.create_task(self._lease_loop())

    async def update_status(self, force: bool = False) -> bool:
        """Compute the status and patch it if the apiserver's copy differs (or `force`, or a report is due);
        whether it patched. New pod CIDRs are passed on to the runtime first, and then always reported."""
        observed, cidr_changed = await self._observe_and_pass_pod_cidr()
        current = self._current_status()
        status = nodestatus.node_status(self._config, self.machine, observed, current, time_string())
        due = time.monotonic() - self._reported_at >= self._config.node_status_report_frequency
        if not (force or due or cidr_changed or nodestatus.status_changed(current, status)):
            return False
        # conditions and addresses merge by type, images are replaced whole (see the module docstring)
        node = await self._client.patch(resources.NODES, self.name, {"status": status}, patch_type="strategic",
                                        subresource="status")
        self._remember(node)
        self._condition_events(current, status)
        return True

    def _condition_events(self, previous: dict[str, Any] | None, status: dict[str, Any]) -> None:
        for reason in nodestatus.condition_events(previous, status):
            self._event("Normal", reason, f"Node {self.name} status is now: {reason}")

    async def _reconcile_existing(self, wanted: dict[str, Any]) -> dict[str, Any]:
        """Re-registration after a restart: keep the Node (its uid, what others set, its pod CIDRs) but bring the
        labels the kubelet owns and the provided-node-ip annotation up to date, as kube's
        `reconcileExistingNode` and status setters do (kube writes the annotation with its status patch; our
        `nodes/status` keeps only status, so it goes with this patch of the Node)."""
        existing = await self._client.get(resources.NODES, self.name)
        meta = existing.get("metadata") or {}
        labels = meta.get("labels") or {}
        patch: dict[str, Any] = {}
        wanted_labels = wanted["metadata"]["labels"]
        if any(labels.get(key) != value for key, value in wanted_labels.items()):
            patch["metadata"] = {"labels": wanted_labels}
        provided_ip = nodestatus.provided_node_ip(self._config) or None  # None removes a stale one
        if (meta.get("annotations") or {}).get(nodestatus.PROVIDED_NODE_IP_ANNOTATION) != provided_ip:
            patch.setdefault("metadata", {})["annotations"] = {nodestatus.PROVIDED_NODE_IP_ANNOTATION: provided_ip}
        if patch:
            existing = await self._client.patch(resources.NODES, self.name, patch)
        log.info("node %s was already registered; adopted it", self.name)
        return existing

    def _current_node(self) -> dict[str, Any] | None:
        """The Node as the watch last saw it (others write it too: the node lifecycle controller sets Unknown,
        node-ipam the pod CIDRs); before the watch has it, what our last write returned."""
        node = self.informer.indexer.get_by_key(self.name)
        return node if node is not None else self._written

    def _current_status(self) -> dict[str, Any] | None:
        node = self._current_node()
        return (node.get("status") or {}) if node is not None else None

    def _remember(self, node: dict[str, Any]) -> dict[str, Any]:
        self.node_uid = (node.get("metadata") or {}).get("uid", "")
        self._written = node
        self._reported_at = time.monotonic()
        return node

    # the pod CIDR ----------------------------------------------------------------------------------------

    def _wanted_pod_cidr(self, node: dict[str, Any] | None) -> str:
        """The Node's pod CIDRs joined by "," (kube's UpdateRuntimeConfig value), else the `--pod-cidr` start
        value."""
        spec = (node or {}).get("spec") or {}
        cidrs = spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
        return ",".join(cidrs) or self._config.pod_cidr

    def _node_changed(self, node: dict[str, Any], *_: Any) -> None:
        if self._wanted_pod_cidr(node) != self.pod_cidr:
            self._pod_cidr_changed.set()

    async def _observe_and_pass_pod_cidr(self) -> tuple[nodestatus.Observed, bool]:
        """What the status is computed from, after passing the pod CIDRs on to the runtime when they changed
        (or again while its network is not ready); whether they changed."""
        observed = await self._observe()
        wanted = self._wanted_pod_cidr(self._current_node())
        changed = wanted != self.pod_cidr
        if not wanted or (not changed and observed.network_ready):
            return observed, False
        try:
            await self._update_pod_cidr(wanted)
        except CRIError as error:
            log.warning("cannot pass the pod CIDR %s to the container runtime: %s", wanted, error)
            return observed, False
        if changed:
            log.info("node %s: pod CIDR %s passed to the container runtime (was %r)", self.name, wanted,
                     self.pod_cidr)
        self.pod_cidr = wanted
        return await self._observe(), changed  # the runtime's network may be ready now

    # heartbeats ------------------------------------------------------------------------------------------

    async def _status_loop(self) -> None:
        # at once, then every period: a kubelet restarted on an existing Node (its VM started again) must not
        # leave it NotReady for one more period; and at once when the watch sees new pod CIDRs
        while True:
            self._pod_cidr_changed.clear()
            try:
                await self.update_status()
            except (api_errors.APIStatusError, OSError) as error:
                log.warning("cannot update node status: %s", error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._pod_cidr_changed.wait(), self._config.node_status_update_frequency)

    async def _lease_loop(self) -> None:
        interval = self._config.node_lease_duration_seconds / 4
        while True:
            try:
                await self.renew_lease()
            except (api_errors.APIStatusError, OSError) as error:
                log.warning("cannot renew the node lease: %s", error)
            await asyncio.sleep(interval)

    async def renew_lease(self) -> dict[str, Any]:
        """Create or renew `kube-node-lease/<node>`, owned by the Node so it goes when the Node does."""
        spec = {"holderIdentity": self.name, "leaseDurationSeconds": self._config.node_lease_duration_seconds,
                "renewTime": micro_time_string()}
        try:
            return await self._client.patch(resources.LEASES, self.name, {"spec": spec}, NODE_LEASE_NAMESPACE)
        except api_errors.NotFound:
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": self.name, "namespace": NODE_LEASE_NAMESPACE,
                                  "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.name,
                                                       "uid": self.node_uid}]},
                     "spec": spec}
            return await self._client.create(resources.LEASES, lease, NODE_LEASE_NAMESPACE)

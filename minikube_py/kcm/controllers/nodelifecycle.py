"""The node lifecycle controller (kube's `nodelifecycle`): tells live nodes from dead ones and says so on the Node.

A kubelet proves it is alive two ways: it renews its Lease `kube-node-lease/<node>` (every 10 s) and it reports
the Node's status, whose `Ready` condition carries a `lastHeartbeatTime`. This controller never trusts those
timestamps (the node's clock may be off): it notes, on its own clock, *when it saw* either of them change
(the node's "probe timestamp").

Every `node_monitor_period` (5 s) `monitor_node_health` looks at every node:
* silent for longer than `node_monitor_grace_period` (50 s; `node_startup_grace_period`, 60 s, for a node
  that never reported) → its Ready, MemoryPressure, DiskPressure and PIDPressure conditions become `Unknown`,
  reason `NodeStatusUnknown`, "Kubelet stopped posting node status." (`NodeStatusNeverUpdated` when absent);
* when Ready leaves True: an event NodeNotReady on the Node, and every pod on it gets its own `Ready`
  condition set False, with a Warning event NodeNotReady "Node is not ready" on the pod;
* a node whose Ready is False or Unknown is queued for the NoExecute taint `node.kubernetes.io/not-ready` or
  `node.kubernetes.io/unreachable` (with `timeAdded`); the taint-eviction controller (tainteviction.py) then
  evicts the pods that do not tolerate it. A Ready node loses both taints at once.

Tainting NoExecute is what costs pods, so it is rate-limited per zone (`topology.kubernetes.io/zone`): a
`RateLimitedTimedQueue` per zone lets `node_eviction_rate` (0.1) nodes per second through, checked every
100 ms. Each zone has a state computed from its nodes' Ready conditions: Normal; PartialDisruption (more
than 2 nodes and at least `unhealthy_zone_threshold`, 55 %, not ready: tainting slows to
`secondary_node_eviction_rate` in zones larger than `large_cluster_size_threshold`, stops in smaller ones);
FullDisruption (no Ready node). When *every* zone is fully disrupted the problem is most likely the control
plane's own network, not the nodes: all NoExecute taints are removed and nothing is tainted until a node
answers again ("master disruption mode").

Separately, every change of a Node is queued for `sync(name)`, kube's "taint nodes by condition": the
NoSchedule taints not-ready / unreachable / memory-pressure / disk-pressure / pid-pressure /
network-unavailable follow the conditions, `node.kubernetes.io/unschedulable` follows `spec.unschedulable`
(kubectl cordon), so the scheduler sees them; the beta os/arch labels are kept equal to the stable ones.
A pod newly bound to a node that is not Ready is marked not ready by `sync_pod`.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from minikube_py.api.timestamps import parse_time, time_string
from minikube_py.client import errors, resources
from minikube_py.client.clock import Clock
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext

NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_EVICTION_PERIOD = 0.1  # seconds between passes over the zones' taint queues
NODE_HEALTH_UPDATE_RETRY = 5  # attempts at writing a node's Unknown status, re-reading it after a conflict
TAINT_UPDATE_RETRY = 5  # attempts at patching a node's taints
EVICTION_BURST = 1
NODE_NAME_INDEX = "spec.nodeName"

READY, UNKNOWN = "Ready", "Unknown"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_NO_EXECUTE = {"key": NOT_READY_TAINT, "effect": "NoExecute"}
UNREACHABLE_NO_EXECUTE = {"key": UNREACHABLE_TAINT, "effect": "NoExecute"}
# (condition type, status) -> the NoSchedule taint the condition puts on the node
CONDITION_TAINTS = {
    (READY, "False"): NOT_READY_TAINT,
    (READY, UNKNOWN): UNREACHABLE_TAINT,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
CONDITION_TAINT_KEYS = {*CONDITION_TAINTS.values(), UNSCHEDULABLE_TAINT}
# NetworkUnavailable is left alone: the network plugin, not the kubelet, reports it
KUBELET_CONDITIONS = (READY, "MemoryPressure", "DiskPressure", "PIDPressure")
RECONCILED_LABELS = (("kubernetes.io/os", "beta.kubernetes.io/os"), ("kubernetes.io/arch", "beta.kubernetes.io/arch"))
EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
INITIAL, NORMAL, PARTIAL_DISRUPTION, FULL_DISRUPTION = "Initial", "Normal", "PartialDisruption", "FullDisruption"

log = logging.getLogger(__name__)


@dataclass
class NodeHealth:
    """What the controller last saw of a node, with the times it saw it on its own clock."""

    probe_timestamp: datetime  # when the node last showed a sign of life
    ready_transition_timestamp: datetime
    status: dict[str, Any]  # the cached node's status (never changed in place)
    lease_renew_time: datetime | None = None


class NodeLifecycleController:
    name = "node-lifecycle-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.settings = ctx.settings
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.leases = ctx.informers.informer_for(resources.LEASES, namespace=NODE_LEASE_NAMESPACE)
        self.pods = ctx.informers.informer_for(resources.PODS, indexers={NODE_NAME_INDEX: pod_node_name_index})
        self.node_queue = RateLimitingQueue(name="node_lifecycle_controller", clock=ctx.clock)
        self.pod_queue = RateLimitingQueue(name="node_lifecycle_controller_pods", clock=ctx.clock)
        self.health: dict[str, NodeHealth] = {}
        self.known_nodes: dict[str, dict[str, Any]] = {}
        self.zone_states: dict[str, str] = {}
        self.zone_tainters: dict[str, RateLimitedTimedQueue] = {}
        self.nodes_to_retry: set[str] = set()  # nodes whose pods could not all be marked not ready
        self.nodes.add_event_handler(FuncHandler(on_add=self._node_changed, on_update=lambda _, new: self._node_changed(new),
                                                 on_delete=self._node_deleted))
        self.pods.add_event_handler(FuncHandler(on_add=lambda pod, *_: self._pod_changed(None, pod),
                                                on_update=self._pod_changed))

    async def run(self, workers: int = 1) -> None:
        await asyncio.gather(self.nodes.wait_for_cache_sync(), self.leases.wait_for_cache_sync(),
                             self.pods.wait_for_cache_sync())
        try:
            await asyncio.gather(
                run_workers(self.node_queue, self.sync, workers, name="node_lifecycle_controller", logger=log),
                run_workers(self.pod_queue, self.sync_pod, workers, name="node_lifecycle_controller_pods", logger=log),
                self._every(self.settings.node_monitor_period, self.monitor_node_health),
                self._every(NODE_EVICTION_PERIOD, self.do_no_execute_tainting_pass))
        finally:
            self.node_queue.shut_down()
            self.pod_queue.shut_down()

    async def _every(self, period: float, job: Callable[[], Awaitable[None]]) -> None:
        while True:
            try:
                await job()
            except Exception as err:  # a failed pass is retried next period, never fatal
                log.error("%s failed: %s", job.__name__, err, exc_info=err)
            await self.clock.sleep(period)

    # event handlers: only keys go on the queues ----------------------------------------------------------

    def _node_changed(self, node: dict[str, Any], *_: Any) -> None:
        self.node_queue.add(node["metadata"]["name"])

    def _node_deleted(self, node: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        obj = node.obj if isinstance(node, DeletedFinalStateUnknown) else node
        self.nodes_to_retry.discard(obj["metadata"]["name"])

    def _pod_changed(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        node_name = _node_name(new)
        if node_name and (old is None or _node_name(old) != node_name):
            self.pod_queue.add(meta_namespace_key(new))

    # taint nodes by condition ------------------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        """NoSchedule taints following the node's conditions and spec.unschedulable; beta labels reconciled."""
        cached = self.nodes.indexer.get_by_key(name)
        if cached is None:
            return
        spec = cached.get("spec") or {}
        wanted = [{"key": key, "effect": "NoSchedule"} for condition in (cached.get("status") or {}).get("conditions") or []
                  if (key := CONDITION_TAINTS.get((condition.get("type"), condition.get("status"))))]
        if spec.get("unschedulable"):
            wanted.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
        present = [t for t in spec.get("taints") or [] if t.get("effect") == "NoSchedule"
                   and t.get("key") in CONDITION_TAINT_KEYS]
        add = [t for t in wanted if not _has_taint(present, t)]
        remove = [t for t in present if not _has_taint(wanted, t)]
        if add or remove:
            await self.swap_taints(cached, add, remove)
        await self.reconcile_labels(cached)

    async def reconcile_labels(self, node: dict[str, Any]) -> None:
        labels = node["metadata"].get("labels") or {}
        fixed = {beta: labels[stable] for stable, beta in RECONCILED_LABELS
                 if stable in labels and labels.get(beta) != labels[stable]}
        if fixed:
            await self.client.patch(resources.NODES, node["metadata"]["name"], {"metadata": {"labels": fixed}})

    async def swap_taints(self, node: dict[str, Any], add: list[dict[str, Any]], remove: list[dict[str, Any]]) -> None:
        """Add `add` (stamped with `timeAdded`) and drop `remove` in one patch guarded by the resourceVersion;
        after a conflict the node is read again and the change recomputed (kube's SwapNodeControllerTaint)."""
        name = node["metadata"]["name"]
        now = time_string(self.clock.wall())
        add = [{**taint, "timeAdded": now} for taint in add]
        failure: errors.Conflict | None = None
        for attempt in range(TAINT_UPDATE_RETRY):
            if attempt:
                node = await self.client.get(resources.NODES, name)
            taints = (node.get("spec") or {}).get("taints") or []
            wanted = with_taints(taints, add, remove)
            if wanted == taints:
                return
            patch: dict[str, Any] = {"spec": {"taints": wanted or None}}
            if node["metadata"].get("resourceVersion"):
                patch["metadata"] = {"resourceVersion": node["metadata"]["resourceVersion"]}
            try:
                await self.client.patch(resources.NODES, name, patch)
                return
            except errors.Conflict as conflict:
                failure = conflict
        assert failure is not None
        raise failure

    # pods bound to a node that is not ready -------------------------------------------------------------

    async def sync_pod(self, key: str) -> None:
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            return
        node_name = _node_name(pod)
        health = self.health.get(node_name)
        if health is None or self.nodes.indexer.get_by_key(node_name) is None:
            return  # not seen by a monitor pass yet: the pass will handle the pod
        ready = _condition(health.status, READY)
        if ready is not None and ready.get("status") != "True":
            await self.mark_pods_not_ready([pod], node_name)

    async def mark_pods_not_ready(self, pods: list[dict[str, Any]], node_name: str) -> None:
        """Set each pod's Ready condition False (kube's MarkPodsNotReady); raises the first failure."""
        failures = []
        for pod in pods:
            ready = _condition(pod.get("status") or {}, READY)
            if _node_name(pod) != node_name or ready is None or ready.get("status") == "False":
                continue
            meta = pod["metadata"]
            patch = {"status": {"conditions": [{"type": READY, "status": "False",
                                                "lastTransitionTime": time_string(self.clock.wall())}]}}
            try:
                await self.client.patch(resources.PODS, meta["name"], patch, meta["namespace"],
                                        patch_type="strategic", subresource="status")
            except errors.NotFound:
                continue
            except errors.APIStatusError as error:
                failures.append(error)
            self.recorder.event(_pod_reference(pod), "Warning", "NodeNotReady", "Node is not ready")
        if failures:
            raise failures[0]

    # node health --------------------------------------------------------------------------------------------

    async def monitor_node_health(self) -> None:
        """One pass over every node: statuses to Unknown after the grace period, taint queues, zone states."""
        nodes = self.nodes.lister().list()
        await self._classify(nodes)
        zone_conditions: dict[str, list[dict[str, Any] | None]] = {}
        await asyncio.gather(*(self._monitor_node(node, zone_conditions) for node in nodes))
        await self.handle_disruption(zone_conditions, nodes)

    async def _classify(self, nodes: list[dict[str, Any]]) -> None:
        """Nodes seen for the first time start untainted (NoExecute); nodes gone since the last pass are forgotten."""
        names = {node["metadata"]["name"] for node in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            self._tainter(node)
            if name not in self.known_nodes:
                self.known_nodes[name] = node
                self._record_node_event(node, "RegisteredNode", f"Node {name} event: Registered Node {name} in Controller")
                await self.mark_node_as_reachable(node)
        for name in [name for name in self.known_nodes if name not in names]:
            node = self.known_nodes.pop(name)
            self.health.pop(name, None)
            self._record_node_event(node, "RemovingNode", f"Node {name} event: Removing Node {name} from Controller")

    async def _monitor_node(self, node: dict[str, Any], zone_conditions: dict[str, list[dict[str, Any] | None]]) -> None:
        name = node["metadata"]["name"]
        for _ in range(NODE_HEALTH_UPDATE_RETRY):
            try:
                observed, current = await self.try_update_node_health(node)
                break
            except errors.APIStatusError as error:
                log.info("updating the health of node %s failed (%s); reading it again", name, error)
                try:
                    node = await self.client.get(resources.NODES, name)
                except errors.APIStatusError:
                    log.error("node %s cannot be read; skipping it, no pod will be evicted", name)
                    return
        else:
            log.error("node %s: health not updated after %d attempts; no pod will be evicted", name,
                      NODE_HEALTH_UPDATE_RETRY)
            return
        if EXCLUDE_DISRUPTION_LABEL not in (node["metadata"].get("labels") or {}):
            zone_conditions.setdefault(zone_key(node), []).append(current)
        if current is None:
            return
        await self.process_taint_based_eviction(node, observed)
        went_down = current.get("status") != "True" and observed.get("status") == "True"
        if went_down:
            self._record_node_event(node, "NodeNotReady", f"Node {name} status is now: NodeNotReady")
        if went_down or (name in self.nodes_to_retry and observed.get("status") != "True"):
            try:
                await self.mark_pods_not_ready(self.pods.indexer.by_index(NODE_NAME_INDEX, name), name)
            except errors.APIStatusError as error:
                log.warning("not every pod on node %s could be marked not ready, retrying: %s", name, error)
                self.nodes_to_retry.add(name)
                return
        self.nodes_to_retry.discard(name)

    async def try_update_node_health(self, node: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Update what is known of `node` and, past its grace period, write its conditions as Unknown.
        Returns the Ready condition as the node had it and as it is now (None if it has none). `node` may be
        the cached object: it is copied before anything is changed, and only then."""
        name = node["metadata"]["name"]
        now = self.clock.wall()
        status = node.get("status") or {}
        health = self.health.get(name)
        current = _condition(status, READY)
        if current is None:
            # never reported: count from the node's creation, with the longer startup grace period
            created_at = node["metadata"].get("creationTimestamp") or time_string(now)
            observed = {"type": READY, "status": UNKNOWN, "lastHeartbeatTime": created_at,
                        "lastTransitionTime": created_at}
            grace = self.settings.node_startup_grace_period
            if health is None:
                health = NodeHealth(parse_time(created_at), parse_time(created_at), status)
            health.status = status
        else:
            observed = dict(current)
            grace = self.settings.node_monitor_grace_period
        health = self._observe_heartbeat(health, status, current, now)
        lease = self.leases.indexer.get_by_key(f"{NODE_LEASE_NAMESPACE}/{name}")
        renewed = (lease or {}).get("spec", {}).get("renewTime")
        if renewed and (health.lease_renew_time is None or health.lease_renew_time < parse_time(renewed)):
            health.lease_renew_time = parse_time(renewed)
            health.probe_timestamp = now
        self.health[name] = health
        if now <= health.probe_timestamp + timedelta(seconds=grace):
            return observed, current
        node = copy.deepcopy(node)
        self._mark_conditions_unknown(node, now)
        current = _condition(node["status"], READY)
        if current != observed:
            await self.client.update(resources.NODES, node, subresource="status")
            self.health[name] = replace(health, ready_transition_timestamp=now, status=node["status"])
        return observed, current

    def _observe_heartbeat(self, health: NodeHealth | None, status: dict[str, Any], current: dict[str, Any] | None,
                           now: datetime) -> NodeHealth:
        """A node seen for the first time, or whose Ready heartbeat moved, was alive just now."""
        saved = _condition(health.status, READY) if health is not None else None
        if health is None or (saved is None) != (current is None):
            return NodeHealth(now, now, status, health.lease_renew_time if health else None)
        if saved is not None and current is not None and saved.get("lastHeartbeatTime") != current.get("lastHeartbeatTime"):
            transitioned = saved.get("lastTransitionTime") != current.get("lastTransitionTime")
            return NodeHealth(now, now if transitioned else health.ready_transition_timestamp,
                              status, health.lease_renew_time)
        return health

    def _mark_conditions_unknown(self, node: dict[str, Any], now: datetime) -> None:
        conditions = node.setdefault("status", {}).setdefault("conditions", [])
        for kind in KUBELET_CONDITIONS:
            condition = _condition(node["status"], kind)
            if condition is None:
                conditions.append({"type": kind, "status": UNKNOWN, "reason": "NodeStatusNeverUpdated",
                                   "message": "Kubelet never posted node status.",
                                   "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                                   "lastTransitionTime": time_string(now)})
            elif condition.get("status") != UNKNOWN:
                condition.update(status=UNKNOWN, reason="NodeStatusUnknown",
                                 message="Kubelet stopped posting node status.", lastTransitionTime=time_string(now))

    # NoExecute taints, rate-limited per zone -----------------------------------------------------------------

    async def process_taint_based_eviction(self, node: dict[str, Any], observed: dict[str, Any]) -> None:
        name, taints = node["metadata"]["name"], (node.get("spec") or {}).get("taints") or []
        status = observed.get("status")
        if status in ("False", UNKNOWN):
            taint, opposite = ((NOT_READY_NO_EXECUTE, UNREACHABLE_NO_EXECUTE) if status == "False"
                               else (UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE))
            if _has_taint(taints, opposite):  # already tainted for the other reason: swap without waiting
                try:
                    await self.swap_taints(node, [taint], [opposite])
                except errors.APIStatusError as error:
                    log.error("cannot swap the NoExecute taint of node %s, next pass retries: %s", name, error)
                return
            tainter = self._tainter(node)
            if not _has_taint(taints, taint):
                tainter.remove(name)  # tainted for a condition that no longer holds: queue it afresh
            if tainter.add(name):
                log.info("node %s is %s: queued for the %s taint", name, status, taint["key"])
        elif status == "True":
            await self.mark_node_as_reachable(node)

    async def mark_node_as_reachable(self, node: dict[str, Any]) -> bool:
        """Remove both NoExecute taints and forget any queued tainting; whether it was queued."""
        try:
            await self.swap_taints(node, [], [UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE])
        except errors.APIStatusError as error:
            log.error("cannot remove the NoExecute taints of node %s: %s", node["metadata"]["name"], error)
            return False
        return self._tainter(node).remove(node["metadata"]["name"])

    async def do_no_execute_tainting_pass(self) -> None:
        for tainter in list(self.zone_tainters.values()):
            await tainter.try_each(self._taint_no_execute)

    async def _taint_no_execute(self, name: str) -> tuple[bool, float]:
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            return True, 0.0
        ready = _condition(node.get("status") or {}, READY)
        if ready is None:
            return False, 0.05
        if ready.get("status") == "False":
            taint, opposite = NOT_READY_NO_EXECUTE, UNREACHABLE_NO_EXECUTE
        elif ready.get("status") == UNKNOWN:
            taint, opposite = UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE
        else:
            return True, 0.0  # ready again meanwhile
        try:
            await self.swap_taints(node, [taint], [opposite])
        except errors.APIStatusError as error:
            log.warning("cannot taint node %s %s, retrying: %s", name, taint["key"], error)
            return False, 0.0
        return True, 0.0

    # zones --------------------------------------------------------------------------------------------------

    def _tainter(self, node: dict[str, Any]) -> RateLimitedTimedQueue:
        """The taint queue of the node's zone; a zone seen for the first time starts in state Initial."""
        zone = zone_key(node)
        if zone not in self.zone_states:
            self.zone_states[zone] = INITIAL
            self.zone_tainters[zone] = RateLimitedTimedQueue(self.settings.node_eviction_rate, self.clock)
        return self.zone_tainters[zone]

    async def handle_disruption(self, zone_conditions: dict[str, list[dict[str, Any] | None]],
                                nodes: list[dict[str, Any]]) -> None:
        new_states = {zone: compute_zone_state(conditions, self.settings.unhealthy_zone_threshold)
                      for zone, conditions in zone_conditions.items()}
        for zone in [zone for zone in self.zone_states if zone not in zone_conditions]:
            del self.zone_states[zone]
        all_are_down = all(state == FULL_DISRUPTION for state in new_states.values())
        all_were_down = all(state == FULL_DISRUPTION for state in self.zone_states.values())
        if all_are_down and all_were_down:
            return
        if all_are_down:
            log.info("every node is not ready: entering master disruption mode, no node is tainted NoExecute")
            for node in nodes:
                await self.mark_node_as_reachable(node)
            for zone in self.zone_states:
                self.zone_tainters[zone].swap_limiter(0.0)
                self.zone_states[zone] = FULL_DISRUPTION
            return
        if all_were_down:
            log.info("some nodes are ready again: leaving master disruption mode")
            now = self.clock.wall()
            for health in self.health.values():
                health.probe_timestamp = health.ready_transition_timestamp = now
        for zone, state in self.zone_states.items():
            if state != new_states[zone] or all_were_down:
                log.info("zone %r is now %s", zone, new_states[zone])
                self.zone_tainters[zone].swap_limiter(self._zone_rate(len(zone_conditions[zone]), new_states[zone]))
                self.zone_states[zone] = new_states[zone]

    def _zone_rate(self, size: int, state: str) -> float:
        if state == PARTIAL_DISRUPTION:
            return self.settings.secondary_node_eviction_rate if size > self.settings.large_cluster_size_threshold else 0.0
        return self.settings.node_eviction_rate  # Normal, and a fully disrupted zone while others are not

    def _record_node_event(self, node: dict[str, Any], reason: str, message: str) -> None:
        meta = node["metadata"]
        self.recorder.event({"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": meta.get("uid", "")},
                            "Normal", reason, message)


class TokenBucket:
    """client-go's token bucket as `TryAccept` uses it: `burst` tokens refilled at `qps`; qps 0 never accepts."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self.qps, self.burst, self.clock = qps, burst, clock
        self._tokens = float(burst)
        self._last = clock.now()

    def try_accept(self) -> bool:
        if self.qps <= 0:
            return False
        now = self.clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class RateLimitedTimedQueue:
    """Node names waiting for their NoExecute taint, handed out in order at the limiter's pace.

    A name is added once: after it has been processed it stays "added" (so the next monitor pass does not
    taint it again) until `remove` forgets it, as when the node becomes Ready.
    """

    def __init__(self, qps: float, clock: Clock) -> None:
        self.clock = clock
        self.limiter = TokenBucket(qps, EVICTION_BURST, clock)
        self._due: dict[str, float] = {}  # queued name -> when to process it (clock.now() seconds)
        self._added: set[str] = set()  # queued or processed, until removed

    def add(self, name: str) -> bool:
        if name in self._added:
            return False
        self._added.add(name)
        self._due[name] = self.clock.now()
        return True

    def remove(self, name: str) -> bool:
        if name not in self._added:
            return False
        self._added.discard(name)
        self._due.pop(name, None)
        return True

    def swap_limiter(self, qps: float) -> None:
        """Change the rate; a limiter that was out of tokens hands over an empty bucket (burst is 1)."""
        if qps == self.limiter.qps:
            return
        limiter = TokenBucket(qps, EVICTION_BURST, self.clock)
        if qps > 0 and not self.limiter.try_accept():
            limiter.try_accept()
        self.limiter = limiter

    async def try_each(self, action: Callable[[str], Awaitable[tuple[bool, float]]]) -> None:
        """Process due names while the limiter allows; `action` answers (done, seconds before a retry)."""
        while self._due:
            name = min(self._due, key=self._due.__getitem__)
            if not self.limiter.try_accept():
                return
            now = self.clock.now()
            if now < self._due[name]:
                return
            done, wait = await action(name)
            if name in self._due:
                if done:
                    del self._due[name]
                else:
                    self._due[name] = now + wait + 1e-9


def compute_zone_state(ready_conditions: list[dict[str, Any] | None], unhealthy_threshold: float) -> str:
    not_ready = sum(1 for c in ready_conditions if c is None or c.get("status") != "True")
    ready = len(ready_conditions) - not_ready
    if ready == 0 and not_ready > 0:
        return FULL_DISRUPTION
    if not_ready > 2 and not_ready / len(ready_conditions) >= unhealthy_threshold:
        return PARTIAL_DISRUPTION
    return NORMAL


def zone_key(node: dict[str, Any]) -> str:
    """The node's failure domain, "region:\\x00:zone" from the topology labels; "" when it has neither."""
    labels = node["metadata"].get("labels") or {}
    region = next((labels[key] for key in REGION_LABELS if labels.get(key)), "")
    zone = next((labels[key] for key in ZONE_LABELS if labels.get(key)), "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def with_taints(taints: list[dict[str, Any]], add: list[dict[str, Any]],
                remove: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`taints` without those matching `remove` (by key and effect), with `add` replacing their matches."""
    result = [taint for taint in taints if not _has_taint(remove, taint)]
    for new in add:
        index = next((i for i, taint in enumerate(result) if _same_taint(taint, new)), None)
        if index is None:
            result.append(new)
        else:
            result[index] = new
    return result


def pod_node_name_index(pod: dict[str, Any]) -> list[str]:
    node_name = _node_name(pod)
    return [node_name] if node_name else []


def _same_taint(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def _has_taint(taints: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    return any(_same_taint(t, taint) for t in taints)


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def _node_name(pod: dict[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _pod_reference(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Pod", "namespace": meta["namespace"], "name": meta["name"],
            "uid": meta.get("uid", "")}

"""The route controller (kube's `node-route-controller`, cloud-provider's `controllers/route`): one cloud route
per node pod CIDR, so that pods on different nodes can reach each other through the cloud's network.

Each node gets a pod CIDR (`spec.podCIDRs`, from the node IPAM controller); the cloud's routers must send
traffic for that CIDR to the node. Where there is no overlay network (no CNI plugin tunnelling pod traffic),
the cloud routes are what makes the pod network work, so the controller also tells the scheduler whether a
node is reachable: it sets the node condition `NetworkUnavailable`.

It runs only with `--configure-cloud-routes` and a provider whose `routes()` is not None (kube does not start
it otherwise). A pass over the whole cluster (`sync`) compares the cloud's routes for `--cluster-name` with the
nodes in the cache:
* a node pod CIDR without a route gets one: `create_route(cluster, name_hint=<node uid>, Route(node, cidr))`;
  when that fails, the node gets the Warning event `FailedToCreateRoute`;
* a route is deleted when it is blackholed (its target is gone), when its target node is unknown, or when the
  CIDR is no longer one of its node's pod CIDRs; but only routes inside `--cluster-cidr` are ours to delete
  (an empty `--cluster-cidr` claims every route of the cluster: an mkpy default, kube requires the flag);
* every node that has pod CIDRs or that routes point at gets `NetworkUnavailable`: False with reason
  `RouteCreated` once all its routes exist, True with reason `NoRouteCreated` otherwise. The condition is
  written with a strategic merge patch of `nodes/status`, which merges `conditions` by `type`, so the
  kubelet's conditions (Ready, MemoryPressure, ...) stay as they are. A condition already saying the same,
  with our reason, is not written again.

The whole cluster is one work item (`ROUTES_KEY`): node events (added, deleted, pod CIDRs changed) and a timer
every `--route-reconciliation-period` only put it on the queue, which never holds it twice. A pass that failed
anywhere (listing, creating, deleting, patching) raises once it is done with everything it could do, so the
queue retries it with backoff; a hanging provider costs a pass `cloud_call_timeout`, never the worker.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

from minikube_py.api.gofmt import go_duration
from minikube_py.api.timestamps import time_string
from minikube_py.ccm.cloud.interface import Route, Routes
from minikube_py.ccm.context import CloudControllerContext, cloud_call
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.workqueue import RateLimitingQueue

ROUTES_KEY = "routes"
MAX_CONCURRENT_ROUTE_OPERATIONS = 200  # provider calls in flight at once, as kube
NETWORK_UNAVAILABLE = "NetworkUnavailable"
ROUTE_CREATED = ("False", "RouteCreated", "RouteController created a route")
NO_ROUTE_CREATED = ("True", "NoRouteCreated", "RouteController failed to create a route")

log = logging.getLogger(__name__)

T = TypeVar("T")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class RouteReconcileError(Exception):
    """Some part of a pass failed; the pass is retried with backoff."""


def cluster_cidrs(spec: str) -> list[Network]:
    """The networks of `--cluster-cidr` (comma-separated, dual-stack allowed); ValueError when unparsable."""
    try:
        return [ipaddress.ip_network(part.strip(), strict=False) for part in spec.split(",") if part.strip()]
    except ValueError as error:
        raise ValueError(f"--cluster-cidr: {error}") from None


class RouteController:
    name = "node-route-controller"

    def __init__(self, ctx: CloudControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.settings = ctx.settings
        self.routes: Routes | None = ctx.cloud.routes() if ctx.settings.configure_cloud_routes else None
        self.cluster_cidrs = cluster_cidrs(ctx.settings.cluster_cidr) if self.routes is not None else []
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.queue = RateLimitingQueue(name="routes", clock=ctx.clock)
        self.limit = asyncio.Semaphore(MAX_CONCURRENT_ROUTE_OPERATIONS)
        if self.routes is not None:
            self.nodes.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=self._node_updated,
                                                     on_delete=self._enqueue))

    async def run(self, workers: int) -> None:
        if not self.settings.configure_cloud_routes:
            log.info("Will not configure cloud provider routes, --configure-cloud-routes: false")
            return
        if self.routes is None:
            log.warning("--configure-cloud-routes is set, but cloud provider does not support routes. "
                        "Will not configure cloud provider routes.")
            return
        await self.nodes.wait_for_cache_sync()
        try:
            # one worker: a pass always covers the whole cluster
            await asyncio.gather(run_workers(self.queue, self.sync, 1, name="routes", logger=log),
                                 self._resync_every_period())
        finally:
            self.queue.shut_down()

    async def _resync_every_period(self) -> None:
        while True:
            self.queue.add(ROUTES_KEY)
            await self.clock.sleep(self.settings.route_reconciliation_period)

    def _enqueue(self, *_: Any) -> None:
        self.queue.add(ROUTES_KEY)

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _pod_cidrs(old) != _pod_cidrs(new):
            self._enqueue()

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """One pass: the cloud's routes against the nodes' pod CIDRs, then each node's NetworkUnavailable."""
        assert self.routes is not None
        routes = await self._cloud(self.routes.list_routes(self.settings.cluster_name), "listing routes")
        await self.reconcile(self.nodes.lister().list(), routes)

    async def reconcile(self, nodes: list[dict[str, Any]], routes: list[Route]) -> None:
        """Delete the stale routes, create the missing ones, then set NetworkUnavailable on every node that has
        pod CIDRs or routes; RouteReconcileError at the end if any of it failed."""
        wanted = {_name(node): _pod_cidrs(node) for node in nodes if _pod_cidrs(node)}
        existing: dict[str, set[str]] = {}  # target node -> CIDRs the cloud routes there
        for route in routes:
            existing.setdefault(route.target_node, set()).add(route.destination_cidr)
        stale = [route for route in routes if self._responsible_for(route)
                 and (route.blackhole or route.destination_cidr not in wanted.get(route.target_node, []))]
        missing = [(node, cidr) for node in nodes for cidr in _pod_cidrs(node)
                   if cidr not in existing.get(_name(node), set())]
        deleted = await asyncio.gather(*(self._delete(route) for route in stale))
        created = await asyncio.gather(*(self._create(node, cidr) for node, cidr in missing))
        not_routed = {_name(node) for (node, _), ok in zip(missing, created, strict=True) if not ok}
        patched = await asyncio.gather(*(
            self.update_network_condition(node, routes_created=_name(node) in wanted and _name(node) not in not_routed)
            for node in nodes if _name(node) in wanted or _name(node) in existing))
        failures = deleted.count(False) + created.count(False) + patched.count(False)
        if failures:
            raise RouteReconcileError(f"{failures} route operation(s) failed; retrying")

    async def _delete(self, route: Route) -> bool:
        assert self.routes is not None
        started = self.clock.now()
        try:
            await self._cloud(self.routes.delete_route(self.settings.cluster_name, route), "deleting a route")
        except Exception as error:
            log.error("Could not delete route %s %s after %s: %s", route.name, route.destination_cidr,
                      go_duration(self.clock.now() - started), error)
            return False
        log.info("Deleted route %s %s", route.name, route.destination_cidr)
        return True

    async def _create(self, node: dict[str, Any], cidr: str) -> bool:
        """Create the route for one pod CIDR, named after the node's uid; a Warning event when it fails."""
        assert self.routes is not None
        meta = node["metadata"]
        name_hint = meta.get("uid", "")
        started = self.clock.now()
        try:
            await self._cloud(self.routes.create_route(self.settings.cluster_name, name_hint,
                                                       Route(name="", target_node=meta["name"], destination_cidr=cidr)),
                              "creating a route")
        except Exception as error:
            message = (f"Could not create route {name_hint} {cidr} for node {meta['name']} after "
                       f"{go_duration(self.clock.now() - started)}: {error}")
            log.warning("%s", message)
            self.recorder.event({"apiVersion": "v1", "kind": "Node", "name": meta["name"], "uid": name_hint},
                                "Warning", "FailedToCreateRoute", message)
            return False
        log.info("Created route for node %s %s with hint %s", meta["name"], cidr, name_hint)
        return True

    async def update_network_condition(self, node: dict[str, Any], routes_created: bool) -> bool:
        """Set the node's NetworkUnavailable unless it already says so with our reason; False when that failed."""
        state, reason, message = ROUTE_CREATED if routes_created else NO_ROUTE_CREATED
        current = next((c for c in (node.get("status") or {}).get("conditions") or []
                        if c.get("type") == NETWORK_UNAVAILABLE), None)
        if current is not None and (current.get("status"), current.get("reason")) == (state, reason):
            return True
        now = time_string(self.clock.wall())
        condition = {"type": NETWORK_UNAVAILABLE, "status": state, "reason": reason, "message": message,
                     "lastTransitionTime": now, "lastHeartbeatTime": now}
        name = node["metadata"]["name"]
        try:
            await self.client.patch(resources.NODES, name, {"status": {"conditions": [condition]}},
                                    patch_type="strategic", subresource="status")
        except errors.APIStatusError as error:
            log.error("Error updating node %s: %s", name, error)
            return False
        return True

    def _responsible_for(self, route: Route) -> bool:
        """Whether the route's CIDR lies (by its first or last address) within a cluster CIDR."""
        try:
            cidr = ipaddress.ip_network(route.destination_cidr, strict=False)
        except ValueError as error:
            log.error("Ignoring route %s, unparsable CIDR: %s", route.name, error)
            return False
        if not self.cluster_cidrs:
            return True
        return any(cidr.network_address in cluster or cidr.broadcast_address in cluster
                   for cluster in self.cluster_cidrs)

    async def _cloud(self, call: Awaitable[T], what: str) -> T:
        async with self.limit:
            return await cloud_call(call, self.settings.cloud_call_timeout, what)


def _name(node: dict[str, Any]) -> str:
    return node["metadata"]["name"]


def _pod_cidrs(node: dict[str, Any]) -> list[str]:
    return list((node.get("spec") or {}).get("podCIDRs") or [])

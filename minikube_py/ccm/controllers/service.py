"""The service controller (kube's `service-lb-controller`): a cloud load balancer for every Service of
`type: LoadBalancer`.

A Service is this controller's when its type is LoadBalancer and `spec.loadBalancerClass` is unset (a class
names some other implementation, such as MetalLB). For such a Service `sync` asks the provider to ensure a
load balancer and writes what the provider answers into `status.loadBalancer`, which is where `kubectl get
svc` finds the EXTERNAL-IP:

    event EnsuringLoadBalancer → add finalizer → ensure_load_balancer(cluster, service, nodes)
    → event EnsuredLoadBalancer → patch services/status (only when the ingress changed)

The finalizer `service.kubernetes.io/load-balancer-cleanup` goes on before the load balancer exists, so the
Service cannot disappear while the cloud still holds resources for it. A Service that no longer wants a load
balancer (its type changed, it got a loadBalancerClass) or that is being deleted while it carries the
finalizer is cleaned up in the reverse order:

    get_load_balancer → (if one exists) event DeletingLoadBalancer, ensure_load_balancer_deleted
    → remove finalizer → event DeletedLoadBalancer → clear status.loadBalancer

Any failure is a Warning `SyncLoadBalancerFailed` event and a retry with per-Service exponential backoff
from 5 s to 300 s (kube's minRetryDelay/maxRetryDelay), so an address already taken or a hung cloud costs a
few calls an hour, never a stuck worker.

Backends: the provider is told which nodes may carry traffic. Since kube 1.30 (StableLoadBalancerNodeSet)
that set ignores readiness, so a node that flaps NotReady does not churn every load balancer: a node is a
backend unless it is being deleted, carries the label `node.kubernetes.io/exclude-from-external-load-
balancers`, or the Cluster Autoscaler's taint `ToBeDeletedByClusterAutoscaler`. Whether a backend is
healthy is the load balancer's own health check's business. A node event that changes the set (a node
added or deleted, the exclude label or providerID changed) queues one node-sync pass, and a pass also runs
every `node_sync_period`: for each Service synced so far whose backends differ from the ones last sent,
`update_load_balancer` is called (event UpdatedLoadBalancer); a Service whose update failed (Warning
UpdateLoadBalancerFailed) is queued for a full sync.

The controller remembers the Services it synced (kube's service cache): node-sync passes walk them, and a
Service deleted without our finalizer (an mkpy addition: kube has no delete handler) or re-created under
the same name with a new uid still gets its old load balancer removed.

A provider whose `load_balancer()` is None has no load balancers: the controller then does nothing, as kube
does not start it.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from minikube_py.ccm.context import CloudControllerContext, cloud_call
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.ratelimiter import ItemExponentialFailureRateLimiter
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue

LOAD_BALANCER_CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
LABEL_NODE_EXCLUDE_BALANCERS = "node.kubernetes.io/exclude-from-external-load-balancers"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
MIN_RETRY_DELAY = 5.0
MAX_RETRY_DELAY = 300.0
SERVICE_SYNC_PERIOD = 30.0  # informer resync: re-checks Services that still need cleanup
MAX_NODE_NAMES_TO_LOG = 20
NODE_SYNC_KEY = "node-sync"  # the node queue's only key: a pass covers every Service

Service = dict[str, Any]
Node = dict[str, Any]

log = logging.getLogger(__name__)


class ServiceController:
    name = "service-lb-controller"

    def __init__(self, ctx: CloudControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.balancer = ctx.cloud.load_balancer()
        self.cluster_name = ctx.settings.cluster_name
        self.timeout = ctx.settings.cloud_call_timeout
        self.node_sync_period = ctx.settings.node_sync_period
        self.services = ctx.informers.informer_for(resources.SERVICES)
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.queue = RateLimitingQueue(_backoff(), name="service", clock=ctx.clock)
        self.node_queue = RateLimitingQueue(_backoff(), name="node", clock=ctx.clock)
        self.cache: dict[str, Service] = {}  # key -> the Service as last synced
        self.last_synced_nodes: dict[str, list[Node]] = {}  # key -> the backends last sent to the cloud
        if self.balancer is None:
            return
        self.services.add_event_handler(FuncHandler(on_add=self._service_added, on_update=self._service_updated,
                                                    on_delete=self._service_deleted),
                                        resync_period=SERVICE_SYNC_PERIOD)
        self.nodes.add_event_handler(FuncHandler(on_add=self._enqueue_node_sync, on_update=self._node_updated,
                                                 on_delete=self._enqueue_node_sync))

    async def run(self, workers: int) -> None:
        if self.balancer is None:
            log.info("%s is off: the cloud provider does not support external load balancers", self.name)
            return
        await self.services.wait_for_cache_sync()
        await self.nodes.wait_for_cache_sync()
        self.node_queue.add(NODE_SYNC_KEY)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(run_workers(self.queue, self.sync, workers, name="service", logger=log))
                group.create_task(run_workers(self.node_queue, lambda _: self.sync_nodes(workers), 1,
                                              name="service-node-sync", logger=log))
        finally:
            self.queue.shut_down()
            self.node_queue.shut_down()

    # event handlers --------------------------------------------------------------------------------------

    def _service_added(self, service: Service) -> None:
        if wants_load_balancer(service) or needs_cleanup(service):
            self.queue.add(meta_namespace_key(service))

    def _service_updated(self, old: Service, new: Service) -> None:
        if needs_update(old, new) or needs_cleanup(new):
            self.queue.add(meta_namespace_key(new))

    def _service_deleted(self, service: Service | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(service)
        if key in self.cache:
            self.queue.add(key)

    def _enqueue_node_sync(self, *_: Any) -> None:
        self.node_queue.add(NODE_SYNC_KEY)

    def _node_updated(self, old: Node, new: Node) -> None:
        if node_included(old) != node_included(new) or _provider_id(old) != _provider_id(new):
            self._enqueue_node_sync()

    # service sync ----------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        service = self.services.indexer.get_by_key(key)
        if service is None:
            await self.process_service_deletion(key)
        else:
            await self.process_service_create_or_update(copy.deepcopy(service), key)

    async def process_service_deletion(self, key: str) -> None:
        """The Service is gone from the cache: remove the load balancer we may have made for it."""
        cached = self.cache.get(key)
        if cached is None:
            return  # never had a load balancer, or it was cleaned up through the finalizer
        await self.process_load_balancer_delete(cached)
        self._forget(key)

    async def process_service_create_or_update(self, service: Service, key: str) -> None:
        cached = self.cache.get(key)
        if cached is not None and _uid(cached) != _uid(service):
            await self.process_load_balancer_delete(cached)  # deleted and re-created without the finalizer
        self.cache[key] = service
        try:
            deleted = await self.sync_load_balancer_if_needed(service, key)
        except Exception as error:
            self._event(service, "Warning", "SyncLoadBalancerFailed", f"Error syncing load balancer: {error}")
            raise
        if deleted:
            self._forget(key)

    async def sync_load_balancer_if_needed(self, service: Service, key: str) -> bool:
        """Ensure or delete the Service's load balancer; True when it was deleted."""
        previous = _ingress(service)
        delete = not wants_load_balancer(service) or needs_cleanup(service)
        if delete:
            await self.delete_load_balancer(service, key)
            ingress: list[Any] = []
        else:
            ingress = await self.ensure_load_balancer(service, key)
        if ingress != previous:
            await self.patch_status(service, ingress)
        return delete

    async def ensure_load_balancer(self, service: Service, key: str) -> list[Any]:
        log.info("ensuring load balancer for service %s", key)
        self._event(service, "Normal", "EnsuringLoadBalancer", "Ensuring load balancer")
        if not has_finalizer(service):
            try:
                await self.patch_finalizers(service, {"finalizers": [LOAD_BALANCER_CLEANUP_FINALIZER]})
            except errors.APIStatusError as error:
                raise RuntimeError(f"failed to add load balancer cleanup finalizer: {error}") from error
        nodes = stable_node_set(self.nodes.lister().list())
        if not nodes:
            self._event(service, "Warning", "UnAvailableLoadBalancer", "There are no available nodes for LoadBalancer")
        self.last_synced_nodes[key] = nodes
        try:
            status = await cloud_call(self.balancer.ensure_load_balancer(self.cluster_name, service, nodes),
                                      self.timeout, "ensure_load_balancer")
        except Exception as error:
            raise RuntimeError(f"failed to ensure load balancer: {error}") from error
        if status is None:
            raise RuntimeError("service status returned by ensure_load_balancer is None")
        self._event(service, "Normal", "EnsuredLoadBalancer", "Ensured load balancer")
        return list(status.get("ingress") or [])

    async def delete_load_balancer(self, service: Service, key: str) -> None:
        try:
            existing = await cloud_call(self.balancer.get_load_balancer(self.cluster_name, service),
                                        self.timeout, "get_load_balancer")
        except Exception as error:
            raise RuntimeError(f"failed to check if load balancer exists before cleanup: {error}") from error
        if existing is not None:
            log.info("deleting load balancer of service %s", key)
            self._event(service, "Normal", "DeletingLoadBalancer", "Deleting load balancer")
            try:
                await cloud_call(self.balancer.ensure_load_balancer_deleted(self.cluster_name, service),
                                 self.timeout, "ensure_load_balancer_deleted")
            except Exception as error:
                raise RuntimeError(f"failed to delete load balancer: {error}") from error
        if has_finalizer(service):  # only now may the Service go away
            try:
                await self.patch_finalizers(
                    service, {"$deleteFromPrimitiveList/finalizers": [LOAD_BALANCER_CLEANUP_FINALIZER]})
            except errors.APIStatusError as error:
                raise RuntimeError(f"failed to remove load balancer cleanup finalizer: {error}") from error
        self._event(service, "Normal", "DeletedLoadBalancer", "Deleted load balancer")

    async def process_load_balancer_delete(self, service: Service) -> None:
        """Delete the load balancer of a Service we no longer see (no finalizer held it back)."""
        if not wants_load_balancer(service):
            return
        self._event(service, "Normal", "DeletingLoadBalancer", "Deleting load balancer")
        try:
            await cloud_call(self.balancer.ensure_load_balancer_deleted(self.cluster_name, service),
                             self.timeout, "ensure_load_balancer_deleted")
        except Exception as error:
            self._event(service, "Warning", "DeleteLoadBalancerFailed", f"Error deleting load balancer: {error}")
            raise
        self._event(service, "Normal", "DeletedLoadBalancer", "Deleted load balancer")

    async def patch_finalizers(self, service: Service, metadata_patch: dict[str, Any]) -> None:
        meta = service["metadata"]
        await self.client.patch(resources.SERVICES, meta["name"], {"metadata": metadata_patch}, meta["namespace"],
                                patch_type="strategic")

    async def patch_status(self, service: Service, ingress: list[Any]) -> None:
        meta = service["metadata"]
        try:
            await self.client.patch(resources.SERVICES, meta["name"],
                                    {"status": {"loadBalancer": {"ingress": ingress or None}}},
                                    meta["namespace"], subresource="status")
        except errors.NotFound:
            pass  # the Service went away once its finalizer was removed: no status left to clear
        except errors.APIStatusError as error:
            raise RuntimeError(f"failed to update load balancer status: {error}") from error

    # node sync -------------------------------------------------------------------------------------------

    async def sync_nodes(self, workers: int = 1) -> set[str]:
        """Point every synced Service's load balancer at the current backends; the keys queued for retry."""
        limit = asyncio.Semaphore(workers)

        async def sync_one(key: str, service: Service) -> str | None:
            async with limit:
                return key if await self.node_sync_service(key, service) else None

        results = await asyncio.gather(*(sync_one(key, service) for key, service in list(self.cache.items())))
        retry = {key for key in results if key is not None}
        for key in retry:
            self.queue.add(key)
        self.node_queue.add_after(NODE_SYNC_KEY, self.node_sync_period)
        return retry

    async def node_sync_service(self, key: str, service: Service) -> bool:
        """Update one load balancer's backends if they changed; True when it must be retried."""
        if not wants_load_balancer(service):
            return False
        nodes = stable_node_set(self.nodes.lister().list())
        old = stable_node_set(self.last_synced_nodes.get(key, []))
        self.last_synced_nodes[key] = nodes  # the retry, if any, is a full sync of the Service
        if nodes_sufficiently_equal(old, nodes):
            return False
        try:
            await self.update_load_balancer_hosts(service, nodes)
        except Exception as error:
            log.warning("failed to update load balancer hosts for service %s: %s", key, error)
            return True
        return False

    async def update_load_balancer_hosts(self, service: Service, nodes: list[Node]) -> None:
        try:
            await cloud_call(self.balancer.update_load_balancer(self.cluster_name, service, nodes),
                             self.timeout, "update_load_balancer")
        except Exception as error:
            if not await self._load_balancer_exists(service):
                return  # nothing left to update
            names = _loggable_node_names(nodes)
            self._event(service, "Warning", "UpdateLoadBalancerFailed",
                        f"Error updating load balancer with new hosts {names} [node names limited, total number "
                        f"of nodes: {len(nodes)}], error: {error}")
            raise
        if nodes:
            self._event(service, "Normal", "UpdatedLoadBalancer", "Updated load balancer with new hosts")
        else:
            self._event(service, "Warning", "UnAvailableLoadBalancer", "There are no available nodes for LoadBalancer")

    async def _load_balancer_exists(self, service: Service) -> bool:
        """Whether the cloud still has the load balancer; when it cannot tell, assume it does."""
        try:
            return await cloud_call(self.balancer.get_load_balancer(self.cluster_name, service),
                                    self.timeout, "get_load_balancer") is not None
        except Exception as error:
            log.warning("failed to check if load balancer exists for service %s: %s",
                        meta_namespace_key(service), error)
            return True

    # helpers ---------------------------------------------------------------------------------------------

    def _forget(self, key: str) -> None:
        self.cache.pop(key, None)
        self.last_synced_nodes.pop(key, None)

    def _event(self, service: Service, type: str, reason: str, message: str) -> None:
        self.recorder.event({"apiVersion": "v1", "kind": "Service", "metadata": service["metadata"]},
                            type, reason, message)


def _backoff() -> ItemExponentialFailureRateLimiter:
    return ItemExponentialFailureRateLimiter(MIN_RETRY_DELAY, MAX_RETRY_DELAY)


# which Services ------------------------------------------------------------------------------------------

def wants_load_balancer(service: Service) -> bool:
    """Type LoadBalancer and no loadBalancerClass: the cloud provider's load balancer is wanted."""
    spec = service.get("spec") or {}
    return spec.get("type") == "LoadBalancer" and spec.get("loadBalancerClass") is None


def has_finalizer(service: Service) -> bool:
    return LOAD_BALANCER_CLEANUP_FINALIZER in (service["metadata"].get("finalizers") or [])


def needs_cleanup(service: Service) -> bool:
    """Our finalizer is on a Service that is being deleted or is no longer of type LoadBalancer."""
    if not has_finalizer(service):
        return False
    return bool(service["metadata"].get("deletionTimestamp")) or (service.get("spec") or {}).get("type") != "LoadBalancer"


def needs_update(old: Service, new: Service) -> bool:
    """Whether a change touches what the load balancer is built from."""
    if not wants_load_balancer(old) and not wants_load_balancer(new):
        return False
    return _load_balancer_inputs(old) != _load_balancer_inputs(new)


def _load_balancer_inputs(service: Service) -> tuple[Any, ...]:
    spec, meta = service.get("spec") or {}, service["metadata"]
    ports = [tuple(port.get(field) for field in ("name", "protocol", "port", "nodePort", "targetPort", "appProtocol"))
             for port in spec.get("ports") or []]
    return (wants_load_balancer(service), spec.get("loadBalancerSourceRanges") or [], ports,
            spec.get("sessionAffinity"), spec.get("sessionAffinityConfig"), spec.get("loadBalancerIP", ""),
            spec.get("externalIPs") or [], meta.get("annotations") or {}, meta.get("uid"),
            spec.get("externalTrafficPolicy"), spec.get("healthCheckNodePort"), len(spec.get("ipFamilies") or []))


# which Nodes ---------------------------------------------------------------------------------------------

def node_included(node: Node) -> bool:
    """Not labelled to be kept out of external load balancers."""
    return LABEL_NODE_EXCLUDE_BALANCERS not in (node["metadata"].get("labels") or {})


def node_untainted(node: Node) -> bool:
    """Not being removed by the Cluster Autoscaler."""
    return all(taint.get("key") != TO_BE_DELETED_TAINT for taint in (node.get("spec") or {}).get("taints") or [])


def node_not_deleted(node: Node) -> bool:
    return not node["metadata"].get("deletionTimestamp")


def stable_node_set(nodes: list[Node]) -> list[Node]:
    """The nodes that may be load-balancer backends (readiness is deliberately not asked)."""
    return [node for node in nodes if node_not_deleted(node) and node_included(node) and node_untainted(node)]


def nodes_sufficiently_equal(old: list[Node], new: list[Node]) -> bool:
    """Same node names with the same providerIDs: nothing a load balancer would notice changed."""
    return ({node["metadata"]["name"]: _provider_id(node) for node in old}
            == {node["metadata"]["name"]: _provider_id(node) for node in new})


def _provider_id(node: Node) -> str:
    return (node.get("spec") or {}).get("providerID", "")


def _loggable_node_names(nodes: list[Node]) -> str:
    names = sorted(node["metadata"]["name"] for node in nodes[:MAX_NODE_NAMES_TO_LOG])
    if len(nodes) > MAX_NODE_NAMES_TO_LOG:
        names.append(f"<{len(nodes) - MAX_NODE_NAMES_TO_LOG} more>")
    return "[" + " ".join(names) + "]"


def _ingress(service: Service) -> list[Any]:
    return list(((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [])


def _uid(service: Service) -> str:
    return str(service["metadata"].get("uid", ""))

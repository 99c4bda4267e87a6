"""The EndpointSlice controller: the endpoints of every Service with a selector, as EndpointSlices.

EndpointSlices replace one big Endpoints object per Service by several small ones (at most
`--max-endpoints-per-slice`, 100, endpoints each), so a change to one pod of a 5000-pod Service rewrites one
slice, not all 5000 addresses. Each endpoint carries its own `conditions` (ready, serving, terminating),
so terminating pods stay visible to proxies that want to drain them. What the slices of a Service should be
is decided by endpointslicereconciler.reconcile; this module watches, queues and writes.

Handlers only enqueue the Service's "namespace/name" key:
* a Service added, changed or deleted → its key;
* a pod added, changed or deleted → every Service selecting it before or after (endpointutil);
* a slice managed by this controller (label `endpointslice.kubernetes.io/managed-by:
  endpointslice-controller.k8s.io`) added, changed or deleted by someone else → its Service, after 1 s (to
  batch changes); our own writes coming back through the watch are recognised by the `EndpointSliceTracker`
  and ignored. Slices managed by anyone else (the apiserver's own `default/kubernetes` slice has no
  managed-by label) are never read or written;
* a Node whose `topology.kubernetes.io/zone` label changes → the Services of the pods on it, so endpoints
  get the new `zone` (kube only picks this up at the next sync of each Service).

`sync(key)`: Service gone → nothing to do (its slices are owned by it, the garbage collector removes them);
ExternalName or no selector → left alone. Otherwise the selected pods and the Service's managed slices (not
being deleted) go to the reconciler, and its plan is written: creates (not for a Service being deleted),
updates, deletes, each with the annotation `endpoints.kubernetes.io/last-change-trigger-time`. If the cache
does not show our last writes yet (a slice we wrote is missing or at an older generation, one we deleted is
still there), the sync fails and is retried rather than placing endpoints twice. Failures record kube's
Warning event FailedToUpdateEndpointSlices "Error updating Endpoint Slices for Service NS/NAME: ERROR" and
are retried with backoff (1 s doubling to 1000 s); a Conflict means our cache was behind.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.ratelimiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
)
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import endpointutil as util
from minikube_py.kcm.controllers.endpointslicereconciler import (
    CONTROLLER_NAME,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    Plan,
    Slice,
    reconcile,
)

MAX_RETRIES = 15
SLICE_CHANGE_MIN_DELAY = 1.0  # seconds before a sync caused by someone else's slice change

log = logging.getLogger(__name__)


class EndpointSliceController:
    name = "endpointslice-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.max_endpoints = ctx.settings.max_endpoints_per_slice
        self.services = ctx.informers.informer_for(resources.SERVICES)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.slices = ctx.informers.informer_for(resources.ENDPOINT_SLICES)
        limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(1.0, 1000.0), BucketRateLimiter(10, 100, ctx.clock))
        self.queue = RateLimitingQueue(limiter, name="endpoint_slice", clock=ctx.clock)
        self.tracker = EndpointSliceTracker()
        self.trigger_times = util.TriggerTimeTracker()
        self.services.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda _, new: self._enqueue(new),
                                                    on_delete=self._enqueue))
        self.pod_handler = util.ServicePodHandler(self.services.lister(), self.queue)
        self.pods.add_event_handler(self.pod_handler)
        self.slices.add_event_handler(FuncHandler(on_add=self._slice_added, on_update=self._slice_updated,
                                                  on_delete=self._slice_deleted))
        self.nodes.add_event_handler(FuncHandler(on_update=self._node_updated))

    async def run(self, workers: int) -> None:
        await asyncio.gather(self.services.wait_for_cache_sync(), self.pods.wait_for_cache_sync(),
                             self.nodes.wait_for_cache_sync(), self.slices.wait_for_cache_sync())
        try:
            await run_workers(self.queue, self.sync, workers, name="endpoint_slice", max_retries=MAX_RETRIES,
                              logger=log)
        finally:
            self.queue.shut_down()

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def _enqueue(self, obj: dict[str, Any] | DeletedFinalStateUnknown, *_: Any) -> None:
        self.queue.add(meta_namespace_key(obj))

    def _slice_added(self, endpoint_slice: Slice, *_: Any) -> None:
        if managed(endpoint_slice) and self.tracker.should_sync(endpoint_slice):
            self._enqueue_service_of(endpoint_slice)

    def _slice_updated(self, old: Slice, new: Slice) -> None:
        if _service_name(old) != _service_name(new):  # users may relabel a slice: both Services must look
            self._enqueue_service_of(old)
            self._enqueue_service_of(new)
        elif managed(old) != managed(new) or (managed(new) and self.tracker.should_sync(new)):
            self._enqueue_service_of(new)

    def _slice_deleted(self, endpoint_slice: Slice | DeletedFinalStateUnknown) -> None:
        if isinstance(endpoint_slice, DeletedFinalStateUnknown):
            endpoint_slice = endpoint_slice.obj
        if managed(endpoint_slice) and self.tracker.has(endpoint_slice):
            if not self.tracker.handle_deletion(endpoint_slice):  # not a deletion of ours
                self._enqueue_service_of(endpoint_slice)

    def _enqueue_service_of(self, endpoint_slice: Slice) -> None:
        name = _service_name(endpoint_slice)
        if name:
            self.queue.add_after(f"{endpoint_slice['metadata']['namespace']}/{name}", SLICE_CHANGE_MIN_DELAY)

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _zone(old) == _zone(new):
            return
        node = new["metadata"]["name"]
        for pod in self.pods.lister().list():
            if (pod.get("spec") or {}).get("nodeName") == node:
                self.pod_handler.on_add(pod)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cached = self.services.indexer.get_by_key(key)
        if cached is None:
            self.trigger_times.delete(key)
            self.tracker.delete_service(key)
            return
        spec = cached.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        service = {"apiVersion": "v1", "kind": "Service", **cached}
        pods = [pod for pod in self.pods.lister().list(namespace) if util.selects(service, pod)]
        slices = [s for s in self.slices.lister().list(namespace)
                  if managed(s) and _service_name(s) == name and not s["metadata"].get("deletionTimestamp")]
        if self.tracker.stale(key, slices):
            raise StaleCache("EndpointSlice informer cache is out of date")
        trigger_time = self.trigger_times.compute(service, pods)
        nodes = {node["metadata"]["name"]: node for node in self.nodes.lister().list()}
        plan = reconcile(service, pods, slices, nodes, self.max_endpoints)
        try:
            await self.finalize(service, plan, trigger_time)
        except errors.APIStatusError as error:
            plan.errors.append(str(error))
        if plan.errors:
            message = plan.errors[0] if len(plan.errors) == 1 else f"[{', '.join(plan.errors)}]"
            self.recorder.event(service, "Warning", "FailedToUpdateEndpointSlices",
                                f"Error updating Endpoint Slices for Service {key}: {message}")
            raise SyncError(message)

    async def finalize(self, service: dict[str, Any], plan: Plan, trigger_time: str | None) -> None:
        """Write the plan: creates (unless the Service is being deleted), then updates, then deletes."""
        namespace = service["metadata"]["namespace"]
        if not service["metadata"].get("deletionTimestamp"):
            for endpoint_slice in plan.create:
                _set_trigger_time(endpoint_slice, trigger_time)
                try:
                    created = await self.client.create(resources.ENDPOINT_SLICES, endpoint_slice, namespace)
                except errors.APIStatusError as error:
                    if errors.is_namespace_terminating(error):
                        return
                    raise
                self.tracker.update(created)
        for endpoint_slice in plan.update:
            _set_trigger_time(endpoint_slice, trigger_time)
            endpoint_slice.setdefault("apiVersion", "discovery.k8s.io/v1")
            endpoint_slice.setdefault("kind", "EndpointSlice")
            self.tracker.update(await self.client.update(resources.ENDPOINT_SLICES, endpoint_slice, namespace))
        for endpoint_slice in plan.delete:
            try:
                await self.client.delete(resources.ENDPOINT_SLICES, endpoint_slice["metadata"]["name"], namespace)
            except errors.NotFound:
                pass
            self.tracker.expect_deletion(endpoint_slice)


class StaleCache(Exception):
    """The slice cache does not show this controller's last writes yet: retry later."""


class SyncError(Exception):
    """Some of the Service's slices could not be written, or some pods had to be skipped."""


class EndpointSliceTracker:
    """What this controller last wrote, per Service: slice uid → the `metadata.generation` the write got, or
    None for a deletion not yet seen.

    The apiserver counts a slice's generations (any change to its endpoints, ports, address type or labels
    is a new one), so comparing the cache's generation of a slice with the one recorded here tells an older
    copy from ours, as kube's tracker does. A copy older than our last write must not be acted on: the sync
    would place the endpoints we added to that slice a second time, in a new slice.
    """

    def __init__(self) -> None:
        self._by_service: dict[str, dict[str, int | None]] = {}

    def update(self, endpoint_slice: Slice) -> None:
        self._record(endpoint_slice, _generation(endpoint_slice))

    def expect_deletion(self, endpoint_slice: Slice) -> None:
        self._record(endpoint_slice, None)

    def _record(self, endpoint_slice: Slice, generation: int | None) -> None:
        uid = endpoint_slice["metadata"].get("uid")
        if uid:
            self._by_service.setdefault(_service_key(endpoint_slice), {})[uid] = generation

    def has(self, endpoint_slice: Slice) -> bool:
        return endpoint_slice["metadata"].get("uid") in self._by_service.get(_service_key(endpoint_slice), {})

    def should_sync(self, endpoint_slice: Slice) -> bool:
        """False for the echo of our own last write of this slice (and for older copies of it)."""
        written = self._by_service.get(_service_key(endpoint_slice), {})
        uid = endpoint_slice["metadata"].get("uid")
        if uid not in written:
            return True
        recorded = written[uid]
        return recorded is None or _generation(endpoint_slice) > recorded

    def handle_deletion(self, endpoint_slice: Slice) -> bool:
        """Forget a deleted slice; False if it was deleted by someone else."""
        written = self._by_service.get(_service_key(endpoint_slice), {})
        uid = endpoint_slice["metadata"].get("uid")
        return uid not in written or written.pop(uid) is None

    def stale(self, service_key: str, slices: list[Slice]) -> bool:
        """Whether the cache misses a slice we wrote or holds an older generation of it, or still has one we
        deleted."""
        written = self._by_service.get(service_key, {})
        cached = {s["metadata"].get("uid"): _generation(s) for s in slices}
        return any(uid in cached if generation is None else cached.get(uid, -1) < generation
                   for uid, generation in written.items())

    def delete_service(self, service_key: str) -> None:
        self._by_service.pop(service_key, None)


def managed(endpoint_slice: Slice) -> bool:
    return (endpoint_slice["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == CONTROLLER_NAME


def _service_name(endpoint_slice: Slice) -> str:
    return str((endpoint_slice["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL, ""))


def _generation(endpoint_slice: Slice) -> int:
    return int(endpoint_slice["metadata"].get("generation") or 0)


def _service_key(endpoint_slice: Slice) -> str:
    return f"{endpoint_slice['metadata'].get('namespace', '')}/{_service_name(endpoint_slice)}"


def _zone(node: dict[str, Any]) -> str | None:
    return (node["metadata"].get("labels") or {}).get(util.ZONE_LABEL)


def _set_trigger_time(endpoint_slice: Slice, trigger_time: str | None) -> None:
    annotations = endpoint_slice["metadata"].setdefault("annotations", {})
    annotations.pop(util.TRIGGER_TIME_ANNOTATION, None)
    if trigger_time:
        annotations[util.TRIGGER_TIME_ANNOTATION] = trigger_time

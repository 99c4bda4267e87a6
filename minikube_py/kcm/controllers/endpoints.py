"""The Endpoints controller (kube's `endpoint` controller): one Endpoints object per Service with a selector.

An Endpoints object has the Service's name and lists where its traffic can go, in `subsets`: each subset is a
set of addresses (pod IPs) that all serve the same set of ports. Ready pods are in `addresses`, the others in
`notReadyAddresses` (with `spec.publishNotReadyAddresses` every pod is in `addresses`, terminating ones
included). Handlers only enqueue the Service's "namespace/name" key:
* a Service added, changed or deleted → its key;
* a pod added, changed (readiness, IPs, labels, deletion) or deleted → every Service selecting it, before or
  after the change (endpointutil.services_to_update);
* an Endpoints object deleted → its key (recreated if the Service still wants it); and once at start every
  existing Endpoints' key, so the ones whose Service went away while we were down are deleted.

`sync(key)`:
1. Service gone → its Endpoints are deleted. ExternalName Services and Services without a selector are left
   alone: their Endpoints are somebody else's (the apiserver's own `default/kubernetes`, for one).
2. For each selected pod that has an IP (and is not finished, nor terminating unless published anyway): one
   address (IP of the Service's first IP family, `nodeName`, `targetRef`, `hostname` when the pod's
   subdomain is this Service) per Service port whose `targetPort` the pod resolves (a named port the pod
   lacks: no address for that port). A headless Service without ports gets port-less addresses.
3. The per-(address, port) entries are *repacked* into the canonical form: addresses grouped by the exact
   set of ports they serve (an address not ready on any port is not ready), addresses sorted by IP and pod
   uid, ports and subsets in kube's hash order (endpointutil.go_hash), so equal content compares equal.
4. Nothing is written when subsets, labels and the over-capacity annotation already match (pod resource
   versions in `targetRef` do not count). Otherwise the Endpoints get the Service's labels (plus
   `service.kubernetes.io/headless` for a Service without a cluster IP), the annotation
   `endpoints.kubernetes.io/last-change-trigger-time`, and, beyond 1000 addresses, are truncated (ready
   addresses kept first, each subset keeping its share) and annotated `endpoints.kubernetes.io/over-capacity:
   truncated`.

Write failures are returned to the worker (Conflict, AlreadyExists: retried with backoff once the cache has
caught up) with the events kube records: FailedToCreateEndpoint "Failed to create endpoint for service
NS/NAME: ERROR" and FailedToUpdateEndpoint "Failed to update endpoint NS/NAME: ERROR". A create refused
because the namespace is being deleted is dropped.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key, split_meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import endpointutil as util
from minikube_py.kcm.controllers.podcontrol import is_ready

MAX_CAPACITY = 1000  # addresses kept in one Endpoints object
OVER_CAPACITY_ANNOTATION = "endpoints.kubernetes.io/over-capacity"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"  # old leader-election records: not ours
MAX_RETRIES = 15

log = logging.getLogger(__name__)


class EndpointsController:
    name = "endpoints-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.services = ctx.informers.informer_for(resources.SERVICES)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.endpoints = ctx.informers.informer_for(resources.ENDPOINTS)
        self.queue = RateLimitingQueue(name="endpoint", clock=ctx.clock)
        self.trigger_times = util.TriggerTimeTracker()
        self._stale: dict[str, str] = {}  # key -> resourceVersion of the Endpoints our last update replaced
        self.services.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda _, new: self._enqueue(new),
                                                    on_delete=self._enqueue))
        self.pod_handler = util.ServicePodHandler(self.services.lister(), self.queue)
        self.pods.add_event_handler(self.pod_handler)
        self.endpoints.add_event_handler(FuncHandler(on_delete=self._enqueue))

    async def run(self, workers: int) -> None:
        await asyncio.gather(self.services.wait_for_cache_sync(), self.pods.wait_for_cache_sync(),
                             self.endpoints.wait_for_cache_sync())
        self.check_leftover_endpoints()
        try:
            await run_workers(self.queue, self.sync, workers, name="endpoint", max_retries=MAX_RETRIES, logger=log)
        finally:
            self.queue.shut_down()

    def check_leftover_endpoints(self) -> None:
        """Queue every existing Endpoints' key: those whose Service is gone get deleted."""
        for endpoints in self.endpoints.lister().list():
            if LEADER_ANNOTATION not in (endpoints["metadata"].get("annotations") or {}):
                self.queue.add(meta_namespace_key(endpoints))

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def _enqueue(self, obj: dict[str, Any] | DeletedFinalStateUnknown, *_: Any) -> None:
        self.queue.add(meta_namespace_key(obj))

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        service = self.services.indexer.get_by_key(key)
        if service is None:
            try:
                await self.client.delete(resources.ENDPOINTS, name, namespace)
            except errors.NotFound:
                pass
            self.trigger_times.delete(key)
            self._stale.pop(key, None)
            return
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        pods = [pod for pod in self.pods.lister().list(namespace) if util.selects(service, pod)]
        trigger_time = self.trigger_times.compute(service, pods)  # even when nothing is written
        subsets = repack_subsets(endpoint_entries(service, pods))
        current = self.endpoints.indexer.get_by_key(key)
        if current is not None and self._stale.get(key) == current["metadata"].get("resourceVersion"):
            raise StaleCache(f"endpoints informer cache is out of date, resource version "
                             f"{self._stale[key]} already processed for endpoints {key}")
        if current is not None and _up_to_date(current, service, subsets):
            return
        await self._write(service, current, subsets, trigger_time)

    async def _write(self, service: dict[str, Any], current: dict[str, Any] | None, subsets: list[dict[str, Any]],
                     trigger_time: str | None) -> None:
        endpoints = desired_endpoints(service, current, subsets, trigger_time)
        namespace, key = service["metadata"]["namespace"], meta_namespace_key(service)
        try:
            if current is None:
                await self.client.create(resources.ENDPOINTS, endpoints, namespace)
                return
            updated = await self.client.update(resources.ENDPOINTS, endpoints, namespace)
        except errors.APIStatusError as error:
            if current is None and errors.is_namespace_terminating(error):
                return
            if current is None:
                self.recorder.event(endpoints, "Warning", "FailedToCreateEndpoint",
                                    f"Failed to create endpoint for service {key}: {error}")
            else:
                self.recorder.event(endpoints, "Warning", "FailedToUpdateEndpoint",
                                    f"Failed to update endpoint {key}: {error}")
            raise
        if updated["metadata"].get("resourceVersion") != current["metadata"].get("resourceVersion"):
            self._stale[key] = current["metadata"].get("resourceVersion", "")


def desired_endpoints(service: dict[str, Any], current: dict[str, Any] | None, subsets: list[dict[str, Any]],
                      trigger_time: str | None) -> dict[str, Any]:
    """`current` (or a new object) with the subsets, the Service's labels and the annotations to write."""
    meta = service["metadata"]
    endpoints = copy.deepcopy(current) if current is not None else {
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
    endpoints.update(apiVersion="v1", kind="Endpoints")
    labels = dict(meta.get("labels") or {})
    labels.pop(util.HEADLESS_LABEL, None)
    if util.headless(service):
        labels[util.HEADLESS_LABEL] = ""
    endpoints["metadata"]["labels"] = labels
    annotations = endpoints["metadata"].setdefault("annotations", {})
    annotations.pop(util.TRIGGER_TIME_ANNOTATION, None)
    annotations.pop(OVER_CAPACITY_ANNOTATION, None)
    if trigger_time:
        annotations[util.TRIGGER_TIME_ANNOTATION] = trigger_time
    endpoints["subsets"], truncated = truncate(subsets)
    if not endpoints["subsets"]:
        del endpoints["subsets"]  # kube's `subsets,omitempty`
    if truncated:
        annotations[OVER_CAPACITY_ANNOTATION] = "truncated"
    return endpoints


class StaleCache(Exception):
    """The cache still shows an Endpoints object this controller has already replaced: retry later."""


def endpoint_entries(service: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One single-address subset per (pod, resolved port), to be repacked."""
    spec = service.get("spec") or {}
    publish_all = bool(spec.get("publishNotReadyAddresses"))
    entries = []
    for pod in pods:
        if not util.should_pod_be_in_endpoints(pod, publish_all):
            continue
        address = _address(service, pod)
        if address is None:
            continue
        field = "addresses" if publish_all or is_ready(pod) else "notReadyAddresses"
        if not spec.get("ports"):
            if util.headless(service):
                entries.append({field: [address]})
            continue
        for service_port in spec["ports"]:
            number = util.find_port(pod, service_port)
            if number is not None:
                entries.append({field: [address], "ports": [_endpoint_port(service_port, number)]})
    return entries


def _address(service: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's address in the Service's first IP family; None if the pod has no IP of that family."""
    spec = service.get("spec") or {}
    families = spec.get("ipFamilies") or []
    if families:
        want_ipv6 = families[0] == "IPv6"
    elif not util.headless(service):
        want_ipv6 = util.is_ipv6(spec["clusterIP"])
    else:
        want_ipv6 = util.is_ipv6((pod.get("status") or {}).get("podIP") or "")
    ip = next((ip for ip in util.pod_ips(pod) if util.is_ipv6(ip) == want_ipv6), None)
    if ip is None:
        return None
    address: dict[str, Any] = {"ip": ip, "targetRef": util.target_ref(pod)}
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        address["nodeName"] = node
    if util.should_set_hostname(pod, service):
        address["hostname"] = pod["spec"]["hostname"]
    return address


def _endpoint_port(service_port: dict[str, Any], number: int) -> dict[str, Any]:
    port: dict[str, Any] = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


# repacking -----------------------------------------------------------------------------------------------

NO_PORTS = "-"  # the port of addresses that serve no port at all (a headless Service without ports)


def repack_subsets(subsets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The canonical form: addresses grouped by the exact set of ports they serve, sorted as kube sorts."""
    addresses: dict[tuple[str, str], dict[str, Any]] = {}  # (ip, pod uid) -> the first copy seen
    ready_by_port: dict[str, dict[tuple[str, str], bool]] = {}  # port (as a key) -> address -> ready
    ports: dict[str, dict[str, Any] | None] = {}
    for subset in subsets:
        for port in subset.get("ports") or [None]:
            port_key = util.go_dump(port, util.ENDPOINT_PORT) if port is not None else NO_PORTS
            ports[port_key] = port
            by_address = ready_by_port.setdefault(port_key, {})
            for field, ready in (("addresses", True), ("notReadyAddresses", False)):
                for address in subset.get(field) or []:
                    identity = (address["ip"], (address.get("targetRef") or {}).get("uid", ""))
                    addresses.setdefault(identity, address)
                    by_address[identity] = by_address.get(identity, True) and ready  # not ready wins
    groups: dict[frozenset[tuple[tuple[str, str], bool]], list[dict[str, Any]]] = {}
    for port_key, by_address in ready_by_port.items():
        members = groups.setdefault(frozenset(by_address.items()), [])
        if ports[port_key] is not None:
            members.append(ports[port_key])
    repacked = [_subset([addresses[a] for a, ready in group if ready], [addresses[a] for a, ready in group if not ready],
                        group_ports) for group, group_ports in groups.items()]
    return sorted(repacked, key=lambda subset: util.go_hash(subset, util.ENDPOINT_SUBSET))


def _subset(ready: list[dict[str, Any]], not_ready: list[dict[str, Any]],
            ports: list[dict[str, Any]]) -> dict[str, Any]:
    subset: dict[str, Any] = {}
    if ready:
        subset["addresses"] = sorted(ready, key=_address_order)
    if not_ready:
        subset["notReadyAddresses"] = sorted(not_ready, key=_address_order)
    if ports:
        subset["ports"] = sorted(ports, key=lambda port: util.go_hash(port, util.ENDPOINT_PORT))
    return subset


def _address_order(address: dict[str, Any]) -> tuple[bytes, bool, str]:
    ref = address.get("targetRef")
    return address["ip"].encode(), ref is not None, (ref or {}).get("uid", "")


def truncate(subsets: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """At most MAX_CAPACITY addresses: not-ready ones go first, then ready ones, each subset keeping its share."""
    ready, not_ready = _count(subsets, "addresses"), _count(subsets, "notReadyAddresses")
    if ready + not_ready <= MAX_CAPACITY:
        return subsets, False
    field, room, total = ("addresses", MAX_CAPACITY, ready) if ready > MAX_CAPACITY else \
        ("notReadyAddresses", MAX_CAPACITY - ready, not_ready)
    left, kept = room, []
    for subset in subsets:
        subset = dict(subset)
        share = min(math.ceil(len(subset.get(field) or []) / total * room), left)
        subset[field] = (subset.get(field) or [])[:share]
        if field == "addresses":
            subset.pop("notReadyAddresses", None)
        left -= len(subset[field])
        subset = {key: value for key, value in subset.items() if value}
        if subset.get("addresses") or subset.get("notReadyAddresses"):
            kept.append(subset)  # a subset left without any address would be invalid
    return kept, True


def _count(subsets: list[dict[str, Any]], field: str) -> int:
    return sum(len(subset.get(field) or []) for subset in subsets)


def _up_to_date(current: dict[str, Any], service: dict[str, Any], subsets: list[dict[str, Any]]) -> bool:
    current_subsets = current.get("subsets") or []
    labels = dict(current["metadata"].get("labels") or {})
    labels.pop(util.HEADLESS_LABEL, None)
    # kube's "capacity annotation set correctly": never over capacity, so no annotation
    capacity_ok = (_count(current_subsets, "addresses") + _count(current_subsets, "notReadyAddresses") <= MAX_CAPACITY
                   and OVER_CAPACITY_ANNOTATION not in (current["metadata"].get("annotations") or {}))
    return (_without_resource_versions(current_subsets) == subsets
            and labels == (service["metadata"].get("labels") or {}) and capacity_ok)


def _without_resource_versions(subsets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The subsets as the API returned them, minus what kube's comparison ignores (pod resource versions)."""
    cleaned = copy.deepcopy(subsets)
    for subset in cleaned:
        for field in ("addresses", "notReadyAddresses"):
            for address in subset.get(field) or []:
                (address.get("targetRef") or {}).pop("resourceVersion", None)
    return cleaned


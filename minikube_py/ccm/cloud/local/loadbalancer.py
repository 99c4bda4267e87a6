"""The local cloud's load balancers: each LoadBalancer Service gets an address of its own on this machine, and
a TCP proxy (proxy.py) on every one of its ports sends the traffic to the Service's ready endpoints.

    balancers = LocalLoadBalancers(config, store, "local")
    await balancers.start(client_builder, stop)            # the endpoints watch; adopts existing balancers
    status = await balancers.ensure_load_balancer("mkpy", service, nodes)
    # status == {"ingress": [{"ip": "127.0.100.1", "ipMode": "VIP"}]}: `curl http://127.0.100.1:<port>` works

Addresses. A load balancer keeps its address for its whole life. It is `spec.loadBalancerIP` when the Service
asks for one (refused when another load balancer holds it), else the first address of `loadBalancerCIDR`
(127.0.100.0/24: loopback, which Linux routes entirely to `lo`, so binding needs no setup) that no load
balancer holds. Every TCP port of the Service becomes a listener on address:port; UDP and SCTP are
`Unimplemented`. When a port cannot be bound (in use by another program, or the address is not on this host)
the call fails with that reason and the service controller retries later.

Backends. A cloud load balancer sends traffic to nodes, and kube-proxy on a node forwards it to a pod. This
cloud skips the hop and sends it straight to the pods the node would have chosen: with
`externalTrafficPolicy: Cluster` every ready endpoint of the Service (as long as there is at least one node to
go through), with `Local` only the endpoints on the nodes given to `ensure_load_balancer`/
`update_load_balancer` (kube-proxy's Local policy keeps traffic on the node it arrived at). The endpoints come
from a watch of v1 Endpoints that the load balancers keep on their own: a scaled Deployment changes a proxy's
backends within the watch's latency, without the service controller doing anything. Each service port is
matched to the endpoint port with the same name, as kube-proxy does.

State. Every load balancer is a record in the cloud state's "loadBalancers" section, named by
`default_load_balancer_name` (what `mkpy cloud lbs` lists):

    {"name": ..., "service": "<ns>/<name>", "address": "127.0.100.1", "externalTrafficPolicy": "Cluster",
     "ports": [{"name": "http", "protocol": "TCP", "port": 80}], "backends": ["10.244.0.5:8080"],
     "nodes": ["mkpy", "mkpy-m02"]}

The listeners live in the CCM's process, so the records are what survives a restart: `start()` waits for the
endpoints cache, then re-opens the listeners of every record (adoption), so traffic resumes without the
service controller re-creating anything. When `stop` is set the listeners close and the records stay.

Usage rules: call `start()` before anything else (the other calls wait until adoption is done); calls may come
from several controller workers at once: changes to the balancers are serialized by one lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from minikube_py.ccm.cloud.interface import (
    ClientBuilder,
    CloudProviderError,
    LoadBalancerStatus,
    Node,
    Service,
    Unimplemented,
    default_load_balancer_name,
)
from minikube_py.ccm.cloud.local.config import LocalCloudConfig
from minikube_py.ccm.cloud.local.proxy import Backend, ListenError, TCPProxy
from minikube_py.ccm.cloud.local.state import CloudStateStore
from minikube_py.client import resources
from minikube_py.client.informer import FuncHandler, SharedIndexInformer, SharedInformerFactory
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key

log = logging.getLogger(__name__)

CLIENT_NAME = "local-cloud-load-balancers"
SECTION = "loadBalancers"
Port = dict[str, Any]  # {"name": "http", "protocol": "TCP", "port": 80}


@dataclass
class _Balancer:
    """One load balancer as it runs: its record's fields and a proxy per port."""

    name: str
    service: str
    address: str
    local_traffic: bool  # externalTrafficPolicy: Local
    nodes: list[str]
    ports: list[Port] = field(default_factory=list)
    proxies: dict[int, TCPProxy] = field(default_factory=dict)

    @classmethod
    def from_record(cls, name: str, record: dict[str, Any]) -> _Balancer:
        return cls(name, record["service"], record["address"], record.get("externalTrafficPolicy") == "Local",
                   list(record.get("nodes") or []))

    def record(self) -> dict[str, Any]:
        backends = {backend for proxy in self.proxies.values() for backend in proxy.backends}
        return {"name": self.name, "service": self.service, "address": self.address,
                "externalTrafficPolicy": "Local" if self.local_traffic else "Cluster", "ports": self.ports,
                "backends": [f"{ip}:{port}" for ip, port in sorted(backends)], "nodes": self.nodes}

    def status(self) -> LoadBalancerStatus:
        return ingress(self.address)


class LocalLoadBalancers:
    """The local cloud's LoadBalancer capability (interface.LoadBalancer)."""

    def __init__(self, config: LocalCloudConfig, store: CloudStateStore, provider_name: str) -> None:
        self._config = config
        self._store = store
        self._provider_name = provider_name
        self._balancers: dict[str, _Balancer] = {}
        self._lock = asyncio.Lock()
        self._ready = asyncio.Event()
        self._stopped = False
        self._endpoints: SharedIndexInformer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, client_builder: ClientBuilder, stop: asyncio.Event) -> None:
        """Start watching Endpoints; once the cache has synced, adopt the balancers in the state. Everything
        ends when `stop` is set."""
        informers = SharedInformerFactory(await client_builder.client(CLIENT_NAME))
        self._endpoints = informers.informer_for(resources.ENDPOINTS)
        self._endpoints.add_event_handler(FuncHandler(on_add=self._endpoints_changed,
                                                      on_update=lambda _, new: self._endpoints_changed(new),
                                                      on_delete=self._endpoints_changed))
        informers.start()
        self._task = asyncio.create_task(self._run(informers, stop), name=CLIENT_NAME)

    # interface.LoadBalancer ------------------------------------------------------------------------------

    async def get_load_balancer(self, cluster_name: str, service: Service) -> LoadBalancerStatus | None:
        record = self._store.read()[SECTION].get(self.get_load_balancer_name(cluster_name, service))
        return None if record is None else ingress(record["address"])

    def get_load_balancer_name(self, cluster_name: str, service: Service) -> str:
        return default_load_balancer_name(service)

    async def ensure_load_balancer(self, cluster_name: str, service: Service, nodes: list[Node]) -> LoadBalancerStatus:
        name = self.get_load_balancer_name(cluster_name, service)
        key = meta_namespace_key(service)
        ports = tcp_ports(service, key)
        spec = service.get("spec") or {}
        node_names = sorted(node["metadata"]["name"] for node in nodes)
        async with self._serialized():
            address = self._address_for(name, key, spec.get("loadBalancerIP") or "")
            balancer = self._balancers.get(name)
            if balancer is not None and balancer.address != address:  # spec.loadBalancerIP changed
                await self._close(self._balancers.pop(name))
                with self._store.edit() as state:
                    state[SECTION].pop(name, None)
                balancer = None
            if balancer is None:
                balancer = _Balancer(name, key, address, False, [])
            await self._listen(balancer, ports)
            balancer.local_traffic = spec.get("externalTrafficPolicy") == "Local"
            balancer.nodes = node_names
            self._balancers[name] = balancer
            self._refresh(balancer)
            return balancer.status()

    async def update_load_balancer(self, cluster_name: str, service: Service, nodes: list[Node]) -> None:
        name = self.get_load_balancer_name(cluster_name, service)
        if name not in self._balancers and name not in self._store.read()[SECTION]:
            raise CloudProviderError(f"load balancer {name} of service {meta_namespace_key(service)} does not exist")
        await self.ensure_load_balancer(cluster_name, service, nodes)

    async def ensure_load_balancer_deleted(self, cluster_name: str, service: Service) -> None:
        name = self.get_load_balancer_name(cluster_name, service)
        async with self._serialized():
            balancer = self._balancers.pop(name, None)
            if balancer is not None:
                await self._close(balancer)
            with self._store.edit() as state:
                state[SECTION].pop(name, None)

    # addresses and listeners -----------------------------------------------------------------------------

    def _address_for(self, name: str, service: str, requested: str) -> str:
        """The address the load balancer `name` is to have; CloudProviderError when it can have none."""
        records = self._store.read()[SECTION]
        holders = {record.get("address"): other for other, record in records.items() if other != name}
        holders.update({balancer.address: other for other, balancer in self._balancers.items() if other != name})
        if requested:
            try:
                ipaddress.ip_address(requested)
            except ValueError:
                raise CloudProviderError(f"spec.loadBalancerIP {requested!r} is not an IP address") from None
            if requested in holders:
                holder = holders[requested]
                raise CloudProviderError(f"spec.loadBalancerIP {requested} is already used by load balancer {holder} "
                                         f"(service {records.get(holder, {}).get('service', '?')})")
            return requested
        current = self._balancers[name].address if name in self._balancers else records.get(name, {}).get("address")
        if current and current not in holders:
            return current
        cidr = self._config.load_balancer_cidr
        for host in cidr.hosts():
            if str(host) not in holders:
                return str(host)
        raise CloudProviderError(f"no free load-balancer address for service {service}: all "
                                 f"{sum(1 for _ in cidr.hosts())} addresses of loadBalancerCIDR {cidr} are in use")

    async def _listen(self, balancer: _Balancer, ports: list[Port]) -> None:
        """Open the listeners `ports` need and close those they no longer need; on a failure, nothing
        changes (listeners opened so far are closed again) and ListenError says which address:port and why."""
        opened: list[TCPProxy] = []
        try:
            for port in ports:
                if port["port"] not in balancer.proxies:
                    proxy = TCPProxy(balancer.address, port["port"],
                                     health_check_interval=self._config.health_check_interval)
                    await proxy.start()
                    opened.append(proxy)
                    balancer.proxies[port["port"]] = proxy
        except ListenError:
            for proxy in opened:
                del balancer.proxies[proxy.port]
                await proxy.close()
            raise
        wanted = {port["port"] for port in ports}
        for number in [number for number in balancer.proxies if number not in wanted]:
            await balancer.proxies.pop(number).close()
        balancer.ports = ports
        if opened:
            log.info("%s cloud: load balancer %s of service %s listens on %s port(s) %s", self._provider_name,
                     balancer.name, balancer.service, balancer.address, ", ".join(str(p.port) for p in opened))

    async def _close(self, balancer: _Balancer) -> None:
        for proxy in balancer.proxies.values():
            await proxy.close()
        balancer.proxies.clear()
        log.info("%s cloud: load balancer %s of service %s closed", self._provider_name, balancer.name,
                 balancer.service)

    # backends ------------------------------------------------------------------------------------------------

    def _endpoints_changed(self, endpoints: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(endpoints)
        for balancer in list(self._balancers.values()):
            if balancer.service == key:
                self._refresh(balancer)

    def _refresh(self, balancer: _Balancer) -> None:
        """Give each of the balancer's proxies its backends from the cached Endpoints; record the result."""
        assert self._endpoints is not None, "start() was not called"
        endpoints = self._endpoints.indexer.get_by_key(balancer.service)
        for port in balancer.ports:
            proxy = balancer.proxies.get(port["port"])
            if proxy is not None:
                proxy.set_backends(endpoint_backends(endpoints, port["name"], set(balancer.nodes),
                                                     balancer.local_traffic))
        with self._store.edit() as state:
            state[SECTION][balancer.name] = balancer.record()

    # life cycle ----------------------------------------------------------------------------------------------

    async def _run(self, informers: SharedInformerFactory, stop: asyncio.Event) -> None:
        adopting = asyncio.create_task(self._adopt())
        try:
            await stop.wait()
        finally:
            adopting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await adopting
            async with self._lock:
                self._stopped = True
                for balancer in self._balancers.values():
                    await self._close(balancer)
                self._balancers.clear()
            self._ready.set()  # calls waiting for adoption now fail at once
            await informers.stop()

    async def _adopt(self) -> None:
        """Once the endpoints cache is synced, re-open the listeners of every balancer in the state."""
        assert self._endpoints is not None
        await self._endpoints.wait_for_cache_sync()
        async with self._lock:
            for name, record in self._store.read()[SECTION].items():
                try:
                    balancer = _Balancer.from_record(name, record)
                    await self._listen(balancer, [dict(port, name=port.get("name", "")) for port in record["ports"]])
                except (ListenError, KeyError, TypeError) as error:
                    log.warning("%s cloud: cannot adopt load balancer %s: %s (the service controller will retry)",
                                self._provider_name, name, error)
                    continue
                self._balancers[name] = balancer
                self._refresh(balancer)
            log.info("%s cloud: adopted %d load balancer(s)", self._provider_name, len(self._balancers))
        self._ready.set()

    @contextlib.asynccontextmanager
    async def _serialized(self) -> AsyncIterator[None]:
        """Wait for adoption, then hold the lock; CloudProviderError once stopped."""
        await self._ready.wait()
        async with self._lock:
            if self._stopped:
                raise CloudProviderError(f"the {self._provider_name} cloud's load balancers are stopped")
            yield


def ingress(address: str) -> LoadBalancerStatus:
    return {"ingress": [{"ip": address, "ipMode": "VIP"}]}


def tcp_ports(service: Service, key: str) -> list[Port]:
    """The service's ports as listeners; Unimplemented for a port that is not TCP."""
    ports = []
    for port in (service.get("spec") or {}).get("ports") or []:
        protocol = port.get("protocol") or "TCP"
        if protocol != "TCP":
            raise Unimplemented(f"local cloud load balancers carry TCP only, and port {port.get('port')}/"
                                f"{protocol} of service {key} is {protocol}")
        ports.append({"name": port.get("name") or "", "protocol": protocol, "port": int(port["port"])})
    return ports


def endpoint_backends(endpoints: dict[str, Any] | None, port_name: str, nodes: set[str],
                      local_traffic: bool) -> list[Backend]:
    """The ready endpoint addresses of the service port `port_name`, as (ip, target port): none without
    nodes; with Local traffic only those on `nodes`."""
    if endpoints is None or not nodes:
        return []
    backends = []
    for subset in endpoints.get("subsets") or []:
        target = next((port["port"] for port in subset.get("ports") or []
                       if (port.get("name") or "") == port_name and (port.get("protocol") or "TCP") == "TCP"), None)
        if target is None:
            continue
        for address in subset.get("addresses") or []:
            if not local_traffic or address.get("nodeName") in nodes:
                backends.append((address["ip"], int(target)))
    return backends

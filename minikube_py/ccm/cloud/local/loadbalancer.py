"""The local cloud's load balancers: each LoadBalancer Service gets an address of its own on this machine, and
a TCP proxy (proxy.py) on every one of its ports sends the traffic to the Service's ready endpoints.

    balancers = LocalLoadBalancers(config, store, "local")
    await balancers.serve_recorded(stop, hand_back_after)  # at process start: the recorded balancers serve
    await balancers.start(client_builder, stop)            # once leading: the endpoints watch; adoption
    status = await balancers.ensure_load_balancer("mkpy", service, nodes)
    # status == {"ingress": [{"ip": "127.0.100.1", "ipMode": "VIP"}]}: `curl http://127.0.100.1:<port>` works

Addresses. A load balancer keeps its address for its whole life. It is `spec.loadBalancerIP` when the Service
asks for one (refused when another load balancer holds it), else the first address of `loadBalancerCIDR`
(127.0.100.0/24: loopback, which Linux routes entirely to `lo`, so binding needs no setup) that no load
balancer holds. Every TCP port of the Service becomes a listener on address:port; UDP and SCTP are
`Unimplemented`. When a port cannot be bound (in use by another program, or the address is not on this host)
the call fails with that reason and the service controller retries later. There is no fallback to another
port on a shared address: on Linux every address of 127.0.0.0/8 is local, so a distinct address is always
possible. When every address of the CIDR is held (254 load balancers with the default /24), the call fails
with "no free load-balancer address ..." (a SyncLoadBalancerFailed event, retried with backoff) until one is
released or `loadBalancerCIDR` is widened (any part of 127/8 works without setup).

Backends. A cloud load balancer sends traffic to nodes, and kube-proxy on a node forwards it to a pod. This
cloud skips the hop and sends it straight to the pods the node would have chosen: with
`externalTrafficPolicy: Cluster` every ready endpoint of the Service (as long as there is at least one node to
go through), with `Local` only the endpoints on the nodes given to `ensure_load_balancer`/
`update_load_balancer` (kube-proxy's Local policy keeps traffic on the node it arrived at). The endpoints come
from a watch of v1 Endpoints that the load balancers keep on their own: a scaled Deployment changes a proxy's
backends within the watch's latency, without the service controller doing anything. Each service port is
matched to the endpoint port with the same name, as kube-proxy does.

State. Every load balancer is a record in the cloud state's "loadBalancers" section, named by
`default_load_balancer_name` (what `mkpy cloud lbs` lists), with the backends of each port:

    {"name": ..., "service": "<ns>/<name>", "address": "127.0.100.1", "externalTrafficPolicy": "Cluster",
     "ports": [{"name": "http", "protocol": "TCP", "port": 80, "backends": ["10.244.0.5:8080"]}],
     "backends": ["10.244.0.5:8080"], "nodes": ["mkpy", "mkpy-m02"]}

A restarted CCM. The listeners live in the CCM's process, so the records are what survives it, and a new
process serves them again in two steps:
1. `serve_recorded()`, as soon as the process starts, before it leads and without the apiserver: every
   record's listeners are opened with the backends the record names (health checks drop those that went
   away). An address:port that cannot be bound is in use, normally by the live leader of another CCM
   process, and is left to it. This process writes nothing to the state: it is not in charge yet. If it has
   not become leader `hand_back_after` seconds later, another CCM leads, and it closes what it opened, so
   the leader can open them (this happens only when it started while no leader was alive and another CCM
   then won the Lease).
2. `start()`, called by `initialize` once the process leads: the Endpoints watch starts, the listeners
   already open are kept (no connection is dropped at the takeover) and get their backends from the
   endpoints, and the other records' listeners are opened (adoption). One that is still in use is tried
   again every `adopt_retry_interval` seconds; the service controller, whose ensure fails meanwhile, retries
   it too.
When `stop` is set the listeners close and the records stay.

Usage rules: call `serve_recorded()` (optional) then `start()` before anything else (the other calls wait
until adoption is done); calls may come from several controller workers at once: changes to the balancers
are serialized by one lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import AsyncIterator, Collection, Iterable
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
ADOPT_RETRY_INTERVAL = 2.0  # seconds between tries to open a recorded listener still in use at the takeover
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
        ports = [{**port, "backends": backend_strings(self.proxies[port["port"]].backends)} for port in self.ports]
        backends = {backend for proxy in self.proxies.values() for backend in proxy.backends}
        return {"name": self.name, "service": self.service, "address": self.address,
                "externalTrafficPolicy": "Local" if self.local_traffic else "Cluster", "ports": ports,
                "backends": backend_strings(backends), "nodes": self.nodes}

    def status(self) -> LoadBalancerStatus:
        return ingress(self.address)


class LocalLoadBalancers:
    """The local cloud's LoadBalancer capability (interface.LoadBalancer)."""

    def __init__(self, config: LocalCloudConfig, store: CloudStateStore, provider_name: str, *,
                 adopt_retry_interval: float = ADOPT_RETRY_INTERVAL) -> None:
        self._config = config
        self._store = store
        self._provider_name = provider_name
        self._adopt_retry_interval = adopt_retry_interval
        self._balancers: dict[str, _Balancer] = {}
        self._lock = asyncio.Lock()
        self._ready = asyncio.Event()
        self._leading = False
        self._stopped = False
        self._endpoints: SharedIndexInformer | None = None
        self._task: asyncio.Task[None] | None = None
        self._hand_back: asyncio.Task[None] | None = None

    async def serve_recorded(self, stop: asyncio.Event, hand_back_after: float | None) -> None:
        """interface.InProcessLoadBalancer: before leading, open the recorded balancers' listeners that are
        free, with their recorded backends; close them when `stop` is set or `hand_back_after` seconds pass
        without `start()`."""
        async with self._lock:
            left: list[str] = []
            for name, record in self._store.read()[SECTION].items():
                try:
                    balancer, backends = await self._reopen(name, record)
                except ListenError as error:
                    left.append(name)
                    log.info("%s cloud: load balancer %s is served elsewhere (%s): left to the CCM that serves it",
                             self._provider_name, name, error)
                    continue
                except ValueError as error:
                    log.warning("%s cloud: cannot serve load balancer %s: %s", self._provider_name, name, error)
                    continue
                for number, proxy in balancer.proxies.items():
                    proxy.set_backends(backends[number])
            log.info("%s cloud: serving %d recorded load balancer(s) before leading, %d left to another CCM",
                     self._provider_name, len(self._balancers), len(left))
        self._hand_back = asyncio.create_task(self._serve_until(stop, hand_back_after), name=f"{CLIENT_NAME}-hand-back")

    async def start(self, client_builder: ClientBuilder, stop: asyncio.Event) -> None:
        """Start watching Endpoints; once the cache has synced, adopt the balancers in the state (keeping those
        `serve_recorded` opened). Everything ends when `stop` is set."""
        self._leading = True
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

    async def _serve_until(self, stop: asyncio.Event, hand_back_after: float | None) -> None:
        """Close what `serve_recorded` opened when `stop` is set or `hand_back_after` seconds have passed,
        unless this CCM leads by then (then the balancers are its own)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(hand_back_after):
                await stop.wait()
        async with self._lock:
            if self._leading:
                return
            for balancer in self._balancers.values():
                await self._close(balancer)
            if self._balancers and not stop.is_set():
                log.info("%s cloud: not leading %gs after start: another CCM leads; its load balancers are "
                         "handed back to it", self._provider_name, hand_back_after)
            self._balancers.clear()

    async def _run(self, informers: SharedInformerFactory, stop: asyncio.Event) -> None:
        adopting = asyncio.create_task(self._adopt())
        try:
            await stop.wait()
        finally:
            for task in (adopting, self._hand_back):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            async with self._lock:
                self._stopped = True
                for balancer in self._balancers.values():
                    await self._close(balancer)
                self._balancers.clear()
            self._ready.set()  # calls waiting for adoption now fail at once
            await informers.stop()

    async def _adopt(self) -> None:
        """Once the endpoints cache is synced, take over every balancer in the state: those already served get
        their backends from the endpoints, the others' listeners are opened; the ones still in use are tried
        again every `adopt_retry_interval` until they open or their record is gone."""
        assert self._endpoints is not None
        await self._endpoints.wait_for_cache_sync()
        async with self._lock:
            for balancer in self._balancers.values():
                self._refresh(balancer)
            in_use = await self._open_recorded()
            log.info("%s cloud: adopted %d load balancer(s)", self._provider_name, len(self._balancers))
        self._ready.set()
        for name, error in in_use.items():
            log.warning("%s cloud: cannot adopt load balancer %s yet: %s (trying again every %gs)",
                        self._provider_name, name, error, self._adopt_retry_interval)
        while in_use:
            await asyncio.sleep(self._adopt_retry_interval)
            async with self._lock:
                waiting, in_use = in_use, await self._open_recorded(in_use.keys())
                opened = [name for name in waiting if name not in in_use and name in self._balancers]
            for name in opened:
                log.info("%s cloud: load balancer %s adopted", self._provider_name, name)

    async def _open_recorded(self, only: Collection[str] | None = None) -> dict[str, ListenError]:
        """Open the listeners of every recorded balancer not served yet, or of those named in `only` (hold the
        lock); the ones in use, by name."""
        in_use: dict[str, ListenError] = {}
        for name, record in self._store.read()[SECTION].items():
            if name in self._balancers or (only is not None and name not in only):
                continue
            try:
                balancer, _ = await self._reopen(name, record)
            except ListenError as error:
                in_use[name] = error
                continue
            except ValueError as error:
                log.warning("%s cloud: cannot adopt load balancer %s: %s", self._provider_name, name, error)
                continue
            self._refresh(balancer)
        return in_use

    async def _reopen(self, name: str, record: dict[str, Any]) -> tuple[_Balancer, dict[int, list[Backend]]]:
        """The balancer a record describes, listening again and served from now on, and the backends the
        record names for each port; ListenError when a listener cannot be opened, ValueError for a record
        this code cannot read."""
        try:
            balancer = _Balancer.from_record(name, record)
            listeners = recorded_listeners(record)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"unreadable record ({type(error).__name__}: {error})") from None
        await self._listen(balancer, [port for port, _ in listeners])
        self._balancers[name] = balancer
        return balancer, {port["port"]: backends for port, backends in listeners}

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


def backend_strings(backends: Iterable[Backend]) -> list[str]:
    """Backends as the state records them: "ip:port", sorted by address."""
    return [f"{ip}:{port}" for ip, port in sorted(backends)]


def recorded_listeners(record: dict[str, Any]) -> list[tuple[Port, list[Backend]]]:
    """Each port of a load-balancer record with the backends recorded for it; KeyError, TypeError or ValueError
    for a record that is not shaped as this module writes it."""
    listeners = []
    for port in record["ports"]:
        backends = []
        for backend in port.get("backends") or []:
            ip, _, number = backend.rpartition(":")
            backends.append((str(ipaddress.ip_address(ip)), int(number)))
        listeners.append(({"name": port.get("name") or "", "protocol": port.get("protocol") or "TCP",
                           "port": int(port["port"])}, backends))
    return listeners


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

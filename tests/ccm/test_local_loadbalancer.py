"""The local cloud's load balancers against the tests' apiserver: Endpoints objects made by hand point at TCP
servers that stand in for pods, and traffic really goes through the balancers' addresses. The servers listen
on this machine's own non-loopback address, since the apiserver refuses loopback endpoint addresses."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from minikube_py.ccm.cloud.interface import CloudProviderError, Unimplemented
from minikube_py.ccm.cloud.local.config import LocalCloudConfig
from minikube_py.ccm.cloud.local.loadbalancer import LocalLoadBalancers, endpoint_backends
from minikube_py.ccm.cloud.local.state import CloudStateStore
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.store.etcd_server import free_port
from tests.ccm.test_local_proxy import ask, named_server
from tests.harness import ControlPlane
from tests.kcm.running import wait_for

CLUSTER = "test"
CIDR = ipaddress.IPv4Network("127.0.122.0/29")  # six addresses: .1 to .6
NODES = [{"metadata": {"name": "node-a"}}, {"metadata": {"name": "node-b"}}]


def host_address() -> str:
    """The address this machine sends from (no packet is sent: connecting a UDP socket only picks a route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
        except OSError:
            return "127.0.0.1"
        return str(probe.getsockname()[0])


HOST = host_address()
pytestmark = pytest.mark.skipif(HOST.startswith("127."), reason="needs a non-loopback address to stand in for pods")


def pod_server(name: str) -> contextlib.AbstractAsyncContextManager[tuple[str, int]]:
    return named_server(name, host=HOST)


class ClientBuilder:
    def __init__(self, control_plane: ControlPlane) -> None:
        self.control_plane = control_plane
        self.clients: list[tuple[str, RESTClient]] = []

    async def client(self, name: str) -> RESTClient:
        client = RESTClient(load_kubeconfig(str(self.control_plane.kubeconfig)))
        self.clients.append((name, client))
        return client


Start = Callable[..., Any]


@pytest.fixture()
async def start_balancers(control_plane: ControlPlane, tmp_path: Path) -> AsyncIterator[Start]:
    """`await start_balancers()`: a started LocalLoadBalancers over the test's state file (each call is a new
    CCM process, as far as the load balancers can tell); all are stopped at the end."""
    started: list[tuple[LocalLoadBalancers, asyncio.Event, ClientBuilder]] = []

    async def start(cidr: ipaddress.IPv4Network = CIDR) -> LocalLoadBalancers:
        config = LocalCloudConfig(cluster_name=CLUSTER, state_file=tmp_path / "state.json", load_balancer_cidr=cidr,
                                  health_check_interval=60)
        balancers = LocalLoadBalancers(config, CloudStateStore(config.state_file), "local")
        stop, builder = asyncio.Event(), ClientBuilder(control_plane)
        await balancers.start(builder, stop)
        started.append((balancers, stop, builder))
        return balancers

    yield start
    for balancers, stop, builder in started:
        await stop_balancers(balancers, stop)
        for _, client in builder.clients:
            await client.close()


async def stop_balancers(balancers: LocalLoadBalancers, stop: asyncio.Event) -> None:
    stop.set()
    assert balancers._task is not None
    with contextlib.suppress(asyncio.CancelledError):
        await balancers._task


def service(namespace: str, name: str, *ports: dict[str, Any], uid: str = "", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"},
            "spec": {"type": "LoadBalancer", "ports": list(ports) or [{"name": "http", "port": free_port(),
                                                                       "protocol": "TCP"}], **spec}}


def endpoints(namespace: str, name: str, *pods: tuple[str, int], port_name: str = "http",
              node: str = "node-a") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": namespace},
            "subsets": [{"addresses": [{"ip": ip, "nodeName": node}], "ports": [{"name": port_name, "port": port}]}
                        for ip, port in pods]}


def put_endpoints(api: httpx.Client, body: dict[str, Any]) -> None:
    path = f"/api/v1/namespaces/{body['metadata']['namespace']}/endpoints"
    current = api.get(f"{path}/{body['metadata']['name']}")
    if current.status_code == 404:
        response = api.post(path, json=body)
    else:
        body = {**body, "metadata": {**body["metadata"], "resourceVersion": current.json()["metadata"]["resourceVersion"]}}
        response = api.put(f"{path}/{body['metadata']['name']}", json=body)
    assert response.status_code in (200, 201), response.text


def port_of(svc: dict[str, Any]) -> int:
    return int(svc["spec"]["ports"][0]["port"])


def records(tmp_path: Path) -> dict[str, Any]:
    return CloudStateStore(tmp_path / "state.json").read()["loadBalancers"]


async def backends_are(tmp_path: Path, name: str, *pods: tuple[str, int]) -> None:
    """Wait until the state says load balancer `name` sends traffic to `pods`."""
    expected = sorted(f"{ip}:{port}" for ip, port in pods)
    await wait_for(lambda: records(tmp_path).get(name, {}).get("backends") == expected, 10,
                   f"backends {expected} of load balancer {name}")


async def answer(address: str, port: int) -> bytes:
    """What a new connection to address:port is answered; b"" when it is refused or closed."""
    try:
        return await ask(address, port)
    except ConnectionRefusedError:
        return b""


async def test_a_service_gets_an_address_of_its_own_that_carries_traffic_to_its_endpoints(
        start_balancers: Start, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    balancers = await start_balancers()
    async with pod_server("pod-1") as pod, pod_server("pod-2") as other_pod:
        put_endpoints(api, endpoints(namespace, "web", pod))
        put_endpoints(api, endpoints(namespace, "api", other_pod))
        web, api_service = service(namespace, "web"), service(namespace, "api")
        name = balancers.get_load_balancer_name(CLUSTER, web)

        assert await balancers.ensure_load_balancer(CLUSTER, web, NODES) == {
            "ingress": [{"ip": "127.0.122.1", "ipMode": "VIP"}]}
        assert await balancers.ensure_load_balancer(CLUSTER, api_service, NODES) == {
            "ingress": [{"ip": "127.0.122.2", "ipMode": "VIP"}]}
        await backends_are(tmp_path, name, pod)
        await backends_are(tmp_path, balancers.get_load_balancer_name(CLUSTER, api_service), other_pod)
        assert await ask("127.0.122.1", port_of(web)) == b"pod-1:hi"
        assert await ask("127.0.122.2", port_of(api_service)) == b"pod-2:hi"

        assert records(tmp_path)[name] == {
            "name": name, "service": f"{namespace}/web", "address": "127.0.122.1", "externalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "protocol": "TCP", "port": port_of(web)}],
            "backends": [f"{pod[0]}:{pod[1]}"], "nodes": ["node-a", "node-b"]}
        assert await balancers.get_load_balancer(CLUSTER, web) == {"ingress": [{"ip": "127.0.122.1", "ipMode": "VIP"}]}
        assert await balancers.ensure_load_balancer(CLUSTER, web, NODES) == {
            "ingress": [{"ip": "127.0.122.1", "ipMode": "VIP"}]}, "ensuring again changes nothing"


async def test_load_balancer_ip_is_honoured_when_free_and_refused_when_taken(
        start_balancers: Start, namespace: str, tmp_path: Path) -> None:
    balancers = await start_balancers()
    first = service(namespace, "first", loadBalancerIP="127.0.122.5")
    assert (await balancers.ensure_load_balancer(CLUSTER, first, NODES))["ingress"][0]["ip"] == "127.0.122.5"
    with pytest.raises(CloudProviderError, match=rf"127\.0\.122\.5 is already used by .*service {namespace}/first"):
        await balancers.ensure_load_balancer(CLUSTER, service(namespace, "second", loadBalancerIP="127.0.122.5"),
                                             NODES)
    with pytest.raises(CloudProviderError, match="not an IP address"):
        await balancers.ensure_load_balancer(CLUSTER, service(namespace, "third", loadBalancerIP="example.com"), NODES)
    third = service(namespace, "third")
    assert (await balancers.ensure_load_balancer(CLUSTER, third, NODES))["ingress"][0]["ip"] == "127.0.122.1"
    assert len(records(tmp_path)) == 2

    moved = {**first, "spec": {**first["spec"], "loadBalancerIP": "127.0.122.6"}}
    assert (await balancers.ensure_load_balancer(CLUSTER, moved, NODES))["ingress"][0]["ip"] == "127.0.122.6"
    with pytest.raises(ConnectionRefusedError):  # the old address no longer listens
        await asyncio.open_connection("127.0.122.5", port_of(first))
    assert records(tmp_path)[balancers.get_load_balancer_name(CLUSTER, first)]["address"] == "127.0.122.6"


async def test_addresses_run_out(start_balancers: Start, namespace: str) -> None:
    balancers = await start_balancers(ipaddress.IPv4Network("127.0.122.8/30"))  # two addresses
    for name in ("a", "b"):
        await balancers.ensure_load_balancer(CLUSTER, service(namespace, name), NODES)
    with pytest.raises(CloudProviderError, match=r"no free load-balancer address .* all 2 addresses .*/30"):
        await balancers.ensure_load_balancer(CLUSTER, service(namespace, "c"), NODES)


async def test_a_port_in_use_fails_with_the_address_and_leaves_no_load_balancer(
        start_balancers: Start, namespace: str, tmp_path: Path) -> None:
    balancers = await start_balancers()
    with socket.create_server(("127.0.122.1", 0)) as taken:
        port = taken.getsockname()[1]
        svc = service(namespace, "web", {"name": "a", "port": free_port()}, {"name": "b", "port": port})
        with pytest.raises(CloudProviderError, match=rf"127\.0\.122\.1:{port}: address already in use"):
            await balancers.ensure_load_balancer(CLUSTER, svc, NODES)
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.122.1", svc["spec"]["ports"][0]["port"])
    assert records(tmp_path) == {}
    assert await balancers.get_load_balancer(CLUSTER, svc) is None


async def test_udp_ports_are_unimplemented(start_balancers: Start, namespace: str, tmp_path: Path) -> None:
    balancers = await start_balancers()
    svc = service(namespace, "dns", {"name": "dns", "port": 53, "protocol": "UDP"})
    with pytest.raises(Unimplemented, match=f"port 53/UDP of service {namespace}/dns"):
        await balancers.ensure_load_balancer(CLUSTER, svc, NODES)
    assert records(tmp_path) == {}


async def test_endpoint_changes_move_traffic_without_the_controller(
        start_balancers: Start, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    balancers = await start_balancers()
    web = service(namespace, "web")
    name = balancers.get_load_balancer_name(CLUSTER, web)
    async with pod_server("old") as old, pod_server("new") as new:
        put_endpoints(api, endpoints(namespace, "web", old))
        await balancers.ensure_load_balancer(CLUSTER, web, NODES)
        await backends_are(tmp_path, name, old)
        assert await ask("127.0.122.1", port_of(web)) == b"old:hi"

        put_endpoints(api, endpoints(namespace, "web", new))
        await backends_are(tmp_path, name, new)
        assert await ask("127.0.122.1", port_of(web)) == b"new:hi"

        assert api.delete(f"/api/v1/namespaces/{namespace}/endpoints/web").status_code == 200
        await backends_are(tmp_path, name)
        assert await ask("127.0.122.1", port_of(web)) == b""


async def test_update_load_balancer_follows_the_nodes_with_local_traffic_policy(
        start_balancers: Start, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    balancers = await start_balancers()
    web = service(namespace, "web", externalTrafficPolicy="Local")
    with pytest.raises(CloudProviderError, match="does not exist"):
        await balancers.update_load_balancer(CLUSTER, web, NODES)
    async with pod_server("on-a") as on_a, pod_server("on-b") as on_b:
        body = endpoints(namespace, "web", on_a)
        body["subsets"].append(endpoints(namespace, "web", on_b, node="node-b")["subsets"][0])
        put_endpoints(api, body)
        await balancers.ensure_load_balancer(CLUSTER, web, NODES[:1])
        await backends_are(tmp_path, balancers.get_load_balancer_name(CLUSTER, web), on_a)
        assert [await ask("127.0.122.1", port_of(web)) for _ in range(2)] == [b"on-a:hi"] * 2
        await balancers.update_load_balancer(CLUSTER, web, NODES[1:])
        assert [await ask("127.0.122.1", port_of(web)) for _ in range(2)] == [b"on-b:hi"] * 2


async def test_deleting_closes_the_listeners_and_frees_the_address(
        start_balancers: Start, namespace: str, tmp_path: Path) -> None:
    balancers = await start_balancers()
    first, second = service(namespace, "first"), service(namespace, "second")
    await balancers.ensure_load_balancer(CLUSTER, first, NODES)
    await balancers.ensure_load_balancer_deleted(CLUSTER, first)
    assert records(tmp_path) == {}
    assert await balancers.get_load_balancer(CLUSTER, first) is None
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.122.1", port_of(first))
    await balancers.ensure_load_balancer_deleted(CLUSTER, first)  # none left: still a success
    assert (await balancers.ensure_load_balancer(CLUSTER, second, NODES))["ingress"][0]["ip"] == "127.0.122.1"


async def test_a_restarted_cloud_adopts_its_load_balancers_and_serves_them_again(
        start_balancers: Start, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    web = service(namespace, "web")
    async with pod_server("pod") as pod, pod_server("later") as later:
        put_endpoints(api, endpoints(namespace, "web", pod))
        before = await start_balancers()
        name = before.get_load_balancer_name(CLUSTER, web)
        await before.ensure_load_balancer(CLUSTER, web, NODES)
        await backends_are(tmp_path, name, pod)
        assert before._task is not None
        before._task.cancel()  # the CCM goes away
        with contextlib.suppress(asyncio.CancelledError):
            await before._task
        assert await answer("127.0.122.1", port_of(web)) == b"", "its listeners went with it"
        assert list(records(tmp_path)) == [name], "the record stays"

        await start_balancers()
        assert await wait_for(lambda: answer("127.0.122.1", port_of(web)), 10, "the adopted balancer") == b"pod:hi"
        put_endpoints(api, endpoints(namespace, "web", later))
        await backends_are(tmp_path, name, later)
        assert await ask("127.0.122.1", port_of(web)) == b"later:hi"


@pytest.mark.parametrize(("case", "nodes", "local", "expected"), [
    ("cluster policy: every ready endpoint", {"n1"}, False, [("10.0.0.1", 8080), ("10.0.0.2", 8080)]),
    ("local policy: only endpoints on the given nodes", {"n2"}, True, [("10.0.0.2", 8080)]),
    ("no nodes: nothing", set(), False, []),
])
def test_endpoint_backends(case: str, nodes: set[str], local: bool, expected: list[tuple[str, int]]) -> None:
    eps = {"subsets": [
        {"addresses": [{"ip": "10.0.0.1", "nodeName": "n1"}, {"ip": "10.0.0.2", "nodeName": "n2"}],
         "notReadyAddresses": [{"ip": "10.0.0.3", "nodeName": "n2"}],
         "ports": [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}]},
        {"addresses": [{"ip": "10.0.0.4", "nodeName": "n2"}], "ports": [{"name": "other", "port": 1}]}]}
    assert endpoint_backends(eps, "http", nodes, local) == expected, case

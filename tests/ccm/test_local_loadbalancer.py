"""The local cloud's load balancers against the tests' apiserver: Endpoints objects made by hand point at TCP
servers that stand in for pods, and traffic really goes through the balancers' addresses. The servers listen
on this machine's own non-loopback address, since the apiserver refuses loopback endpoint addresses."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from minikube_py.ccm.cloud.interface import CloudProviderError, Unimplemented
from minikube_py.ccm.cloud.local import loadbalancer
from minikube_py.ccm.cloud.local.config import LocalCloudConfig
from minikube_py.ccm.cloud.local.loadbalancer import LocalLoadBalancers, endpoint_backends, recorded_listeners
from minikube_py.ccm.cloud.local.provider import LocalCloud
from minikube_py.ccm.cloud.local.state import CloudStateStore
from minikube_py.ccm.controllers.service import ServiceController
from minikube_py.client import resources
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.store.etcd_server import free_port
from tests.ccm.running import running, wait_for
from tests.ccm.test_local_proxy import ask, named_server
from tests.fixtures import new_namespace
from tests.harness import ControlPlane

CLUSTER = "test"
CIDR = ipaddress.IPv4Network("127.0.122.0/29")  # six addresses: .1 to .6
NODES = [{"metadata": {"name": "node-a"}}, {"metadata": {"name": "node-b"}}]
HTTP = {"name": "http", "protocol": "TCP", "port": 80}


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


class CCMProcess:
    """The load balancers of one CCM process over the test's state file, as far as they can tell."""

    def __init__(self, control_plane: ControlPlane, state_file: Path, cidr: ipaddress.IPv4Network,
                 adopt_retry_interval: float) -> None:
        config = LocalCloudConfig(cluster_name=CLUSTER, state_file=state_file, load_balancer_cidr=cidr,
                                  health_check_interval=60)
        self.balancers = LocalLoadBalancers(config, CloudStateStore(state_file), "local",
                                            adopt_retry_interval=adopt_retry_interval)
        self.stop = asyncio.Event()
        self.builder = ClientBuilder(control_plane)

    async def lead(self) -> LocalLoadBalancers:
        """What `initialize` does once the process holds the Lease."""
        await self.balancers.start(self.builder, self.stop)
        return self.balancers

    async def end(self) -> None:
        """The process is gone: its listeners are closed (the kernel closes a killed process's sockets)."""
        self.stop.set()
        for task in (self.balancers._task, self.balancers._hand_back):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        while self.builder.clients:
            await self.builder.clients.pop()[1].close()


NewProcess = Callable[..., CCMProcess]
Start = Callable[..., Any]


@pytest.fixture()
async def new_process(control_plane: ControlPlane, tmp_path: Path) -> AsyncIterator[NewProcess]:
    """`new_process()`: a CCMProcess over the test's state file; every one is ended at the end."""
    made: list[CCMProcess] = []

    def new(cidr: ipaddress.IPv4Network = CIDR, adopt_retry_interval: float = 0.1) -> CCMProcess:
        made.append(CCMProcess(control_plane, tmp_path / "state.json", cidr, adopt_retry_interval))
        return made[-1]

    yield new
    for process in made:
        await process.end()


@pytest.fixture()
def start_balancers(new_process: NewProcess) -> Start:
    """`await start_balancers()`: the started LocalLoadBalancers of a new CCM process that leads at once."""
    async def start(cidr: ipaddress.IPv4Network = CIDR) -> LocalLoadBalancers:
        return await new_process(cidr).lead()

    return start


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
            "ports": [{"name": "http", "protocol": "TCP", "port": port_of(web), "backends": [f"{pod[0]}:{pod[1]}"]}],
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


async def test_a_restarted_ccm_serves_its_recorded_load_balancers_before_it_leads_and_keeps_them_when_it_does(
        new_process: NewProcess, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    web = service(namespace, "web", {"name": "http", "port": free_port()}, {"name": "admin", "port": free_port()})
    http_port, admin_port = (port["port"] for port in web["spec"]["ports"])
    async with pod_server("http-pod") as http_pod, pod_server("admin-pod") as admin_pod, pod_server("later") as later:
        body = endpoints(namespace, "web", http_pod)
        body["subsets"] += endpoints(namespace, "web", admin_pod, port_name="admin")["subsets"]
        put_endpoints(api, body)
        killed = new_process()
        balancers = await killed.lead()
        name = balancers.get_load_balancer_name(CLUSTER, web)
        await balancers.ensure_load_balancer(CLUSTER, web, NODES)
        await backends_are(tmp_path, name, http_pod, admin_pod)
        await killed.end()
        recorded = records(tmp_path)
        assert [port["backends"] for port in recorded[name]["ports"]] == [[f"{http_pod[0]}:{http_pod[1]}"],
                                                                          [f"{admin_pod[0]}:{admin_pod[1]}"]]
        assert await answer("127.0.122.1", http_port) == b""

        restarted = new_process()
        await restarted.balancers.serve_recorded(restarted.stop, hand_back_after=None)
        # at once, without the apiserver or the Lease: each port to the backends recorded for it
        assert await ask("127.0.122.1", http_port) == b"http-pod:hi"
        assert await ask("127.0.122.1", admin_port) == b"admin-pod:hi"
        assert records(tmp_path) == recorded, "a CCM that does not lead writes nothing"

        reader, writer = await asyncio.open_connection("127.0.122.1", http_port)
        writer.write(b"before")
        assert await asyncio.wait_for(reader.read(100), 5) == b"http-pod:before"
        await restarted.lead()
        body["subsets"][0] = endpoints(namespace, "web", later)["subsets"][0]
        put_endpoints(api, body)
        await backends_are(tmp_path, name, later, admin_pod)
        assert await ask("127.0.122.1", http_port) == b"later:hi", "the leader follows the endpoints"
        writer.write(b"after")
        assert await asyncio.wait_for(reader.read(100), 5) == b"http-pod:after", "the takeover dropped no connection"
        writer.close()


async def test_an_unreadable_record_is_skipped_and_the_others_are_served_before_leading(
        new_process: NewProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=loadbalancer.__name__)
    port = free_port()
    async with pod_server("pod") as pod:
        with CloudStateStore(tmp_path / "state.json").edit() as state:
            state["loadBalancers"]["abroken"] = {"service": "ns/broken", "address": "127.0.122.2", "ports": 80}
            state["loadBalancers"]["aweb"] = {"service": "ns/web", "address": "127.0.122.1",
                                              "ports": [{**HTTP, "port": port, "backends": [f"{pod[0]}:{pod[1]}"]}]}
        restarted = new_process()
        await restarted.balancers.serve_recorded(restarted.stop, hand_back_after=None)
        assert await ask("127.0.122.1", port) == b"pod:hi"
    assert "cannot serve load balancer abroken: unreadable record (TypeError" in caplog.text
    assert "serving 1 recorded load balancer(s) before leading, 0 left to another CCM" in caplog.text


async def test_a_standby_leaves_the_leaders_listeners_alone_and_takes_them_over_when_it_leads(
        new_process: NewProcess, api: httpx.Client, namespace: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=loadbalancer.__name__)
    web = service(namespace, "web")
    async with pod_server("pod") as pod, pod_server("later") as later:
        put_endpoints(api, endpoints(namespace, "web", pod))
        leader = new_process()
        balancers = await leader.lead()
        name = balancers.get_load_balancer_name(CLUSTER, web)
        await balancers.ensure_load_balancer(CLUSTER, web, NODES)
        await backends_are(tmp_path, name, pod)

        standby = new_process()
        await standby.balancers.serve_recorded(standby.stop, hand_back_after=None)
        assert "serving 0 recorded load balancer(s) before leading, 1 left to another CCM" in caplog.text
        put_endpoints(api, endpoints(namespace, "web", later))
        await backends_are(tmp_path, name, later)
        assert await ask("127.0.122.1", port_of(web)) == b"later:hi", "the leader serves on, following the endpoints"

        await leader.end()
        await standby.lead()
        assert await wait_for(lambda: answer("127.0.122.1", port_of(web)), 10, "the new leader") == b"later:hi"


async def test_of_two_ccms_started_together_the_one_that_does_not_lead_hands_its_listeners_back(
        new_process: NewProcess, api: httpx.Client, namespace: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=loadbalancer.__name__)
    web = service(namespace, "web")
    async with pod_server("pod") as pod:
        put_endpoints(api, endpoints(namespace, "web", pod))
        killed = new_process()
        balancers = await killed.lead()
        name = balancers.get_load_balancer_name(CLUSTER, web)
        await balancers.ensure_load_balancer(CLUSTER, web, NODES)
        await backends_are(tmp_path, name, pod)
        await killed.end()

        loser, winner = new_process(), new_process()
        await loser.balancers.serve_recorded(loser.stop, hand_back_after=1.0)
        await winner.balancers.serve_recorded(winner.stop, hand_back_after=None)
        assert await ask("127.0.122.1", port_of(web)) == b"pod:hi", "the first to bind serves meanwhile"
        await winner.lead()  # the address is in use: its adoption tries again every 0.1 s
        await wait_for(lambda: f"load balancer {name} adopted" in caplog.text, 10, "the leader to adopt it")
        assert "handed back" in caplog.text
        await loser.end()
        assert await ask("127.0.122.1", port_of(web)) == b"pod:hi"
        assert records(tmp_path)[name]["address"] == "127.0.122.1"


@pytest.fixture()
def lone_control_plane() -> Iterator[ControlPlane]:
    """A control plane of its own: a service controller there sees no LoadBalancer Service of other tests."""
    control_plane = ControlPlane().start()
    yield control_plane
    control_plane.stop()


async def test_when_the_addresses_run_out_the_service_gets_an_event_and_an_address_once_one_is_free(
        lone_control_plane: ControlPlane, tmp_path: Path) -> None:
    """No port fallback: a full loadBalancerCIDR is a SyncLoadBalancerFailed event and a retry (5 s first)."""
    control_plane = lone_control_plane
    with control_plane.client() as api:
        namespace = new_namespace(api)
    cidr = ipaddress.IPv4Network("127.0.122.8/30")  # two addresses
    cloud = LocalCloud(LocalCloudConfig(cluster_name=CLUSTER, state_file=tmp_path / "state.json",
                                        load_balancer_cidr=cidr, health_check_interval=60))
    stop, builder = asyncio.Event(), ClientBuilder(control_plane)
    await cloud.initialize(builder, stop)
    try:
        async with running(control_plane, cloud, ServiceController) as client:
            async def address_of(name: str) -> str:
                svc = await client.get(resources.SERVICES, name, namespace)
                return str(((svc.get("status") or {}).get("loadBalancer", {}).get("ingress") or [{}])[0].get("ip", ""))

            for name in ("first", "second", "third"):
                await client.create(resources.SERVICES, {
                    "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                    "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": free_port()}]}}, namespace)
                if name != "third":
                    await wait_for(lambda name=name: address_of(name), 10, f"an address for {name}")

            async def failures() -> list[str]:
                events = await client.list(resources.CORE_EVENTS, namespace,
                                           field_selector="involvedObject.name=third,reason=SyncLoadBalancerFailed")
                return [event["message"] for event in events["items"]]
            [message] = await wait_for(failures, 10, "the SyncLoadBalancerFailed event of third")
            assert message == (f"Error syncing load balancer: failed to ensure load balancer: no free load-balancer "
                               f"address for service {namespace}/third: all 2 addresses of loadBalancerCIDR {cidr} "
                               "are in use")
            freed = await address_of("first")
            await client.delete(resources.SERVICES, "first", namespace)
            assert await wait_for(lambda: address_of("third"), 20, "third's retry to get the freed address") == freed
            for name in ("second", "third"):
                await client.delete(resources.SERVICES, name, namespace)
            await wait_for(lambda: not records(tmp_path), 10, "the load balancers released")
    finally:
        stop.set()
        task = cloud.load_balancer()._task
        assert task is not None
        with contextlib.suppress(asyncio.CancelledError):
            await task
        for _, rest_client in builder.clients:
            await rest_client.close()


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


@pytest.mark.parametrize(("case", "record", "expected"), [
    ("each port with the backends recorded for it",
     {"ports": [{**HTTP, "backends": ["10.0.0.1:8080", "10.0.0.2:8080"]}, {"port": 9090, "backends": []}]},
     [(HTTP, [("10.0.0.1", 8080), ("10.0.0.2", 8080)]), ({"name": "", "protocol": "TCP", "port": 9090}, [])]),
    ("a record written before ports had backends listens with none until the leader fills them in",
     {"ports": [HTTP]}, [(HTTP, [])]),
])
def test_recorded_listeners(case: str, record: dict[str, Any], expected: list[Any]) -> None:
    assert recorded_listeners(record) == expected, case


@pytest.mark.parametrize(("case", "record"), [
    ("no ports", {}),
    ("ports that are not a list of ports", {"ports": 80}),
    ("a port that is not a number", {"ports": [{"port": "http"}]}),
    ("a backend without a port", {"ports": [{**HTTP, "backends": ["10.0.0.1"]}]}),
    ("a backend that is not an IP address", {"ports": [{**HTTP, "backends": ["pod-1:8080"]}]}),
    ("a backend port that is not a number", {"ports": [{**HTTP, "backends": ["10.0.0.1:http"]}]}),
])
def test_an_unreadable_record_is_an_error(case: str, record: dict[str, Any]) -> None:
    with pytest.raises((KeyError, TypeError, ValueError)):
        recorded_listeners(record)

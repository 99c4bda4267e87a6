"""The kubelet server's endpoints with a test NodeBackend and a local runtime (plain HTTP, no auth)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from minikube_py.kubelet.server import ContainerRef, KubeletServer
from minikube_py.streaming import channels
from minikube_py.streaming.channels import CLOSE, ERROR, STDIN, STDOUT
from minikube_py.streaming.portforward import PortForwardClient
from minikube_py.streaming.proxy import open_command
from minikube_py.streaming.remotecommand import StreamOptions
from minikube_py.streaming.upgrade import UpgradeError, connect_spdy
from tests.kubelet.server.backend import FakeNode, ServerThread, plain_config, write_log
from tests.streaming.localruntime import LocalRuntime


@pytest.fixture(scope="module")
def runtime() -> Iterator[LocalRuntime]:
    runtime = LocalRuntime().start()
    yield runtime
    runtime.stop()


@pytest.fixture(scope="module")
def node(runtime: LocalRuntime, tmp_path_factory: pytest.TempPathFactory) -> FakeNode:
    node = FakeNode(runtime, tmp_path_factory.mktemp("logs"))
    write_log(node.log_dir / "app" / "0.log", [("stdout", b"old life")])
    write_log(node.log_dir / "app" / "1.log", [("stdout", b"one"), ("stderr", b"two"), ("stdout", b"three")])
    return node


@pytest.fixture(scope="module")
def kubelet(node: FakeNode) -> Iterator[str]:
    thread = ServerThread(plain_config(KubeletServer(node, "node-1", None))).start()
    yield f"http://127.0.0.1:{thread.port}"
    thread.stop()


@pytest.fixture()
async def http(kubelet: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=kubelet, timeout=10) as client:
        yield client


async def test_healthz_pods_and_stats(http: httpx.AsyncClient) -> None:
    assert (await http.get("/healthz")).text == "ok"
    pods = (await http.get("/pods")).json()
    assert pods["kind"] == "PodList" and pods["items"][0]["metadata"]["name"] == "web"
    assert (await http.get("/stats/summary")).json()["node"]["nodeName"] == "node-1"


@pytest.mark.parametrize("query, expected", [
    ("", "one\ntwo\nthree\n"),
    ("?tailLines=1", "three\n"),
    ("?limitBytes=5", "one\nt"),
    ("?timestamps=true&tailLines=1", "2024-01-02T03:04:07.000000000Z three\n"),
    ("?sinceTime=2024-01-02T03:04:06Z", "two\nthree\n"),
    ("?previous=true", "old life\n"),
])
async def test_container_logs(http: httpx.AsyncClient, query: str, expected: str) -> None:
    response = await http.get("/containerLogs/default/web/app" + query)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == expected


@pytest.mark.parametrize("path, code, message", [
    ("/containerLogs/default/web/nope", 404, 'container "nope" in pod "web" not found'),
    ("/containerLogs/default/gone/app", 404, 'pod "default/gone" not found'),
    ("/containerLogs/default/web/sidecar", 400, 'container "sidecar" in pod "web" is waiting to start'),
    ("/containerLogs/default/web/sidecar?previous=true", 400,
     'previous terminated container "sidecar" in pod "web" not found'),
    ("/containerLogs/default/web/app?tailLines=-1", 400, "tailLines: must be greater than or equal to 0"),
    ("/containerLogs/default/web/app?sinceSeconds=5&sinceTime=2024-01-02T03:04:06Z", 400,
     "at most one of `sinceTime` or `sinceSeconds` may be specified"),
    ("/containerLogs/default/web/app?sinceTime=yesterday", 400, 'sinceTime: invalid value "yesterday"'),
])
async def test_bad_log_requests_get_a_status(http: httpx.AsyncClient, path: str, code: int, message: str) -> None:
    response = await http.get(path)
    assert response.status_code == code
    assert response.json()["kind"] == "Status" and response.json()["message"] == message


async def test_following_a_log_ends_when_the_container_stops(http: httpx.AsyncClient, node: FakeNode) -> None:
    log, running = node.log_dir / "follower" / "0.log", [True]
    write_log(log, [("stdout", b"before")])
    node.containers[("default", "web", "follower")] = lambda: ContainerRef("cid-f", str(log), running[0])
    async with http.stream("GET", "/containerLogs/default/web/follower?follow=true&tailLines=1") as response:
        chunks = response.aiter_text()
        assert await asyncio.wait_for(anext(chunks), 5) == "before\n"
        write_log(log, [("stdout", b"after")])
        assert await asyncio.wait_for(anext(chunks), 5) == "after\n"
        running[0] = False
        assert [chunk async for chunk in chunks] == []


def kubelet_ws(kubelet: str) -> str:
    return kubelet.replace("http://", "ws://")


async def test_exec_over_spdy(kubelet: str) -> None:
    url = f"{kubelet}/exec/default/web/app?command=sh&command=-c&command=echo+hi;exit+4&stdout=true&stderr=true"
    command = await open_command(url, StreamOptions(stdout=True, stderr=True))
    messages = []
    while (message := await asyncio.wait_for(command.receive(), 10)) is not None:
        messages.append(message)
    assert messages[0] == (STDOUT, b"hi\n")
    assert channels.exit_code(json.loads(messages[-1][1])) == 4


async def test_exec_over_websocket_v5_with_stdin_closed(kubelet: str, node: FakeNode) -> None:
    url = f"{kubelet_ws(kubelet)}/exec/default/web/app?command=cat&stdin=true&stdout=true&stderr=true"
    async with connect(url, subprotocols=[channels.V5]) as ws:
        assert ws.subprotocol == channels.V5
        await ws.send(channels.encode(STDIN, b"piped\n"))
        await ws.send(channels.encode(CLOSE, bytes([STDIN])))
        received = [channels.decode(bytes(m)) async for m in ws]
    assert (STDOUT, b"piped\n") in received and received[-1][0] == ERROR
    assert node.runtime.requests[-1].container_id == "cid-app" and list(node.runtime.requests[-1].cmd) == ["cat"]


async def test_attach_over_spdy(kubelet: str) -> None:
    command = await open_command(f"{kubelet}/attach/default/web/app?stdin=true&stdout=true",
                                 StreamOptions(stdin=True, stdout=True, stderr=False))
    await command.send(STDIN, b"x\n")
    await command.send(CLOSE, bytes([STDIN]))
    out = b""
    while (message := await asyncio.wait_for(command.receive(), 10)) is not None:
        out += message[1] if message[0] == STDOUT else b""
    assert out == b"attached\nx\n"


@pytest.mark.parametrize("path, status, message", [
    ("/exec/default/web/app?stdout=true", 400, "you must specify at least one command for the container"),
    ("/exec/default/web/app?command=ls", 400, "you must specify at least 1 of stdin, stdout, stderr"),
    ("/exec/default/web/nope?command=ls&stdout=true", 404, 'container "nope" in pod "web" not found'),
    ("/exec/default/web/sidecar?command=ls&stdout=true", 400, 'container "sidecar" in pod "web" is not running'),
])
async def test_bad_exec_requests_are_refused_before_the_upgrade(kubelet: str, path: str, status: int,
                                                                message: str) -> None:
    with pytest.raises(UpgradeError) as caught:
        await connect_spdy(kubelet + path, [channels.V4])
    assert caught.value.status == status and json.loads(caught.value.body)["message"] == message


async def test_bad_exec_over_websocket_gets_the_status_as_the_handshake_answer(kubelet: str) -> None:
    with pytest.raises(InvalidStatus) as caught:
        async with connect(f"{kubelet_ws(kubelet)}/exec/default/web/nope?command=ls&stdout=true",
                           subprotocols=[channels.V5]):
            pass
    assert caught.value.response.status_code == 404
    assert json.loads(caught.value.response.body)["reason"] == "NotFound"


async def test_port_forward_over_spdy(kubelet: str, node: FakeNode) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello from the pod")
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    session, _ = await connect_spdy(f"{kubelet}/portForward/default/web", [channels.PORT_FORWARD])
    client = PortForwardClient(session)
    data, error = await client.open(port)
    assert await asyncio.wait_for(data.read(), 5) == b"hello from the pod"
    assert await asyncio.wait_for(error.read(), 5) == b""
    await client.close()
    server.close()
    assert node.runtime.requests[-1] == ("sandbox-web", [])


async def test_port_forward_to_a_pod_that_is_not_here(kubelet: str) -> None:
    with pytest.raises(UpgradeError) as caught:
        await connect_spdy(f"{kubelet}/portForward/default/gone", [channels.PORT_FORWARD])
    assert caught.value.status == 404

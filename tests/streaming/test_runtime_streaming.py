"""The library's client side against a streaming server built from its server side (tests/streaming/
localruntime.py, over real HTTP with uvicorn): exec/attach over SPDY and WebSocket, port-forward over
SPDY, SPDY inside a WebSocket and WebSocket channels."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.streaming import channels
from minikube_py.streaming.channels import CLOSE, ERROR, RESIZE, STDERR, STDIN, STDOUT
from minikube_py.streaming.portforward import PortForwardClient
from minikube_py.streaming.proxy import open_command
from minikube_py.streaming.remotecommand import Channels, ClientWebSocketChannels, StreamOptions
from minikube_py.streaming.session import SpdySession
from minikube_py.streaming.upgrade import UpgradeError, connect_spdy
from tests.streaming.localruntime import LocalRuntime, RuntimeStub

PLAIN = StreamOptions(stdin=False, stdout=True, stderr=True)


@pytest.fixture(scope="module")
def runtime() -> Iterator[LocalRuntime]:
    runtime = LocalRuntime().start()
    yield runtime
    runtime.stop()


@pytest.fixture()
async def echo_port() -> AsyncIterator[int]:
    """A TCP server in the "pod": answers each line with `echo: <line>` and closes after one."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        writer.write(b"echo: " + line)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


async def collect(command: Channels) -> tuple[bytes, bytes, dict]:
    out, err, status = b"", b"", {}
    while (message := await command.receive()) is not None:
        channel, data = message
        if channel == STDOUT:
            out += data
        elif channel == STDERR:
            err += data
        elif channel == ERROR:
            status = json.loads(data)
    return out, err, status


class ClientWebSocketStream:
    """A `websockets` client connection as a ByteStream (what kubectl's tunnel does, in Python)."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection

    async def read(self) -> bytes:
        try:
            return bytes(await self.connection.recv())
        except ConnectionClosed:
            return b""

    async def write(self, data: bytes) -> None:
        for at in range(0, len(data), 3):  # split frames across messages, as the Go client does
            await self.connection.send(data[at:at + 3])

    async def close(self) -> None:
        await self.connection.close()


async def test_exec_over_spdy_returns_output_and_the_exit_code(runtime: LocalRuntime) -> None:
    url = await RuntimeStub(runtime).exec(cri.ExecRequest(cmd=["sh", "-c", "echo out; echo err >&2; exit 3"],
                                                          stdout=True, stderr=True))
    out, err, status = await collect(await open_command(url, PLAIN))
    assert (out, err) == (b"out\n", b"err\n")
    assert channels.exit_code(status) == 3


async def test_exec_over_spdy_ends_stdin_with_fin(runtime: LocalRuntime) -> None:
    options = StreamOptions(stdin=True, stdout=True, stderr=True)
    url = await RuntimeStub(runtime).exec(cri.ExecRequest(cmd=["cat"], stdin=True, stdout=True, stderr=True))
    command = await open_command(url, options)
    await command.send(STDIN, b"hi\n")
    await command.send(CLOSE, bytes([STDIN]))
    out, _, status = await asyncio.wait_for(collect(command), 10)
    assert out == b"hi\n" and channels.exit_code(status) == 0


async def test_exec_with_a_tty_applies_resizes(runtime: LocalRuntime) -> None:
    options = StreamOptions(stdin=True, stdout=True, stderr=False, tty=True)
    url = await RuntimeStub(runtime).exec(cri.ExecRequest(cmd=["sh", "-c", "read x; stty size"], stdin=True,
                                                          stdout=True, tty=True))
    command = await open_command(url, options)
    await command.send(RESIZE, channels.TerminalSize(77, 22).encode())
    await asyncio.sleep(0.2)
    await command.send(STDIN, b"go\r")
    out, _, status = await asyncio.wait_for(collect(command), 10)
    assert b"22 77" in out and channels.exit_code(status) == 0
    assert channels.TerminalSize(77, 22) in runtime.resizes


async def test_exec_over_websocket_v4(runtime: LocalRuntime) -> None:
    url = await RuntimeStub(runtime).exec(cri.ExecRequest(cmd=["sh", "-c", "echo ws; exit 2"], stdout=True,
                                                          stderr=True))
    async with connect(url.replace("http://", "ws://"), subprotocols=[channels.V4]) as connection:
        assert connection.subprotocol == channels.V4
        out, _, status = await asyncio.wait_for(collect(ClientWebSocketChannels(connection)), 10)
    assert out == b"ws\n" and channels.exit_code(status) == 2


async def test_attach_runs_the_containers_process(runtime: LocalRuntime) -> None:
    url = await RuntimeStub(runtime).attach(cri.AttachRequest(stdin=True, stdout=True, stderr=True))
    command = await open_command(url, StreamOptions(stdin=True, stdout=True, stderr=True))
    await command.send(STDIN, b"typed\n")
    await command.send(CLOSE, bytes([STDIN]))
    out, _, _ = await asyncio.wait_for(collect(command), 10)
    assert out == b"attached\ntyped\n"


async def test_urls_are_single_use(runtime: LocalRuntime) -> None:
    url = await RuntimeStub(runtime).exec(cri.ExecRequest(cmd=["true"], stdout=True))
    await collect(await open_command(url, StreamOptions(stdout=True, stderr=False)))
    with pytest.raises(UpgradeError) as caught:
        await open_command(url, StreamOptions(stdout=True, stderr=False))
    assert caught.value.status == 404


async def test_an_unknown_stream_protocol_is_refused_with_403(runtime: LocalRuntime) -> None:
    url = await RuntimeStub(runtime).exec(cri.ExecRequest(cmd=["true"], stdout=True))
    with pytest.raises(UpgradeError, match="unable to negotiate protocol") as caught:
        await connect_spdy(url, ["v9.channel.k8s.io"])
    assert caught.value.status == 403


async def test_port_forward_over_spdy_two_connections_one_session(runtime: LocalRuntime, echo_port: int) -> None:
    url = await RuntimeStub(runtime).port_forward("sandbox", [])
    session, protocol = await connect_spdy(url, [channels.PORT_FORWARD])
    assert protocol == channels.PORT_FORWARD
    client = PortForwardClient(session)
    for line in (b"one\n", b"two\n"):
        data, error = await client.open(echo_port)
        await data.write(line)
        assert await asyncio.wait_for(data.read(), 5) == b"echo: " + line
        assert await data.read() == b"" and await error.read() == b""
    await client.close()


async def test_port_forward_to_a_closed_port_reports_on_the_error_stream(runtime: LocalRuntime) -> None:
    url = await RuntimeStub(runtime).port_forward("sandbox", [])
    client = PortForwardClient((await connect_spdy(url, [channels.PORT_FORWARD]))[0])
    data, error = await client.open(1)
    message = await asyncio.wait_for(error.read(), 5)
    assert b"failed to connect to localhost:1" in message
    await client.close()


async def test_port_forward_spdy_inside_a_websocket(runtime: LocalRuntime, echo_port: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # `SPDY/3.1+portforward.k8s.io` is not an RFC 6455 token: `websockets` would refuse to offer or accept it
    monkeypatch.setattr(ClientProtocol, "process_subprotocol",
                        lambda self, headers: headers.get("Sec-WebSocket-Protocol"))
    url = await RuntimeStub(runtime).port_forward("sandbox", [])
    async with connect(url.replace("http://", "ws://"),
                       additional_headers={"Sec-WebSocket-Protocol": channels.SPDY_PORT_FORWARD}) as connection:
        assert connection.subprotocol == channels.SPDY_PORT_FORWARD
        client = PortForwardClient(SpdySession(ClientWebSocketStream(connection), client=True).start())
        data, _ = await client.open(echo_port)
        await data.write(b"tunnel\n")
        assert await asyncio.wait_for(data.read(), 5) == b"echo: tunnel\n"
        await client.close()


async def test_port_forward_over_websocket_channels_as_the_python_client_does(runtime: LocalRuntime,
                                                                              echo_port: int) -> None:
    url = await RuntimeStub(runtime).port_forward("sandbox", [echo_port])
    async with connect(url.replace("http://", "ws://") + f"?ports={echo_port}",
                       subprotocols=[channels.V4]) as connection:
        port_bytes = echo_port.to_bytes(2, "little")
        assert {await connection.recv(), await connection.recv()} == {b"\x00" + port_bytes, b"\x01" + port_bytes}
        await connection.send(b"\x00hello\n")
        assert await asyncio.wait_for(connection.recv(), 5) == b"\x00echo: hello\n"

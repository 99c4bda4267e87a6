"""A stand-in container runtime streaming server for tests: commands run as local processes.

It plays containerd's part at the end of the chain. `LocalRuntime.exec(...)`, `.attach(...)` and
`.port_forward(...)` register a request and return a single-use URL, as CRI Exec/Attach/PortForward do;
the server behind the URLs is built from the library's server side (`streaming.endpoints`), so it speaks
SPDY/3.1 and WebSocket like a real runtime:

* exec runs `cmd` with `subprocess` (with a pseudo-terminal when tty is asked for; resizes are applied to
  it and recorded in `resizes`), stdin/stdout/stderr wired to the streams, and ends with the exit Status;
* attach runs the container's `attach_command` the same way (a stand-in for its main process);
* port-forward connects to 127.0.0.1:<port> (the "pod network") and copies bytes both ways.

`RuntimeStub` is a stand-in CRI client (`exec`, `attach`, `port_forward` returning those URLs).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import secrets
import struct
import termios
import threading
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.store.etcd_server import free_port
from minikube_py.streaming import channels, endpoints, portforward
from minikube_py.streaming.channels import CLOSE, RESIZE, STDERR, STDIN, STDOUT
from minikube_py.streaming.remotecommand import Channels, StreamOptions
from minikube_py.streaming.uvicorn_protocols import StreamingHttpProtocol, StreamingWebSocketProtocol


@dataclass
class Pending:
    kind: str  # exec, attach, portforward
    argv: list[str] = field(default_factory=list)
    options: StreamOptions = field(default_factory=StreamOptions)


async def run_process(argv: list[str], options: StreamOptions, down: Channels,
                      resizes: list[channels.TerminalSize]) -> None:
    """Run `argv` with its stdio on `down`'s channels; end with its exit Status."""
    if options.tty:
        master, slave = pty.openpty()
        process = await asyncio.create_subprocess_exec(*argv, stdin=slave, stdout=slave, stderr=slave,
                                                       start_new_session=True)
        os.close(slave)
        outputs = [_pump_fd(master, down)]
        write = lambda data: os.write(master, data)  # noqa: E731
        close_stdin = lambda: os.write(master, b"\x04")  # noqa: E731  (^D: end of input on a terminal)
    else:
        pipe = asyncio.subprocess.PIPE
        process = await asyncio.create_subprocess_exec(*argv, stdin=pipe if options.stdin else None,
                                                       stdout=pipe, stderr=pipe)
        assert process.stdout is not None and process.stderr is not None
        outputs = [_pump(process.stdout, STDOUT, down), _pump(process.stderr, STDERR, down)]
        write = lambda data: process.stdin.write(data) if process.stdin else None  # noqa: E731
        close_stdin = lambda: process.stdin.close() if process.stdin else None  # noqa: E731

    async def inputs() -> None:
        while (message := await down.receive()) is not None:
            channel, data = message
            if channel == STDIN:
                write(data)
            elif channel == CLOSE and data == bytes([STDIN]):
                close_stdin()
            elif channel == RESIZE and options.tty:
                size = channels.parse_sizes(data)[0][0]
                resizes.append(size)
                fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", size.height, size.width, 0, 0))
        with contextlib.suppress(ProcessLookupError):
            process.kill()  # the user went away

    reader = asyncio.ensure_future(inputs())
    try:
        await asyncio.gather(*outputs)
        code = await process.wait()
        await down.send(channels.ERROR, channels.status_bytes(channels.exit_code_status(code)))
    finally:
        reader.cancel()
        if options.tty:
            os.close(master)
        await down.close()


async def _pump(stream: asyncio.StreamReader, channel: int, down: Channels) -> None:
    while data := await stream.read(65536):
        await down.send(channel, data)


async def _pump_fd(fd: int, down: Channels) -> None:
    loop = asyncio.get_running_loop()
    while True:
        try:
            data = await loop.run_in_executor(None, os.read, fd, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            return
        if not data:
            return
        await down.send(STDOUT, data)


async def dial(port: int, data: portforward.Pipe, error: portforward.Pipe) -> None:
    """What a runtime does with a forwarded connection: connect to the port and copy."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as err:
        await error.write(f"failed to connect to localhost:{port} inside namespace: {err}".encode())
        return
    target = _SocketPipe(reader, writer)
    await portforward.relay(data, error, target, _Nothing())


class _SocketPipe:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def read(self) -> bytes:
        return await self.reader.read(65536)

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        if self.writer.can_write_eof():
            self.writer.write_eof()


class _Nothing:
    async def read(self) -> bytes:
        return b""

    async def write(self, data: bytes) -> None:
        pass

    async def close(self) -> None:
        pass


class LocalRuntime:
    """The streaming server, run by uvicorn in a thread of its own (start/stop), on 127.0.0.1."""

    def __init__(self, attach_command: list[str] | None = None) -> None:
        self.port = free_port()
        self.pending: dict[str, Pending] = {}
        self.resizes: list[channels.TerminalSize] = []
        self.attach_command = attach_command or ["sh", "-c", "echo attached; cat"]
        routes = []
        for kind in ("exec", "attach"):
            routes += [Route(f"/{kind}/{{token}}", self._command_spdy, methods=["POST"]),
                       WebSocketRoute(f"/{kind}/{{token}}", self._command_websocket)]
        routes += [Route("/portforward/{token}", self._port_forward_spdy, methods=["POST"]),
                   WebSocketRoute("/portforward/{token}", self._port_forward_websocket)]
        config = uvicorn.Config(Starlette(routes=routes), host="127.0.0.1", port=self.port, log_level="warning",
                                http=StreamingHttpProtocol, ws=StreamingWebSocketProtocol, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> LocalRuntime:
        self.thread.start()
        while not self.server.started:
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def url(self, pending: Pending) -> str:
        token = secrets.token_urlsafe(8)
        self.pending[token] = pending
        return f"http://127.0.0.1:{self.port}/{pending.kind}/{token}"

    def _take(self, kind: str, token: str) -> Pending | None:
        pending = self.pending.pop(token, None)  # single use, as containerd's URLs
        return pending if pending is not None and pending.kind == kind else None

    def _command(self, pending: Pending) -> Any:
        argv = pending.argv if pending.kind == "exec" else self.attach_command
        return lambda down: run_process(argv, pending.options, down, self.resizes)

    async def _command_spdy(self, request: Request) -> Response:
        pending = self._take(request.url.path.split("/")[1], request.path_params["token"])
        if pending is None:
            return PlainTextResponse("not found", status_code=404)
        return endpoints.command_spdy_response(pending.options, self._command(pending))

    async def _command_websocket(self, websocket: WebSocket) -> None:
        pending = self._take(websocket.url.path.split("/")[1], websocket.path_params["token"])
        if pending is None:
            await websocket.close(1002)
            return
        await endpoints.serve_command_websocket(websocket, pending.options, self._command(pending))

    async def _port_forward_spdy(self, request: Request) -> Response:
        if self._take("portforward", request.path_params["token"]) is None:
            return PlainTextResponse("not found", status_code=404)
        return endpoints.port_forward_spdy_response(dial)

    async def _port_forward_websocket(self, websocket: WebSocket) -> None:
        if self._take("portforward", websocket.path_params["token"]) is None:
            await websocket.close(1002)
            return
        await endpoints.serve_port_forward_websocket(websocket, dial)


class RuntimeStub:
    """The part of the CRI client the kubelet server uses, answering with `runtime`'s URLs."""

    def __init__(self, runtime: LocalRuntime) -> None:
        self.runtime = runtime
        self.requests: list[Any] = []

    async def exec(self, request: cri.ExecRequest) -> str:
        self.requests.append(request)
        options = StreamOptions(request.stdin, request.stdout, request.stderr, request.tty)
        return self.runtime.url(Pending("exec", list(request.cmd), options))

    async def attach(self, request: cri.AttachRequest) -> str:
        self.requests.append(request)
        options = StreamOptions(request.stdin, request.stdout, request.stderr, request.tty)
        return self.runtime.url(Pending("attach", [], options))

    async def port_forward(self, pod_sandbox_id: str, ports: list[int]) -> str:
        self.requests.append((pod_sandbox_id, ports))
        return self.runtime.url(Pending("portforward"))

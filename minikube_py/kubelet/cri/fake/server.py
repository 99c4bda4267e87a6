"""Serving a `FakeRuntime` over CRI on a unix socket, from inside a running event loop.

    runtime = FakeRuntime(pod_cidr="10.244.1.0/24", node_name="sim-1")
    server = await serve("/run/mkpy/sim-1/cri.sock", runtime)
    ...  # the kubelet dials unix:///run/mkpy/sim-1/cri.sock
    await server.stop()

Each call makes its own grpc.aio server, so one process can host many simulated nodes side by side (all on
the same event loop; the fake does no blocking work). A leftover socket file from a dead process is
replaced; a socket someone still serves on is refused.
"""

from __future__ import annotations

import os
import socket
import stat

import grpc.aio

from minikube_py.kubelet.cri import api_pb2_grpc
from minikube_py.kubelet.cri.fake.runtime import FakeRuntime
from minikube_py.kubelet.cri.fake.service import ImageService, RuntimeService

MAX_SOCKET_PATH_BYTES = 107  # sun_path holds 108 bytes including the terminating NUL
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # as the kubelet allows: long container lists outgrow gRPC's 4 MiB


class FakeRuntimeServer:
    """A running fake runtime; `endpoint` is what the kubelet's --container-runtime-endpoint takes."""

    def __init__(self, socket_path: str, runtime: FakeRuntime, server: grpc.aio.Server) -> None:
        self.socket_path = socket_path
        self.runtime = runtime
        self._server = server

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket_path}"

    async def stop(self, grace: float | None = None) -> None:
        """Stops serving (calls in flight get `grace` seconds to finish) and removes the socket file."""
        await self._server.stop(grace)
        try:
            os.unlink(self.socket_path)
        except FileNotFoundError:
            pass


async def serve(socket_path: str, runtime: FakeRuntime) -> FakeRuntimeServer:
    """Starts serving `runtime` on `socket_path` (its directory is created); ValueError for a path too long
    for a unix socket, FileExistsError when the path is taken."""
    socket_path = os.path.abspath(socket_path)
    if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH_BYTES:
        raise ValueError(f"socket path {socket_path} is longer than a unix socket allows "
                         f"({MAX_SOCKET_PATH_BYTES} bytes); choose a shorter one")
    os.makedirs(os.path.dirname(socket_path), exist_ok=True)
    _remove_stale_socket(socket_path)
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                                      ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(RuntimeService(runtime), server)
    api_pb2_grpc.add_ImageServiceServicer_to_server(ImageService(runtime), server)
    server.add_insecure_port(f"unix://{socket_path}")
    await server.start()
    return FakeRuntimeServer(socket_path, runtime, server)


def _remove_stale_socket(path: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except ConnectionRefusedError:  # nobody listens: a leftover of a process that died
            os.unlink(path)
            return
    raise FileExistsError(f"{path} is in use: another process serves on it")

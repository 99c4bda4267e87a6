"""A NodeBackend for tests of the kubelet server: a few containers with log files, and a local runtime."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn

from minikube_py.kubelet.cri.logs import format_line
from minikube_py.kubelet.server import ContainerRef, KubeletServer
from minikube_py.store.etcd_server import free_port
from minikube_py.streaming.uvicorn_protocols import StreamingHttpProtocol, StreamingWebSocketProtocol
from tests.streaming.localruntime import LocalRuntime, RuntimeStub

LOG_START = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def write_log(path: Path, lines: list[tuple[str, bytes]], start: datetime = LOG_START) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        for i, (stream, content) in enumerate(lines):
            f.write(format_line(stream, content, start + timedelta(seconds=i)))


class FakeNode:
    """Pod `default/web` with container `app` (running, restarted once) and `sidecar` (not started)."""

    def __init__(self, runtime: LocalRuntime, log_dir: Path) -> None:
        self.runtime = RuntimeStub(runtime)
        self.log_dir = log_dir
        self.running = True
        self.containers = {
            ("default", "web", "app"): lambda: ContainerRef("cid-app", str(log_dir / "app" / "1.log"), self.running,
                                                            str(log_dir / "app" / "0.log")),
            ("default", "web", "sidecar"): lambda: ContainerRef("cid-side", str(log_dir / "sidecar" / "0.log"),
                                                                False),
        }

    def pods(self) -> list[dict[str, Any]]:
        return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"}}]

    def find_container(self, namespace: str, pod: str, container: str) -> ContainerRef:
        if (namespace, pod) != ("default", "web"):
            raise LookupError(f'pod "{namespace}/{pod}" not found')
        found = self.containers.get((namespace, pod, container))
        if found is None:
            raise LookupError(f'container "{container}" in pod "{pod}" not found')
        return found()

    def sandbox_id(self, namespace: str, pod: str) -> str:
        self.find_container(namespace, pod, "app")
        return "sandbox-web"

    async def stats_summary(self) -> dict[str, Any]:
        return {"node": {"nodeName": "node-1"}, "pods": []}


class ServerThread:
    """Runs a uvicorn config on its own event loop in a thread."""

    def __init__(self, config_for_port: Any) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(config_for_port(self.port))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ServerThread:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("server did not start")
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def plain_config(server: KubeletServer) -> Any:
    """The kubelet app over plain HTTP (the endpoint tests; TLS and auth are tested apart)."""
    return lambda port: uvicorn.Config(server.app(), host="127.0.0.1", port=port, log_level="warning",
                                       http=StreamingHttpProtocol, ws=StreamingWebSocketProtocol, lifespan="off")


async def until(condition: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)

"""Tests of the CRI layer (client, log files, `mkpy crictl`), and the tiny runtime they talk to.

`TinyRuntime` implements a few RuntimeService and ImageService methods in memory with the generated
servicer base classes (everything else answers UNIMPLEMENTED) and records each request, so a test can check
which CRI call a client method made. `serve` starts it on a unix socket in the running event loop;
`serve_in_thread` runs it on a loop of its own, for synchronous callers like click's CliRunner.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import grpc
import grpc.aio

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri import api_pb2_grpc


def pod_config(name: str, namespace: str = "default") -> cri.PodSandboxConfig:
    metadata = cri.PodSandboxMetadata(name=name, namespace=namespace, uid=f"uid-{name}")
    return cri.PodSandboxConfig(metadata=metadata)


def container_config(name: str, image: str = "busybox:1.36", log_path: str = "") -> cri.ContainerConfig:
    return cri.ContainerConfig(
        metadata=cri.ContainerMetadata(name=name), image=cri.ImageSpec(image=image), log_path=log_path
    )


class TinyRuntime(api_pb2_grpc.RuntimeServiceServicer, api_pb2_grpc.ImageServiceServicer):
    """An in-memory runtime: sandboxes, containers and images are records; nothing runs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.sandboxes: dict[str, cri.PodSandboxStatus] = {}
        self.containers: dict[str, cri.ContainerStatus] = {}
        self.container_pods: dict[str, str] = {}
        self.images: dict[str, cri.Image] = {}

    def _record(self, method: str, request: Any) -> None:
        self.calls.append((method, request))

    async def _missing(self, context: grpc.aio.ServicerContext, what: str) -> None:
        await context.abort(grpc.StatusCode.NOT_FOUND, f"{what} not found")

    def add_image(self, tag: str, image_id: str, size: int) -> None:
        self.images[tag] = cri.Image(id=image_id, repo_tags=[tag], size=size)

    # --- RuntimeService ---

    async def Version(self, request, context):  # noqa: N802 (gRPC method names)
        self._record("Version", request)
        return cri.VersionResponse(
            version="0.1.0", runtime_name="tiny", runtime_version="1.0", runtime_api_version="v1"
        )

    async def Status(self, request, context):  # noqa: N802
        self._record("Status", request)
        ready = [cri.RuntimeCondition(type="RuntimeReady", status=True),
                 cri.RuntimeCondition(type="NetworkReady", status=True)]
        info = {"config": '{"sandboxImage": "pause:3.9"}'} if request.verbose else {}
        return cri.StatusResponse(status=cri.RuntimeStatus(conditions=ready), info=info)

    async def RunPodSandbox(self, request, context):  # noqa: N802
        self._record("RunPodSandbox", request)
        sandbox_id = f"{len(self.sandboxes) + 1:02d}" + "a" * 62
        config = request.config
        self.sandboxes[sandbox_id] = cri.PodSandboxStatus(
            id=sandbox_id, metadata=config.metadata, state=cri.SANDBOX_READY, created_at=time.time_ns(),
            network=cri.PodSandboxNetworkStatus(ip="10.88.0.2"), labels=config.labels,
            annotations=config.annotations, runtime_handler=request.runtime_handler,
        )
        return cri.RunPodSandboxResponse(pod_sandbox_id=sandbox_id)

    async def StopPodSandbox(self, request, context):  # noqa: N802
        self._record("StopPodSandbox", request)
        if request.pod_sandbox_id not in self.sandboxes:
            await self._missing(context, "sandbox")
        self.sandboxes[request.pod_sandbox_id].state = cri.SANDBOX_NOTREADY
        return cri.StopPodSandboxResponse()

    async def RemovePodSandbox(self, request, context):  # noqa: N802
        self._record("RemovePodSandbox", request)
        self.sandboxes.pop(request.pod_sandbox_id, None)
        return cri.RemovePodSandboxResponse()

    async def PodSandboxStatus(self, request, context):  # noqa: N802
        self._record("PodSandboxStatus", request)
        if request.pod_sandbox_id not in self.sandboxes:
            await self._missing(context, "sandbox")
        info = {"info": '{"pid": 4242}'} if request.verbose else {}
        return cri.PodSandboxStatusResponse(status=self.sandboxes[request.pod_sandbox_id], info=info)

    async def ListPodSandbox(self, request, context):  # noqa: N802
        self._record("ListPodSandbox", request)
        wanted = request.filter.state.state if request.filter.HasField("state") else None
        items = [
            cri.PodSandbox(id=s.id, metadata=s.metadata, state=s.state, created_at=s.created_at,
                           labels=s.labels, annotations=s.annotations, runtime_handler=s.runtime_handler)
            for s in self.sandboxes.values() if wanted is None or s.state == wanted
        ]
        return cri.ListPodSandboxResponse(items=items)

    async def CreateContainer(self, request, context):  # noqa: N802
        self._record("CreateContainer", request)
        if request.pod_sandbox_id not in self.sandboxes:
            await self._missing(context, "sandbox")
        container_id = f"{len(self.containers) + 1:02d}" + "c" * 62
        config = request.config
        labels = {**config.labels, "io.kubernetes.pod.name": request.sandbox_config.metadata.name}
        log_path = f"{request.sandbox_config.log_directory}/{config.log_path}" if config.log_path else ""
        self.containers[container_id] = cri.ContainerStatus(
            id=container_id, metadata=config.metadata, state=cri.CONTAINER_CREATED, created_at=time.time_ns(),
            image=config.image, image_ref=config.image.image, labels=labels, log_path=log_path,
        )
        self.container_pods[container_id] = request.pod_sandbox_id
        return cri.CreateContainerResponse(container_id=container_id)

    async def StartContainer(self, request, context):  # noqa: N802
        self._record("StartContainer", request)
        if request.container_id not in self.containers:
            await self._missing(context, "container")
        status = self.containers[request.container_id]
        status.state, status.started_at = cri.CONTAINER_RUNNING, time.time_ns()
        return cri.StartContainerResponse()

    async def StopContainer(self, request, context):  # noqa: N802
        self._record("StopContainer", request)
        if request.container_id not in self.containers:
            await self._missing(context, "container")
        status = self.containers[request.container_id]
        status.state, status.finished_at, status.exit_code, status.reason = (
            cri.CONTAINER_EXITED, time.time_ns(), 137, "Error")
        return cri.StopContainerResponse()

    async def RemoveContainer(self, request, context):  # noqa: N802
        self._record("RemoveContainer", request)
        self.containers.pop(request.container_id, None)
        return cri.RemoveContainerResponse()

    async def ListContainers(self, request, context):  # noqa: N802
        self._record("ListContainers", request)
        f = request.filter
        containers = [
            cri.Container(id=c.id, pod_sandbox_id=self.container_pods[c.id], metadata=c.metadata,
                          image=c.image, image_ref=c.image_ref, state=c.state, created_at=c.created_at,
                          labels=c.labels)
            for c in self.containers.values()
            if (not f.HasField("state") or c.state == f.state.state)
            and f.pod_sandbox_id in ("", self.container_pods[c.id])
        ]
        return cri.ListContainersResponse(containers=containers)

    async def ContainerStatus(self, request, context):  # noqa: N802
        self._record("ContainerStatus", request)
        if request.container_id not in self.containers:
            await self._missing(context, "container")
        info = {"info": '{"pid": 4243, "runtimeSpec": {"ociVersion": "1.0.2"}}'} if request.verbose else {}
        return cri.ContainerStatusResponse(status=self.containers[request.container_id], info=info)

    async def ExecSync(self, request, context):  # noqa: N802
        """`exit N` exits with N; anything else prints its arguments on stdout and "done" on stderr."""
        self._record("ExecSync", request)
        if request.container_id not in self.containers:
            await self._missing(context, "container")
        if request.cmd[0] == "exit":
            return cri.ExecSyncResponse(exit_code=int(request.cmd[1]))
        return cri.ExecSyncResponse(stdout=" ".join(request.cmd).encode() + b"\n", stderr=b"done\n")

    # --- ImageService ---

    async def ListImages(self, request, context):  # noqa: N802
        self._record("ListImages", request)
        return cri.ListImagesResponse(images=self.images.values())

    async def ImageStatus(self, request, context):  # noqa: N802
        self._record("ImageStatus", request)
        image = self.images.get(request.image.image)
        info = {"info": '{"imageSpec": {"architecture": "amd64"}}'} if request.verbose and image else {}
        return cri.ImageStatusResponse(image=image, info=info)

    async def PullImage(self, request, context):  # noqa: N802
        self._record("PullImage", request)
        if request.image.image.split("/")[0].endswith(".invalid"):
            message = f"failed to resolve reference {request.image.image!r}"
            await context.abort(grpc.StatusCode.UNKNOWN, message)
        self.add_image(request.image.image, "sha256:" + "f" * 64, 1000)
        return cri.PullImageResponse(image_ref="sha256:" + "f" * 64)

    async def RemoveImage(self, request, context):  # noqa: N802
        self._record("RemoveImage", request)
        self.images.pop(request.image.image, None)
        return cri.RemoveImageResponse()


@asynccontextmanager
async def serve(runtime: TinyRuntime, socket: str) -> AsyncIterator[grpc.aio.Server]:
    """`runtime` served on the unix socket `socket` until the block ends."""
    server = grpc.aio.server()
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(runtime, server)
    api_pb2_grpc.add_ImageServiceServicer_to_server(runtime, server)
    server.add_insecure_port(f"unix://{socket}")
    await server.start()
    try:
        yield server
    finally:
        await server.stop(grace=None)


@contextmanager
def serve_in_thread(runtime: TinyRuntime, socket: str) -> Iterator[None]:
    """Like `serve`, on an event loop in a thread of its own, for tests that are not async."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    serving = serve(runtime, socket)
    asyncio.run_coroutine_threadsafe(serving.__aenter__(), loop).result(timeout=10)
    try:
        yield
    finally:
        asyncio.run_coroutine_threadsafe(serving.__aexit__(None, None, None), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

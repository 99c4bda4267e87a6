"""`RuntimeClient`: the kubelet's side of the CRI, one async method per gRPC call.

A container runtime (containerd, or mkpy's fake runtime) serves two gRPC services on a unix socket:
RuntimeService (pod sandboxes, containers, exec, stats) and ImageService (images). This client holds one
`grpc.aio` channel to that socket and offers each call the kubelet makes as a method named after it
(`RunPodSandbox` -> `run_pod_sandbox`), taking the request's fields as arguments and returning the
interesting part of the response. Read it to see which CRI call does what; the messages are in
`api.proto`.

    async with RuntimeClient("/run/mkpy/node1/containerd.sock") as runtime:
        sandbox_id = await runtime.run_pod_sandbox(sandbox_config)
        container_id = await runtime.create_container(sandbox_id, container_config, sandbox_config)
        await runtime.start_container(container_id)

Every call has a deadline (`timeout`, like the kubelet's --runtime-request-timeout) except PullImage, which
takes as long as the download does; StopContainer and ExecSync get their own timeout on top. Failures raise
the `CRIError` subclasses of `errors.py`. Create the client inside the event loop that uses it.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

import grpc
import grpc.aio

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri import api_pb2_grpc
from minikube_py.kubelet.cri.errors import from_rpc_error

# Listing hundreds of containers with their labels and annotations outgrows gRPC's 4 MiB default;
# the kubelet and crictl allow 16 MiB.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


def socket_path(endpoint: str) -> str:
    """The socket path of `endpoint`, given as "unix:///path/x.sock" or as a bare path."""
    if endpoint.startswith("unix://"):
        return endpoint.removeprefix("unix://")
    if "://" in endpoint:
        raise ValueError(f"unsupported CRI endpoint {endpoint!r}: use a unix socket path or unix:///path")
    return os.path.abspath(endpoint)


class RuntimeClient:
    """RuntimeService + ImageService of one container runtime over one gRPC channel."""

    def __init__(self, endpoint: str, timeout: float = 120.0, stubs: tuple[Any, Any] | None = None) -> None:
        """`stubs` (RuntimeService, ImageService) replace the channel to `endpoint` when given: simulated
        nodes call their fake runtime in-process (`cri/fake/inprocess.py`)."""
        self.endpoint = socket_path(endpoint)
        self.timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        if stubs is not None:
            self._runtime, self._images = stubs
            return
        self._channel = grpc.aio.insecure_channel(
            f"unix://{self.endpoint}",
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                # A runtime that restarts is back within a second or two; without these, gRPC waits up to
                # 2 minutes between reconnection attempts and the kubelet would not notice for that long.
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 1000),
            ],
        )
        self._runtime = api_pb2_grpc.RuntimeServiceStub(self._channel)
        self._images = api_pb2_grpc.ImageServiceStub(self._channel)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()

    async def __aenter__(self) -> RuntimeClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _call(self, stub: Any, method: str, request: Any, extra_seconds: float | None = 0.0) -> Any:
        """Calls `method` on `stub`, due in the client's timeout + `extra_seconds` (None: no deadline)."""
        timeout = None if extra_seconds is None else self.timeout + extra_seconds
        try:
            return await getattr(stub, method)(request, timeout=timeout)
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(method, error, self.endpoint) from None

    # --- the runtime itself -----------------------------------------------------------------------------

    async def version(self) -> cri.VersionResponse:
        return await self._call(self._runtime, "Version", cri.VersionRequest(version="v1"))

    async def status(self, verbose: bool = False) -> cri.StatusResponse:
        """The RuntimeReady and NetworkReady conditions (and, verbose, the runtime's config)."""
        return await self._call(self._runtime, "Status", cri.StatusRequest(verbose=verbose))

    async def update_runtime_config(self, pod_cidr: str) -> None:
        """Tells the runtime the node's pod CIDRs (comma-separated), from the Node's spec.podCIDRs; a runtime
        without a network config yet makes one for them (containerd renders its CNI template)."""
        config = cri.RuntimeConfig(network_config=cri.NetworkConfig(pod_cidr=pod_cidr))
        await self._call(self._runtime, "UpdateRuntimeConfig", cri.UpdateRuntimeConfigRequest(runtime_config=config))

    # --- pod sandboxes ----------------------------------------------------------------------------------

    async def run_pod_sandbox(self, config: cri.PodSandboxConfig, runtime_handler: str = "") -> str:
        """Creates and starts the pod's sandbox (namespaces, network, pause container); returns its ID."""
        request = cri.RunPodSandboxRequest(config=config, runtime_handler=runtime_handler)
        response = await self._call(self._runtime, "RunPodSandbox", request)
        return response.pod_sandbox_id

    async def stop_pod_sandbox(self, pod_sandbox_id: str) -> None:
        """Stops the sandbox's containers and tears down its network; the sandbox stays listed."""
        request = cri.StopPodSandboxRequest(pod_sandbox_id=pod_sandbox_id)
        await self._call(self._runtime, "StopPodSandbox", request)

    async def remove_pod_sandbox(self, pod_sandbox_id: str) -> None:
        """Removes the sandbox and all its containers."""
        request = cri.RemovePodSandboxRequest(pod_sandbox_id=pod_sandbox_id)
        await self._call(self._runtime, "RemovePodSandbox", request)

    async def pod_sandbox_status(
        self, pod_sandbox_id: str, verbose: bool = False
    ) -> cri.PodSandboxStatusResponse:
        request = cri.PodSandboxStatusRequest(pod_sandbox_id=pod_sandbox_id, verbose=verbose)
        return await self._call(self._runtime, "PodSandboxStatus", request)

    async def list_pod_sandbox(self, filter: cri.PodSandboxFilter | None = None) -> list[cri.PodSandbox]:
        response = await self._call(self._runtime, "ListPodSandbox", cri.ListPodSandboxRequest(filter=filter))
        return list(response.items)

    # --- containers -------------------------------------------------------------------------------------

    async def create_container(
        self, pod_sandbox_id: str, config: cri.ContainerConfig, sandbox_config: cri.PodSandboxConfig
    ) -> str:
        """Creates (does not start) a container in the sandbox; returns its ID."""
        request = cri.CreateContainerRequest(
            pod_sandbox_id=pod_sandbox_id, config=config, sandbox_config=sandbox_config
        )
        response = await self._call(self._runtime, "CreateContainer", request)
        return response.container_id

    async def start_container(self, container_id: str) -> None:
        request = cri.StartContainerRequest(container_id=container_id)
        await self._call(self._runtime, "StartContainer", request)

    async def stop_container(self, container_id: str, timeout: int) -> None:
        """Sends the stop signal, then SIGKILL after `timeout` seconds (the pod's grace period)."""
        request = cri.StopContainerRequest(container_id=container_id, timeout=timeout)
        await self._call(self._runtime, "StopContainer", request, extra_seconds=timeout)

    async def remove_container(self, container_id: str) -> None:
        """Removes a stopped container (its log file stays; the kubelet owns the pod's log directory)."""
        request = cri.RemoveContainerRequest(container_id=container_id)
        await self._call(self._runtime, "RemoveContainer", request)

    async def list_containers(self, filter: cri.ContainerFilter | None = None) -> list[cri.Container]:
        response = await self._call(self._runtime, "ListContainers", cri.ListContainersRequest(filter=filter))
        return list(response.containers)

    async def container_status(self, container_id: str, verbose: bool = False) -> cri.ContainerStatusResponse:
        request = cri.ContainerStatusRequest(container_id=container_id, verbose=verbose)
        return await self._call(self._runtime, "ContainerStatus", request)

    async def update_container_resources(self, container_id: str, linux: cri.LinuxContainerResources) -> None:
        request = cri.UpdateContainerResourcesRequest(container_id=container_id, linux=linux)
        await self._call(self._runtime, "UpdateContainerResources", request)

    async def reopen_container_log(self, container_id: str) -> None:
        """Makes the runtime reopen the container's log_path (after the kubelet renamed it to rotate it)."""
        request = cri.ReopenContainerLogRequest(container_id=container_id)
        await self._call(self._runtime, "ReopenContainerLog", request)

    # --- exec, attach, port-forward -----------------------------------------------------------------------

    async def exec_sync(self, container_id: str, cmd: list[str], timeout: int) -> cri.ExecSyncResponse:
        """Runs `cmd` in the container and waits for it (`timeout` seconds, 0 for no limit)."""
        request = cri.ExecSyncRequest(container_id=container_id, cmd=cmd, timeout=timeout)
        return await self._call(self._runtime, "ExecSync", request, extra_seconds=timeout or None)

    async def exec(self, request: cri.ExecRequest) -> str:
        """The single-use streaming URL where the exec's stdin/stdout/stderr will flow."""
        response = await self._call(self._runtime, "Exec", request)
        return response.url

    async def attach(self, request: cri.AttachRequest) -> str:
        """The single-use streaming URL for attaching to the container's main process."""
        response = await self._call(self._runtime, "Attach", request)
        return response.url

    async def port_forward(self, pod_sandbox_id: str, ports: list[int]) -> str:
        """The single-use streaming URL forwarding connections to `ports` in the pod's network namespace."""
        request = cri.PortForwardRequest(pod_sandbox_id=pod_sandbox_id, port=ports)
        response = await self._call(self._runtime, "PortForward", request)
        return response.url

    # --- stats --------------------------------------------------------------------------------------------

    async def container_stats(self, container_id: str) -> cri.ContainerStats:
        request = cri.ContainerStatsRequest(container_id=container_id)
        response = await self._call(self._runtime, "ContainerStats", request)
        return response.stats

    async def list_container_stats(
        self, filter: cri.ContainerStatsFilter | None = None
    ) -> list[cri.ContainerStats]:
        request = cri.ListContainerStatsRequest(filter=filter)
        response = await self._call(self._runtime, "ListContainerStats", request)
        return list(response.stats)

    async def pod_sandbox_stats(self, pod_sandbox_id: str) -> cri.PodSandboxStats:
        request = cri.PodSandboxStatsRequest(pod_sandbox_id=pod_sandbox_id)
        response = await self._call(self._runtime, "PodSandboxStats", request)
        return response.stats

    async def list_pod_sandbox_stats(
        self, filter: cri.PodSandboxStatsFilter | None = None
    ) -> list[cri.PodSandboxStats]:
        request = cri.ListPodSandboxStatsRequest(filter=filter)
        response = await self._call(self._runtime, "ListPodSandboxStats", request)
        return list(response.stats)

    # --- images -------------------------------------------------------------------------------------------

    async def list_images(self, filter: cri.ImageFilter | None = None) -> list[cri.Image]:
        response = await self._call(self._images, "ListImages", cri.ListImagesRequest(filter=filter))
        return list(response.images)

    async def image_status(self, image: str) -> cri.Image | None:
        """The image named `image` (a reference or an ID), or None when the node does not have it."""
        response = await self.inspect_image(image)
        return response.image if response.HasField("image") else None

    async def inspect_image(self, image: str, verbose: bool = False) -> cri.ImageStatusResponse:
        """The whole ImageStatus response: `image` unset when absent, `info` (image config) when verbose."""
        request = cri.ImageStatusRequest(image=cri.ImageSpec(image=image), verbose=verbose)
        return await self._call(self._images, "ImageStatus", request)

    async def pull_image(self, image: str, sandbox_config: cri.PodSandboxConfig | None = None) -> str:
        """Pulls `image` from its registry (no deadline: a download takes what it takes); returns its ref."""
        request = cri.PullImageRequest(image=cri.ImageSpec(image=image), sandbox_config=sandbox_config)
        response = await self._call(self._images, "PullImage", request, extra_seconds=None)
        return response.image_ref

    async def remove_image(self, image: str) -> None:
        request = cri.RemoveImageRequest(image=cri.ImageSpec(image=image))
        await self._call(self._images, "RemoveImage", request)

    async def image_fs_info(self) -> cri.ImageFsInfoResponse:
        """Usage of the filesystem holding the images (for the node's DiskPressure and image GC)."""
        return await self._call(self._images, "ImageFsInfo", cri.ImageFsInfoRequest())

"""The fake runtime's gRPC face: CRI RuntimeService and ImageService servicers over a `FakeRuntime`.

Each method takes the request message apart, calls the matching `FakeRuntime` method (runtime.py holds all
the behaviour) and builds the response message with the fields the kubelet and crictl read, shaped as
containerd fills them (ContainerStatus names the image by its tag and its digest reference, ListContainers
by the spec and ID it was created with). A `RuntimeFailure` becomes a gRPC status through `_CODES`.
server.py puts both servicers on a grpc.aio server.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri import api_pb2_grpc
from minikube_py.kubelet.cri.fake.runtime import (
    NETWORK_NOT_INITIALIZED,
    Container,
    FakeRuntime,
    Image,
    InvalidArgument,
    NotFound,
    RuntimeFailure,
    Sandbox,
    Unavailable,
    Unimplemented,
    Usage,
)

log = logging.getLogger(__name__)

RUNTIME_NAME = "fake"
RUNTIME_VERSION = importlib.metadata.version("minikube_py")
# The fake keeps no files: stats name the root filesystem so that a capacity lookup by mountpoint works.
FILESYSTEM_MOUNTPOINT = "/"

_CODES: dict[type[RuntimeFailure], grpc.StatusCode] = {
    RuntimeFailure: grpc.StatusCode.UNKNOWN,
    NotFound: grpc.StatusCode.NOT_FOUND,
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    Unimplemented: grpc.StatusCode.UNIMPLEMENTED,
}


def _call(handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    """Makes a plain `(self, request) -> response` method a gRPC handler that answers failures with a status."""

    @functools.wraps(handler)
    async def rpc(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return handler(self, request)
        except RuntimeFailure as failure:
            log.debug("%s failed: %s", handler.__name__, failure)
            await context.abort(_CODES[type(failure)], str(failure))
            raise  # not reached: abort raises

    return rpc


class RuntimeService(api_pb2_grpc.RuntimeServiceServicer):
    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime

    @_call
    def Version(self, request: cri.VersionRequest) -> cri.VersionResponse:
        return cri.VersionResponse(version="0.1.0", runtime_name=RUNTIME_NAME, runtime_version=RUNTIME_VERSION,
                                   runtime_api_version="v1")

    @_call
    def Status(self, request: cri.StatusRequest) -> cri.StatusResponse:
        runtime = self.runtime
        network = cri.RuntimeCondition(type="NetworkReady", status=True)
        if runtime.pod_ips is None:  # containerd's words while it has no CNI network config
            network = cri.RuntimeCondition(type="NetworkReady", status=False, reason="NetworkPluginNotReady",
                                           message=f"Network plugin returns error: {NETWORK_NOT_INITIALIZED}")
        conditions = [cri.RuntimeCondition(type="RuntimeReady", status=True), network]
        config = {"nodeName": runtime.node_name, "sandboxImage": runtime.sandbox_image,
                  "podCIDR": str(runtime.pod_ips.network) if runtime.pod_ips else ""}
        return cri.StatusResponse(status=cri.RuntimeStatus(conditions=conditions),
                                  info={"config": json.dumps(config)} if request.verbose else {})

    @_call
    def UpdateRuntimeConfig(self, request: cri.UpdateRuntimeConfigRequest) -> cri.UpdateRuntimeConfigResponse:
        self.runtime.update_runtime_config(request.runtime_config.network_config.pod_cidr)
        return cri.UpdateRuntimeConfigResponse()

    # --- pod sandboxes ---

    @_call
    def RunPodSandbox(self, request: cri.RunPodSandboxRequest) -> cri.RunPodSandboxResponse:
        sandbox = self.runtime.run_pod_sandbox(request.config, request.runtime_handler)
        return cri.RunPodSandboxResponse(pod_sandbox_id=sandbox.id)

    @_call
    def StopPodSandbox(self, request: cri.StopPodSandboxRequest) -> cri.StopPodSandboxResponse:
        self.runtime.stop_pod_sandbox(request.pod_sandbox_id)
        return cri.StopPodSandboxResponse()

    @_call
    def RemovePodSandbox(self, request: cri.RemovePodSandboxRequest) -> cri.RemovePodSandboxResponse:
        self.runtime.remove_pod_sandbox(request.pod_sandbox_id)
        return cri.RemovePodSandboxResponse()

    @_call
    def PodSandboxStatus(self, request: cri.PodSandboxStatusRequest) -> cri.PodSandboxStatusResponse:
        sandbox = self.runtime.sandbox(request.pod_sandbox_id)
        config = sandbox.config
        status = cri.PodSandboxStatus(
            id=sandbox.id, metadata=config.metadata, state=sandbox.state,
            created_at=sandbox.created_at, network=cri.PodSandboxNetworkStatus(ip=sandbox.ip),
            linux=cri.LinuxPodSandboxStatus(
                namespaces=cri.Namespace(options=config.linux.security_context.namespace_options)),
            labels=config.labels, annotations=config.annotations, runtime_handler=sandbox.runtime_handler)
        return cri.PodSandboxStatusResponse(status=status)

    @_call
    def ListPodSandbox(self, request: cri.ListPodSandboxRequest) -> cri.ListPodSandboxResponse:
        selector = request.filter
        state = selector.state.state if selector.HasField("state") else None
        sandboxes = self.runtime.list_pod_sandboxes(selector.id, state, selector.label_selector)
        return cri.ListPodSandboxResponse(items=[_pod_sandbox(sandbox) for sandbox in sandboxes])

    # --- containers ---

    @_call
    def CreateContainer(self, request: cri.CreateContainerRequest) -> cri.CreateContainerResponse:
        sandbox_config = request.sandbox_config if request.HasField("sandbox_config") else None
        container = self.runtime.create_container(request.pod_sandbox_id, request.config, sandbox_config)
        return cri.CreateContainerResponse(container_id=container.id)

    @_call
    def StartContainer(self, request: cri.StartContainerRequest) -> cri.StartContainerResponse:
        self.runtime.start_container(request.container_id)
        return cri.StartContainerResponse()

    @_call
    def StopContainer(self, request: cri.StopContainerRequest) -> cri.StopContainerResponse:
        self.runtime.stop_container(request.container_id, request.timeout)
        return cri.StopContainerResponse()

    @_call
    def RemoveContainer(self, request: cri.RemoveContainerRequest) -> cri.RemoveContainerResponse:
        self.runtime.remove_container(request.container_id)
        return cri.RemoveContainerResponse()

    @_call
    def ListContainers(self, request: cri.ListContainersRequest) -> cri.ListContainersResponse:
        selector = request.filter
        state = selector.state.state if selector.HasField("state") else None
        containers = self.runtime.list_containers(selector.id, state, selector.pod_sandbox_id,
                                                  selector.label_selector)
        return cri.ListContainersResponse(containers=[_container(container) for container in containers])

    @_call
    def ContainerStatus(self, request: cri.ContainerStatusRequest) -> cri.ContainerStatusResponse:
        return cri.ContainerStatusResponse(status=_container_status(self.runtime.container(request.container_id)))

    @_call
    def UpdateContainerResources(
        self, request: cri.UpdateContainerResourcesRequest
    ) -> cri.UpdateContainerResourcesResponse:
        self.runtime.update_container_resources(request.container_id, request.linux)
        return cri.UpdateContainerResourcesResponse()

    @_call
    def ReopenContainerLog(self, request: cri.ReopenContainerLogRequest) -> cri.ReopenContainerLogResponse:
        self.runtime.reopen_container_log(request.container_id)
        return cri.ReopenContainerLogResponse()

    # --- exec, attach, port-forward ---

    @_call
    def ExecSync(self, request: cri.ExecSyncRequest) -> cri.ExecSyncResponse:
        stdout, exit_code = self.runtime.exec_sync(request.container_id, list(request.cmd))
        return cri.ExecSyncResponse(stdout=stdout, exit_code=exit_code)

    @_call
    def Exec(self, request: cri.ExecRequest) -> cri.ExecResponse:
        self.runtime.exec(request.container_id)

    @_call
    def Attach(self, request: cri.AttachRequest) -> cri.AttachResponse:
        self.runtime.attach(request.container_id)

    @_call
    def PortForward(self, request: cri.PortForwardRequest) -> cri.PortForwardResponse:
        self.runtime.port_forward(request.pod_sandbox_id)

    # --- stats ---

    @_call
    def ContainerStats(self, request: cri.ContainerStatsRequest) -> cri.ContainerStatsResponse:
        container = self.runtime.container(request.container_id)
        return cri.ContainerStatsResponse(stats=_container_stats(container, self.runtime.container_usage(container)))

    @_call
    def ListContainerStats(self, request: cri.ListContainerStatsRequest) -> cri.ListContainerStatsResponse:
        selector = request.filter
        containers = self.runtime.list_containers(selector.id, None, selector.pod_sandbox_id,
                                                  selector.label_selector)
        return cri.ListContainerStatsResponse(stats=[
            _container_stats(container, self.runtime.container_usage(container)) for container in containers])

    @_call
    def PodSandboxStats(self, request: cri.PodSandboxStatsRequest) -> cri.PodSandboxStatsResponse:
        return cri.PodSandboxStatsResponse(stats=self._pod_stats(self.runtime.sandbox(request.pod_sandbox_id)))

    @_call
    def ListPodSandboxStats(self, request: cri.ListPodSandboxStatsRequest) -> cri.ListPodSandboxStatsResponse:
        selector = request.filter
        sandboxes = self.runtime.list_pod_sandboxes(selector.id, cri.SANDBOX_READY, selector.label_selector)
        return cri.ListPodSandboxStatsResponse(stats=[self._pod_stats(sandbox) for sandbox in sandboxes])

    def _pod_stats(self, sandbox: Sandbox) -> cri.PodSandboxStats:
        total, containers = self.runtime.pod_usage(sandbox)
        interface = cri.NetworkInterfaceUsage(name="eth0", rx_bytes=_u64(total.network_rx_bytes),
                                              rx_errors=_u64(0), tx_bytes=_u64(total.network_tx_bytes),
                                              tx_errors=_u64(0))
        config = sandbox.config
        return cri.PodSandboxStats(
            attributes=cri.PodSandboxAttributes(id=sandbox.id, metadata=config.metadata, labels=config.labels,
                                                annotations=config.annotations),
            linux=cri.LinuxPodSandboxStats(
                cpu=_cpu(total), memory=_memory(total),
                network=cri.NetworkUsage(timestamp=total.timestamp, default_interface=interface,
                                         interfaces=[interface]),
                process=cri.ProcessUsage(timestamp=total.timestamp, process_count=_u64(total.processes)),
                containers=[_container_stats(container, usage) for container, usage in containers]))


class ImageService(api_pb2_grpc.ImageServiceServicer):
    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime

    @_call
    def ListImages(self, request: cri.ListImagesRequest) -> cri.ListImagesResponse:
        images = self.runtime.list_images(request.filter.image.image)
        return cri.ListImagesResponse(images=[self._image(image) for image in images])

    @_call
    def ImageStatus(self, request: cri.ImageStatusRequest) -> cri.ImageStatusResponse:
        image = self.runtime.image_status(request.image.image)
        return cri.ImageStatusResponse(image=self._image(image) if image else None)

    @_call
    def PullImage(self, request: cri.PullImageRequest) -> cri.PullImageResponse:
        sandbox_config = request.sandbox_config if request.HasField("sandbox_config") else None
        return cri.PullImageResponse(image_ref=self.runtime.pull_image(request.image.image, sandbox_config).id)

    @_call
    def RemoveImage(self, request: cri.RemoveImageRequest) -> cri.RemoveImageResponse:
        self.runtime.remove_image(request.image.image)
        return cri.RemoveImageResponse()

    @_call
    def ImageFsInfo(self, request: cri.ImageFsInfoRequest) -> cri.ImageFsInfoResponse:
        used_bytes, inodes = self.runtime.image_fs_usage()
        usage = cri.FilesystemUsage(timestamp=self.runtime.clock(),
                                    fs_id=cri.FilesystemIdentifier(mountpoint=FILESYSTEM_MOUNTPOINT),
                                    used_bytes=_u64(used_bytes), inodes_used=_u64(inodes))
        return cri.ImageFsInfoResponse(image_filesystems=[usage])

    def _image(self, image: Image) -> cri.Image:
        return cri.Image(id=image.id, repo_tags=image.repo_tags, repo_digests=image.repo_digests, size=image.size,
                         pinned=self.runtime.sandbox_image in image.repo_tags)


def _pod_sandbox(sandbox: Sandbox) -> cri.PodSandbox:
    config = sandbox.config
    return cri.PodSandbox(id=sandbox.id, metadata=config.metadata, state=sandbox.state,
                          created_at=sandbox.created_at, labels=config.labels, annotations=config.annotations,
                          runtime_handler=sandbox.runtime_handler)


def _container(container: Container) -> cri.Container:
    """A list entry names the image as the kubelet gave it (usually the image ID)."""
    config = container.config
    return cri.Container(id=container.id, pod_sandbox_id=container.sandbox_id, metadata=config.metadata,
                         image=config.image, image_ref=container.image.id, image_id=container.image.id,
                         state=container.state,
                         created_at=container.created_at, labels=config.labels, annotations=config.annotations)


def _container_status(container: Container) -> cri.ContainerStatus:
    """The status names the image by its tag and its digest reference (what `kubectl describe` shows)."""
    config, image = container.config, container.image
    status = cri.ContainerStatus(
        id=container.id, metadata=config.metadata, state=container.state,
        created_at=container.created_at, started_at=container.started_at, finished_at=container.finished_at,
        exit_code=container.exit_code, image=cri.ImageSpec(image=image.name), image_ref=image.repo_digests[0],
        image_id=image.id, reason=container.reason, message=container.message, labels=config.labels,
        annotations=config.annotations, mounts=config.mounts, log_path=container.log_path)
    if container.resources is not None:
        status.resources.linux.CopyFrom(container.resources)
    return status


def _container_stats(container: Container, usage: Usage) -> cri.ContainerStats:
    """CPU and memory only while the container runs, as containerd has no task to measure otherwise."""
    config = container.config
    stats = cri.ContainerStats(
        attributes=cri.ContainerAttributes(id=container.id, metadata=config.metadata, labels=config.labels,
                                           annotations=config.annotations),
        writable_layer=cri.FilesystemUsage(
            timestamp=usage.timestamp, fs_id=cri.FilesystemIdentifier(mountpoint=FILESYSTEM_MOUNTPOINT),
            used_bytes=_u64(usage.writable_layer_bytes), inodes_used=_u64(usage.writable_layer_bytes // 4096)))
    if container.state == cri.CONTAINER_RUNNING:
        stats.cpu.CopyFrom(_cpu(usage))
        stats.memory.CopyFrom(_memory(usage))
    return stats


def _cpu(usage: Usage) -> cri.CpuUsage:
    return cri.CpuUsage(timestamp=usage.timestamp, usage_core_nano_seconds=_u64(usage.cpu_core_nano_seconds),
                        usage_nano_cores=_u64(usage.cpu_nano_cores))


def _memory(usage: Usage) -> cri.MemoryUsage:
    working_set = usage.memory_working_set_bytes
    return cri.MemoryUsage(timestamp=usage.timestamp, working_set_bytes=_u64(working_set),
                           usage_bytes=_u64(working_set), rss_bytes=_u64(working_set * 3 // 4),
                           page_faults=_u64(0), major_page_faults=_u64(0))


def _u64(value: int) -> cri.UInt64Value:
    return cri.UInt64Value(value=value)

"""The fake runtime over gRPC, driven through the kubelet's own `RuntimeClient`: it speaks the same CRI."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from click.testing import CliRunner

from minikube_py.cli.fakecri import fake_cri
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRIError, CRINotFound, CRIUnavailable, CRIUnimplemented
from minikube_py.kubelet.cri.fake import FakeRuntime, FakeRuntimeServer, serve
from minikube_py.kubelet.cri.fake.runtime import BUSYBOX_IMAGE
from minikube_py.kubelet.cri.logs import read_log


@pytest.fixture
def short_dir() -> Iterator[str]:
    """A directory short enough for unix socket paths (pytest's tmp_path can be longer than 107 bytes)."""
    directory = tempfile.mkdtemp(prefix="fcri-", dir="/tmp")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def server(short_dir: str) -> AsyncIterator[FakeRuntimeServer]:
    server = await serve(os.path.join(short_dir, "cri.sock"), FakeRuntime(node_name="sim-1"))
    yield server
    await server.stop()


@pytest.fixture
async def client(server: FakeRuntimeServer) -> AsyncIterator[RuntimeClient]:
    async with RuntimeClient(server.endpoint, timeout=10) as client:
        yield client


def pod(name: str = "web", *, host_network: bool = False, annotations: dict[str, str] | None = None,
        log_directory: str = "") -> cri.PodSandboxConfig:
    config = cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name=name, namespace="default", uid=f"uid-{name}"),
        labels={"io.kubernetes.pod.name": name}, annotations=annotations or {}, log_directory=log_directory)
    config.linux.security_context.namespace_options.pid = cri.CONTAINER
    if host_network:
        config.linux.security_context.namespace_options.network = cri.NODE
    return config


def container(image: str, name: str = "app") -> cri.ContainerConfig:
    return cri.ContainerConfig(metadata=cri.ContainerMetadata(name=name), image=cri.ImageSpec(image=image),
                               command=["sh", "-c"], args=["sleep 3600"], labels={"c": name},
                               log_path=f"{name}/0.log")


async def run_container(client: RuntimeClient, config: cri.PodSandboxConfig) -> tuple[str, str]:
    """What the kubelet does for a pod with one container: sandbox, image, create, start."""
    sandbox_id = await client.run_pod_sandbox(config)
    image_ref = await client.pull_image("busybox", config)
    container_id = await client.create_container(sandbox_id, container(image_ref), config)
    await client.start_container(container_id)
    return sandbox_id, container_id


async def test_version_and_status_report_a_ready_fake_runtime(client: RuntimeClient):
    version = await client.version()
    assert (version.runtime_name, version.runtime_api_version, version.version) == ("fake", "v1", "0.1.0")
    status = await client.status(verbose=True)
    assert {(c.type, c.status) for c in status.status.conditions} == {("RuntimeReady", True), ("NetworkReady", True)}
    assert json.loads(status.info["config"])["nodeName"] == "sim-1"


async def test_without_a_pod_cidr_the_network_is_not_ready_until_the_kubelet_passes_one_on(short_dir: str):
    server = await serve(os.path.join(short_dir, "fresh.sock"), FakeRuntime(pod_cidr="", node_name="sim-2"))
    try:
        async with RuntimeClient(server.endpoint, timeout=10) as client:
            status = await client.status(verbose=True)
            assert [(c.type, c.status, c.reason, c.message) for c in status.status.conditions] == [
                ("RuntimeReady", True, "", ""),
                ("NetworkReady", False, "NetworkPluginNotReady",
                 "Network plugin returns error: cni plugin not initialized")]
            assert json.loads(status.info["config"])["podCIDR"] == ""
            with pytest.raises(CRIError, match=r'failed to setup network for sandbox "[0-9a-f]{64}": '
                                               r"cni plugin not initialized$") as raised:
                await client.run_pod_sandbox(pod())
            assert raised.value.code == grpc.StatusCode.UNKNOWN
            with pytest.raises(CRIError, match="get routes: invalid CIDR address: banana"):
                await client.update_runtime_config("banana")

            await client.update_runtime_config("10.244.9.0/24")
            status = await client.status(verbose=True)
            assert all(c.status for c in status.status.conditions)
            assert json.loads(status.info["config"])["podCIDR"] == "10.244.9.0/24"
            sandbox_id = await client.run_pod_sandbox(pod())
            assert (await client.pod_sandbox_status(sandbox_id)).status.network.ip == "10.244.9.2"
    finally:
        await server.stop()


async def test_a_pod_runs_as_the_kubelet_drives_it_and_its_log_reads_back(client: RuntimeClient, short_dir: str):
    sandbox_id, container_id = await run_container(client, pod(log_directory=os.path.join(short_dir, "pods")))
    sandbox = (await client.pod_sandbox_status(sandbox_id)).status
    assert (sandbox.state, sandbox.network.ip, sandbox.metadata.name) == (cri.SANDBOX_READY, "10.244.0.2", "web")
    assert sandbox.linux.namespaces.options.pid == cri.CONTAINER and sandbox.labels["io.kubernetes.pod.name"] == "web"
    assert sandbox.created_at > 0

    busybox = await client.image_status(BUSYBOX_IMAGE)
    assert busybox is not None
    listed = await client.list_containers(cri.ContainerFilter(pod_sandbox_id=sandbox_id))
    assert [(c.id, c.image.image, c.image_ref, c.state) for c in listed] == [
        (container_id, busybox.id, busybox.id, cri.CONTAINER_RUNNING)]

    status = (await client.container_status(container_id)).status
    assert (status.state, status.image.image, status.image_ref, status.image_id) == (
        cri.CONTAINER_RUNNING, BUSYBOX_IMAGE, busybox.repo_digests[0], busybox.id)
    assert status.metadata.name == "app" and status.labels == {"c": "app"} and status.started_at >= status.created_at
    assert status.log_path == os.path.join(short_dir, "pods", "app", "0.log")
    lines = [chunk async for chunk in read_log(status.log_path)]
    assert lines == [f"fake runtime: started app (image {BUSYBOX_IMAGE}, command sh -c sleep 3600)\n".encode()]


async def test_a_host_network_pod_reports_no_pod_ip_and_the_node_namespace(client: RuntimeClient):
    sandbox_id = await client.run_pod_sandbox(pod(host_network=True))
    sandbox = (await client.pod_sandbox_status(sandbox_id)).status
    assert (sandbox.network.ip, sandbox.linux.namespaces.options.network) == ("", cri.NODE)


async def test_a_scripted_container_exits_on_the_event_loop_with_its_exit_code(client: RuntimeClient):
    annotations = {"fake.cri.mkpy.dev/run-seconds.app": "0.05", "fake.cri.mkpy.dev/exit-code.app": "2"}
    _, container_id = await run_container(client, pod(annotations=annotations))
    deadline = time.monotonic() + 5
    while (status := (await client.container_status(container_id)).status).state != cri.CONTAINER_EXITED:
        assert time.monotonic() < deadline, "the container did not exit within 5 s of its 0.05 s run"
        await asyncio.sleep(0.02)
    assert (status.exit_code, status.reason) == (2, "Error")
    assert status.finished_at == status.started_at + 50_000_000


async def test_stop_and_remove_follow_containerds_semantics(client: RuntimeClient):
    sandbox_id, container_id = await run_container(client, pod())
    await client.stop_container(container_id, timeout=30)
    status = (await client.container_status(container_id)).status
    assert (status.state, status.exit_code, status.reason) == (cri.CONTAINER_EXITED, 0, "Completed")
    await client.stop_pod_sandbox(sandbox_id)
    stopped = (await client.list_pod_sandbox(cri.PodSandboxFilter(id=sandbox_id)))[0]
    assert stopped.state == cri.SANDBOX_NOTREADY
    assert (await client.pod_sandbox_status(sandbox_id)).status.network.ip == ""
    await client.remove_pod_sandbox(sandbox_id)
    await client.remove_pod_sandbox(sandbox_id)
    await client.remove_container(container_id)
    with pytest.raises(CRINotFound, match="not found"):
        await client.stop_pod_sandbox(sandbox_id)
    assert await client.list_containers() == []


async def test_unknown_ids_are_not_found(client: RuntimeClient):
    calls = {
        "PodSandboxStatus": client.pod_sandbox_status("0123"),
        "StopPodSandbox": client.stop_pod_sandbox("0123"),
        "ContainerStatus": client.container_status("0123"),
        "StartContainer": client.start_container("0123"),
        "StopContainer": client.stop_container("0123", 10),
        "CreateContainer": client.create_container("0123", container(BUSYBOX_IMAGE), pod()),
        "ExecSync": client.exec_sync("0123", ["true"], 5),
        "ContainerStats": client.container_stats("0123"),
        "PodSandboxStats": client.pod_sandbox_stats("0123"),
    }
    for method, call in calls.items():
        with pytest.raises(CRINotFound, match=f'^{method}: .*"0123": not found$'):
            await call


async def test_bad_requests_get_the_codes_containerd_gives(client: RuntimeClient):
    sandbox_id = await client.run_pod_sandbox(pod())
    cases = [
        (client.run_pod_sandbox(cri.PodSandboxConfig()), grpc.StatusCode.INVALID_ARGUMENT, "must include metadata"),
        (client.create_container(sandbox_id, cri.ContainerConfig(image=cri.ImageSpec(image=BUSYBOX_IMAGE)), pod()),
         grpc.StatusCode.INVALID_ARGUMENT, "container config must include metadata"),
        (client.create_container(sandbox_id, container("nginx:1.27"), pod()),
         grpc.StatusCode.NOT_FOUND, 'failed to resolve image "nginx:1.27": not found'),
        (client.pull_image("Not A Reference"), grpc.StatusCode.INVALID_ARGUMENT, "invalid reference format"),
        (client.pull_image("registry.invalid/app"), grpc.StatusCode.UNKNOWN,
         "lookup registry.invalid: no such host"),
        (client.pull_image("nginx", pod(annotations={"fake.cri.mkpy.dev/pull-error": "denied"})),
         grpc.StatusCode.UNKNOWN, "denied"),
    ]
    for call, code, message in cases:
        with pytest.raises(CRIError) as failure:
            await call
        assert (failure.value.code, message in failure.value.message) == (code, True), failure.value


async def test_a_start_error_fails_start_container_and_is_reported_as_start_error(client: RuntimeClient):
    config = pod(annotations={"fake.cri.mkpy.dev/start-error.app": "no such file"})
    sandbox_id = await client.run_pod_sandbox(config)
    container_id = await client.create_container(sandbox_id, container(BUSYBOX_IMAGE), config)
    with pytest.raises(CRIError) as failure:
        await client.start_container(container_id)
    assert (failure.value.code, failure.value.message) == (grpc.StatusCode.UNKNOWN, "no such file")
    status = (await client.container_status(container_id)).status
    assert (status.state, status.exit_code, status.reason, status.message) == (
        cri.CONTAINER_EXITED, 128, "StartError", "no such file")


async def test_create_container_in_a_stopped_sandbox_fails(client: RuntimeClient):
    sandbox_id = await client.run_pod_sandbox(pod())
    await client.stop_pod_sandbox(sandbox_id)
    with pytest.raises(CRIError, match="is not running"):
        await client.create_container(sandbox_id, container(BUSYBOX_IMAGE), pod())


async def test_exec_sync_and_streaming(client: RuntimeClient):
    sandbox_id, container_id = await run_container(
        client, pod(annotations={"fake.cri.mkpy.dev/exec-exit-code.app": "1"}))
    result = await client.exec_sync(container_id, ["echo", "hi"], timeout=5)
    assert (result.stdout, result.exit_code) == (b"hi\n", 1)
    for call in (client.exec(cri.ExecRequest(container_id=container_id, cmd=["sh"], stdout=True)),
                 client.attach(cri.AttachRequest(container_id=container_id, stdout=True)),
                 client.port_forward(sandbox_id, [8080])):
        with pytest.raises(CRIUnimplemented, match="the fake runtime has no processes to"):
            await call


async def test_resources_update_and_log_reopen(client: RuntimeClient):
    _, container_id = await run_container(client, pod())
    limits = cri.LinuxContainerResources(cpu_quota=50_000, cpu_period=100_000, memory_limit_in_bytes=64 << 20)
    await client.update_container_resources(container_id, limits)
    await client.reopen_container_log(container_id)
    assert (await client.container_status(container_id)).status.resources.linux == limits


async def test_stats_of_containers_and_pods(client: RuntimeClient):
    sandbox_id, container_id = await run_container(client, pod())
    stats = await client.container_stats(container_id)
    assert stats.attributes.id == container_id and stats.attributes.metadata.name == "app"
    assert 1 << 20 <= stats.memory.working_set_bytes.value < 4 << 20 and stats.cpu.usage_nano_cores.value > 0
    assert [s.attributes.id for s in await client.list_container_stats()] == [container_id]
    pod_stats = await client.pod_sandbox_stats(sandbox_id)
    assert pod_stats.attributes.id == sandbox_id and pod_stats.linux.process.process_count.value == 2
    assert pod_stats.linux.network.default_interface.name == "eth0"
    assert [c.attributes.id for c in pod_stats.linux.containers] == [container_id]
    assert pod_stats.linux.memory.working_set_bytes.value > stats.memory.working_set_bytes.value
    assert len(await client.list_pod_sandbox_stats()) == 1
    await client.stop_pod_sandbox(sandbox_id)
    assert await client.list_pod_sandbox_stats() == []
    with pytest.raises(CRIUnavailable):
        await client.pod_sandbox_stats(sandbox_id)


async def test_images_through_the_image_service(client: RuntimeClient):
    assert await client.image_status("nginx") is None
    image_ref = await client.pull_image("nginx")
    nginx = await client.image_status("docker.io/library/nginx:latest")
    assert nginx is not None and nginx.id == image_ref and nginx.repo_tags == ["docker.io/library/nginx:latest"]
    assert nginx.size > 0 and not nginx.pinned
    images = {image.repo_tags[0]: image for image in await client.list_images()}
    assert images["registry.k8s.io/pause:3.10"].pinned and BUSYBOX_IMAGE in images
    await client.remove_image("nginx")
    assert await client.image_status(image_ref) is None
    usage = (await client.image_fs_info()).image_filesystems[0]
    assert usage.used_bytes.value == sum(image.size for image in await client.list_images())
    assert usage.fs_id.mountpoint == "/"


async def test_one_process_hosts_many_runtimes_each_with_its_own_state(short_dir: str):
    servers = [await serve(os.path.join(short_dir, f"n{i}.sock"), FakeRuntime(pod_cidr=f"10.244.{i}.0/24"))
               for i in range(3)]
    try:
        for i, server in enumerate(servers):
            async with RuntimeClient(server.endpoint, timeout=10) as client:
                sandbox_id = await client.run_pod_sandbox(pod())
                assert (await client.pod_sandbox_status(sandbox_id)).status.network.ip == f"10.244.{i}.2"
                assert len(await client.list_pod_sandbox()) == 1
    finally:
        for server in servers:
            await server.stop()
    assert not any(os.path.exists(server.socket_path) for server in servers)


async def test_a_stale_socket_is_replaced_but_a_live_one_or_a_long_path_is_refused(
        server: FakeRuntimeServer, short_dir: str):
    with pytest.raises(FileExistsError, match="is in use"):
        await serve(server.socket_path, FakeRuntime())
    stale = os.path.join(short_dir, "stale.sock")
    with socket.socket(socket.AF_UNIX) as leftover:
        leftover.bind(stale)  # bound but never listening: what a dead process leaves behind
    replacement = await serve(stale, FakeRuntime())
    await replacement.stop()
    with pytest.raises(ValueError, match="longer than a unix socket allows"):
        await serve(os.path.join(short_dir, "x" * 120), FakeRuntime())
    not_a_socket = os.path.join(short_dir, "file")
    open(not_a_socket, "w").close()
    with pytest.raises(FileExistsError, match="not a socket"):
        await serve(not_a_socket, FakeRuntime())


# --- mkpy fake-cri -------------------------------------------------------------------------------------------

def test_fake_cri_refuses_a_bad_pod_cidr():
    result = CliRunner().invoke(fake_cri, ["--listen", "/tmp/unused.sock", "--pod-cidr", "10.0.0.1/24"])
    assert result.exit_code == 2 and "--pod-cidr" in result.output and "host bits set" in result.output


def test_fake_cri_serves_in_the_foreground_until_sigterm(short_dir: str):
    socket_path = os.path.join(short_dir, "cri.sock")
    command = [sys.executable, "-c", "from minikube_py.cli.fakecri import fake_cri; fake_cri()",
               "--listen", socket_path, "--pod-cidr", "10.244.7.0/24", "--node-name", "sim-7"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(socket_path):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "mkpy fake-cri did not create its socket within 20 s"
            time.sleep(0.05)

        async def first_pod_ip() -> str:
            async with RuntimeClient(socket_path, timeout=10) as client:
                return (await client.pod_sandbox_status(await client.run_pod_sandbox(pod()))).status.network.ip

        assert asyncio.run(first_pod_ip()) == "10.244.7.2"
        busy = subprocess.run([*command[:3], "--listen", socket_path], capture_output=True, text=True, timeout=30)
        assert busy.returncode == 1 and "is in use" in busy.stderr
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert "serving on unix://" in (process.stderr.read() if process.stderr else "")
        assert not os.path.exists(socket_path)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

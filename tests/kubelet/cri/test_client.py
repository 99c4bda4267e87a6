"""RuntimeClient against the in-test runtime: each method makes its CRI call, and failures map to errors."""

from __future__ import annotations

import grpc
import pytest

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient, socket_path
from minikube_py.kubelet.cri.errors import CRIError, CRINotFound, CRIUnavailable, CRIUnimplemented
from tests.kubelet.cri import TinyRuntime, container_config, pod_config, serve


@pytest.fixture
def runtime() -> TinyRuntime:
    return TinyRuntime()


@pytest.fixture
async def client(runtime: TinyRuntime, tmp_path):
    socket = str(tmp_path / "cri.sock")
    async with serve(runtime, socket), RuntimeClient(f"unix://{socket}", timeout=5) as client:
        yield client


async def test_the_pod_lifecycle_calls_map_to_their_rpcs(client: RuntimeClient, runtime: TinyRuntime) -> None:
    sandbox_config = pod_config("web")
    sandbox_id = await client.run_pod_sandbox(sandbox_config, runtime_handler="runc")
    container_id = await client.create_container(sandbox_id, container_config("nginx"), sandbox_config)
    await client.start_container(container_id)
    await client.stop_container(container_id, timeout=3)
    await client.remove_container(container_id)
    await client.stop_pod_sandbox(sandbox_id)
    await client.remove_pod_sandbox(sandbox_id)

    assert [method for method, _ in runtime.calls] == [
        "RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer",
        "StopPodSandbox", "RemovePodSandbox",
    ]
    run, create, _, stop, *_ = (request for _, request in runtime.calls)
    assert run.config.metadata.name == "web" and run.runtime_handler == "runc"
    assert create.pod_sandbox_id == sandbox_id and create.sandbox_config == sandbox_config
    assert create.config.metadata.name == "nginx"
    assert stop.container_id == container_id and stop.timeout == 3


async def test_statuses_and_lists_return_the_runtimes_view(client: RuntimeClient) -> None:
    sandbox_config = pod_config("web")
    sandbox_id = await client.run_pod_sandbox(sandbox_config)
    container_id = await client.create_container(sandbox_id, container_config("nginx"), sandbox_config)
    await client.start_container(container_id)

    sandbox = await client.pod_sandbox_status(sandbox_id, verbose=True)
    assert sandbox.status.network.ip == "10.88.0.2" and sandbox.info["info"] == '{"pid": 4242}'
    assert (await client.container_status(container_id)).status.state == cri.CONTAINER_RUNNING
    assert [p.id for p in await client.list_pod_sandbox()] == [sandbox_id]
    running = cri.ContainerFilter(state=cri.ContainerStateValue(state=cri.CONTAINER_RUNNING))
    assert [c.id for c in await client.list_containers(running)] == [container_id]
    exited = cri.ContainerFilter(state=cri.ContainerStateValue(state=cri.CONTAINER_EXITED))
    assert await client.list_containers(exited) == []


async def test_exec_sync_returns_output_and_exit_code(client: RuntimeClient, runtime: TinyRuntime) -> None:
    sandbox_config = pod_config("web")
    sandbox_id = await client.run_pod_sandbox(sandbox_config)
    container_id = await client.create_container(sandbox_id, container_config("c"), sandbox_config)

    ran = await client.exec_sync(container_id, ["echo", "hi"], timeout=5)
    failed = await client.exec_sync(container_id, ["exit", "3"], timeout=0)

    assert (ran.stdout, ran.stderr, ran.exit_code) == (b"echo hi\n", b"done\n", 0)
    assert failed.exit_code == 3
    assert runtime.calls[-1][1].timeout == 0


async def test_version_and_status(client: RuntimeClient, runtime: TinyRuntime) -> None:
    version = await client.version()
    status = await client.status(verbose=True)

    assert (version.runtime_name, version.runtime_api_version) == ("tiny", "v1")
    assert runtime.calls[0][1].version == "v1"
    conditions = [(c.type, c.status) for c in status.status.conditions]
    assert conditions == [("RuntimeReady", True), ("NetworkReady", True)]
    assert "config" in status.info


async def test_image_status_is_none_when_the_image_is_absent(
    client: RuntimeClient, runtime: TinyRuntime
) -> None:
    runtime.add_image("busybox:1.36", "sha256:" + "b" * 64, 2_220_000)

    present = await client.image_status("busybox:1.36")
    absent = await client.image_status("nginx:1.27")

    assert present is not None and present.id == "sha256:" + "b" * 64
    assert absent is None
    expected = cri.ImageStatusRequest(image=cri.ImageSpec(image="nginx:1.27"))
    assert runtime.calls[-1] == ("ImageStatus", expected)


async def test_pull_list_and_remove_images(client: RuntimeClient) -> None:
    image_ref = await client.pull_image("registry.k8s.io/pause:3.9", pod_config("web"))
    assert image_ref.startswith("sha256:")
    assert [list(image.repo_tags) for image in await client.list_images()] == [["registry.k8s.io/pause:3.9"]]

    await client.remove_image("registry.k8s.io/pause:3.9")
    assert await client.list_images() == []


async def test_a_failed_pull_keeps_the_runtimes_message(client: RuntimeClient) -> None:
    with pytest.raises(CRIError) as caught:
        await client.pull_image("registry.invalid/app:1")
    assert caught.value.code is grpc.StatusCode.UNKNOWN
    assert str(caught.value) == "PullImage: failed to resolve reference 'registry.invalid/app:1'"


async def test_not_found_becomes_cri_not_found(client: RuntimeClient) -> None:
    with pytest.raises(CRINotFound) as caught:
        await client.container_status("nope")
    assert caught.value.code is grpc.StatusCode.NOT_FOUND
    assert caught.value.method == "ContainerStatus"
    assert str(caught.value) == "ContainerStatus: container not found"


async def test_calls_the_runtime_lacks_raise_cri_unimplemented(client: RuntimeClient) -> None:
    with pytest.raises(CRIUnimplemented):
        await client.image_fs_info()
    with pytest.raises(CRIUnimplemented):
        await client.list_container_stats()


async def test_an_unreachable_runtime_raises_cri_unavailable_naming_the_socket(tmp_path) -> None:
    socket = str(tmp_path / "nobody-listens.sock")
    async with RuntimeClient(socket, timeout=5) as client:
        with pytest.raises(CRIUnavailable) as caught:
            await client.version()
    assert socket in str(caught.value)
    assert str(caught.value).startswith("Version: container runtime at ")


@pytest.mark.parametrize(
    ("endpoint", "path"),
    [("unix:///run/x.sock", "/run/x.sock"), ("/run/x.sock", "/run/x.sock")],
    ids=["a unix URL", "a bare path"],
)
def test_endpoints_name_a_unix_socket(endpoint: str, path: str) -> None:
    assert socket_path(endpoint) == path


def test_a_tcp_endpoint_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported CRI endpoint"):
        socket_path("tcp://127.0.0.1:1234")

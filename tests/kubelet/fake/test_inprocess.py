"""The fake runtime called in-process answers as it does over its socket: same results, same errors."""

from __future__ import annotations

import grpc
import pytest

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRINotFound
from minikube_py.kubelet.cri.fake import FakeRuntime
from minikube_py.kubelet.cri.fake.inprocess import direct_stubs


def sandbox_config(name: str = "web") -> cri.PodSandboxConfig:
    return cri.PodSandboxConfig(metadata=cri.PodSandboxMetadata(name=name, uid=f"uid-{name}", namespace="default"),
                                labels={"io.kubernetes.pod.uid": f"uid-{name}"})


@pytest.fixture
def runtime() -> FakeRuntime:
    return FakeRuntime(pod_cidr="10.244.1.0/24", node_name="sim-1")


async def test_a_sandbox_run_in_process_is_listed_with_its_labels(runtime: FakeRuntime) -> None:
    client = RuntimeClient("/nowhere.sock", stubs=direct_stubs(runtime))
    sandbox_id = await client.run_pod_sandbox(sandbox_config())
    listed = await client.list_pod_sandbox()
    assert [s.id for s in listed] == [sandbox_id]
    assert listed[0].labels["io.kubernetes.pod.uid"] == "uid-web"
    await client.close()


async def test_a_failure_arrives_as_the_error_a_channel_raises(runtime: FakeRuntime) -> None:
    client = RuntimeClient("/nowhere.sock", stubs=direct_stubs(runtime))
    with pytest.raises(CRINotFound) as raised:
        await client.container_status("no-such-container")
    assert raised.value.code is grpc.StatusCode.NOT_FOUND
    assert "no-such-container" in raised.value.message


async def test_messages_cross_as_copies(runtime: FakeRuntime) -> None:
    client = RuntimeClient("/nowhere.sock", stubs=direct_stubs(runtime))
    config = sandbox_config()
    await client.run_pod_sandbox(config)
    config.labels["io.kubernetes.pod.uid"] = "changed-after-the-call"
    listed = await client.list_pod_sandbox()
    assert listed[0].labels["io.kubernetes.pod.uid"] == "uid-web"

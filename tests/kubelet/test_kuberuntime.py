"""The runtime manager (kuberuntime.py) against the fake runtime served over gRPC in this process: what one
`sync_pod` step does when the runtime holds something a previous kubelet left half done."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from minikube_py.kubelet import runtimestate
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRIUnavailable
from minikube_py.kubelet.cri.fake import FakeRuntime, serve
from minikube_py.kubelet.kuberuntime import RuntimeManager
from minikube_py.kubelet.volumes import VolumeManager

UID = "uid-web"


class StartLost(RuntimeClient):
    """A runtime client whose StartContainer calls never reach the runtime while `lost` is set: the containers
    stay Created, as when a kubelet is killed between CreateContainer and StartContainer."""

    lost = False

    async def start_container(self, container_id: str) -> None:
        if self.lost:
            raise CRIUnavailable("StartContainer", grpc.StatusCode.UNAVAILABLE, "the kubelet died")
        await super().start_container(container_id)


class Recorder:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def event(self, pod: dict[str, Any], type: str, reason: str, message: str, container: str | None = None) -> None:
        self.reasons.append(reason)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[StartLost]:
    server = await serve(os.path.join(tmp_path, "cri.sock"), FakeRuntime(node_name="sim-1"))
    client = StartLost(server.endpoint, timeout=10)
    yield client
    await client.close()
    await server.stop()


def manager(runtime: RuntimeClient, root: Path) -> RuntimeManager:
    async def no_object(kind: str, namespace: str, name: str) -> None:
        return None

    async def no_token(*args: Any) -> tuple[str, float]:
        raise AssertionError("the pod has no service account token volume")

    config = KubeletConfig(node_name="sim-1", root_dir=root)
    volumes = VolumeManager(config.pods_dir, no_object, no_token, lambda: {})
    return RuntimeManager(runtime, config, volumes, no_object, Recorder(), lambda: {"cpu": "2", "memory": "1Gi"})


def web_pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "uid": UID},
            "spec": {"containers": [{"name": "main", "image": "busybox", "imagePullPolicy": "IfNotPresent"}],
                     **spec}}


@pytest.mark.parametrize("pod, name", [
    (web_pod(), "main"),
    (web_pod(initContainers=[{"name": "setup", "image": "busybox", "imagePullPolicy": "IfNotPresent"}]), "setup"),
], ids=["app container", "init container"])
async def test_a_container_created_but_never_started_is_replaced_not_left_behind(
        runtime: StartLost, tmp_path: Path, pod: dict[str, Any], name: str) -> None:
    kubelet = manager(runtime, tmp_path / "kubelet")
    runtime.lost = True
    result = await kubelet.sync_pod(pod, await runtimestate.pod_state(runtime, UID))
    assert result.waiting[name][0] == "RunContainerError"
    left = (await runtimestate.pod_state(runtime, UID)).containers
    assert [(c.name, c.state) for c in left] == [(name, cri.CONTAINER_CREATED)]

    runtime.lost = False  # the next kubelet, or the next sync
    await kubelet.sync_pod(pod, await runtimestate.pod_state(runtime, UID))
    containers = (await runtimestate.pod_state(runtime, UID)).containers
    assert [(c.name, c.state, c.restart_count) for c in containers] == [(name, cri.CONTAINER_RUNNING, 1)]
    assert containers[0].id != left[0].id

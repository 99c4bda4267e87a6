"""Which pod updates from the API make the kubelet sync a pod: kube's UPDATE (spec, labels, annotations,
deletion changed: the pod worker syncs) vs RECONCILE (only the status changed: the newest pod is recorded,
and only a status someone else wrote is synced). A kubelet over the fake runtime called in-process, with its
pod workers recorded."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.fake import FakeRuntime
from minikube_py.kubelet.cri.fake.inprocess import direct_stubs
from minikube_py.kubelet.kubelet import Kubelet
from tests.kcm.fakes import FakeRecorder
from tests.kubelet.test_backoff import PodClient

UID = "uid-web"
POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web", "namespace": "default", "uid": UID, "labels": {"app": "web"}},
       "spec": {"nodeName": "sim-1", "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "main", "image": "busybox", "imagePullPolicy": "IfNotPresent"}]},
       "status": {"phase": "Pending"}}


@dataclass
class Node:
    kubelet: Kubelet
    client: PodClient
    runtime: RuntimeClient
    synced: list[str]  # uids the kubelet handed to its pod workers, in order

    def running_pod(self) -> dict[str, Any]:
        """The pod as the API holds it after the kubelet reported it Running."""
        return copy.deepcopy(self.client.pod)


@pytest.fixture
async def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Node]:
    """POD bound to a kubelet, synced once (Running, its status written); later pod worker updates are only
    recorded."""
    runtime = RuntimeClient("/nowhere.sock", stubs=direct_stubs(FakeRuntime(node_name="sim-1")))
    client = PodClient(POD)
    kubelet = Kubelet(KubeletConfig(node_name="sim-1", root_dir=tmp_path / "kubelet"), client,  # type: ignore[arg-type]
                      runtime, FakeRecorder())  # type: ignore[arg-type]
    synced: list[str] = []
    monkeypatch.setattr(kubelet.workers, "update", synced.append)
    writer = asyncio.create_task(kubelet.status.run())
    try:
        kubelet._pod_changed(copy.deepcopy(POD))
        await kubelet.sync_pod(UID)
        assert await kubelet.status.flush(UID, 5)
        assert client.pod["status"]["phase"] == "Running"
        synced.clear()
        yield Node(kubelet, client, runtime, synced)
    finally:
        writer.cancel()
        await kubelet.objects.stop()
        await runtime.close()


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    *parents, last = path.split(".")

    def change(pod: dict[str, Any]) -> None:
        for key in parents:
            pod = pod.setdefault(key, {})
        pod[last] = value
    return change


NOT_READY = [{"type": "Ready", "status": "False", "reason": "NodeLost"}]

CASES = [
    ("the same pod again (an informer resync) is not synced", lambda pod: None, False),
    ("a status someone else wrote is synced, to write the kubelet's back", _set("status.conditions", NOT_READY),
     True),
    ("a terminal phase someone else wrote is synced", _set("status.phase", "Failed"), True),
    ("a new resourceVersion alone is not synced", _set("metadata.resourceVersion", "99"), False),
    ("absent and empty annotations are the same", _set("metadata.annotations", {}), False),
    ("a changed label is synced", _set("metadata.labels", {"app": "api"}), True),
    ("a new annotation is synced", _set("metadata.annotations", {"note": "x"}), True),
    ("a changed spec is synced", _set("spec.activeDeadlineSeconds", 30), True),
    ("a deletion is synced", _set("metadata.deletionTimestamp", "2025-01-01T00:00:00Z"), True),
    ("a changed deletion grace period is synced", _set("metadata.deletionGracePeriodSeconds", 0), True),
]


@pytest.mark.parametrize(("case", "change", "synced"), CASES, ids=[case for case, _, _ in CASES])
async def test_an_update_syncs_the_pod_only_when_more_than_its_status_changed(
        node: Node, case: str, change: Callable[[dict[str, Any]], None], synced: bool) -> None:
    old = node.running_pod()
    new = node.running_pod()
    change(new)
    node.kubelet._pod_updated(old, new)
    assert node.synced == ([UID] if synced else []), case
    assert node.kubelet.bound_pods[UID] is new  # either way the newest pod is what later syncs start from


async def test_the_echo_of_its_own_status_patch_is_not_synced(node: Node) -> None:
    node.kubelet._pod_updated(copy.deepcopy(POD), node.running_pod())  # Pending -> Running, as the watch saw it
    assert node.synced == []
    assert node.kubelet.bound_pods[UID]["status"]["phase"] == "Running"


async def test_an_update_of_a_pod_it_does_not_hold_is_synced(node: Node) -> None:
    node.kubelet.bound_pods.clear()
    node.kubelet._pod_updated(node.running_pod(), node.running_pod())
    assert node.synced == [UID]


async def test_a_terminal_phase_someone_else_wrote_stops_the_containers(node: Node) -> None:
    """The update wakes the pod worker; its sync honours the terminal phase, as kube's does."""
    failed = node.running_pod()
    failed["status"]["phase"] = "Failed"
    node.kubelet._pod_updated(node.running_pod(), failed)
    assert node.synced == [UID] and await running(node)
    await node.kubelet.sync_pod(UID)
    assert not await running(node)


async def running(node: Node) -> list[str]:
    return [c.id for c in await node.runtime.list_containers() if c.state == cri.CONTAINER_RUNNING]

"""The stats Summary: per-pod and per-node figures from CRI container stats, running containers only."""

from __future__ import annotations

from typing import Any

from minikube_py.kubelet import runtimestate
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.stats import StatsProvider


class Runtime:
    """The two RuntimeClient calls the StatsProvider makes, over a fixed set of containers."""

    def __init__(self, containers: list[tuple[str, str, int, int]]) -> None:  # (id, name, state, memory)
        self.containers = containers

    async def list_containers(self, filter: cri.ContainerFilter | None = None) -> list[cri.Container]:
        wanted = filter.state.state if filter is not None and filter.HasField("state") else None
        return [cri.Container(id=cid, state=state) for cid, _, state, _ in self.containers
                if wanted is None or state == wanted]

    async def list_container_stats(self, filter: Any = None) -> list[cri.ContainerStats]:
        return [cri.ContainerStats(
            attributes=cri.ContainerAttributes(id=cid, labels={runtimestate.POD_UID_LABEL: "u1",
                                                               runtimestate.CONTAINER_NAME_LABEL: name}),
            cpu=cri.CpuUsage(timestamp=1, usage_core_nano_seconds=cri.UInt64Value(value=1)),
            memory=cri.MemoryUsage(working_set_bytes=cri.UInt64Value(value=memory)))
            for cid, name, _, memory in self.containers]


POD = {"metadata": {"name": "web", "namespace": "default", "uid": "u1"}, "status": {}}


async def test_an_exited_instance_of_a_restarted_container_is_not_counted() -> None:
    runtime = Runtime([("old", "app", cri.CONTAINER_EXITED, 100), ("new", "app", cri.CONTAINER_RUNNING, 40),
                       ("side", "sidecar", cri.CONTAINER_RUNNING, 2)])
    summary = await StatsProvider(runtime, "n1", 1000).summary({"u1": POD})  # type: ignore[arg-type]
    pod = summary["pods"][0]
    assert [(c["name"], c["memory"]["workingSetBytes"]) for c in pod["containers"]] == [("app", 40), ("sidecar", 2)]
    assert pod["memory"]["workingSetBytes"] == 42
    assert summary["node"]["memory"] == {**summary["node"]["memory"], "workingSetBytes": 42, "availableBytes": 958}


async def test_a_finished_pod_has_no_figures() -> None:
    runtime = Runtime([("done", "app", cri.CONTAINER_EXITED, 100)])
    summary = await StatsProvider(runtime, "n1", 1000).summary({"u1": POD})  # type: ignore[arg-type]
    assert summary["pods"] == []

"""The kubelet's stats Summary (`/stats/summary`, kube's `stats/v1alpha1` Summary), from the runtime's
container stats over CRI. `kubectl top` reads it through metrics.k8s.io.

    summary = await StatsProvider(runtime, node_name, memory_bytes).summary(bound_pods)

CPU use is a rate: the runtime reports cumulative core-nanoseconds per container, and `usageNanoCores` is
the difference between two samples divided by the time between them (the previous sample is kept per
container, as cAdvisor does). Only running containers count: the runtime also reports the exited ones (a
restarted container's previous instance, a finished pod's), which would list a name twice. The node's figures are the sum of its pods' (several nodes share this host,
so the host's own totals would say nothing about one node).
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.kubelet import runtimestate
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient


class StatsProvider:
    def __init__(self, runtime: RuntimeClient, node_name: str, memory_bytes: int) -> None:
        self._runtime = runtime
        self._node_name = node_name
        self._memory_bytes = memory_bytes
        self._previous: dict[str, tuple[int, int]] = {}  # container id -> (timestamp ns, core-ns used)

    async def summary(self, bound_pods: dict[str, dict[str, Any]]) -> dict[str, Any]:
        now = time_string()
        pods: dict[str, dict[str, Any]] = {}
        seen: set[str] = set()
        running_filter = cri.ContainerFilter(state=cri.ContainerStateValue(state=cri.CONTAINER_RUNNING))
        running = {container.id for container in await self._runtime.list_containers(running_filter)}
        for stats in await self._runtime.list_container_stats():
            if stats.attributes.id not in running:
                continue
            labels = stats.attributes.labels
            uid = labels.get(runtimestate.POD_UID_LABEL, "")
            pod = bound_pods.get(uid)
            if pod is None:
                continue
            seen.add(stats.attributes.id)
            entry = pods.setdefault(uid, _pod_entry(pod, now))
            entry["containers"].append({"name": labels.get(runtimestate.CONTAINER_NAME_LABEL, ""),
                                        "startTime": now, "cpu": self._cpu(stats, now),
                                        "memory": _memory(stats.memory, now)})
        self._previous = {key: value for key, value in self._previous.items() if key in seen}
        for entry in pods.values():
            entry["cpu"] = _total(entry["containers"], "cpu", ("usageNanoCores", "usageCoreNanoSeconds"), now)
            entry["memory"] = _total(entry["containers"], "memory", ("workingSetBytes", "usageBytes", "rssBytes"),
                                     now)
        everything = list(pods.values())
        node_cpu = _total(everything, "cpu", ("usageNanoCores", "usageCoreNanoSeconds"), now)
        node_memory = _total(everything, "memory", ("workingSetBytes", "usageBytes", "rssBytes"), now)
        node_memory["availableBytes"] = max(0, self._memory_bytes - node_memory["workingSetBytes"])
        return {"node": {"nodeName": self._node_name, "startTime": now, "cpu": node_cpu, "memory": node_memory},
                "pods": everything}

    def _cpu(self, stats: cri.ContainerStats, now: str) -> dict[str, Any]:
        used = stats.cpu.usage_core_nano_seconds.value
        stamp = stats.cpu.timestamp
        previous = self._previous.get(stats.attributes.id)
        self._previous[stats.attributes.id] = (stamp, used)
        rate = stats.cpu.usage_nano_cores.value
        if not rate and previous is not None and stamp > previous[0]:
            rate = max(0, (used - previous[1]) * 10**9 // (stamp - previous[0]))
        return {"time": now, "usageNanoCores": rate, "usageCoreNanoSeconds": used}


def _pod_entry(pod: dict[str, Any], now: str) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"podRef": {"name": meta["name"], "namespace": meta.get("namespace", "default"), "uid": meta["uid"]},
            "startTime": (pod.get("status") or {}).get("startTime", now), "containers": []}


def _memory(memory: cri.MemoryUsage, now: str) -> dict[str, Any]:
    return {"time": now, "workingSetBytes": memory.working_set_bytes.value, "usageBytes": memory.usage_bytes.value,
            "rssBytes": memory.rss_bytes.value}


def _total(entries: list[dict[str, Any]], what: str, fields: tuple[str, ...], now: str) -> dict[str, Any]:
    return {"time": now} | {field: sum(entry[what][field] for entry in entries) for field in fields}

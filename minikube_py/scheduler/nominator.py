"""Which pending pods have been promised which node (kube's nominator).

When preemption (PostFilter) evicts pods to make room for a pod, the pod is *nominated* to that node: its
`status.nominatedNodeName` is set and, until it is bound, the space it will take counts against the node for
pods of equal or lower priority. The framework's `run_filter_plugins_with_nominated_pods` asks
`nominated_pods_for_node` which pods to add to a node before running Filter, so a lower-priority pod cannot
take the room the victims freed.

Nominations come from two places: the PostFilter result (an explicit node name, which overrides whatever the
pod says) and the pod itself (`status.nominatedNodeName`, used whenever the queue sees the pod and no
explicit name is given). An explicit "" clears the nomination.

Usage rules: owned by the scheduling queue (`SchedulingQueue.nominator`), which adds, updates and deletes
nominations as pods come and go; pods are keyed by UID (namespace/name when a pod has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from minikube_py.scheduler.framework.types import PodInfo, pod_identity

Obj = dict[str, Any]


def status_nominated_node_name(pod: Obj) -> str:
    return (pod.get("status") or {}).get("nominatedNodeName") or ""


class Nominator:
    def __init__(self) -> None:
        self._pods_by_node: dict[str, list[PodInfo]] = {}
        self._node_by_pod: dict[str, str] = {}

    def add_nominated_pod(self, pod_info: PodInfo, nominated_node_name: str | None = None) -> None:
        """Nominate the pod to `nominated_node_name`, or to its `status.nominatedNodeName` when None."""
        self.delete_nominated_pod_if_exists(pod_info.pod)
        node_name = nominated_node_name
        if node_name is None:
            node_name = status_nominated_node_name(pod_info.pod)
        if not node_name:
            return
        self._node_by_pod[pod_identity(pod_info.pod)] = node_name
        self._pods_by_node.setdefault(node_name, []).append(pod_info)

    def delete_nominated_pod_if_exists(self, pod: Obj) -> None:
        identity = pod_identity(pod)
        node_name = self._node_by_pod.pop(identity, None)
        if node_name is None:
            return
        remaining = [info for info in self._pods_by_node[node_name] if pod_identity(info.pod) != identity]
        if remaining:
            self._pods_by_node[node_name] = remaining
        else:
            del self._pods_by_node[node_name]

    def update_nominated_pod(self, old_pod: Obj, new_pod_info: PodInfo) -> None:
        """Replace the pod's version; a nomination made in memory survives updates that don't mention one.

        (The pod may be updated before the apiserver has recorded the nominatedNodeName preemption set.)
        """
        keep: str | None = None
        if not status_nominated_node_name(old_pod) and not status_nominated_node_name(new_pod_info.pod):
            keep = self._node_by_pod.get(pod_identity(old_pod))
        self.delete_nominated_pod_if_exists(old_pod)
        self.add_nominated_pod(new_pod_info, keep)

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated to any node (a cycle's Filter looks for them only then)."""
        return bool(self._pods_by_node)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        """The pods nominated to `node_name` (read-only: called for every node of every cycle, so no copy)."""
        return self._pods_by_node.get(node_name, ())

    def nominated_node_for(self, pod: Obj) -> str | None:
        return self._node_by_pod.get(pod_identity(pod))

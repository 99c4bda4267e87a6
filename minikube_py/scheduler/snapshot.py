"""The nodes as one scheduling cycle sees them: a point-in-time copy of the cache (kube's cache `Snapshot`).

At the start of every cycle the scheduler calls `Cache.update_snapshot(snapshot)`, which re-copies only the
NodeInfos that changed since the previous cycle; plugins then read the snapshot through the `NodeInfoLister`
protocol (`handle.snapshot`) while informer events keep changing the cache underneath. The snapshot holds:

* `node_info_map`: node name → NodeInfo, for every node that still exists;
* the node list in the node tree's zone-interleaved order (`list()`), which the cycle walks from a rotating
  start index;
* the nodes that carry pods with (anti-)affinity, so InterPodAffinity looks at those instead of every node.

Usage rules: plugins never modify what they read here (preemption clones a NodeInfo first). Only the cache
writes a snapshot it did not build with `Snapshot.of`; `Snapshot.of(pods, nodes)` builds a self-contained
one for plugin tests.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from minikube_py.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo

log = logging.getLogger("mkpy.scheduler.snapshot")

Obj = dict[str, Any]


class Snapshot:
    """A NodeInfoLister; `generation` is the cache generation it was last brought up to."""

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.generation = 0
        self._node_info_list: list[NodeInfo] = []
        self._with_affinity: list[NodeInfo] = []
        self._with_required_anti_affinity: list[NodeInfo] = []

    @classmethod
    def of(cls, pods: Iterable[Obj], nodes: Iterable[Obj]) -> Snapshot:
        """A snapshot of `nodes` (in that order) with the `pods` bound to them; other pods are left out."""
        snapshot = cls()
        node_list = list(nodes)
        for node in node_list:
            info = NodeInfo(node)
            snapshot.node_info_map[info.name] = info
        for pod in pods:
            info = snapshot.node_info_map.get((pod.get("spec") or {}).get("nodeName", ""))
            if info is not None:
                info.add_pod(PodInfo.of(pod))
        images = image_summaries(node_list)
        for node in node_list:
            info = snapshot.node_info_map[(node.get("metadata") or {}).get("name", "")]
            info.image_states = {name: images[name] for name in node_image_sizes(node)}
        snapshot.rebuild_lists(list(snapshot.node_info_map))
        return snapshot

    # --- NodeInfoLister ---

    def list(self) -> Sequence[NodeInfo]:
        return self._node_info_list

    def get(self, node_name: str) -> NodeInfo | None:
        return self.node_info_map.get(node_name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return self._with_affinity

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return self._with_required_anti_affinity

    @property
    def num_nodes(self) -> int:
        return len(self._node_info_list)

    # --- maintained by the cache ---

    def rebuild_lists(self, node_order: Sequence[str] | None = None) -> None:
        """Re-derive the affinity lists; given the node tree's order, rebuild the node list from it too."""
        if node_order is not None:
            self._node_info_list = []
            for name in node_order:
                info = self.node_info_map.get(name)
                if info is None:
                    log.error("node %s is in the node tree but not in the snapshot", name)
                else:
                    self._node_info_list.append(info)
        self._with_affinity = [info for info in self._node_info_list if info.pods_with_affinity]
        self._with_required_anti_affinity = [info for info in self._node_info_list
                                             if info.pods_with_required_anti_affinity]

    def __repr__(self) -> str:
        return f"Snapshot(nodes={self.num_nodes}, generation={self.generation})"


def node_image_sizes(node: Mapping[str, Any]) -> dict[str, int]:
    """Image name → size in bytes from `status.images`; entries that are not well-formed are skipped."""
    sizes: dict[str, int] = {}
    for image in (node.get("status") or {}).get("images") or []:
        if not isinstance(image, dict):
            continue
        size, names = image.get("sizeBytes") or 0, image.get("names") or []
        if not isinstance(size, int) or not isinstance(names, list):
            log.warning("node %s lists a malformed image %r; ignored",
                        (node.get("metadata") or {}).get("name", ""), image)
            continue
        for name in names:
            if isinstance(name, str):
                sizes.setdefault(name, size)
    return sizes


def image_summaries(nodes: Iterable[Mapping[str, Any]]) -> dict[str, ImageStateSummary]:
    """For every image on any of `nodes`: its size and on how many of them it is."""
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    for node in nodes:
        for name, size in node_image_sizes(node).items():
            sizes.setdefault(name, size)
            counts[name] = counts.get(name, 0) + 1
    return {name: ImageStateSummary(sizes[name], counts[name]) for name in sizes}

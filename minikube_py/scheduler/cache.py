"""The scheduler's picture of the cluster: every node with the pods placed on it (kube's scheduler cache).

    informer events ──► add_node / update_node / remove_node, add_pod / update_pod / remove_pod (bound pods)
    scheduling cycle ─► update_snapshot ─► (filter, score) ─► assume_pod ─► binding ─► finish_binding
                                                                  └── bind failed ──► forget_pod
    the pod's Add event from the informer ─► add_pod confirms the assumed pod

Assumed pods are what lets the next cycle start before the previous pod is bound: the cache counts a pod on
its chosen node from the moment it is assumed; the informer's Add (the pod now has `spec.nodeName`) confirms
it, on the node the informer reports if that differs; a failed bind forgets it. With `assumed_pod_ttl` set,
`cleanup_assumed_pods()` also drops pods whose binding finished but whose Add never came (kube's scheduler
runs with no expiry, the default here).

A node deleted while the cache still holds pods on it stays as a NodeInfo without a node (so later pod
deletes find it) until its last pod goes; such NodeInfos never appear in snapshots.

Incremental snapshots: every change stamps the changed NodeInfo with the next value of a cache-wide
generation counter and moves it to the end of an ordered dict. `update_snapshot` walks that dict from the
end and stops at the first NodeInfo not newer than the snapshot, so a cycle costs O(nodes changed since the
last cycle), not O(nodes). Changed NodeInfos are copied into the snapshot's existing objects, so the
snapshot's node list only has to be rebuilt (from the node tree's zone order) when nodes come or go.

Image states: for each image name, its size and the set of nodes that have it (from `status.images`); each
NodeInfo copied into a snapshot gets an `ImageStateSummary` (size, node count) per image on its node. As in
kube, an unchanged NodeInfo keeps the count it had when it was last copied.

Usage rules: the cache keeps the dicts it is given and never modifies them. Informer-driven methods log and
carry on when the events contradict the cache; `assume_pod`/`forget_pod` misuse raises `CacheError`. Pods
are keyed by UID (namespace/name when a pod has none, as in small tests).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from minikube_py.client.clock import Clock, RealClock
from minikube_py.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo, pod_identity
from minikube_py.scheduler.nodetree import NodeTree
from minikube_py.scheduler.snapshot import Snapshot, node_image_sizes

log = logging.getLogger("mkpy.scheduler.cache")

Obj = dict[str, Any]


class CacheError(Exception):
    """The scheduler asked for something the cache's state does not allow (e.g. assuming a known pod)."""


@dataclass
class _PodState:
    pod_info: PodInfo
    binding_finished: bool = False
    deadline: float | None = None  # when an assumed pod whose binding finished expires


@dataclass
class _ImageState:
    size: int
    nodes: set[str]


def _node_name(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _describe(pod: Obj) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


class Cache:
    def __init__(self, clock: Clock | None = None, assumed_pod_ttl: float = 0.0) -> None:
        self.clock = clock or RealClock()
        self.assumed_pod_ttl = assumed_pod_ttl  # 0: assumed pods never expire
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()  # least recently changed first
        self._node_tree = NodeTree()
        self._pod_states: dict[str, _PodState] = {}
        self._assumed_pods: set[str] = set()
        self._image_states: dict[str, _ImageState] = {}
        self._generation = 0

    # --- nodes ---

    def add_node(self, node: Obj) -> None:
        self.update_node(None, node)

    def update_node(self, old: Obj | None, new: Obj) -> None:
        name = (new.get("metadata") or {}).get("name", "")
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo()
            self._node_tree.add_node(new)
        elif info.node is None:  # a deleted node with pods left on it comes back
            self._node_tree.add_node(new)
        else:
            self._remove_node_image_states(info.node)
            self._node_tree.update_node(info.node, new)
        info.set_node(new)
        if info.node_error:
            log.warning("%s; counted as zero", info.node_error)
        info.image_states = self._add_node_image_states(new)
        self._touch(name)

    def remove_node(self, node: Obj) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        info = self._nodes.get(name)
        if info is None or info.node is None:
            log.warning("node %s is not in the scheduler cache; nothing to remove", name)
            return
        self._node_tree.remove_node(info.node)
        self._remove_node_image_states(info.node)
        info.node = None
        # Pod deletions come through another watch and may still be on their way: keep the pods until then.
        if info.pods:
            self._touch(name)
        else:
            del self._nodes[name]

    def node_count(self) -> int:
        """NodeInfos held, including deleted nodes that still have pods."""
        return len(self._nodes)

    # --- pods ---

    def assume_pod(self, pod: PodInfo | Obj) -> None:
        """Count a pod on `spec.nodeName` before it is bound."""
        pod_info = pod if isinstance(pod, PodInfo) else PodInfo.of(pod)
        key = pod_identity(pod_info.pod)
        if not pod_info.node_name:
            raise CacheError(f"pod {pod_info.key} has no spec.nodeName, so it cannot be assumed")
        if key in self._pod_states:
            raise CacheError(f"pod {pod_info.key} is in the cache, so can't be assumed")
        self._add_pod(pod_info, assumed=True)

    def finish_binding(self, pod: Obj) -> None:
        """The bind call returned: from now on the assumed pod may expire (when a TTL is set)."""
        state = self._pod_states.get(pod_identity(pod))
        if state is not None and pod_identity(pod) in self._assumed_pods:
            state.binding_finished = True
            state.deadline = self.clock.now() + self.assumed_pod_ttl if self.assumed_pod_ttl else None

    def forget_pod(self, pod: Obj) -> None:
        """Undo `assume_pod` (the binding failed). A pod no longer in the cache is ignored."""
        key = pod_identity(pod)
        state = self._pod_states.get(key)
        if state is None:
            return
        if state.pod_info.node_name != _node_name(pod):
            raise CacheError(f"pod {_describe(pod)} was assumed on {_node_name(pod)} but assigned to "
                             f"{state.pod_info.node_name}")
        if key not in self._assumed_pods:
            raise CacheError(f"pod {_describe(pod)} is not assumed, so it cannot be removed or forgotten")
        self._remove_pod(key)

    def add_pod(self, pod: Obj) -> None:
        """A bound pod appeared (informer Add); confirms the pod if it was assumed."""
        key = pod_identity(pod)
        state = self._pod_states.get(key)
        if state is None:
            self._add_pod(PodInfo.of(pod), assumed=False)
        elif key in self._assumed_pods:
            if state.pod_info.node_name != _node_name(pod):
                log.info("pod %s was added to node %s, not the node %s it was assumed on", _describe(pod),
                         _node_name(pod), state.pod_info.node_name)
            self._remove_pod(key)
            self._add_pod(PodInfo.of(pod), assumed=False)
        else:
            log.warning("pod %s was already in added state", _describe(pod))

    def update_pod(self, old: Obj, new: Obj) -> None:
        key = pod_identity(old)
        state = self._pod_states.get(key)
        if state is None:
            log.warning("pod %s is not added to scheduler cache, so cannot be updated", _describe(old))
            return
        if key in self._assumed_pods:
            log.warning("assumed pod %s should not be updated", _describe(old))
            return
        if state.pod_info.node_name != _node_name(new):
            log.error("pod %s was updated on node %s but the cache has it on %s; following the update",
                      _describe(new), _node_name(new), state.pod_info.node_name)
        self._remove_pod(key)
        self._add_pod(PodInfo.of(new), assumed=False)

    def remove_pod(self, pod: Obj) -> None:
        key = pod_identity(pod)
        state = self._pod_states.get(key)
        if state is None:
            log.warning("pod %s is not found in scheduler cache, so cannot be removed from it",
                        _describe(pod))
            return
        if _node_name(pod) and state.pod_info.node_name != _node_name(pod):
            log.error("pod %s was removed from node %s but the cache has it on %s", _describe(pod),
                      _node_name(pod), state.pod_info.node_name)
        self._remove_pod(key)

    def is_assumed_pod(self, pod: Obj) -> bool:
        return pod_identity(pod) in self._assumed_pods

    def get_pod(self, pod: Obj) -> Obj | None:
        """The cached version of the pod (possibly on a node deleted since), None when not cached."""
        state = self._pod_states.get(pod_identity(pod))
        return state.pod_info.pod if state is not None else None

    def cleanup_assumed_pods(self) -> list[Obj]:
        """Forget assumed pods whose binding finished more than `assumed_pod_ttl` ago; returns them."""
        now = self.clock.now()
        expired = [key for key in self._assumed_pods if (state := self._pod_states[key]).binding_finished
                   and state.deadline is not None and state.deadline <= now]
        pods = [self._pod_states[key].pod_info.pod for key in expired]
        for key, pod in zip(expired, pods, strict=True):
            log.warning("assumed pod %s expired: its Add event never arrived", _describe(pod))
            self._remove_pod(key)
        return pods

    def _add_pod(self, pod_info: PodInfo, assumed: bool) -> None:
        node_name = pod_info.node_name
        info = self._nodes.get(node_name)
        if info is None:  # the pod's node has not arrived yet
            info = self._nodes[node_name] = NodeInfo()
            info.name = node_name
        info.add_pod(pod_info)
        self._touch(node_name)
        key = pod_identity(pod_info.pod)
        self._pod_states[key] = _PodState(pod_info)
        if assumed:
            self._assumed_pods.add(key)

    def _remove_pod(self, key: str) -> None:
        state = self._pod_states.pop(key)
        self._assumed_pods.discard(key)
        node_name = state.pod_info.node_name
        info = self._nodes.get(node_name)
        if info is None or not info.remove_pod(state.pod_info.pod):
            log.error("pod %s was not on node %s in the cache", state.pod_info.key, node_name)
            return
        if info.node is None and not info.pods:
            del self._nodes[node_name]
        else:
            self._touch(node_name)

    def _touch(self, node_name: str) -> None:
        self._generation += 1
        self._nodes[node_name].generation = self._generation
        self._nodes.move_to_end(node_name)

    # --- images ---

    def _add_node_image_states(self, node: Obj) -> dict[str, ImageStateSummary]:
        name = (node.get("metadata") or {}).get("name", "")
        summaries = {}
        for image, size in node_image_sizes(node).items():
            state = self._image_states.setdefault(image, _ImageState(size, set()))
            state.nodes.add(name)
            summaries[image] = ImageStateSummary(state.size, len(state.nodes))
        return summaries

    def _remove_node_image_states(self, node: Obj) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        for image in node_image_sizes(node):
            state = self._image_states.get(image)
            if state is not None:
                state.nodes.discard(name)
                if not state.nodes:
                    del self._image_states[image]

    def image_state(self, image: str) -> ImageStateSummary | None:
        state = self._image_states.get(image)
        return ImageStateSummary(state.size, len(state.nodes)) if state is not None else None

    # --- snapshots ---

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring `snapshot` up to date, copying only the NodeInfos changed since its generation."""
        update_all = affinity_changed = False
        for info in reversed(self._nodes.values()):
            if info.generation <= snapshot.generation:
                break
            if info.node is None:
                continue
            clone = self._snapshot_clone(info)
            existing = snapshot.node_info_map.get(info.name)
            if existing is None:
                snapshot.node_info_map[info.name] = clone
                update_all = True
                continue
            affinity_changed = affinity_changed or _affinity_lists_differ(existing, clone)
            for slot in NodeInfo.__slots__:  # keep the object: the snapshot's lists still point at it
                setattr(existing, slot, getattr(clone, slot))
        snapshot.generation = self._generation
        if len(snapshot.node_info_map) > self._node_tree.num_nodes:
            self._remove_deleted_nodes(snapshot)
            update_all = True
        if update_all:
            snapshot.rebuild_lists(self._node_tree.list())
        elif affinity_changed:
            snapshot.rebuild_lists()
        if snapshot.num_nodes != self._node_tree.num_nodes:
            log.error("snapshot state is not consistent: %d nodes listed, %d in the node tree; rebuilding",
                      snapshot.num_nodes, self._node_tree.num_nodes)
            snapshot.rebuild_lists(self._node_tree.list())

    def _snapshot_clone(self, info: NodeInfo) -> NodeInfo:
        clone = info.clone()
        clone.image_states = {image: ImageStateSummary(summary.size, len(state.nodes))
                              if (state := self._image_states.get(image)) else summary
                              for image, summary in info.image_states.items()}
        return clone

    def _remove_deleted_nodes(self, snapshot: Snapshot) -> None:
        for name in [name for name in snapshot.node_info_map
                     if (info := self._nodes.get(name)) is None or info.node is None]:
            del snapshot.node_info_map[name]


def _affinity_lists_differ(old: NodeInfo, new: NodeInfo) -> bool:
    return (bool(old.pods_with_affinity) != bool(new.pods_with_affinity)
            or bool(old.pods_with_required_anti_affinity) != bool(new.pods_with_required_anti_affinity))

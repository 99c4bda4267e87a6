"""The Node authorizer's graph, kept from the apiserver's watch caches of pods and persistent volumes.

kube keeps a graph of vertices (nodes, pods, secrets, configmaps, claims, volumes, service accounts) with
edges that all lead to a node: pod -> node, secret/configmap/pvc/serviceaccount -> pod, pv -> pvc and
secret -> pv. A node may read an object when a path leads from the object to it. The paths have a fixed
shape, so here the graph is kept as indexes:

* `_reach`: for each (vertex type, namespace, name) reached through a pod, how many pods of each node
  reach it (a pod reaches itself, its service account, secrets, configmaps and claims; see
  `auth.node.pod_references`). Only pods bound to a node count; a mirror pod reaches only itself, so a
  node cannot grant itself access by creating one;
* `_claims`: the claim each persistent volume is bound to (`spec.claimRef`), and `_volumes_of_secret`: the
  volumes whose kubelet-visible secrets name a secret, for the pv and pv -> secret paths.

Usage rules: `has_path` is called by the authorizer on each request of a node. It first brings the
indexes up to date when a watch cache has applied changes since the last look, re-reading only the
objects the cache's window of recent changes names (every object after a relist), so a newly bound pod's
secrets are readable as soon as the cache has the pod, and a status update costs one decode however many
pods there are; none when the cache has decoded that change already (the pods' cache does, to find the
kubelets watching it), since the graph takes the change's shared decoded object. It never blocks and
never touches etcd.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..api.validation.pod import MIRROR_POD_ANNOTATION
from ..auth.node import POD, PV, PVC, SECRET, pod_references
from ..store.interface import KeyValue

Vertex = tuple[str, str, str]  # (vertex type, namespace, name)

# Persistent volume sources whose secrets the kubelet reads: (source, reference field). A reference is
# {name, namespace}, the namespace defaulting to the bound claim's (kube's VisitPVSecretNames).
_PV_SECRET_REFS = (
    ("cephfs", "secretRef"), ("cinder", "secretRef"), ("flexVolume", "secretRef"), ("rbd", "secretRef"),
    ("scaleIO", "secretRef"), ("iscsi", "secretRef"), ("storageos", "secretRef"),
    ("csi", "nodePublishSecretRef"), ("csi", "nodeStageSecretRef"), ("csi", "nodeExpandSecretRef"),
)


class Decoder(Protocol):
    def decode(self, kv: KeyValue) -> dict[str, Any]: ...


class Change(Protocol):
    """One change in a watch cache's window (`cacher.CachedEvent`)."""

    kv: KeyValue | None

    @property
    def key(self) -> str: ...

    def object(self, store: Decoder, which: str) -> dict[str, Any] | None: ...


class ObjectCache(Protocol):
    """What the graph reads of one resource's watch cache (`cacher.Cacher`)."""

    objects: dict[str, KeyValue]
    applied_revision: int

    def changes_since(self, revision: int) -> Sequence[Change] | None: ...


@dataclass
class _Source:
    """One watched resource and what the graph last took from it."""

    cache: ObjectCache
    store: Decoder
    seen: dict[str, int] = field(default_factory=dict)  # storage key -> mod revision taken
    seen_state: tuple[int, int] = (0, -1)  # (id of the objects dict, applied revision)

    def changes(self) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
        """Keys gone and (key, object) changed since the last call; nothing when the cache did not move.

        Only the keys the cache's window says changed are looked at; every key when the window no longer
        reaches back to the last call, or the cache relisted (a relist replaces the dict)."""
        objects = self.cache.objects
        state = (id(objects), self.cache.applied_revision)
        if state == self.seen_state:
            return [], []
        window = self.cache.changes_since(self.seen_state[1]) if state[0] == self.seen_state[0] else None
        self.seen_state = state
        latest = {} if window is None else {change.key: change for change in window}  # each key's last change
        gone, changed = [], []
        for key in dict.fromkeys([*self.seen, *objects]) if window is None else latest:
            kv = objects.get(key)
            if kv is None:
                if self.seen.pop(key, None) is not None:
                    gone.append(key)
            elif self.seen.get(key) != kv.mod_revision:
                self.seen[key] = kv.mod_revision
                changed.append((key, self._decoded(kv, latest.get(key))))
        return gone, changed

    def _decoded(self, kv: KeyValue, change: Change | None) -> dict[str, Any]:
        """The object stored in `kv`: the one its change in the window decoded (shared, only read here), or
        decoded now."""
        if change is not None and change.kv is kv:
            decoded = change.object(self.store, "current")
            if decoded is not None:
                return decoded
        return self.store.decode(kv)


def pv_secrets(pv: dict[str, Any]) -> set[tuple[str, str]]:
    """(namespace, name) of the secrets the kubelet reads to mount this volume."""
    spec = pv.get("spec") or {}
    claim_namespace = str((spec.get("claimRef") or {}).get("namespace") or "")
    found = set()
    for source, ref_field in _PV_SECRET_REFS:
        ref = (spec.get(source) or {}).get(ref_field) or {}
        if ref.get("name"):
            found.add((str(ref.get("namespace") or claim_namespace), str(ref["name"])))
    azure = spec.get("azureFile") or {}
    if azure.get("secretName"):
        found.add((str(azure.get("secretNamespace") or claim_namespace), str(azure["secretName"])))
    return found


class NodeGraph:
    """`auth.node.NodeGraph` over the watch caches of pods and persistent volumes."""

    def __init__(self, pods: _Source, volumes: _Source) -> None:
        self._pods_source, self._volumes_source = pods, volumes
        self._reach: dict[Vertex, Counter[str]] = {}
        self._pods: dict[str, tuple[str, list[Vertex]]] = {}  # storage key -> (node, vertices reached)
        self._claims: dict[str, tuple[str, str]] = {}  # pv name -> (namespace, claim)
        self._volume_secrets: dict[str, set[tuple[str, str]]] = {}  # pv name -> its secrets
        self._volumes_of_secret: dict[tuple[str, str], set[str]] = {}
        self._volume_names: dict[str, str] = {}  # storage key -> pv name

    @classmethod
    def watching(cls, pods: tuple[ObjectCache, Decoder], volumes: tuple[ObjectCache, Decoder]) -> NodeGraph:
        """The graph of the pods and persistent volumes in these (cache, store) pairs."""
        return cls(_Source(*pods), _Source(*volumes))

    def has_path(self, node: str, vertex_type: str, namespace: str, name: str) -> bool:
        self.refresh()
        if node in self._reach.get((vertex_type, namespace, name), ()):
            return True
        if vertex_type == PV:
            return self._volume_reaches(node, name)
        if vertex_type == SECRET:
            return any(self._volume_reaches(node, pv) for pv in self._volumes_of_secret.get((namespace, name), ()))
        return False

    def _volume_reaches(self, node: str, pv: str) -> bool:
        claim = self._claims.get(pv)
        return claim is not None and node in self._reach.get((PVC, *claim), ())

    def refresh(self) -> None:
        """Take in what the watch caches changed since the last call."""
        gone, changed = self._pods_source.changes()
        for key in gone:
            self._forget_pod(key)
        for key, pod in changed:
            self._forget_pod(key)
            self._add_pod(key, pod)
        gone, changed = self._volumes_source.changes()
        for key in gone:
            self._forget_volume(key)
        for key, pv in changed:
            self._forget_volume(key)
            self._add_volume(key, pv)

    # pods -------------------------------------------------------------------------------------------

    def _add_pod(self, key: str, pod: dict[str, Any]) -> None:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node:  # not scheduled yet: gives its future node nothing
            return
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        vertices: list[Vertex] = [(POD, namespace, name)]
        if MIRROR_POD_ANNOTATION not in (meta.get("annotations") or {}):
            vertices += [(kind, namespace, ref) for kind, ref in sorted(pod_references(pod))]
        for vertex in vertices:
            self._reach.setdefault(vertex, Counter())[node] += 1
        self._pods[key] = (node, vertices)

    def _forget_pod(self, key: str) -> None:
        node, vertices = self._pods.pop(key, ("", []))
        for vertex in vertices:
            nodes = self._reach[vertex]
            nodes[node] -= 1
            if nodes[node] <= 0:
                del nodes[node]
            if not nodes:
                del self._reach[vertex]

    # persistent volumes ----------------------------------------------------------------------------

    def _add_volume(self, key: str, pv: dict[str, Any]) -> None:
        claim = (pv.get("spec") or {}).get("claimRef") or {}
        if not claim.get("name"):  # unbound: no claim leads to it
            return
        name = str((pv.get("metadata") or {}).get("name") or "")
        self._volume_names[key] = name
        self._claims[name] = (str(claim.get("namespace") or ""), str(claim["name"]))
        secrets = self._volume_secrets[name] = pv_secrets(pv)
        for secret in secrets:
            self._volumes_of_secret.setdefault(secret, set()).add(name)

    def _forget_volume(self, key: str) -> None:
        name = self._volume_names.pop(key, None)
        if name is None:
            return
        self._claims.pop(name, None)
        for secret in self._volume_secrets.pop(name, set()):
            volumes = self._volumes_of_secret[secret]
            volumes.discard(name)
            if not volumes:
                del self._volumes_of_secret[secret]


def node_graph(server: Any) -> NodeGraph:
    """The graph over `server`'s watch caches (an `app.APIServer` after start)."""
    def pair(resource: str) -> tuple[ObjectCache, Decoder]:
        gvr = ("", "v1", resource)
        return server.cachers[gvr], server.stores[gvr]
    return NodeGraph.watching(pair("pods"), pair("persistentvolumes"))


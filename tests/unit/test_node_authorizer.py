"""The Node authorizer: kube's decisions for kubelets, and the graph it reads from the watch caches."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest

from minikube_py.apiserver.cacher import CachedEvent
from minikube_py.apiserver.nodegraph import NodeGraph, pv_secrets
from minikube_py.auth.authn import UserInfo
from minikube_py.auth.authorizer import Attributes, Decision
from minikube_py.auth.node import NodeAuthorizer, node_identity, pod_references
from minikube_py.store.interface import KeyValue, WatchEvent

N1 = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
NO_RELATION = "no relationship found between node 'n1' and this object"


# builders -------------------------------------------------------------------------------------------

def pod(name: str, node: str = "n1", namespace: str = "ns", **spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **spec}}


def pv(name: str, claim: tuple[str, str] | None, **spec: Any) -> dict[str, Any]:
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def attrs(verb: str, resource: str, name: str = "", namespace: str = "ns", group: str = "",
          subresource: str = "", user: UserInfo = N1) -> Attributes:
    return Attributes(user=user, verb=verb, namespace=namespace, api_group=group, resource=resource,
                      subresource=subresource, name=name)


class FakeCache:
    """What the graph reads of a watch cache: its objects, revision and window of recent changes (the last
    `window` of them)."""

    def __init__(self, window: int = 100) -> None:
        self.objects: dict[str, KeyValue] = {}
        self.applied_revision = 0
        self.window = window
        self.changes: list[CachedEvent] = []

    def put(self, key: str, obj: dict[str, Any]) -> CachedEvent:
        self.applied_revision += 1
        kv = self.objects[key] = KeyValue(key, orjson.dumps(obj), 1, self.applied_revision)
        self.changes.append(CachedEvent(WatchEvent("PUT", self.applied_revision, key, kv)))
        return self.changes[-1]

    def delete(self, key: str) -> None:
        self.applied_revision += 1
        prev = self.objects.pop(key)
        self.changes.append(CachedEvent(WatchEvent("DELETE", self.applied_revision, key, None, prev)))

    def changes_since(self, revision: int) -> list[CachedEvent] | None:
        kept = self.changes[-self.window:]
        if len(self.changes) > len(kept) and revision < kept[0].revision - 1:
            return None
        return [change for change in kept if change.revision > revision]


class JSONStore:
    decodes = 0

    def decode(self, kv: KeyValue) -> dict[str, Any]:
        self.decodes += 1
        return orjson.loads(kv.value)  # type: ignore[no-any-return]


@pytest.fixture()
def caches() -> tuple[FakeCache, FakeCache, JSONStore]:
    return FakeCache(), FakeCache(), JSONStore()


def graph_of(caches: tuple[FakeCache, FakeCache, JSONStore]) -> NodeGraph:
    pods, volumes, store = caches
    return NodeGraph.watching((pods, store), (volumes, store))


class FakeGraph:
    def __init__(self, *related: tuple[str, str, str]) -> None:
        self.related = set(related)

    def has_path(self, node: str, vertex_type: str, namespace: str, name: str) -> bool:
        return node == "n1" and (vertex_type, namespace, name) in self.related


# identity -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("user, expected", [
    (N1, ("n1", True)),
    (UserInfo("system:node:n1", groups=("devs",)), ("", False)),
    (UserInfo("alice", groups=("system:nodes",)), ("", False)),
    (UserInfo("system:node:", groups=("system:nodes",)), ("", True)),
], ids=["a node", "the name without the group", "the group without the name", "a node without a name"])
def test_node_identity_needs_the_name_prefix_and_the_group(user: UserInfo, expected: tuple[str, bool]) -> None:
    assert node_identity(user) == expected


# decisions ------------------------------------------------------------------------------------------

AUTHORIZER = NodeAuthorizer(FakeGraph(("secret", "ns", "s1"), ("configmap", "ns", "c1"), ("pvc", "ns", "claim"),
                                      ("pv", "", "vol"), ("serviceaccount", "ns", "sa"), ("pod", "ns", "p1")))
ALLOW = (Decision.ALLOW, "")
LEASES, STORAGE = "coordination.k8s.io", "storage.k8s.io"

CASES = [
    ("someone else is not the node authorizer's business",
     attrs("get", "secrets", "s1", user=UserInfo("alice", groups=("system:authenticated",))), (Decision.NO_OPINION, "")),
    ("a node without a name is refused with kube's reason",
     attrs("get", "secrets", "s1", user=UserInfo("system:node:", groups=("system:nodes",))),
     (Decision.NO_OPINION, 'unknown node for user "system:node:"')),
    ("a node reads the secret of its pod", attrs("get", "secrets", "s1"), ALLOW),
    ("and may watch it by name", attrs("watch", "secrets", "s1"), ALLOW),
    ("but not a secret no pod of it uses", attrs("get", "secrets", "s2"), (Decision.NO_OPINION, NO_RELATION)),
    ("nor list secrets without a name", attrs("list", "secrets"), (Decision.NO_OPINION, "No Object name found")),
    ("nor write a secret it may read", attrs("update", "secrets", "s1"),
     (Decision.NO_OPINION, "can only read resources of this type")),
    ("nor read a secret across namespaces", attrs("list", "secrets", namespace=""),
     (Decision.NO_OPINION, "can only read namespaced object of this type")),
    ("a node reads its pod's configmap", attrs("get", "configmaps", "c1"), ALLOW),
    ("a node gets its pod's claim", attrs("get", "persistentvolumeclaims", "claim"), ALLOW),
    ("but may not watch claims", attrs("watch", "persistentvolumeclaims", "claim"),
     (Decision.NO_OPINION, "can only get individual resources of this type")),
    ("a node updates its claim's status", attrs("patch", "persistentvolumeclaims", "claim", subresource="status"), ALLOW),
    ("but does not get it through status", attrs("get", "persistentvolumeclaims", "claim", subresource="status"),
     (Decision.NO_OPINION, "can only get/update/patch this type")),
    ("a node gets the volume bound to its claim", attrs("get", "persistentvolumes", "vol", namespace=""), ALLOW),
    ("a node creates a token for its pod's service account",
     attrs("create", "serviceaccounts", "sa", subresource="token"), ALLOW),
    ("not for another service account", attrs("create", "serviceaccounts", "other", subresource="token"),
     (Decision.NO_OPINION, NO_RELATION)),
    ("nor reads service accounts", attrs("get", "serviceaccounts", "sa"),
     (Decision.NO_OPINION, "can only create tokens for individual service accounts")),
    ("nor creates them", attrs("create", "serviceaccounts", "sa"),
     (Decision.NO_OPINION, "can only create token subresource of serviceaccount")),
    ("a node renews its own lease", attrs("update", "leases", "n1", "kube-node-lease", LEASES), ALLOW),
    ("creates leases (NodeRestriction checks the name)", attrs("create", "leases", "", "kube-node-lease", LEASES), ALLOW),
    ("not another node's lease", attrs("get", "leases", "n2", "kube-node-lease", LEASES),
     (Decision.NO_OPINION, "can only access node lease with the same name as the requesting node")),
    ("no lease elsewhere", attrs("get", "leases", "n1", "default", LEASES),
     (Decision.NO_OPINION, 'can only access leases in the "kube-node-lease" system namespace')),
    ("leases are not listed", attrs("list", "leases", "", "kube-node-lease", LEASES),
     (Decision.NO_OPINION, "can only get, create, update, patch, or delete a node lease")),
    ("its own CSINode", attrs("update", "csinodes", "n1", "", STORAGE), ALLOW),
    ("not another's CSINode", attrs("delete", "csinodes", "n2", "", STORAGE),
     (Decision.NO_OPINION, "can only access CSINode with the same name as the requesting node")),
    ("a node reads its own Node", attrs("get", "nodes", "n1", ""), ALLOW),
    ("and watches it by name", attrs("watch", "nodes", "n1", ""), ALLOW),
    ("not another Node", attrs("get", "nodes", "n2", ""),
     (Decision.NO_OPINION, "node 'n1' cannot read 'n2', only its own Node object")),
    ("nor all nodes", attrs("list", "nodes", "", ""),
     (Decision.NO_OPINION, "node 'n1' cannot read all nodes, only its own Node object")),
    ("writes to nodes are left to NodeRestriction", attrs("patch", "nodes", "n2", ""), ALLOW),
    ("so is node status", attrs("update", "nodes", "n1", "", subresource="status"), ALLOW),
    ("a node may not delete nodes", attrs("delete", "nodes", "n1", ""), (Decision.NO_OPINION, "")),
    ("a node gets a pod bound to it", attrs("get", "pods", "p1"), ALLOW),
    ("not a pod on another node", attrs("get", "pods", "p2"), (Decision.NO_OPINION, NO_RELATION)),
    ("watches one of its pods by name", attrs("watch", "pods", "p1"), ALLOW),
    ("but not all pods", attrs("list", "pods"),
     (Decision.NO_OPINION, "can only list/watch pods with spec.nodeName field selector")),
    ("lists the pods bound to it by field selector",
     replace(attrs("list", "pods", namespace=""), field_selector=(("spec.nodeName", "=", "n1"),)), ALLOW),
    ("but not the pods bound to another node",
     replace(attrs("watch", "pods", namespace=""), field_selector=(("spec.nodeName", "=", "n2"),)),
     (Decision.NO_OPINION, "can only list/watch pods with spec.nodeName field selector")),
    ("mirror pods are created and deleted", attrs("create", "pods"), ALLOW),
    ("pod status is updated", attrs("patch", "pods", "p2", subresource="status"), ALLOW),
    ("pods are evicted", attrs("create", "pods", "p2", subresource="eviction"), ALLOW),
    ("pods are not updated", attrs("update", "pods", "p1"), (Decision.NO_OPINION, "")),
    ("nor exec'd into", attrs("create", "pods", "p1", subresource="exec"), (Decision.NO_OPINION, "")),
    ("every node reads services", attrs("list", "services"), ALLOW),
    ("and records events", attrs("create", "events"), ALLOW),
    ("and reviews tokens", attrs("create", "tokenreviews", namespace="", group="authentication.k8s.io"), ALLOW),
    ("but never deletes services", attrs("delete", "services", "s"), (Decision.NO_OPINION, "")),
    ("nor touches anything else", attrs("get", "deployments", "d", group="apps"), (Decision.NO_OPINION, "")),
    ("nor non-resource URLs", Attributes(user=N1, verb="get", resource_request=False, path="/healthz"),
     (Decision.NO_OPINION, "")),
]


@pytest.mark.parametrize("attributes, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_node_authorizer_decides_as_kube(attributes: Attributes, expected: tuple[Decision, str]) -> None:
    assert AUTHORIZER.authorize(attributes) == expected


# what a pod lets its node read ----------------------------------------------------------------------

def test_pod_references_cover_every_place_a_pod_names_an_object() -> None:
    spec = {
        "serviceAccountName": "sa", "imagePullSecrets": [{"name": "pull"}],
        "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
        "containers": [{"name": "c", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "key"}}},
                                             {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-key"}}},
                                             {"name": "C", "value": "plain"}],
                        "envFrom": [{"configMapRef": {"name": "cm-env"}}]}],
        "ephemeralContainers": [{"name": "e", "envFrom": [{"secretRef": {"name": "debug"}}]}],
        "volumes": [{"name": "v1", "secret": {"secretName": "vol"}},
                    {"name": "v2", "configMap": {"name": "cm-vol"}},
                    {"name": "v3", "projected": {"sources": [{"secret": {"name": "proj"}},
                                                             {"configMap": {"name": "cm-proj"}},
                                                             {"serviceAccountToken": {"path": "t"}}]}},
                    {"name": "v4", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "v5", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
                    {"name": "v6", "emptyDir": {}}],
    }
    assert pod_references(pod("web", **spec)) == {
        ("serviceaccount", "sa"), ("secret", "pull"), ("secret", "init-env"), ("secret", "key"),
        ("configmap", "cm-key"), ("configmap", "cm-env"), ("secret", "debug"), ("secret", "vol"),
        ("configmap", "cm-vol"), ("secret", "proj"), ("configmap", "cm-proj"), ("pvc", "claim"),
        ("pvc", "web-scratch"), ("secret", "csi"),
    }


def test_pod_references_ignore_malformed_entries() -> None:
    spec = {"imagePullSecrets": [{}], "volumes": ["junk", {"name": "v", "secret": {"secretName": 7}}],
            "containers": [{"name": "c", "env": [{"name": "A", "valueFrom": None}]}]}
    assert pod_references(pod("web", **spec)) == set()


def test_pv_secrets_default_to_the_namespace_of_the_bound_claim() -> None:
    volume = pv("vol", ("ns", "claim"), csi={"driver": "d", "nodeStageSecretRef": {"name": "stage"},
                                             "controllerPublishSecretRef": {"name": "controller"}},
                azureFile={"secretName": "azure", "secretNamespace": "other", "shareName": "s"})
    assert pv_secrets(volume) == {("ns", "stage"), ("other", "azure")}


# the graph over watch caches ------------------------------------------------------------------------

def test_a_bound_pods_references_are_reachable_from_its_node_only(caches: Any) -> None:
    pods, _, _ = caches
    pods.put("/registry/pods/ns/p1", pod("p1", "n1", volumes=[{"name": "v", "secret": {"secretName": "s1"}}]))
    graph = graph_of(caches)
    assert graph.has_path("n1", "secret", "ns", "s1")
    assert graph.has_path("n1", "pod", "ns", "p1")
    assert not graph.has_path("n2", "secret", "ns", "s1")
    assert not graph.has_path("n1", "secret", "other", "s1")


def test_an_unscheduled_pod_gives_no_node_anything_until_it_is_bound(caches: Any) -> None:
    pods, _, _ = caches
    unbound = pod("p1", "", volumes=[{"name": "v", "secret": {"secretName": "s1"}}])
    pods.put("/registry/pods/ns/p1", unbound)
    graph = graph_of(caches)
    assert not graph.has_path("n1", "secret", "ns", "s1")
    unbound["spec"]["nodeName"] = "n1"
    pods.put("/registry/pods/ns/p1", unbound)
    assert graph.has_path("n1", "secret", "ns", "s1")


def test_deleting_a_pod_takes_its_references_away_unless_another_pod_holds_them(caches: Any) -> None:
    pods, _, _ = caches
    uses_s1 = {"volumes": [{"name": "v", "secret": {"secretName": "s1"}}]}
    pods.put("/registry/pods/ns/p1", pod("p1", "n1", **uses_s1))
    pods.put("/registry/pods/ns/p2", pod("p2", "n1", **uses_s1))
    graph = graph_of(caches)
    pods.delete("/registry/pods/ns/p1")
    assert graph.has_path("n1", "secret", "ns", "s1")
    assert not graph.has_path("n1", "pod", "ns", "p1")
    pods.delete("/registry/pods/ns/p2")
    assert not graph.has_path("n1", "secret", "ns", "s1")


def test_a_mirror_pod_reaches_nothing_but_itself(caches: Any) -> None:
    pods, _, _ = caches
    pods.put("/registry/pods/ns/m", pod("m", "n1", serviceAccountName="sa",
                                        annotations={"kubernetes.io/config.mirror": "x"}))
    graph = graph_of(caches)
    assert graph.has_path("n1", "pod", "ns", "m")
    assert not graph.has_path("n1", "serviceaccount", "ns", "sa")


def test_volumes_and_their_secrets_are_reached_through_the_claim(caches: Any) -> None:
    pods, volumes, _ = caches
    pods.put("/registry/pods/ns/p1", pod("p1", "n1", volumes=[{"name": "v", "persistentVolumeClaim":
                                                               {"claimName": "claim"}}]))
    volumes.put("/registry/persistentvolumes/vol", pv("vol", ("ns", "claim"), csi={
        "driver": "d", "nodePublishSecretRef": {"name": "mount", "namespace": "storage"}}))
    volumes.put("/registry/persistentvolumes/free", pv("free", None))
    graph = graph_of(caches)
    assert graph.has_path("n1", "pvc", "ns", "claim")
    assert graph.has_path("n1", "pv", "", "vol")
    assert graph.has_path("n1", "secret", "storage", "mount")
    assert not graph.has_path("n2", "pv", "", "vol")
    assert not graph.has_path("n1", "pv", "", "free")
    volumes.delete("/registry/persistentvolumes/vol")
    assert not graph.has_path("n1", "secret", "storage", "mount")


def test_the_graph_decodes_only_what_changed(caches: Any) -> None:
    pods, _, store = caches
    for i in range(5):
        pods.put(f"/registry/pods/ns/p{i}", pod(f"p{i}"))
    graph = graph_of(caches)
    graph.has_path("n1", "pod", "ns", "p0")
    assert store.decodes == 5
    graph.has_path("n1", "pod", "ns", "p0")
    assert store.decodes == 5
    pods.put("/registry/pods/ns/p3", pod("p3", "n2"))
    assert graph.has_path("n2", "pod", "ns", "p3") and not graph.has_path("n1", "pod", "ns", "p3")
    assert store.decodes == 6


def test_a_change_the_cache_decoded_already_is_not_decoded_again(caches: Any) -> None:
    pods, _, store = caches
    pods.put("/registry/pods/ns/p1", pod("p1"))
    graph = graph_of(caches)
    assert graph.has_path("n1", "pod", "ns", "p1")
    change = pods.put("/registry/pods/ns/p1", pod("p1", "n2"))
    change.object(store, "current")  # as the pods' cache does to find the kubelets watching the pod
    decodes = store.decodes
    assert graph.has_path("n2", "pod", "ns", "p1") and not graph.has_path("n1", "pod", "ns", "p1")
    assert store.decodes == decodes


def test_a_relisted_cache_is_read_again(caches: Any) -> None:
    pods, _, _ = caches
    pods.put("/registry/pods/ns/p1", pod("p1"))
    graph = graph_of(caches)
    assert graph.has_path("n1", "pod", "ns", "p1")
    revision = pods.applied_revision
    pods.objects = {}  # what a relist after a broken watch leaves, at the same revision
    pods.applied_revision = revision
    assert not graph.has_path("n1", "pod", "ns", "p1")


class CountingDict(dict[str, KeyValue]):
    """A cache's objects that count how often they are walked."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountingDict.walks += 1
        return super().__iter__()


def test_the_graph_looks_only_at_the_keys_the_window_names(caches: Any) -> None:
    pods, _, store = caches
    pods.objects = CountingDict()
    for i in range(50):
        pods.put(f"/registry/pods/ns/p{i}", pod(f"p{i}"))
    graph = graph_of(caches)
    assert graph.has_path("n1", "pod", "ns", "p7")  # the first look reads everything
    walks = CountingDict.walks
    pods.put("/registry/pods/ns/p7", pod("p7", "n2"))
    pods.delete("/registry/pods/ns/p8")
    assert graph.has_path("n2", "pod", "ns", "p7") and not graph.has_path("n1", "pod", "ns", "p7")
    assert not graph.has_path("n1", "pod", "ns", "p8")
    assert CountingDict.walks == walks and store.decodes == 51


def test_changes_beyond_the_window_are_found_by_reading_everything(caches: Any) -> None:
    pods, _, _ = caches
    pods.window = 2
    for i in range(3):
        pods.put(f"/registry/pods/ns/p{i}", pod(f"p{i}"))
    graph = graph_of(caches)
    assert graph.has_path("n1", "pod", "ns", "p0")
    pods.delete("/registry/pods/ns/p0")
    pods.put("/registry/pods/ns/p1", pod("p1", "n2"))
    pods.put("/registry/pods/ns/p2", pod("p2", "n2"))  # the window now holds only the last two changes
    assert not graph.has_path("n1", "pod", "ns", "p0")
    assert graph.has_path("n2", "pod", "ns", "p1") and graph.has_path("n2", "pod", "ns", "p2")
    assert not graph.has_path("n1", "pod", "ns", "p1")

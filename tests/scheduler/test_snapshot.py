"""Snapshots: incremental updates from the cache, the zone-interleaved node order, and `Snapshot.of`."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.scheduler.cache import Cache
from minikube_py.scheduler.framework.types import ImageStateSummary, NodeInfo
from minikube_py.scheduler.nodetree import NodeTree, zone_key
from minikube_py.scheduler.snapshot import Snapshot

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def node(name: str, zone: str = "", **labels: str) -> dict[str, Any]:
    if zone:
        labels[ZONE] = zone
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}}}


def pod(name: str, node_name: str, cpu: str = "1", affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node_name,
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if affinity:
        spec["affinity"] = affinity
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}


def names(infos: Any) -> list[str]:
    return [info.name for info in infos]


@pytest.fixture
def clone_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the NodeInfos cloned, to see that a snapshot update copies only what changed."""
    calls: list[str] = []
    original = NodeInfo.clone

    def counting(self: NodeInfo) -> NodeInfo:
        calls.append(self.name)
        return original(self)

    monkeypatch.setattr(NodeInfo, "clone", counting)
    return calls


# --- incremental updates ------------------------------------------------------------------------------------


def test_only_changed_node_infos_are_copied(clone_calls: list[str]) -> None:
    cache = Cache()
    for i in range(5):
        cache.add_node(node(f"n{i}"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert sorted(clone_calls) == ["n0", "n1", "n2", "n3", "n4"]
    before = {info.name: info for info in snapshot.list()}
    node_list = snapshot.list()
    clone_calls.clear()
    cache.add_pod(pod("a", "n3", cpu="2"))
    cache.update_snapshot(snapshot)
    assert clone_calls == ["n3"], "one node changed, one copy"
    assert all(snapshot.get(name) is info for name, info in before.items()), "the NodeInfo objects are kept"
    assert snapshot.list() is node_list, "no node came or went: the list is not rebuilt"
    assert snapshot.get("n3").requested.milli_cpu == 2000  # type: ignore[union-attr]
    clone_calls.clear()
    cache.update_snapshot(snapshot)
    assert clone_calls == [], "nothing changed: nothing copied"


def test_the_snapshot_does_not_see_later_cache_changes_until_updated() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    cache.add_pod(pod("a", "n1"))
    assert snapshot.get("n1").pods == []  # type: ignore[union-attr]
    cache.update_snapshot(snapshot)
    assert [p.name for p in snapshot.get("n1").pods] == ["a"]  # type: ignore[union-attr]


def test_nodes_coming_and_going_rebuild_the_list() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    cache.add_node(node("n3"))
    cache.remove_node(node("n1"))
    cache.update_snapshot(snapshot)
    assert names(snapshot.list()) == ["n2", "n3"] and snapshot.num_nodes == 2
    assert snapshot.get("n1") is None


def test_affinity_lists_follow_the_pods() -> None:
    cache = Cache()
    for name in ("n1", "n2"):
        cache.add_node(node(name))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert snapshot.have_pods_with_affinity_list() == []
    cache.add_pod(pod("db", "n2", affinity=ANTI_AFFINITY))
    cache.update_snapshot(snapshot)
    assert names(snapshot.have_pods_with_affinity_list()) == ["n2"]
    assert names(snapshot.have_pods_with_required_anti_affinity_list()) == ["n2"]
    cache.remove_pod(pod("db", "n2"))
    cache.update_snapshot(snapshot)
    assert snapshot.have_pods_with_required_anti_affinity_list() == []


def test_a_fresh_snapshot_gets_everything() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", "n1"))
    first, second = Snapshot(), Snapshot()
    cache.update_snapshot(first)
    cache.update_snapshot(second)
    assert second.get("n1") is not first.get("n1")
    assert [p.name for p in second.get("n1").pods] == ["a"]  # type: ignore[union-attr]


def test_the_snapshot_lists_nodes_round_robin_across_zones() -> None:
    cache = Cache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]:
        cache.add_node(node(name, zone))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert names(snapshot.list()) == ["a1", "b1", "c1", "a2", "c2", "a3"]


# --- the node tree ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case, nodes, expected", [
    ("nodes without zones keep their order", [node("x"), node("y")], ["x", "y"]),
    ("zones are interleaved in the order they appeared",
     [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("a3", "a"), node("b2", "b")],
     ["a1", "b1", "a2", "b2", "a3"]),
    ("the same zone in another region is another zone",
     [node("e1", "z", **{REGION: "eu"}), node("u1", "z", **{REGION: "us"}),
      node("e2", "z", **{REGION: "eu"})],
     ["e1", "u1", "e2"]),
    ("the deprecated zone label counts", [node("old1", **{"failure-domain.beta.kubernetes.io/zone": "q"}),
                                          node("old2", **{"failure-domain.beta.kubernetes.io/zone": "q"}),
                                          node("new1", "r")], ["old1", "new1", "old2"]),
    ("adding a node twice lists it once", [node("x", "a"), node("x", "a")], ["x"]),
])
def test_node_tree_order(case: str, nodes: list[dict[str, Any]], expected: list[str]) -> None:
    tree = NodeTree(nodes)
    assert list(tree.list()) == expected, case
    assert tree.num_nodes == len(expected)


def test_node_tree_updates_and_removals() -> None:
    tree = NodeTree([node("a1", "a"), node("a2", "a"), node("b1", "b")])
    tree.update_node(node("a1", "a"), node("a1", "b"))
    assert list(tree.list()) == ["a2", "b1", "a1"]
    assert tree.remove_node(node("a2", "a"))
    assert list(tree.list()) == ["b1", "a1"], "an emptied zone disappears"
    assert not tree.remove_node(node("zz", "a")), "removing an unknown node is reported"
    assert tree.num_nodes == 2


def test_zone_key_is_empty_without_topology_labels() -> None:
    assert zone_key(node("x")) == ""
    assert zone_key(node("x", "z")) != zone_key(node("x", "z", **{REGION: "r"}))


# --- Snapshot.of --------------------------------------------------------------------------------------------


def test_snapshot_of_pods_and_nodes() -> None:
    n1, n2 = node("n1"), node("n2")
    n1["status"]["images"] = [{"names": ["img"], "sizeBytes": 10}]
    n2["status"]["images"] = [{"names": ["img", "other"], "sizeBytes": 20}]
    pods = [pod("a", "n1"), pod("b", "n1", affinity=ANTI_AFFINITY), pod("lost", "nx")]
    snapshot = Snapshot.of(pods, [n1, n2])
    assert names(snapshot.list()) == ["n1", "n2"] and snapshot.num_nodes == 2
    assert [p.name for p in snapshot.get("n1").pods] == ["a", "b"]  # type: ignore[union-attr]
    assert snapshot.get("nx") is None
    assert names(snapshot.have_pods_with_required_anti_affinity_list()) == ["n1"]
    assert snapshot.get("n2").image_states == {  # type: ignore[union-attr]
        "img": ImageStateSummary(10, 2), "other": ImageStateSummary(20, 1)}

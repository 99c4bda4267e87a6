"""The indexer and listers: keys, indexes kept current through add/update/delete/replace, and bad input."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.selectors import LabelSelector
from minikube_py.client import errors
from minikube_py.client.listers import Lister
from minikube_py.client.resources import NODES, PODS, REPLICA_SETS
from minikube_py.client.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    meta_namespace_index_func,
    meta_namespace_key,
    split_meta_namespace_key,
)


def pod(name: str, namespace: str = "default", *, node: str = "", labels: dict[str, str] | None = None,
        rv: str = "1", **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if labels:
        metadata["labels"] = labels
    return {"kind": "Pod", "metadata": metadata, "spec": {"nodeName": node, **spec}}


def node(name: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}}


def by_node(obj: dict[str, Any]) -> list[str]:
    name = obj.get("spec", {}).get("nodeName")
    return [name] if name else []


def by_ports(obj: dict[str, Any]) -> list[str]:
    return [str(port) for port in obj.get("spec", {}).get("ports", [])]


def indexer(*objects: dict[str, Any]) -> Indexer:
    store = Indexer({NAMESPACE_INDEX: meta_namespace_index_func, "node": by_node, "ports": by_ports})
    for obj in objects:
        store.add(obj)
    return store


def names(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in objects)


@pytest.mark.parametrize(("obj", "key"), [
    (pod("web", "prod"), "prod/web"),
    (node("n1"), "n1"),
    ("already/a-key", "already/a-key"),
    (DeletedFinalStateUnknown("ns/gone", {}), "ns/gone"),
], ids=["a namespaced object is namespace/name", "a cluster-scoped object is its name",
        "a key stands for itself", "a tombstone carries its key"])
def test_meta_namespace_key(obj: Any, key: str) -> None:
    assert meta_namespace_key(obj) == key


def test_keys_split_back_into_namespace_and_name() -> None:
    assert split_meta_namespace_key("prod/web") == ("prod", "web")
    assert split_meta_namespace_key("n1") == ("", "n1")
    with pytest.raises(ValueError, match="unexpected key format"):
        split_meta_namespace_key("a/b/c")


def test_objects_are_stored_and_read_by_object_or_key() -> None:
    store = indexer(pod("a"), pod("b", "other"), node("n1"))
    assert sorted(store.list_keys()) == ["default/a", "n1", "other/b"]
    assert store.get(pod("a"))["metadata"]["name"] == "a"
    assert store.get("other/b") is store.get_by_key("other/b")
    assert store.get_by_key("default/missing") is None and len(store) == 3


def test_an_update_moves_the_object_between_index_values() -> None:
    store = indexer(pod("a", node="n1"), pod("b", node="n1"))
    store.update(pod("a", node="n2", rv="2"))
    assert names(store.by_index("node", "n1")) == ["b"]
    assert names(store.by_index("node", "n2")) == ["a"]
    assert store.get("default/a")["metadata"]["resourceVersion"] == "2"


def test_a_delete_removes_the_object_and_empty_index_values() -> None:
    store = indexer(pod("a", node="n1"), pod("b", node="n2"))
    store.delete(pod("a"))
    assert store.by_index("node", "n1") == [] and sorted(store.list_index_func_values("node")) == ["n2"]
    store.delete(DeletedFinalStateUnknown("default/b", {}))
    store.delete(pod("never-added"))
    assert len(store) == 0 and store.list_index_func_values("node") == []


def test_an_object_with_several_index_values_is_found_under_each() -> None:
    store = indexer(pod("a", ports=[80, 443]), pod("b", ports=[443]), pod("c", ports=[8080]))
    assert names(store.by_index("ports", "443")) == ["a", "b"]
    assert sorted(store.index_keys("ports", "80")) == ["default/a"]
    assert names(store.index("ports", pod("probe", ports=[80, 8080]))) == ["a", "c"]
    store.update(pod("a", ports=[80], rv="2"))
    assert names(store.by_index("ports", "443")) == ["b"]


def test_replace_swaps_the_contents_and_rebuilds_every_index() -> None:
    store = indexer(pod("a", node="n1"), pod("b", node="n1"))
    store.replace([pod("b", node="n2"), pod("c", node="n2", namespace="x")], "42")
    assert sorted(store.list_keys()) == ["default/b", "x/c"]
    assert store.by_index("node", "n1") == [] and names(store.by_index("node", "n2")) == ["b", "c"]
    assert names(store.by_index(NAMESPACE_INDEX, "x")) == ["c"]


def test_indexers_added_later_index_the_objects_already_stored() -> None:
    store = Indexer()
    store.add(pod("a", labels={"app": "web"}))
    store.add_indexers({"app": lambda obj: [obj["metadata"].get("labels", {}).get("app", "")]})
    assert names(store.by_index("app", "web")) == ["a"]


def test_cluster_scoped_objects_sit_under_the_empty_namespace() -> None:
    plain = Indexer({NAMESPACE_INDEX: meta_namespace_index_func})
    plain.add(node("n1"))
    assert [obj["metadata"]["name"] for obj in plain.by_index(NAMESPACE_INDEX, "")] == ["n1"]


BAD_INDEXER_CALLS = [
    ("an unknown index name for by_index", lambda s: s.by_index("nope", "x"), "index with name nope does not exist"),
    ("an unknown index name for index", lambda s: s.index("nope", pod("a")), "index with name nope does not exist"),
    ("an index name that is already taken", lambda s: s.add_indexers({"node": by_node}), "indexer conflict: node"),
    ("an object without a name", lambda s: s.add({"metadata": {"namespace": "x"}}), "no metadata.name"),
    ("an index function that fails", lambda s: s.add(pod("bad", ports=None)), "unable to calculate an index entry"),
]


@pytest.mark.parametrize(("call", "message"), [case[1:] for case in BAD_INDEXER_CALLS],
                         ids=[case[0] for case in BAD_INDEXER_CALLS])
def test_bad_indexer_calls_raise_clear_errors(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(indexer(pod("a")))


def test_a_lister_lists_by_namespace_and_label_selector() -> None:
    store = indexer(pod("a", labels={"app": "web"}), pod("b", labels={"app": "db"}),
                    pod("c", "other", labels={"app": "web"}))
    lister = Lister(store, PODS)
    assert names(lister.list()) == ["a", "b", "c"]
    assert names(lister.list("default")) == ["a", "b"]
    assert names(lister.list(selector=LabelSelector.parse("app=web"))) == ["a", "c"]
    assert names(lister.list("other", LabelSelector.parse("app=db"))) == []
    assert names(Lister(Indexer(), PODS).list()) == []


def test_a_lister_without_a_namespace_index_still_filters_by_namespace() -> None:
    store = Indexer()
    store.add(pod("a"))
    store.add(pod("b", "other"))
    assert names(Lister(store, PODS).list("other")) == ["b"]


def test_a_lister_gets_by_name_or_raises_not_found_as_kube_listers_do() -> None:
    lister = Lister(indexer(pod("a"), node("n1")), PODS)
    assert lister.get("a", "default")["metadata"]["name"] == "a"
    with pytest.raises(errors.NotFound, match='pod "b" not found') as caught:
        lister.get("b", "default")
    assert caught.value.code == 404 and caught.value.details["name"] == "b"
    assert Lister(indexer(node("n1")), NODES).get("n1")["metadata"]["name"] == "n1"
    with pytest.raises(errors.NotFound, match='replicaset.apps "rs" not found'):
        Lister(Indexer(), REPLICA_SETS).get("rs", "default")
    with pytest.raises(ValueError, match="pods are namespaced"):
        lister.get("a")

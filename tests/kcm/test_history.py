"""Template hashes and ControllerRevisions (kcm/controllers/history.py)."""

from __future__ import annotations

from minikube_py.kcm.controllers import history

PARENT = {"apiVersion": "apps/v1", "kind": "StatefulSet",
          "metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
          "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}}}


def test_fnv32a_matches_the_published_vectors() -> None:
    assert history.fnv32a(b"") == 0x811C9DC5
    assert history.fnv32a(b"a") == 0xE40C292C
    assert history.fnv32a(b"foobar") == 0xBF9CF968


def test_hash_is_stable_safe_and_changes_with_data_and_collisions() -> None:
    data = {"b": 1, "a": [1, 2]}
    digest = history.template_hash(data)
    assert digest == history.template_hash({"a": [1, 2], "b": 1})  # key order does not matter
    assert set(digest) <= set(history.SAFE_ALPHABET) and not set(digest) & set("aeiou")
    assert history.template_hash({"b": 2, "a": [1, 2]}) != digest
    assert history.template_hash(data, 1) != digest
    assert history.template_hash(data, 0) == digest


def test_new_revision_is_named_labelled_and_owned() -> None:
    data = {"spec": {"template": PARENT["spec"]["template"]}}
    revision = history.new_revision(PARENT, data, 3)
    digest = history.template_hash(data)
    assert revision["metadata"]["name"] == f"web-{digest}"
    assert revision["metadata"]["labels"] == {"app": "web", history.HASH_LABEL: digest}
    assert revision["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert revision["metadata"]["ownerReferences"][0]["controller"] is True
    assert revision["revision"] == 3 and revision["data"] == data
    data["spec"]["template"]["metadata"]["labels"]["app"] = "changed"
    assert revision["data"]["spec"]["template"]["metadata"]["labels"]["app"] == "web"  # a copy


def test_next_equal_and_sort() -> None:
    one = history.new_revision(PARENT, {"v": 1}, 1)
    two = history.new_revision(PARENT, {"v": 2}, 2)
    assert history.next_revision([]) == 1 and history.next_revision([two, one]) == 3
    assert history.equal_revision(one, history.new_revision(PARENT, {"v": 1}, 7))
    assert not history.equal_revision(one, two)
    assert history.sort_revisions([two, one]) == [one, two]

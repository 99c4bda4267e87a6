"""The field manager's shortcuts give what the long way gives.

* `compare` walks two objects side by side and skips what is the same on both; the long way takes each
  object apart into all its paths and diffs the two sets (`paths_of` below);
* a stored managedFields entry is taken apart only when its fields are needed; whether it owns a path is
  read off its FieldsV1 tree;
* a status write compares only status, and owns only status fields.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikube_py.api.managedfields import FieldTracker, manager, type_of_kind, zero_object
from minikube_py.api.managedfields.fieldpath import from_fields_v1, in_fields_v1, to_fields_v1
from minikube_py.api.managedfields.manager import Entry
from minikube_py.api.managedfields.schema import UNTYPED_TYPE, Type, resolve
from minikube_py.api.managedfields.typed import ShapeError, compare, item_elements

POD = type_of_kind("", "v1", "Pod")
CRD = type_of_kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
assert POD is not None and CRD is not None


# the long way ---------------------------------------------------------------------------------------------------


def paths_of(value: Any, typ: Type, path: tuple[str, ...] = ()) -> tuple[dict, set]:
    """Every path of `value`: its leaves with their values, and its structs, maps, lists and list items."""
    leaves: dict = {}
    inner: set = set()
    typ = resolve(typ, value)
    if typ.is_leaf:
        if path:
            leaves[path] = value
        return leaves, inner
    if path:
        inner.add(path)
    members = []
    if typ.shape == "list" and isinstance(value, list):
        members = [(element, item, typ.element) for element, item in zip(item_elements(value, typ), value, strict=True)]
    elif typ.shape != "list" and isinstance(value, dict):
        members = [("f:" + key, sub, typ.child(key)) for key, sub in value.items()]
    for element, sub, sub_type in members:
        sub_leaves, sub_inner = paths_of(sub, sub_type, path + (element,))
        leaves.update(sub_leaves)
        inner |= sub_inner
    return leaves, inner


def long_compare(old: Any, new: Any, typ: Type) -> tuple[set, set, set]:
    (old_leaves, old_inner), (new_leaves, new_inner) = paths_of(old, typ), paths_of(new, typ)
    added = (new_leaves.keys() - old_leaves.keys()) | (new_inner - old_inner)
    removed = (old_leaves.keys() - new_leaves.keys()) | (old_inner - new_inner)
    modified = {p for p, v in new_leaves.items()
                if p in old_leaves and (type(v) is not type(old_leaves[p]) or v != old_leaves[p])}
    return added, removed, modified


def outcome(fn: Any, *args: Any) -> Any:
    try:
        result = fn(*args)
    except ShapeError:
        return "ShapeError"
    if not isinstance(result, tuple):
        result = (result.added, result.removed, result.modified)
    return tuple(sorted(s) for s in result)


def a_pod() -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "1"}, "finalizers": ["x/y"]},
        "spec": {
            "replicas": 1,  # not a pod field: untyped, compared as the value it is
            "containers": [{"name": "main", "image": "nginx", "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": "1"}],
                            "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}],
            "terminationGracePeriodSeconds": 30,
            "securityContext": {"runAsUser": 1000, "runAsNonRoot": True},
            "tolerations": [{"key": "k", "operator": "Exists"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}],
                   "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
                   "containerStatuses": [{"name": "main", "ready": True}]},
    }


def changed(obj: dict, rng: random.Random) -> dict:
    """`obj` with a few random changes: values replaced (1 by 1.0 or True too), fields dropped or added,
    list items duplicated (a ShapeError), maps turned into scalars and back."""
    obj = copy.deepcopy(obj)
    for _ in range(rng.randint(1, 3)):
        node, key = rng.choice(spots(obj))
        value = node[key]
        choice = rng.randrange(5)
        if choice == 0:
            node[key] = rng.choice([1, 1.0, True, 0, False, None, "x", {}, [], {"k": 1}])
        elif choice == 1 and isinstance(node, dict):
            del node[key]
        elif choice == 2 and isinstance(node, list):
            node.append(copy.deepcopy(value))
        elif choice == 3 and isinstance(value, int) and not isinstance(value, bool):
            node[key] = float(value)
        elif isinstance(node, dict):
            node["added"] = rng.choice(["v", 2, {"x": "y"}])
    return obj


def spots(node: Any) -> list[tuple[Any, Any]]:
    """(container, key or index) of every value in `node`."""
    out = []
    for key in (node if isinstance(node, dict) else range(len(node))):
        out.append((node, key))
        if isinstance(node[key], (dict, list)):
            out += spots(node[key])
    return out


@given(st.randoms(use_true_random=False), st.booleans())
def test_compare_finds_what_diffing_all_paths_finds(rng: random.Random, both_changed: bool) -> None:
    old = changed(a_pod(), rng) if both_changed else a_pod()
    new = changed(old, rng)
    assert outcome(compare, old, new, POD) == outcome(long_compare, old, new, POD)
    assert outcome(compare, new, old, POD) == outcome(long_compare, new, old, POD)


@pytest.mark.parametrize("change", [
    lambda pod: pod["spec"]["securityContext"].update(runAsUser=1000.0),  # `==` alone would call it unchanged
    lambda pod: pod["spec"]["securityContext"].update(runAsNonRoot=1),
    lambda pod: pod["status"]["conditions"][0].update(status="False"),
    lambda pod: pod["metadata"]["annotations"].update(a="2"),
    lambda pod: pod["spec"]["containers"][0]["resources"].pop("limits"),
    lambda pod: None,
])
def test_skipping_unchanged_values_keeps_every_change(change: Any) -> None:
    old = a_pod()
    new = copy.deepcopy(old)
    change(new)
    assert outcome(compare, old, new, POD) == outcome(long_compare, old, new, POD)


def test_an_unchanged_list_that_breaks_its_rules_is_still_a_shape_error() -> None:
    old = a_pod()
    old["spec"]["containers"][0]["env"].append({"name": "A", "value": "2"})  # duplicate env name
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["app"] = "other"
    with pytest.raises(ShapeError):
        compare(old, new, POD)


def test_only_compares_that_field_as_a_whole_comparison_would() -> None:
    old, new = a_pod(), a_pod()
    new["status"]["phase"] = "Failed"
    new["spec"]["containers"][0]["image"] = "other"
    whole = compare(old, new, POD)
    status = compare(old, new, POD, only="status")
    assert status.modified == {p for p in whole.modified if p[0] == "f:status"} == {("f:status", "f:phase")}


def test_types_say_whether_they_can_hold_sets_or_list_maps() -> None:
    status = POD.child("status")
    assert POD.holds_item_lists and status.holds_item_lists  # conditions, podIPs
    assert not status.child("conditions").element.holds_item_lists
    assert not POD.child("metadata").child("labels").holds_item_lists
    assert not status.child("containerStatuses").holds_item_lists  # atomic
    assert not UNTYPED_TYPE.holds_item_lists
    schema = CRD.child("spec").child("versions").element.child("schema").child("openAPIV3Schema")
    assert schema.holds_item_lists  # refers to itself: counted as holding one, so never skipped


# FieldsV1 trees -------------------------------------------------------------------------------------------------

ELEMENTS = ["f:a", "f:b", 'k:{"name":"x"}', 'v:"s"', "i:2", "i:10"]
path_sets = st.sets(st.lists(st.sampled_from(ELEMENTS), min_size=1, max_size=4).map(tuple), max_size=12)


@given(path_sets, path_sets)
def test_a_tree_answers_membership_as_its_field_set_does(owned: set, asked: set) -> None:
    tree = to_fields_v1(owned)
    assert {path for path in asked | owned if in_fields_v1(tree, path)} == owned
    assert Entry(None, "v1", None, tree).owns(asked) == owned & asked
    assert Entry(None, "v1", None, tree).empty == (not owned)


def test_a_stored_entry_is_decoded_only_when_it_loses_fields() -> None:
    tree = to_fields_v1({("f:data", "f:a"), ("f:data", "f:b")})
    entry = Entry(None, "v1", None, tree)
    entry.discard({("f:data", "f:c")})
    assert entry.wire is tree and entry._fields is None
    entry.discard({("f:data", "f:a")})
    assert entry.wire is None and entry.fields == {("f:data", "f:b")}


def test_decoding_still_refuses_a_bad_element_after_remembering_good_ones() -> None:
    assert from_fields_v1({'k:{"a":1}': {}}) == {('k:{"a":1}',)}
    with pytest.raises(ValueError):
        from_fields_v1({"k:{bad": {}})
    with pytest.raises(ValueError):
        from_fields_v1({'k:{"a":1}': []})


# a kubelet's status writes -------------------------------------------------------------------------------------------


def track(manager_name: str, old: dict | None, new: dict, **kwargs: Any) -> dict:
    assert POD is not None
    tracker = FieldTracker(POD, "v1", manager_name, zero_object("v1", "Pod"), status_subresource=True, **kwargs)
    tracker.track(old, new)
    return orjson.loads(orjson.dumps(new))  # as storage gives it back


def kubelet_status(ready: bool) -> dict:
    state = "True" if ready else "False"
    return {"phase": "Running" if ready else "Pending", "hostIP": "10.0.0.7", "podIP": "10.244.0.5",
            "podIPs": [{"ip": "10.244.0.5"}], "startTime": "2024-05-01T10:00:00Z", "qosClass": "BestEffort",
            "containerStatuses": [{"name": "main", "ready": ready, "restartCount": 0}],
            "conditions": [{"type": kind, "status": state, "lastTransitionTime": "2024-05-01T10:00:00Z"}
                           for kind in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")]}


def status_write(pod: dict, status: dict) -> dict:
    new = copy.deepcopy(pod)
    new["status"] = status
    return new


@pytest.fixture
def created() -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "main", "image": "nginx"}]}, "status": {"phase": "Pending"}}
    return track("kubectl-client-side-apply", None, pod)


def test_a_status_write_records_status_fields_only_and_leaves_the_creator_as_it_was(created: dict) -> None:
    new = status_write(created, kubelet_status(False))
    new["spec"]["containers"][0]["image"] = "not-the-kubelets"  # the status strategy resets it; never owned
    written = track("kubelet", created, new, subresource="status")
    creator, kubelet = written["metadata"]["managedFields"]
    assert orjson.dumps(creator) == orjson.dumps(created["metadata"]["managedFields"][0])
    assert kubelet["subresource"] == "status" and list(kubelet["fieldsV1"]) == ["f:status"]
    assert set(kubelet["fieldsV1"]["f:status"]) == {
        "f:hostIP", "f:podIP", "f:podIPs", "f:startTime", "f:qosClass", "f:containerStatuses", "f:conditions"}


def test_a_status_write_that_changes_nothing_leaves_managed_fields_untouched(
        created: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    first = track("kubelet", created, status_write(created, kubelet_status(True)), subresource="status")
    monkeypatch.setattr(manager, "time_string", lambda: "2099-01-01T00:00:00Z")  # a later write
    again = track("kubelet", first, status_write(first, kubelet_status(True)), subresource="status")
    assert orjson.dumps(again["metadata"]["managedFields"]) == orjson.dumps(first["metadata"]["managedFields"])


def test_a_status_write_takes_over_only_what_it_changed(created: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    first = track("kubelet", created, status_write(created, kubelet_status(False)), subresource="status")
    monkeypatch.setattr(manager, "time_string", lambda: "2099-01-01T00:00:00Z")
    second = track("kubelet", first, status_write(first, kubelet_status(True)), subresource="status")
    creator, kubelet = second["metadata"]["managedFields"]
    assert creator == first["metadata"]["managedFields"][0]
    assert "f:phase" in kubelet["fieldsV1"]["f:status"] and kubelet["time"] == "2099-01-01T00:00:00Z"

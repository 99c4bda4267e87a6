"""The field-ownership logic of server-side apply, without a server: shapes, field sets, merges, trackers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikube_py.api import errors
from minikube_py.api.managedfields import FieldTracker, type_of_kind, zero_object
from minikube_py.api.managedfields.fieldpath import (
    FieldsV1Error,
    from_fields_v1,
    path_string,
    to_fields_v1,
    with_named_parents,
)
from minikube_py.api.managedfields.typed import ShapeError, compare, field_set, merge, remove

DEPLOYMENT = type_of_kind("apps", "v1", "Deployment")
POD = type_of_kind("", "v1", "Pod")
CONFIGMAP = type_of_kind("", "v1", "ConfigMap")
assert DEPLOYMENT is not None and POD is not None and CONFIGMAP is not None


def containers(*items: dict) -> dict:
    return {"spec": {"containers": list(items)}}


# shapes and field sets ---------------------------------------------------------------------------------------


def test_list_maps_are_keyed_by_their_key_fields_with_kube_defaults() -> None:
    pod = containers({"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]})
    assert field_set(pod, POD) == {
        ("f:spec", "f:containers", 'k:{"name":"web"}'),
        ("f:spec", "f:containers", 'k:{"name":"web"}', "f:name"),
        ("f:spec", "f:containers", 'k:{"name":"web"}', "f:image"),
        ("f:spec", "f:containers", 'k:{"name":"web"}', "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}'),
        ("f:spec", "f:containers", 'k:{"name":"web"}', "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}',
         "f:containerPort"),
    }


def test_atomic_maps_and_lists_are_single_fields() -> None:
    spec = {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"tolerations": [{"key": "k"}]}}}}
    assert field_set(spec, DEPLOYMENT) == {("f:spec", "f:selector"),
                                           ("f:spec", "f:template", "f:spec", "f:tolerations")}


def test_sets_are_keyed_by_value() -> None:
    assert field_set({"metadata": {"finalizers": ["a/b"]}}, CONFIGMAP) == {
        ("f:metadata", "f:finalizers", 'v:"a/b"')}


def test_duplicate_and_keyless_items_are_shape_errors() -> None:
    with pytest.raises(ShapeError, match="duplicate entries"):
        field_set(containers({"name": "a"}, {"name": "a"}), POD)
    with pytest.raises(ShapeError, match='omits key field "name"'):
        field_set(containers({"image": "x"}), POD)


def test_compare_counts_new_maps_and_changed_leaves() -> None:
    old = {"metadata": {}, "data": {"a": "1"}}
    new = {"metadata": {"labels": {"x": "y"}}, "data": {"a": "2"}}
    diff = compare(old, new, CONFIGMAP)
    assert diff.added == {("f:metadata", "f:labels"), ("f:metadata", "f:labels", "f:x")}
    assert diff.modified == {("f:data", "f:a")}
    assert diff.removed == set()
    assert compare(new, old, CONFIGMAP).removed == diff.added


# FieldsV1 ---------------------------------------------------------------------------------------------------------


def test_fields_v1_marks_members_with_children_by_a_dot() -> None:
    paths = {("f:metadata", "f:labels"), ("f:metadata", "f:labels", "f:app"), ("f:data", "f:b")}
    tree = to_fields_v1(paths)
    assert tree == {"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
    assert list(tree) == ["f:data", "f:metadata"]
    assert from_fields_v1(tree) == paths


def test_fields_v1_orders_siblings_as_kube_does() -> None:
    """Fields, then keys, then values, then indexes by number (`i:9` before `i:10`)."""
    siblings = ["i:10", 'v:"s"', "i:9", 'k:{"name":"x"}', "f:b", "f:a"]
    tree = to_fields_v1({("f:x", element) for element in siblings})
    assert list(tree["f:x"]) == ["f:a", "f:b", 'k:{"name":"x"}', 'v:"s"', "i:9", "i:10"]


@given(st.sets(st.lists(st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', 'v:"s"', "i:0"]), min_size=1,
                        max_size=4).map(tuple)))
def test_fields_v1_round_trips_any_set(paths: set) -> None:
    assert from_fields_v1(to_fields_v1(paths)) == paths


@pytest.mark.parametrize("tree", [[], {"x:a": {}}, {"f:a": []}, {"k:{nope": {}}, {"i:z": {}}])
def test_malformed_fields_v1_is_refused(tree: object) -> None:
    with pytest.raises(FieldsV1Error):
        from_fields_v1(tree)


def test_paths_print_as_kube_prints_them() -> None:
    path = ("f:spec", "f:containers", 'k:{"name":"web"}', "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')
    assert path_string(path) == '.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"]'
    assert path_string(("f:metadata", "f:finalizers", 'v:"a"')) == '.metadata.finalizers[="a"]'


def test_named_parents_are_added_as_members() -> None:
    assert with_named_parents({("f:spec", "f:containers", 'k:{"name":"a"}', "f:image")}) == {
        ("f:spec",), ("f:spec", "f:containers"), ("f:spec", "f:containers", 'k:{"name":"a"}', "f:image")}


# merge and remove ---------------------------------------------------------------------------------------------


def names(obj: dict) -> list[str]:
    return [c["name"] for c in obj["spec"]["containers"]]


@pytest.mark.parametrize("live,config,expected", [
    (["a", "b"], ["b", "c"], ["a", "b", "c"]),
    (["a", "b", "c"], ["c", "a"], ["b", "c", "a"]),
    (["a", "x", "b"], ["b", "a"], ["x", "b", "a"]),
    ([], ["a"], ["a"]),
])
def test_list_map_merge_keeps_live_only_items_in_place_and_config_order(live: list, config: list,
                                                                       expected: list) -> None:
    merged = merge(containers(*({"name": n} for n in live)), containers(*({"name": n} for n in config)), POD)
    assert names(merged) == expected


def test_merge_merges_items_field_by_field_and_null_removes() -> None:
    live = {"metadata": {"labels": {"a": "1", "b": "2"}},
            "spec": {"containers": [{"name": "web", "image": "old", "imagePullPolicy": "Always"}]}}
    config = {"metadata": {"labels": {"b": None, "c": "3"}}, "spec": {"containers": [{"name": "web", "image": "new"}]}}
    merged = merge(live, config, POD)
    assert merged["metadata"]["labels"] == {"a": "1", "c": "3"}
    assert merged["spec"]["containers"] == [{"name": "web", "image": "new", "imagePullPolicy": "Always"}]
    assert live["metadata"]["labels"] == {"a": "1", "b": "2"}  # the live object is not changed


@given(st.lists(st.sampled_from("abcdef"), unique=True), st.lists(st.sampled_from("abcdef"), unique=True))
def test_a_merged_list_map_holds_every_item_of_both_once(live: list, config: list) -> None:
    merged = merge(containers(*({"name": n} for n in live)), containers(*({"name": n} for n in config)), POD)
    assert sorted(names(merged)) == sorted(set(live) | set(config))
    config_order = [n for n in names(merged) if n in config]
    assert config_order == config


def test_remove_deletes_fields_and_items_with_everything_below() -> None:
    obj = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}
    remove(obj, {("f:spec", "f:containers", 'k:{"name":"a"}'), ("f:metadata", "f:labels", "f:a"),
                 ("f:spec", "f:missing")}, POD)
    assert obj == {"metadata": {"labels": {}}, "spec": {"containers": [{"name": "b"}]}}


# trackers -------------------------------------------------------------------------------------------------------


def tracker(manager: str, **kwargs: object) -> FieldTracker:
    return FieldTracker(CONFIGMAP, "v1", manager, zero_object("v1", "ConfigMap"), **kwargs)  # type: ignore[arg-type]


def cm(**data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}


def test_an_update_owns_what_it_changed_and_takes_it_from_others() -> None:
    obj = cm(a="1", b="2")
    tracker("creator").track(None, obj)
    new = {**obj, "data": {"a": "1", "b": "3"}}
    tracker("editor").track(obj, new)
    owners = {e["manager"]: e["fieldsV1"] for e in new["metadata"]["managedFields"]}
    assert owners == {"creator": {"f:data": {".": {}, "f:a": {}}}, "editor": {"f:data": {"f:b": {}}}}


def test_an_apply_conflict_names_the_owner_and_force_wins() -> None:
    obj = cm(a="1")
    tracker("creator").track(None, obj)
    config = cm(a="2")
    applier = tracker("applier", config=config)
    new = applier.mutate(obj)
    with pytest.raises(errors.APIError) as caught:
        applier.track(obj, new)
    assert caught.value.code == 409
    assert caught.value.message == 'Apply failed with 1 conflict: conflict with "creator" using v1: .data.a'
    forced = tracker("applier", config=config, force=True)
    new = forced.mutate(obj)
    forced.track(obj, new)
    assert [e["manager"] for e in new["metadata"]["managedFields"]] == ["applier", "creator"]


def test_kubectl_may_take_fields_still_as_client_side_apply_left_them() -> None:
    last = '{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"c"}}\n'
    obj = cm(a="1")
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": last}
    tracker("kubectl-client-side-apply").track(None, obj)
    config = cm(a="2")
    kubectl = tracker("kubectl", config=config)
    new = kubectl.mutate(obj)
    kubectl.track(obj, new)
    assert new["data"] == {"a": "2"}
    assert '"a":"2"' in new["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    other = tracker("someone-else", config=cm(a="3"))
    with pytest.raises(errors.APIError):
        other.track(new, other.mutate(new))


def pod(**status: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}, "status": status}


def pod_tracker(manager: str, **kwargs: object) -> FieldTracker:
    return FieldTracker(POD, "v1", manager, zero_object("v1", "Pod"), status_subresource=True,  # type: ignore[arg-type]
                        **kwargs)


def test_a_status_write_owns_status_fields_only_and_leaves_other_entries_as_they_were() -> None:
    obj = pod(phase="Pending")
    pod_tracker("creator").track(None, obj)
    creator = obj["metadata"]["managedFields"][0]
    new = {**pod(phase="Running", podIP="10.0.0.5"), "metadata": obj["metadata"]}
    new["spec"]["containers"][0]["image"] = "nginx"  # not the status writer's to own, whatever it sends
    pod_tracker("kubelet", subresource="status").track(obj, new)
    owners = {e["manager"]: e for e in new["metadata"]["managedFields"]}
    assert owners["creator"] == creator
    assert owners["kubelet"]["fieldsV1"] == {"f:status": {"f:phase": {}, "f:podIP": {}}}
    assert owners["kubelet"]["subresource"] == "status"


def test_a_status_write_takes_status_fields_from_their_owner() -> None:
    obj = pod(phase="Pending")
    obj["status"]["message"] = "waiting"
    pod_tracker("creator", subresource="status").track(None, obj)
    new = {**pod(phase="Pending", message="started"), "metadata": obj["metadata"]}
    pod_tracker("kubelet", subresource="status").track(obj, new)
    owners = {e["manager"]: e["fieldsV1"] for e in new["metadata"]["managedFields"]}
    assert owners == {"creator": {"f:status": {"f:phase": {}}}, "kubelet": {"f:status": {"f:message": {}}}}


def test_entries_a_client_sends_are_rewritten_in_kubes_order() -> None:
    obj = cm(a="1", b="2")
    tracker("creator").track(None, obj)
    sent = [{"manager": "creator", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:b": {}, ".": {}, "f:a": {}}}}]
    new = {**cm(a="1", b="2"), "metadata": {"name": "c", "managedFields": sent}}
    tracker("editor").track(obj, new)
    assert list(new["metadata"]["managedFields"][0]["fieldsV1"]["f:data"]) == [".", "f:a", "f:b"]


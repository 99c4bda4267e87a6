"""Properties of strategic merge patch that hold for any object and any directive-free patch."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from minikube_py.api.jsoncopy import without_nulls
from minikube_py.api.strategicpatch import apply_strategic_merge_patch
from minikube_py.apiserver.patch import merge_patch

NAMES = st.sampled_from(["nginx", "sidecar", "init", "proxy", "logger", "db"])
TEXT = st.text(alphabet="abc:1.", max_size=4)
PORTS = st.lists(st.fixed_dictionaries({"containerPort": st.integers(1, 5)},
                                       optional={"protocol": st.sampled_from(["TCP", "UDP"])}),
                 max_size=3, unique_by=lambda port: port["containerPort"])
ENV = st.lists(st.fixed_dictionaries({"name": st.sampled_from("ABCD")}, optional={"value": TEXT}),
               max_size=3, unique_by=lambda var: var["name"])
CONTAINER_FIELDS = {"image": TEXT, "args": st.lists(TEXT, max_size=3), "ports": PORTS, "env": ENV}


def containers(fields: dict[str, Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    one = st.fixed_dictionaries({"name": NAMES}, optional=fields)
    return st.lists(one, max_size=4, unique_by=lambda container: container["name"])


LIVE_CONTAINERS = containers(CONTAINER_FIELDS)
# A patch may also delete a container's fields with null.
PATCH_CONTAINERS = containers({key: st.none() | value for key, value in CONTAINER_FIELDS.items()})
FINALIZERS = st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=4)


def pod(containers: list[dict[str, Any]], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", **metadata},
            "spec": {"containers": containers}}


def apply(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    return apply_strategic_merge_patch(obj, patch, "", "v1", obj["kind"])


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


@given(LIVE_CONTAINERS, FINALIZERS)
def test_an_empty_patch_is_the_identity(live: list[dict[str, Any]], finalizers: list[str]) -> None:
    obj = pod(live, finalizers=finalizers)
    assert apply(obj, {}) == obj


@given(LIVE_CONTAINERS, PATCH_CONTAINERS)
def test_a_list_keyed_by_name_never_loses_an_element_the_patch_does_not_mention(
        live: list[dict[str, Any]], patch: list[dict[str, Any]]) -> None:
    result = by_name(apply(pod(live), {"spec": {"containers": patch}})["spec"]["containers"])
    mentioned = {container["name"] for container in patch}
    for container in live:
        if container["name"] not in mentioned:
            assert result[container["name"]] == container


@given(LIVE_CONTAINERS, PATCH_CONTAINERS)
def test_every_element_the_patch_mentions_gets_the_patch_scalars(
        live: list[dict[str, Any]], patch: list[dict[str, Any]]) -> None:
    result = by_name(apply(pod(live), {"spec": {"containers": patch}})["spec"]["containers"])
    for container in patch:
        merged = result[container["name"]]
        if container.get("image") is not None:
            assert merged["image"] == container["image"]
        if "image" in container and container["image"] is None:
            assert merged.get("image") is None


@given(LIVE_CONTAINERS, PATCH_CONTAINERS)
def test_mentioned_elements_keep_the_patch_order_and_the_others_the_live_order(
        live: list[dict[str, Any]], patch: list[dict[str, Any]]) -> None:
    result = [c["name"] for c in apply(pod(live), {"spec": {"containers": patch}})["spec"]["containers"]]
    mentioned = [c["name"] for c in patch]
    assert [name for name in result if name in mentioned] == mentioned
    assert [name for name in result if name not in mentioned] == [
        c["name"] for c in live if c["name"] not in mentioned]


@given(LIVE_CONTAINERS, PATCH_CONTAINERS, FINALIZERS, FINALIZERS)
def test_applying_a_directive_free_patch_twice_is_applying_it_once(
        live: list[dict[str, Any]], patch: list[dict[str, Any]], finalizers: list[str],
        added: list[str]) -> None:
    body = {"metadata": {"finalizers": added}, "spec": {"containers": patch}}
    once = apply(pod(live, finalizers=finalizers), body)
    assert without_nulls(apply(once, body)) == without_nulls(once)


@given(FINALIZERS, FINALIZERS, FINALIZERS)
def test_finalizers_are_a_set_union_minus_the_delete_list(
        live: list[str], added: list[str], deleted: list[str]) -> None:
    # The union comes first because the patch lists `finalizers` first (Go's order would be random).
    body = {"metadata": {"finalizers": added, "$deleteFromPrimitiveList/finalizers": deleted}}
    result = apply(pod([], finalizers=live), body)["metadata"].get("finalizers", [])
    assert len(result) == len(set(result))
    assert set(result) == (set(live) | set(added)) - set(deleted)


JSON_LEAVES = st.none() | st.booleans() | st.integers(-3, 3) | TEXT
STRING_MAPS = st.dictionaries(st.sampled_from(["app", "tier", "env"]), st.none() | TEXT, max_size=3)


@given(st.dictionaries(st.sampled_from(["app", "tier"]), TEXT), STRING_MAPS, STRING_MAPS,
       st.dictionaries(st.sampled_from(["a", "b"]), JSON_LEAVES | st.dictionaries(st.just("x"), JSON_LEAVES)))
def test_without_lists_it_is_a_json_merge_patch(labels: dict[str, str], label_patch: dict[str, Any],
                                                data_patch: dict[str, Any], extra: dict[str, Any]) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": labels},
                 "data": {"app": "web"}}
    body = {"metadata": {"labels": label_patch}, "data": data_patch, "extra": extra}
    assert apply(configmap, body) == merge_patch(configmap, body)

"""The scale subresource of custom resources: it reads and writes where the CRD's `subresources.scale` says.

`specReplicasPath` is the Scale's `spec.replicas`, `statusReplicasPath` its `status.replicas` (0 when
absent) and `labelSelectorPath` its `status.selector` (a string, "" when absent); writes change only the
spec replicas path. Bad counts and paths that cannot be followed get kube's errors, never a silent write.
"""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest

from tests.apiserver.test_custom_resources import CRD_URL, wait_established

MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
SIZE_SCALE = {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.readyNodes",
              "labelSelectorPath": ".status.selector"}


def definition(group: str, scale: dict) -> dict:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"databases.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "databases", "singular": "database", "kind": "Database"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema,
                               "subresources": {"status": {}, "scale": scale}}]},
    }


def databases(api: httpx.Client, namespace: str, scale: dict) -> str:
    """The URL of the databases in `namespace`, served by a new CRD whose scale subresource is `scale`."""
    group = f"scale-{uuid.uuid4().hex[:8]}.example.com"
    assert api.post(CRD_URL, json=definition(group, scale)).status_code == 201
    wait_established(api, f"databases.{group}")
    return f"/apis/{group}/v1/namespaces/{namespace}/databases"


@pytest.fixture()
def sized(api: httpx.Client, namespace: str) -> str:
    return databases(api, namespace, SIZE_SCALE)


def create(api: httpx.Client, url: str, name: str, spec: dict) -> dict:
    group_version = url.split("/")[2] + "/v1"
    r = api.post(url, json={"apiVersion": group_version, "kind": "Database", "metadata": {"name": name},
                            "spec": spec})
    assert r.status_code == 201, r.text
    return r.json()


def set_status(api: httpx.Client, url: str, name: str, status: dict) -> None:
    r = api.patch(f"{url}/{name}/status", content=json.dumps({"status": status}).encode(), headers=MERGE)
    assert r.status_code == 200, r.text


def scale_body(name: str, replicas: object) -> dict:
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name},
            "spec": {"replicas": replicas}}


def test_the_scale_reads_the_crd_paths(api: httpx.Client, sized: str) -> None:
    created = create(api, sized, "db", {"size": 3, "replicas": 9})
    set_status(api, sized, "db", {"readyNodes": 2, "selector": "app=db,tier in (data)"})
    scale = api.get(f"{sized}/db/scale").json()
    live = api.get(f"{sized}/db").json()
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["metadata"]["uid"] == created["metadata"]["uid"]
    assert scale["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 2, "selector": "app=db,tier in (data)"}


def test_absent_status_replicas_and_selector_read_as_zero_and_empty(api: httpx.Client, namespace: str) -> None:
    url = databases(api, namespace, {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready"})
    create(api, url, "db", {"size": 1})
    assert api.get(f"{url}/db/scale").json()["status"] == {"replicas": 0, "selector": ""}


@pytest.mark.parametrize("write", ["put", "merge", "json"])
def test_writing_the_scale_changes_only_the_spec_replicas_path(api: httpx.Client, sized: str, write: str) -> None:
    create(api, sized, "db", {"size": 3, "replicas": 9})
    if write == "put":
        r = api.put(f"{sized}/db/scale", json=scale_body("db", 5))
    elif write == "merge":
        r = api.patch(f"{sized}/db/scale", content=b'{"spec":{"replicas":5}}', headers=MERGE)
    else:
        r = api.patch(f"{sized}/db/scale", content=b'[{"op":"replace","path":"/spec/replicas","value":5}]',
                      headers=JSON_PATCH)
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"replicas": 5}
    live = api.get(f"{sized}/db").json()
    assert live["spec"] == {"size": 5, "replicas": 9}
    assert live["metadata"]["generation"] == 2
    assert r.json()["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]


def test_a_scale_write_creates_the_objects_on_the_way(api: httpx.Client, namespace: str) -> None:
    url = databases(api, namespace, {"specReplicasPath": ".spec.cluster.nodes",
                                     "statusReplicasPath": ".status.nodes"})
    create(api, url, "db", {"engine": "pg"})
    r = api.patch(f"{url}/db/scale", content=b'{"spec":{"replicas":2}}', headers=MERGE)
    assert r.status_code == 200, r.text
    assert api.get(f"{url}/db").json()["spec"] == {"engine": "pg", "cluster": {"nodes": 2}}


def test_an_absent_spec_replicas_cannot_be_read_but_can_be_written(api: httpx.Client, sized: str) -> None:
    create(api, sized, "db", {"engine": "pg"})
    r = api.get(f"{sized}/db/scale")
    assert r.status_code == 500
    assert r.json()["message"] == 'Internal error occurred: the spec replicas field ".spec.size" does not exist'
    r = api.patch(f"{sized}/db/scale", content=b"{}", headers=MERGE)
    assert r.status_code == 400
    assert r.json()["message"] == 'the spec replicas field ".spec.size" cannot be empty'
    r = api.patch(f"{sized}/db/scale", content=b'{"spec":{"replicas":4}}', headers=MERGE)
    assert r.status_code == 200, r.text
    assert api.get(f"{sized}/db").json()["spec"] == {"engine": "pg", "size": 4}


@pytest.mark.parametrize("write", ["put", "merge"])
def test_a_negative_count_makes_the_custom_resource_invalid(api: httpx.Client, sized: str, write: str) -> None:
    create(api, sized, "db", {"size": 3})
    if write == "put":
        r = api.put(f"{sized}/db/scale", json=scale_body("db", -1))
    else:
        r = api.patch(f"{sized}/db/scale", content=b'{"spec":{"replicas":-1}}', headers=MERGE)
    assert r.status_code == 422, r.text
    group = sized.split("/")[2]
    assert r.json()["message"] == (f'Database.{group} "db" is invalid: '
                                   ".spec.size: Invalid value: -1: should be a non-negative integer")
    assert r.json()["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": ".spec.size",
                                              "message": "Invalid value: -1: should be a non-negative integer"}]
    assert api.get(f"{sized}/db").json()["spec"] == {"size": 3}


@pytest.mark.parametrize("replicas,type_name", [("two", "string"), (1.5, "number 1.5")])
@pytest.mark.parametrize("write,status", [("put", 400), ("merge", 422)])
def test_a_count_that_is_not_an_integer_cannot_be_decoded(api: httpx.Client, sized: str, write: str, status: int,
                                                           replicas: object, type_name: str) -> None:
    """As kube: a body that is no Scale is a 400, a patch that makes none is an invalid `patch` (422)."""
    create(api, sized, "db", {"size": 3})
    if write == "put":
        r = api.put(f"{sized}/db/scale", json=scale_body("db", replicas))
    else:
        r = api.patch(f"{sized}/db/scale", content=json.dumps({"spec": {"replicas": replicas}}).encode(),
                      headers=MERGE)
    assert r.status_code == status, r.text
    assert f"cannot unmarshal {type_name} into Go struct field ScaleSpec.spec.replicas of type int32" in (
        r.json()["message"])
    assert api.get(f"{sized}/db").json()["spec"] == {"size": 3}


@pytest.mark.parametrize("write", ["put", "merge"])
def test_a_scale_without_a_count_asks_for_zero(api: httpx.Client, sized: str, write: str) -> None:
    create(api, sized, "db", {"size": 3})
    if write == "put":
        r = api.put(f"{sized}/db/scale", json=scale_body("db", None))
    else:
        r = api.patch(f"{sized}/db/scale", content=b'{"spec":{"replicas":null}}', headers=MERGE)
    assert r.status_code == 200, r.text
    assert api.get(f"{sized}/db").json()["spec"] == {"size": 0}


@pytest.mark.parametrize("scale,spec,status,message", [
    ({"specReplicasPath": ".spec.size.count", "statusReplicasPath": ".status.ready"}, {"size": "small"}, {},
     ".spec.size.count accessor error: small is of the type string, expected map[string]interface{}"),
    ({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready"}, {"size": "big"}, {},
     ".spec.size accessor error: big is of the type string, expected int64"),
    ({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready"}, {"size": 1}, {"ready": [1]},
     ".status.ready accessor error: [1] is of the type []interface {}, expected int64"),
    (SIZE_SCALE, {"size": 1}, {"selector": {"app": "db"}},
     ".status.selector accessor error: map[app:db] is of the type map[string]interface {}, expected string"),
])
def test_a_path_that_cannot_be_followed_is_a_bad_request(api: httpx.Client, namespace: str, scale: dict,
                                                         spec: dict, status: dict, message: str) -> None:
    url = databases(api, namespace, scale)
    create(api, url, "db", spec)
    if status:
        set_status(api, url, "db", status)
    before = api.get(f"{url}/db").json()
    for r in (api.get(f"{url}/db/scale"),
              api.patch(f"{url}/db/scale", content=b'{"spec":{"replicas":2}}', headers=MERGE),
              api.put(f"{url}/db/scale", json=scale_body("db", 2))):
        assert r.status_code == 400, r.text
        assert r.json()["message"] == message
    assert api.get(f"{url}/db").json() == before


def test_changed_scale_paths_are_followed(api: httpx.Client, sized: str) -> None:
    create(api, sized, "db", {"size": 3, "nodes": 7})
    name = "databases." + sized.split("/")[2]
    crd = api.get(f"{CRD_URL}/{name}").json()
    crd["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = ".spec.nodes"
    assert api.put(f"{CRD_URL}/{name}", json=crd).status_code == 200
    deadline = time.monotonic() + 10
    while (replicas := api.get(f"{sized}/db/scale").json()["spec"]["replicas"]) != 7:
        assert time.monotonic() < deadline, f"the scale still reads {replicas}"
        time.sleep(0.05)

"""CustomResourceDefinitions: once created, their resources are served like built-in ones."""

from __future__ import annotations

import time

import httpx
import pytest

CRD_URL = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


def crd(group: str, scope: str = "Namespaced") -> dict:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group, "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"],
                      "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema,
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                          "statusReplicasPath": ".status.replicas"}},
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                     {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1},
                     {"name": "Ready", "type": "string",
                      "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}]},
                {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
            ],
        },
    }


def wait_established(api: httpx.Client, name: str) -> dict:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        live = api.get(f"{CRD_URL}/{name}").json()
        if any(c["type"] == "Established" and c["status"] == "True"
               for c in (live.get("status") or {}).get("conditions") or []):
            return live
        time.sleep(0.05)
    raise AssertionError(f"CRD {name} never became Established")


@pytest.fixture()
def widgets(api: httpx.Client, namespace: str) -> str:
    group = f"{namespace}.example.com"
    assert api.post(CRD_URL, json=crd(group)).status_code == 201
    wait_established(api, f"widgets.{group}")
    return group


def widget(name: str, size: str = "small", **spec: object) -> dict:
    return {"kind": "Widget", "metadata": {"name": name}, "spec": {"size": size, **spec}}


def test_an_established_crd_is_discovered_and_served(api: httpx.Client, namespace: str, widgets: str) -> None:
    crd_obj = api.get(f"{CRD_URL}/widgets.{widgets}").json()
    assert crd_obj["status"]["acceptedNames"]["kind"] == "Widget"
    assert "customresourcecleanup.apiextensions.k8s.io" in crd_obj["metadata"]["finalizers"]
    resources = {r["name"] for r in api.get(f"/apis/{widgets}/v1").json()["resources"]}
    assert {"widgets", "widgets/status", "widgets/scale"} <= resources
    groups = {i["metadata"]["name"]: i for i in api.get("/apis", headers={"Accept": AGGREGATED}).json()["items"]}
    assert [v["version"] for v in groups[widgets]["versions"]] == ["v1", "v1beta1"]
    url = f"/apis/{widgets}/v1/namespaces/{namespace}/widgets"
    created = api.post(url, json=dict(widget("w1", replicas=2), apiVersion=f"{widgets}/v1"))
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["generation"] == 1
    assert api.get(f"{url}/w1").json()["spec"] == {"size": "small", "replicas": 2}


def test_versions_share_objects_with_none_conversion(api: httpx.Client, namespace: str, widgets: str) -> None:
    api.post(f"/apis/{widgets}/v1/namespaces/{namespace}/widgets",
             json=dict(widget("shared"), apiVersion=f"{widgets}/v1"))
    other = api.get(f"/apis/{widgets}/v1beta1/namespaces/{namespace}/widgets/shared").json()
    assert other["apiVersion"] == f"{widgets}/v1beta1" and other["spec"]["size"] == "small"


def test_tables_use_additional_printer_columns(api: httpx.Client, namespace: str, widgets: str) -> None:
    url = f"/apis/{widgets}/v1/namespaces/{namespace}/widgets"
    api.post(url, json=dict(widget("t", size="large", replicas=3), apiVersion=f"{widgets}/v1"))
    status = api.get(f"{url}/t").json()
    status["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    assert api.put(f"{url}/t/status", json=status).status_code == 200
    table = api.get(url, headers={"Accept": TABLE}).json()
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Size", 0), ("Replicas", 1), ("Ready", 0)]
    assert table["rows"][0]["cells"] == ["t", "large", 3, "True"]


def test_scale_subresource_of_a_custom_resource(api: httpx.Client, namespace: str, widgets: str) -> None:
    url = f"/apis/{widgets}/v1/namespaces/{namespace}/widgets"
    api.post(url, json=dict(widget("s", replicas=1), apiVersion=f"{widgets}/v1"))
    r = api.patch(f"{url}/s/scale", content=b'{"spec":{"replicas":5}}',
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200 and r.json()["spec"]["replicas"] == 5
    assert api.get(f"{url}/s").json()["spec"]["replicas"] == 5


def test_deleting_the_crd_deletes_its_objects(api: httpx.Client, namespace: str, widgets: str) -> None:
    url = f"/apis/{widgets}/v1/namespaces/{namespace}/widgets"
    api.post(url, json=dict(widget("doomed"), apiVersion=f"{widgets}/v1"))
    assert api.delete(f"{CRD_URL}/widgets.{widgets}").status_code == 200
    deadline = time.monotonic() + 10
    while api.get(f"{CRD_URL}/widgets.{widgets}").status_code != 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert api.get(f"{CRD_URL}/widgets.{widgets}").status_code == 404
    assert api.get(url).status_code == 404
    # recreated, the CRD starts empty: the old objects were removed from etcd, not just hidden
    assert api.post(CRD_URL, json=crd(widgets)).status_code == 201
    wait_established(api, f"widgets.{widgets}")
    assert api.get(url).json()["items"] == []


def typed_crd(group: str) -> dict:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
        "size": {"type": "string", "enum": ["small", "large"]},
        "replicas": {"type": "integer", "minimum": 0, "default": 1}}}}}
    body = crd(group)
    for version in body["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": schema}
    return body


@pytest.fixture()
def typed_widgets(api: httpx.Client, namespace: str) -> str:
    group = f"typed-{namespace}.example.com"
    assert api.post(CRD_URL, json=typed_crd(group)).status_code == 201
    wait_established(api, f"widgets.{group}")
    return group


def test_custom_resources_are_defaulted_and_pruned_by_their_schema(api: httpx.Client, namespace: str,
                                                                    typed_widgets: str) -> None:
    url = f"/apis/{typed_widgets}/v1/namespaces/{namespace}/widgets"
    body = dict(widget("d", size="large", color="red"), apiVersion=f"{typed_widgets}/v1")
    created = api.post(url, json=body)
    assert created.status_code == 201, created.text
    assert created.json()["spec"] == {"size": "large", "replicas": 1}


@pytest.mark.parametrize("spec,field", [
    ({"size": "huge"}, "spec.size"),
    ({"size": "small", "replicas": -1}, "spec.replicas"),
    ({"size": "small", "replicas": "two"}, "spec.replicas"),
    ({}, "spec.size"),
])
def test_custom_resources_that_violate_their_schema_are_invalid(api: httpx.Client, namespace: str,
                                                                 typed_widgets: str, spec: dict, field: str) -> None:
    url = f"/apis/{typed_widgets}/v1/namespaces/{namespace}/widgets"
    r = api.post(url, json={"apiVersion": f"{typed_widgets}/v1", "kind": "Widget", "metadata": {"name": "bad"},
                            "spec": spec})
    assert r.status_code == 422, r.text
    assert field in {c["field"] for c in r.json()["details"]["causes"]}
    assert api.get(f"{url}/bad").status_code == 404


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}},
    {"type": "object", "properties": {"spec": {"type": "object", "additionalProperties": {"type": "string"},
                                               "properties": {"a": {"type": "string"}}}}},
])
def test_non_structural_crd_schemas_are_invalid(api: httpx.Client, namespace: str, schema: dict) -> None:
    body = crd(f"nonstructural-{namespace}.example.com")
    for version in body["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": schema}
    r = api.post(CRD_URL, json=body)
    assert r.status_code == 422, r.text
    assert any("openAPIV3Schema" in c["field"] for c in r.json()["details"]["causes"])


@pytest.mark.parametrize("mode,status,warned", [("Strict", 400, False), ("Warn", 201, True), ("Ignore", 201, False)])
def test_field_validation_applies_to_custom_resources(api: httpx.Client, namespace: str, typed_widgets: str,
                                                      mode: str, status: int, warned: bool) -> None:
    url = f"/apis/{typed_widgets}/v1/namespaces/{namespace}/widgets"
    body = {"apiVersion": f"{typed_widgets}/v1", "kind": "Widget", "metadata": {"name": f"fv-{mode.lower()}"},
            "spec": {"size": "small", "colour": "red"}}
    r = api.post(url, params={"fieldValidation": mode}, json=body)
    assert r.status_code == status, r.text
    if status == 400:
        assert 'strict decoding error: unknown field "spec.colour"' in r.json()["message"]
    assert ('unknown field \\"spec.colour\\"' in r.headers.get("warning", "")) == warned

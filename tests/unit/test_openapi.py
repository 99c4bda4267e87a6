"""The OpenAPI v3 documents: what kubectl's validation, explain and apply need to find in them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from minikube_py.api import schemas
from minikube_py.api.kinds import SCALE, Registry, Resource, Subresource, default_registry
from minikube_py.apiserver import openapi
from minikube_py.apiserver.openapi import OpenAPIDocuments

REGISTRY = default_registry()
DOCS = {path: orjson.loads(body) for path, body in OpenAPIDocuments(REGISTRY).documents.items()}


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                yield path, method, op


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def patch_op(res: Resource) -> dict[str, Any]:
    doc = DOCS[openapi.gv_path(res.group, res.version)]
    return next(op for _, method, op in operations(doc)
                if method == "patch" and op["x-kubernetes-group-version-kind"]["kind"] == res.kind)


def test_every_served_group_version_has_a_document_in_the_index() -> None:
    docs = OpenAPIDocuments(REGISTRY)
    index = docs.index()["paths"]
    served = {openapi.gv_path(g, v) for g, versions in REGISTRY.group_versions().items() for v in versions}
    assert set(index) == served == set(DOCS)
    for path, entry in index.items():
        digest = hashlib.sha512(docs.documents[path]).hexdigest().upper()
        assert entry["serverRelativeURL"] == f"/openapi/v3/{path}?hash={digest}"


def test_hashes_are_stable_across_builds() -> None:
    assert OpenAPIDocuments(default_registry()).hashes == OpenAPIDocuments(default_registry()).hashes


@pytest.mark.parametrize("res", [r for r in REGISTRY.resources if "patch" in r.verbs], ids=lambda r: r.group_resource
                         + "/" + r.version)
def test_every_patchable_resource_has_a_patch_operation_kubectl_can_validate_with(res: Resource) -> None:
    op = patch_op(res)
    assert op["x-kubernetes-group-version-kind"] == {"group": res.group, "version": res.version, "kind": res.kind}
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in op["parameters"])
    assert {"application/json-patch+json", "application/merge-patch+json"} <= set(op["requestBody"]["content"])
    schema = DOCS[openapi.gv_path(res.group, res.version)]["components"]["schemas"][
        openapi.schema_name(res.group, res.version, res.kind)]
    assert op["x-kubernetes-group-version-kind"] in schema["x-kubernetes-group-version-kind"]


@pytest.mark.parametrize("path", sorted(DOCS))
def test_every_reference_resolves_inside_its_document(path: str) -> None:
    doc = DOCS[path]
    missing = {ref for ref in refs(doc) if ref.removeprefix("#/components/schemas/") not in
               doc["components"]["schemas"]}
    assert not missing


@pytest.mark.parametrize("path", sorted(DOCS))
def test_schemas_are_openapi_3_not_json_schema(path: str) -> None:
    for name, schema in DOCS[path]["components"]["schemas"].items():
        text = orjson.dumps(schema).decode()
        assert '"null"' not in text and "#/$defs/" not in text, name
        for field in ("apiVersion", "kind"):
            assert "enum" not in (schema.get("properties") or {}).get(field, {}), name


def test_the_core_document_carries_the_shared_types_with_their_formats() -> None:
    components = DOCS["api/v1"]["components"]["schemas"]
    assert components["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"] == "date-time"
    assert components["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert components["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["oneOf"] == [{"type": "integer"},
                                                                                      {"type": "string"}]
    assert "oneOf" in components["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert "annotations" in components["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]


def test_a_reference_with_a_description_is_wrapped_in_all_of_as_kube_writes_it() -> None:
    spec = DOCS["api/v1"]["components"]["schemas"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert spec["description"]
    containers = DOCS["api/v1"]["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert containers["x-kubernetes-patch-merge-key"] == "name"


OPERATION_IDS = [
    ("api/v1", "/api/v1/namespaces/{namespace}/pods/{name}", "get", "readCoreV1NamespacedPod", "get"),
    ("api/v1", "/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", "list"),
    ("api/v1", "/api/v1/namespaces/{namespace}/pods", "delete", "deleteCoreV1CollectionNamespacedPod",
     "deletecollection"),
    ("api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/binding", "post", "createCoreV1NamespacedPodBinding",
     "post"),
    ("api/v1", "/api/v1/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", "put"),
    ("api/v1", "/api/v1/nodes/{name}/status", "patch", "patchCoreV1NodeStatus", "patch"),
    ("apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "put",
     "replaceAppsV1NamespacedDeploymentScale", "put"),
    ("apis/rbac.authorization.k8s.io/v1", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "post",
     "createRbacAuthorizationV1ClusterRole", "post"),
]


@pytest.mark.parametrize("doc, path, method, operation_id, action", OPERATION_IDS, ids=[c[3] for c in OPERATION_IDS])
def test_operations_are_named_as_in_kube(doc: str, path: str, method: str, operation_id: str, action: str) -> None:
    op = DOCS[doc]["paths"][path][method]
    assert (op["operationId"], op["x-kubernetes-action"]) == (operation_id, action)


def test_the_scale_subresource_speaks_autoscaling_v1_scale() -> None:
    op = DOCS["apis/apps/v1"]["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["get"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert "io.k8s.api.autoscaling.v1.Scale" in DOCS["apis/apps/v1"]["components"]["schemas"]
    assert openapi.tag("rbac.authorization.k8s.io", "v1") == "rbacAuthorization_v1"


def test_patch_operations_list_the_patch_bodies_each_kind_takes() -> None:
    docs = OpenAPIDocuments(default_registry()).documents
    op = orjson.loads(docs["apis/apps/v1"])["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    assert set(op["patch"]["requestBody"]["content"]) == {
        "application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json",
        "application/apply-patch+yaml"}


def crontab(version: str = "v1") -> Resource:
    return Resource("stable.example.com", version, "CronTab", "crontabs", custom=True,
                    subresources=(Subresource("status", "CronTab"), SCALE))


def test_custom_resources_get_a_document_that_follows_the_registry() -> None:
    registry = Registry(default_registry().resources)
    docs = OpenAPIDocuments(registry, custom_schema=lambda res: {
        "type": "object", "properties": {"spec": {"type": "object"}}})
    core_hash = docs.hashes["api/v1"]
    registry.add(crontab())
    doc = orjson.loads(docs.documents["apis/stable.example.com/v1"])
    schema = doc["components"]["schemas"]["com.example.stable.v1.CronTab"]
    assert schema["properties"]["spec"] == {"type": "object"}
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "stable.example.com", "version": "v1",
                                                          "kind": "CronTab"}]
    path = doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
    assert "application/strategic-merge-patch+json" not in path["patch"]["requestBody"]["content"]
    assert docs.hashes["api/v1"] == core_hash
    registry.remove("stable.example.com", "v1", "crontabs")
    assert "apis/stable.example.com/v1" not in docs.index()["paths"]


def test_a_custom_resource_without_a_schema_is_an_open_object() -> None:
    registry = Registry((crontab(),))
    doc = orjson.loads(OpenAPIDocuments(registry).documents["apis/stable.example.com/v1"])
    schema = doc["components"]["schemas"]["com.example.stable.v1.CronTab"]
    assert schema["x-kubernetes-preserve-unknown-fields"] is True
    assert "io.k8s.api.autoscaling.v1.Scale" in doc["components"]["schemas"]
    assert not {r for r in refs(doc) if r.removeprefix("#/components/schemas/") not in doc["components"]["schemas"]}
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "stable.example.com", "version": "v1",
                                                          "kind": "CronTab"}]


def test_only_the_current_hash_may_be_cached_for_good() -> None:
    docs = OpenAPIDocuments(REGISTRY)
    current = docs.hashes["api/v1"]
    assert docs.headers("api/v1", current) == {"ETag": f'"{current}"', "Cache-Control": "public, immutable",
                                               "Vary": "Accept"}
    assert docs.headers("api/v1", "STALE") == {"ETag": f'"{current}"'}


def test_openapi_schema_keeps_every_kubernetes_extension() -> None:
    for name, definition in schemas.definitions().items():
        source = orjson.dumps(definition).decode()
        converted = orjson.dumps(schemas.openapi_schema(name)).decode()
        for extension in ("x-kubernetes-patch-merge-key", "x-kubernetes-list-type", "x-kubernetes-map-type",
                          "x-kubernetes-group-version-kind", "x-kubernetes-patch-strategy"):
            assert source.count(f'"{extension}"') == converted.count(f'"{extension}"'), (name, extension)

"""OpenAPI v3: the index at `/openapi/v3` and one document per group-version.

kubectl reads these before `create -f`, `replace -f` and `apply`: it looks for a PATCH operation whose
`x-kubernetes-group-version-kind` names the manifest's kind and that accepts the `fieldValidation` query
parameter; finding one, it leaves validation to the server (`fieldValidation=Strict`). Without any OpenAPI
those commands refuse to run unless given `--validate=false`.

The documents built here describe every served resource's operations with schemas that carry only the
kind's identity; the full upstream schemas (descriptions for `kubectl explain`, merge keys for strategic
merge patch) are a later step. Strategic merge patch is therefore not advertised as a PATCH content type,
so kubectl does not try to compute patches from these skeleton schemas.

Each document is built once and served with its content hash in the index URL and as an ETag, so clients
can cache it.
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from typing import Any

import orjson

from ..api.kinds import Registry, Resource

PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json")


def gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(res: Resource) -> str:
    """kube's definition name: the group's first label (`networking.k8s.io` → `networking`)."""
    if res.group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{res.version}.{res.kind}"
    package = res.group.split(".")[0] if res.group else "core"
    return f"io.k8s.api.{package}.{res.version}.{res.kind}"


def _gvk(res: Resource) -> dict[str, str]:
    return {"group": res.group, "version": res.version, "kind": res.kind}


def _object_path(res: Resource) -> str:
    base = "/" + gv_path(res.group, res.version)
    if res.namespaced:
        return f"{base}/namespaces/{{namespace}}/{res.plural}/{{name}}"
    return f"{base}/{res.plural}/{{name}}"


def _query(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _reference(res: Resource) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{schema_name(res)}"}


def _operations(res: Resource) -> dict[str, Any]:
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": _reference(res)}}}}
    common = {"x-kubernetes-group-version-kind": _gvk(res)}
    ops: dict[str, Any] = {}
    if "get" in res.verbs:
        ops["get"] = {"operationId": f"read{res.kind}", "responses": ok, "x-kubernetes-action": "get", **common}
    if "update" in res.verbs:
        ops["put"] = {"operationId": f"replace{res.kind}", "parameters": [_query("fieldValidation")],
                      "requestBody": {"content": {"application/json": {"schema": _reference(res)}}},
                      "responses": ok, "x-kubernetes-action": "put", **common}
    if "patch" in res.verbs:
        ops["patch"] = {"operationId": f"patch{res.kind}",
                        "parameters": [_query("fieldValidation"), _query("fieldManager"), _query("dryRun")],
                        "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in PATCH_TYPES},
                                        "required": True},
                        "responses": ok, "x-kubernetes-action": "patch", **common}
    if "delete" in res.verbs:
        ops["delete"] = {"operationId": f"delete{res.kind}", "responses": ok, "x-kubernetes-action": "delete",
                         **common}
    return ops


def _schema(res: Resource) -> dict[str, Any]:
    return {"type": "object", "description": f"{res.kind} ({res.api_version})",
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "metadata": {"type": "object"}},
            "x-kubernetes-group-version-kind": [_gvk(res)]}


class OpenAPIDocuments:
    """The index and per-group-version documents for one registry, built once."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    @cached_property
    def documents(self) -> dict[str, bytes]:
        docs = {}
        for group, versions in self.registry.group_versions().items():
            for version in versions:
                resources = self.registry.in_group_version(group, version)
                doc = {
                    "openapi": "3.0.0",
                    "info": {"title": "Kubernetes", "version": "v1.32.4"},
                    "paths": {_object_path(r): _operations(r) for r in resources},
                    "components": {"schemas": {schema_name(r): _schema(r) for r in resources}},
                }
                docs[gv_path(group, version)] = orjson.dumps(doc)
        return docs

    @cached_property
    def hashes(self) -> dict[str, str]:
        return {path: hashlib.sha512(doc).hexdigest()[:64].upper() for path, doc in self.documents.items()}

    def index(self) -> dict[str, Any]:
        return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
                          for path, digest in self.hashes.items()}}

"""OpenAPI v3: the index at `/openapi/v3` and one document per served group-version.

kubectl reads these documents for three things:
* `create -f`, `replace -f` and `apply` look for a PATCH operation whose `x-kubernetes-group-version-kind`
  names the manifest's kind and that takes the `fieldValidation` query parameter; finding one, they leave
  validation to the server (`fieldValidation=Strict`). Without any OpenAPI those commands refuse to run.
* `kubectl explain` finds the kind from a path's operation, then prints the component schema carrying the
  same `x-kubernetes-group-version-kind`: descriptions, types (`<[]Container>`), `-required-`.
* client-side `apply` computes a strategic merge patch from these schemas (merge keys and strategies), but
  only for kinds whose PATCH operation lists `application/strategic-merge-patch+json`.

A document is what kube-apiserver serves for the group-version: a path per served resource, verb and
subresource with kube's operationIds and `x-kubernetes-action`, and the upstream schemas of its kinds and
everything they reference (`api/schemas.py` turns the packaged JSON Schema back into kube's OpenAPI form).
Custom resources get their CRD version's `openAPIV3Schema`, which the `custom_schema` callback supplies
(an open object without one), completed as kube completes it (`custom_resource_schema`).

Documents are built when first asked for and again whenever the resources of their group-version change
(custom resources come and go); each is served with its SHA-512 as ETag and in the index URL's `hash`, and
a request naming the current hash may be cached for good (`immutable`), as kube does.

Each PATCH operation lists the patch bodies the resource takes (`patch.patch_types`): kubectl computes a
client-side apply's strategic merge patch from these schemas when it sees that content type.

The subresources the kubelet serves are documented as kube documents them: `pods/log` as a read answering
text, and the connecters (`pods/exec`, `pods/attach`, `pods/portforward`, `nodes/proxy`) with one `connect`
operation per HTTP method, named by their options kind (`PodExecOptions`), answering a string. Their
options (`command`, `container`, ...) are left out of the parameters.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ..api import schemas
from ..api.kinds import STREAM, Registry, Resource, Subresource
from .patch import patch_types

JSON = "application/json"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
STATUS_SCHEMA, DELETE_OPTIONS, PATCH_SCHEMA = META + "Status", META + "DeleteOptions", META + "Patch"
RESOURCE_LIST = META + "APIResourceList"
INFO = {"title": "Kubernetes", "version": "v1.32.4"}
SECURITY_SCHEMES = {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
                                    "description": "Bearer Token authentication"}}

# Given a custom resource version, its CRD's `schema.openAPIV3Schema` (None if the CRD has none).
CustomSchema = Callable[[Resource], dict[str, Any] | None]


def gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(group: str, version: str, kind: str, custom: bool = False) -> str:
    """A kind's component name: the upstream definition's, or `<reversed group>.<version>.<Kind>` for a
    custom resource (`stable.example.com` → `com.example.stable.v1.CronTab`), as kube names them."""
    if not custom:
        name = schemas.definition_name(group, version, kind)
        if name:
            return name
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


def operation_prefix(group: str, version: str) -> str:
    """`CoreV1`, `AppsV1`, `RbacAuthorizationV1`: the group-version part of kube's operationIds."""
    words = (group.removesuffix(".k8s.io") or "core").replace("-", ".").split(".")
    return "".join(w[:1].upper() + w[1:] for w in words) + version[:1].upper() + version[1:]


def tag(group: str, version: str) -> str:
    prefix = operation_prefix(group, version).removesuffix(version[:1].upper() + version[1:])
    return f"{prefix[:1].lower()}{prefix[1:]}_{version}"


# parameters -------------------------------------------------------------------------------------------

_PARAMETERS: dict[str, tuple[str, str, str]] = {  # name: (in, type, description)
    "name": ("path", "string", "name of the object"),
    "namespace": ("path", "string", "namespace of the object"),
    "pretty": ("query", "string", "indent the response (accepted; responses are always compact here)"),
    "dryRun": ("query", "string", "`All` runs every stage of the request but stores nothing"),
    "fieldManager": ("query", "string", "name of the actor making the change"),
    "fieldValidation": ("query", "string", "what to do with unknown and duplicate fields in the body: "
                                           "`Strict` (reject), `Warn` (the default: accept, warn) or `Ignore`"),
    "force": ("query", "boolean", "take over conflicting fields (server-side apply only)"),
    "allowWatchBookmarks": ("query", "boolean", "send BOOKMARK events on a watch"),
    "continue": ("query", "string", "the token of the previous page of a list"),
    "fieldSelector": ("query", "string", "select objects by fields"),
    "labelSelector": ("query", "string", "select objects by labels"),
    "limit": ("query", "integer", "the most objects to return in one page"),
    "resourceVersion": ("query", "string", "how fresh the data must be (see resourceVersionMatch)"),
    "resourceVersionMatch": ("query", "string", "`NotOlderThan` or `Exact`, for resourceVersion"),
    "timeoutSeconds": ("query", "integer", "end a list or watch after this many seconds"),
    "watch": ("query", "boolean", "stream changes after the list instead of the list"),
    "gracePeriodSeconds": ("query", "integer", "seconds before the object is deleted"),
    "orphanDependents": ("query", "boolean", "deprecated: use propagationPolicy"),
    "propagationPolicy": ("query", "string", "`Foreground`, `Background` or `Orphan`"),
    "path": ("path", "string", "the path to pass on to the kubelet"),
}
_LIST = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
         "resourceVersionMatch", "timeoutSeconds", "watch")
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_DELETE = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION = ("continue", "dryRun", "fieldSelector", "gracePeriodSeconds", "labelSelector", "limit",
                      "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch",
                      "timeoutSeconds")


def parameters(*names: str) -> list[dict[str, Any]]:
    found = []
    for name in names:
        where, kind, description = _PARAMETERS[name]
        param = {"name": name, "in": where, "description": description,
                 "schema": {"type": kind, "uniqueItems": True}}
        if where == "path":
            param["required"] = True
        found.append(param)
    return found


# operations -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What an operation reads or writes: a kind at a group-version, and its component schema."""

    group: str
    version: str
    kind: str
    schema: str

    def gvk(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "kind": self.kind}


def _content(schema: str, *media: str) -> dict[str, Any]:
    return {m: {"schema": {"$ref": schemas.OPENAPI_REF_PREFIX + schema}} for m in media}


def _responses(schema: str, codes: tuple[str, ...], media: tuple[str, ...] = (JSON,)) -> dict[str, Any]:
    described = {"200": "OK", "201": "Created", "202": "Accepted"}
    found: dict[str, Any] = {code: {"description": described[code], "content": _content(schema, *media)}
                             for code in codes}
    found["401"] = {"description": "Unauthorized"}
    return found


def _text_operation(action: str, operation_id: str, description: str, target: Target, media: str,
                    res: Resource) -> dict[str, Any]:
    """An operation of a subresource the kubelet serves: it answers a stream of bytes, typed a string."""
    return {"description": description, "operationId": operation_id, "tags": [tag(res.group, res.version)],
            "responses": {"200": {"description": "OK", "content": {media: {"schema": {"type": "string"}}}},
                          "401": {"description": "Unauthorized"}},
            "x-kubernetes-action": action, "x-kubernetes-group-version-kind": target.gvk()}


# A connecter's verbs and the HTTP methods they stand for.
_CONNECT_METHODS = {"get": "get", "create": "post", "update": "put", "patch": "patch", "delete": "delete"}


def _operation(action: str, operation_id: str, description: str, target: Target, response: str,
               codes: tuple[str, ...], params: tuple[str, ...], res: Resource) -> dict[str, Any]:
    op: dict[str, Any] = {"description": description, "operationId": operation_id,
                          "tags": [tag(res.group, res.version)],
                          "responses": _responses(response, codes, (JSON, JSON + ";stream=watch")
                                                  if action == "list" else (JSON,)),
                          "x-kubernetes-action": action, "x-kubernetes-group-version-kind": target.gvk()}
    if params:
        op["parameters"] = parameters(*params)
    if action in ("post", "put"):
        op["requestBody"] = {"content": _content(target.schema, "*/*"), "required": True}
    elif action == "patch":
        op["requestBody"] = {"content": _content(PATCH_SCHEMA, *patch_types(res)), "required": True}
    elif action in ("delete", "deletecollection"):
        op["requestBody"] = {"content": _content(DELETE_OPTIONS, "*/*")}
    return op


class PathBuilder:
    """The paths of one resource, named the way kube-apiserver names them."""

    def __init__(self, res: Resource, custom_schema_name: Callable[[Resource], str]) -> None:
        self.res = res
        self.prefix = operation_prefix(res.group, res.version)
        self.scope = "Namespaced" if res.namespaced else ""
        self.target = Target(res.group, res.version, res.kind, custom_schema_name(res))
        base = "/" + gv_path(res.group, res.version)
        self.collection = f"{base}/namespaces/{{namespace}}/{res.plural}" if res.namespaced else f"{base}/{res.plural}"
        self.all_namespaces = f"{base}/{res.plural}"

    def paths(self) -> dict[str, dict[str, Any]]:
        found = {self.collection: self._collection()}
        if self.res.namespaced and "list" in self.res.verbs:
            found[self.all_namespaces] = self._all_namespaces()
        if {"get", "update", "patch", "delete"} & set(self.res.verbs):
            found[f"{self.collection}/{{name}}"] = self._object()
        for sub in self.res.subresources:
            item = f"{self.collection}/{{name}}/{sub.name}"
            found[item] = self._proxied(sub) if sub.proxied else self._subresource(sub)
            if sub.name == "proxy":  # a proxy passes on the rest of the path too
                found[item + "/{path}"] = self._proxied(sub, with_path=True)
        return {path: ops for path, ops in found.items() if len(ops) > 1}

    def _path_parameters(self, named: bool) -> list[dict[str, Any]]:
        names = (("name",) if named else ()) + (("namespace",) if self.res.namespaced else ()) + ("pretty",)
        return parameters(*names)

    def _collection(self) -> dict[str, Any]:
        res, kind, target = self.res, self.res.kind, self.target
        ops: dict[str, Any] = {"parameters": self._path_parameters(named=False)}
        if "list" in res.verbs:
            ops["get"] = _operation("list", f"list{self.prefix}{self.scope}{kind}", f"list or watch objects of kind "
                                    f"{kind}", target, self._list_schema(), ("200",), _LIST, res)
        if "create" in res.verbs:
            ops["post"] = _operation("post", f"create{self.prefix}{self.scope}{kind}", f"create a {kind}", target,
                                     target.schema, ("200", "201", "202"), _WRITE, res)
        if "deletecollection" in res.verbs:
            ops["delete"] = _operation("deletecollection", f"delete{self.prefix}Collection{self.scope}{kind}",
                                       f"delete collection of {kind}", target, STATUS_SCHEMA, ("200",),
                                       _DELETE_COLLECTION, res)
        return ops

    def _all_namespaces(self) -> dict[str, Any]:
        kind = self.res.kind
        return {"parameters": parameters("pretty"),
                "get": _operation("list", f"list{self.prefix}{kind}ForAllNamespaces", f"list or watch objects of "
                                  f"kind {kind}", self.target, self._list_schema(), ("200",), _LIST, self.res)}

    def _object(self) -> dict[str, Any]:
        res, kind, target = self.res, self.res.kind, self.target
        name = f"{self.prefix}{self.scope}{kind}"
        ops: dict[str, Any] = {"parameters": self._path_parameters(named=True)}
        if "get" in res.verbs:
            ops["get"] = _operation("get", f"read{name}", f"read the specified {kind}", target, target.schema,
                                    ("200",), (), res)
        if "update" in res.verbs:
            ops["put"] = _operation("put", f"replace{name}", f"replace the specified {kind}", target,
                                    target.schema, ("200", "201"), _WRITE, res)
        if "patch" in res.verbs:
            ops["patch"] = _operation("patch", f"patch{name}", f"partially update the specified {kind}", target,
                                      target.schema, ("200", "201"), (*_WRITE, "force"), res)
        if "delete" in res.verbs:
            deleted = target.schema if res.plural == "pods" else STATUS_SCHEMA  # a pod comes back, marked
            ops["delete"] = _operation("delete", f"delete{name}", f"delete a {kind}", target, deleted,
                                       ("200", "202"), _DELETE, res)
        return ops

    def _subresource(self, sub: Subresource) -> dict[str, Any]:
        res = self.res
        group, version = (sub.group, sub.version) if sub.group or sub.version else (res.group, res.version)
        target = Target(group, version, sub.kind, self.target.schema if sub.kind == res.kind and
                        (group, version) == (res.group, res.version) else schema_name(group, version, sub.kind))
        name = f"{self.prefix}{self.scope}{res.kind}{sub.name[:1].upper()}{sub.name[1:]}"
        what = f"{sub.name} of the specified {res.kind}"
        ops: dict[str, Any] = {"parameters": self._path_parameters(named=True)}
        if "create" in sub.verbs:
            ops["post"] = _operation("post", f"create{name}", f"create {what}", target, target.schema,
                                     ("200", "201", "202"), _WRITE, res)
        if "get" in sub.verbs:
            ops["get"] = _operation("get", f"read{name}", f"read {what}", target, target.schema, ("200",), (), res)
        if "update" in sub.verbs:
            ops["put"] = _operation("put", f"replace{name}", f"replace {what}", target, target.schema,
                                    ("200", "201"), _WRITE, res)
        if "patch" in sub.verbs:
            ops["patch"] = _operation("patch", f"patch{name}", f"partially update {what}", target,
                                      target.schema, ("200", "201"), (*_WRITE, "force"), res)
        return ops

    def _proxied(self, sub: Subresource, with_path: bool = False) -> dict[str, Any]:
        """`pods/log` (a read answering text) or a connecter: `connect` for each of its HTTP methods."""
        res = self.res
        target = Target(res.group, res.version, sub.kind, "")
        name = f"{self.scope}{res.kind}{sub.name[:1].upper()}{sub.name[1:]}{'WithPath' if with_path else ''}"
        names = ("name", "path") if with_path else ("name",)
        ops: dict[str, Any] = {"parameters": parameters(*names, *(("namespace",) if res.namespaced else ()))}
        if sub.proxied == STREAM:
            ops["get"] = _text_operation("get", f"read{self.prefix}{name}", f"read {sub.name} of the specified "
                                         f"{res.kind}", target, "text/plain", res)
            return ops
        for verb in sorted(sub.verbs):
            method = _CONNECT_METHODS[verb]
            ops[method] = _text_operation("connect", f"connect{self.prefix}{method.capitalize()}{name}",
                                          f"connect {method.upper()} requests to {sub.name} of {res.kind}", target,
                                          "*/*", res)
        return ops

    def _list_schema(self) -> str:
        return self.target.schema + "List"

    def schema_names(self) -> set[str]:
        """The component schemas this resource's operations refer to."""
        found = {self.target.schema} | ({self._list_schema()} if "list" in self.res.verbs else set())
        for sub in self.res.subresources:
            if sub.kind != self.res.kind and not sub.proxied:
                found.add(schema_name(sub.group or self.res.group, sub.version or self.res.version, sub.kind))
        return found


# documents --------------------------------------------------------------------------------------------


def custom_resource_schema(res: Resource, crd_schema: dict[str, Any] | None) -> dict[str, Any]:
    """What kube publishes for a custom resource version: the CRD's `openAPIV3Schema` (any object when it
    has none) with the identity fields and `metadata` added and the kind's group-version-kind."""
    schema = copy.deepcopy(crd_schema) if crd_schema else {"type": "object",
                                                           "x-kubernetes-preserve-unknown-fields": True}
    standard = schemas.openapi_schema(_STANDARD_OBJECT)["properties"]
    schema.setdefault("properties", {}).update(
        apiVersion=standard["apiVersion"], kind=standard["kind"], metadata=standard["metadata"])
    schema["x-kubernetes-group-version-kind"] = [{"group": res.group, "version": res.version, "kind": res.kind}]
    return schema


def custom_resource_list_schema(res: Resource, item_schema: str) -> dict[str, Any]:
    standard = schemas.openapi_schema(_STANDARD_LIST)["properties"]
    return {"type": "object", "required": ["items"],
            "properties": {"apiVersion": standard["apiVersion"], "kind": standard["kind"],
                           "metadata": standard["metadata"],
                           "items": {"type": "array", "items": {"$ref": schemas.OPENAPI_REF_PREFIX + item_schema}}},
            "x-kubernetes-group-version-kind": [{"group": res.group, "version": res.version,
                                                 "kind": res.kind + "List"}]}


# Upstream kinds whose identity and metadata fields (with their descriptions) every custom resource shares.
_STANDARD_OBJECT, _STANDARD_LIST = "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.ConfigMapList"


class GroupVersionDocument:
    """The OpenAPI document of one group-version, built from the resources it serves."""

    def __init__(self, group: str, version: str, resources: tuple[Resource, ...],
                 custom_schema: CustomSchema | None) -> None:
        self.group, self.version, self.resources = group, version, resources
        self.custom_schema = custom_schema
        self.body = orjson.dumps(self._build(), option=orjson.OPT_SORT_KEYS)
        self.hash = hashlib.sha512(self.body).hexdigest().upper()

    def _build(self) -> dict[str, Any]:
        base = "/" + gv_path(self.group, self.version) + "/"
        prefix = operation_prefix(self.group, self.version)
        paths: dict[str, Any] = {base: {"get": {
            "description": "get available resources", "operationId": f"get{prefix}APIResources",
            "tags": [tag(self.group, self.version)], "responses": _responses(RESOURCE_LIST, ("200",))}}}
        upstream = {STATUS_SCHEMA, DELETE_OPTIONS, PATCH_SCHEMA, RESOURCE_LIST}
        custom: dict[str, dict[str, Any]] = {}
        for res in self.resources:
            builder = PathBuilder(res, self._schema_name)
            paths.update(builder.paths())
            upstream.update(builder.schema_names())
            if res.custom:
                custom.update(self._custom_schemas(res))
        upstream = (upstream | _references(custom)) - set(custom)
        components = {name: schemas.openapi_schema(name) for name in schemas.closure(upstream)}
        components.update(custom)
        return {"openapi": "3.0.0", "info": INFO, "paths": paths,
                "components": {"schemas": components, "securitySchemes": SECURITY_SCHEMES}}

    def _schema_name(self, res: Resource) -> str:
        return schema_name(res.group, res.version, res.kind, res.custom)

    def _custom_schemas(self, res: Resource) -> dict[str, dict[str, Any]]:
        name = self._schema_name(res)
        crd_schema = self.custom_schema(res) if self.custom_schema else None
        return {name: custom_resource_schema(res, crd_schema), name + "List": custom_resource_list_schema(res, name)}


def _references(node: Any) -> set[str]:
    """Component names an OpenAPI-form schema refers to, at any depth."""
    if isinstance(node, list):
        return set().union(*map(_references, node))
    if not isinstance(node, dict):
        return set()
    found = set().union(*map(_references, node.values()))
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(schemas.OPENAPI_REF_PREFIX):
        found.add(ref.removeprefix(schemas.OPENAPI_REF_PREFIX))
    return found


class OpenAPIDocuments:
    """The index and the per-group-version documents for a registry whose resources may change."""

    def __init__(self, registry: Registry, custom_schema: CustomSchema | None = None) -> None:
        self.registry = registry
        self.custom_schema = custom_schema
        self._built: dict[str, GroupVersionDocument] = {}

    def current(self) -> dict[str, GroupVersionDocument]:
        """Every served group-version's document, rebuilt where its resources changed since last time."""
        found = {}
        for group, versions in self.registry.group_versions().items():
            for version in versions:
                path = gv_path(group, version)
                resources = tuple(self.registry.in_group_version(group, version))
                doc = self._built.get(path)
                if doc is None or doc.resources != resources:
                    doc = GroupVersionDocument(group, version, resources, self.custom_schema)
                found[path] = doc
        self._built = found
        return found

    @property
    def documents(self) -> dict[str, bytes]:
        return {path: doc.body for path, doc in self.current().items()}

    @property
    def hashes(self) -> dict[str, str]:
        return {path: doc.hash for path, doc in self.current().items()}

    def index(self) -> dict[str, Any]:
        return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={doc.hash}"}
                          for path, doc in self.current().items()}}

    def headers(self, path: str, requested_hash: str | None) -> dict[str, str]:
        """Response headers for a document: its ETag, and kube's caching headers when the URL names the
        current hash (a stale hash gets no caching headers; kube would redirect to the current URL)."""
        doc = self.current()[path]
        headers = {"ETag": f'"{doc.hash}"'}
        if requested_hash == doc.hash:
            headers.update({"Cache-Control": "public, immutable", "Vary": "Accept"})
        return headers

"""The upstream Kubernetes 1.32 schemas, as shipped by the `kubernetes-validate` package.

Kubernetes publishes an OpenAPI definition for every built-in type, with its field descriptions and the
`x-kubernetes-*` extensions that drive strategic merge patch (`x-kubernetes-patch-merge-key`,
`x-kubernetes-patch-strategy`), list semantics (`x-kubernetes-list-type`, `-list-map-keys`) and kind
identity (`x-kubernetes-group-version-kind`). `kubernetes-validate` ships them as JSON Schema; this module
loads the 1.32 set once and answers two questions: the definition named N, and the definition of a kind.
The metrics.k8s.io kinds, which a real cluster gets from metrics-server, are added from `api/metrics.py`.

References inside definitions have the form `#/$defs/<name>`; `ref_name` turns one into a name.

The package stores the definitions as JSON Schema, not as the OpenAPI 3.0 that kube-apiserver serves:
every type is nullable (`["string", "null"]`), a `$ref` carries its field's description beside it, and
`apiVersion`/`kind` gained an `enum`. `openapi_schema` undoes that for `/openapi/v3` (one `type` string,
`allOf: [{$ref}]` where a reference has siblings, as kube writes it, so `kubectl explain` prints both the
field's and the type's description), and `closure` lists the definitions a document must carry.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson

from . import metrics

KUBERNETES_VERSION = "1.32.0"
_DEFINITIONS = (Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" /
                f"v{KUBERNETES_VERSION}-local" / "_definitions.json")
REF_PREFIX = "#/$defs/"


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition by its name, e.g. `io.k8s.api.apps.v1.Deployment` (loaded once, ~4 MB), and those of
    metrics.k8s.io, which kube-apiserver does not define itself (`api/metrics.py`)."""
    upstream: dict[str, dict[str, Any]] = orjson.loads(_DEFINITIONS.read_bytes())["$defs"]
    return {**upstream, **metrics.DEFINITIONS}


@functools.cache
def _by_kind() -> dict[tuple[str, str, str], str]:
    index = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            index[(gvk.get("group", ""), gvk["version"], gvk["kind"])] = name
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The name of the definition of a kind, e.g. ("apps", "v1", "Deployment") → io.k8s.api.apps.v1.Deployment."""
    return _by_kind().get((group, version, kind))


def ref_name(ref: str) -> str:
    """`#/$defs/io.k8s.api.core.v1.PodSpec` → `io.k8s.api.core.v1.PodSpec`."""
    if not ref.startswith(REF_PREFIX):
        raise ValueError(f"not a definitions reference: {ref}")
    return ref[len(REF_PREFIX):]


OPENAPI_REF_PREFIX = "#/components/schemas/"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_IDENTITY_FIELDS = ("apiVersion", "kind")


@functools.cache
def openapi_schema(name: str) -> dict[str, Any]:
    """The definition named `name` as an OpenAPI 3.0 component schema (refs to `#/components/schemas/`)."""
    schema = _to_openapi(definitions()[name])
    if name == INT_OR_STRING:  # kube's generator writes the format and lists the integer first
        schema["format"] = "int-or-string"
        schema["oneOf"] = sorted(schema["oneOf"], key=lambda alternative: alternative.get("type") != "integer")
    for field in _IDENTITY_FIELDS:
        (schema.get("properties") or {}).get(field, {}).pop("enum", None)
    return schema


def _to_openapi(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            out["type"] = _single_type(value)
        elif key == "properties":
            out["properties"] = {field: _to_openapi(sub) for field, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _to_openapi(value)
        elif key in ("oneOf", "anyOf", "allOf"):
            out[key] = [_to_openapi(sub) for sub in value]
        elif key != "$ref":
            out[key] = value
    if "$ref" in schema:
        reference = {"$ref": OPENAPI_REF_PREFIX + ref_name(schema["$ref"])}
        return {"allOf": [reference], **out} if out else reference
    return out


def _single_type(value: str | list[str]) -> str:
    if isinstance(value, str):
        return value
    return next(t for t in value if t != "null")


def references(schema: Any) -> set[str]:
    """Names of the definitions `schema` (package form) refers to directly, at any depth inside it."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref_name(ref))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def closure(names: set[str] | list[str]) -> list[str]:
    """`names` and every definition they reach through references, sorted."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_direct_references(name) - seen)
    return sorted(seen)


@functools.cache
def _direct_references(name: str) -> frozenset[str]:
    return frozenset(references(definitions()[name]))

"""Structural schemas of CustomResourceDefinitions: checking them, and validating, pruning and defaulting
custom resources with them, as apiextensions-apiserver 1.32 does.

Two moments use a CRD version's `openAPIV3Schema`:

**When the CRD is created or updated** — `structural_errors(schema, path)` says whether the schema is
acceptable (422 with these causes otherwise):

    structural_errors(version["schema"]["openAPIV3Schema"], "spec.versions[0].schema.openAPIV3Schema",
                      status_subresource="status" in (version.get("subresources") or {}))
    → [FieldError(..., "spec.versions[0].schema.openAPIV3Schema.properties[spec].type",
                  "Required value: must not be empty for specified object fields")]

**When a custom resource is written** — `compile_schema(schema)` builds, once per CRD version, a
`CompiledSchema` whose methods run kube's decoding and validation steps, in kube's order:

    compiled = compile_schema(schema)
    compiled.default(obj)               # defaults from the schema (also wanted when reading from storage)
    unknown = compiled.prune(obj)       # unknown fields dropped; their paths, for fieldValidation
    errors = compiled.validate(obj)     # create; compiled.validate(obj, old) on update (ratcheting)
    errors = compiled.validate_status(obj, old)   # updates of the status subresource

`validate` covers what the schema decides (types, required, enum, pattern, bounds, formats, list types,
embedded resources); the registry still checks apiVersion/kind and the root `metadata` as for any object.
The `FieldError`s have kube's paths and texts, e.g.

    spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
    spec.color: Unsupported value: "pink": supported values: "red", "blue"
    spec.ports[1]: Duplicate value: map[string]interface {}{"name":"http"}

Modules: `structural` (CRD-time checks), `model` (the compiled tree), `openapi` (kube-openapi's validator),
`checks` (list types, embedded resources, ObjectMeta), `pruning`, `defaulting`, `formats`, `re2` (Go
regexps in Python), `gofmt` (Go's renderings of values).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

import orjson

from ..errors import FieldError
from . import openapi
from .checks import embedded_errors, list_type_errors
from .defaulting import apply_defaults
from .model import Node, compile_node
from .pruning import prune_object
from .structural import structural_errors

__all__ = ["CompiledSchema", "compile_schema", "structural_errors"]


class CompiledSchema:
    """One CRD version's schema, ready to default, prune and validate its objects. Immutable once built;
    safe to share between requests."""

    __slots__ = ("schema", "root")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = copy.deepcopy(schema) if isinstance(schema, dict) else {}
        self.root: Node = compile_node(self.schema)

    def default(self, obj: dict[str, Any]) -> None:
        """Apply the schema's defaults to `obj` in place."""
        apply_defaults(obj, self.root)

    def prune(self, obj: dict[str, Any]) -> list[str]:
        """Drop, in place, the fields the schema does not specify (not under
        `x-kubernetes-preserve-unknown-fields`, never `apiVersion`/`kind`, and of `metadata` only what
        ObjectMeta doesn't have), and non-nullable nulls. Returns the dropped fields' paths
        (`spec.foo`, `spec.items[0].bar`, `metadata.foo`), which Strict field validation reports as
        `unknown field "spec.foo"`."""
        if not isinstance(obj, dict):
            return []
        return prune_object(obj, self.root)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
        """The schema's errors for `obj` (create), or for an update from `old`: then an invalid value that is
        unchanged from `old` is let through (ratcheting), and list-type errors are only reported if `old`
        had none."""
        corr = openapi.Correlation(obj, old, self.root) if old is not None else None
        errs = openapi.to_field_errors(None, openapi.validate(self.root, obj, "", corr))
        errs += embedded_errors(self.root, obj)
        if old is None or not list_type_errors(self.root, old):
            errs += list_type_errors(self.root, obj)
        return errs

    def validate_status(self, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
        """An update through the status subresource: only `.status` is checked against its schema (paths
        `status.x`, messages naming `x`), plus the list types of the whole object when new ones broke."""
        errs: list[FieldError] = []
        status_schema = self.root.properties.get("status")
        if status_schema is not None and isinstance(obj, dict) and "status" in obj:
            errs += openapi.to_field_errors("status", openapi.validate(status_schema, obj["status"], "", None))
        new = list_type_errors(self.root, obj)
        if new and (old is None or not list_type_errors(self.root, old)):
            errs += new
        return errs


_CACHE: OrderedDict[bytes, CompiledSchema] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


def compile_schema(schema: dict[str, Any]) -> CompiledSchema:
    """The compiled form of `schema`; equal schemas share one `CompiledSchema` (an LRU of 256)."""
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return CompiledSchema(schema)
    with _LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found
    compiled = CompiledSchema(schema)
    with _LOCK:
        _CACHE[key] = compiled
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled

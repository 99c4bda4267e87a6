"""The empty object of a kind, as kube's Go types spell it: what a create is compared against.

kube tracks a create as an update from a freshly allocated Go object to the new one. Such an object is not
`{}`: structs that are not pointers are always there (`spec`, `spec.template`, a container's `resources`),
and lists and maps without `omitempty` are there as `null` (`spec.template.spec.containers`). Whether the
create then *adds* a struct or list decides whether its creator owns it itself (`".": {}` in FieldsV1), so
`f:spec` is never owned as a whole but a pod's `f:securityContext: {}` is.

The Go facts (pointer or not, `omitempty`) come from the protobuf schema (`api/protobuf`), which covers
the kinds kubectl's typed commands send; other kinds start from `metadata`, `spec` and `status`, and
custom resources from `{}` (they are unstructured in kube too).
"""

from __future__ import annotations

import functools
from typing import Any

from .. import schemas
from ..protobuf.schema import load_schema


def zero_object(api_version: str, kind: str, custom: bool = False) -> dict[str, Any]:
    if custom:
        return {}
    return _zero_kind(api_version, kind)


@functools.cache
def _zero_kind(api_version: str, kind: str) -> dict[str, Any]:
    schema = load_schema()
    message = schema.message_for(api_version, kind)
    if message is not None:
        return _zero_message(message)
    group, _, version = api_version.rpartition("/")
    name = schemas.definition_name(group, version, kind)
    props = schemas.definitions().get(name or "", {}).get("properties") or {}
    return {field: {} for field in ("metadata", "spec", "status") if field in props}


def _zero_message(message: str) -> dict[str, Any]:
    schema = load_schema()
    out: dict[str, Any] = {}
    for field in schema.messages.get(message, {}).values():
        if field.pointer or field.is_scalar or field.inline or field.type in schema.specials:
            continue
        if field.repeated or field.map:
            if not field.omitempty:
                out[field.json_name] = None
            continue
        out[field.json_name] = _zero_message(field.type)
    return out

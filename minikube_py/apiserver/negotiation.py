"""Content negotiation: what a request body is written in, and what the client wants back.

Request bodies: JSON (`application/json`, and an empty Content-Type means JSON, as the official Python
client sends none), YAML (`application/yaml`) and Kubernetes protobuf (`application/vnd.kubernetes.protobuf`,
what kubectl's typed commands such as `kubectl create namespace` send; `api/protobuf`). Other types get 415 UnsupportedMediaType; patch bodies
have their own content types, checked by the patch handler. Bodies over the limit (3 MiB, as kube) get 413.

Responses are always JSON. The `Accept` header only decides the *shape*: a `meta.k8s.io/v1 Table`
(`application/json;as=Table;v=v1;g=meta.k8s.io`, what `kubectl get` asks for) or the object itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from ..api import errors
from ..api.protobuf import decode_protobuf_body

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
BODY_TYPES = [JSON, YAML, PROTOBUF]


@dataclass(frozen=True)
class MediaType:
    type: str
    params: dict[str, str]


def parse_media_types(header: str) -> list[MediaType]:
    """Split an Accept header into media types with their parameters, in the client's order."""
    found = []
    for part in header.split(","):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params = {}
        for p in pieces[1:]:
            key, _, value = p.partition("=")
            params[key.strip().lower()] = value.strip()
        found.append(MediaType(pieces[0].lower(), params))
    return found


def wants_table(accept: str) -> bool:
    """True if the client's first acceptable answer is a meta.k8s.io Table (v1 or v1beta1)."""
    if "as=Table" not in accept:
        return False
    for media in parse_media_types(accept):
        if media.params.get("as") == "Table" and media.params.get("g") == "meta.k8s.io":
            return True
        if media.type in (JSON, "*/*", "application/*") and not media.params:
            return False
    return False


def body_media_type(content_type: str | None) -> str:
    """The media type of a request body; an absent Content-Type means JSON."""
    if not content_type:
        return JSON
    return content_type.split(";", 1)[0].strip().lower()


def decode_body(raw: bytes, content_type: str | None) -> dict[str, Any]:
    """Decode a JSON or YAML request body into an object (a dict), or raise a 4xx APIError."""
    media = body_media_type(content_type)
    if media == JSON:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"the object provided is unrecognized: {_json_error(exc)}") from None
    elif media in (YAML, "application/x-yaml", "text/yaml"):
        try:
            obj = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"the object provided is unrecognized: error converting YAML to JSON: "
                                     f"{str(exc).splitlines()[0]}") from None
    elif media == PROTOBUF:
        obj = decode_protobuf_body(raw)
    else:
        raise errors.unsupported_media_type(media, BODY_TYPES)
    if not isinstance(obj, dict):
        raise errors.bad_request("the object provided is unrecognized: the body must be a JSON object")
    return obj


def _json_error(exc: orjson.JSONDecodeError) -> str:
    return f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"


def check_body_size(length_header: str | None, limit: int) -> None:
    if length_header is not None and length_header.isdigit() and int(length_header) > limit:
        raise errors.too_large(limit)


_META_STRINGS = ("name", "generateName", "namespace", "uid", "resourceVersion", "selfLink")
_META_MAPS = ("labels", "annotations")


def check_object_meta(meta: Any) -> None:
    """Refuse wrongly typed ObjectMeta fields with 400, as decoding into kube's typed ObjectMeta does."""
    if not isinstance(meta, dict):
        raise _type_error("metadata", "ObjectMeta", meta)
    for field in _META_STRINGS:
        if meta.get(field) is not None and not isinstance(meta[field], str):
            raise _type_error(f"metadata.{field}", "string", meta[field])
    for field in _META_MAPS:
        value = meta.get(field)
        if value is not None and (not isinstance(value, dict) or
                                  not all(isinstance(v, str) for v in value.values())):
            raise _type_error(f"metadata.{field}", "map[string]string", value)
    finalizers = meta.get("finalizers")
    if finalizers is not None and (not isinstance(finalizers, list) or
                                   not all(isinstance(f, str) for f in finalizers)):
        raise _type_error("metadata.finalizers", "[]string", finalizers)
    owners = meta.get("ownerReferences")
    if owners is not None and (not isinstance(owners, list) or not all(isinstance(o, dict) for o in owners)):
        raise _type_error("metadata.ownerReferences", "[]OwnerReference", owners)
    generation = meta.get("generation")
    if generation is not None and (not isinstance(generation, int) or isinstance(generation, bool)):
        raise _type_error("metadata.generation", "int64", generation)


def _type_error(field: str, wanted: str, value: Any) -> errors.APIError:
    got = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(
        type(value), "null")
    return errors.bad_request(f"the object provided is unrecognized: cannot unmarshal {got} into field "
                              f"{field} of type {wanted}")

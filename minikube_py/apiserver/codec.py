"""Objects to etcd values and back, and the small metadata helpers every write path needs.

Objects are stored as compact JSON at their storage version, without `metadata.resourceVersion`: the
resourceVersion *is* the etcd revision that last modified the key (`mod_revision`), so it is filled in on
the way out, never stored (as kube's etcd3 versioner does). This keeps `etcdctl get` output readable in
the labs and makes a stored value independent of when it is read.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from ..api.names import DNS1123_LABEL_MAX, RANDOM_SUFFIX_LENGTH, random_suffix
from ..api.timestamps import time_string
from ..store.interface import KeyValue

# kube's generateName suffix alphabet: no vowels (no words) and no confusable characters


def encode(obj: dict[str, Any]) -> bytes:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("resourceVersion", None)
        meta.pop("selfLink", None)
    return orjson.dumps(obj)


def decode(kv: KeyValue) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(kv.value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(kv.mod_revision)
    return obj


def with_revision(obj: dict[str, Any], revision: int) -> dict[str, Any]:
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return obj


def timestamp_in(seconds: int) -> str:
    return time_string(datetime.now(UTC) + timedelta(seconds=seconds))


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(prefix: str) -> str:
    """`generateName` + five random characters, as kube's name generator does (prefix cut to fit 63)."""
    return prefix[: DNS1123_LABEL_MAX - RANDOM_SUFFIX_LENGTH] + random_suffix()


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's metadata dict, created if missing (callers validate its type first)."""
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = {}
        obj["metadata"] = m
    return m

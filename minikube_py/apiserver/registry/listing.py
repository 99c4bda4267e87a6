"""List and watch options, continue tokens, and paging through etcd with selectors applied.

A list reads one key range of etcd at one revision. `limit` asks for a page: the response then carries a
`continue` token, an opaque (to clients) base64 JSON `{"v":"meta.k8s.io/v1","rv":<revision>,"start":<key>}`
naming where the next page starts and the revision it must be read at, so every page of one list sees the
same snapshot. A token that does not decode is 400; one whose revision was compacted away is 410 Expired.

The resourceVersion rules (kube's "resourceVersion semantics"): unset means the latest data (a quorum read);
"0" means any data (we serve the latest too); "N" means data at least as new as N, or exactly N with
`resourceVersionMatch=Exact`. A revision the store has not reached yet is a 504 Timeout, as kube answers.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from ...api import errors
from ...api.fields import field_set
from ...api.kinds import Resource
from ...api.selectors import FieldSelector, LabelSelector
from ...store.errors import CompactedError
from ...store.interface import KeyValue, Storage

MAX_PAGE_FETCH = 1000  # keys read from etcd per round when a selector filters a paged list


@dataclass(frozen=True)
class ListOptions:
    label_selector: LabelSelector
    field_selector: FieldSelector
    limit: int = 0
    continue_token: str = ""
    resource_version: str | None = None
    resource_version_match: str = ""
    # watch-only
    allow_bookmarks: bool = False
    timeout_seconds: int | None = None
    send_initial_events: bool | None = None


def parse_list_options(resource: Resource, query: Mapping[str, str]) -> ListOptions:
    limit = _int_param(query, "limit") or 0
    if limit < 0:
        raise errors.bad_request(f"limit must be a non-negative integer, got {limit}")
    rv = query.get("resourceVersion")
    if rv is not None and rv != "" and not rv.isdigit():
        raise errors.bad_request(f'resourceVersion: Invalid value: "{rv}": must be a non-negative integer')
    match = query.get("resourceVersionMatch", "")
    if match and match not in ("Exact", "NotOlderThan"):
        raise errors.bad_request(f'resourceVersionMatch: Unsupported value: "{match}": supported values: '
                                 '"Exact", "NotOlderThan"')
    if match and not rv:
        raise errors.bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided")
    sie = query.get("sendInitialEvents")
    return ListOptions(
        label_selector=LabelSelector.parse(query.get("labelSelector", "")),
        field_selector=FieldSelector.parse(query.get("fieldSelector", ""), resource),
        limit=limit,
        continue_token=query.get("continue", ""),
        resource_version=rv or None,
        resource_version_match=match,
        allow_bookmarks=query.get("allowWatchBookmarks", "").lower() in ("true", "1"),
        timeout_seconds=_int_param(query, "timeoutSeconds"),
        send_initial_events=None if sie is None else sie.lower() in ("true", "1"),
    )


def _int_param(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(f'{name}: Invalid value: "{raw}": must be an integer') from None


def encode_continue(revision: int, start_key: str, prefix: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": revision, "start": start_key[len(prefix):]}
    return base64.urlsafe_b64encode(orjson.dumps(token)).decode().rstrip("=")


def decode_continue(token: str, prefix: str) -> tuple[int, str]:
    """Return (revision, start key) from a continue token, or raise 400 BadRequest."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        revision, start = data["rv"], data["start"]
        valid = data.get("v") == "meta.k8s.io/v1" and isinstance(revision, int) and isinstance(start, str)
    except (binascii.Error, ValueError, KeyError, TypeError):
        valid = False
    if not valid or revision <= 0:
        raise errors.bad_request("continue key is not valid: invalid continue token")
    # the start key must stay inside the listed prefix: refuse anything that cleans to another path
    cleaned = posixpath.normpath("/" + start)[1:] if start else ""
    if start and (cleaned != start.rstrip("/") or start.startswith("/") or ".." in start.split("/")):
        raise errors.bad_request("continue key is not valid: invalid start key")
    return revision, prefix + start


@dataclass
class Page:
    objects: list[dict[str, Any]]
    revision: int
    continue_token: str
    remaining: int | None


# The selectable fields of an object, when the caller already has them (a watch event shared by many
# watchers computes them once): see `ObjectFilter`.
FieldsOf = Callable[[], Mapping[str, str]]


class ObjectFilter(Protocol):
    def __call__(self, obj: dict[str, Any], fields_of: FieldsOf | None = None) -> bool: ...


def object_filter(resource: Resource, options: ListOptions) -> ObjectFilter | None:
    """A predicate for the list's selectors, or None when nothing is filtered. `fields_of`, when given,
    returns `obj`'s selectable fields (the predicate computes them otherwise)."""
    labels, fields = options.label_selector, options.field_selector
    if labels.empty and fields.empty:
        return None

    def matches(obj: dict[str, Any], fields_of: FieldsOf | None = None) -> bool:
        if not labels.empty and not labels.matches(obj.get("metadata", {}).get("labels") or {}):
            return False
        return fields.empty or fields.matches(fields_of() if fields_of else field_set(resource, obj))

    return matches


Decoder = Callable[[KeyValue], dict[str, Any]]


async def list_page(storage: Storage, resource: Resource, prefix: str, options: ListOptions,
                    decode: Decoder) -> Page:
    """Read one page (or everything, without `limit`) of the objects under `prefix`."""
    revision, start_key = await _starting_point(storage, prefix, options)
    keep = object_filter(resource, options)
    limit = options.limit
    objects: list[dict[str, Any]] = []
    more = False
    remaining: int | None = None
    while True:
        fetch = 0 if not limit else (limit - len(objects) if keep is None else max(limit, MAX_PAGE_FETCH))
        try:
            result = await storage.list(prefix, limit=fetch, start_key=start_key, revision=revision)
        except CompactedError as exc:
            raise _expired(options, exc) from None
        revision = revision or result.revision
        for i, kv in enumerate(result.items):
            obj = decode(kv)
            if keep is None or keep(obj):
                objects.append(obj)
                if limit and len(objects) == limit:
                    next_key = kv.key + "\x00"
                    more = result.more or i + 1 < len(result.items)
                    remaining = None if keep else result.remaining + (len(result.items) - i - 1)
                    return Page(objects, revision, encode_continue(revision, next_key, prefix) if more else "",
                                remaining if more else None)
        if not result.more:
            return Page(objects, revision, "", None)
        start_key = result.items[-1].key + "\x00"


async def _starting_point(storage: Storage, prefix: str, options: ListOptions) -> tuple[int, str | None]:
    if options.continue_token:
        if options.resource_version not in (None, "0"):
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        return decode_continue(options.continue_token, prefix)
    rv = options.resource_version
    if rv is None or rv == "0":
        return 0, None
    wanted = int(rv)
    current = await storage.current_revision()
    if wanted > current:
        raise too_large_resource_version(wanted, current)
    if options.resource_version_match == "Exact":
        return wanted, None
    return 0, None


def too_large_resource_version(wanted: int, current: int) -> errors.APIError:
    err = errors.timeout(f"Too large resource version: {wanted}, current: {current}")
    err.details = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                   "retryAfterSeconds": 1}
    return err


def _expired(options: ListOptions, exc: CompactedError) -> errors.APIError:
    if options.continue_token:
        return errors.expired("The provided continue parameter is too old to display a consistent list result. "
                              "You can start a new list without the continue parameter.")
    return errors.expired(f"The resourceVersion for the provided list is too old: requested {exc.requested}, "
                          f"compacted {exc.compacted}")

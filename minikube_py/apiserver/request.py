"""Turning a URL and HTTP method into a `RequestInfo`: which resource, which object, which verb.

This is the first thing the handler chain does with a request, and what authorization will read later
(kube's `RequestInfoFactory`). Resource URLs have the shapes

    /api/v1[/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]

and the verb follows from the method: GET is `get` with a name, `list` without one and `watch` with
`?watch=true`; POST `create`; PUT `update`; PATCH `patch`; DELETE `delete` or `deletecollection`.
`/api/v1/namespaces/{name}` is the namespace object itself, and `/api/v1/namespaces/{ns}/status`-like
paths name the namespace's subresources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

NAMESPACE_SUBRESOURCES = ("status", "finalize")

_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True)
class RequestInfo:
    verb: str
    group: str
    version: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    parts_valid: bool = True  # False when the path has more segments than any resource URL


def request_info(scope: dict[str, Any]) -> RequestInfo | None:
    """The request's `RequestInfo` (None when the path is not a resource URL), parsed once per request and
    kept in the scope, as kube's filter chain keeps it in the request's context: authorization and the
    handler read the same one."""
    if "mkpy.request_info" not in scope:
        scope["mkpy.request_info"] = parse_resource_path(scope["method"], scope["path"],
                                                         query_params(scope).get("watch"))
    info: RequestInfo | None = scope["mkpy.request_info"]
    return info


def _is_true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def parse_resource_path(method: str, path: str, watch_param: str | None) -> RequestInfo | None:
    """Parse a path under /api or /apis; None if it is not a resource URL (e.g. `/apis/apps/v1`)."""
    segments = [s for s in path.split("/") if s]
    if not segments:
        return None
    if segments[0] == "api" and len(segments) >= 2:
        group, version, rest = "", segments[1], segments[2:]
    elif segments[0] == "apis" and len(segments) >= 3:
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    if not rest:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    # otherwise /api/v1/namespaces/{name}[/status|/finalize]: the namespace itself, or its subresource
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    verb = _verb(method, bool(name), watch_param)
    # Only `proxy` takes a path after it (`/nodes/{name}/proxy/stats/summary`), authorized as `nodes/proxy`.
    valid = len(rest) <= 3 or subresource == "proxy"
    return RequestInfo(verb, group, version, resource, namespace, name, subresource, parts_valid=valid)


def _verb(method: str, has_name: bool, watch_param: str | None) -> str:
    if method in ("GET", "HEAD"):
        if _is_true(watch_param):
            return "watch"
        return "get" if has_name else "list"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return _METHOD_VERBS.get(method, method.lower())


def query_params(scope: dict[str, Any]) -> dict[str, str]:
    """The request's query parameters as a plain dict (the last of repeated ones wins, as in Starlette),
    parsed once per request and kept in the scope: authorization, audit and every handler step read them."""
    query = scope.get("mkpy.query")
    if query is None:
        query = scope["mkpy.query"] = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                                                     keep_blank_values=True))
    return query

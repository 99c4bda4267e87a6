"""Writing API responses: objects, lists, Tables and error Statuses, always as JSON.

The shape of a read depends on the Accept header: `kubectl get` asks for a `meta.k8s.io/v1 Table` (the
server decides the columns), everything else gets the object or a `<Kind>List`. Errors are `metav1.Status`
objects with the HTTP code the Status carries.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.responses import Response

from ..api import errors
from ..api.kinds import Resource
from ..api.tables import build_table
from .registry.listing import Page

JSON_MEDIA = "application/json"


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None,
                  media_type: str = JSON_MEDIA) -> Response:
    return Response(orjson.dumps(obj), status_code=status, media_type=media_type, headers=headers)


def error_response(err: errors.APIError) -> Response:
    return json_response(err.to_status(), err.code, headers=err.headers or None)


def list_object(resource: Resource, page: Page) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(page.revision)}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    return {"kind": f"{resource.kind}List", "apiVersion": resource.api_version, "metadata": meta,
            "items": page.objects}


def table(resource: Resource, objects: list[dict[str, Any]], include_object: str, *, list_rv: str | None,
          page: Page | None = None, with_columns: bool = True) -> dict[str, Any]:
    return build_table(resource, objects, list_rv=list_rv,
                       continue_token=page.continue_token if page else None,
                       remaining=page.remaining if page else None,
                       include_object=include_object or "Metadata", now=datetime.now(UTC),
                       with_columns=with_columns)


def include_object_param(value: str | None) -> str:
    if value in (None, ""):
        return "Metadata"
    if value not in ("None", "Metadata", "Object"):
        raise errors.bad_request(f'includeObject: Unsupported value: "{value}": supported values: '
                                 '"None", "Metadata", "Object"')
    return value


def success_status(resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    details: dict[str, Any] = {"name": meta.get("name", ""), "kind": resource.plural, "uid": meta.get("uid", "")}
    if resource.group:
        details["group"] = resource.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

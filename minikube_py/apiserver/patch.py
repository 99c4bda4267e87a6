"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

`kubectl label`, `annotate` and `scale` send merge patches; `kubectl rollout undo` sends a JSON patch;
`kubectl apply`, `set image` and `edit` send strategic merge patches (`api/strategicpatch`), which only
built-in kinds accept: a custom resource has no merge keys to follow, so it answers 415, as kube does.
Server-side apply bodies (`kubectl apply --server-side`) go to `handlers._apply` and `api/managedfields`.
A patch is applied to the live object inside the registry's read-modify-write loop, so it always applies to
the current version; a `metadata.resourceVersion` in the patched result is a precondition (409 if stale).
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import orjson

from ..api import errors
from ..api.jsoncopy import copy_json
from ..api.kinds import Resource
from ..api.strategicpatch import apply_strategic_merge_patch

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def patch_types(resource: Resource) -> list[str]:
    """The PATCH bodies a resource takes, in kube's order; custom resources take no strategic merge patch.
    Server-side apply (`APPLY_PATCH`) is handled by `fieldmanager`, the others here."""
    if resource.custom:
        return [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    return [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, `null` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def parse_patch(content_type: str, raw: bytes, resource: Resource) -> Any:
    supported = patch_types(resource)
    if content_type not in supported or content_type == APPLY_PATCH:
        raise errors.unsupported_media_type(content_type, supported)
    try:
        patch = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None
    if content_type == MERGE_PATCH and not isinstance(patch, dict):
        raise errors.bad_request("error decoding patch: a merge patch must be a JSON object")
    if content_type == JSON_PATCH and not isinstance(patch, list):
        raise errors.bad_request("error decoding patch: a JSON patch must be a JSON array of operations")
    return patch


def apply_patch(content_type: str, obj: dict[str, Any], patch: Any, gvk: tuple[str, str, str]) -> dict[str, Any]:
    """The patched object of kind `gvk`; a patch that cannot apply is 422 (kube's message style)."""
    if content_type == MERGE_PATCH:
        return merge_patch(obj, patch)
    if content_type == STRATEGIC_MERGE_PATCH:
        return apply_strategic_merge_patch(obj, patch, *gvk)
    result: Any = obj
    for op in patch:  # one operation at a time, to name the one that failed as kube does
        try:
            result = jsonpatch.apply_patch(result, [op])
        except jsonpatch.JsonPatchTestFailed:
            raise _rejected(f"testing value {op.get('path')} failed: test failed") from None
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError,
                AttributeError) as exc:
            raise _rejected(f"{op.get('op') if isinstance(op, dict) else op} operation does not apply: {exc}") \
                from None
    if not isinstance(result, dict):
        raise errors.bad_request("the patched object is not a JSON object")
    return result


def _rejected(detail: str) -> errors.APIError:
    """422 as kube answers a JSON patch that cannot apply: a fixed message, the reason in the cause."""
    return errors.APIError(422, "Invalid", "the server rejected our request due to an error in our request",
                           {"causes": [{"reason": "UnexpectedServerResponse", "message": detail}]})

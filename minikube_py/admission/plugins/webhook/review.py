"""AdmissionReview: what the apiserver sends a webhook, what it accepts back, and the errors it answers with.

Where it sits: the dispatcher (`generic.py`) builds a request with `admission_review`, posts it through
`client.py`, checks the answer with `verify_response`, and turns the outcome into kube's errors:

* `CallingWebhookError`: the webhook could not be called or answered nonsense. It is the one failure
  `failurePolicy` governs: `Ignore` lets the request through, `Fail` refuses it with `calling_failed`, a 500
  `Internal error occurred: failed calling webhook "x": <why>`.
* `denied`: the webhook answered `allowed: false`. Its `status` is passed on, with the message prefixed
  `admission webhook "x" denied the request: ` and a code of at least 400.
* `dry_run_unsupported`: a dry-run request reached a webhook that may have side effects (a 400).

The webhook picks the review version: the first of its `admissionReviewVersions` the apiserver speaks
(`admission.k8s.io/v1`, or `v1beta1`, whose responses kube checks less strictly: no uid, no kind, any patch
is a JSON patch).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from typing import Any

from ....api import errors
from ....auth.authn import user_info
from ...interface import Attributes
from .matching import Invocation

API_GROUP = "admission.k8s.io"
KNOWN_VERSIONS = ("v1", "v1beta1")


class CallingWebhookError(Exception):
    """The webhook could not be called, or did not answer a valid AdmissionReview (kube's
    `ErrCallingWebhook`); the text is the reason shown after `failed calling webhook "x": `."""


@dataclass
class ReviewResponse:
    """What the webhook answered: allowed or not, the patch (decoded bytes) and its type, the status."""

    allowed: bool
    patch: bytes = b""
    patch_type: str = ""
    status: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)


def review_version(invocation: Invocation) -> str:
    for version in invocation.webhook.admission_review_versions:
        if version in KNOWN_VERSIONS:
            return version
    raise CallingWebhookError("could not create admission objects: webhook does not accept known "
                              "AdmissionReview versions (v1, v1beta1)")


def admission_review(version: str, invocation: Invocation, attributes: Attributes, obj: dict[str, Any] | None,
                     old: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """A new request uid and the AdmissionReview to post; `obj`/`old` at the invocation's version."""
    uid = str(uuid.uuid4())
    group, resource_version, resource = invocation.resource
    request = {
        "uid": uid,
        "kind": _gvk(invocation.kind),
        "resource": {"group": group, "version": resource_version, "resource": resource},
        "subResource": attributes.subresource or None,
        "requestKind": _gvk(attributes.kind),
        "requestResource": {"group": attributes.group, "version": attributes.version,
                            "resource": attributes.resource},
        "requestSubResource": attributes.subresource or None,
        "name": _name(attributes) or None,
        "namespace": attributes.namespace or None,
        "operation": attributes.operation,
        "userInfo": user_info(attributes.user),
        "object": obj,
        "oldObject": old,
        "dryRun": attributes.dry_run,
        "options": attributes.options or None,
    }
    request = {key: value for key, value in request.items()
               if value is not None or key in ("object", "oldObject")}
    return uid, {"kind": "AdmissionReview", "apiVersion": f"{API_GROUP}/{version}", "request": request}


def _gvk(kind: tuple[str, str, str]) -> dict[str, str]:
    return {"group": kind[0], "version": kind[1], "kind": kind[2]}


def _name(attributes: Attributes) -> str:
    # On a create the name comes from the object (kube's create handler reads it before admission).
    if attributes.name:
        return attributes.name
    meta = (attributes.object or {}).get("metadata") or {}
    return str(meta.get("name") or "")


def verify_response(review: Any, uid: str, version: str, mutating: bool) -> ReviewResponse:
    """The webhook's answer, checked as kube checks it; CallingWebhookError when it is not acceptable."""
    response = review.get("response") if isinstance(review, dict) else None
    if not isinstance(response, dict):
        raise _invalid("webhook response was absent")
    patch = _patch_bytes(response.get("patch"))
    patch_type = response.get("patchType")
    if version == "v1":
        if response.get("uid") != uid:
            raise _invalid(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
        got = f"{review.get('apiVersion') or ''}, Kind={review.get('kind') or ''}"
        if got != f"{API_GROUP}/v1, Kind=AdmissionReview":
            raise _invalid(f"expected webhook response of {API_GROUP}/v1, Kind=AdmissionReview, got {got}")
        _check_patch_fields(patch, patch_type, mutating)
    else:
        patch_type = "JSONPatch" if mutating and patch else None
        patch = patch if mutating else b""
    status = response.get("status")
    annotations = response.get("auditAnnotations") or {}
    return ReviewResponse(allowed=response.get("allowed") is True, patch=patch if mutating else b"",
                          patch_type=str(patch_type or ""), status=status if isinstance(status, dict) else None,
                          warnings=[str(w) for w in response.get("warnings") or ()],
                          audit_annotations={str(k): str(v) for k, v in annotations.items()})


def _check_patch_fields(patch: bytes, patch_type: Any, mutating: bool) -> None:
    if mutating:
        if patch and patch_type is None:
            raise _invalid("webhook returned response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise _invalid("webhook returned response.patchType but not response.patch")
        if patch_type == "":
            raise _invalid('webhook returned invalid response.patchType of ""')
        return
    if patch:
        raise _invalid("validating webhook may not return response.patch")
    if patch_type is not None:
        raise _invalid("validating webhook may not return response.patchType")


def _patch_bytes(value: Any) -> bytes:
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as err:
        raise CallingWebhookError(f"failed to call webhook: illegal base64 data in response.patch: {err}") from None


def _invalid(why: str) -> CallingWebhookError:
    return CallingWebhookError(f"received invalid webhook response: {why}")


def calling_failed(webhook_name: str, reason: str) -> errors.APIError:
    """failurePolicy Fail: kube's `NewInternalError(ErrCallingWebhook)`."""
    err = errors.internal(f'failed calling webhook "{webhook_name}": {reason}')
    err.details["causes"] = [{"message": err.message.removeprefix("Internal error occurred: ")}]
    return err


def denied(webhook_name: str, status: dict[str, Any] | None) -> errors.APIError:
    """The webhook said no: its status, sanitised as kube's `ToStatusErr` does."""
    status = dict(status or {})
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    prefix = f'admission webhook "{webhook_name}" denied the request'
    if status.get("message"):
        message = f"{prefix}: {status['message']}"
    elif status.get("reason"):
        message = f"{prefix}: {status['reason']}"
    else:
        message = f"{prefix} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else {}
    return errors.APIError(code, str(status.get("reason") or ""), message, dict(details))


def dry_run_unsupported(webhook_name: str) -> errors.APIError:
    return errors.bad_request(f'admission webhook "{webhook_name}" does not support dry run')

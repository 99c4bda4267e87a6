"""Typed API errors on the client side, built from the `metav1.Status` the apiserver answers a failure with.

The apiserver reports every failure as a Status object (`{"kind": "Status", "code": 404, "reason":
"NotFound", "message": ..., "details": {...}}`); `from_response` turns one into an exception whose class
names the reason, so callers branch with `except NotFound:` the way client-go callers use
`apierrors.IsNotFound(err)`. The class is chosen by `reason` first (409 can be AlreadyExists or Conflict,
410 can be Gone or Expired), then by the HTTP code; a body that is not a Status (a proxy's HTML page, an
empty 503) still gets a class and a message naming the code, as client-go does.

A call that gets no answer at all raises `TransportError` (`ConnectError` when no connection could be made),
so callers tell "the server said no" (`APIStatusError`) from "the server could not be reached".

Usage rules:
* `Expired` is a kind of `Gone`: a reflector relists on either, so `except Gone:` covers both.
* The exception's `str()` is the Status message, which is what kubectl prints after "Error from server".
* `new_not_found` builds the error a lister raises for a missing cached object, shaped like the server's.
* `is_namespace_terminating(error)`: a create refused because its namespace is being deleted (the
  `NamespaceTerminating` cause, as client-go's `HasStatusCause`); controllers drop such a write instead of
  retrying it or reporting it as a failure.
"""

from __future__ import annotations

from typing import Any

import orjson


class TransportError(OSError):
    """No Status came back: the apiserver could not be reached, or the connection broke or timed out (an
    OSError, as the socket errors underneath are)."""


class ConnectError(TransportError):
    """No connection to the apiserver could be made (refused, unreachable, TLS handshake failed)."""


class APIStatusError(Exception):
    """A failed API call: the Status the server sent (or one synthesised from the HTTP code)."""

    def __init__(self, status: dict[str, Any]) -> None:
        self.status = status
        super().__init__(self.message)

    @property
    def code(self) -> int:
        return int(self.status.get("code") or 0)

    @property
    def reason(self) -> str:
        return str(self.status.get("reason") or "")

    @property
    def message(self) -> str:
        return str(self.status.get("message") or "")

    @property
    def details(self) -> dict[str, Any]:
        return self.status.get("details") or {}

    def __str__(self) -> str:
        return self.message


class BadRequest(APIStatusError):
    """400: the request itself is malformed (a bad selector, an undecodable body)."""


class Unauthorized(APIStatusError):
    """401: no valid credentials were presented."""


class Forbidden(APIStatusError):
    """403: authenticated, but not allowed (RBAC), or refused by admission."""


class NotFound(APIStatusError):
    """404: the object (or the resource path) does not exist."""


class MethodNotAllowed(APIStatusError):
    """405: the resource does not support this verb."""


class AlreadyExists(APIStatusError):
    """409 AlreadyExists: a create named an object that exists."""


class Conflict(APIStatusError):
    """409 Conflict: a write lost an optimistic-concurrency race; re-read and retry."""


class Gone(APIStatusError):
    """410: the resourceVersion asked for is no longer available; relist."""


class Expired(Gone):
    """410 Expired: the resourceVersion (or continue token) was compacted away."""


class RequestEntityTooLarge(APIStatusError):
    """413: the request body is larger than the server accepts."""


class UnsupportedMediaType(APIStatusError):
    """415: the body's content type is not accepted for this request (e.g. an unknown patch type)."""


class Invalid(APIStatusError):
    """422: the object failed validation; `details["causes"]` lists the fields."""


class TooManyRequests(APIStatusError):
    """429: throttled; `details.get("retryAfterSeconds")` says when to retry."""


class InternalError(APIStatusError):
    """500: the server failed."""


class ServiceUnavailable(APIStatusError):
    """503: the server (or a part of it, such as a watch cache) is not ready."""


class ServerTimeout(APIStatusError):
    """504 Timeout or 500 ServerTimeout: the server did not finish in time; retrying may succeed."""


_BY_REASON: dict[str, type[APIStatusError]] = {
    "BadRequest": BadRequest, "Unauthorized": Unauthorized, "Forbidden": Forbidden, "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed, "AlreadyExists": AlreadyExists, "Conflict": Conflict,
    "Gone": Gone, "Expired": Expired, "RequestEntityTooLarge": RequestEntityTooLarge,
    "UnsupportedMediaType": UnsupportedMediaType, "Invalid": Invalid, "TooManyRequests": TooManyRequests,
    "InternalError": InternalError, "ServiceUnavailable": ServiceUnavailable, "ServerTimeout": ServerTimeout,
    "Timeout": ServerTimeout,
}

# The class and the reason a code implies when the body names no reason (client-go's fallback table).
_BY_CODE: dict[int, tuple[type[APIStatusError], str, str]] = {
    400: (BadRequest, "BadRequest", "the server rejected our request for an unknown reason"),
    401: (Unauthorized, "Unauthorized", "the server has asked for the client to provide credentials"),
    403: (Forbidden, "Forbidden", "the server does not allow access to the requested resource"),
    404: (NotFound, "NotFound", "the server could not find the requested resource"),
    405: (MethodNotAllowed, "MethodNotAllowed", "the server does not allow this method on the requested resource"),
    409: (Conflict, "Conflict", "the server reported a conflict"),
    410: (Gone, "Gone", "the resource requested is no longer available"),
    413: (RequestEntityTooLarge, "RequestEntityTooLarge", "the request entity is too large"),
    415: (UnsupportedMediaType, "UnsupportedMediaType", "the server does not support the request's content type"),
    422: (Invalid, "Invalid", "the server rejected our request due to an error in our request"),
    429: (TooManyRequests, "TooManyRequests", "the server has received too many requests and has asked us "
          "to try again later"),
    500: (InternalError, "InternalError", "an error on the server has prevented the request from succeeding"),
    503: (ServiceUnavailable, "ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (ServerTimeout, "Timeout", "the server was unable to return a response in the time allotted, but may "
          "still be processing the request"),
}


def from_status(status: dict[str, Any]) -> APIStatusError:
    """The exception for a Status object (from a response body or a watch ERROR event)."""
    code = int(status.get("code") or 0)
    cls = _BY_REASON.get(str(status.get("reason") or "")) or _BY_CODE.get(code, (APIStatusError,))[0]
    return cls(status)


def from_response(code: int, body: bytes) -> APIStatusError:
    """The exception for a failed HTTP response: its Status body, or one synthesised from the code."""
    try:
        decoded = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return from_status({**decoded, "code": decoded.get("code") or code})
    cls, reason, message = _BY_CODE.get(code, (APIStatusError, "", f"the server responded with status {code}"))
    text = body.decode("utf-8", "replace").strip()
    if text and len(text) < 200 and "\n" not in text:
        message += f" ({text})"
    return cls(_status(code, reason, message, {}))


def new_not_found(group_resource: str, name: str) -> NotFound:
    """The NotFound a server would answer for `name` of `group_resource` ("pods", "replicasets.apps")."""
    plural, _, group = group_resource.partition(".")
    details = {"name": name, "kind": plural, **({"group": group} if group else {})}
    return NotFound(_status(404, "NotFound", f'{group_resource} "{name}" not found', details))


def is_namespace_terminating(error: Exception) -> bool:
    """Whether `error` refused a write into a namespace that is being deleted: by its `NamespaceTerminating`
    cause, or, for a Status without causes, by the Forbidden message that names it."""
    if not isinstance(error, APIStatusError):
        return False
    causes = error.details.get("causes") or []
    if any(cause.get("reason") == "NamespaceTerminating" for cause in causes):
        return True
    return isinstance(error, Forbidden) and "being terminated" in error.message


def _status(code: int, reason: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason, "code": code}
    if details:
        status["details"] = details
    return status

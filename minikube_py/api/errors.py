"""API errors and their `metav1.Status` form.

Every failure the apiserver reports travels as an `APIError`: the registry, the validation code and the
request decoding raise one, and the HTTP layer turns it into a `metav1.Status` JSON body with the matching
HTTP code (see `to_status`). The reasons and codes are Kubernetes' own (apimachinery's `StatusReason`
values), because kubectl and client libraries branch on them: 404 NotFound makes `kubectl apply` create,
409 Conflict makes a controller re-read and retry, 410 Expired makes an informer relist.

Constructors are named after the reason (`not_found`, `already_exists`, `conflict`, ...) and take the
group-resource (`"pods"`, `"deployments.apps"`) and object name that kube puts into the message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .gofmt import go_quote, go_sharp_v


@dataclass(frozen=True)
class FieldError:
    """One cause of an Invalid (422) error: which field is wrong and why.

    `type` is kube's `CauseType` (`FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`,
    `FieldValueDuplicate`, `FieldValueForbidden`, `FieldValueTooLong`, `FieldValueTypeInvalid`).
    """

    type: str
    field: str
    message: str

    def cause(self) -> dict[str, str]:
        return {"reason": self.type, "message": self.message, "field": self.field}

    def describe(self) -> str:
        return f"{self.field}: {self.message}"


# field.Error builders, with apimachinery 1.32's wording and Go's rendering of the bad value ---------------


class GoRendered:
    """A bad value whose Go rendering is given as text (a struct or a typed slice)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def render_value(value: Any) -> str:
    """How `field.Error.ErrorBody()` prints a bad value: `"x"`, `5`, `1e+06`, `true`, `"null"`, or Go's `%#v`
    (`map[string]interface {}{"a":1}`)."""
    if value is None:
        return '"null"'
    if isinstance(value, GoRendered):
        return value.text
    return go_sharp_v(value)  # scalars print the same under %#v as under %v


def _body(kind: str, value: Any, detail: str) -> str:
    body = f"{kind}: {render_value(value)}"
    return f"{body}: {detail}" if detail else body


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else ""))


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, "Forbidden" + (f": {detail}" if detail else ""))


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, _body("Invalid value", value, detail))


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueTypeInvalid", path, _body("Invalid value", value, detail))


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return FieldError("FieldValueNotSupported", path, _body("Unsupported value", value, detail))


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", path, _body("Duplicate value", value, ""))


def too_long(path: str, limit: int) -> FieldError:
    detail = f"may not be more than {limit} bytes" if limit >= 0 else "value is too long"
    return FieldError("FieldValueTooLong", path, f"Too long: {detail}")


def too_many(path: str, actual: int, limit: int) -> FieldError:
    detail = f"must have at most {limit} items" if limit >= 0 else "has too many items"
    body = f"Too many: {actual}: {detail}" if actual >= 0 else f"Too many: {detail}"
    return FieldError("FieldValueTooMany", path, body)


@dataclass
class APIError(Exception):
    """An error with a Kubernetes status code and reason, rendered as `metav1.Status`."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            status["details"] = self.details
        return status


def _details(resource: str, name: str | None, **extra: Any) -> dict[str, Any]:
    plural, _, group = resource.partition(".")
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = plural
    details.update({k: v for k, v in extra.items() if v})
    return details


def not_found(resource: str, name: str) -> APIError:
    return APIError(404, "NotFound", f'{resource} "{name}" not found', _details(resource, name))


def route_not_found() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, name: str) -> APIError:
    return APIError(409, "AlreadyExists", f'{resource} "{name}" already exists', _details(resource, name))


def conflict(resource: str, name: str, why: str) -> APIError:
    msg = f'Operation cannot be fulfilled on {resource} "{name}": {why}'
    return APIError(409, "Conflict", msg, _details(resource, name))


def stale_update(resource: str, name: str) -> APIError:
    return conflict(resource, name, "the object has been modified; please apply your changes to the "
                    "latest version and try again")


def uid_precondition_failed(resource: str, name: str, key: str, wanted: str, actual: str) -> APIError:
    """A write whose body names another uid than the stored object's (the object was deleted and
    recreated meanwhile); kube words it as the storage layer's error wrapped in a Conflict."""
    return conflict(resource, name, f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
                                    f"AdditionalErrorMsg: Precondition failed: UID in precondition: {wanted}, "
                                    f"UID in object meta: {actual}")


def invalid_object(kind: str, group: str, name: str, errors: list[FieldError]) -> APIError:
    joined = ", ".join(e.describe() for e in errors)
    shown = f'{kind}.{group}' if group else kind
    msg = f'{shown} "{name}" is invalid: ' + (f"[{joined}]" if len(errors) > 1 else joined)
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": [e.cause() for e in errors]}
    if group:
        details = {"name": name, "group": group, "kind": kind, "causes": [e.cause() for e in errors]}
    return APIError(422, "Invalid", msg, details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message, {})


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized", {})


def forbidden_object(resource: str, name: str, why: str) -> APIError:
    """403 Forbidden as kube words it: `pods "web" is forbidden: <why>` (`pods is forbidden: ...` without a
    name, `forbidden: ...` without a resource either)."""
    target = f'{resource} "{name}"' if name else resource
    msg = f"{target} is forbidden: {why}" if target else f"forbidden: {why}"
    return APIError(403, "Forbidden", msg, _details(resource, name) if resource else {})


def method_not_allowed(verb: str) -> APIError:
    return APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                    {})


def not_acceptable(accept: str, supported: list[str]) -> APIError:
    msg = f"only the following media types are accepted: {', '.join(supported)}"
    return APIError(406, "NotAcceptable", msg, {})


def expired(message: str) -> APIError:
    return APIError(410, "Expired", message, {})


def too_large(limit: int) -> APIError:
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}", {})


def unsupported_media_type(content_type: str, supported: list[str]) -> APIError:
    msg = ("the body of the request was in an unknown format - accepted media types include: "
           f"{', '.join(supported)}")
    return APIError(415, "UnsupportedMediaType", msg, {})


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}", {})


def timeout(message: str) -> APIError:
    return APIError(504, "Timeout", message, {})


def service_unavailable(message: str) -> APIError:
    return APIError(503, "ServiceUnavailable", message, {})

"""Auditing: a JSON line per request stage, saying who did what, when, and how it ended.

Where it sits: `AuditInitMiddleware` is outermost (it names each request with an audit ID, sent back as the
`Audit-Id` header, and logs requests that authentication refused); `AuditMiddleware` runs right after
authentication and before impersonation and authorization (kube's order), so a forbidden request is
audited too. Both exist only when `--audit-policy-file` and `--audit-log-path` are given: without them the
handler chain is untouched.

The policy (`auditpolicy.py`, kube's `audit.k8s.io/v1` Policy) is asked with the request's authorization
attributes (`authorization.attributes_for`, so verb and objectRef agree with RBAC) and decides the level:

    None            nothing is logged
    Metadata        user, verb, objectRef, source, response code (and the Status of a failure)
    Request         + requestObject (the request body, JSON or YAML)
    RequestResponse + responseObject (the response body; never for watches)

Events are kube's `audit.k8s.io/v1` Event, one per stage: RequestReceived, ResponseStarted (only for
long-running requests: watches and streaming subresources), ResponseComplete, or Panic. A refused login
is one ResponseStarted event with code 401 and an empty user, as kube logs it. When impersonation is in
the chain it sets `scope["user"]` to the impersonated user and keeps the authenticated one in
`scope["mkpy.original_user"]`; events after RequestReceived then carry both (`user`, `impersonatedUser`).

Usage rules: Events are written synchronously to a buffered file and flushed once each: a
local append takes microseconds, and keeping one writer keeps events in order.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson
import yaml
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..auth.authn import UserInfo, user_info
from ..auth.authorizer import Attributes
from .auditpolicy import API_VERSION, Decision, Policy, PolicyError, load_policy
from .authorization import attributes_for
from .options import ServerOptions

STREAMING_SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward", "proxy"})
MAX_USER_AGENT = 1024
AUDIT_ID = "mkpy.audit_id"  # scope key of the request's audit ID
ORIGINAL_USER = "mkpy.original_user"  # scope key impersonation keeps the authenticated user under


# the log ---------------------------------------------------------------------------------------------


class AuditLog:
    """Where events go: a file opened for appending (its directory created), or stdout for "-"."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path == "-":
            self._file: IO[bytes] = sys.stdout.buffer
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "ab")  # noqa: SIM115 - open for the life of the process

    def write(self, event: dict[str, Any]) -> None:
        self._file.write(orjson.dumps(event) + b"\n")
        self._file.flush()


@dataclass(frozen=True)
class Auditor:
    """The policy and the log of one apiserver."""

    policy: Policy
    log: AuditLog

    @classmethod
    def from_options(cls, options: ServerOptions) -> Auditor | None:
        """None unless both `--audit-policy-file` and `--audit-log-path` are set (kube logs nowhere
        without a log path). Raises PolicyError, OSError."""
        if not options.audit_policy_file or not options.audit_log_path:
            return None
        return cls(load_policy(options.audit_policy_file), AuditLog(options.audit_log_path))


def check_audit_flags(policy_file: str, log_path: str) -> None:
    """What `mkpy apiserver` checks before starting: the policy parses and the log can be appended to."""
    if policy_file:
        load_policy(policy_file)
    if log_path and log_path != "-":
        try:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab"):
                pass
        except OSError as err:
            raise PolicyError(f'cannot write the audit log "{log_path}": {err.strerror}') from None


# the middleware --------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return ""


def _request_metadata(scope: Scope, attributes: Attributes, level: str) -> dict[str, Any]:
    """The fields an event has from the start, in kube's order (stage and user are filled in later)."""
    query = scope.get("query_string", b"").decode("latin-1")
    forwarded = [ip.strip() for ip in _header(scope, b"x-forwarded-for").split(",") if ip.strip()]
    client = scope.get("client")
    agent = _header(scope, b"user-agent")
    if len(agent) > MAX_USER_AGENT:
        agent = agent[:MAX_USER_AGENT] + "...TRUNCATED"
    event: dict[str, Any] = {
        "kind": "Event", "apiVersion": API_VERSION, "level": level, "auditID": scope[AUDIT_ID],
        "stage": "", "requestURI": scope["path"] + (f"?{query}" if query else ""), "verb": attributes.verb,
        "user": {}, "sourceIPs": forwarded + ([client[0]] if client and client[0] not in forwarded else []),
        "userAgent": agent}
    if attributes.resource_request:
        ref = {"resource": attributes.resource, "namespace": attributes.namespace, "name": attributes.name,
               "apiGroup": attributes.api_group, "apiVersion": attributes.api_version,
               "subresource": attributes.subresource}
        event["objectRef"] = {field: value for field, value in ref.items() if value}
    return event


def _stamped(event: dict[str, Any], stage: str, received: str) -> dict[str, Any]:
    """`event` at `stage`, with kube's key order: timestamps after the bodies."""
    stamped = {**event, "stage": stage}
    stamped["requestReceivedTimestamp"] = received
    stamped["stageTimestamp"] = received if stage == "RequestReceived" else _now()
    return stamped


def _body(chunks: list[bytes], content_type: str, omit_managed_fields: bool) -> Any:
    """A request or response body as an object (JSON or YAML), or None (protobuf, empty, unparsable)."""
    raw = b"".join(chunks)
    if not raw:
        return None
    try:
        obj = yaml.safe_load(raw) if "yaml" in content_type else orjson.loads(raw)
    except (orjson.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError):
        return None
    if omit_managed_fields and isinstance(obj, dict):
        for item in [obj, *(obj.get("items") or [])]:
            if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
                item["metadata"].pop("managedFields", None)
    return obj


def _response_status(code: int, body: Any) -> dict[str, Any]:
    """`{metadata: {}, code}`, or the fields of the Status the server answered with."""
    if isinstance(body, dict) and body.get("kind") == "Status":
        status = {"metadata": {}}
        status.update({field: body[field] for field in ("status", "message", "reason", "details") if body.get(field)})
        status["code"] = body.get("code", code)
        return status
    return {"metadata": {}, "code": code}


class AuditInitMiddleware:
    """Outermost: gives each request its audit ID (the client's `Audit-ID` header, else a new UUID), sends
    it back as `Audit-Id`, and logs requests that authentication answered 401."""

    def __init__(self, app: ASGIApp, auditor: Auditor) -> None:
        self.app = app
        self.auditor = auditor

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        audit_id = _header(scope, b"audit-id") or str(uuid.uuid4())
        scope[AUDIT_ID] = audit_id
        received = _now()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"audit-id", audit_id.encode("latin-1"))]
            await send(message)

        await self.app(scope, receive, send_with_id)
        if "user" not in scope:
            self._failed_authentication(scope, received)

    def _failed_authentication(self, scope: Scope, received: str) -> None:
        attributes = attributes_for(scope, UserInfo(username=""))
        decision = self.auditor.policy.evaluate(attributes)
        if decision.level == "None" or "ResponseStarted" in decision.omit_stages:
            return
        event = _request_metadata(scope, attributes, decision.level)
        event["responseStatus"] = {"metadata": {}, "message": _auth_methods(scope), "code": 401}
        self.auditor.log.write(_stamped(event, "ResponseStarted", received))


def _auth_methods(scope: Scope) -> str:
    """kube's summary of the credentials a refused request carried."""
    methods = []
    if _header(scope, b"authorization").strip().lower().startswith("bearer "):
        methods.append("bearer")
    if scope.get("extensions", {}).get("tls", {}).get("peercert"):
        methods.append("x509")
    if methods:
        return "Authentication failed, attempted: " + ", ".join(methods)
    return "Authentication failed, no credentials provided"


class AuditMiddleware:
    """After authentication: evaluates the policy for the request and logs its stages."""

    def __init__(self, app: ASGIApp, auditor: Auditor) -> None:
        self.app = app
        self.auditor = auditor

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        attributes = attributes_for(scope, scope["user"])
        decision = self.auditor.policy.evaluate(attributes)
        if decision.level == "None":
            await self.app(scope, receive, send)
            return
        await _AuditedRequest(self.auditor.log, scope, attributes, decision).run(self.app, receive, send)


class _AuditedRequest:
    """One request's event, filled in as the request and its response pass by."""

    def __init__(self, log: AuditLog, scope: Scope, attributes: Attributes, decision: Decision) -> None:
        self.log, self.scope, self.decision = log, scope, decision
        self.received = _now()
        self.event = _request_metadata(scope, attributes, decision.level)
        self.event["user"] = user_info(scope["user"]) if scope.get("user") else {}
        self.long_running = attributes.verb == "watch" or attributes.subresource in STREAMING_SUBRESOURCES
        self.request_chunks: list[bytes] = []
        self.response_chunks: list[bytes] = []
        self.code = 0
        self.capture_response = False

    def emit(self, stage: str) -> None:
        if stage not in self.decision.omit_stages:
            self.log.write(_stamped(self.event, stage, self.received))

    async def run(self, app: ASGIApp, receive: Receive, send: Send) -> None:
        self.emit("RequestReceived")
        wants_request = self.decision.at_least("Request")

        async def audited_receive() -> Message:
            message = await receive()
            if wants_request and message["type"] == "http.request":
                self.request_chunks.append(message.get("body", b""))
            return message

        async def audited_send(message: Message) -> None:
            self._observe(message)
            await send(message)

        try:
            await app(self.scope, audited_receive, audited_send)
        except Exception as exc:
            self._finish_user()
            self.event["responseStatus"] = {"metadata": {}, "status": "Failure", "message":
                                            f"APIServer panic'd: {exc!r}", "reason": "InternalError", "code": 500}
            self.emit("Panic")
            raise
        except BaseException:  # cancelled (the client left, or shutdown): the request still ended
            self._complete()
            raise
        self._complete()

    def _observe(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.code = message["status"]
            # a failure's Status is read at any level; a success's body only at RequestResponse
            self.capture_response = not self.long_running and (
                self.code >= 400 or self.decision.at_least("RequestResponse"))
            if self.long_running:
                self._finish_user()
                self.event["responseStatus"] = {"metadata": {}, "code": self.code}
                self.emit("ResponseStarted")
        elif message["type"] == "http.response.body" and self.capture_response:
            self.response_chunks.append(message.get("body", b""))

    def _finish_user(self) -> None:
        """Impersonation (which runs after us) has decided by now who the request acts as."""
        original = self.scope.get(ORIGINAL_USER)
        if original is not None:
            self.event["user"] = user_info(original)
            self.event["impersonatedUser"] = user_info(self.scope["user"])

    def _complete(self) -> None:
        self._finish_user()
        omit_managed_fields = self.decision.omit_managed_fields
        response = _body(self.response_chunks, "", omit_managed_fields)
        self.event["responseStatus"] = _response_status(self.code or 200, response)
        if self.request_chunks:
            request = _body(self.request_chunks, _header(self.scope, b"content-type"), omit_managed_fields)
            if request is not None:
                self.event["requestObject"] = request
        if response is not None and self.decision.at_least("RequestResponse"):
            self.event["responseObject"] = response
        self.emit("ResponseComplete")

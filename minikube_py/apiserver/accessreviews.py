"""The access reviews of `authorization.k8s.io/v1`: ask the authorizer a question, get the answer back.

Each review is a create that is answered, never stored (`ResourceHandler.create_only`):

* SubjectAccessReview: may `spec.user` / `spec.groups` do `spec.resourceAttributes` (or
  `spec.nonResourceAttributes`)? Used by other components (kubelet, aggregated servers);
* SelfSubjectAccessReview: may *I* do it? (`kubectl auth can-i`, sent as protobuf);
* LocalSubjectAccessReview: a SubjectAccessReview confined to the URL's namespace (namespace admins);
* SelfSubjectRulesReview: everything I may do in `spec.namespace` (`kubectl auth can-i --list`).

Answers come from the server's whole authorizer chain, so they match what the same request would get;
`status.allowed`, `status.denied` (only when an authorizer denied outright) and `status.reason` follow
kube. A review needs permission itself (`create` on the review resource), which the authorization filter
checked before the handler runs; `system:basic-user` grants the self reviews to every authenticated user.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..api import errors
from ..auth.authn import UserInfo
from ..auth.authorizer import PRIVILEGED_GROUP, Attributes, Decision
from ..auth.rbac.policy import Rule
from . import responses
from .handlers import request_user
from .request import RequestInfo

GROUP, VERSION = "authorization.k8s.io", "v1"
EVERYTHING = (Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",)))


def register(server: Any, rbac: Any) -> None:
    """Answer the four reviews in `server.handler`."""
    reviews = AccessReviews(server, rbac)
    for resource, handler in (("subjectaccessreviews", reviews.subject_access_review),
                              ("selfsubjectaccessreviews", reviews.self_subject_access_review),
                              ("localsubjectaccessreviews", reviews.local_subject_access_review),
                              ("selfsubjectrulesreviews", reviews.self_subject_rules_review)):
        server.handler.create_only[(GROUP, VERSION, resource, "")] = handler


class AccessReviews:
    def __init__(self, server: Any, rbac: Any) -> None:
        self.server = server
        self.rbac = rbac

    async def _body(self, request: Request, kind: str) -> dict[str, Any]:
        body, _ = await self.server.handler._read_object(request, None, "CreateOptions", (GROUP, VERSION, kind))
        if not isinstance(body.get("spec"), dict):
            body["spec"] = {}
        return body

    async def subject_access_review(self, request: Request, info: RequestInfo) -> Response:
        review = await self._body(request, "SubjectAccessReview")
        spec = review["spec"]
        problems = _attribute_errors(spec)
        if not spec.get("user") and not spec.get("groups"):
            problems.append(errors.invalid("spec.user", spec.get("user") or "",
                                           "at least one of user or group must be specified"))
        _raise_invalid("SubjectAccessReview", problems)
        return self._answer(review, _spec_user(spec), "")

    async def self_subject_access_review(self, request: Request, info: RequestInfo) -> Response:
        review = await self._body(request, "SelfSubjectAccessReview")
        _raise_invalid("SelfSubjectAccessReview", _attribute_errors(review["spec"]))
        return self._answer(review, request_user(request), "")

    async def local_subject_access_review(self, request: Request, info: RequestInfo) -> Response:
        review = await self._body(request, "LocalSubjectAccessReview")
        spec = review["spec"]
        problems = _attribute_errors(spec)
        if spec.get("nonResourceAttributes") is not None:
            problems.append(errors.invalid("spec.nonResourceAttributes", "",
                                           "disallowed on this kind of request"))
        if not spec.get("user") and not spec.get("groups"):
            problems.append(errors.invalid("spec.user", spec.get("user") or "",
                                           "at least one of user or group must be specified"))
        _raise_invalid("LocalSubjectAccessReview", problems)
        attributes = spec["resourceAttributes"]
        if attributes.get("namespace") and attributes["namespace"] != info.namespace:
            raise errors.bad_request(f"spec.resourceAttributes.namespace must match namespace: {info.namespace}")
        attributes["namespace"] = info.namespace
        review.setdefault("metadata", {})["namespace"] = info.namespace
        return self._answer(review, _spec_user(spec), info.namespace)

    def _answer(self, review: dict[str, Any], user: UserInfo, namespace: str) -> Response:
        attributes = _attributes(review["spec"], user)
        decision, reason = self.server.authorizer.authorize(attributes)
        status: dict[str, Any] = {"allowed": decision is Decision.ALLOW}
        if decision is Decision.DENY:
            status["denied"] = True
        if reason:
            status["reason"] = reason
        review["status"] = status
        review.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        return responses.json_response(review, 201)

    async def self_subject_rules_review(self, request: Request, info: RequestInfo) -> Response:
        review = await self._body(request, "SelfSubjectRulesReview")
        namespace = str(review["spec"].get("namespace") or "")
        if not namespace:
            raise errors.bad_request("no namespace on request")
        rules, problems = self.rules_for(request_user(request), namespace)
        status: dict[str, Any] = {
            "resourceRules": [_resource_rule(r) for r in rules if not r.non_resource_urls],
            "nonResourceRules": [{"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)}
                                 for r in rules if r.non_resource_urls],
            "incomplete": bool(problems)}
        if problems:
            status["evaluationError"] = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
        review["status"] = status
        review.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        return responses.json_response(review, 201)

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """What each authorizer of the chain says `user` may do in `namespace`, in chain order."""
        modes = self.server.options.authorization_mode
        rules: list[Rule] = []
        if PRIVILEGED_GROUP in user.groups or "AlwaysAllow" in modes:
            rules += EVERYTHING
        if "RBAC" not in modes:
            return rules, []
        held, problems = self.rbac.policy().rules_for(user, namespace)
        return rules + held, list(dict.fromkeys(problems))


def _attribute_errors(spec: dict[str, Any]) -> list[errors.FieldError]:
    has_resource = isinstance(spec.get("resourceAttributes"), dict)
    has_non_resource = isinstance(spec.get("nonResourceAttributes"), dict)
    if has_resource and has_non_resource:
        return [errors.invalid("spec.nonResourceAttributes", "",
                               "cannot be specified in combination with resourceAttributes")]
    if not has_resource and not has_non_resource:
        return [errors.invalid("spec.resourceAttributes", "",
                               "exactly one of nonResourceAttributes or resourceAttributes must be specified")]
    return []


def _raise_invalid(kind: str, problems: list[errors.FieldError]) -> None:
    if problems:
        raise errors.invalid_object(kind, GROUP, "", problems)


def _spec_user(spec: dict[str, Any]) -> UserInfo:
    extra = spec.get("extra") or {}
    return UserInfo(username=str(spec.get("user") or ""), uid=str(spec.get("uid") or ""),
                    groups=tuple(str(g) for g in spec.get("groups") or []),
                    extra={str(k): tuple(v or ()) for k, v in extra.items()} if isinstance(extra, dict) else {})


def _attributes(spec: dict[str, Any], user: UserInfo) -> Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(user=user, verb=str(resource.get("verb") or ""),
                          namespace=str(resource.get("namespace") or ""), api_group=str(resource.get("group") or ""),
                          api_version=str(resource.get("version") or ""),
                          resource=str(resource.get("resource") or ""),
                          subresource=str(resource.get("subresource") or ""), name=str(resource.get("name") or ""))
    path = spec["nonResourceAttributes"]
    return Attributes(user=user, verb=str(path.get("verb") or ""), resource_request=False,
                      path=str(path.get("path") or ""))


def _resource_rule(rule: Rule) -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": list(rule.verbs), "apiGroups": list(rule.api_groups),
                           "resources": list(rule.resources)}
    if rule.resource_names:
        out["resourceNames"] = list(rule.resource_names)
    return out



"""The authentication API: TokenRequest, TokenReview and SelfSubjectReview, answered rather than stored.

* `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (`kubectl create token`): a TokenRequest
  in, the same TokenRequest out with `status.token` (a JWT from `auth/serviceaccount.TokenIssuer`) and
  `status.expirationTimestamp`. Audiences default to the API audiences, the lifetime to an hour (at least
  ten minutes); `spec.boundObjectRef` binds the token to a Pod (which must run as this service account),
  Secret or Node, so that deleting that object revokes the token.
* `POST /apis/authentication.k8s.io/v1/tokenreviews`: may this token be used for these audiences? The
  answer is `status.authenticated`, the user, the audiences it is good for, or the error.
* `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` (`kubectl auth whoami`): the requester's user
  as authentication (and impersonation) saw it.

`install(server)` runs at the end of `APIServer.start`: it adds the service-account token authenticator
to the server's authenticator chain (when there are keys to verify with) and registers the three handlers
in `ResourceHandler.create_only`. Authorization has already run (verb `create` on these resources), so
the handlers only decode, validate and answer.
"""

from __future__ import annotations

import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..admission.interface import CREATE
from ..api import errors
from ..api.timestamps import time_string
from ..auth.authn import user_info, with_authenticated_group
from ..auth.serviceaccount import (
    BINDABLE_KINDS,
    BoundObject,
    ServiceAccountTokenAuthenticator,
    TokenIssuer,
    load_public_keys,
    load_signing_key,
)
from . import responses
from .handlers import _warn, request_user
from .request import RequestInfo

GROUP, VERSION = "authentication.k8s.io", "v1"
API_VERSION = f"{GROUP}/{VERSION}"
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 10 * 60
MAX_EXPIRATION_SECONDS = 1 << 32


def install(server: Any) -> None:
    """Wire service-account tokens and the review APIs into a started `APIServer`."""
    options = server.options
    audiences = list(options.api_audiences) or [options.service_account_issuer]
    signing_key = (load_signing_key(options.service_account_signing_key_file)
                   if options.service_account_signing_key_file else None)
    public_keys = [key for path in options.service_account_key_files for key in load_public_keys(path)]
    if not public_keys and signing_key is not None:
        public_keys = [signing_key.public_key()]
    tokens = None
    if public_keys:
        tokens = ServiceAccountTokenAuthenticator(public_keys, options.service_account_issuer, audiences,
                                                  server.cluster_state)
        if server.authenticator is not None:
            server.authenticator.add(tokens)
    issuer = TokenIssuer(signing_key, options.service_account_issuer) if signing_key is not None else None
    api = AuthenticationAPI(server, issuer, tokens, audiences)
    server.handler.create_only.update({
        ("", "v1", "serviceaccounts", "token"): api.token_request,
        (GROUP, VERSION, "tokenreviews", ""): api.token_review,
        (GROUP, VERSION, "selfsubjectreviews", ""): api.self_subject_review,
    })


class AuthenticationAPI:
    """The three handlers, sharing the token issuer and authenticator."""

    def __init__(self, server: Any, issuer: TokenIssuer | None,
                 tokens: ServiceAccountTokenAuthenticator | None, api_audiences: list[str]) -> None:
        self.server = server
        self.issuer = issuer
        self.tokens = tokens
        self.api_audiences = api_audiences

    async def _body(self, request: Request, kind: str) -> tuple[dict[str, Any], list[str]]:
        body, warnings = await self.server.handler._read_object(request, None, "CreateOptions",
                                                                (GROUP, VERSION, kind))
        if body.get("apiVersion") not in (None, "", API_VERSION) or body.get("kind") not in (None, "", kind):
            raise errors.bad_request(f"the body must be a {kind} of {API_VERSION}, not a {body.get('kind')} "
                                     f"of {body.get('apiVersion')}")
        return body, warnings

    # TokenRequest --------------------------------------------------------------------------------

    async def token_request(self, request: Request, info: RequestInfo) -> Response:
        if self.issuer is None:  # kube serves the subresource only with a signing key
            raise errors.route_not_found()
        body, warnings = await self._body(request, "TokenRequest")
        namespace, name = info.namespace, info.name
        _check_target(body.get("metadata") or {}, namespace, name)
        # what the reads below must see, at least: etcd's revision now (one read, shared with other requests)
        revision = await self.server.handler.reads.latest.get()
        service_account = await self._get("serviceaccounts", namespace, name, revision)
        spec = dict(body.get("spec") or {})
        spec["audiences"] = list(spec.get("audiences") or self.api_audiences)
        spec.setdefault("expirationSeconds", DEFAULT_EXPIRATION_SECONDS)
        _validate_token_request(spec)
        bound = await self._bound_objects(spec.get("boundObjectRef"), namespace, name, revision)
        await self._admit(request, info, {**body, "spec": spec})
        token, expires = self.issuer.issue(service_account, spec["audiences"], spec["expirationSeconds"],
                                           bound)
        answer = {
            "kind": "TokenRequest", "apiVersion": API_VERSION,
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": time_string()},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": _rfc3339(expires)},
        }
        return _warn(responses.json_response(answer, 201), warnings)

    async def _admit(self, request: Request, info: RequestInfo, token_request: dict[str, Any]) -> None:
        """Admission sees a TokenRequest as a create of `serviceaccounts/token` (NodeRestriction: a kubelet
        may only ask for tokens bound to its own pods)."""
        store = self.server.stores[("", "v1", "serviceaccounts")]
        admission = self.server.handler.admission_for(request, CREATE, info, store, "CreateOptions", False,
                                                      kind=(GROUP, "v1", "TokenRequest"))
        if admission is not None:
            await admission.mutate(token_request, None)
            await admission.validate(token_request, None)

    async def _get(self, resource: str, namespace: str, name: str, revision: int) -> dict[str, Any]:
        """The object as a read at `revision` or later sees it (404 when missing), once the watch cache has it
        too: the authenticator reads the cache, so a token must not be answered before the objects it names
        are visible there."""
        key = ("", "v1", resource)
        store, cacher = self.server.stores[key], self.server.cachers[key]
        kv = await self.server.handler.read(store, cacher, namespace, name, str(revision))
        await cacher.wait_fresh(kv.mod_revision)
        return store.decode(kv)

    async def _bound_objects(self, ref: Any, namespace: str, service_account: str,
                             revision: int) -> list[BoundObject]:
        """The objects the token is bound to: the referenced one, and for a pod also its node (if any)."""
        if not ref:
            return []
        if not isinstance(ref, dict):
            raise errors.bad_request("spec.boundObjectRef must be an object")
        kind, name, uid = (str(ref.get(field) or "") for field in ("kind", "name", "uid"))
        group, _, version = str(ref.get("apiVersion") or "").rpartition("/")
        if group or kind not in BINDABLE_KINDS:
            raise errors.bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
        if not name:
            raise errors.invalid_object("TokenRequest", GROUP, service_account, [
                errors.required("spec.boundObjectRef.name")])
        obj = await self._get(BINDABLE_KINDS[kind], "" if kind == "Node" else namespace, name, revision)
        if kind == "Pod" and (obj.get("spec") or {}).get("serviceAccountName") != service_account:
            raise errors.bad_request(f'cannot bind token for serviceaccount "{service_account}" to pod '
                                     "running with different serviceaccount name.")
        live_uid = obj["metadata"].get("uid", "")
        if uid and uid != live_uid:
            raise errors.conflict(kind, name, f"the UID in the bound object reference ({uid}) does not match "
                                  "the UID in record. The object might have been deleted and then recreated")
        bound = [BoundObject(kind, name, live_uid)]
        node_name = (obj.get("spec") or {}).get("nodeName") if kind == "Pod" else None
        node = self.server.cluster_state.get("", "nodes", "", node_name) if node_name else None
        if node is not None:  # as kube: the node is named when known, and left out when it cannot be read
            bound.append(BoundObject("Node", node_name, node["metadata"].get("uid", "")))
        return bound

    # TokenReview ---------------------------------------------------------------------------------

    async def token_review(self, request: Request, info: RequestInfo) -> Response:
        body, warnings = await self._body(request, "TokenReview")
        spec = body.get("spec") or {}
        token = spec.get("token")
        if not token:
            raise errors.bad_request("token is required for TokenReview in authentication")
        requested = [aud for aud in spec.get("audiences") or [] if isinstance(aud, str)]
        status = self._review(str(token), requested)
        answer = {"kind": "TokenReview", "apiVersion": API_VERSION,
                  "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
        return _warn(responses.json_response(answer, 201), warnings)

    def _review(self, token: str, requested: list[str]) -> dict[str, Any]:
        """TokenReview.status for `token` and the audiences asked for (default: the API audiences)."""
        result = self.tokens.review(token, requested) if self.tokens is not None else None
        if result is not None:
            status: dict[str, Any] = {"user": user_info(with_authenticated_group(result.user))
                                      if result.user else {}}
            if result.user is not None:
                status.update(authenticated=True, audiences=list(result.audiences))
            if result.error:
                status["error"] = result.error
            return status
        # Other bearer tokens (the static file) are good for the API audiences only, as in kube.
        audiences = [aud for aud in (requested or self.api_audiences) if aud in self.api_audiences]
        chain = self.server.authenticator
        user = chain.authenticate(None, f"Bearer {token}") if audiences and chain is not None else None
        if user is None:
            return {"user": {}}
        return {"authenticated": True, "user": user_info(user), "audiences": audiences}

    # SelfSubjectReview ---------------------------------------------------------------------------

    async def self_subject_review(self, request: Request, info: RequestInfo) -> Response:
        _, warnings = await self._body(request, "SelfSubjectReview")
        answer = {"kind": "SelfSubjectReview", "apiVersion": API_VERSION,
                  "metadata": {"creationTimestamp": time_string()},
                  "status": {"userInfo": user_info(request_user(request))}}
        return _warn(responses.json_response(answer, 201), warnings)


def _check_target(meta: dict[str, Any], namespace: str, name: str) -> None:
    """A TokenRequest may name its service account in the body, but only the one in the URL."""
    problems = []
    if meta.get("name") and meta["name"] != name:
        problems.append(errors.invalid("metadata.name", meta["name"],
                                       "must match the service account name if specified"))
    if meta.get("namespace") and meta["namespace"] != namespace:
        problems.append(errors.invalid("metadata.namespace", meta["namespace"],
                                       "must match the service account namespace if specified"))
    if problems:
        raise errors.invalid_object("TokenRequest", GROUP, name, problems)


def _validate_token_request(spec: dict[str, Any]) -> None:
    seconds = spec["expirationSeconds"]
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise errors.bad_request("spec.expirationSeconds must be an integer")
    problems = []
    if seconds < MIN_EXPIRATION_SECONDS:
        problems.append(errors.invalid("spec.expirationSeconds", seconds,
                                       "may not specify a duration less than 10 minutes"))
    if seconds > MAX_EXPIRATION_SECONDS:
        problems.append(errors.invalid("spec.expirationSeconds", seconds,
                                       "may not specify a duration larger than 2^32 seconds"))
    if problems:
        raise errors.invalid_object("TokenRequest", GROUP, "", problems)


def _rfc3339(unix_seconds: int) -> str:
    return time_string(datetime.datetime.fromtimestamp(unix_seconds, datetime.UTC))

"""The resource handlers: one HTTP request on a resource URL in, one response (or watch stream) out.

`ResourceHandler.handle` is the end of the handler chain for every `/api/...` and `/apis/...` resource
URL: it parses the request info (`request.py`), finds the resource's `ResourceStore`, decodes the body
(`negotiation.py`), calls the registry verb, and shapes the answer (`responses.py`): an object, a list, a
Table, a watch stream or an error Status. Nothing here knows about etcd.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..admission.interface import CREATE, DELETE, UPDATE
from ..api import errors, fieldvalidation
from ..api.kinds import Registry, Resource
from ..auth.authn import UserInfo
from ..store.interface import KeyValue
from . import eviction, negotiation, patch, responses
from .admitter import Admitter, RequestAdmission
from .cacher import Cacher
from .consistency import ConsistentReads
from .fieldmanager import check_apply_config, tracker_for
from .options import ServerOptions
from .registry.deletion import dry_run_requested, parse_delete_options
from .registry.generic import ResourceStore
from .registry.listing import Page, object_filter, parse_list_options
from .registry.strategy import CustomResourceStrategy
from .registry.subresources import ScaleAdmission, bind, set_replicas, to_scale, update_scale
from .request import RequestInfo, query_params, request_info
from .watch import watch_events

SCALE_GVK = ("autoscaling", "v1", "Scale")
ADMISSIONS = "mkpy.admissions"  # scope key: the admission chains bound to the request, for their warnings
# Answers a create on a resource that is not stored: a review or a TokenRequest.
CreateOnlyHandler = Callable[[Request, RequestInfo], Awaitable[Response]]


class ResourceHandler:
    def __init__(self, registry: Registry, stores: dict[tuple[str, str, str], ResourceStore],
                 cachers: dict[tuple[str, str, str], Cacher], reads: ConsistentReads,
                 options: ServerOptions, admitter: Admitter) -> None:
        self.registry = registry
        self.stores = stores
        self.cachers = cachers
        self.options = options
        self.reads = reads
        self.admitter = admitter
        # create-only resources that are answered rather than stored (reviews, TokenRequest), by
        # (group, version, resource, subresource); see `CreateOnlyHandler`
        self.create_only: dict[tuple[str, str, str, str], CreateOnlyHandler] = {}

    def admission_for(self, request: Request, operation: str, info: RequestInfo, store: ResourceStore,
                   options_kind: str, dry_run: bool, *, name: str = "",
                   kind: tuple[str, str, str] | None = None) -> RequestAdmission | None:
        """The admission chain bound to this request (None when no plugin is enabled); also for the
        create-only handlers (a TokenRequest is admitted as a create of `serviceaccounts/token`)."""
        query = query_of(request)
        options: dict[str, Any] = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}
        if dry_run:
            options["dryRun"] = ["All"]
        if query.get("fieldManager"):
            options["fieldManager"] = query["fieldManager"]
        admission = self.admitter.for_request(operation, store, user=request_user(request),
                                              namespace=info.namespace, name=name or info.name,
                                              subresource=info.subresource, dry_run=dry_run, options=options,
                                              kind=kind)
        if admission is not None:  # its plugins' warnings go out as Warning headers (see `handle`)
            request.scope.setdefault(ADMISSIONS, []).append(admission)
        return admission

    async def handle(self, request: Request) -> Response:
        try:
            info = request_info(request.scope)
            if info is None or not info.parts_valid:
                raise errors.route_not_found()
            store = self._store_for(info)
            return _warn(await self._dispatch(request, info, store), _admission_warnings(request))
        except errors.APIError as err:
            return responses.error_response(err)

    def _store_for(self, info: RequestInfo) -> ResourceStore:
        store = self.stores.get((info.group, info.version, info.resource))
        if store is None:
            raise errors.route_not_found()
        if info.namespace and not store.resource.namespaced:
            raise errors.route_not_found()
        sub = store.resource.subresource(info.subresource) if info.subresource else None
        if info.subresource and sub is None:
            raise errors.route_not_found()
        # a verb the resource does not take (a GET of tokenreviews, which are only created), or a subresource
        # the kubelet serves reached with a method the node proxy does not route (a PUT of pods/log)
        if (sub is not None and sub.proxied) or info.verb not in (sub.verbs if sub else store.resource.verbs):
            raise errors.method_not_allowed(info.verb)
        return store

    async def _dispatch(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        verb = info.verb
        if verb in ("get", "list", "watch"):
            return await self._read(request, info, store)
        if verb == "create":
            return await self._create(request, info, store)
        if verb in ("update", "patch"):
            return await self._write(request, info, store)
        if verb == "delete":
            return await self._delete(request, info, store)
        if verb == "deletecollection":
            return await self._delete_collection(request, info, store)
        raise errors.method_not_allowed(verb)

    # reads ----------------------------------------------------------------------------------------

    async def _read(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        query = query_of(request)
        as_table = negotiation.wants_table(request.headers.get("accept", ""))
        include = responses.include_object_param(query.get("includeObject"))
        cacher = self.cachers[(info.group, info.version, info.resource)]
        if info.verb == "watch":
            return self._watch(query, info, store, cacher, as_table, include)
        if info.verb == "get":
            return await self._get(query, info, store, cacher, as_table, include)
        if info.subresource:  # subresources are read one object at a time
            raise errors.route_not_found()
        options = parse_list_options(store.resource, query)
        if options.resource_version == "0" and not options.continue_token and cacher.ready:
            page = _list_from_cache(store, cacher, info.namespace, options)
        else:
            page = await store.list(info.namespace, options)
        if as_table:
            return responses.json_response(responses.table(store.resource, page.objects, include,
                                                           list_rv=str(page.revision), page=page))
        return responses.json_response(responses.list_object(store.resource, page))

    async def _get(self, query: dict[str, str], info: RequestInfo, store: ResourceStore, cacher: Cacher,
                   as_table: bool, include: str) -> Response:
        """One object, from the watch cache once it is fresh enough for the request, else from etcd."""
        kv = await self.read(store, cacher, info.namespace, info.name, query.get("resourceVersion"))
        if not as_table and not info.subresource:
            return Response(cacher.encoded(store, kv), media_type="application/json")
        obj = store.decode(kv)
        if info.subresource == "scale":
            return responses.json_response(to_scale(store.resource, obj))
        if as_table and not info.subresource:
            rv = obj["metadata"].get("resourceVersion")
            return responses.json_response(responses.table(store.resource, [obj], include, list_rv=rv))
        return responses.json_response(obj)

    async def read(self, store: ResourceStore, cacher: Cacher, namespace: str, name: str,
                   resource_version: str | None = None) -> KeyValue:
        """The stored value of one object as a read at `resource_version` (unset: a consistent read) sees
        it: from the watch cache once it is fresh enough, else from etcd; 404 when there is none."""
        key = store.key(namespace, name)
        if await self.reads.fresh(cacher, resource_version):
            kv = cacher.objects.get(key)
        else:
            kv = await store.storage.get(key)
        if kv is None:
            raise errors.not_found(store.resource.group_resource, name)
        return kv

    def _watch(self, query: dict[str, str], info: RequestInfo, store: ResourceStore, cacher: Cacher,
               as_table: bool, include: str) -> Response:
        options = parse_list_options(store.resource, query)
        if info.name:  # the deprecated /watch-a-name form: GET .../pods/web-1?watch=true
            options = parse_list_options(store.resource, {**query, "fieldSelector": f"metadata.name={info.name}"})
        timeout = options.timeout_seconds
        if timeout is None:
            timeout = self.options.min_request_timeout * (1 + random.random())
        encode = _table_encoder(store, include) if as_table else None
        body = _watch_stream(watch_events(store, cacher, info.namespace, options, encode), timeout)
        return StreamingResponse(body, media_type="application/json")

    # writes ---------------------------------------------------------------------------------------

    async def _create(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        res = store.resource
        dry_run = dry_run_requested(None, query_of(request).get("dryRun"), "CreateOptions")
        handler = self.create_only.get((info.group, info.version, info.resource, info.subresource))
        if handler is not None:
            return await handler(request, info)
        if info.subresource == "binding" or res.plural == "bindings":
            return await self._bind(request, info)
        if info.subresource == "eviction":
            return await eviction.handle(self, request, info)
        if info.name or (res.namespaced and not info.namespace):
            raise errors.method_not_allowed("create")
        tracker = tracker_for(store, query_of(request), _user_agent(request), "CreateOptions")
        body, warnings = await self._read_object(request, res, "CreateOptions")
        admission = self.admission_for(request, CREATE, info, store, "CreateOptions", dry_run)
        created = await store.create(info.namespace, body, dry_run=dry_run, tracker=tracker, admission=admission)
        return _warn(responses.json_response(created, 201), warnings)

    async def _bind(self, request: Request, info: RequestInfo) -> Response:
        binding, _ = await self._read_object(request, None, "CreateOptions", ("", "v1", "Binding"))
        if info.name:
            binding.setdefault("metadata", {})["name"] = binding.get("metadata", {}).get("name") or info.name
            if binding["metadata"]["name"] != info.name:
                raise errors.bad_request("the name of the binding does not match the name of the pod")
        pods = self.stores[("", "v1", "pods")]
        # admission sees the Binding, as a create of pods/binding (the older `bindings` resource included)
        admission = self.admission_for(request, CREATE, info, pods, "CreateOptions", False,
                                       name=binding.get("metadata", {}).get("name", ""), kind=("", "v1", "Binding"))
        if admission is not None:
            await admission.mutate(binding, None)
            await admission.validate(binding, None)
        return responses.json_response(await bind(pods, info.namespace, binding), 201)

    async def _write(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        if not info.name:
            raise errors.method_not_allowed(info.verb)
        options_kind = "PatchOptions" if info.verb == "patch" else "UpdateOptions"
        dry_run = dry_run_requested(None, query_of(request).get("dryRun"), options_kind)
        if info.verb == "patch":
            return await self._patch(request, info, store, dry_run)
        if info.subresource == "scale":
            scale, warnings = await self._read_object(request, None, "UpdateOptions", SCALE_GVK)
            tracker = tracker_for(store, query_of(request), _user_agent(request), "UpdateOptions",
                                  subresource="scale")
            admission = self.admission_for(request, UPDATE, info, store, "UpdateOptions", dry_run, kind=SCALE_GVK)
            updated = await update_scale(store, info.namespace, info.name, scale, dry_run=dry_run,
                                         tracker=tracker, admission=admission)
            return _warn(responses.json_response(updated), warnings)
        body, warnings = await self._read_object(request, store.resource, "UpdateOptions")
        sub = "status" if info.subresource in ("status", "finalize") else ""
        if info.subresource == "finalize":
            return responses.json_response(await self._finalize(store, info.name, body, dry_run))
        tracker = tracker_for(store, query_of(request), _user_agent(request), "UpdateOptions", subresource=sub)
        admission = self.admission_for(request, UPDATE, info, store, "UpdateOptions", dry_run)
        updated = await store.update(info.namespace, info.name, body, subresource=sub, dry_run=dry_run,
                                     tracker=tracker, admission=admission)
        return _warn(responses.json_response(updated), warnings)

    async def _finalize(self, store: ResourceStore, name: str, body: dict[str, Any], dry_run: bool) -> Any:
        """`namespaces/<name>/finalize`: the namespace controller's way to drop `spec.finalizers`."""
        finalizers = (body.get("spec") or {}).get("finalizers") or []

        def set_finalizers(ns: dict[str, Any]) -> dict[str, Any]:
            ns.setdefault("spec", {})["finalizers"] = finalizers
            if not finalizers:
                del ns["spec"]["finalizers"]
            return ns

        return await store.guaranteed_update("", name, set_finalizers, subresource="finalize", dry_run=dry_run)

    async def _patch(self, request: Request, info: RequestInfo, store: ResourceStore, dry_run: bool) -> Response:
        content_type = negotiation.body_media_type(request.headers.get("content-type"))
        if content_type == patch.APPLY_PATCH and info.subresource in ("", "status"):
            return await self._apply(request, info, store, dry_run)
        raw = await self._read_raw(request)
        patch_body = patch.parse_patch(content_type, raw, store.resource)
        query = query_of(request)
        mode = fieldvalidation.directive(query.get("fieldValidation"), "PatchOptions")
        strict = fieldvalidation.patch_errors(content_type, raw, mode)
        sub = info.subresource
        tracker = tracker_for(store, query, _user_agent(request), "PatchOptions", subresource=sub)
        gvk = SCALE_GVK if sub == "scale" else _gvk(store.resource)
        precondition = ""
        if isinstance(patch_body, dict) and isinstance(patch_body.get("metadata"), dict):
            precondition = str(patch_body["metadata"].get("resourceVersion") or "")
        warnings: list[str] = []

        def apply(live: dict[str, Any]) -> dict[str, Any]:
            nonlocal warnings
            target = to_scale(store.resource, live, for_update=True) if sub == "scale" else live
            patched = patch.apply_patch(content_type, target, patch_body, gvk)
            patched, warnings = fieldvalidation.check_patched(gvk, patched, mode, patch_strict_errors=strict,
                                                              patch=patch_body, content_type=content_type)
            if sub == "scale":
                return set_replicas(store.resource, live, (patched.get("spec") or {}).get("replicas"))
            negotiation.check_object_meta(patched.setdefault("metadata", {}))
            return patched

        admission = self.admission_for(request, UPDATE, info, store, "PatchOptions", dry_run, kind=gvk)
        if admission is not None and sub == "scale":
            admission = ScaleAdmission(store.resource, admission)
        updated = await store.guaranteed_update(info.namespace, info.name, apply, precondition=precondition,
                                                subresource="" if sub == "scale" else sub, dry_run=dry_run,
                                                tracker=tracker, admission=admission)
        return _warn(responses.json_response(to_scale(store.resource, updated) if sub == "scale" else updated),
                     warnings)

    async def _apply(self, request: Request, info: RequestInfo, store: ResourceStore, dry_run: bool) -> Response:
        """Server-side apply: merge the configuration into the object, or create it from the configuration
        (201) if there is none yet."""
        query = query_of(request)
        mode = fieldvalidation.directive(query.get("fieldValidation"), "PatchOptions")
        raw = await self._read_raw(request)
        config = negotiation.decode_body(raw, negotiation.YAML)
        check_apply_config(config, store.resource, info.name)
        config, warnings = self._checked_fields(store.resource, config, None, mode, None)
        tracker = tracker_for(store, query, _user_agent(request), "PatchOptions", subresource=info.subresource,
                              config=config)
        try:
            updated = await store.guaranteed_update(
                info.namespace, info.name, tracker.mutate, subresource=info.subresource, dry_run=dry_run,
                tracker=tracker, admission=self.admission_for(request, UPDATE, info, store, "PatchOptions", dry_run))
        except errors.APIError as err:
            if err.code != 404 or info.subresource:
                raise
            admission = self.admission_for(request, CREATE, info, store, "PatchOptions", dry_run)
            created = await store.create(info.namespace, tracker.mutate({}), dry_run=dry_run, tracker=tracker,
                                         admission=admission)
            return _warn(responses.json_response(created, 201), warnings)
        return _warn(responses.json_response(updated), warnings)

    async def _delete(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        if info.subresource:
            raise errors.method_not_allowed("delete")
        raw = await self._read_raw(request)
        body = negotiation.decode_body(raw, request.headers.get("content-type")) if raw.strip() else None
        options = parse_delete_options(body, query_of(request))
        admission = self.admission_for(request, DELETE, info, store, "DeleteOptions", options.dry_run)
        obj, gone = await store.delete(info.namespace, info.name, options, admission)
        if gone and store.resource.plural != "pods":
            return responses.json_response(responses.success_status(store.resource, obj))
        return responses.json_response(obj, 200)

    async def _delete_collection(self, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
        raw = await self._read_raw(request)
        body = negotiation.decode_body(raw, request.headers.get("content-type")) if raw.strip() else None
        delete_options = parse_delete_options(body, query_of(request))
        page = await store.list(info.namespace, parse_list_options(store.resource, query_of(request)))
        deleted = []
        for obj in page.objects:
            meta = obj["metadata"]
            admission = self.admission_for(request, DELETE, info, store, "DeleteOptions", delete_options.dry_run,
                                        name=meta["name"])
            try:
                now, _ = await store.delete(meta.get("namespace", ""), meta["name"], delete_options, admission)
                deleted.append(now)
            except errors.APIError as err:
                if err.code != 404:
                    raise
        page.objects, page.continue_token, page.remaining = deleted, "", None
        return responses.json_response(responses.list_object(store.resource, page))

    # bodies ---------------------------------------------------------------------------------------

    async def _read_raw(self, request: Request) -> bytes:
        limit = self.options.max_request_body_bytes
        negotiation.check_body_size(request.headers.get("content-length"), limit)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise errors.too_large(limit)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _read_object(self, request: Request, resource: Resource | None, options_kind: str,
                           gvk: tuple[str, str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
        """The body as an object of `resource` (or of kind `gvk`), checked field by field under the request's
        `fieldValidation`, with the warnings to send back."""
        raw = await self._read_raw(request)
        if not raw.strip():
            raise errors.bad_request("the request body is empty; an object was expected")
        content_type = request.headers.get("content-type")
        obj = negotiation.decode_body(raw, content_type)
        mode = fieldvalidation.directive(query_of(request).get("fieldValidation"), options_kind)
        is_json = negotiation.body_media_type(content_type) == negotiation.JSON
        obj, warnings = self._checked_fields(resource, obj, raw if is_json else None, mode, gvk)
        if resource is not None:
            check_type(obj, resource)
        return obj, warnings

    def _checked_fields(self, resource: Resource | None, obj: dict[str, Any], raw_json: bytes | None, mode: str,
                        gvk: tuple[str, str, str] | None) -> tuple[dict[str, Any], list[str]]:
        """`obj` checked field by field under `mode` (unknown fields dropped), with the warnings to send."""
        obj, warnings = fieldvalidation.check_fields(gvk or _gvk(resource), obj, raw_json, mode)
        if resource is not None and resource.custom and gvk is None:
            strategy = self.stores[(resource.group, resource.version, resource.plural)].strategy
            assert isinstance(strategy, CustomResourceStrategy)
            warnings += fieldvalidation.check_unknown_fields(_gvk(resource), strategy.unknown_fields(obj), mode)
        return obj, warnings


def request_user(request: Request) -> UserInfo:
    """Who is making the request (set by authentication, or by impersonation)."""
    return request.scope["user"]


def _gvk(resource: Resource | None) -> tuple[str, str, str]:
    assert resource is not None
    return (resource.group, resource.version, resource.kind)


def _user_agent(request: Request) -> str:
    return request.headers.get("user-agent", "")


def _admission_warnings(request: Request) -> list[str]:
    """What this request's admission plugins said for the client (kube's `warning.AddWarning`), once each."""
    admissions = request.scope.get(ADMISSIONS)
    if not admissions:  # a read
        return []
    return list(dict.fromkeys(text for admission in admissions for text in admission.attributes.warnings))


def _warn(response: Response, warnings: list[str]) -> Response:
    """Attach kube-style `Warning` headers (kubectl prints each as `Warning: ...`)."""
    for text in warnings:
        response.headers.append("Warning", fieldvalidation.warning_header(text))
    return response


def query_of(request: Request) -> dict[str, str]:
    """The request's query parameters (see `request.query_params`)."""
    return query_params(request.scope)


def check_type(obj: dict[str, Any], resource: Resource) -> None:
    """The body's apiVersion and kind must name the URL's resource (they may be left out)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version not in (None, "") and api_version != resource.api_version:
        raise errors.bad_request(f"the API version in the data ({api_version}) does not match the expected API "
                                 f"version ({resource.api_version})")
    if kind not in (None, "") and kind != resource.kind:
        raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind "
                                 f"({resource.kind})")
    negotiation.check_object_meta(obj.setdefault("metadata", {}))
    obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind


def _list_from_cache(store: ResourceStore, cacher: Cacher, namespace: str, options: Any) -> Page:
    """A `resourceVersion=0` list ("any data is fine"), served from the watch cache as kube does; `limit`
    is not honoured there, also as in kube."""
    kvs, revision = cacher.snapshot(store.prefix(namespace))
    keep = object_filter(store.resource, options)
    objects = [obj for obj in map(store.decode, kvs) if keep is None or keep(obj)]
    return Page(objects, revision, "", None)


def _table_encoder(store: ResourceStore, include: str) -> Callable[[str, dict[str, Any]], bytes]:
    """Encode watch events as one-row Tables; only the first carries the column definitions."""
    first = True

    def encode(kind: str, obj: dict[str, Any]) -> bytes:
        nonlocal first
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            obj = responses.table(store.resource, [obj], include, list_rv=obj["metadata"].get("resourceVersion"),
                                  with_columns=first)
            first = False
        return orjson.dumps({"type": kind, "object": obj}) + b"\n"

    return encode


async def _watch_stream(lines: AsyncIterator[bytes], timeout: float) -> AsyncIterator[bytes]:
    try:
        async with asyncio.timeout(timeout):
            async for line in lines:
                yield line
    except TimeoutError:
        return
    except errors.APIError as err:
        yield orjson.dumps({"type": "ERROR", "object": err.to_status()}) + b"\n"

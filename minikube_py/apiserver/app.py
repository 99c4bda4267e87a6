"""The apiserver application: the Starlette app, its routes, and what runs at startup and shutdown.

Request flow (see docs/architecture.md):

    TLS (server.py) → authentication (authentication.py) → routing (here) → ResourceHandler (handlers.py)
    → registry (registry/) → storage (store/, a real etcd)

Routes: `/version`, `/healthz`, `/livez`, `/readyz`; discovery (`/api`, `/apis`, `/api/v1`, `/apis/<g>`,
`/apis/<g>/<v>`); and every resource URL below `/api/v1/` and `/apis/<g>/<v>/`. The subresources a kubelet
serves (nodeproxy.py) and metrics.k8s.io (metrics.py, from the kubelets' stats) have routes of their own.

At startup the app connects to etcd, starts the namespace cache and the compactor, and bootstraps the
system namespaces and the `kubernetes` Service. `build_app` takes an already-built storage in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from .. import heap
from ..admission.chain import AdmissionChain, enabled_plugins
from ..api import errors
from ..api.crdschema import CompiledSchema
from ..api.kinds import NODE_PROXY, POD_STREAMS, Registry, Resource, default_registry
from ..api.metrics import GROUP as METRICS_GROUP
from ..auth.authn import Authenticator
from ..auth.authorizer import AuthorizerChain
from ..auth.pki import first_service_ip
from ..store.compactor import Compactor
from ..store.etcd import EtcdStorage
from ..store.interface import Storage
from . import authnreviews, discovery, rbac, responses
from .admitter import Admitter, CachedClusterState
from .authorization import build_authorizer
from .background import BackgroundTask
from .bootstrap import bootstrap
from .cacher import Cacher, IndexedTrigger, WatchHub
from .consistency import ConsistentReads
from .customresources import CustomResourceController
from .encryption import with_encryption
from .handlers import ResourceHandler
from .metrics import MetricsAPI
from .namespaces import NamespaceLifecycle
from .nodeproxy import NodeProxy
from .openapi import OpenAPIDocuments
from .options import ServerOptions
from .registry.allocator import node_port_range, service_ip_range
from .registry.generic import ResourceStore
from .registry.services import ServiceStrategy
from .registry.strategy import CustomResourceStrategy, strategy_for
from .request import request_info

log = logging.getLogger(__name__)

VERSION_INFO = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.4+mkpy", "gitCommit": "", "gitTreeState": "clean",
    "buildDate": "2026-11-21T00:00:00Z", "goVersion": "python", "compiler": "cpython", "platform": "linux/amd64",
}


def storage_ttls(options: ServerOptions) -> dict[str, int]:
    """Seconds the objects under a storage prefix live after their last write (kube's TTLFunc): Events, of
    both versions that store them there, expire after --event-ttl; everything else lives until deleted."""
    return {"/registry/events/": options.event_ttl}


def build_stores(registry: Registry, storage: Storage, options: ServerOptions,
                 namespaces: NamespaceLifecycle) -> dict[tuple[str, str, str], ResourceStore]:
    ips = service_ip_range(storage, options.service_cluster_ip_range)
    ports = node_port_range(storage, options.service_node_port_range)
    ttls = storage_ttls(options)
    stores = {}
    for res in registry.resources:
        strategy = ServiceStrategy(res, ips, ports) if res.group_resource == "services" else strategy_for(res)
        stores[(res.group, res.version, res.plural)] = ResourceStore(res, storage, strategy, namespaces.check,
                                                                     ttl=ttls.get(res.key_prefix, 0))
    return stores


# kube's trigger functions: the field a resource's watch cache indexes its watchers by (cacher.py)
INDEXED_TRIGGERS = {"pods": "spec.nodeName"}


def build_cachers(hub: WatchHub, registry: Registry) -> dict[tuple[str, str, str], Cacher]:
    """One watch cache per storage prefix; versions that share storage (events) share the cache."""
    by_prefix: dict[str, Cacher] = {}
    return {(res.group, res.version, res.plural): by_prefix.setdefault(res.key_prefix, Cacher(hub, res.key_prefix))
            for res in registry.resources}


def attach_caches(cachers: dict[tuple[str, str, str], Cacher],
                  stores: dict[tuple[str, str, str], ResourceStore]) -> None:
    """Give each store its watch cache (updates start from the cached copy), and the caches of the resources
    in INDEXED_TRIGGERS their trigger, read through their store."""
    for gvr, store in stores.items():
        store.cache = cachers[gvr]
        field = INDEXED_TRIGGERS.get(store.resource.group_resource)
        if field is not None and cachers[gvr].trigger is None:
            cachers[gvr].trigger = IndexedTrigger(field, store)


class APIServer:
    """Everything one apiserver process holds: storage, stores, caches, background tasks."""

    def __init__(self, options: ServerOptions, storage: Storage | None = None) -> None:
        self.options = options
        self.registry = default_registry()
        self.storage = storage
        self.stores: dict[tuple[str, str, str], ResourceStore] = {}
        self.cachers: dict[tuple[str, str, str], Cacher] = {}
        self.watch_hub: WatchHub | None = None
        self.namespaces: NamespaceLifecycle | None = None
        self.compactor: Compactor | None = None
        self.custom_resources: CustomResourceController | None = None
        self.background: list[BackgroundTask] = []
        self.handler: ResourceHandler | None = None
        self.ready = asyncio.Event()
        self.openapi = OpenAPIDocuments(self.registry, custom_schema=self._custom_schema)
        self.authenticator: Authenticator | None = None  # set by server.make_asgi_app
        self.authorizer: AuthorizerChain = build_authorizer(["AlwaysAllow"], self)  # the real one at start
        self.node_proxy = NodeProxy(self)
        self.metrics = MetricsAPI(self, self.node_proxy)

    async def start(self) -> None:
        if self.storage is None:
            self.storage = with_encryption(await EtcdStorage.connect(self.options.etcd_servers),
                                           self.options.encryption_provider_config, self.registry)
        self.watch_hub = WatchHub(self.storage)
        self.watch_hub.start()
        self.cachers = build_cachers(self.watch_hub, self.registry)
        for cacher in set(self.cachers.values()):
            cacher.start()
        self.namespaces = NamespaceLifecycle(self.storage, self.cachers[("", "v1", "namespaces")])
        self.stores = build_stores(self.registry, self.storage, self.options, self.namespaces)
        attach_caches(self.cachers, self.stores)
        self.cluster_state = CachedClusterState(self.stores, self.cachers)
        plugins = enabled_plugins(self.options.enable_admission_plugins, self.options.disable_admission_plugins)
        self.admission = AdmissionChain.build(plugins, self.cluster_state, self.options)
        self.handler = ResourceHandler(self.registry, self.stores, self.cachers, ConsistentReads(self.storage),
                                       self.options, Admitter(self.admission))
        address = self.options.advertise_address or self.options.bind_address
        await bootstrap(self.stores, str(first_service_ip(self.options.service_cluster_ip_range)), address,
                        self.options.secure_port)
        self.rbac = await rbac.install(self)
        self.compactor = Compactor(self.storage, interval=self.options.etcd_compaction_interval)
        self.compactor.start()
        self.custom_resources = CustomResourceController(self)
        self.background = [
            BackgroundTask("clusterrole aggregation", self.rbac.follow_cluster_roles, retry_after=1).start(),
            BackgroundTask("custom resources", self.custom_resources.follow).start(),
        ]
        self.authorizer = build_authorizer(self.options.authorization_mode, self)
        authnreviews.install(self)
        heap.settle()
        self.ready.set()

    def install(self, res: Resource, schema: CompiledSchema) -> None:
        """Start serving `res` (a custom resource's version, checked by `schema`): registry, store and watch
        cache."""
        assert self.storage is not None and self.namespaces is not None
        self.registry.add(res)
        gvr = (res.group, res.version, res.plural)
        self.stores[gvr] = ResourceStore(res, self.storage, CustomResourceStrategy(res, schema),
                                         self.namespaces.check)
        shared = next((c for c in self.cachers.values() if c.prefix == res.key_prefix), None)
        if shared is None:
            shared = Cacher(self.watch_hub, res.key_prefix)
            shared.start()
        self.cachers[gvr] = shared
        self.stores[gvr].cache = shared

    def uninstall(self, res: Resource) -> None:
        gvr = (res.group, res.version, res.plural)
        self.registry.remove(*gvr)
        self.stores.pop(gvr, None)
        cacher = self.cachers.pop(gvr, None)
        if cacher is not None and cacher not in self.cachers.values():
            asyncio.get_running_loop().create_task(cacher.stop())

    async def stop(self) -> None:
        for task in self.background:
            await task.stop()
        for cacher in set(self.cachers.values()):
            await cacher.stop()
        if self.watch_hub:
            await self.watch_hub.stop()
        if self.compactor:
            await self.compactor.stop()
        if self.storage:
            await self.storage.close()

    # routes ---------------------------------------------------------------------------------------

    async def resources(self, request: Request) -> Response:
        assert self.handler is not None
        parts = [p for p in request.scope["path"].split("/") if p]
        if len(parts) == 1:  # "/api/" or "/apis/"
            return await (self.api_root if parts[0] == "api" else self.apis_root)(request)
        if parts[0] == "api" and len(parts) == 2:
            return self._resource_list("", parts[1])
        if parts[0] == "apis" and len(parts) == 2:
            versions = self.registry.group_versions().get(parts[1])
            if not versions:
                return responses.error_response(errors.route_not_found())
            group = discovery.api_group(parts[1], versions)
            return responses.json_response({"kind": "APIGroup", "apiVersion": "v1", **group})
        if parts[0] == "apis" and len(parts) == 3:
            return self._resource_list(parts[1], parts[2])
        return await self.handler.handle(request)

    def _resource_list(self, group: str, version: str) -> Response:
        doc = discovery.api_resource_list(self.registry, group, version)
        if doc is None:
            return responses.error_response(errors.route_not_found())
        return responses.json_response(doc)

    async def api_root(self, request: Request) -> Response:
        if discovery.wants_aggregated(request.headers.get("accept", "")):
            return responses.json_response(discovery.aggregated(self.registry, legacy=True),
                                           media_type=discovery.AGGREGATED_CONTENT_TYPE)
        address = f"{self.options.advertise_address or self.options.bind_address}:{self.options.secure_port}"
        return responses.json_response(discovery.api_versions(address))

    async def apis_root(self, request: Request) -> Response:
        if discovery.wants_aggregated(request.headers.get("accept", "")):
            return responses.json_response(discovery.aggregated(self.registry, legacy=False),
                                           media_type=discovery.AGGREGATED_CONTENT_TYPE)
        return responses.json_response(discovery.api_group_list(self.registry))

    async def openapi_index(self, request: Request) -> Response:
        return responses.json_response(self.openapi.index())

    async def openapi_document(self, request: Request) -> Response:
        path = request.path_params["path"].strip("/")
        doc = self.openapi.documents.get(path)
        if doc is None:
            return responses.error_response(errors.route_not_found())
        headers = self.openapi.headers(path, request.query_params.get("hash"))
        return Response(doc, media_type="application/json", headers=headers)

    def _custom_schema(self, res: Resource) -> dict[str, Any] | None:
        """The `openAPIV3Schema` of a custom resource's CRD version, for its OpenAPI document."""
        return self.custom_resources.schemas.get(res) if self.custom_resources else None

    async def version(self, request: Request) -> Response:
        return responses.json_response(VERSION_INFO)

    async def health(self, request: Request) -> Response:
        checks = [("ping", True), ("etcd", await self._etcd_ok())]
        if request.url.path.rstrip("/").endswith("readyz"):
            checks.append(("bootstrap", self.ready.is_set()))
        ok = all(passed for _, passed in checks)
        kind = request.url.path.strip("/")
        if "verbose" in request.query_params:
            lines = [f"[{'+' if passed else '-'}]{name} {'ok' if passed else 'failed'}" for name, passed in checks]
            lines.append(f"{kind} check {'passed' if ok else 'failed'}")
            return PlainTextResponse("\n".join(lines) + "\n", status_code=200 if ok else 500)
        return PlainTextResponse("ok" if ok else f"{kind} check failed", status_code=200 if ok else 500)

    async def _etcd_ok(self) -> bool:
        if self.storage is None:
            return False
        try:
            async with asyncio.timeout(2):
                await self.storage.current_revision()
            return True
        except Exception:  # any failure to reach etcd is "not healthy", never a 500 traceback
            return False

    def routes(self) -> list[BaseRoute]:
        # routes are tried in order, and resource URLs are nearly all the traffic: they come first, leaving
        # to their own routes the pod and node subresources a kubelet serves (logs, exec, ..., nodes/proxy)
        # and metrics.k8s.io
        elsewhere = [*self.node_proxy.routes(), *self.metrics.routes()]
        return [
            ResourceRoute("/api/{rest:path}", self.resources, elsewhere),
            ResourceRoute("/apis/{rest:path}", self.resources, elsewhere),
            *elsewhere,
            Route("/api", self.api_root), Route("/apis", self.apis_root),
            Route("/version", self.version), Route("/version/", self.version),
            Route("/healthz", self.health), Route("/livez", self.health), Route("/readyz", self.health),
            Route("/openapi/v3", self.openapi_index), Route("/openapi/v3/{path:path}", self.openapi_document),
        ]


_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
_PROXIED = frozenset(sub.name for sub in (*POD_STREAMS, NODE_PROXY))  # the subresources a kubelet serves


class ResourceRoute(Route):
    """Every URL under `/api/` or `/apis/`, except those one of the `elsewhere` routes matches: a request for a
    subresource a kubelet serves, or for metrics.k8s.io, is tried against them (and nothing else is)."""

    def __init__(self, path: str, endpoint: Callable[[Request], Awaitable[Response]],
                 elsewhere: list[BaseRoute]) -> None:
        super().__init__(path, endpoint, methods=_METHODS)
        self.elsewhere = elsewhere

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = super().matches(scope)
        if match is Match.FULL and self._maybe_elsewhere(scope) and any(
                route.matches(scope)[0] is Match.FULL for route in self.elsewhere):
            return Match.NONE, {}
        return match, child_scope

    @staticmethod
    def _maybe_elsewhere(scope: Scope) -> bool:
        info = request_info(scope)
        return info is not None and (info.subresource in _PROXIED or info.group == METRICS_GROUP)


async def _not_found(request: Request, exc: Exception) -> Response:
    return responses.error_response(errors.route_not_found())


async def _method_not_allowed(request: Request, exc: Exception) -> Response:
    return responses.error_response(errors.method_not_allowed(request.method))


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error serving %s %s", request.method, request.url.path)
    return responses.error_response(errors.internal(type(exc).__name__))


def build_app(server: APIServer) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        await server.start()
        try:
            yield {}
        finally:
            await server.stop()

    return Starlette(routes=server.routes(), lifespan=lifespan,
                     exception_handlers={404: _not_found, 405: _method_not_allowed, Exception: _internal_error})

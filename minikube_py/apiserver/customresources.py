"""Serving CustomResourceDefinitions: the apiserver side of kube's apiextensions-apiserver.

`CustomResourceController` follows the CRDs in the apiserver's own watch cache and keeps what is served in
step with them:

* a new or changed CRD installs one resource per served version (registry entry, `ResourceStore` whose
  strategy defaults, prunes and validates by the version's structural schema, watch cache), after which discovery, Tables, lists, watches and writes work for it like for a built-in kind,
  and the CRD's status gets the `NamesAccepted` and `Established` conditions;
* a CRD being deleted (it carries the `customresourcecleanup.apiextensions.k8s.io` finalizer from its
  creation) stops being served, all its objects are deleted, and then the finalizer is removed so the CRD
  itself goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ..api.crd import CLEANUP_FINALIZER, accepted_status, resources_for_crd, version_schema
from ..api.crdschema import compile_schema
from ..api.kinds import Resource
from ..store.errors import KeyNotFoundError, StoreError
from . import codec

if TYPE_CHECKING:
    from .app import APIServer

log = logging.getLogger(__name__)
CRDS = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")


class CustomResourceController:
    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.installed: dict[str, list[Resource]] = {}
        self.schemas: dict[Resource, dict[str, Any]] = {}  # each served version's openAPIV3Schema
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="custom-resources")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self._follow()
            except Exception:  # keep serving CRDs whatever one of them does; say what happened
                log.exception("custom resource controller failed; restarting")
                await asyncio.sleep(0.5)

    async def _follow(self) -> None:
        cacher, store = self.server.cachers[CRDS], self.server.stores[CRDS]
        while True:
            while not cacher.ready:
                await asyncio.sleep(0.05)
            kvs, revision = cacher.snapshot(store.prefix(""))
            watcher = cacher.watch(store.prefix(""), revision)
            if watcher is None:
                continue
            try:
                for kv in kvs:
                    await self._sync(store.decode(kv))
                async for event in watcher:
                    if event.type == "PUT" and event.kv is not None:
                        await self._sync(store.decode(event.kv))
                    elif event.type == "DELETE" and event.prev is not None:
                        self._uninstall(store.decode(event.prev)["metadata"]["name"])
            finally:
                watcher.close()

    async def _sync(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        try:
            if crd["metadata"].get("deletionTimestamp"):
                await self._clean_up(crd)
                return
            wanted = resources_for_crd(crd)
            schemas = {res: version_schema(crd, res.version) for res in wanted}
            if wanted != self.installed.get(name) or any(self.schemas.get(r) != s for r, s in schemas.items()):
                self._uninstall(name)
                self._install(name, wanted, schemas)
            if not _established(crd):
                await self._record_status(name)
        except (StoreError, ValueError) as exc:
            log.warning("custom resource definition %s: %s", name, exc)

    def _install(self, name: str, resources: list[Resource], schemas: dict[Resource, dict[str, Any]]) -> None:
        for res in resources:
            self.server.install(res, compile_schema(schemas[res]))
            self.schemas[res] = schemas[res]
        self.installed[name] = resources

    def _uninstall(self, name: str) -> None:
        for res in self.installed.pop(name, []):
            self.schemas.pop(res, None)
            self.server.uninstall(res)

    async def _record_status(self, name: str) -> None:
        def accept(crd: dict[str, Any]) -> dict[str, Any]:
            crd["status"] = accepted_status(crd, codec.now_rfc3339())
            return crd

        await self.server.stores[CRDS].guaranteed_update("", name, accept, subresource="status")

    async def _clean_up(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        resources = self.installed.get(name) or resources_for_crd(crd)
        self._uninstall(name)
        if resources:
            await self._delete_all(resources[0].key_prefix)
        if CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or []):
            def release(live: dict[str, Any]) -> dict[str, Any]:
                live["metadata"]["finalizers"] = [f for f in live["metadata"].get("finalizers") or []
                                                  if f != CLEANUP_FINALIZER]
                return live

            await self.server.stores[CRDS].guaranteed_update("", name, release)

    async def _delete_all(self, prefix: str) -> None:
        storage = self.server.storage
        assert storage is not None
        for kv in (await storage.list(prefix)).items:
            with contextlib.suppress(KeyNotFoundError):
                await storage.delete(kv.key)


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

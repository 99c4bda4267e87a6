"""Serving CustomResourceDefinitions: the apiserver side of kube's apiextensions-apiserver.

`CustomResourceController` follows the CRDs in the apiserver's own watch cache and keeps what is served in
step with them:

* a new or changed CRD first has its names weighed against those the other CRDs of its group accepted
  (`api.crd.naming_status`); its status records the accepted names and the `NamesAccepted` and
  `Established` conditions. Once established, it is served under its accepted names: one resource per served
  version (registry entry, `ResourceStore` whose strategy defaults, prunes and validates by the version's
  structural schema, watch cache), after which discovery, Tables, lists, watches and writes work for it like
  for a built-in kind. A CRD whose names conflict is kept but not served;
* the controller keeps the newest version of every CRD it has seen or written, so that two CRDs created
  together cannot both claim a name before the watch has delivered either status; when a CRD's accepted
  names change or it is deleted, the other CRDs of its group are weighed again (a freed name may now go to
  one of them);
* a CRD being deleted (it carries the `customresourcecleanup.apiextensions.k8s.io` finalizer from its
  creation) stops being served, all its objects are deleted, and then the finalizer is removed so the CRD
  itself goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ..api.crd import (
    CLEANUP_FINALIZER,
    accepted_names,
    group,
    is_established,
    naming_status,
    resources_for_crd,
    version_schema,
)
from ..api.crdschema import compile_schema
from ..api.errors import APIError
from ..api.kinds import Resource
from ..api.timestamps import time_string
from ..store.errors import KeyNotFoundError, StoreError

if TYPE_CHECKING:
    from .app import APIServer

log = logging.getLogger(__name__)
CRDS = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")


class CustomResourceController:
    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.crds: dict[str, dict[str, Any]] = {}  # the newest version of each CRD, from the watch or our writes
        self.installed: dict[str, list[Resource]] = {}
        self.schemas: dict[Resource, dict[str, Any]] = {}  # each served version's openAPIV3Schema

    async def follow(self) -> None:
        """Serve what the CRDs say, following their watch cache: the body of the apiserver's
        "custom resources" background task."""
        cacher, store = self.server.cachers[CRDS], self.server.stores[CRDS]
        while True:
            while not cacher.ready:
                await asyncio.sleep(0.05)
            kvs, revision = cacher.snapshot(store.prefix(""))
            watcher = cacher.watch(store.prefix(""), revision)
            if watcher is None:
                continue
            try:
                self.crds = {}
                for kv in kvs:
                    self._remember(store.decode(kv))
                for gone in set(self.installed) - set(self.crds):
                    self._uninstall(gone)
                await self._settle(list(self.crds))
                async for event in watcher:
                    if event.type == "PUT" and event.kv is not None:
                        crd = store.decode(event.kv)
                        self._remember(crd)
                        await self._settle([crd["metadata"]["name"]])
                    elif event.type == "DELETE" and event.prev is not None:
                        await self._forget(store.decode(event.prev))
            finally:
                watcher.close()

    def _remember(self, crd: dict[str, Any]) -> None:
        """Keep `crd` unless a newer version of it is known (our own status write may be ahead of the watch)."""
        known = self.crds.get(crd["metadata"]["name"])
        if known is None or _revision(crd) >= _revision(known):
            self.crds[crd["metadata"]["name"]] = crd

    async def _forget(self, crd: dict[str, Any]) -> None:
        """A deleted CRD stops being served and frees its names for the other CRDs of its group."""
        name = crd["metadata"]["name"]
        self.crds.pop(name, None)
        self._uninstall(name)
        await self._settle(self._group_mates(crd))

    def _group_mates(self, crd: dict[str, Any]) -> list[str]:
        name = crd["metadata"]["name"]
        return [other for other, known in self.crds.items() if other != name and group(known) == group(crd)]

    async def _settle(self, names: list[str]) -> None:
        """Sync the named CRDs, then those of each group in which a CRD's accepted names changed."""
        pending = list(names)
        while pending:
            for mate in await self._sync(pending.pop(0)):
                if mate not in pending:
                    pending.append(mate)

    async def _sync(self, name: str) -> list[str]:
        """Serve the CRD as its names allow and record them in its status; returns the CRDs to sync again
        because its accepted names changed."""
        crd = self.crds.get(name)
        if crd is None:
            return []
        try:
            if crd["metadata"].get("deletionTimestamp"):
                await self._clean_up(crd)
                return []
            status = naming_status(crd, self._others(crd), time_string())
            self._serve(name, {**crd, "status": status})
            if status == crd.get("status"):
                return []
            written = await self._record_status(name)
            self._remember(written)
            return self._group_mates(crd) if accepted_names(written) != accepted_names(crd) else []
        except (StoreError, ValueError, APIError) as exc:  # e.g. deleted meanwhile: its events will follow
            log.warning("custom resource definition %s: %s", name, exc)
            return []

    def _others(self, crd: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.crds[mate] for mate in self._group_mates(crd)]

    def _serve(self, name: str, crd: dict[str, Any]) -> None:
        """Serve an established CRD's versions under its accepted names; serve nothing for any other."""
        if not is_established(crd):
            self._uninstall(name)
            return
        wanted = resources_for_crd(crd)
        schemas = {res: version_schema(crd, res.version) for res in wanted}
        if wanted != self.installed.get(name) or any(self.schemas.get(r) != s for r, s in schemas.items()):
            self._uninstall(name)
            self._install(name, wanted, schemas)

    def _install(self, name: str, resources: list[Resource], schemas: dict[Resource, dict[str, Any]]) -> None:
        for res in resources:
            self.server.install(res, compile_schema(schemas[res]))
            self.schemas[res] = schemas[res]
        self.installed[name] = resources

    def _uninstall(self, name: str) -> None:
        for res in self.installed.pop(name, []):
            self.schemas.pop(res, None)
            self.server.uninstall(res)

    async def _record_status(self, name: str) -> dict[str, Any]:
        def record(crd: dict[str, Any]) -> dict[str, Any]:
            crd["status"] = naming_status(crd, self._others(crd), time_string())
            return crd

        return await self.server.stores[CRDS].guaranteed_update("", name, record, subresource="status")

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


def _revision(crd: dict[str, Any]) -> int:
    return int(crd["metadata"].get("resourceVersion") or 0)

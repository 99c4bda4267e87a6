"""Stand-ins for the kube-controller-manager controllers admission relies on, run inside the apiserver.

Admission expects three controllers that mkpy does not have yet. Until issue 7 brings the controller
manager (where they will move, as real controllers with their own identity), this loop does their work:

* the serviceaccount controller: a `default` ServiceAccount in every active namespace (the ServiceAccount
  admission plugin refuses pods whose account is missing);
* the root-ca-cert-publisher: a `kube-root-ca.crt` ConfigMap in every active namespace whose `ca.crt` is the
  cluster CA (`--client-ca-file`), which the projected `kube-api-access-*` volume of every pod mounts;
* the resource quota controller's status: each ResourceQuota's `status.hard` and `status.used`
  recomputed from the watch caches (`admission.plugins.resourcequota.quota_status`) when a quota is created
  or changed and when the objects it counts change, so what deleted objects (and creates that failed after
  admission charged them) held is given back. A quota that admission just charged is left to settle for
  `QUOTA_SETTLE` seconds first, so the charged object has time to reach the cache.

The loop polls the caches' `applied_revision` (cheap: a few integer compares) and writes through the
stores, so the objects get defaults and validation like any other; writes it loses to a race (already
exists, namespace terminating) are simply retried on the next change.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from ..admission.plugins.resourcequota import quota_status
from ..api import errors

if TYPE_CHECKING:
    from .app import APIServer

log = logging.getLogger(__name__)
POLL_INTERVAL = 0.05
QUOTA_SETTLE = 0.5
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
_NAMESPACES, _ACCOUNTS, _CONFIGMAPS, _QUOTAS = (("", "v1", r) for r in
                                                ("namespaces", "serviceaccounts", "configmaps", "resourcequotas"))


def _read_ca(path: str) -> str:
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        log.warning("cannot publish the cluster CA from %s: %s", path, exc)
        return ""


class ControllerStandIns:
    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.ca = _read_ca(server.options.client_ca_file)
        self._seen_namespaces: tuple[int, ...] = ()
        self._seen_all = -1
        self._quota_revisions: dict[str, tuple[int, float]] = {}  # quota key -> (mod revision, seen since)
        self._settling = False

    async def sync_and_wait(self) -> None:
        """One round, then a pause: the body of the apiserver's "controller stand-ins" background task."""
        await self.sync()
        await asyncio.sleep(POLL_INTERVAL)

    async def sync(self) -> None:
        cachers = self.server.cachers
        namespaces = tuple(cachers[gvr].applied_revision for gvr in (_NAMESPACES, _ACCOUNTS, _CONFIGMAPS))
        if namespaces != self._seen_namespaces and all(cachers[gvr].ready for gvr in (_NAMESPACES, _ACCOUNTS,
                                                                                        _CONFIGMAPS)):
            self._seen_namespaces = namespaces
            await self.sync_namespaces()
        everything = max(c.applied_revision for c in set(cachers.values()))
        if everything != self._seen_all or self._settling:
            self._seen_all = everything
            await self.sync_quotas()

    # service accounts and the root CA --------------------------------------------------------------

    async def sync_namespaces(self) -> None:
        state = self.server.cluster_state
        for namespace in state.list("", "namespaces"):
            if (namespace.get("status") or {}).get("phase") != "Active":
                continue
            name = namespace["metadata"]["name"]
            if state.get("", "serviceaccounts", name, "default") is None:
                await self._create(_ACCOUNTS, name, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                     "metadata": {"name": "default"}})
            if self.ca:
                await self._publish_ca(name)

    async def _publish_ca(self, namespace: str) -> None:
        current = self.server.cluster_state.get("", "configmaps", namespace, ROOT_CA_CONFIGMAP)
        if current is None:
            await self._create(_CONFIGMAPS, namespace, {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ROOT_CA_CONFIGMAP},
                "data": {"ca.crt": self.ca}})
        elif (current.get("data") or {}).get("ca.crt") != self.ca:
            def publish(cm: dict[str, Any]) -> dict[str, Any]:
                cm["data"] = {**(cm.get("data") or {}), "ca.crt": self.ca}
                return cm
            await self._quietly(self.server.stores[_CONFIGMAPS].guaranteed_update(namespace, ROOT_CA_CONFIGMAP,
                                                                                   publish))

    async def _create(self, gvr: tuple[str, str, str], namespace: str, obj: dict[str, Any]) -> None:
        await self._quietly(self.server.stores[gvr].create(namespace, obj))

    @staticmethod
    async def _quietly(write: Any) -> None:
        try:
            await write
        except errors.APIError as err:  # lost a race: exists already, or the namespace went away
            log.debug("controller stand-ins: %s", err)

    # resource quota status -------------------------------------------------------------------------

    async def sync_quotas(self) -> None:
        state, store = self.server.cluster_state, self.server.stores[_QUOTAS]
        objects = self.server.cachers[_QUOTAS].objects
        now = time.monotonic()
        revisions: dict[str, tuple[int, float]] = {}
        self._settling = False
        for quota in state.list("", "resourcequotas"):
            meta = quota["metadata"]
            key = store.key(meta["namespace"], meta["name"])
            revision = objects[key].mod_revision if key in objects else 0
            last = self._quota_revisions.get(key)
            since = last[1] if last is not None and last[0] == revision else now
            revisions[key] = (revision, since)
            stale = (quota.get("status") or {}).get("hard") != (quota.get("spec") or {}).get("hard")
            if not stale and now - since < QUOTA_SETTLE:
                self._settling = True  # written a moment ago (admission charged it): look again shortly
                continue
            status = quota_status(state, quota)
            if status != quota.get("status"):
                await self._write_status(meta["namespace"], meta["name"], quota.get("status"), status)
        self._quota_revisions = revisions

    async def _write_status(self, namespace: str, name: str, seen: Any, status: dict[str, Any]) -> None:
        """Replace the status computed from `seen`, unless it changed meanwhile (admission charged the quota
        after the usage was counted: that charge must not be lost; the next round recounts)."""
        def replace(quota: dict[str, Any]) -> dict[str, Any]:
            if quota.get("status") == seen:
                quota["status"] = status
            return quota
        await self._quietly(self.server.cluster_state.update("", "resourcequotas", namespace, name, replace,
                                                             subresource="status"))

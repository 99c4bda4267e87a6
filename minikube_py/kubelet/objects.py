"""The ConfigMaps and Secrets the node's pods use, each watched on its own (kube's watch-based configmap and
secret managers).

A kubelet may not list every Secret in the cluster: the node authorizer lets it read only the objects its
pods reference, one by name. So for each referenced object there is one watch, `fieldSelector=
metadata.name=<name>` in its namespace, started when the first pod using it arrives and stopped when the
last one goes. The latest version is cached; a change re-syncs every pod that uses the object, which
rewrites its volumes at once (environment variables, as in kube, keep the values the container started with).

    objects = ObjectManager(client, resync_pod)
    objects.register_pod(pod)                  # on every pod add/update: start watches it needs
    await objects.get("configmaps", ns, name)  # the cached object (or a GET before the first event)
    objects.unregister_pod(uid)                # the pod is gone: stop watches nobody needs
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from minikube_py.auth.node import CONFIGMAP, SECRET, pod_references
from minikube_py.client import errors as api_errors
from minikube_py.client import resources
from minikube_py.client.rest import RESTClient

log = logging.getLogger("mkpy.kubelet.objects")

RETRY = 1.0  # seconds before re-listing after a watch failed
_RESOURCES = {"configmaps": resources.CONFIGMAPS, "secrets": resources.SECRETS}
_KINDS = {CONFIGMAP: "configmaps", SECRET: "secrets"}
Key = tuple[str, str, str]  # (kind: "configmaps" | "secrets", namespace, name)


class ObjectManager:
    def __init__(self, client: RESTClient, on_change: Callable[[str], None]) -> None:
        self._client = client
        self._on_change = on_change
        self._users: dict[Key, set[str]] = {}  # object -> uids of the pods using it
        self._by_pod: dict[str, set[Key]] = {}
        self._cache: dict[Key, dict[str, Any] | None] = {}  # None: known not to exist
        self._watches: dict[Key, asyncio.Task[None]] = {}

    def register_pod(self, pod: dict[str, Any]) -> None:
        uid, namespace = pod["metadata"]["uid"], pod["metadata"].get("namespace", "default")
        wanted = {(_KINDS[kind], namespace, name) for kind, name in pod_references(pod) if kind in _KINDS}
        for key in self._by_pod.get(uid, set()) - wanted:
            self._release(uid, key)
        for key in wanted - self._by_pod.get(uid, set()):
            self._users.setdefault(key, set()).add(uid)
            if key not in self._watches:
                self._watches[key] = asyncio.get_running_loop().create_task(self._watch(key), name=f"watch-{key}")
        self._by_pod[uid] = wanted

    def unregister_pod(self, uid: str) -> None:
        for key in self._by_pod.pop(uid, set()):
            self._release(uid, key)

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = (kind, namespace, name)
        if key in self._cache:
            return self._cache[key]
        return await self._fetch(key)

    async def stop(self) -> None:
        tasks = list(self._watches.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._watches.clear()

    def _release(self, uid: str, key: Key) -> None:
        users = self._users.get(key, set())
        users.discard(uid)
        if not users:
            self._users.pop(key, None)
            self._cache.pop(key, None)
            task = self._watches.pop(key, None)
            if task is not None:
                task.cancel()

    async def _fetch(self, key: Key) -> dict[str, Any] | None:
        kind, namespace, name = key
        try:
            return await self._client.get(_RESOURCES[kind], name, namespace)
        except (api_errors.NotFound, api_errors.Forbidden):
            return None  # Forbidden: no pod of this node references it (yet, as the authorizer sees it)

    async def _watch(self, key: Key) -> None:
        kind, namespace, name = key
        while True:
            try:
                current = await self._client.list(_RESOURCES[kind], namespace,
                                                  field_selector=f"metadata.name={name}")
                items = current.get("items") or []
                self._update(key, items[0] if items else None)
                version = (current.get("metadata") or {}).get("resourceVersion", "")
                async for event in self._client.watch(_RESOURCES[kind], namespace, resource_version=version,
                                                      field_selector=f"metadata.name={name}"):
                    if event.type in ("ADDED", "MODIFIED"):
                        self._update(key, event.object)
                    elif event.type == "DELETED":
                        self._update(key, None)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a dropped watch, a refused list: start over shortly
                log.debug("watch of %s %s/%s ended: %s", kind, namespace, name, error)
            await asyncio.sleep(RETRY)

    def _update(self, key: Key, obj: dict[str, Any] | None) -> None:
        before = self._cache.get(key, ...)
        self._cache[key] = obj
        if before is not ... and _content(before) != _content(obj):
            for uid in list(self._users.get(key, ())):
                self._on_change(uid)


def _content(obj: dict[str, Any] | None) -> Any:
    return None if obj is None else (obj.get("data"), obj.get("binaryData"), obj.get("stringData"))

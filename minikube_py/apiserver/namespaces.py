"""Namespace lifecycle: no new objects in a namespace that does not exist or is being deleted.

Kube enforces this in its NamespaceLifecycle admission plugin, reading namespaces from an informer cache
so that a create does not cost an extra etcd read. Here the cache is the namespaces' watch cache
(`cacher.py`); when a namespace is not in it (created a moment ago, or the cache is still starting) the
check falls back to a live read, as kube's plugin does.
"""

from __future__ import annotations

import orjson

from ..api import errors
from ..store.interface import KeyValue, Storage
from .cacher import Cacher

PREFIX = "/registry/namespaces/"


class NamespaceLifecycle:
    def __init__(self, storage: Storage, cache: Cacher) -> None:
        self.storage = storage
        self.cache = cache

    async def check(self, namespace: str) -> None:
        """Raise 404 if `namespace` does not exist, 403 if it is terminating."""
        kv = self.cache.objects.get(PREFIX + namespace) if self.cache.ready else None
        if kv is None:
            kv = await self.storage.get(PREFIX + namespace)
        if kv is None:
            raise errors.not_found("namespaces", namespace)
        if _terminating(kv):
            err = errors.forbidden_object("namespaces", namespace,
                                          f"unable to create new content in namespace {namespace} "
                                          "because it is being terminated")
            err.details["causes"] = [{"reason": "NamespaceTerminating", "message": "namespace "
                                      f"{namespace} is being terminated", "field": "metadata.namespace"}]
            raise err


def _terminating(kv: KeyValue) -> bool:
    obj = orjson.loads(kv.value)
    return bool((obj.get("metadata") or {}).get("deletionTimestamp")) or \
        (obj.get("status") or {}).get("phase") == "Terminating"

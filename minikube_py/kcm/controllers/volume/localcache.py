"""An informer cache overlaid with the binder's own newer writes (kube's PV controller "local cache").

Binding one claim is four writes (the volume, its status, the claim, its status), and each comes back through
the watch a little later. A sync that ran in between would read the old volume from the informer, think it
still unbound and try to bind it again, only to fail with Conflict. So the binder remembers what each write
returned (`remember`) and reads through `get`/`list`, which give the newer of the informer's copy and the
remembered one, by resourceVersion (an etcd revision: a number; on a tie the remembered copy, the same
content). A remembered object is dropped once the informer has moved past it, or when the object is deleted
(`forget`).

Usage rules: the objects returned are shared, never mutate them; remember only what the apiserver returned.
"""

from __future__ import annotations

from typing import Any

from minikube_py.client.store import Indexer, meta_namespace_key


class LocalCache:
    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer
        self._written: dict[str, dict[str, Any]] = {}

    def remember(self, obj: dict[str, Any]) -> None:
        key = meta_namespace_key(obj)
        if _version(obj) >= _version(self.get(key)):
            self._written[key] = obj

    def forget(self, key: str) -> None:
        self._written.pop(key, None)

    def get(self, key: str) -> dict[str, Any] | None:
        cached = self.indexer.get_by_key(key)
        written = self._written.get(key)
        if written is None:
            return cached
        if cached is not None and _version(cached) > _version(written):
            del self._written[key]  # the informer has moved past our write
            return cached
        return written

    def list(self) -> list[dict[str, Any]]:
        keys = set(self.indexer.list_keys()) | set(self._written)
        return [obj for obj in (self.get(key) for key in sorted(keys)) if obj is not None]


def _version(obj: dict[str, Any] | None) -> int:
    if obj is None:
        return -1
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0

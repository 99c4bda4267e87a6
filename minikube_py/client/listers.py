"""Listers: read-only queries over an informer's cache, for controllers and scheduler plugins.

A `Lister` answers `list(namespace, selector)` and `get(name, namespace)` from an `Indexer` without a round
trip to the apiserver (client-go's generated `PodLister`, `NodeLister`, ...). It uses the namespace index
when the indexer has one, so listing one namespace does not scan the others.

Usage rules:
* Results are the cache's own dicts: never mutate them; copy first (`copy.deepcopy`) to build an update.
* A missing object raises `errors.NotFound` with the message kube's listers give (`pod "web-0" not found`).
"""

from __future__ import annotations

import builtins
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.api.selectors import LabelSelector

from . import errors
from .store import NAMESPACE_INDEX, Indexer


class Lister:
    """Queries over the cached objects of one resource."""

    def __init__(self, indexer: Indexer, resource: Resource) -> None:
        self.indexer = indexer
        self.resource = resource

    def list(self, namespace: str | None = None, selector: LabelSelector | None = None) -> builtins.list[dict[str, Any]]:
        """The cached objects in `namespace` (None: all) whose labels match `selector` (None: all)."""
        if namespace and NAMESPACE_INDEX in self.indexer.get_indexers():
            objects = self.indexer.by_index(NAMESPACE_INDEX, namespace)
        elif namespace:
            objects = [obj for obj in self.indexer.list() if _namespace_of(obj) == namespace]
        else:
            objects = self.indexer.list()
        if selector is None or selector.empty:
            return objects
        return [obj for obj in objects if selector.matches((obj.get("metadata") or {}).get("labels"))]

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        """The cached object `name` (in `namespace` for a namespaced resource), or NotFound."""
        if self.resource.namespaced and not namespace:
            raise ValueError(f"{self.resource.plural} are namespaced: a namespace is required")
        key = f"{namespace}/{name}" if self.resource.namespaced else name
        obj = self.indexer.get_by_key(key)
        if obj is None:
            resource = self.resource.singular + (f".{self.resource.group}" if self.resource.group else "")
            raise errors.new_not_found(resource, name)
        return obj


def _namespace_of(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("namespace") or ""

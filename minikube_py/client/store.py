"""The informer cache: objects by key, plus secondary indexes over them (client-go's `cache.Indexer`).

A reflector keeps an `Indexer` equal to the server's view of one resource: `add`/`update`/`delete` apply
watch events and `replace` swaps in the result of a (re)list. Each object is stored under its key,
`"<namespace>/<name>"` (just `"<name>"` for cluster-scoped objects). An *index* maps a value computed from
an object to the keys of the objects that have it: `NAMESPACE_INDEX` maps a namespace to its objects, and
a controller can add its own (pods by node name, say) with `add_indexers({"node": fn})`, where `fn(obj)`
returns the object's values for that index (none, one or several). Every write keeps every index current,
so `by_index("node", "n1")` costs a dict lookup, not a scan.

Usage rules:
* The objects are the dicts the server sent, shared with every reader: never mutate one, copy it first.
* Single-threaded by design: asyncio runs one callback at a time, so no locks are needed (or allowed to be
  held across an `await`).
* Keys may be given where objects are expected (as client-go's `ExplicitKey`): `get("ns/name")` works, and
  `delete` accepts a `DeletedFinalStateUnknown`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

IndexFunc = Callable[[dict[str, Any]], list[str]]
NAMESPACE_INDEX = "namespace"


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """An object that vanished while we were not watching: a relist no longer lists it. `obj` is its last
    state we knew, which may be stale; handlers get this in place of the object on delete."""

    key: str
    obj: dict[str, Any]


def meta_namespace_key(obj: dict[str, Any] | str | DeletedFinalStateUnknown) -> str:
    """`"namespace/name"`, or `"name"` for a cluster-scoped object; a key or a tombstone gives its own key."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    metadata = obj.get("metadata") or {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not name:
        raise ValueError("object has no metadata.name")
    return f"{namespace}/{name}" if namespace else name


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a key; the namespace is "" for a cluster-scoped object."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def meta_namespace_index_func(obj: dict[str, Any]) -> list[str]:
    """The namespace index: an object's namespace ("" for cluster-scoped objects)."""
    return [(obj.get("metadata") or {}).get("namespace") or ""]


class Indexer:
    """Objects by key, with indexes kept current on every write."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self.add_indexers(indexers or {})

    def add(self, obj: dict[str, Any]) -> None:
        self._put(meta_namespace_key(obj), obj)

    def update(self, obj: dict[str, Any]) -> None:
        self._put(meta_namespace_key(obj), obj)

    def delete(self, obj: dict[str, Any] | str | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(obj)
        old = self._items.pop(key, None)
        if old is not None:
            self._update_indices(key, old, None)

    def replace(self, items: Iterable[dict[str, Any]], resource_version: str = "") -> None:
        """Make the contents exactly `items` (a list's result), rebuilding every index."""
        self._items = {meta_namespace_key(obj): obj for obj in items}
        self._indices = {name: {} for name in self._indexers}
        for key, obj in self._items.items():
            self._update_indices(key, None, obj)

    def resync(self) -> None:
        """Nothing to do for a plain cache (the informer re-delivers objects itself)."""

    def get(self, obj: dict[str, Any] | str) -> dict[str, Any] | None:
        return self._items.get(meta_namespace_key(obj))

    def get_by_key(self, key: str) -> dict[str, Any] | None:
        return self._items.get(key)

    def list(self) -> builtins.list[dict[str, Any]]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get_indexers(self) -> dict[str, IndexFunc]:
        return dict(self._indexers)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """Add indexes (objects already stored are indexed at once); a name already in use is an error."""
        clash = sorted(set(indexers) & set(self._indexers))
        if clash:
            raise ValueError(f"indexer conflict: {', '.join(clash)}")
        self._indexers.update(indexers)
        for name in indexers:
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._index_one(name, key, None, obj)

    def index(self, index_name: str, obj: dict[str, Any]) -> builtins.list[dict[str, Any]]:
        """The objects that share any of `obj`'s values for `index_name`."""
        values = self._index_values(index_name, "", obj)
        index = self._indices[index_name]
        keys: set[str] = set()
        for value in values:
            keys |= index.get(value, set())
        return [self._items[key] for key in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """The keys of the objects whose values for `index_name` include `value`."""
        return list(self._index(index_name).get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[dict[str, Any]]:
        """The objects whose values for `index_name` include `value`."""
        return [self._items[key] for key in self._index(index_name).get(value, ())]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every value `index_name` currently has objects for."""
        return list(self._index(index_name))

    def _put(self, key: str, obj: dict[str, Any]) -> None:
        old = self._items.get(key)
        self._items[key] = obj
        self._update_indices(key, old, obj)

    def _index(self, index_name: str) -> dict[str, set[str]]:
        index = self._indices.get(index_name)
        if index is None:
            raise ValueError(f"index with name {index_name} does not exist")
        return index

    def _update_indices(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for name in self._indexers:
            self._index_one(name, key, old, new)

    def _index_one(self, name: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        old_values: set[str] = set(self._index_values(name, key, old)) if old is not None else set()
        new_values: set[str] = set(self._index_values(name, key, new)) if new is not None else set()
        if old_values == new_values:
            return
        index = self._indices[name]
        for value in old_values - new_values:
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]  # an empty set would keep the value listed and leak memory
        for value in new_values - old_values:
            index.setdefault(value, set()).add(key)

    def _index_values(self, name: str, key: str, obj: dict[str, Any]) -> builtins.list[str]:
        fn = self._indexers.get(name)
        if fn is None:
            raise ValueError(f"index with name {name} does not exist")
        try:
            return fn(obj)
        except Exception as err:
            raise ValueError(f"unable to calculate an index entry for key {key!r} on index {name!r}: {err}") \
                from err

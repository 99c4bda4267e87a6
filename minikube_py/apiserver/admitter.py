"""Where the apiserver meets admission: the chain bound to one request, and the cluster state plugins read.

The handler builds a `RequestAdmission` for every create, update, patch and delete (and connect) from the
request's info and user (`Admitter.for_request`), and hands it to the registry, which calls `mutate` and
`validate` at the points kube's registry does (see `registry/generic.py`). The plugins themselves live in
the `admission` package and know nothing of HTTP or storage: they read the cluster through
`CachedClusterState`, which answers from the watch caches, like kube's informer listers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..admission.chain import AdmissionChain
from ..admission.interface import Attributes
from ..api.managedfields import malformed
from ..auth.authn import UserInfo
from ..store.interface import KeyValue
from .cacher import Cacher
from .registry.generic import ResourceStore

INVALID_MANAGED_FIELDS_WARNING = (".metadata.managedFields was in an invalid state after admission; this could be "
                                  "caused by an outdated mutating admission controller; please fix your requests: ")
MAX_DECODED = 1024  # objects `get` keeps decoded (the namespaces, accounts and classes most requests read)


class CachedClusterState:
    """`admission.interface.ClusterState` over the apiserver's stores and watch caches."""

    def __init__(self, stores: dict[tuple[str, str, str], ResourceStore],
                 cachers: dict[tuple[str, str, str], Cacher]) -> None:
        self.stores = stores
        self.cachers = cachers
        self._found: dict[tuple[str, str], tuple[tuple[str, str, str], ResourceStore]] = {}
        self._listed: dict[tuple[str, str, str], tuple[tuple[int, int], list[dict[str, Any]]]] = {}
        self._decoded: dict[str, tuple[KeyValue, dict[str, Any]]] = {}  # storage key -> (value, object)

    def _find(self, group: str, resource: str) -> tuple[ResourceStore, Cacher] | None:
        """The store and cache of a resource's served storage version, remembered (plugins ask on every
        request) for as long as that store is still served (CRD versions come and go)."""
        found = self._found.get((group, resource))
        if found is not None and self.stores.get(found[0]) is found[1]:
            return found[1], self.cachers[found[0]]
        for (g, version, plural), store in self.stores.items():
            if g == group and plural == resource and not store.resource.storage_version:
                self._found[(group, resource)] = ((g, version, plural), store)
                return store, self.cachers[(g, version, plural)]
        return None

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Decoded once per change of the object: plugins read the same namespace and service account on
        every create. Shared between callers: never mutate it."""
        found = self._find(group, resource)
        if found is None:
            return None
        store, cacher = found
        key = store.key(namespace, name)
        kv = cacher.objects.get(key)
        if kv is None:
            return None
        decoded = self._decoded.get(key)
        if decoded is not None and decoded[0] is kv:  # the cache replaces the value on every change
            return decoded[1]
        obj = store.decode(kv)
        if len(self._decoded) >= MAX_DECODED:
            del self._decoded[next(iter(self._decoded))]  # the oldest
        self._decoded[key] = (kv, obj)
        return obj

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        """Decoded once per change of the cache: plugins list the same few LimitRanges, quotas and
        PriorityClasses on every request. Shared between callers: never mutate them."""
        found = self._find(group, resource)
        if found is None:
            return []
        store, cacher = found
        state = (id(cacher.objects), cacher.applied_revision)  # a relist replaces the dict
        listed = self._listed.get((group, resource, namespace))
        if listed is None or listed[0] != state:
            kvs, _ = cacher.snapshot(store.prefix(namespace))
            listed = self._listed[(group, resource, namespace)] = (state, [store.decode(kv) for kv in kvs])
        return listed[1]

    async def update(self, group: str, resource: str, namespace: str, name: str,
                     mutate: Callable[[dict[str, Any]], dict[str, Any]], subresource: str = "") -> dict[str, Any]:
        found = self._find(group, resource)
        assert found is not None, f"no store for {resource}.{group}"
        return await found[0].guaranteed_update(namespace, name, mutate, subresource=subresource)


class RequestAdmission:
    """The admission chain bound to one request: what the registry calls (`registry.generic.Admission`)."""

    def __init__(self, chain: AdmissionChain, operation: str, store: ResourceStore, *, user: UserInfo,
                 namespace: str, name: str, subresource: str, dry_run: bool, options: dict[str, Any],
                 kind: tuple[str, str, str] | None = None) -> None:
        res = store.resource
        own_kind = (res.group, res.version, res.kind)
        self.chain = chain
        self.attributes = Attributes(operation=operation, group=res.group, version=res.version,
                                     resource=res.plural, kind=kind or own_kind,
                                     user=user, namespace=namespace, name=name, subresource=subresource,
                                     dry_run=dry_run, options=options,
                                     default=store.default if kind in (None, own_kind) else None)

    async def mutate(self, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
        """The mutating plugins; as in kube, managedFields a plugin leaves undecodable are put back as they
        were (the field manager recorded the write before admission), with a warning for the client."""
        self.attributes.object, self.attributes.old_object = obj, old
        managed = obj.get("metadata", {}).get("managedFields") if obj is not None else None
        ran = await self.chain.admit(self.attributes)
        if ran and obj is not None:
            meta = obj.setdefault("metadata", {})
            after = meta.get("managedFields")
            problem = malformed(after) if after is not managed and after != managed else ""
            if problem:
                if managed is None:
                    meta.pop("managedFields", None)
                else:
                    meta["managedFields"] = managed
                self.attributes.warnings.append(INVALID_MANAGED_FIELDS_WARNING + problem)
        return ran

    async def validate(self, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        self.attributes.object, self.attributes.old_object = obj, old
        await self.chain.validate(self.attributes)


class Admitter:
    """Builds a `RequestAdmission` per request; None when no plugin is enabled (nothing to run)."""

    def __init__(self, chain: AdmissionChain) -> None:
        self.chain = chain

    def for_request(self, operation: str, store: ResourceStore, *, user: UserInfo, namespace: str, name: str,
                    subresource: str = "", dry_run: bool = False, options: dict[str, Any] | None = None,
                    kind: tuple[str, str, str] | None = None) -> RequestAdmission | None:
        if not self.chain.plugins:
            return None
        return RequestAdmission(self.chain, operation, store, user=user, namespace=namespace, name=name,
                                subresource=subresource, dry_run=dry_run, options=options or {}, kind=kind)

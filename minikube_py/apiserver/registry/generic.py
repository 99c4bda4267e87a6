"""The generic registry: REST semantics for one resource, on top of the storage interface.

One `ResourceStore` per served resource turns API verbs into storage operations the way kube's generic
registry does:

* create: fill metadata (uid, creationTimestamp, generation, `generateName`), apply the kind's defaults and
  starting status, validate, then a create-if-absent write (409 AlreadyExists if the key exists);
* update: a read-modify-write loop (kube's "GuaranteedUpdate"): a resourceVersion in the body is a
  precondition (409 Conflict when stale); without one the update is retried on conflicts. A write to the
  main resource keeps the stored status, a write to `/status` keeps everything but the status, and
  `metadata.generation` goes up only when the spec changes. The loop starts from the watch cache's copy
  when it has one, sparing a read from etcd (see `guaranteed_update`);
* delete: preconditions, the kind's grace period (pods), finalizers (`deletionTimestamp` is set and the
  object stays until the last finalizer is removed), propagation policy (`foregroundDeletion`/`orphan`
  finalizers for the garbage collector); from the watch cache's copy too, through the same loop.

The resourceVersion of every object is the etcd revision that last wrote it. A store with a `ttl` (Events,
`--event-ttl`) passes it on every write, so that etcd deletes an object `ttl` seconds (and a little more)
after it was last written, as kube's registry does with its TTLFunc.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol, TypeVar

from ...api import errors
from ...api.conversion import from_storage, to_storage
from ...api.defaults import apply_defaults, default_status, prepare_for_create, prepare_for_update
from ...api.jsoncopy import copy_json
from ...api.kinds import Resource
from ...api.managedfields import FieldTracker
from ...api.timestamps import time_string
from ...api.validation import validate_create, validate_update
from ...store.errors import ConflictError, KeyExistsError, KeyNotFoundError
from ...store.interface import KeyValue, Storage
from .. import codec
from .deletion import DeleteOptions, check_preconditions, propagation_finalizers
from .listing import ListOptions, Page, list_page
from .strategy import Strategy

Mutation = Callable[[dict[str, Any]], dict[str, Any]]
T = TypeVar("T")


class Admission(Protocol):
    """The admission chain, bound to one request (`apiserver/admitter.py`): the store calls it at the points
    kube's registry does. `obj` is None for a delete, `old` None for a create."""

    async def mutate(self, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
        """Run the mutating plugins (they change `obj` in place); True if any ran."""
        ...

    async def validate(self, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        """Run the validating plugins; raises APIError to refuse the request."""
        ...
_IMMUTABLE_META = ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")
NamespaceCheck = Callable[[str], Awaitable[None]]


class CachedObjects(Protocol):
    """The watch cache of a store's prefix (`apiserver/cacher.py`), as the store reads it."""

    ready: bool
    objects: dict[str, KeyValue]


class ResourceStore:
    def __init__(self, resource: Resource, storage: Storage, strategy: Strategy,
                 namespace_check: NamespaceCheck | None = None, *, ttl: int = 0) -> None:
        self.resource = resource
        self.storage = storage
        self.strategy = strategy
        self.namespace_check = namespace_check
        self.ttl = ttl  # seconds an object lives after its last write; 0: until deleted
        self.cache: CachedObjects | None = None  # set by app.py once the watch caches exist

    # keys -----------------------------------------------------------------------------------------

    def key(self, namespace: str, name: str) -> str:
        if self.resource.namespaced:
            return f"{self.resource.key_prefix}{namespace}/{name}"
        return self.resource.key_prefix + name

    def prefix(self, namespace: str) -> str:
        if self.resource.namespaced and namespace:
            return f"{self.resource.key_prefix}{namespace}/"
        return self.resource.key_prefix

    def decode(self, kv: KeyValue) -> dict[str, Any]:
        """A stored value as an object of this resource's version, with its resourceVersion."""
        return from_storage(self.resource, codec.decode(kv))

    def as_stored(self, obj: dict[str, Any], revision: int) -> dict[str, Any]:
        """`obj` as a later read will return it: through the storage version, with its resourceVersion."""
        if self.resource.storage_version:
            obj = from_storage(self.resource, to_storage(self.resource, obj))
        return codec.with_revision(obj, revision)

    def default(self, obj: dict[str, Any]) -> None:
        """What decoding a request's object does to it: kube's defaults for the kind, and for a custom
        resource its schema's defaults and pruning."""
        apply_defaults(self.resource, obj)
        self.strategy.canonicalize(obj)

    def encode(self, obj: dict[str, Any]) -> bytes:
        """The value to store; drops `resourceVersion` from `obj` (callers set it again from the write)."""
        if self.resource.storage_version:
            obj = to_storage(self.resource, copy_json(obj))
        return codec.encode(obj)

    # reads ----------------------------------------------------------------------------------------

    async def get(self, namespace: str, name: str) -> dict[str, Any]:
        kv = await self.storage.get(self.key(namespace, name))
        if kv is None:
            raise errors.not_found(self.resource.group_resource, name)
        return self.decode(kv)

    async def list(self, namespace: str, options: ListOptions) -> Page:
        return await list_page(self.storage, self.resource, self.prefix(namespace), options, self.decode)

    # create ---------------------------------------------------------------------------------------

    async def create(self, namespace: str, obj: dict[str, Any], *, dry_run: bool = False,
                     validate: bool = True, tracker: FieldTracker | None = None,
                     admission: Admission | None = None) -> dict[str, Any]:
        """Create `obj`, recording its fields for `tracker`'s manager; `validate=False` is for the
        apiserver's own bookkeeping objects only (kube's endpoint reconciler writes the `kubernetes`
        Endpoints straight to storage, even with a loopback address).

        As in kube, the field manager records the object as decoded and defaulted; mutating admission then
        sees it so (what admission adds belongs to no manager), before the name is generated and the system
        fields (uid, creationTimestamp) are filled; validating admission sees it validated, just before it
        is written."""
        meta = codec.meta(obj)
        self._set_namespace(meta, namespace)
        with decoding_errors():
            self.default(obj)
            if tracker is not None:
                tracker.track(None, obj)
        if admission is not None:
            await admission.mutate(obj, None)
            meta = codec.meta(obj)
            self._set_namespace(meta, namespace)
        with decoding_errors():
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = codec.generate_name(str(meta["generateName"]))
            self._fill_new_metadata(meta)
            self.strategy.prepare_for_create(obj)
            prepare_for_create(self.resource, obj)
            default_status(self.resource, obj)
            if validate:
                self._validate(obj, validate_create(self.resource, obj) + self.strategy.validate(obj))
        if self.resource.namespaced and self.namespace_check is not None:
            await self.namespace_check(namespace)
        if admission is not None:
            await admission.validate(obj, None)
        undo = await self.strategy.before_create(obj, dry_run)
        if dry_run:  # the same answer a real create would get, but nothing written
            if await self.storage.get(self.key(namespace, meta["name"])) is not None:
                raise errors.already_exists(self.resource.group_resource, meta["name"])
            return obj
        try:
            revision = await self.storage.create(self.key(namespace, meta["name"]), self.encode(obj),
                                                 ttl=self.ttl)
        except BaseException as exc:
            if undo is not None:
                await undo()
            if isinstance(exc, KeyExistsError):
                raise errors.already_exists(self.resource.group_resource, meta["name"]) from None
            raise
        return self.as_stored(obj, revision)

    def _set_namespace(self, meta: dict[str, Any], namespace: str) -> None:
        if not self.resource.namespaced:
            return
        given = meta.get("namespace")
        if given and given != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                     "sent on the request")
        meta["namespace"] = namespace

    def _fill_new_metadata(self, meta: dict[str, Any]) -> None:
        meta["uid"] = codec.new_uid()
        meta["creationTimestamp"] = time_string()
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
            meta.pop(field, None)
        if self.strategy.tracks_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)

    def _validate(self, obj: dict[str, Any], problems: list[errors.FieldError]) -> None:
        if problems:
            name = str(obj.get("metadata", {}).get("name") or "")
            raise errors.invalid_object(self.resource.kind, self.resource.group, name, problems)

    # update ---------------------------------------------------------------------------------------

    async def update(self, namespace: str, name: str, obj: dict[str, Any], *, subresource: str = "",
                     dry_run: bool = False, tracker: FieldTracker | None = None,
                     admission: Admission | None = None) -> dict[str, Any]:
        """Replace the object (PUT) with `obj`, honouring a resourceVersion precondition in its metadata."""
        meta = codec.meta(obj)
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on "
                                     f"the URL ({name})")
        meta["name"] = name
        self._set_namespace(meta, namespace)
        precondition = str(meta.get("resourceVersion") or "")
        return await self.guaranteed_update(namespace, name, lambda _old: copy_json(obj),
                                            precondition=precondition, uid=str(meta.get("uid") or ""),
                                            subresource=subresource, dry_run=dry_run, tracker=tracker,
                                            admission=admission)

    async def guaranteed_update(self, namespace: str, name: str, mutate: Mutation, *, precondition: str = "",
                                uid: str = "", subresource: str = "", dry_run: bool = False,
                                tracker: FieldTracker | None = None,
                                admission: Admission | None = None) -> dict[str, Any]:
        """Read, apply `mutate` to a copy of the live object, run mutating admission, record the change in
        managedFields for `tracker`'s manager, validate (and run validating admission) and write back; retry
        on races unless the caller pinned a resourceVersion. A `uid` precondition (the uid a PUT body
        carries) must name the live object, not an earlier one of the same name.

        As kube's cacher does, the first attempt starts from the watch cache's copy, which spares a read from
        etcd: a write from it carries its revision, so if etcd holds a newer copy the write fails as any race
        does and the loop goes on from the copy etcd sent back. Any other outcome of a cached copy (an error,
        nothing to change) is decided again on a copy read from etcd. A dry run, which writes nothing that
        could fail, reads etcd from the start."""
        key = self.key(namespace, name)
        return await self._write_loop(
            key, name, dry_run, stale_on_conflict=bool(precondition),
            attempt=lambda kv: self._update_once(key, name, kv, mutate, precondition, uid, subresource, dry_run,
                                                 tracker, admission))

    async def _write_loop(self, key: str, name: str, dry_run: bool, stale_on_conflict: bool,
                          attempt: Callable[[KeyValue], Awaitable[tuple[T, bool]]]) -> T:
        """Run `attempt` (which returns its result and whether it wrote) until it holds: from the
        watch cache's copy first, then from the copy etcd sends back on a conflict or a fresh read (see
        `guaranteed_update`). A conflict is a 409 when `stale_on_conflict` (the caller pinned a version)."""
        cached = None if dry_run or self.cache is None or not self.cache.ready else self.cache.objects.get(key)
        kv, current = (cached, False) if cached is not None else (await self.storage.get(key), True)
        while True:
            try:
                if kv is None:
                    raise errors.not_found(self.resource.group_resource, name)
                result, wrote = await attempt(kv)
            except ConflictError as conflict:
                if stale_on_conflict:
                    raise errors.stale_update(self.resource.group_resource, name) from None
                kv, current = conflict.current, True
                continue
            except KeyNotFoundError:  # deleted since `kv` was read
                kv, current = None, True
                continue
            except errors.APIError:
                if current:
                    raise
            else:
                if wrote or current:
                    return result
            kv, current = await self.storage.get(key), True

    async def _update_once(self, key: str, name: str, kv: KeyValue, mutate: Mutation, precondition: str,
                           uid: str, subresource: str, dry_run: bool, tracker: FieldTracker | None,
                           admission: Admission | None) -> tuple[dict[str, Any], bool]:
        """One attempt of `guaranteed_update` from `kv`: the object as it is now, and whether it was written
        (False: there was nothing to change)."""
        if precondition and precondition != str(kv.mod_revision):
            raise errors.stale_update(self.resource.group_resource, name)
        old = self.decode(kv)
        if uid and uid != old["metadata"].get("uid"):
            raise errors.uid_precondition_failed(self.resource.group_resource, name, key, uid,
                                                 str(old["metadata"].get("uid") or ""))
        # kube's order: the changed object is defaulted, the field manager records the change, mutating
        # admission sees it so, and only then does the strategy settle what this write may change
        # (PrepareForUpdate)
        with decoding_errors():
            new = mutate(copy_json(old))
            self.default(new)
            if tracker is not None:
                tracker.track(old, new)
        if admission is not None:
            await admission.mutate(new, old)
        with decoding_errors():
            new = self._prepare_update(new, old, subresource)
        if new == old and not kv.stale:
            return old, False
        return await self._write_update(key, kv, new, old, subresource, dry_run, admission), True

    def _prepare_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> dict[str, Any]:
        if subresource == "status":
            merged = copy_json(old)
            merged["status"] = new.get("status")
            # the field manager's record of this write, and the metadata the kind lets a status write change
            for field in ("managedFields", *self.strategy.status_writable_metadata):
                value = codec.meta(new).get(field)
                if value is None:
                    merged["metadata"].pop(field, None)
                else:
                    merged["metadata"][field] = value
            new = merged
        elif self.resource.has_status() and subresource != "binding":
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        new_meta, old_meta = codec.meta(new), old["metadata"]
        if not new_meta.get("uid"):  # a body without a uid keeps the object's; a different one is refused
            new_meta["uid"] = old_meta.get("uid")
        for field in _IMMUTABLE_META:
            if field in old_meta:
                new_meta[field] = old_meta[field]
            else:
                new_meta.pop(field, None)
        new_meta["name"], new_meta["resourceVersion"] = old_meta["name"], old_meta["resourceVersion"]
        if self.resource.namespaced:
            new_meta["namespace"] = old_meta.get("namespace")
        new.setdefault("apiVersion", old.get("apiVersion"))
        new.setdefault("kind", old.get("kind"))
        if not subresource:  # subresources (status, finalize, binding) have their own rules
            prepare_for_update(self.resource, new, old)
        self._bump_generation(new, old)
        return new

    def _bump_generation(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        old_gen = old["metadata"].get("generation")
        if not self.strategy.tracks_generation:
            return
        changed = self.strategy.changes_generation(new, old)
        new["metadata"]["generation"] = (old_gen or 0) + (1 if changed else 0)

    async def _write_update(self, key: str, kv: KeyValue, new: dict[str, Any], old: dict[str, Any],
                            subresource: str, dry_run: bool, admission: Admission | None) -> dict[str, Any]:
        # a binding is the one sanctioned change to a pod's nodeName, which pod validation forbids
        if subresource != "binding":
            with decoding_errors():
                self._validate(new, validate_update(self.resource, new, old, subresource=subresource)
                               + self.strategy.validate(new))
        if admission is not None:
            await admission.validate(new, old)
        if dry_run:
            await self.strategy.before_update(new, old, dry_run=True)
            return new
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not _waits_for_grace(meta) \
                and not self.strategy.delete_keeps_object(new):
            await self._delete_key(key, kv.mod_revision, new)
            return new
        await self.strategy.before_update(new, old, dry_run=False)
        try:
            revision = await self.storage.update(key, self.encode(new), expected_revision=kv.mod_revision,
                                                 ttl=self.ttl)
        except BaseException:
            await self.strategy.after_update(old, new)  # give back what before_update claimed
            raise
        await self.strategy.after_update(new, old)
        return self.as_stored(new, revision)

    # delete ---------------------------------------------------------------------------------------

    async def delete(self, namespace: str, name: str, options: DeleteOptions,
                     admission: Admission | None = None) -> tuple[dict[str, Any], bool]:
        """Delete or mark for deletion, once admission allows it; returns (the object as it is now, whether
        it is gone). Like an update, it starts from the watch cache's copy (kube's cacher passes it to etcd3's
        Delete too)."""
        key = self.key(namespace, name)

        async def attempt(kv: KeyValue) -> tuple[tuple[dict[str, Any], bool], bool]:
            obj = self.decode(kv)
            check_preconditions(self.resource, obj, options)
            if admission is not None:
                await admission.mutate(None, obj)
                await admission.validate(None, obj)
            now, gone, wrote = await self._delete_once(key, kv, obj, options)
            return (now, gone), wrote

        return await self._write_loop(key, name, options.dry_run, stale_on_conflict=False, attempt=attempt)

    async def _delete_once(self, key: str, kv: KeyValue, obj: dict[str, Any],
                           options: DeleteOptions) -> tuple[dict[str, Any], bool, bool]:
        """(the object as it is now, whether it is gone, whether anything was written)."""
        meta = obj["metadata"]
        grace = self.strategy.graceful_delete_seconds(obj, options.grace_period_seconds)
        finalizers = propagation_finalizers(options, list(meta.get("finalizers") or []), self.resource)
        keeps = self.strategy.delete_keeps_object(obj)
        if not finalizers and grace == 0 and not keeps:
            if options.dry_run:
                return obj, True, True  # as if written: a dry run starts from etcd's own copy
            deleted = await self._delete_key(key, kv.mod_revision, obj)
            return deleted, True, True
        if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or []) and not grace:
            return obj, False, False  # already being deleted: nothing more to record
        meta["finalizers"] = finalizers or None
        if not meta["finalizers"]:
            del meta["finalizers"]
        meta["deletionTimestamp"] = meta.get("deletionTimestamp") or codec.timestamp_in(grace)
        meta["deletionGracePeriodSeconds"] = grace
        self.strategy.mark_deleting(obj)
        if options.dry_run:
            return obj, False, True
        revision = await self.storage.update(key, self.encode(obj), expected_revision=kv.mod_revision,
                                             ttl=self.ttl)
        return codec.with_revision(obj, revision), False, True

    async def _delete_key(self, key: str, revision: int, obj: dict[str, Any]) -> dict[str, Any]:
        try:
            prev = await self.storage.delete(key, expected_revision=revision)
        except KeyNotFoundError:
            raise errors.not_found(self.resource.group_resource, obj["metadata"]["name"]) from None
        await self.strategy.after_delete(obj)
        return codec.with_revision(obj, prev.mod_revision)


@contextlib.contextmanager
def decoding_errors() -> Iterator[None]:
    """Treat a wrongly typed field met while preparing an object as a bad request, as kube's typed decoder
    would have refused it before any of this code ran."""
    try:
        yield
    except (TypeError, AttributeError, ValueError, KeyError, IndexError) as exc:
        raise errors.bad_request(f"the object provided is unrecognized: a field has the wrong type ({exc})") from None


def _waits_for_grace(meta: dict[str, Any]) -> bool:
    return bool(meta.get("deletionGracePeriodSeconds"))

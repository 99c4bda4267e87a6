"""Field ownership: `metadata.managedFields`, kept up to date on every write, and server-side apply.

Every write names a *field manager* (`?fieldManager=`, else the client's User-Agent up to its first `/`).
The object records, per manager and operation, the set of fields that manager set last:

* an **Update** (create, PUT, PATCH of any other type, writes to subresources) takes ownership of every
  field it added or changed, and takes those fields away from whoever owned them before; no conflicts;
* an **Apply** (`application/apply-patch+yaml`) owns exactly the fields of its configuration. It merges the
  configuration into the live object, removes the fields it applied last time and no longer names (unless
  another manager also owns them), and refuses to change a field another manager owns (409 Conflict with
  the list of fields) unless `force=true`, which transfers the ownership to it.

The manager `kubectl` (what `kubectl apply --server-side` sends) takes over from client-side apply: its
apply may change fields whose live values are still those of the `last-applied-configuration`
annotation without a conflict, and it keeps that annotation up to date while the object has one.

A manager's identity is its name, its operation, the subresource written (`status`, `scale`), and for
Update also the apiVersion written. Entries are listed Apply first, then by time, as kube lists them.

`FieldTracker` does all of this for one write; the registry calls `mutate` (apply only) inside its
read-modify-write loop and `track` on the final object.
"""

from __future__ import annotations

import copy
import json
from typing import Any, NamedTuple

from .. import errors
from ..gofmt import go_json
from ..timestamps import time_string
from .fieldpath import (
    FieldSet,
    FieldsV1Error,
    Path,
    from_fields_v1,
    in_fields_v1,
    path_string,
    to_fields_v1,
    under,
    with_named_parents,
)
from .schema import Type
from .typed import ShapeError, compare, field_set, merge, remove

APPLY, UPDATE = "Apply", "Update"
BEFORE_FIRST_APPLY = "before-first-apply"
KUBECTL = "kubectl"  # the manager of `kubectl apply --server-side`, which inherits client-side apply
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_MANAGER_LENGTH = 128

# metadata nobody owns: identity and bookkeeping the server sets
_UNOWNED: FieldSet = {("f:apiVersion",), ("f:kind",), ("f:metadata",)} | {
    ("f:metadata", "f:" + name) for name in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                             "generation", "managedFields", "resourceVersion")}
_STATUS: Path = ("f:status",)


class Manager(NamedTuple):
    """Who wrote, and how: the identity of one managedFields entry (a named tuple: made and hashed on
    every write, for every entry)."""

    name: str
    operation: str
    api_version: str  # empty for Apply: an applier keeps its entry across versions
    subresource: str = ""

    def describe(self) -> str:
        """As conflict messages name a manager: `"kubectl-edit" using apps/v1`."""
        text = f'"{self.name}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


class Entry:
    """One manager's fields, and when it last wrote them.

    An entry read from storage keeps the FieldsV1 tree it was read from (`wire`) and takes it apart into a
    set of paths (`fields`) only when that is needed: a write changes one manager's fields, and asks every
    other entry only whether it owns the changed paths, which the tree answers path by path (`owns`).
    The tree is written back as it is while the fields stay the same (decoding and re-encoding every
    manager's fields on every write was most of the cost of small writes such as status updates); it is
    dropped (None) once they change. A new entry, or one a client sent, has its fields and no tree."""

    __slots__ = ("api_version", "time", "wire", "_fields")

    def __init__(self, fields: FieldSet | None, api_version: str, time: str | None,
                 wire: dict[str, Any] | None = None) -> None:
        self.api_version = api_version
        self.time = time
        self.wire = wire
        self._fields = fields

    @property
    def fields(self) -> FieldSet:
        """The paths it owns (the tree decoded on first use)."""
        if self._fields is None:
            assert self.wire is not None
            self._fields = from_fields_v1(self.wire)
        return self._fields

    @property
    def empty(self) -> bool:
        """Whether it owns nothing (then it is not written): a well-formed tree owns something as soon as it
        has a key other than `.`."""
        if self._fields is not None or self.wire is None:
            return not self.fields
        return all(element == "." for element in self.wire)

    def owns(self, paths: FieldSet) -> FieldSet:
        """Those of `paths` this manager owns."""
        if self._fields is not None or self.wire is None:
            return self.fields & paths
        wire = self.wire
        return {path for path in paths if in_fields_v1(wire, path)}

    def discard(self, paths: FieldSet) -> None:
        """Give up `paths` (another manager took them, or they are gone)."""
        lost = self.owns(paths)
        if lost:
            self.fields.difference_update(lost)
            self.wire = None


Managed = dict[Manager, Entry]


def decode(raw: Any, *, stored: bool = False) -> Managed:
    """The entries of a `metadata.managedFields` value; ValueError if it is malformed. `stored` says it was
    read from storage, where only this module writes it (in canonical form), or a mutating admission
    plugin whose result `malformed` accepted: then each entry keeps its tree (`Entry.wire`), which is known
    to be well-formed and is taken apart only if its fields are needed. A client's entries are decoded
    here, which checks them, and always re-encoded, as kube re-encodes them."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ValueError("managedFields must be a list")
    managed: Managed = {}
    for item in raw:
        if not isinstance(item, dict):
            raise ValueError("a managedFields entry must be an object")
        operation, api_version = item.get("operation"), item.get("apiVersion") or ""
        if operation not in (APPLY, UPDATE) or item.get("fieldsType", "FieldsV1") != "FieldsV1":
            raise ValueError("unsupported managedFields entry")
        who = Manager(str(item.get("manager") or ""), operation, "" if operation == APPLY else str(api_version),
                      str(item.get("subresource") or ""))
        tree = item.get("fieldsV1") or {}
        entry = Entry(None, str(api_version), item.get("time"), tree) if stored else \
            Entry(from_fields_v1(tree), str(api_version), item.get("time"))
        if who in managed:  # the same manager twice: one entry with both sets of fields
            entry = Entry(entry.fields | managed[who].fields, entry.api_version, entry.time)
        managed[who] = entry
    return managed


def malformed(raw: Any) -> str:
    """Why a `metadata.managedFields` value cannot be decoded; empty if it can."""
    try:
        decode(raw)
    except (ValueError, FieldsV1Error) as err:
        return str(err)
    return ""


def encode(managed: Managed) -> list[dict[str, Any]]:
    def order(who: Manager) -> tuple[str, str, str, str, str]:
        entry = managed[who]
        return (who.operation, entry.time or "", who.name, entry.api_version, who.subresource)

    out = []
    for who in sorted((w for w, e in managed.items() if not e.empty), key=order):
        entry = managed[who]
        item: dict[str, Any] = {"manager": who.name, "operation": who.operation, "apiVersion": entry.api_version}
        if entry.time:
            item["time"] = entry.time
        item["fieldsType"] = "FieldsV1"
        item["fieldsV1"] = entry.wire if entry.wire is not None else to_fields_v1(entry.fields)
        if who.subresource:
            item["subresource"] = who.subresource
        out.append(item)
    return out


def manager_name(field_manager: str, user_agent: str) -> str:
    """The request's field manager: `?fieldManager=`, else the User-Agent's product name (`kubectl`,
    `OpenAPI-Generator`, ...)."""
    if field_manager:
        return field_manager
    product = user_agent.split("/", 1)[0]
    return "".join(ch for ch in product if ch.isprintable())[:MAX_MANAGER_LENGTH]


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    out = dict(obj)
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


class FieldTracker:
    """The field manager of one write.

    `typ` is the kind's shape, `api_version` the version written, `zero` the kind's empty object (what a
    create starts from). For an apply, `config` is the applied configuration and `force` the request's
    `force`; `status_subresource` says whether the kind keeps its status apart (then the main resource's
    manager never owns status fields, and a status write owns only those)."""

    def __init__(self, typ: Type, api_version: str, manager: str, zero: dict[str, Any], *,
                 subresource: str = "", status_subresource: bool = False, config: dict[str, Any] | None = None,
                 force: bool = False) -> None:
        self.typ = typ
        self.api_version = api_version
        self.zero = zero
        self.subresource = subresource
        self.status_subresource = status_subresource
        self.config = config
        self.force = force
        operation = UPDATE if config is None else APPLY
        self.writer = Manager(manager, operation, api_version if config is None else "", subresource)
        self.config_fields: FieldSet = set()
        if config is not None:
            try:
                self.config_fields = self._owned(field_set(config, typ))
            except ShapeError as exc:
                raise errors.APIError(422, "Invalid", f"failed to create typed patch object: {exc}", {}) from None

    # the two steps of a write ---------------------------------------------------------------------------

    def mutate(self, live: dict[str, Any]) -> dict[str, Any]:
        """An apply's new object: the configuration merged into `live`, minus what this manager applied
        before and nobody owns any more."""
        assert self.config is not None
        managed = self._live_managed(live)
        merged = merge(_without_managed(live), self.config, self.typ)
        last = managed.get(self.writer)
        if last is not None and last.fields:
            owned = set(self.config_fields)
            for who, entry in managed.items():
                if who != self.writer:
                    owned |= entry.fields
            remove(merged, with_named_parents(last.fields) - with_named_parents(owned), self.typ)
        if "managedFields" in live.get("metadata", {}):
            merged.setdefault("metadata", {})["managedFields"] = live["metadata"]["managedFields"]
        return merged

    def track(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """Record this write in `new`'s managedFields (in place); `old` is None for a create. An apply that
        changes fields other managers own raises 409 unless forced."""
        before = old if old is not None else self.zero
        if self.config is not None:
            managed = self._live_managed(old) if old is not None else {}
        else:
            managed = self._managed_for_update(old, new)
        new_plain = _without_managed(new)
        # a status write can own nothing but status: compare only that (the rest of the object may be large)
        only = "status" if self.subresource == "status" and self.status_subresource else None
        try:
            diff = compare(_without_managed(before), new_plain, self.typ, only=only)
        except ShapeError:  # an object whose lists break their own rules cannot be tracked (kube drops it too)
            new.get("metadata", {}).pop("managedFields", None)
            return
        changed, removed = self._owned(diff.changed), self._owned(diff.removed)
        if self.config is not None:
            self._check_conflicts(managed, changed, old)
        taken = changed | removed
        for who, entry in managed.items():
            if who != self.writer:
                entry.discard(taken)
        if self.config is not None:
            managed[self.writer] = Entry(set(self.config_fields), self.api_version, time_string())
            if self.writer.name == KUBECTL:
                _sync_last_applied(new, self.config)
        elif changed:
            previous = managed.get(self.writer)
            fields = (previous.fields - removed if previous else set()) | changed
            managed[self.writer] = Entry(fields, self.api_version, time_string())
        elif self.writer in managed:
            managed[self.writer].discard(removed)
        entries = encode(managed)
        if old is not None:
            kept = old.get("metadata", {}).get("managedFields")
            if _same_but_times(kept, entries) and _without_managed(old) == new_plain:
                entries = kept
        meta = new.setdefault("metadata", {})
        if entries:
            meta["managedFields"] = entries
        else:
            meta.pop("managedFields", None)

    # helpers ------------------------------------------------------------------------------------------------

    def _owned(self, paths: FieldSet) -> FieldSet:
        """The paths a manager can own from this write: never server bookkeeping, and status only through
        the status subresource of kinds that have one."""
        out = paths - _UNOWNED
        if self.status_subresource:
            status = under(out, _STATUS)
            out = status if self.subresource == "status" else out - status
        return out

    def _live_managed(self, live: dict[str, Any]) -> Managed:
        """The live object's entries; an object that never had any is first credited, field by field, to
        `before-first-apply`, so that a first apply cannot silently take over what others wrote."""
        try:
            managed = decode(live.get("metadata", {}).get("managedFields"), stored=True)
        except (ValueError, FieldsV1Error):
            managed = {}
        if not managed and self.config is not None:
            try:
                fields = self._owned(compare(self.zero, _without_managed(live), self.typ).changed)
            except ShapeError:
                fields = set()
            if fields:
                managed[Manager(BEFORE_FIRST_APPLY, UPDATE, self.api_version)] = Entry(fields, self.api_version,
                                                                                      None)
        return managed

    def _managed_for_update(self, old: dict[str, Any] | None, new: dict[str, Any]) -> Managed:
        """The entries an update starts from: the client's own, if it sent any (that is how kubectl rewrites
        them when it moves an object to server-side apply), `[{}]` to start afresh, else the live ones."""
        live = old.get("metadata", {}).get("managedFields") if old is not None else None
        sent = new.get("metadata", {}).get("managedFields")
        if not self.subresource and sent not in (None, []):
            if sent == [{}]:
                return {}
            try:
                managed = decode(sent)
                if managed:
                    return managed
            except (ValueError, FieldsV1Error):
                pass
        try:
            return decode(live, stored=True)
        except (ValueError, FieldsV1Error):
            return {}

    def _check_conflicts(self, managed: Managed, changed: FieldSet, live: dict[str, Any] | None) -> None:
        if self.force:
            return
        conflicts = sorted(((who, path) for who, entry in managed.items() if who != self.writer
                            for path in entry.owns(changed)), key=lambda c: (c[0].describe(), c[1]))
        if conflicts and self.writer.name == KUBECTL and live is not None:
            allowed = self._unchanged_since_last_applied(live)
            conflicts = [(who, path) for who, path in conflicts if path not in allowed]
        if conflicts:
            raise conflict_error(conflicts)

    def _unchanged_since_last_applied(self, live: dict[str, Any]) -> FieldSet:
        """The fields of the live object's last-applied-configuration whose values nobody changed since."""
        text = (live.get("metadata", {}).get("annotations") or {}).get(LAST_APPLIED)
        try:
            last = json.loads(text) if isinstance(text, str) else None
            if not isinstance(last, dict):
                return set()
            return field_set(last, self.typ) - compare(last, _without_managed(live), self.typ).modified
        except (ValueError, ShapeError):
            return set()


def _sync_last_applied(obj: dict[str, Any], config: dict[str, Any]) -> None:
    """Rewrite an existing last-applied-configuration annotation as the applied configuration."""
    annotations = obj.get("metadata", {}).get("annotations")
    if not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return
    applied = copy.deepcopy(config)
    (applied.get("metadata", {}).get("annotations") or {}).pop(LAST_APPLIED, None)
    annotations[LAST_APPLIED] = go_json(applied) + "\n"


def _same_but_times(kept: Any, entries: list[dict[str, Any]]) -> bool:
    if not isinstance(kept, list) or len(kept) != len(entries):
        return False
    strip = [{k: v for k, v in e.items() if k != "time"} for e in entries]
    return [{k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e for e in kept] == strip


def conflict_error(conflicts: list[tuple[Manager, Path]]) -> errors.APIError:
    """409 Conflict naming every field another manager owns, as kube words it."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {who.describe()}",
               "field": path_string(path)} for who, path in conflicts]
    if len(conflicts) == 1:
        who, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {who.describe()}: {path_string(path)}"
    else:
        lines: list[str] = []
        for who in sorted({w.describe() for w, _ in conflicts}):
            lines.append(f"conflicts with {who}:")
            lines += [f"- {path_string(p)}" for w, p in conflicts if w.describe() == who]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return errors.APIError(409, "Conflict", message, {"causes": causes})

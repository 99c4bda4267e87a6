"""The dependency graph: every object the garbage collector has heard of, linked by ownerReferences.

A `Node` stands for one object, found by its uid. It keeps the object's `ownerReferences` (arrows up, as
references, because an owner may not be known yet) and the set of its `dependents` (arrows down, as nodes).
Three flags follow the object's deletion:
* `being_deleted`: it has a deletionTimestamp (a one-way trip: never cleared);
* `deleting_dependents`: it is being deleted with the `foregroundDeletion` finalizer, so it waits for the
  dependents that block it (`blockOwnerDeletion: true`) to go first;
* `virtual`: nobody has seen this object yet; a dependent named it as an owner. A virtual node is verified
  with a live GET: if the apiserver has no object with that uid, the owner is gone and its node is removed.

An `ObjectReference` is a node's identity: apiVersion, kind, namespace, name and uid (kube's
`objectReference`). A virtual node takes the namespace of the dependent that named it, because an
ownerReference has no namespace: a namespaced owner must live in its dependent's namespace.

`ReferenceCache` remembers owners the apiserver confirmed absent (kube's `absentOwnerCache`, 500
entries, least recently used dropped), so a hundred pods of a deleted ReplicaSet cost one GET, not a hundred.

Usage rules: only the graph builder (builder.py) changes nodes and edges; the collector's workers read them.
asyncio runs one callback at a time, so no locks are needed, but a worker must not assume a node is
unchanged after it awaited something.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

FOREGROUND = "foregroundDeletion"  # metav1.FinalizerDeleteDependents
ORPHAN = "orphan"  # metav1.FinalizerOrphanDependents

OwnerReference = dict[str, Any]


@dataclass(frozen=True)
class ObjectReference:
    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    @classmethod
    def of_owner(cls, ref: OwnerReference, namespace: str) -> ObjectReference:
        """The identity an ownerReference gives its owner, seen from a dependent in `namespace`."""
        return cls(str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(ref.get("name", "")),
                   str(ref.get("uid", "")), namespace)

    def matches(self, ref: OwnerReference) -> bool:
        """Whether `ref` names this object by the same coordinates (uid, name, kind and apiVersion)."""
        return (ref.get("uid"), ref.get("name"), ref.get("kind"), ref.get("apiVersion")) == \
            (self.uid, self.name, self.kind, self.api_version)

    def with_namespace(self, namespace: str) -> ObjectReference:
        return ObjectReference(self.api_version, self.kind, self.name, self.uid, namespace)

    def describe(self) -> str:
        """`ConfigMap default/web`: how log lines name an object."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def __str__(self) -> str:  # the form kube prints in events
        return f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, name: {self.name}, uid: {self.uid}]"

    def sort_key(self) -> tuple[str, str, str, str, str]:
        """Kind and apiVersion first, then namespace, name and uid (kube's `referenceLessThan`)."""
        return (self.kind, self.api_version, self.namespace, self.name, self.uid)


@dataclass(eq=False)
class Node:
    """One object in the graph; hashed by identity of the Python object, so it can sit in sets and queues."""

    identity: ObjectReference
    owners: list[OwnerReference] = field(default_factory=list)
    dependents: set[Node] = field(default_factory=set)
    being_deleted: bool = False
    deleting_dependents: bool = False
    virtual: bool = False

    def blocking_dependents(self) -> list[Node]:
        """The dependents whose reference to this node says `blockOwnerDeletion: true`."""
        return [dep for dep in self.dependents
                if any(ref.get("uid") == self.identity.uid and ref.get("blockOwnerDeletion") is True
                       for ref in dep.owners)]

    def __repr__(self) -> str:
        return f"{'virtual ' if self.virtual else ''}{self.identity.describe()} ({self.identity.uid})"


class ReferenceCache:
    """A bounded set of identities, dropping the least recently used (kube's `ReferenceCache`)."""

    def __init__(self, size: int = 500) -> None:
        self.size = size
        self._entries: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, ref: ObjectReference) -> None:
        self._entries[ref] = None
        self._entries.move_to_end(ref)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __contains__(self, ref: object) -> bool:
        if ref not in self._entries:
            return False
        self._entries.move_to_end(ref)  # type: ignore[arg-type]
        return True


def has_finalizer(obj: dict[str, Any], finalizer: str) -> bool:
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def being_deleted(obj: dict[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def partition_dependents(dependents: set[Node], identity: ObjectReference) -> tuple[list[Node], list[Node]]:
    """Split `dependents` into those whose reference to `identity.uid` matches `identity` and those whose
    does not (another kind or name, or a namespace a namespaced owner cannot be seen from). A dependent
    with several references to that uid may land in both lists."""
    matching, nonmatching = [], []
    for dep in dependents:
        if identity.namespace and dep.identity.namespace != identity.namespace:
            nonmatching.append(dep)
            continue
        refs = [ref for ref in dep.owners if ref.get("uid") == identity.uid]
        if any(identity.matches(ref) for ref in refs):
            matching.append(dep)
        if any(not identity.matches(ref) for ref in refs):
            nonmatching.append(dep)
    return matching, nonmatching


def alternate_identity(dependents: list[Node], absent: ObjectReference) -> ObjectReference | None:
    """Another identity the dependents give the uid of `absent` (an owner just confirmed missing under that
    identity), to verify next: the first in `sort_key` order after `absent`, else the first of all."""
    seen = {absent}
    alternates = []
    for dep in dependents:
        for ref in dep.owners:
            if ref.get("uid") != absent.uid:
                continue
            if absent.matches(ref) and (not absent.namespace or absent.namespace == dep.identity.namespace):
                continue
            candidate = ObjectReference.of_owner(ref, dep.identity.namespace)
            if not absent.namespace and (candidate.api_version, candidate.kind) == (absent.api_version, absent.kind):
                candidate = candidate.with_namespace("")  # that kind is known to be cluster-scoped
            if candidate not in seen:
                seen.add(candidate)
                alternates.append(candidate)
    if not alternates:
        return None
    following = [ref for ref in alternates if ref.sort_key() > absent.sort_key()]
    return min(following or alternates, key=ObjectReference.sort_key)


def references_diff(old: list[OwnerReference], new: list[OwnerReference]
                    ) -> tuple[list[OwnerReference], list[OwnerReference], list[tuple[OwnerReference, OwnerReference]]]:
    """The references added, removed and changed (same uid, other fields) between `old` and `new`."""
    old_by_uid = {ref.get("uid"): ref for ref in old}
    new_uids = {ref.get("uid") for ref in new}
    added = [ref for ref in new if ref.get("uid") not in old_by_uid]
    changed = [(old_by_uid[ref.get("uid")], ref) for ref in new
               if ref.get("uid") in old_by_uid and old_by_uid[ref.get("uid")] != ref]
    removed = [ref for uid, ref in old_by_uid.items() if uid not in new_uids]
    return added, removed, changed

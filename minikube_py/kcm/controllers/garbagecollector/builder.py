"""The graph builder: turns informer events into changes of the dependency graph, and the graph's changes
into work for the collector (kube's `GraphBuilder.processGraphChanges`).

Every add, update and delete of every monitored object comes here as a `GraphEvent` (monitors.py), and so do
"virtual" deletes, which the collector makes up when a GET proved an object gone. For each event:

* a new object gets a node; each owner it names gets the node as a dependent, and an owner nobody has seen
  yet gets a *virtual* node, queued on `attempt_to_delete` so the collector checks whether it exists;
* a virtual node becomes real when its object shows up; if the object differs from what the dependents
  said (another kind, or a namespace a namespaced owner cannot have), the dependents that named it wrongly
  are queued, and a namespaced owner seen in another namespace than its dependent's is reported on the
  dependent with a Warning event `OwnerRefInvalidNamespace`;
* changed ownerReferences move the node between owners; a reference that stopped blocking
  (`blockOwnerDeletion` removed or false) queues its owner, which may be waiting in the foreground;
* an object whose deletion starts with the `orphan` finalizer goes on `attempt_to_orphan`; one whose
  deletion starts with `foregroundDeletion` is marked `deleting_dependents` and queued with all its
  dependents;
* a deleted object's node is removed; its dependents are queued (their owner is gone), and so are its owners
  that wait in the foreground for their dependents to go.

Usage rules: `process` never awaits, so the graph changes one event at a time; the queues hold `Node`s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from minikube_py.api.gofmt import go_quote
from minikube_py.client.clock import Clock
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.workqueue import RateLimitingQueue

from .graph import (
    FOREGROUND,
    ORPHAN,
    Node,
    ObjectReference,
    OwnerReference,
    ReferenceCache,
    alternate_identity,
    being_deleted,
    has_finalizer,
    partition_dependents,
    references_diff,
)

ADD, UPDATE, DELETE = "add", "update", "delete"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphEvent:
    type: str  # ADD, UPDATE or DELETE
    obj: dict[str, Any]
    api_version: str  # of the resource the event came from: list items carry no apiVersion/kind
    kind: str
    old: dict[str, Any] | None = None
    virtual: bool = False  # made up by the collector after a GET found the object gone

    @property
    def identity(self) -> ObjectReference:
        meta = self.obj.get("metadata") or {}
        return ObjectReference(self.api_version, self.kind, str(meta.get("name", "")), str(meta.get("uid", "")),
                               str(meta.get("namespace") or ""))


class GraphBuilder:
    def __init__(self, recorder: CoreEventRecorder, clock: Clock) -> None:
        self.recorder = recorder
        self.uid_to_node: dict[str, Node] = {}
        self.absent_owners = ReferenceCache()
        self.attempt_to_delete = RateLimitingQueue(name="garbage_collector_attempt_to_delete", clock=clock)
        self.attempt_to_orphan = RateLimitingQueue(name="garbage_collector_attempt_to_orphan", clock=clock)

    def process(self, event: GraphEvent) -> None:
        identity = event.identity
        if not identity.uid:
            return
        node = self.uid_to_node.get(identity.uid)
        if node is not None and node.virtual and not event.virtual:
            self._observe(node, identity)
        if event.type == DELETE:
            if node is not None:
                self._delete(node, identity, event.virtual)
            return
        if node is None:
            node = Node(identity, owners=_owners(event.obj), being_deleted=being_deleted(event.obj),
                        deleting_dependents=being_deleted(event.obj) and has_finalizer(event.obj, FOREGROUND))
            self.uid_to_node[identity.uid] = node
            self._add_dependent_to_owners(node, node.owners)
        else:
            self._update(node, identity, event.obj)
        self._process_transitions(event.old, event.obj, node)

    def virtual_delete(self, identity: ObjectReference) -> None:
        """Tell the graph that a GET found no object `identity` (kube's `enqueueVirtualDeleteEvent`)."""
        obj = {"metadata": {"name": identity.name, "namespace": identity.namespace, "uid": identity.uid}}
        self.process(GraphEvent(DELETE, obj, identity.api_version, identity.kind, virtual=True))

    # the cases of process --------------------------------------------------------------------------------

    def _observe(self, node: Node, observed: ObjectReference) -> None:
        """A virtual node's object has shown up: check what the dependents called it against what it is."""
        if observed != node.identity:
            _, suspicious = partition_dependents(node.dependents, observed)
            for dep in suspicious:
                if observed.namespace and dep.identity.namespace != observed.namespace:
                    self.report_invalid_namespace(dep, observed.uid)
                self.attempt_to_delete.add(dep)
            node.identity = observed
        node.virtual = False

    def _update(self, node: Node, identity: ObjectReference, obj: dict[str, Any]) -> None:
        if (node.identity.api_version, node.identity.kind) != (identity.api_version, identity.kind):
            node.identity = identity  # served under another version now; owners keep this same node object
        owners = _owners(obj)
        added, removed, changed = references_diff(node.owners, owners)
        if added or removed or changed:
            self._enqueue_unblocked_owners(removed, changed)
            node.owners = owners
            self._add_dependent_to_owners(node, added)
            self._remove_dependent_from_owners(node, removed)
        if being_deleted(obj):
            node.being_deleted = True

    def _delete(self, node: Node, deleted: ObjectReference, virtual: bool) -> None:
        if virtual and not self._confirm_virtual_delete(node, deleted):
            return
        del self.uid_to_node[node.identity.uid]
        self._remove_dependent_from_owners(node, node.owners)
        if node.dependents:
            self.absent_owners.add(deleted)
            log.info("%s is gone: checking its %d dependent(s)", deleted.describe(), len(node.dependents))
        for dep in node.dependents:
            self.attempt_to_delete.add(dep)
        for ref in node.owners:
            owner = self.uid_to_node.get(str(ref.get("uid", "")))
            if owner is not None and owner.deleting_dependents:
                self.attempt_to_delete.add(owner)  # it may have been waiting for this dependent

    def _confirm_virtual_delete(self, node: Node, deleted: ObjectReference) -> bool:
        """Whether a GET that found no `deleted` means `node` may go. Dependents that name the uid by other
        coordinates keep the node (verified next under one of those), but the ones that named it as
        `deleted` learn now that their owner is absent."""
        if node.virtual:
            matching, nonmatching = partition_dependents(node.dependents, deleted)
            if not nonmatching:
                return True
            if node.identity == deleted:
                alternate = alternate_identity(nonmatching, deleted)
                if alternate is not None:
                    node.identity = alternate
                    self.attempt_to_delete.add_rate_limited(node)
        elif node.identity == deleted:
            return True
        else:
            matching, _ = partition_dependents(node.dependents, deleted)
        if matching:
            self.absent_owners.add(deleted)
            for dep in matching:
                self.attempt_to_delete.add(dep)
        return False

    def _process_transitions(self, old: dict[str, Any] | None, new: dict[str, Any], node: Node) -> None:
        if _starts_deletion_with(old, new, ORPHAN):
            log.info("%s is being deleted with propagation Orphan: its dependents will be orphaned",
                     node.identity.describe())
            self.attempt_to_orphan.add(node)
            return
        if _starts_deletion_with(old, new, FOREGROUND):
            log.info("%s is being deleted in the foreground: deleting its %d dependent(s) first",
                     node.identity.describe(), len(node.dependents))
            node.deleting_dependents = True
            for dep in node.dependents:
                self.attempt_to_delete.add(dep)
            self.attempt_to_delete.add(node)

    # edges ---------------------------------------------------------------------------------------------------

    def _add_dependent_to_owners(self, node: Node, owners: list[OwnerReference]) -> None:
        """Link `node` under each owner, making virtual nodes for owners not seen yet. A reference that does
        not fit the owner as observed queues `node`, so the collector checks its references."""
        suspicious = False
        for ref in owners:
            uid = str(ref.get("uid", ""))
            owner = self.uid_to_node.get(uid)
            if owner is None:
                owner = Node(ObjectReference.of_owner(ref, node.identity.namespace), virtual=True)
                self.uid_to_node[uid] = owner
                owner.dependents.add(node)
                self.attempt_to_delete.add(owner)  # does it exist? the collector asks the apiserver
                continue
            owner.dependents.add(node)
            if suspicious:
                continue
            owner_namespace = owner.identity.namespace
            if owner_namespace and owner_namespace != node.identity.namespace:
                if not owner.virtual:
                    self.report_invalid_namespace(node, uid)
                suspicious = True
            elif not owner.identity.matches(ref):
                suspicious = True
            elif not owner_namespace and node.identity.namespace and owner.virtual:
                suspicious = True  # maybe a namespaced owner named by a cluster-scoped object: verify
        if suspicious:
            self.attempt_to_delete.add(node)

    def _remove_dependent_from_owners(self, node: Node, owners: list[OwnerReference]) -> None:
        for ref in owners:
            owner = self.uid_to_node.get(str(ref.get("uid", "")))
            if owner is not None:
                owner.dependents.discard(node)

    def _enqueue_unblocked_owners(self, removed: list[OwnerReference],
                                  changed: list[tuple[OwnerReference, OwnerReference]]) -> None:
        unblocked = [ref for ref in removed if ref.get("blockOwnerDeletion") is True]
        unblocked += [new for old, new in changed
                      if old.get("blockOwnerDeletion") is True and new.get("blockOwnerDeletion") is not True]
        for ref in unblocked:
            owner = self.uid_to_node.get(str(ref.get("uid", "")))
            if owner is not None:
                self.attempt_to_delete.add(owner)

    def report_invalid_namespace(self, node: Node, owner_uid: str) -> None:
        """A Warning `OwnerRefInvalidNamespace` on `node`: its owner `owner_uid` cannot be in its namespace."""
        ref = next((ref for ref in node.owners if ref.get("uid") == owner_uid), None)
        if ref is None:
            return
        dependent, invalid = node.identity, ObjectReference.of_owner(ref, node.identity.namespace)
        log.warning("%s names owner %s, which cannot be seen from its namespace", dependent.describe(), invalid)
        involved = {"apiVersion": dependent.api_version, "kind": dependent.kind, "name": dependent.name,
                    "namespace": dependent.namespace, "uid": dependent.uid}
        self.recorder.event(involved, "Warning", "OwnerRefInvalidNamespace",
                            f"ownerRef {invalid} does not exist in namespace {go_quote(dependent.namespace)}")


def _owners(obj: dict[str, Any]) -> list[OwnerReference]:
    return list((obj.get("metadata") or {}).get("ownerReferences") or [])


def _starts_deletion_with(old: dict[str, Any] | None, new: dict[str, Any], finalizer: str) -> bool:
    """Whether `new` is being deleted with `finalizer` and `old` (if any) was not."""
    if not (being_deleted(new) and has_finalizer(new, finalizer)):
        return False
    return old is None or not (being_deleted(old) and has_finalizer(old, finalizer))

"""From informer events to the scheduler's queue and cache (kube's `eventhandlers.go`).

Two streams come in:

* **Pods.** A pod with `spec.nodeName` is *assigned*: it goes to the cache, so nodes account for it, and its
  arrival or departure may make waiting pods schedulable (inter-pod affinity, freed resources). A pod without
  one, whose `spec.schedulerName` names one of our profiles, is *ours to schedule*: it goes to the queue. A
  pod moves from the second group to the first when it is bound, which the filtering handler turns into a
  delete from the queue and an add to the cache. Pods for schedulers we don't run are left alone.
* **Nodes.** Every change goes to the cache; then the queue is told what changed (added, allocatable, labels,
  taints, conditions, …) so it moves back only the pods a plugin said such a change could help.
* **Other kinds plugins registered cluster events for** (`CLUSTER_EVENT_RESOURCES`: claims, volumes, storage
  classes for VolumeBinding). Only the kinds some enabled plugin asked for are watched, and only the actions
  asked for (kube's `addAllEventHandlers`); each add, update or delete is offered to the unschedulable pods
  as a `ClusterEvent` ("PersistentVolumeClaimUpdate"), and the plugins' queueing hints pick the pods it
  can help. Nothing is cached: the plugins read these kinds through their own listers.

Usage rules: handlers never block and never mutate the objects they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.client import resources
from minikube_py.scheduler.framework.interface import ActionType, ClusterEvent, ClusterEventWithHint
from minikube_py.scheduler.framework.types import scheduler_name

Obj = dict[str, Any]

NODE_ADD = ClusterEvent("Node", ActionType.ADD, "NodeAdd")
ASSIGNED_POD_DELETE = ClusterEvent("Pod", ActionType.DELETE, "AssignedPodDelete")

# The kinds besides Pod and Node whose changes plugins may register for, and the resource watched for each.
CLUSTER_EVENT_RESOURCES: dict[str, Resource] = {
    "PersistentVolumeClaim": resources.PERSISTENT_VOLUME_CLAIMS,
    "PersistentVolume": resources.PERSISTENT_VOLUMES,
    "StorageClass": resources.STORAGE_CLASSES,
}
_ACTION_NAMES = ((ActionType.ADD, "Add"), (ActionType.UPDATE, "Update"), (ActionType.DELETE, "Delete"))


def unwrap(obj: Any) -> Obj:
    """The last known object of a delete the informer only noticed on relist (DeletedFinalStateUnknown)."""
    return obj.obj if hasattr(obj, "obj") and not isinstance(obj, dict) else obj


def is_assigned(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def is_terminal(pod: Obj) -> bool:
    """Succeeded and Failed pods hold no resources; kube's scheduler does not even watch them."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def assigned_and_running(pod: Obj) -> bool:
    return is_assigned(pod) and not is_terminal(pod)


class FilteringHandler:
    """Passes on only the objects `accepts` takes; an update across the boundary becomes an add or a delete."""

    def __init__(self, accepts: Callable[[Obj], bool], on_add: Callable[[Obj], None],
                 on_update: Callable[[Obj, Obj], None], on_delete: Callable[[Obj], None]) -> None:
        self.accepts = accepts
        self._add, self._update, self._delete = on_add, on_update, on_delete

    def on_add(self, obj: Obj, is_in_initial_list: bool = False) -> None:
        if self.accepts(obj):
            self._add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        was, now = self.accepts(old), self.accepts(new)
        if was and now:
            self._update(old, new)
        elif now:
            self._add(new)
        elif was:
            self._delete(old)

    def on_delete(self, obj: Any) -> None:
        obj = unwrap(obj)
        if self.accepts(obj):
            self._delete(obj)


def node_update_event(old: Obj, new: Obj) -> ClusterEvent | None:
    """What changed between two versions of a node, as one event with every action that applies."""
    action = ActionType(0)
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_status.get("allocatable") != new_status.get("allocatable"):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old_meta.get("labels") != new_meta.get("labels"):
        action |= ActionType.UPDATE_NODE_LABEL
    if old_spec.get("taints") != new_spec.get("taints") or old_spec.get("unschedulable") != new_spec.get(
            "unschedulable"):
        action |= ActionType.UPDATE_NODE_TAINT
    if _condition_statuses(old_status) != _condition_statuses(new_status):
        action |= ActionType.UPDATE_NODE_CONDITION
    if old_meta.get("annotations") != new_meta.get("annotations"):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    return ClusterEvent("Node", action, "NodeUpdate") if action else None


def _condition_statuses(status: Obj) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in status.get("conditions") or [] if isinstance(c, dict)}


class ClusterEventHandler:
    """Offers the adds, updates and deletes of one kind, those of `actions` only, to the queue's unschedulable
    pods as ClusterEvents (kube's `buildEvtResHandler`); any update counts as the action `UPDATE`."""

    def __init__(self, kind: str, actions: ActionType, move: Callable[[ClusterEvent, Any, Any], None]) -> None:
        self.move = move
        self.events = {action: ClusterEvent(kind, action, f"{kind}{name}")
                       for action, name in _ACTION_NAMES if actions & action}

    def on_add(self, obj: Obj, is_in_initial_list: bool = False) -> None:
        if (event := self.events.get(ActionType.ADD)) is not None:
            self.move(event, None, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if (event := self.events.get(ActionType.UPDATE)) is not None:
            self.move(event, old, new)

    def on_delete(self, obj: Any) -> None:
        if (event := self.events.get(ActionType.DELETE)) is not None:
            self.move(event, unwrap(obj), None)


class EventHandlers:
    """Connects the pod and node informers to a scheduler's cache and queue."""

    def __init__(self, cache: Any, queue: Any, profiles: Collection[str],
                 on_pod_deleted: Callable[[Obj], None] = lambda pod: None) -> None:
        self.cache, self.queue, self.profiles = cache, queue, profiles
        self.on_pod_deleted = on_pod_deleted  # e.g. reject the pod if it waits at Permit

    def register(self, pod_informer: Any, node_informer: Any) -> None:
        pod_informer.add_event_handler(FilteringHandler(assigned_and_running, self.add_assigned_pod,
                                                        self.update_assigned_pod, self.delete_assigned_pod))
        pod_informer.add_event_handler(FilteringHandler(self.responsible_for, self.add_pod_to_queue,
                                                        self.update_pod_in_queue, self.delete_pod_from_queue))
        node_informer.add_event_handler(FilteringHandler(lambda node: True, self.add_node, self.update_node,
                                                         self.delete_node))

    def register_cluster_events(self, informers: Any, registrations: Iterable[ClusterEventWithHint]) -> None:
        """Watch each kind of `CLUSTER_EVENT_RESOURCES` that `registrations` (every plugin's events_to_register)
        name, for the actions they name; `informers` is the scheduler's SharedInformerFactory."""
        actions: dict[str, ActionType] = {}
        for registration in registrations:
            kind = registration.event.resource
            if kind in CLUSTER_EVENT_RESOURCES:
                actions[kind] = actions.get(kind, ActionType(0)) | registration.event.action
        for kind, action in actions.items():
            handler = ClusterEventHandler(kind, action, self.queue.move_all_to_active_or_backoff_queue)
            informers.informer_for(CLUSTER_EVENT_RESOURCES[kind]).add_event_handler(handler)

    def responsible_for(self, pod: Obj) -> bool:
        return not is_assigned(pod) and not is_terminal(pod) and scheduler_name(pod) in self.profiles

    # --- pods waiting to be scheduled ---

    def add_pod_to_queue(self, pod: Obj) -> None:
        self.queue.add(pod)

    def update_pod_in_queue(self, old: Obj, new: Obj) -> None:
        if self.cache.is_assumed_pod(new):
            return  # already on its way to a node; the bind will turn it into an assigned pod
        self.queue.update(old, new)

    def delete_pod_from_queue(self, pod: Obj) -> None:
        self.queue.delete(pod)
        self.on_pod_deleted(pod)

    # --- pods on nodes ---

    def add_assigned_pod(self, pod: Obj) -> None:
        self.cache.add_pod(pod)
        self.queue.assigned_pod_added(pod)

    def update_assigned_pod(self, old: Obj, new: Obj) -> None:
        self.cache.update_pod(old, new)
        self.queue.assigned_pod_updated(old, new)

    def delete_assigned_pod(self, pod: Obj) -> None:
        self.cache.remove_pod(pod)
        self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, pod, None)

    # --- nodes ---

    def add_node(self, node: Obj) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)

    def update_node(self, old: Obj, new: Obj) -> None:
        self.cache.update_node(old, new)
        event = node_update_event(old, new)
        if event is not None:
            self.queue.move_all_to_active_or_backoff_queue(event, old, new)

    def delete_node(self, node: Obj) -> None:
        self.cache.remove_node(node)

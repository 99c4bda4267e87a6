"""The DaemonSet controller: one daemon pod on every node that fits (kube's pkg/controller/daemon).

Informers on DaemonSets, pods, nodes and ControllerRevisions; the handlers only enqueue DaemonSet keys:
* a DaemonSet added, changed or deleted → its key;
* a pod → the key of the DaemonSet controlling it (its creation or deletion also settles expectations); an
  orphan pod → every DaemonSet in its namespace whose selector matches it, to adopt it; a pod that turned
  Ready → once more after `minReadySeconds`, when it counts as available;
* a node added → every DaemonSet that should run there; a node changed → every DaemonSet for which the
  answer to "should run / may keep running here" changed (heartbeats that only refresh conditions are
  ignored);
* a ControllerRevision changed or deleted → the DaemonSet controlling it; an orphan one added → every
  DaemonSet whose selector matches it, to adopt it.

`sync(key)`:
1. the history (revisions.py): the DaemonSet's ControllerRevisions are claimed like its pods (matching
   orphans adopted), the current one is found or created; its hash labels new pods;
2. unless the expectations of the last writes are still open, `manage` walks the nodes (placement.py): a
   node that should run the daemon and has no pod gets one; Failed pods are deleted (with a per-node backoff,
   1 s doubling to 15 min, so a kubelet that keeps rejecting the pod is not fought in a hot loop; event
   FailedDaemonPod), Succeeded ones too; extra pods on a node are pruned (the oldest stays, or with maxSurge
   the oldest new one while the old one is still needed); pods on nodes that must no longer run it, and
   never-bound pods for nodes that are gone, are deleted. Creations go in slow-start batches (1, 2, 4, …),
   each pod pinned to its node by node affinity and left to the scheduler;
3. with `updateStrategy: RollingUpdate`, old pods are replaced (rollingupdate.py);
4. old revisions beyond `revisionHistoryLimit` are deleted;
5. the status: desiredNumberScheduled (nodes that should run it), currentNumberScheduled (of those, nodes
   with a pod), numberMisscheduled (nodes with a pod that should not run it), numberReady, numberAvailable
   (ready for minReadySeconds), numberUnavailable (desired - available), updatedNumberScheduled (nodes whose
   pod runs the current revision), observedGeneration, collisionCount. `kubectl rollout status` compares
   updatedNumberScheduled and numberAvailable with desiredNumberScheduled.

Events as kube's: SuccessfulCreate "Created pod: NAME", SuccessfulDelete "Deleted pod: NAME", FailedCreate
"Error creating: MESSAGE", FailedDelete "Error deleting: MESSAGE" (the pod writes are podcontrol.PodControl's,
as the ReplicaSet controller's), FailedDaemonPod, SucceededDaemonPod, SelectingAll. A write that fails makes the sync fail, and the queue retries the DaemonSet with backoff.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.api.selectors import LabelSelector
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.daemonset import revisions, rollingupdate, status
from minikube_py.kcm.controllers.daemonset.backoff import FailedPodBackoff
from minikube_py.kcm.controllers.daemonset.placement import (
    REVISION_HASH_LABEL,
    Placement,
    creation_order,
    daemon_pod_template,
    pin_to_node,
    target_node,
)
from minikube_py.kcm.controllers.expectations import ControllerExpectations

BURST_REPLICAS = 250  # most pods created or deleted in one sync
SELECTING_ALL_MESSAGE = "This daemon set is selecting all pods. A non-empty selector is required."

Obj = dict[str, Any]
log = logging.getLogger(__name__)


class DaemonSetController:
    name = "daemonset-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.daemon_sets = ctx.informers.informer_for(resources.DAEMON_SETS)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.nodes = ctx.informers.informer_for(resources.NODES)
        self.revisions = ctx.informers.informer_for(resources.CONTROLLER_REVISIONS)
        self.queue = RateLimitingQueue(name="daemonset", clock=ctx.clock)
        self.expectations = ControllerExpectations(ctx.clock)
        self.pod_control = podcontrol.PodControl(ctx.client, ctx.recorder, self.expectations)
        self.failed_pods_backoff = FailedPodBackoff(ctx.clock)
        self.daemon_sets.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=self._daemon_set_updated,
                                                       on_delete=self._daemon_set_deleted))
        self.pods.add_event_handler(FuncHandler(on_add=self._pod_added, on_update=self._pod_updated,
                                                on_delete=self._pod_deleted))
        self.nodes.add_event_handler(FuncHandler(on_add=self._node_added, on_update=self._node_updated))
        self.revisions.add_event_handler(FuncHandler(on_add=self._revision_added, on_update=self._revision_updated,
                                                     on_delete=self._revision_changed))

    async def run(self, workers: int) -> None:
        await asyncio.gather(*(informer.wait_for_cache_sync()
                               for informer in (self.daemon_sets, self.pods, self.nodes, self.revisions)))
        try:
            await run_workers(self.queue, self.sync, workers, name="daemonset", logger=log)
        finally:
            self.queue.shut_down()

    # event handlers: only keys go on the queue ---------------------------------------------------------

    def _enqueue(self, ds: Obj, *_: Any) -> None:
        self.queue.add(meta_namespace_key(ds))

    def _daemon_set_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("uid") != new["metadata"].get("uid"):
            self.expectations.delete(meta_namespace_key(old))  # replaced by a new object of the same name
        self._enqueue(new)

    def _daemon_set_deleted(self, ds: Obj | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(ds)
        self.expectations.delete(key)
        self.queue.add(key)

    def _resolve(self, obj: Obj, ref: dict[str, Any] | None) -> Obj | None:
        """The cached DaemonSet `ref` (a controllerRef of `obj`) points to, if it is still that object."""
        return podcontrol.resolve_controller_ref(self.daemon_sets.indexer, obj["metadata"].get("namespace", ""), ref,
                                                 "DaemonSet")

    def _enqueue_selecting(self, obj: Obj) -> None:
        """Enqueue the DaemonSets that could adopt the orphan `obj`."""
        for ds in self.daemon_sets.lister().list(obj["metadata"].get("namespace")):
            selector = (ds.get("spec") or {}).get("selector")
            if selector and LabelSelector.from_api(selector).matches(obj["metadata"].get("labels")):
                self._enqueue(ds)

    def _pod_added(self, pod: Obj, *_: Any) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)  # a restarted controller sees pods already being deleted as adds
            return
        ref = podcontrol.controller_of(pod)
        if ref is None:
            self._enqueue_selecting(pod)
        elif (ds := self._resolve(pod, ref)) is not None:
            key = meta_namespace_key(ds)
            self.expectations.creation_observed(key)
            self.queue.add(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)  # the deletion starts now: do not wait for the pod to be gone
            return
        old_ref, new_ref = podcontrol.controller_of(old), podcontrol.controller_of(new)
        if old_ref != new_ref and (previous := self._resolve(old, old_ref)) is not None:
            self._enqueue(previous)
        if new_ref is None:
            if old_ref is not None or old["metadata"].get("labels") != new["metadata"].get("labels"):
                self._enqueue_selecting(new)
            return
        ds = self._resolve(new, new_ref)
        if ds is None:
            return
        self._enqueue(ds)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and not podcontrol.is_ready(old) and podcontrol.is_ready(new):
            self.queue.add_after(meta_namespace_key(ds), min_ready + 1)  # when it turns available

    def _pod_deleted(self, pod: Obj | DeletedFinalStateUnknown) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        ds = self._resolve(pod, podcontrol.controller_of(pod))
        if ds is not None:
            key = meta_namespace_key(ds)
            self.expectations.deletion_observed(key, meta_namespace_key(pod))
            self.queue.add(key)

    def _node_added(self, node: Obj, *_: Any) -> None:
        for ds in self.daemon_sets.lister().list():
            if Placement.of(ds).should_run(node)[0]:
                self._enqueue(ds)

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if _only_heartbeat(old, new):
            return
        for ds in self.daemon_sets.lister().list():
            placement = Placement.of(ds)
            if placement.should_run(old) != placement.should_run(new):
                self._enqueue(ds)

    def _revision_added(self, revision: Obj, *_: Any) -> None:
        if revision["metadata"].get("deletionTimestamp"):
            self._revision_changed(revision)
        elif podcontrol.controller_of(revision) is None:
            self._enqueue_selecting(revision)  # an orphan: a DaemonSet may adopt it

    def _revision_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") != new["metadata"].get("resourceVersion"):
            self._revision_changed(old)  # its owner may have changed: both hear of it
            self._revision_changed(new)

    def _revision_changed(self, revision: Obj | DeletedFinalStateUnknown) -> None:
        if isinstance(revision, DeletedFinalStateUnknown):
            revision = revision.obj
        ds = self._resolve(revision, podcontrol.controller_of(revision))
        if ds is not None:
            self._enqueue(ds)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.daemon_sets.indexer.get_by_key(key)
        if cached is None:
            self.expectations.delete(key)
            return
        ds = copy.deepcopy(cached)
        ds.setdefault("apiVersion", "apps/v1")
        ds.setdefault("kind", "DaemonSet")
        if (ds.get("spec") or {}).get("selector") == {}:
            self.recorder.event(ds, "Warning", "SelectingAll", SELECTING_ALL_MESSAGE)
            return
        if ds["metadata"].get("deletionTimestamp"):
            return  # its revisions may already be gone: nothing reliable to do or report
        nodes = self.nodes.lister().list()
        owned = await self._claim(ds, resources.CONTROLLER_REVISIONS,
                                  self.revisions.lister().list(ds["metadata"]["namespace"]))
        current, old = await revisions.construct_history(self.client, ds, owned, lambda: self._daemon_pods(ds))
        revision_hash = current["metadata"]["labels"][REVISION_HASH_LABEL]
        if not self.expectations.satisfied(key):
            await self.update_status(ds, nodes, revision_hash, observe_generation=False)
            return
        try:
            await self._update_daemon_set(ds, nodes, revision_hash, key, old)
        except Exception:
            try:
                await self.update_status(ds, nodes, revision_hash, observe_generation=True)
            except errors.APIStatusError as status_error:
                log.warning("failed to update the status of DaemonSet %s: %s", key, status_error)
            raise
        await self.update_status(ds, nodes, revision_hash, observe_generation=True)

    async def _update_daemon_set(self, ds: Obj, nodes: list[Obj], revision_hash: str, key: str,
                                 old: list[Obj]) -> None:
        placement = Placement.of(ds)
        await self.manage(ds, nodes, placement, revision_hash)
        if self.expectations.satisfied(key) and rollingupdate.is_rolling_update(ds):
            node_to_pods = await self._node_to_daemon_pods(ds)
            doomed, new_nodes = rollingupdate.replacements(ds, nodes, node_to_pods, placement, revision_hash,
                                                           self.clock.wall().timestamp())
            await self._sync_nodes(ds, doomed, new_nodes, revision_hash)
        pods = await self._node_to_daemon_pods(ds, include_deleted_terminal=True)
        await revisions.cleanup_history(self.client, ds, old, [pod for group in pods.values() for pod in group])

    async def _daemon_pods(self, ds: Obj) -> list[Obj]:
        """The pods `ds` controls, after adopting matching orphans and releasing pods that stopped matching."""
        return await self._claim(ds, resources.PODS, self.pods.lister().list(ds["metadata"]["namespace"]))

    async def _claim(self, ds: Obj, resource: Resource, objects: list[Obj]) -> list[Obj]:
        selector = LabelSelector.from_api(ds["spec"].get("selector"))
        return await podcontrol.claim(self.client, resource, ds, selector, objects,
                                      lambda: podcontrol.owner_is_current(self.client, resources.DAEMON_SETS, ds))

    async def _node_to_daemon_pods(self, ds: Obj, include_deleted_terminal: bool = False) -> dict[str, list[Obj]]:
        """The DaemonSet's pods by the node they are for. Finished pods already being deleted are left out
        unless asked for: the kubelet or the pod GC is removing them, there is nothing left to do."""
        grouped: dict[str, list[Obj]] = {}
        for pod in await self._daemon_pods(ds):
            finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if finished and pod["metadata"].get("deletionTimestamp") and not include_deleted_terminal:
                continue
            node = target_node(pod)
            if node is not None:
                grouped.setdefault(node, []).append(pod)
        return grouped

    async def manage(self, ds: Obj, nodes: list[Obj], placement: Placement, revision_hash: str) -> None:
        """Create the missing daemon pods and delete those that must go, node by node."""
        node_to_pods = await self._node_to_daemon_pods(ds)
        needing: list[str] = []
        doomed: list[Obj] = []
        for node in nodes:
            create, delete = self._pods_should_be_on_node(ds, node, node_to_pods, placement, revision_hash)
            needing += create
            doomed += delete
        existing = {node["metadata"]["name"] for node in nodes}
        doomed += [pod for name, pods in node_to_pods.items() if name not in existing
                   for pod in pods if not (pod.get("spec") or {}).get("nodeName")]  # the pod GC cannot see these
        await self._sync_nodes(ds, doomed, needing, revision_hash)

    def _pods_should_be_on_node(self, ds: Obj, node: Obj, node_to_pods: dict[str, list[Obj]],
                                placement: Placement, revision_hash: str) -> tuple[list[str], list[Obj]]:
        """(the node, if it needs a new pod; the pods to delete there)."""
        name = node["metadata"]["name"]
        should_run, should_continue_running = placement.should_run(node)
        pods = node_to_pods.get(name)
        if should_run and pods is None:
            return [name], []
        if should_continue_running:
            return self._prune(ds, name, pods or [], should_run, revision_hash)
        return [], [pod for pod in pods or [] if not pod["metadata"].get("deletionTimestamp")]

    def _prune(self, ds: Obj, node: str, pods: list[Obj], should_run: bool,
               revision_hash: str) -> tuple[list[str], list[Obj]]:
        """On a node that may keep the daemon: delete finished pods and all but the pod(s) to keep."""
        running: list[Obj] = []
        doomed: list[Obj] = []
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                if self._failed_pod_may_go(ds, pod, node):
                    doomed.append(pod)
            elif phase == "Succeeded":
                self.recorder.event(ds, "Normal", "SucceededDaemonPod", f"Found succeeded daemon pod "
                                    f"{pod['metadata']['namespace']}/{pod['metadata']['name']} on node {node}, "
                                    "will try to delete it")
                doomed.append(pod)
            else:
                running.append(pod)
        running.sort(key=creation_order)
        if not rollingupdate.allows_surge(ds):
            return [], doomed + running[1:]  # the oldest stays
        if len(running) <= 1:
            return ([node] if not running and should_run else []), doomed
        return [], doomed + self._surplus_while_surging(ds, running, revision_hash)

    def _failed_pod_may_go(self, ds: Obj, pod: Obj, node: str) -> bool:
        """Whether a Failed pod may be deleted now, or must wait out the node's backoff."""
        key = f"{ds['metadata']['uid']}/{(ds.get('status') or {}).get('observedGeneration', 0)}/{node}"
        if self.failed_pods_backoff.in_backoff(key):
            self.queue.add_after(meta_namespace_key(ds), self.failed_pods_backoff.delay(key))
            return False
        self.failed_pods_backoff.next(key)
        self.recorder.event(ds, "Warning", "FailedDaemonPod", f"Found failed daemon pod "
                            f"{pod['metadata']['namespace']}/{pod['metadata']['name']} on node {node}, "
                            "will try to kill it")
        return True

    def _surplus_while_surging(self, ds: Obj, running: list[Obj], revision_hash: str) -> list[Obj]:
        """Keep the oldest new pod and, while it is not available yet and the old one is ready, the oldest
        old pod; delete the rest."""
        oldest_new = oldest_old = None
        surplus = []
        for pod in running:  # oldest first
            if (pod["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL) == revision_hash:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            surplus.append(pod)
        if oldest_new is not None and oldest_old is not None:
            min_ready = int(ds["spec"].get("minReadySeconds") or 0)
            if not podcontrol.is_ready(oldest_old) or podcontrol.is_available(
                    oldest_new, min_ready, self.clock.wall().timestamp()):
                surplus.append(oldest_old)
        return surplus

    async def _sync_nodes(self, ds: Obj, doomed: list[Obj], needing: list[str], revision_hash: str) -> None:
        """Delete `doomed` and create a pod for each node in `needing`, at most BURST_REPLICAS of each."""
        key = meta_namespace_key(ds)
        needing, doomed = needing[:BURST_REPLICAS], doomed[:BURST_REPLICAS]
        self.expectations.expect(key, len(needing), [meta_namespace_key(pod) for pod in doomed])
        template = daemon_pod_template(ds, revision_hash)
        failures = await self.pod_control.create_pods(ds, key, [_pod_for_node(template, ds, node) for node in needing])
        failures += await self.pod_control.delete_pods(ds, key, doomed)
        if failures:
            raise failures[0]

    # status ----------------------------------------------------------------------------------------------

    async def update_status(self, ds: Obj, nodes: list[Obj], revision_hash: str, observe_generation: bool) -> None:
        node_to_pods = await self._node_to_daemon_pods(ds)
        counts = status.calculate_status(ds, nodes, node_to_pods, revision_hash, self.clock.wall().timestamp())
        await status.store_status(self.client, ds, counts, observe_generation)
        min_ready = int(ds["spec"].get("minReadySeconds") or 0)
        if min_ready and counts["numberReady"] != counts["numberAvailable"]:
            self.queue.add_after(meta_namespace_key(ds), min_ready)  # to count them available in time


def _pod_for_node(template: Obj, ds: Obj, node: str) -> Obj:
    """A daemon pod left to the scheduler, but pinned to `node` by node affinity."""
    pod = podcontrol.pod_from_template(template, ds)
    pin_to_node(pod["spec"], node)
    return pod


def _only_heartbeat(old: Obj, new: Obj) -> bool:
    """Whether a node update changed nothing a DaemonSet cares about: the same conditions are True and
    everything else but the resourceVersion, managedFields and the conditions' timestamps is equal."""
    def true_conditions(node: Obj) -> set[str]:
        return {c.get("type") for c in (node.get("status") or {}).get("conditions") or []
                if c.get("status") == "True"}

    def rest(node: Obj) -> Obj:
        meta = {k: v for k, v in node["metadata"].items() if k not in ("resourceVersion", "managedFields")}
        status = {k: v for k, v in (node.get("status") or {}).items() if k != "conditions"}
        return {**node, "metadata": meta, "status": status}

    return true_conditions(old) == true_conditions(new) and rest(old) == rest(new)

"""The kubelet's main loop (kube's `kubelet.go`): from the pods bound to this node to syncs of each pod.

    pods informer (spec.nodeName=<node>) ──┐
    PLEG: relist the runtime every 1 s ────┼──► PodWorkers.update(uid) ──► sync_pod(uid)
    periodic resync, back-offs ending ─────┘                                 │
                                                    RuntimeManager.sync_pod / kill_pod (kuberuntime.py)
                                                                             │
                  pod status from the runtime (podstatus.py) ──► status manager ──► PATCH pods/status

An API update of a known pod wakes its worker only when its spec, labels, annotations or deletion changed
(kube's UPDATE); a status-only change, most often the echo of the kubelet's own patch, is just recorded
(kube's RECONCILE), unless another component wrote that status: then the worker writes the kubelet's back.

`sync_pod` is the one place where a pod's fate is decided:
* deleted from the API (or found in the runtime after a restart without a pod): stop and remove everything;
* being deleted (`deletionTimestamp`): stop the containers within the grace period, report their final
  status, then delete the pod object for good (grace 0, with the uid as precondition) and clean up;
* Succeeded or Failed: make sure nothing runs any more;
* otherwise, as kube: first the status of what the runtime holds, with the waiting reasons the previous sync
  left (kube's reason cache), then one step of `RuntimeManager.sync_pod`, then the status again. Each status
  goes to the status manager (statusmanager.py), which patches it only when it changed, without the worker
  waiting, and skips one that a newer status replaced before it could be sent.

Reporting before acting is what shows a crashed container as `terminated` (Error, Completed, OOMKilled) before
the step that restarts it or refuses to (CrashLoopBackOff, a waiting reason only that step can give), so a
watch sees Running → Error → Running → Error → CrashLoopBackOff → Running ... as on a real node.

Usage rules: `run()` registers the Node, then runs until cancelled. A restarted kubelet adopts running pods: the
runtime's labels name them, so nothing is restarted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from minikube_py.api.timestamps import parse_time
from minikube_py.client import errors as api_errors
from minikube_py.client import resources
from minikube_py.client.events import CoreEventRecorder, object_reference
from minikube_py.client.informer import FuncHandler, SharedInformerFactory
from minikube_py.client.rest import RESTClient
from minikube_py.kubelet import nodestatus, podstatus, runtimestate
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRIError
from minikube_py.kubelet.kuberuntime import RuntimeManager, SyncResult, termination_grace
from minikube_py.kubelet.node import NodeAgent
from minikube_py.kubelet.objects import ObjectManager
from minikube_py.kubelet.podworkers import PodWorkers, SyncOutcome
from minikube_py.kubelet.prober import ProbeManager
from minikube_py.kubelet.stats import StatsProvider
from minikube_py.kubelet.statusmanager import StatusManager
from minikube_py.kubelet.volumes import VolumeManager

log = logging.getLogger("mkpy.kubelet")

RUNTIME_RETRY = 1.0  # seconds between attempts to reach the runtime at start
MAX_REPORTED_IMAGES = 50  # kube's --node-status-max-images
NETWORK_NOT_READY_RETRY = 1.0  # seconds before a pod waiting for the pod network is looked at again
IMAGES_REFRESH = 30.0  # seconds between ListImages calls for the Node's status.images
FINAL_STATUS_TIMEOUT = 10.0  # seconds a terminated pod's deletion waits for its last status to be written


class Kubelet:
    def __init__(self, config: KubeletConfig, client: RESTClient, runtime: RuntimeClient,
                 recorder: CoreEventRecorder, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.client = client
        self.runtime = runtime
        self._recorder = recorder
        self.bound_pods: dict[str, dict[str, Any]] = {}  # uid -> the pod as the API last said
        self.runtime_name = "containerd"
        self._runtime_error = "container runtime status check may not have completed yet"
        self._network_error = ""  # why pods cannot get a network (the runtime's NetworkReady is false)
        self._runtime_version = ""
        self._images: list[dict[str, Any]] = []
        self._images_read = -IMAGES_REFRESH
        self.volumes = VolumeManager(config.pods_dir, self.get_object, self.request_token, self.allocatable,
                                     client)
        self.manager = RuntimeManager(runtime, config, self.volumes, self.get_object, self, self.allocatable,
                                      clock)
        self.workers = PodWorkers(self.sync_pod)
        self.status = StatusManager(client, self._status_written)
        self.probes = ProbeManager(runtime, self.workers.update, self.event)
        self.objects = ObjectManager(client, self.workers.update)
        self.node = NodeAgent(client, config, self.observe, runtime.update_runtime_config, self._node_event)
        self.stats = StatsProvider(runtime, config.node_name, self.node.machine.memory_bytes)
        self.informers = SharedInformerFactory(client)
        self._fingerprints: dict[str, tuple[Any, ...]] = {}
        self._termination_messages: dict[str, str] = {}  # container id -> message
        self.states: dict[str, runtimestate.PodState] = {}  # uid -> the runtime's view after the last sync
        # uid -> the waiting reasons (container -> (reason, message)) the last sync left: kube's reason cache
        self.reasons: dict[str, dict[str, tuple[str, str]]] = {}

    # -- running ------------------------------------------------------------------------------------------

    async def run(self) -> None:
        await self._wait_for_runtime()
        self._node_event("Normal", "Starting", "Starting kubelet.")
        await self.node.register()
        pods = self.informers.informer_for(resources.PODS, field_selector=f"spec.nodeName={self.config.node_name}")
        pods.add_event_handler(FuncHandler(on_add=self._pod_changed, on_update=self._pod_updated,
                                           on_delete=self._pod_deleted))
        self.informers.start()
        try:
            await self.informers.wait_for_cache_sync()
            log.info("node %s: watching its pods; runtime %s", self.config.node_name, self.runtime_name)
            async with asyncio.TaskGroup() as group:
                group.create_task(self.node.run())
                group.create_task(self._relist_loop())
                group.create_task(self.status.run())
        finally:
            await self.probes.stop()
            await self.objects.stop()
            await self.workers.stop()
            await self.informers.stop()

    async def _wait_for_runtime(self) -> None:
        while True:
            try:
                version = await self.runtime.version()
                self.runtime_name = version.runtime_name
                return
            except CRIError as error:
                log.warning("container runtime not reachable yet: %s", error)
                await asyncio.sleep(RUNTIME_RETRY)

    def _pod_changed(self, pod: dict[str, Any], *_: Any) -> None:
        uid = pod["metadata"]["uid"]
        self.bound_pods[uid] = pod
        self.objects.register_pod(pod)
        self.workers.update(uid)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """kube's UPDATE vs RECONCILE (config.go `checkAndUpdatePod`, kubelet.go `HandlePodReconcile`): a pod
        whose spec, labels, annotations or deletion differ is synced; one whose status alone changed is only
        recorded, for the next sync and the status manager to start from. That is most often the echo of this
        kubelet's own status patch. A status another component wrote (the node lifecycle controller marking
        the pod not ready, a terminal phase) is a sync: the kubelet is the source of truth for the status and
        writes its own back at once (kube's status manager does so within its 10 s reconcile), and a
        terminal phase stops the containers."""
        uid = new["metadata"]["uid"]
        held = self.bound_pods.get(uid)
        if held is None or _differ_semantically(old, new):
            self._pod_changed(new)
            return
        self.bound_pods[uid] = new
        if held.get("status") != new.get("status"):
            self.workers.update(uid)

    def _pod_deleted(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)  # DeletedFinalStateUnknown carries the last known object
        uid = (obj.get("metadata") or {}).get("uid", "")
        self.bound_pods.pop(uid, None)
        self.workers.update(uid)

    async def _relist_loop(self) -> None:
        """The PLEG: list the runtime, wake the worker of every pod whose sandboxes or containers changed
        (including pods the API no longer has); resync every pod every `sync_frequency`, and at once when
        the runtime answers again after failing (it may have restarted and lost what it ran)."""
        last_resync = time.monotonic()
        failing = False
        while True:
            try:
                await self._relist()
                if failing:
                    log.info("the container runtime answers again; re-syncing every pod")
                    last_resync = 0.0
                failing = False
            except CRIError as error:
                log.warning("relisting the runtime failed: %s", error)
                failing = True
            if time.monotonic() - last_resync >= self.config.sync_frequency:
                last_resync = time.monotonic()
                for uid in list(self.bound_pods):
                    self.workers.update(uid)
            await asyncio.sleep(self.config.relist_period)

    async def _relist(self) -> None:
        seen: dict[str, list[tuple[str, int]]] = {}
        for sandbox in await self.runtime.list_pod_sandbox():
            uid = sandbox.labels.get(runtimestate.POD_UID_LABEL)
            if uid:
                seen.setdefault(uid, []).append((sandbox.id, sandbox.state))
        for container in await self.runtime.list_containers():
            uid = container.labels.get(runtimestate.POD_UID_LABEL)
            if uid:
                seen.setdefault(uid, []).append((container.id, 10 + container.state))
        fingerprints = {uid: tuple(sorted(items)) for uid, items in seen.items()}
        for uid in fingerprints.keys() | self._fingerprints.keys():
            if fingerprints.get(uid) != self._fingerprints.get(uid):
                self.workers.update(uid)
        self._fingerprints = fingerprints

    # -- one pod ------------------------------------------------------------------------------------------

    async def sync_pod(self, uid: str) -> SyncOutcome:
        pod = self.bound_pods.get(uid)
        try:
            state = await runtimestate.pod_state(self.runtime, uid)
        except CRIError as error:
            log.warning("reading pod %s from the runtime: %s", uid, error)
            return SyncOutcome(retry_in=2.0)
        if pod is None:
            return await self._clean_up(None, state)
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            await self.manager.kill_pod(pod, state, int(meta.get("deletionGracePeriodSeconds") or 0))
            state = await runtimestate.pod_state(self.runtime, uid)
            await self._update_status(pod, state, SyncResult())
            # the final status first: kube's status manager deletes the pod only once it is written
            await self.status.flush(uid, FINAL_STATUS_TIMEOUT)
            try:
                await self.client.delete(resources.PODS, meta["name"], meta.get("namespace"), grace_period_seconds=0,
                                         preconditions={"uid": uid})
            except (api_errors.NotFound, api_errors.Conflict):
                pass
            return await self._clean_up(pod, state)
        if (pod.get("status") or {}).get("phase") in podstatus.TERMINAL_PHASES:
            self.probes.remove_pod(uid)
            if any(c.running for c in state.containers) or any(s.ready for s in state.sandboxes):
                await self.manager.kill_pod(pod, state, termination_grace(pod))
            return SyncOutcome()
        # what the runtime holds before this sync acts on it: a container that just exited shows as terminated
        if await self._report(pod, state, SyncResult(waiting=self.reasons.get(uid, {}))):
            return SyncOutcome()
        if self._network_error and not (pod.get("spec") or {}).get("hostNetwork"):
            # no pod network yet (the runtime has no pod CIDR): only host-network pods can start
            self.event(pod, "Warning", "NetworkNotReady", f"network is not ready: {self._network_error}")
            return SyncOutcome(retry_in=NETWORK_NOT_READY_RETRY)
        result = await self.manager.sync_pod(pod, state,
                                             failed_probe=lambda name: self.probes.failed_probe(uid, name))
        self.reasons[uid] = result.waiting
        state = await runtimestate.pod_state(self.runtime, uid)
        self.probes.sync(pod, state)
        await self._report(self.bound_pods.get(uid, pod), state, result)  # the pod as the first report left it
        await self.manager.prune_dead_containers(state)
        return SyncOutcome(retry_in=result.retry_in)

    async def _report(self, pod: dict[str, Any], state: runtimestate.PodState, result: SyncResult) -> bool:
        """Patch the pod's status from `state`. A pod that this makes Succeeded or Failed has its containers
        stopped and True is returned: there is nothing left to start."""
        self.states[state.uid] = state
        status = await self._update_status(pod, state, result)
        if status.get("phase") not in podstatus.TERMINAL_PHASES:
            return False
        await self.manager.kill_pod(pod, state, termination_grace(pod))
        return True

    async def _clean_up(self, pod: dict[str, Any] | None, state: runtimestate.PodState) -> SyncOutcome:
        self.states.pop(state.uid, None)
        self.reasons.pop(state.uid, None)
        self.status.forget(state.uid)
        await self.manager.kill_pod(pod, state, 0)
        await self.manager.remove_pod(state)
        self.probes.remove_pod(state.uid)
        self.objects.unregister_pod(state.uid)
        self.volumes.tear_down(state.uid)
        self.manager.crash_backoff.forget(state.uid)
        self.manager.image_backoff.forget(state.uid)
        for container in state.containers:
            self._termination_messages.pop(container.id, None)
        return SyncOutcome(finished=True)

    async def _update_status(self, pod: dict[str, Any], state: runtimestate.PodState,
                             result: SyncResult) -> dict[str, Any]:
        """The pod's status from `state`, handed to the status manager to write (if it changed)."""
        pod = self.status.pod_with_status(pod)
        inputs = podstatus.PodStatusInputs(state=state, waiting=result.waiting, ready=self.probes.ready(state.uid),
                                           started=self.probes.started(state.uid), node_ip=self._node_ip(),
                                           runtime_name=self.runtime_name, failed=result.failed,
                                           termination_messages=self._read_termination_messages(state))
        status = podstatus.pod_status(pod, inputs)
        self.status.set_pod_status(pod, status)
        return status

    def _status_written(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        if uid in self.bound_pods:
            self.bound_pods[uid] = pod

    def _read_termination_messages(self, state: runtimestate.PodState) -> dict[str, str]:
        for container in state.containers:
            if container.exited and container.id not in self._termination_messages:
                path = self.volumes.pod_dir(state.uid) / "containers" / container.name / str(container.restart_count)
                try:
                    self._termination_messages[container.id] = path.read_text(errors="replace")[:4096]
                except OSError:
                    self._termination_messages[container.id] = ""
        return self._termination_messages

    # -- what the kubelet's HTTPS server asks (server.NodeBackend) ----------------------------------------

    def pods(self) -> list[dict[str, Any]]:
        return list(self.bound_pods.values())

    async def stats_summary(self) -> dict[str, Any]:
        return await self.stats.summary(self.bound_pods)

    def find_container(self, namespace: str, pod_name: str, container: str) -> Any:
        from minikube_py.kubelet.server import ContainerRef

        pod = self._find_pod(namespace, pod_name)
        state = self.states.get(pod["metadata"]["uid"])
        latest = state.latest(container) if state else None
        if latest is None:
            names = [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []] + \
                    [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
            if container not in names:
                raise LookupError(f"container {container} is not valid for pod {pod_name}")
            raise LookupError(f'container "{container}" in pod "{pod_name}" is waiting to start: ContainerCreating')
        previous = state.previous(container) if state else None
        return ContainerRef(container_id=latest.id, log_path=latest.log_path, running=latest.running,
                            previous_log_path=previous.log_path if previous else None)

    def sandbox_id(self, namespace: str, pod_name: str) -> str:
        pod = self._find_pod(namespace, pod_name)
        state = self.states.get(pod["metadata"]["uid"])
        if state is None or state.sandbox is None or not state.sandbox.ready:
            raise LookupError(f'pod "{pod_name}" has no running sandbox')
        return state.sandbox.id

    def _find_pod(self, namespace: str, name: str) -> dict[str, Any]:
        for pod in self.bound_pods.values():
            meta = pod["metadata"]
            if meta["name"] == name and meta.get("namespace") == namespace:
                return pod
        raise LookupError(f'pod "{name}" not found')

    # -- what the pieces ask of the kubelet ---------------------------------------------------------------

    def _node_event(self, type: str, reason: str, message: str) -> None:
        # kube's kubelet names its Node in events with the node's name as uid (`kubectl describe node` asks so)
        name = self.config.node_name
        self._recorder.event({"kind": "Node", "apiVersion": "v1", "name": name, "uid": name}, type, reason, message)

    def event(self, pod: dict[str, Any], type: str, reason: str, message: str, container: str | None = None) -> None:
        reference = object_reference(pod)
        if container is not None:
            reference["fieldPath"] = f"spec.containers{{{container}}}"
        self._recorder.event(reference, type, reason, message)

    async def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return await self.objects.get(kind, namespace, name)

    async def request_token(self, namespace: str, account: str, audiences: list[str], seconds: int,
                            pod_name: str, pod_uid: str) -> tuple[str, float]:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"audiences": audiences, "expirationSeconds": seconds,
                         "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid}}}
        response = await self.client.create(resources.SERVICE_ACCOUNTS, body, namespace, subresource="token",
                                            name=account)
        status = response.get("status") or {}
        return status.get("token", ""), parse_time(status["expirationTimestamp"]).timestamp()

    def allocatable(self) -> dict[str, str]:
        return nodestatus.allocatable(self.config, self.node.machine)

    def _node_ip(self) -> str:
        return self.config.node_ip or "127.0.0.1"

    async def observe(self) -> nodestatus.Observed:
        """What the Node's status is computed from: the runtime's health (asked every time), its version and
        its images (asked again after IMAGES_REFRESH, or after the runtime was down)."""
        observed = nodestatus.Observed(node_ip=self._node_ip(), kubelet_port=self.config.port)
        try:
            if not self._runtime_version or self._runtime_error:
                version = await self.runtime.version()
                self._runtime_version = f"{version.runtime_name}://{version.runtime_version}"
            conditions = (await self.runtime.status()).status.conditions
            observed.runtime_error = nodestatus.runtime_errors(conditions)
            observed.network_ready = any(c.type == "NetworkReady" and c.status for c in conditions)
            self._network_error = "" if observed.network_ready else observed.runtime_error
            if time.monotonic() - self._images_read >= IMAGES_REFRESH or self._runtime_error:
                self._images = _reported_images(await self.runtime.list_images())
                self._images_read = time.monotonic()
            self._runtime_error = observed.runtime_error
        except CRIError as error:
            observed.runtime_error = self._runtime_error = f"container runtime is down: {error}"
        observed.runtime_version, observed.images = self._runtime_version, self._images
        return observed


def _differ_semantically(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """kube's `podsDifferSemantically`: whether anything but the status (and bookkeeping) changed."""
    before, after = old.get("metadata") or {}, new.get("metadata") or {}
    return (old.get("spec") != new.get("spec")
            or any((before.get(key) or {}) != (after.get(key) or {}) for key in ("labels", "annotations"))
            or any(before.get(key) != after.get(key) for key in ("deletionTimestamp", "deletionGracePeriodSeconds")))


def _reported_images(images: list[cri.Image]) -> list[dict[str, Any]]:
    ordered = sorted(images, key=lambda image: image.size, reverse=True)[:MAX_REPORTED_IMAGES]
    return [{"names": list(image.repo_digests) + list(image.repo_tags), "sizeBytes": image.size} for image in ordered]


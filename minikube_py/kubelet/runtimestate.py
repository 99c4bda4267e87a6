"""What the container runtime holds for each pod, read back over CRI (kube's `kuberuntime` pod status).

The kubelet keeps no database of its own: every sandbox and container it creates carries labels naming the
pod (`io.kubernetes.pod.uid`, `…name`, `…namespace`) and the container (`io.kubernetes.container.name`), and
annotations with what it needs later (restart count, the spec hash, the termination message path). Listing
the runtime by those labels tells a restarted kubelet everything it needs to adopt running pods.

    pod_state(runtime, uid)     -> PodState: the pod's sandboxes (newest first) and containers (newest first)
    all_pod_uids(runtime)       -> the uids of every pod the runtime holds for this kubelet
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRINotFound

POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
POD_UID_LABEL = "io.kubernetes.pod.uid"
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"

RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount"
HASH_ANNOTATION = "io.kubernetes.container.hash"
TERMINATION_MESSAGE_PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath"
TERMINATION_GRACE_ANNOTATION = "io.kubernetes.pod.terminationGracePeriod"
INIT_CONTAINER_ANNOTATION = "io.kubernetes.container.init"


@dataclass
class SandboxState:
    id: str
    attempt: int
    ready: bool
    ip: str
    created_at: int  # Unix nanoseconds
    host_network: bool


@dataclass
class ContainerState:
    id: str
    name: str
    state: int  # cri.CONTAINER_CREATED / RUNNING / EXITED / UNKNOWN
    restart_count: int
    spec_hash: str
    init: bool
    exit_code: int
    reason: str
    message: str
    created_at: int
    started_at: int
    finished_at: int
    image: str
    image_ref: str
    log_path: str
    sandbox_id: str

    @property
    def running(self) -> bool:
        return self.state == cri.CONTAINER_RUNNING

    @property
    def exited(self) -> bool:
        return self.state == cri.CONTAINER_EXITED


@dataclass
class PodState:
    uid: str
    name: str = ""
    namespace: str = ""
    sandboxes: list[SandboxState] = field(default_factory=list)  # newest first
    containers: list[ContainerState] = field(default_factory=list)  # newest first

    @property
    def sandbox(self) -> SandboxState | None:
        return self.sandboxes[0] if self.sandboxes else None

    def latest(self, name: str) -> ContainerState | None:
        """The most recent container of that name (in any sandbox)."""
        return next((c for c in self.containers if c.name == name), None)

    def previous(self, name: str) -> ContainerState | None:
        """The container of that name before the latest one (`kubectl logs --previous`)."""
        matching = [c for c in self.containers if c.name == name]
        return matching[1] if len(matching) > 1 else None


async def pod_state(runtime: RuntimeClient, uid: str) -> PodState:
    """Everything the runtime holds for pod `uid`; containers whose status vanished meanwhile are skipped."""
    selector = {POD_UID_LABEL: uid}
    state = PodState(uid=uid)
    for sandbox in await runtime.list_pod_sandbox(cri.PodSandboxFilter(label_selector=selector)):
        try:
            status = (await runtime.pod_sandbox_status(sandbox.id)).status
        except CRINotFound:
            continue
        state.name, state.namespace = status.metadata.name, status.metadata.namespace
        network = status.linux.namespaces.options.network
        state.sandboxes.append(SandboxState(
            id=status.id, attempt=status.metadata.attempt, ready=status.state == cri.SANDBOX_READY,
            ip=status.network.ip, created_at=status.created_at, host_network=network == cri.NODE))
    state.sandboxes.sort(key=lambda s: (s.created_at, s.attempt), reverse=True)
    for container in await runtime.list_containers(cri.ContainerFilter(label_selector=selector)):
        try:
            status = (await runtime.container_status(container.id)).status
        except CRINotFound:
            continue
        state.containers.append(_container_state(status, container.pod_sandbox_id))
    state.containers.sort(key=lambda c: (c.created_at, c.restart_count), reverse=True)
    return state


async def all_pod_uids(runtime: RuntimeClient) -> set[str]:
    """Sandboxes without the pod label (made with `crictl runp`, say) are not the kubelet's and are left alone."""
    return {s.labels[POD_UID_LABEL] for s in await runtime.list_pod_sandbox() if POD_UID_LABEL in s.labels}


def _container_state(status: cri.ContainerStatus, sandbox_id: str) -> ContainerState:
    annotations = status.annotations
    try:
        restarts = int(annotations.get(RESTART_COUNT_ANNOTATION, "0"))
    except ValueError:
        restarts = 0
    return ContainerState(
        id=status.id, name=status.labels.get(CONTAINER_NAME_LABEL, status.metadata.name), state=status.state,
        restart_count=restarts, spec_hash=annotations.get(HASH_ANNOTATION, ""),
        init=annotations.get(INIT_CONTAINER_ANNOTATION) == "true", exit_code=status.exit_code,
        reason=status.reason, message=status.message, created_at=status.created_at,
        started_at=status.started_at, finished_at=status.finished_at, image=status.image.image,
        image_ref=status.image_ref, log_path=status.log_path, sandbox_id=sandbox_id)

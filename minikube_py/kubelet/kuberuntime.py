"""Making the runtime hold what a pod asks for, one step per call (kube's `kuberuntime_manager.go`: SyncPod
and KillPod).

`sync_pod(pod, state)` compares the pod's spec with what the runtime holds (`runtimestate.PodState`) and does
the next steps, in kube's order:

1. a sandbox: created if there is none or it died (the old one's containers are stopped first; a new sandbox
   gets attempt + 1); for `restartPolicy: Never` pods whose containers already ran, a dead sandbox is final;
2. volumes (`volumes.py`), rewritten on every sync so ConfigMap and Secret changes reach running containers;
3. init containers, one at a time in order, each to successful completion before the next starts;
4. app containers: started when missing, restarted after exiting as `restartPolicy` says (with
   CrashLoopBackOff: `backoff.py`), replaced when their spec changed.

A container found created but never started (a kubelet killed between CreateContainer and StartContainer) is
replaced by a new one, init and app containers alike.

Starting a container is: the image (by `imagePullPolicy`: ImageStatus, PullImage only when needed), its
environment (`envvars.py`), CreateContainer, StartContainer, then the postStart hook. A step that fails
leaves a Waiting reason (ErrImagePull, ImagePullBackOff, CreateContainerConfigError, CreateContainerError,
RunContainerError, CrashLoopBackOff) that the pod's status shows, and an Event.

`kill_pod(pod, state, grace)` stops every container (preStop hook first, then StopContainer with what is left
of the grace period) in parallel, then the sandbox.

Usage rules: one call at a time per pod (the pod worker guarantees it); every runtime error is caught and
reported, never raised; `SyncResult.retry_in` says when the pod should be synced again even without events
(a back-off ending).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from minikube_py.kubelet import containerconfig, envvars, handlers, runtimestate
from minikube_py.kubelet.backoff import Backoff
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRIError, CRINotFound
from minikube_py.kubelet.runtimestate import ContainerState, PodState
from minikube_py.kubelet.volumes import VolumeError, VolumeManager

log = logging.getLogger("mkpy.kubelet.runtime")

CRASH_BACKOFF = (10.0, 300.0)  # kube: 10 s doubling to 5 min
IMAGE_BACKOFF = (10.0, 300.0)


class Recorder(Protocol):
    """How the manager reports events; `container` names the container the event is about."""

    def event(self, pod: dict[str, Any], type: str, reason: str, message: str,
              container: str | None = None) -> None: ...


@dataclass
class SyncResult:
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)  # container -> (reason, message)
    retry_in: float | None = None
    failed: bool = False  # the pod can never run (init container failed with restartPolicy Never)

    def wait(self, name: str, reason: str, message: str = "") -> None:
        self.waiting[name] = (reason, message)

    def retry(self, seconds: float) -> None:
        self.retry_in = seconds if self.retry_in is None else min(self.retry_in, seconds)


class RuntimeManager:
    def __init__(self, runtime: RuntimeClient, config: KubeletConfig, volumes: VolumeManager,
                 objects: envvars.ObjectGetter, recorder: Recorder,
                 node_allocatable: Callable[[], dict[str, str]], clock: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.config = config
        self.volumes = volumes
        self.objects = objects
        self.recorder = recorder
        self.node_allocatable = node_allocatable
        self.clock = clock
        self.crash_backoff = Backoff(*CRASH_BACKOFF)
        self.image_backoff = Backoff(*IMAGE_BACKOFF)

    # -- sync ---------------------------------------------------------------------------------------------

    async def sync_pod(self, pod: dict[str, Any], state: PodState,
                       failed_probe: Callable[[str], str | None] = lambda name: None) -> SyncResult:
        result = SyncResult()
        spec = pod.get("spec") or {}
        names = [c["name"] for c in spec.get("initContainers") or []] + [c["name"] for c in spec.get("containers") or []]
        sandbox = state.sandbox
        needs_sandbox = sandbox is None or not sandbox.ready
        if needs_sandbox and sandbox is not None and spec.get("restartPolicy") == "Never" and any(
                not c.init for c in state.containers):
            return result  # the pod ran and its sandbox is gone: it is over
        for name in names:
            if needs_sandbox or state.latest(name) is None:
                result.wait(name, "ContainerCreating" if name in _app_names(spec) else "PodInitializing")
        try:
            volume_paths = await self.volumes.set_up(pod)
        except VolumeError as error:
            self.recorder.event(pod, "Warning", "FailedMount", str(error))
            result.retry(2.0)
            return result
        if needs_sandbox:
            if sandbox is not None:
                self.recorder.event(pod, "Normal", "SandboxChanged",
                                    "Pod sandbox changed, it will be killed and re-created.")
                await self._stop_pod_containers(pod, state, grace=0)
            attempt = sandbox.attempt + 1 if sandbox is not None else 0
            if not await self._create_sandbox(pod, attempt, result):
                return result
            state = await runtimestate.pod_state(self.runtime, state.uid)
            sandbox = state.sandbox
            if sandbox is None or not sandbox.ready:
                result.retry(1.0)
                return result
        result.waiting.clear()  # from here each step says for itself why a container still waits
        sandbox_config = containerconfig.sandbox_config(pod, sandbox.attempt, self.config.pod_logs_dir,
                                                        self.config.cgroup_root)
        context = _StartContext(pod, state, sandbox.id, sandbox.ip, sandbox_config, volume_paths)
        if not await self._sync_init_containers(context, result):
            return result
        for container in spec.get("containers") or []:
            await self._sync_app_container(context, container, result, failed_probe(container["name"]))
        return result

    async def _create_sandbox(self, pod: dict[str, Any], attempt: int, result: SyncResult) -> bool:
        config = containerconfig.sandbox_config(pod, attempt, self.config.pod_logs_dir, self.config.cgroup_root)
        Path(config.log_directory).mkdir(parents=True, exist_ok=True)
        try:
            await self.runtime.run_pod_sandbox(config)
            return True
        except CRIError as error:
            self.recorder.event(pod, "Warning", "FailedCreatePodSandBox",
                                f"Failed to create pod sandbox: {error.message}")
            result.retry(self.image_backoff.next(f"{pod['metadata']['uid']}/sandbox", self.clock()))
            return False

    async def _sync_init_containers(self, ctx: _StartContext, result: SyncResult) -> bool:
        """Run init containers in order; True once all have succeeded in the current sandbox."""
        spec = ctx.pod.get("spec") or {}
        for container in spec.get("initContainers") or []:
            name = container["name"]
            latest = ctx.current(name)
            if latest is not None and latest.exited and latest.exit_code == 0:
                continue
            for app in _app_names(spec):
                result.wait(app, "PodInitializing")
            if latest is not None and latest.running:
                return False
            if latest is not None and latest.state == cri.CONTAINER_CREATED:
                await self._replace_created(ctx, container, latest, result, init=True)
                return False
            if latest is not None and latest.exited:
                if spec.get("restartPolicy") == "Never":
                    result.failed = True
                    return False
                if not self._may_restart(ctx, container, latest, result):
                    return False
            await self._start_container(ctx, container, result, init=True)
            return False
        return True

    async def _sync_app_container(self, ctx: _StartContext, container: dict[str, Any], result: SyncResult,
                                  failed_probe: str | None) -> None:
        name = container["name"]
        latest = ctx.current(name)
        if latest is None:
            await self._start_container(ctx, container, result)
            return
        if latest.state == cri.CONTAINER_CREATED:
            await self._replace_created(ctx, container, latest, result)
            return
        if latest.running:
            changed = latest.spec_hash and latest.spec_hash != containerconfig.container_hash(container)
            if not (changed or failed_probe):
                return
            why = (f"Container {name} failed {failed_probe} probe, will be restarted" if failed_probe
                   else f"Container {name} definition changed, will be restarted")
            self.recorder.event(ctx.pod, "Normal", "Killing", why, container=name)
            await self.kill_container(ctx.pod, latest, termination_grace(ctx.pod), run_pre_stop=True)
            return  # the next sync sees it exited and restarts it (restartPolicy permitting)
        policy = (ctx.pod.get("spec") or {}).get("restartPolicy", "Always")
        if policy == "Never" or (policy == "OnFailure" and latest.exit_code == 0):
            return
        if self._may_restart(ctx, container, latest, result):
            await self._start_container(ctx, container, result)

    async def _replace_created(self, ctx: _StartContext, container: dict[str, Any], created: ContainerState,
                               result: SyncResult, init: bool = False) -> None:
        """A container created but never started (the kubelet stopped between CreateContainer and StartContainer):
        a new one replaces it, as in kube (its restart count goes up by one); this one is removed first, where
        kube leaves it to garbage collection, so that no container is left behind in the runtime."""
        log.info("container %s of pod %s was created but never started; replacing it", created.id[:13],
                 ctx.pod["metadata"]["name"])
        try:
            await self.runtime.remove_container(created.id)
        except CRIError as error:
            if not isinstance(error, CRINotFound):
                log.warning("removing container %s: %s", created.id[:13], error)
                result.retry(2.0)
                return
        await self._start_container(ctx, container, result, init=init)

    def _may_restart(self, ctx: _StartContext, container: dict[str, Any], latest: ContainerState,
                     result: SyncResult) -> bool:
        """CrashLoopBackOff: whether enough time has passed since the container last exited."""
        key = _key(ctx.pod, container["name"])
        finished = latest.finished_at / 1e9 if latest.finished_at else self.clock()
        now = self.clock()
        if self.crash_backoff.in_backoff_since(key, finished, now):
            delay = self.crash_backoff.delay(key)
            meta = ctx.pod["metadata"]
            message = (f"back-off {_duration(delay)} restarting failed container={container['name']} "
                       f"pod={meta['name']}_{meta.get('namespace', 'default')}({meta['uid']})")
            result.wait(container["name"], "CrashLoopBackOff", message)
            self.recorder.event(ctx.pod, "Warning", "BackOff",
                                f"Back-off restarting failed container {container['name']} in pod "
                                f"{meta['name']}_{meta.get('namespace', 'default')}({meta['uid']})",
                                container=container["name"])
            result.retry(self.crash_backoff.remaining(key, finished, now) + 0.05)
            return False
        self.crash_backoff.next(key, now)
        return True

    # -- starting a container -----------------------------------------------------------------------------

    async def _start_container(self, ctx: _StartContext, container: dict[str, Any], result: SyncResult,
                               init: bool = False) -> None:
        name = container["name"]
        image_ref = await self._ensure_image(ctx.pod, container, ctx.sandbox_config, result)
        if image_ref is None:
            return
        previous = ctx.state.latest(name)
        restart_count = previous.restart_count + 1 if previous is not None else 0
        try:
            env = await envvars.container_env(self._pod_with_ips(ctx), container, self.objects,
                                              self.node_allocatable())
            command, args = envvars.expand_command(container, env)
            mounts = self._mounts(ctx, container, restart_count)
        except (envvars.ContainerConfigError, VolumeError) as error:
            result.wait(name, "CreateContainerConfigError", str(error))
            self.recorder.event(ctx.pod, "Warning", "Failed", f"Error: {error}", container=name)
            result.retry(2.0)
            return
        config = containerconfig.container_config(ctx.pod, container, image_ref=image_ref,
                                                  restart_count=restart_count, env=env, command=command,
                                                  args=args, mounts=mounts, init=init)
        (Path(ctx.sandbox_config.log_directory) / name).mkdir(parents=True, exist_ok=True)
        try:
            container_id = await self.runtime.create_container(ctx.sandbox_id, config, ctx.sandbox_config)
        except CRIError as error:
            result.wait(name, "CreateContainerError", error.message)
            self.recorder.event(ctx.pod, "Warning", "Failed", f"Error: {error.message}", container=name)
            result.retry(2.0)
            return
        self.recorder.event(ctx.pod, "Normal", "Created", f"Created container {name}", container=name)
        try:
            await self.runtime.start_container(container_id)
        except CRIError as error:
            result.wait(name, "RunContainerError", error.message)
            self.recorder.event(ctx.pod, "Warning", "Failed", f"Error: {error.message}", container=name)
            return
        self.recorder.event(ctx.pod, "Normal", "Started", f"Started container {name}", container=name)
        post_start = (container.get("lifecycle") or {}).get("postStart")
        if post_start:
            failure = await handlers.run_hook(self.runtime, post_start, container_id, ctx.pod_ip, container,
                                              termination_grace(ctx.pod))
            if failure:
                self.recorder.event(ctx.pod, "Warning", "FailedPostStartHook", failure, container=name)
                await self.runtime.stop_container(container_id, 0)

    async def _ensure_image(self, pod: dict[str, Any], container: dict[str, Any],
                            sandbox_config: cri.PodSandboxConfig, result: SyncResult) -> str | None:
        """The image's reference once present, by the pull policy; None (and a Waiting reason) otherwise."""
        name, image = container["name"], container.get("image", "")
        policy = container.get("imagePullPolicy") or ("Always" if _latest_tag(image) else "IfNotPresent")
        key = f"{_key(pod, name)}/image"
        try:
            present = await self.runtime.image_status(image)
        except CRIError as error:
            result.wait(name, "ErrImagePull", error.message)
            return None
        if present is not None and policy != "Always":
            self.recorder.event(pod, "Normal", "Pulled", f'Container image "{image}" already present on machine',
                                container=name)
            return present.id
        if policy == "Never":
            message = f'Container image "{image}" is not present with pull policy of Never'
            result.wait(name, "ErrImageNeverPull", message)
            self.recorder.event(pod, "Warning", "ErrImageNeverPull", message, container=name)
            return None
        now = self.clock()
        if present is None and self.image_backoff.in_backoff_since_update(key, now):
            message = f'Back-off pulling image "{image}"'
            result.wait(name, "ImagePullBackOff", message)
            self.recorder.event(pod, "Normal", "BackOff", message, container=name)
            result.retry(self.image_backoff.until_retry(key, now) + 0.05)
            return None
        self.recorder.event(pod, "Normal", "Pulling", f'Pulling image "{image}"', container=name)
        began = time.monotonic()
        try:
            ref = await self.runtime.pull_image(image, sandbox_config)
        except CRIError as error:
            if present is not None:
                # Offline: `Always` cannot reach a registry, but the node has the image (see docs/kubelet.md).
                log.info("pulling %s failed (%s); using the image on the node", image, error.message)
                self.recorder.event(pod, "Normal", "Pulled", f'Container image "{image}" already present on '
                                    "machine (no registry reachable to pull a newer one)", container=name)
                return present.id
            self.image_backoff.next(key, now)
            self.recorder.event(pod, "Warning", "Failed", f'Failed to pull image "{image}": {error.message} '
                                "(no registry is reachable from here: load the image into the nodes with "
                                "`mkpy image load FILE`)", container=name)
            self.recorder.event(pod, "Warning", "Failed", "Error: ErrImagePull", container=name)
            result.wait(name, "ErrImagePull", f'failed to pull image "{image}": {error.message}; images are '
                        "not pulled from registries here: load it with `mkpy image load FILE`")
            result.retry(self.image_backoff.delay(key) + 0.05)
            return None
        took = time.monotonic() - began
        self.recorder.event(pod, "Normal", "Pulled", f'Successfully pulled image "{image}" in {took:.3f}s',
                            container=name)
        return ref

    def _mounts(self, ctx: _StartContext, container: dict[str, Any], restart_count: int) -> list[cri.Mount]:
        mounts = []
        for mount in container.get("volumeMounts") or []:
            host = ctx.volume_paths.get(mount.get("name", ""))
            if host is None:
                raise VolumeError(f"cannot find volume \"{mount.get('name')}\" to mount into container "
                                  f"\"{container['name']}\"")
            if mount.get("subPath"):
                host = host / mount["subPath"]
                if not host.exists():
                    host.mkdir(parents=True, exist_ok=True)
            read_only = bool(mount.get("readOnly")) or self.volumes.read_only(ctx.pod["metadata"]["uid"],
                                                                              mount.get("name", ""))
            mounts.append(cri.Mount(container_path=mount.get("mountPath", ""), host_path=str(host),
                                    readonly=read_only))
        # The termination message file, which the status reads when the container ends.
        message_dir = self.volumes.pod_dir(ctx.pod["metadata"]["uid"]) / "containers" / container["name"]
        message_dir.mkdir(parents=True, exist_ok=True)
        message_file = message_dir / str(restart_count)
        message_file.touch(mode=0o666)
        message_file.chmod(0o666)
        mounts.append(cri.Mount(
            container_path=container.get("terminationMessagePath") or containerconfig.DEFAULT_TERMINATION_MESSAGE_PATH,
            host_path=str(message_file)))
        return mounts

    def _pod_with_ips(self, ctx: _StartContext) -> dict[str, Any]:
        status = dict(ctx.pod.get("status") or {})
        if ctx.pod_ip:
            status["podIP"], status["podIPs"] = ctx.pod_ip, [{"ip": ctx.pod_ip}]
        return ctx.pod | {"status": status}

    # -- stopping -----------------------------------------------------------------------------------------

    async def kill_pod(self, pod: dict[str, Any] | None, state: PodState, grace: int) -> None:
        """Stop every container (in parallel, each with its preStop hook), then every sandbox."""
        await self._stop_pod_containers(pod, state, grace)
        for sandbox in state.sandboxes:
            if sandbox.ready:
                try:
                    await self.runtime.stop_pod_sandbox(sandbox.id)
                except CRINotFound:
                    pass
                except CRIError as error:
                    log.warning("stopping sandbox %s: %s", sandbox.id[:13], error)

    async def _stop_pod_containers(self, pod: dict[str, Any] | None, state: PodState, grace: int) -> None:
        running = [c for c in state.containers if c.running or c.state == cri.CONTAINER_CREATED]
        if running:
            await asyncio.gather(*(self.kill_container(pod, c, grace, run_pre_stop=True) for c in running))

    async def kill_container(self, pod: dict[str, Any] | None, container: ContainerState, grace: int,
                             run_pre_stop: bool) -> None:
        began = time.monotonic()
        spec = self._container_spec(pod, container.name)
        if pod is not None:
            self.recorder.event(pod, "Normal", "Killing", f"Stopping container {container.name}",
                                container=container.name)
        pre_stop = ((spec or {}).get("lifecycle") or {}).get("preStop")
        if run_pre_stop and pre_stop and container.running and grace > 0:
            failure = await handlers.run_hook(self.runtime, pre_stop, container.id, "", spec, grace)
            if failure and pod is not None:
                self.recorder.event(pod, "Warning", "FailedPreStopHook", failure, container=container.name)
        remaining = max(0, grace - int(time.monotonic() - began))
        try:
            await self.runtime.stop_container(container.id, remaining)
        except CRINotFound:
            pass
        except CRIError as error:
            log.warning("stopping container %s: %s", container.id[:13], error)

    @staticmethod
    def _container_spec(pod: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
        spec = (pod or {}).get("spec") or {}
        for container in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
            if container.get("name") == name:
                return container
        return None

    async def remove_pod(self, state: PodState) -> None:
        """Remove what the runtime holds for a finished pod (its logs go with the sandbox's log directory)."""
        for container in state.containers:
            try:
                await self.runtime.remove_container(container.id)
            except CRIError as error:
                if not isinstance(error, CRINotFound):
                    log.warning("removing container %s: %s", container.id[:13], error)
        for sandbox in state.sandboxes:
            try:
                await self.runtime.remove_pod_sandbox(sandbox.id)
            except CRIError as error:
                if not isinstance(error, CRINotFound):
                    log.warning("removing sandbox %s: %s", sandbox.id[:13], error)

    async def prune_dead_containers(self, state: PodState) -> None:
        """Keep the latest two containers of each name (the current one and `--previous`); remove older ones."""
        seen: dict[str, int] = {}
        for container in state.containers:  # newest first
            seen[container.name] = seen.get(container.name, 0) + 1
            if seen[container.name] > 2 and not container.running:
                try:
                    await self.runtime.remove_container(container.id)
                except CRIError:
                    pass


@dataclass
class _StartContext:
    pod: dict[str, Any]
    state: PodState
    sandbox_id: str
    pod_ip: str
    sandbox_config: cri.PodSandboxConfig
    volume_paths: dict[str, Path]

    def current(self, name: str) -> ContainerState | None:
        """The latest container of that name in the current sandbox."""
        return next((c for c in self.state.containers if c.name == name and c.sandbox_id == self.sandbox_id), None)


def _app_names(spec: dict[str, Any]) -> list[str]:
    return [c["name"] for c in spec.get("containers") or []]


def _key(pod: dict[str, Any], container: str) -> str:
    return f"{pod['metadata']['uid']}/{container}"


def termination_grace(pod: dict[str, Any]) -> int:
    """The pod's `terminationGracePeriodSeconds` (kube's default: 30)."""
    return int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))


def _latest_tag(image: str) -> bool:
    """An image without a tag or digest, or tagged `latest`: kube's default pull policy is then Always."""
    if "@" in image:
        return False
    last = image.rsplit("/", 1)[-1]
    return ":" not in last or last.endswith(":latest")


def _duration(seconds: float) -> str:
    """Go's time.Duration String for whole seconds: 10s, 1m20s, 5m0s."""
    whole = int(seconds)
    minutes, secs = divmod(whole, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"

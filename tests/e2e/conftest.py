"""End-to-end fixtures: whole clusters started with `mkpy up`, driven by the real kubectl and Python client.

Everything here runs real processes the way a user does. `mkpy` runs as `python -m minikube_py.cli.main`
with `MKPY_HOME` and `HOME` in a temporary directory, so no test ever touches the real
`~/.local/share/mkpy` or `~/.kube/config`; `kubectl` is the real binary on PATH, always given the cluster's
standalone kubeconfig with `--kubeconfig`.

What the fixtures give a test:
* `mkpy`: the `mkpy` command in this session's private home (`Mkpy`), for tests that manage clusters
  themselves (tests/e2e/test_lifecycle.py);
* `cluster`: one running cluster shared by the whole session (`KubeCluster`); tests keep out of each
  other's way by working in their own namespace (`namespace`, or a module-scoped one they create);
* `Background`: a command left running (`kubectl get -w`) whose output a test waits on line by line.

Usage rules: every wait is bounded and fails with a message saying what was awaited and what was seen
(`wait_until`, `Background.wait_for`); every command has a timeout. A command that fails unexpectedly
raises `CommandFailed` with the command line, exit code and both output streams. The shared cluster is
deleted (`mkpy delete`) at the end of the session even when tests fail.
"""

from __future__ import annotations

import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

COMMAND_TIMEOUT = 60.0  # seconds any single command may take; `mkpy up` needs about one
WAIT_TIMEOUT = 15.0  # seconds a test waits for something to happen in the cluster
SHARED_CLUSTER = "e2e"
NODES_CLUSTER = "e2e-nodes"
VENV_BIN = Path(sys.executable).parent


# running commands -----------------------------------------------------------------------------------


class CommandFailed(AssertionError):
    """A command exited with an unexpected code (or did not exit in time)."""


@dataclass(frozen=True)
class Result:
    """A finished command: what ran, its exit code, and what it printed."""

    argv: Sequence[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """stdout and stderr together: kubectl prints errors on stderr, results on stdout."""
        return self.stdout + self.stderr

    def describe(self) -> str:
        return (f"$ {shlex.join(self.argv)}\nexit code {self.returncode}\n"
                f"--- stdout ---\n{self.stdout}--- stderr ---\n{self.stderr}")


def run(argv: Sequence[str], *, env: Mapping[str, str], check: bool = True, expect_failure: bool = False,
        input: str | None = None, cwd: Path | None = None, timeout: float = COMMAND_TIMEOUT) -> Result:
    """Run `argv` to completion. `check` demands exit code 0; `expect_failure` demands a non-zero one."""
    try:
        completed = subprocess.run(list(argv), env=dict(env), input=input, capture_output=True, text=True,
                                   cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = _text(exc.stdout) + _text(exc.stderr)
        raise CommandFailed(f"$ {shlex.join(argv)}\ndid not finish within {timeout:.0f}s; output so far:\n{out}") from None
    result = Result(list(argv), completed.returncode, completed.stdout, completed.stderr)
    if expect_failure and result.returncode == 0:
        raise CommandFailed(f"expected this command to fail, but it succeeded:\n{result.describe()}")
    if check and not expect_failure and result.returncode != 0:
        raise CommandFailed(f"command failed:\n{result.describe()}")
    return result


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_TIMEOUT,
               interval: float = 0.05) -> Any:
    """Poll `condition` until it returns something truthy, and return that; fail naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last value: {last!r})")


class Background:
    """A command running in the background, its merged stdout/stderr collected line by line.

    Use it as a context manager: leaving the block stops the command (SIGTERM to its process group, then
    SIGKILL), so no `kubectl get -w` outlives its test.
    """

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None) -> None:
        self.argv = list(argv)
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        # its own session, so that stop() reaches the whole process group (bash -c and its children too)
        self.process = subprocess.Popen(self.argv, env=dict(env), cwd=cwd, text=True, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def _drain(self, block_for: float = 0.0) -> bool:
        """Move queued lines into `self.lines`; False once the command's output has ended."""
        try:
            item = self._queue.get(timeout=block_for) if block_for else self._queue.get_nowait()
        except queue.Empty:
            return True
        while True:
            if item is None:
                self._queue.put(None)  # keep the end marker for later calls
                return False
            self.lines.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return True

    @property
    def output(self) -> str:
        self._drain()
        return "\n".join(self.lines)

    def wait_for(self, condition: Callable[[list[str]], Any] | str, what: str = "",
                 timeout: float = WAIT_TIMEOUT) -> Any:
        """Wait until `condition(lines)` is truthy (a string: until a line contains it); return its value."""
        if isinstance(condition, str):
            text = condition
            what = what or f"a line containing {text!r}"
            condition = lambda lines: next((line for line in lines if text in line), None)  # noqa: E731
        deadline = time.monotonic() + timeout
        while True:
            alive = self._drain(block_for=0.05)
            found = condition(self.lines)
            if found:
                return found
            if not alive or time.monotonic() > deadline:
                state = "exited" if not alive else f"still running after {timeout:.0f}s"
                raise AssertionError(f"`{shlex.join(self.argv)}` {state} without printing {what}; "
                                     f"it printed:\n" + "\n".join(self.lines))

    def stop(self) -> str:
        """Stop the command (if still running) and return everything it printed."""
        if self.process.poll() is None:
            _kill_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                _kill_group(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        self._reader.join(5)
        self._drain()
        return "\n".join(self.lines)

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kill_group(pid: int, signum: signal.Signals) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


# mkpy and clusters ----------------------------------------------------------------------------------


def isolated_env(root: Path) -> dict[str, str]:
    """The environment for mkpy and kubectl: a private MKPY_HOME and HOME under `root`, this venv on PATH."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("KUBECONFIG", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    (root / "home").mkdir(parents=True, exist_ok=True)
    env.update(MKPY_HOME=str(root / "mkpy-home"), HOME=str(root / "home"),
               PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", PYTHONUNBUFFERED="1",
               COLUMNS="200")  # rich (mkpy status/list) would otherwise wrap tables at 80 columns
    return env


class Mkpy:
    """The `mkpy` command, run by this interpreter, in a private home directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = isolated_env(root)

    @property
    def home(self) -> Path:
        return Path(self.env["MKPY_HOME"])

    def __call__(self, *args: str, check: bool = True, expect_failure: bool = False,
                 timeout: float = COMMAND_TIMEOUT) -> Result:
        return run([sys.executable, "-m", "minikube_py.cli.main", *args], env=self.env, check=check,
                   expect_failure=expect_failure, timeout=timeout)

    def up(self, name: str, *flags: str) -> KubeCluster:
        """`mkpy up --name NAME [FLAGS]`, and a handle on the running cluster."""
        self("up", "--name", name, *flags)
        return self.cluster(name)

    def cluster(self, name: str) -> KubeCluster:
        kubeconfig = Path(self("kubeconfig", "--name", name).stdout.strip())
        return KubeCluster(name, kubeconfig, self)

    def delete(self, name: str) -> None:
        self("delete", "--name", name, check=False)


class KubeCluster:
    """A cluster started by `mkpy up`, reached through its standalone kubeconfig."""

    def __init__(self, name: str, kubeconfig: Path, mkpy: Mkpy) -> None:
        self.name = name
        self.kubeconfig = kubeconfig
        self.mkpy = mkpy
        self.env = mkpy.env

    @property
    def server(self) -> str:
        config = yaml.safe_load(self.kubeconfig.read_text())
        return str(config["clusters"][0]["cluster"]["server"])

    @property
    def dir(self) -> Path:
        return self.kubeconfig.parent

    def kubectl_argv(self, *args: str) -> list[str]:
        return ["kubectl", f"--kubeconfig={self.kubeconfig}", *args]

    def kubectl(self, *args: str, check: bool = True, expect_failure: bool = False, input: str | None = None,
                timeout: float = COMMAND_TIMEOUT) -> Result:
        """Run the real kubectl against this cluster."""
        return run(self.kubectl_argv(*args), env=self.env, check=check, expect_failure=expect_failure,
                   input=input, timeout=timeout)

    def kubectl_json(self, *args: str) -> Any:
        """`kubectl ... -o json`, parsed."""
        return yaml.safe_load(self.kubectl(*args, "-o", "json").stdout)

    def kubectl_background(self, *args: str) -> Background:
        return Background(self.kubectl_argv(*args), env=self.env)

    def apply_manifest(self, manifest: str, namespace: str | None = None) -> Result:
        """`kubectl create -f -` with a YAML manifest (one or more documents)."""
        ns = ["--namespace", namespace] if namespace else []
        return self.kubectl("create", *ns, "-f", "-", input=manifest)

    def etcdctl(self, *args: str) -> Result:
        return self.mkpy("etcdctl", "--name", self.name, *args)

    def api_client(self) -> Any:
        """An official `kubernetes` Python client for this cluster (close it when done)."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))


# manifests ------------------------------------------------------------------------------------------


def unique(prefix: str) -> str:
    """A fresh DNS-1123 name, so that tests sharing a cluster never collide."""
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def namespace_manifest(name: str) -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"


def pod_manifest(name: str, labels: Mapping[str, str] | None = None, image: str = "nginx:1.27") -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"containers": [{"name": "app", "image": image}]},
    })


def configmap_manifest(name: str, data: Mapping[str, str] | None = None,
                       labels: Mapping[str, str] | None = None) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": dict(labels or {})},
        "data": dict(data or {}),
    })


def deployment_manifest(name: str, replicas: int = 2, image: str = "nginx:1.27") -> str:
    labels = {"app": name}
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "app", "image": image}]}}},
    })


def service_manifest(name: str, selector: Mapping[str, str], port: int = 80) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"selector": dict(selector), "ports": [{"port": port, "targetPort": 8080}]},
    })


def documents(*manifests: str) -> str:
    """Several manifests as one multi-document YAML stream."""
    return "---\n".join(manifests)


# fixtures -------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kubectl_on_path() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("the end-to-end tests need the real kubectl (>= 1.30) on PATH")
    return path


@pytest.fixture(scope="session")
def mkpy(tmp_path_factory: pytest.TempPathFactory, kubectl_on_path: str) -> Mkpy:
    """`mkpy` in a home directory private to this test session."""
    return Mkpy(tmp_path_factory.mktemp("e2e"))


@pytest.fixture(scope="session")
def cluster(mkpy: Mkpy) -> Iterator[KubeCluster]:
    """One cluster for the whole session, started with `mkpy up` and deleted at the end. Its control plane
    has no nodes (`--nodes 0`): these tests are about the API, and their pods stay Pending and unchanged."""
    try:
        yield mkpy.up(SHARED_CLUSTER, "--nodes", "0")
    finally:
        mkpy.delete(SHARED_CLUSTER)


@pytest.fixture(scope="session")
def nodes_cluster(mkpy: Mkpy) -> Iterator[KubeCluster]:
    """A second shared cluster, with two simulated nodes (`--simulated-nodes 2`: the fake runtime makes pods
    Running and Ready within a second), for the tests of controllers whose work needs pods to run:
    rollouts, jobs, endpoints. Tests keep to their own namespaces and must not change the nodes."""
    try:
        yield mkpy.up(NODES_CLUSTER, "--nodes", "0", "--simulated-nodes", "2", "--no-switch-context")
    finally:
        mkpy.delete(NODES_CLUSTER)


@pytest.fixture()
def namespace(cluster: KubeCluster) -> str:
    """A fresh namespace for one test (left behind: without a namespace controller it could only go Terminating)."""
    name = unique("t")
    cluster.apply_manifest(namespace_manifest(name))
    return name


def apply_object(cluster: KubeCluster, namespace: str, obj: dict[str, Any]) -> None:
    """`kubectl apply` of one object given as a dict."""
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def rollout_status(cluster: KubeCluster, target: str, namespace: str, timeout: int = 90) -> str:
    """`kubectl rollout status TARGET` bounded by `timeout` seconds; its output."""
    return cluster.kubectl("rollout", "status", target, "-n", namespace, f"--timeout={timeout}s",
                           timeout=timeout + 10).stdout

"""The cluster directory: where one named cluster keeps everything it has.

Every `mkpy` command that acts on a cluster starts here: `Cluster.load(name)` (down, status, logs, ...) or
`Cluster.create_or_load(name)` (up). The layout, under `$MKPY_HOME` (default `$XDG_DATA_HOME/mkpy`, i.e.
`~/.local/share/mkpy`):

    <name>/cluster.json     ports chosen on the first `mkpy up`, where the context was merged, and the
                            components' extra flags (`mkpy up --extra-config kcm.node-monitor-grace-period=10s`)
    <name>/kubeconfig       standalone admin kubeconfig (`mkpy kubeconfig` prints its path)
    <name>/kubeconfigs/     one per component identity: controller-manager.conf, scheduler.conf,
                            cloud-controller-manager.conf, kubelet-<node>.conf
    <name>/pki/             ca.crt/.key, apiserver.crt/.key, admin.crt/.key, a client certificate per
                            component (<component>.crt/.key), sa.key/sa.pub (service-account token
                            keys), optional tokens.csv
    <name>/etcd/            etcd's --data-dir: every object of the cluster
    <name>/logs/<component>.log
    <name>/run/<component>.pid

Usage rules: ports are chosen once and persisted, so the apiserver's address (and every kubeconfig) stays
valid across `mkpy down`/`mkpy up`; ports recorded by other clusters in the same home are never reused, so
named clusters can run side by side. Port choice and the whole of up/down/delete run under file locks, so
two `mkpy` invocations never race on the same cluster or pick the same port.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import random
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

DEFAULT_NAME = "mkpy"
HOST = "127.0.0.1"
# Ports come from below Linux's ephemeral range (32768+) and the NodePort range (30000-32767), so a
# stopped cluster's ports are not taken by some outgoing connection or Service in the meantime; random
# rather than sequential so that independent homes (parallel tests) rarely pick the same ones.
PORT_RANGE = (20000, 29999)
_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def mkpy_home() -> Path:
    """The directory holding all clusters: `$MKPY_HOME`, else `$XDG_DATA_HOME/mkpy`, else ~/.local/share/mkpy."""
    if os.environ.get("MKPY_HOME"):
        return Path(os.environ["MKPY_HOME"]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "mkpy"


def validate_name(name: str) -> str:
    """Cluster names become directory, context and user names: a DNS-1123 label of at most 40 characters."""
    if not _NAME_RE.match(name):
        raise click.BadParameter(
            f"{name!r}: a cluster name must be lowercase letters, digits and '-', start and end with a "
            "letter or digit, and be at most 40 characters", param_hint="'--name'")
    return name


@dataclass
class Ports:
    """The TCP ports on 127.0.0.1 one cluster listens on."""

    etcd_client: int
    etcd_peer: int
    apiserver: int
    scheduler: int = 0  # its /healthz; 0 in clusters made before the scheduler existed, chosen on next up
    kcm: int = 0  # the controller manager's /healthz; 0 in clusters made before it existed
    ccm: int = 0  # the cloud controller manager's /healthz; 0 in clusters made before it existed


@dataclass
class Cluster:
    """One named cluster's directory and persisted settings (`cluster.json`)."""

    name: str
    dir: Path
    ports: Ports
    kubeconfig_merged_into: str = ""  # the user kubeconfig our context went into, for `mkpy delete`
    extra_config: dict[str, dict[str, str]] = field(default_factory=dict)  # component -> flag -> value

    def extra_args(self, component: str) -> list[str]:
        """The `--flag=value` arguments `--extra-config` gave `component` (every kubelet-<node> is "kubelet")."""
        kind = "kubelet" if component.startswith("kubelet-") else component
        return [f"--{flag}={value}" for flag, value in self.extra_config.get(kind, {}).items()]

    @property
    def context_name(self) -> str:
        return context_name(self.name)

    @property
    def pki_dir(self) -> Path:
        return self.dir / "pki"

    @property
    def etcd_data_dir(self) -> Path:
        return self.dir / "etcd"

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def run_dir(self) -> Path:
        return self.dir / "run"

    @property
    def kubeconfig_path(self) -> Path:
        return self.dir / "kubeconfig"

    def cert_files(self, name: str) -> tuple[Path, Path]:
        """The certificate and key of `name` in pki/ ("ca", "apiserver", "admin"), as `auth.pki` writes them."""
        return self.pki_dir / f"{name}.crt", self.pki_dir / f"{name}.key"

    def component_kubeconfig(self, component: str) -> Path:
        """The kubeconfig holding `component`'s own identity ("scheduler", "kubelet-<node>", ...)."""
        return self.dir / "kubeconfigs" / f"{component}.conf"

    @property
    def service_account_key_files(self) -> tuple[Path, Path]:
        """The private key that signs service-account tokens and the public key that verifies them."""
        return self.pki_dir / "sa.key", self.pki_dir / "sa.pub"

    @property
    def token_auth_file(self) -> Path:
        return self.pki_dir / "tokens.csv"

    @property
    def etcd_endpoint(self) -> str:
        return f"http://{HOST}:{self.ports.etcd_client}"

    @property
    def apiserver_url(self) -> str:
        return f"https://{HOST}:{self.ports.apiserver}"

    @classmethod
    def find(cls, name: str) -> Cluster | None:
        """The existing cluster `name`, or None."""
        return _read(mkpy_home() / validate_name(name))

    @classmethod
    def load(cls, name: str) -> Cluster:
        """The existing cluster `name`; a one-line error (listing the known ones) if there is none."""
        cluster = cls.find(name)
        if cluster is None:
            known = ", ".join(c.name for c in list_clusters()) or "none"
            raise click.ClickException(
                f'cluster "{name}" does not exist (known clusters: {known}); create it with `mkpy up --name {name}`')
        return cluster

    @classmethod
    def create_or_load(cls, name: str) -> Cluster:
        """The cluster `name`, creating its directory and choosing its ports if it is new."""
        home = mkpy_home()
        cluster_dir = home / validate_name(name)
        with _locked(home / ".lock"):
            cluster = _read(cluster_dir)
            if cluster is None:
                taken = {port for other in list_clusters() for port in asdict(other.ports).values()}
                cluster = cls(name=name, dir=cluster_dir, ports=_choose_ports(taken))
                cluster.save()
            elif 0 in asdict(cluster.ports).values():
                taken = {port for other in list_clusters() for port in asdict(other.ports).values()}
                cluster.ports = _choose_ports(taken, keep=cluster.ports)
                cluster.save()
        for sub in (cluster.pki_dir, cluster.etcd_data_dir, cluster.logs_dir, cluster.run_dir):
            sub.mkdir(mode=0o700, parents=True, exist_ok=True)
        return cluster

    def save(self) -> None:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        state = {"name": self.name, "ports": asdict(self.ports),
                 "kubeconfig_merged_into": self.kubeconfig_merged_into, "extra_config": self.extra_config}
        tmp = self.dir / ".cluster.json.tmp"
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, self.dir / "cluster.json")


def context_name(cluster_name: str) -> str:
    """The name of the cluster's kubeconfig context, cluster and user entries (`kubectl --context mkpy-dev`)."""
    return f"mkpy-{cluster_name}"


def name_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """The `--name` option every command that acts on one cluster takes."""
    return click.option("--name", default=DEFAULT_NAME, show_default=True, metavar="NAME", help="Cluster name.",
                        callback=lambda ctx, param, value: validate_name(value))(command)


def cluster_lock(cluster_dir: Path) -> contextlib.AbstractContextManager[None]:
    """Held by up, down and delete: one lifecycle change of a cluster at a time."""
    return _locked(cluster_dir / ".lock")


def list_clusters() -> list[Cluster]:
    """Every cluster in the home directory, by name."""
    home = mkpy_home()
    if not home.is_dir():
        return []
    clusters = (_read(path) for path in sorted(home.iterdir()) if path.is_dir())
    return [cluster for cluster in clusters if cluster is not None]


def port_in_use(port: int) -> bool:
    """Whether something on this machine already listens on (or holds) 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As etcd and uvicorn do: otherwise a port left in TIME_WAIT by our own health probes looks taken.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return True
    return False


def _choose_ports(taken: set[int], keep: Ports | None = None) -> Ports:
    """Fresh ports for a new cluster, or for the ones `keep` lacks (0) when a newer mkpy added components."""
    wanted = asdict(keep) if keep is not None else {name: 0 for name in Ports.__dataclass_fields__}
    missing = [name for name, port in wanted.items() if not port]
    chosen = free_ports(len(missing), taken)
    return Ports(**{**wanted, **dict(zip(missing, chosen, strict=True))})


def free_ports(count: int, taken: set[int]) -> list[int]:
    """`count` ports from PORT_RANGE, none of them in `taken` (recorded by some cluster) or in use now, in
    random order."""
    candidates = [port for port in range(PORT_RANGE[0], PORT_RANGE[1] + 1) if port not in taken]
    random.shuffle(candidates)
    chosen = list(itertools.islice((port for port in candidates if not port_in_use(port)), count))
    if len(chosen) < count:
        raise click.ClickException(f"no free ports on {HOST} between {PORT_RANGE[0]} and {PORT_RANGE[1]}")
    return chosen


def _read(cluster_dir: Path) -> Cluster | None:
    try:
        state = json.loads((cluster_dir / "cluster.json").read_text())
        return Cluster(name=state["name"], dir=cluster_dir, ports=Ports(**state["ports"]),
                       kubeconfig_merged_into=state.get("kubeconfig_merged_into", ""),
                       extra_config={str(k): dict(v) for k, v in (state.get("extra_config") or {}).items()})
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(path, "a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)

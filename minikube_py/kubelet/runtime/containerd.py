"""One containerd per node: layout, config, command line, host prerequisites and readiness.

Several mkpy nodes share one host, so each node's containerd gets its own everything: root and state
directories, gRPC socket, runc state root, cgroup, CNI bridge and pod subnet. `mkpy up` does, per node:

    layout = ContainerdLayout(cluster_dir / "nodes" / node_name / "containerd")
    write_config(layout, bridge_name="mkpy1", cgroup_parent="/mkpy-node1", sandbox_image=PAUSE_IMAGE)
    ensure_host_network(cluster_cidr="10.88.0.0/16")       # once per host
    start containerd_argv(layout) with stderr to layout.log_path
    await wait_ready(layout.socket, timeout=10)             # CRI answers: now import images, start kubelet

and when the node is deleted (after its pods are removed and containerd has stopped):
`remove_bridge(bridge_name)`, `remove_cgroup_tree(cgroup_parent)`, and with the last node
`remove_host_network(cluster_cidr)`. `available()` says whether this machine can run containerd at all.

The pod subnet is not known here: the controller manager's node-ipam controller writes it into the Node's
spec.podCIDR, the kubelet reads it from there and passes it on with the CRI call UpdateRuntimeConfig, and
containerd renders the CNI network config from a template then, as on a kubeadm node whose containerd has
`conf_template` set:

    write_config            cni/conflist.tmpl (subnet "{{.PodCIDR}}"), config.toml naming it
    containerd starts       no network config in cni/net.d: CRI Status says NetworkReady=false
                            (NetworkPluginNotReady, "cni plugin not initialized"), RunPodSandbox fails
    UpdateRuntimeConfig     containerd renders the template into cni/net.d/10-containerd-net.conflist with the
                            first CIDR as .PodCIDR, loads it: NetworkReady=true
    UpdateRuntimeConfig     once a network config is loaded: nothing (a CIDR that changes later is ignored)

The rendered file stays when the node stops, so after `mkpy down` and `mkpy up` containerd loads it at start
and the kubelet's UpdateRuntimeConfig changes nothing; `remove_network_config` drops it when the node goes
for good (a node that comes back under the same name may get another pod CIDR).

Why the config looks the way it does (each line was needed on these machines):
* `stream_server_port = "0"`: the streaming server (exec/attach/port-forward) defaults to port 10010, and a
  second containerd on the same host would die on that port; "0" picks a free one.
* `restrict_oom_score_adj`: CRI asks for oom_score_adj -998 for sandboxes, which needs CAP_SYS_RESOURCE; on
  VMs without it runc fails with "can't get final child's PID from pipe". This caps it at containerd's own.
* runc `Root` per node: the default state root is shared by every containerd on the host.
* `[cgroup] path`: containerd (and the shims it starts) live in `<cgroup_parent>/containerd`; the kubelet
  puts pods beside it in `<cgroup_parent>/pod<uid>`, so one node's processes form one cgroup tree.
* CNI: bridge (node-local gateway, hairpin so a pod reaches itself through a Service) with host-local IPAM
  on the node's pod CIDR (the template's `{{.PodCIDR}}`), then portmap (hostPort). containerd itself
  brings up `lo` in every pod, so loopback is not in the chain.
* Host rules instead of per-pod ones (`ensure_host_network`): one NAT rule masquerades only traffic leaving
  the cluster CIDR (not the bridge's `ipMasq`, so pods see each other's real IPs), and two FORWARD rules
  accept traffic from the cluster CIDR and replies to it, so pods talk even where FORWARD's policy is DROP
  (Docker hosts), as kube-proxy's KUBE-FORWARD chain does for a cluster CIDR. The CNI firewall plugin did
  that per pod, with a few iptables runs for every sandbox set up and torn down, serialized by iptables'
  lock: with 30 pods started at once it cost ~0.5 s of the slowest pod's startup (docs/benchmarks.md §8).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRIError

CNI_BIN_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "portmap", "loopback")
# containerd-shim-runc-v2 runs each pod; ctr imports images; busybox (static) is what built-in images hold.
BINARIES = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip", "busybox")
CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_SOCKET_PATH = 107 - len(".ttrpc")  # sun_path holds 107 bytes; containerd adds "<socket>.ttrpc"
_BRIDGE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")  # a Linux interface name: at most 15 bytes
MASQUERADE_COMMENT = "mkpy: pod traffic leaving the cluster"
FORWARD_COMMENT = "mkpy: pod traffic forwarded"
RENDERED_CNI_CONFIG = "10-containerd-net.conflist"  # the name containerd's CRI plugin renders its template to


@dataclass(frozen=True)
class ContainerdLayout:
    """Where one node's containerd keeps its files: everything lives under `dir`, except the socket when
    `socket_dir` is given (a unix socket path must stay short, a cluster directory may be long)."""

    dir: Path
    socket_dir: Path | None = None

    @property
    def config_path(self) -> Path:
        return self.dir / "config.toml"

    @property
    def root(self) -> Path:
        """Persistent data: content store (image blobs), snapshots (unpacked layers), metadata."""
        return self.dir / "root"

    @property
    def state(self) -> Path:
        """Runtime state of running tasks (shim bundles); meaningless after a reboot."""
        return self.dir / "state"

    @property
    def socket(self) -> Path:
        """The gRPC socket serving CRI (and containerd's own API, which `ctr` uses)."""
        return (self.socket_dir or self.dir) / "containerd.sock"

    @property
    def endpoint(self) -> str:
        """The socket as a CRI endpoint URL, the form the kubelet's --container-runtime-endpoint takes."""
        return f"unix://{self.socket}"

    @property
    def runc_root(self) -> Path:
        return self.dir / "runc"

    @property
    def cni_conf_dir(self) -> Path:
        """Where containerd looks for the CNI network config (and renders its template to)."""
        return self.dir / "cni" / "net.d"

    @property
    def cni_conf_template(self) -> Path:
        """The Go template of the network config; outside cni_conf_dir, which containerd loads every file of."""
        return self.dir / "cni" / "conflist.tmpl"

    @property
    def ipam_data_dir(self) -> Path:
        """host-local IPAM's record of which pod IPs are handed out."""
        return self.dir / "cni" / "ipam"

    @property
    def log_path(self) -> Path:
        """Where whoever starts containerd sends its stderr (containerd logs only there)."""
        return self.dir / "containerd.log"


def write_config(layout: ContainerdLayout, bridge_name: str, cgroup_parent: str, sandbox_image: str) -> Path:
    """Writes the node's config.toml and CNI network config template; returns the config.toml path.

    `bridge_name` is the host interface the node's pods hang off (unique per host, at most 15 characters),
    `cgroup_parent` the node's cgroup ("" keeps containerd in the cgroup it was started in), `sandbox_image`
    the pause image every pod starts with. A network config rendered earlier is left alone (see above).
    """
    if not _BRIDGE_NAME_RE.match(bridge_name):
        raise ValueError(f"invalid bridge name {bridge_name!r}: 1-15 letters, digits, '_', '.' or '-'")
    if cgroup_parent and not cgroup_parent.startswith("/"):
        raise ValueError(f"invalid cgroup parent {cgroup_parent!r}: must be an absolute path like /mkpy-node1")
    if len(str(layout.socket)) > MAX_SOCKET_PATH:
        raise ValueError(f"containerd socket path {layout.socket} is longer than {MAX_SOCKET_PATH} characters; "
                         "use a shorter cluster directory")
    for directory in (layout.root, layout.state, layout.runc_root, layout.cni_conf_dir, layout.ipam_data_dir):
        directory.mkdir(parents=True, exist_ok=True)
    _write_atomically(layout.cni_conf_template, json.dumps(_cni_network(layout, bridge_name), indent=2) + "\n")
    _write_atomically(layout.config_path, _config_toml(layout, cgroup_parent, sandbox_image))
    return layout.config_path


def _config_toml(layout: ContainerdLayout, cgroup_parent: str, sandbox_image: str) -> str:
    q = json.dumps  # a JSON string is a valid TOML basic string
    cri = '[plugins."io.containerd.grpc.v1.cri"'
    cgroup = f"[cgroup]\n  path = {q(cgroup_parent + '/containerd')}\n\n" if cgroup_parent else ""
    return f"""\
# Written by mkpy for one node; see minikube_py/kubelet/runtime/containerd.py for why each line is here.
version = 2
root = {q(str(layout.root))}
state = {q(str(layout.state))}

[grpc]
  address = {q(str(layout.socket))}

{cgroup}{cri}]
  sandbox_image = {q(sandbox_image)}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  restrict_oom_score_adj = true

{cri}.cni]
  bin_dir = {q(str(CNI_BIN_DIR))}
  conf_dir = {q(str(layout.cni_conf_dir))}
  conf_template = {q(str(layout.cni_conf_template))}
  max_conf_num = 1

{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

{cri}.containerd.runtimes.runc.options]
  Root = {q(str(layout.runc_root))}
  SystemdCgroup = false
"""


def _cni_network(layout: ContainerdLayout, bridge_name: str) -> dict:
    """The network config, with the subnet left to containerd's template rendering (Go's text/template)."""
    return {
        "cniVersion": "1.0.0",
        "name": f"mkpy-{bridge_name}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge_name,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": "{{.PodCIDR}}"}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(layout.ipam_data_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def containerd_argv(layout: ContainerdLayout) -> list[str]:
    """The command line that runs the node's containerd in the foreground (it logs to stderr)."""
    return [shutil.which("containerd") or "containerd", "--config", str(layout.config_path)]


def available() -> tuple[bool, str]:
    """Can this machine run containerd nodes? (True, what was found) or (False, why not and the fix)."""
    if os.geteuid() != 0:
        return False, f"containerd needs root (running as uid {os.geteuid()})"
    missing = [name for name in BINARIES if shutil.which(name) is None]
    missing += [str(CNI_BIN_DIR / name) for name in CNI_PLUGINS if not (CNI_BIN_DIR / name).is_file()]
    if missing:
        return False, f"missing {', '.join(missing)}: run scripts/setup-containerd as root"
    return True, f"containerd, runc and the CNI plugins in {CNI_BIN_DIR} are installed"


def _cluster_network(cidr: str) -> ipaddress.IPv4Network:
    """`cidr` parsed as an IPv4 network; ValueError naming the value when it is not one."""
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as error:
        raise ValueError(f"invalid cluster CIDR {cidr!r}: {error}") from None
    if not isinstance(network, ipaddress.IPv4Network):
        raise ValueError(f"invalid cluster CIDR {cidr!r}: only IPv4 pod networks are supported")
    return network


def ensure_host_network(cluster_cidr: str) -> None:
    """Lets pods reach each other and the world: IP forwarding on, traffic from the cluster CIDR to outside
    it NATed, and traffic from the cluster CIDR (and replies to it) accepted in FORWARD.

    Idempotent: each rule is added only when `iptables -C` does not find it. The FORWARD rules go first in
    the chain, ahead of whatever else may drop forwarded traffic there.
    """
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
    for table, add, rule in _host_rules(_cluster_network(cluster_cidr)):
        if _iptables(table, "-C", rule).returncode != 0:
            _check(_iptables(table, add, rule))


def remove_host_network(cluster_cidr: str) -> None:
    """Removes the rules `ensure_host_network` added (when a cluster is deleted); absent is fine."""
    for table, _, rule in _host_rules(_cluster_network(cluster_cidr)):
        while _iptables(table, "-C", rule).returncode == 0:
            _check(_iptables(table, "-D", rule))


def _host_rules(cluster: ipaddress.IPv4Network) -> list[tuple[str, str, list[str]]]:
    """(table, how to add it, rule) for each host-wide rule of a cluster."""
    cidr = str(cluster)
    return [
        ("nat", "-A", ["POSTROUTING", "-s", cidr, "!", "-d", cidr,
                       "-m", "comment", "--comment", MASQUERADE_COMMENT, "-j", "MASQUERADE"]),
        ("filter", "-I", ["FORWARD", "-s", cidr, "-m", "comment", "--comment", FORWARD_COMMENT, "-j", "ACCEPT"]),
        ("filter", "-I", ["FORWARD", "-d", cidr, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED",
                          "-m", "comment", "--comment", FORWARD_COMMENT, "-j", "ACCEPT"]),
    ]


def _iptables(table: str, action: str, rule: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", "-t", table, action, *rule], capture_output=True, text=True)


def _check(result: subprocess.CompletedProcess[str]) -> None:
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(result.args)} failed: {result.stderr.strip()}")


async def wait_ready(socket: str | Path, timeout: float) -> str:
    """Waits until containerd at `socket` answers CRI calls; returns its version ("containerd 1.6.20").

    containerd opens its socket before the CRI plugin has initialised, and until then CRI calls fail, so
    this asks for the runtime's Version until one succeeds. A new client per attempt: a gRPC channel that
    failed to connect waits out a reconnect backoff of a second or more before it tries again.
    Raises TimeoutError with the last error after `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        async with RuntimeClient(str(socket), timeout=1.0) as runtime:
            try:
                version = await runtime.version()
                return f"{version.runtime_name} {version.runtime_version}"
            except CRIError as error:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"containerd at {socket} did not answer CRI within {timeout} s: "
                                       f"{error.message}") from None
        await asyncio.sleep(0.05)


def remove_cgroup_tree(cgroup_path: str) -> None:
    """Removes `cgroup_path` and the cgroups below it from every hierarchy (cgroup v1 and v2).

    For a node that is deleted: runc removes each container's cgroup, but not the node's and pods' parents.
    Raises OSError (EBUSY) if a process still lives in one of them.
    """
    hierarchies = {path.resolve() for path in [CGROUP_ROOT, *CGROUP_ROOT.iterdir()]
                   if (path / "cgroup.procs").exists()}
    for hierarchy in hierarchies:
        top = hierarchy / cgroup_path.strip("/")
        if top == hierarchy or not top.is_dir():
            continue
        for directory, _, _ in os.walk(top, topdown=False):
            os.rmdir(directory)


def remove_network_config(layout: ContainerdLayout) -> None:
    """Forgets the network config containerd rendered for the node's pod CIDR (absent is fine)."""
    (layout.cni_conf_dir / RENDERED_CNI_CONFIG).unlink(missing_ok=True)


def remove_bridge(bridge_name: str) -> None:
    """Deletes the node's bridge: the CNI bridge plugin creates it for the first pod and never removes it."""
    if Path("/sys/class/net", bridge_name).exists():
        _check(subprocess.run(["ip", "link", "delete", bridge_name], capture_output=True, text=True))


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)

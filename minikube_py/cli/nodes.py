"""A cluster's nodes: which there are, how each runs its containers, and the processes `mkpy up` starts for it.

Each node is two processes, as on a real machine: a container runtime and a kubelet.

    containerd-<node>   a real containerd with its own config, root, state, socket, runc root, cgroup and
                        CNI bridge (kubelet/runtime/containerd.py), when this machine can run it (root,
                        installed by scripts/setup-containerd); the built-in images are imported at start
    fake-cri-<node>     otherwise (and for `--simulated-nodes`): `mkpy fake-cri`, containers without processes
    kubelet-<node>      `mkpy kubelet` with the node's own identity (system:node:<node>)

The node list lives in `<cluster>/nodes.json`, chosen on the first `mkpy up` and grown by later ones
(`--nodes N` keeps at least N nodes, `--simulated-nodes M` at least M simulated ones). Node names follow
minikube: the first node is named after the cluster, the next `<cluster>-m02`, ...; simulated nodes are
`<cluster>-sim-001`, ... Each cluster takes a /16 of pod addresses (`10.<x>.0.0/16`, unused by other clusters
and by the host's routes): the controller manager's `--cluster-cidr`, from which its node-ipam controller gives
each Node a /24, its `spec.podCIDR`. Nothing here picks a node's pod CIDR: the kubelet reads it from its Node
and passes it on to the runtime, and containerd renders the node's CNI config with it then.

Usage rules: `runtime_endpoint` and `containerd_sockets` are what `mkpy crictl --node` and `mkpy image load` use.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import ipaddress
import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import click

from minikube_py.cli.cluster import HOST, Cluster, free_ports, list_clusters
from minikube_py.cli.components import Component, unverified_tls_context
from minikube_py.cli.supervisor import Health, client_tls_context, probe_https

if TYPE_CHECKING:  # imported when needed: `mkpy status` should not load the kubelet's modules
    from minikube_py.kubelet.runtime.containerd import ContainerdLayout

RUNTIME_READY_TIMEOUT = 15.0
KUBELET_READY_TIMEOUT = 20.0
NODES_READY_TIMEOUT = 30.0
CONTROL_PLANE_ROLE = "node-role.kubernetes.io/control-plane"
UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized"
MAX_SOCKET_PATH = 100  # bytes; a unix socket path holds 107 and containerd appends ".ttrpc"
SHORT_SOCKET_ROOT = Path("/run/mkpy")
MEMORY_ROOT = Path("/dev/shm")  # a tmpfs on Linux: fake-runtime nodes keep their kubelet's files there


@dataclass
class Node:
    name: str
    runtime: str  # "containerd" or "fake"
    kubelet_port: int
    healthz_port: int
    simulated: bool = False


@dataclass
class NodeSet:
    cluster_cidr: str
    nodes: list[Node] = field(default_factory=list)

    def find(self, name: str) -> Node | None:
        return next((node for node in self.nodes if node.name == name), None)


def load(cluster: Cluster) -> NodeSet | None:
    # fields no longer kept are ignored: older versions also planned each node's pod CIDR here
    known = {f.name for f in fields(Node)}
    try:
        state = json.loads((cluster.dir / "nodes.json").read_text())
        return NodeSet(state["cluster_cidr"],
                       [Node(**{key: value for key, value in node.items() if key in known}) for node in state["nodes"]])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(cluster: Cluster, nodes: NodeSet) -> None:
    temporary = cluster.dir / ".nodes.json.tmp"
    temporary.write_text(json.dumps({"cluster_cidr": nodes.cluster_cidr,
                                     "nodes": [asdict(node) for node in nodes.nodes]}, indent=2) + "\n")
    os.replace(temporary, cluster.dir / "nodes.json")


def plan(cluster: Cluster, count: int | None, simulated: int | None) -> tuple[NodeSet, str]:
    """The cluster's nodes after adding what `count` real and `simulated` fake nodes need (None: as many as
    it has, and one real node for a new cluster); also which runtime new real nodes get and why."""
    from minikube_py.kubelet.runtime import containerd

    existing = load(cluster)
    nodes = existing or NodeSet(_choose_cluster_cidr(cluster))
    count = count if count is not None else (0 if existing else 1)
    simulated = simulated or 0
    can_run, why = containerd.available()
    runtime = "containerd" if can_run else "fake"
    taken_ports = {port for node in nodes.nodes for port in (node.kubelet_port, node.healthz_port)}
    # A node terminated in the cloud (`mkpy cloud instance terminate`) leaves a gap: new nodes take the first
    # free names, never a name still in use.

    def add_up_to(wanted: int, is_simulated: bool, node_runtime: str) -> None:
        names = {node.name for node in nodes.nodes}
        have = sum(1 for node in nodes.nodes if node.simulated == is_simulated)
        for number in itertools.count(1):
            if have >= wanted:
                return
            name = (f"{cluster.name}-sim-{number:03d}" if is_simulated else
                    cluster.name if number == 1 else f"{cluster.name}-m{number:02d}")
            if name in names:
                continue
            kubelet_port, healthz_port = _free_ports(2, taken_ports)
            taken_ports.update((kubelet_port, healthz_port))
            nodes.nodes.append(Node(name, node_runtime, kubelet_port, healthz_port, is_simulated))
            have += 1

    add_up_to(count, False, runtime)
    add_up_to(simulated, True, "fake")
    save(cluster, nodes)
    return nodes, why


def node_dir(cluster: Cluster, node: Node) -> Path:
    return cluster.dir / "nodes" / node.name


def kubelet_root_dir(cluster: Cluster, node: Node) -> Path:
    """The node's kubelet `--root-dir` (pods' volumes, container logs). A fake-runtime node keeps it in memory
    when MEMORY_ROOT is a tmpfs: no process ever reads its files, and writing a pod's projected token volume
    on this machine's disk costs ~2-4 ms of CPU (a dozen directories, files and symlinks) against ~0.3 ms in
    memory; with a hundred simulated nodes starting pods that was a third of their process's CPU. (kube keeps
    secret and projected volumes in a tmpfs on every node.)"""
    if node.runtime == "fake" and _is_tmpfs(MEMORY_ROOT):
        return _memory_dir(cluster) / node.name / "kubelet"
    return node_dir(cluster, node) / "kubelet"


def _memory_dir(cluster: Cluster) -> Path:
    return MEMORY_ROOT / "mkpy" / _cluster_id(cluster)


@functools.cache  # asked once per node by `mkpy up` and `mkpy delete`; the mounts do not change meanwhile
def _is_tmpfs(path: Path) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    return any(line.split()[1:3] == [str(path), "tmpfs"] for line in mounts) and os.access(path, os.W_OK)


def socket_dir(cluster: Cluster, node: Node) -> Path:
    """Where the node's runtime socket lives: in the node's directory when that path is short enough, else
    under /run/mkpy (root) or the temp directory, in a directory named by a hash of the cluster's."""
    local = node_dir(cluster, node)
    if len(str(local / "containerd.sock.ttrpc")) <= MAX_SOCKET_PATH:
        return local
    root = SHORT_SOCKET_ROOT if os.geteuid() == 0 else Path(os.environ.get("TMPDIR", "/tmp")) / "mkpy"
    return root / _cluster_id(cluster) / node.name


def runtime_socket(cluster: Cluster, node: Node) -> Path:
    return socket_dir(cluster, node) / ("containerd.sock" if node.runtime == "containerd" else "fake-cri.sock")


def runtime_endpoint(cluster_name: str, node_name: str) -> str:
    """The CRI endpoint of a node of a cluster (`mkpy crictl --node`); a one-line error for an unknown one."""
    cluster = Cluster.load(cluster_name)
    nodes = load(cluster)
    node = nodes.find(node_name) if nodes else None
    if node is None:
        known = ", ".join(n.name for n in nodes.nodes) if nodes else "none"
        raise click.ClickException(f'cluster "{cluster_name}" has no node "{node_name}" (nodes: {known})')
    return f"unix://{runtime_socket(cluster, node)}"


def containerd_sockets(cluster_name: str) -> dict[str, str]:
    """{node name: containerd socket} for the cluster's containerd nodes (`mkpy image load`)."""
    cluster = Cluster.load(cluster_name)
    nodes = load(cluster)
    return {node.name: str(runtime_socket(cluster, node))
            for node in (nodes.nodes if nodes else []) if node.runtime == "containerd"}


def bridge_name(cluster: Cluster, node: Node) -> str:
    """The node's CNI bridge: `mk` and a hash of the cluster's id and the node's name, unique on the host and
    stable across `mkpy down`/`up` (the rendered CNI config names it), 13 characters (a Linux interface name
    holds 15)."""
    return "mk" + hashlib.sha256(f"{_cluster_id(cluster)}/{node.name}".encode()).hexdigest()[:11]


def cgroup_root(cluster: Cluster, node: Node) -> str:
    """The node's cgroup: containerd runs in `<it>/containerd` and each pod in `<it>/pod<uid>`."""
    return f"/mkpy-{_cluster_id(cluster)}/{node.name}"


def _cluster_id(cluster: Cluster) -> str:
    """Short and unique per cluster directory (two homes may both have a cluster "mkpy")."""
    return hashlib.sha256(str(cluster.dir).encode()).hexdigest()[:10]


def prepare_containerd(cluster: Cluster, nodes: NodeSet, node: Node) -> None:
    """Config, CNI network template and host routing for a containerd node; the built-in images are built
    (cached)."""
    from minikube_py.kubelet.images.builtin import PAUSE_IMAGE, builtin_images
    from minikube_py.kubelet.runtime import containerd

    layout = containerd_layout(cluster, node)
    layout.socket.parent.mkdir(parents=True, exist_ok=True)
    containerd.write_config(layout, bridge_name(cluster, node), cgroup_root(cluster, node), PAUSE_IMAGE)
    containerd.ensure_host_network(nodes.cluster_cidr)
    builtin_images(images_cache(cluster))


def import_builtin_images(cluster: Cluster, node: Node) -> None:
    """Import the pause and busybox images into the node's containerd unless it has them."""
    from minikube_py.kubelet.cri.client import RuntimeClient
    from minikube_py.kubelet.images.builtin import BUSYBOX_IMAGE, PAUSE_IMAGE, builtin_images
    from minikube_py.kubelet.images.importer import import_image

    socket_path = runtime_socket(cluster, node)

    async def missing() -> list[str]:
        async with RuntimeClient(str(socket_path), timeout=5.0) as runtime:
            return [image for image in (PAUSE_IMAGE, BUSYBOX_IMAGE) if await runtime.image_status(image) is None]

    if asyncio.run(missing()):
        for archive in builtin_images(images_cache(cluster)):
            import_image(socket_path, archive)


def images_cache(cluster: Cluster) -> Path:
    return cluster.dir.parent / ".images"


def containerd_layout(cluster: Cluster, node: Node) -> ContainerdLayout:
    from minikube_py.kubelet.runtime.containerd import ContainerdLayout

    return ContainerdLayout(node_dir(cluster, node) / "containerd", socket_dir=socket_dir(cluster, node))


def runtime_argv(cluster: Cluster, node: Node) -> list[str]:
    if node.runtime == "containerd":
        from minikube_py.kubelet.runtime.containerd import containerd_argv

        # containerd's own flags do not name the cluster directory; the config path does.
        return containerd_argv(containerd_layout(cluster, node))
    return [sys.executable, "-m", "minikube_py.cli.main", "fake-cri", f"--listen={runtime_socket(cluster, node)}",
            f"--node-name={node.name}"]


def kubelet_argv(cluster: Cluster, node: Node) -> list[str]:
    ca_file, _ = cluster.cert_files("ca")
    cert_file, key_file = cluster.cert_files(f"kubelet-{node.name}-serving")
    argv = [sys.executable, "-m", "minikube_py.cli.main", "kubelet",
            f"--kubeconfig={cluster.component_kubeconfig(f'kubelet-{node.name}')}",
            f"--hostname-override={node.name}",
            f"--container-runtime-endpoint=unix://{runtime_socket(cluster, node)}",
            f"--root-dir={kubelet_root_dir(cluster, node)}", f"--node-ip={HOST}",
            f"--port={node.kubelet_port}", f"--healthz-port={node.healthz_port}",
            f"--tls-cert-file={cert_file}", f"--tls-private-key-file={key_file}", f"--client-ca-file={ca_file}",
            "--cloud-provider=external"]  # the cloud-controller-manager initializes the Node (docs/ccm.md)
    if node.runtime == "containerd":
        argv.append(f"--cgroup-root={cgroup_root(cluster, node)}")
    return argv


def probe_runtime(cluster: Cluster, node: Node) -> Health:
    """Whether the runtime answers CRI's Version (containerd opens its socket before CRI is initialised)."""
    from minikube_py.kubelet.cri.client import RuntimeClient
    from minikube_py.kubelet.cri.errors import CRIError

    async def version() -> str:
        async with RuntimeClient(str(runtime_socket(cluster, node)), timeout=1.0) as runtime:
            answer = await runtime.version()
            return f"{answer.runtime_name} {answer.runtime_version}"

    try:
        return Health(True, f"healthy ({asyncio.run(version())})")
    except CRIError as error:
        return Health(False, f"not ready: {error.message}")


def _choose_cluster_cidr(cluster: Cluster) -> str:
    """10.<x>.0.0/16 with x in 200..254, unused by the other clusters and by the host's routes; x derived from
    the cluster directory first, so clusters in different homes rarely pick the same one."""
    used = {nodes.cluster_cidr for other in list_clusters() if other.dir != cluster.dir
            if (nodes := load(other)) is not None}
    routes = _host_routes()
    start = int(hashlib.sha256(str(cluster.dir).encode()).hexdigest(), 16) % 55
    for offset in range(55):
        cidr = f"10.{200 + (start + offset) % 55}.0.0/16"
        network = ipaddress.ip_network(cidr)
        if cidr not in used and not any(network.overlaps(route) for route in routes):
            return cidr
    raise click.ClickException("no free 10.x.0.0/16 pod network left for this cluster (x = 200..254)")


def _host_routes() -> list[ipaddress.IPv4Network]:
    routes = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/route").read_text().splitlines()[1:]:
            fields = line.split()
            destination, mask = int(fields[1], 16), int(fields[7], 16)
            if destination == 0:
                continue
            address = ipaddress.IPv4Address(destination.to_bytes(4, "little"))
            prefix = bin(mask).count("1")
            routes.append(ipaddress.ip_network(f"{address}/{prefix}", strict=False))
    return routes


def _free_ports(count: int, taken: set[int]) -> list[int]:
    """Ports for a new node's kubelet, unused by any cluster in this home and free right now."""
    taken = set(taken)
    for other in list_clusters():
        taken.update(asdict(other.ports).values())
        nodes = load(other)
        for node in nodes.nodes if nodes else []:
            taken.update((node.kubelet_port, node.healthz_port))
    return free_ports(count, taken)


def components(cluster: Cluster, nodes: NodeSet, leave_out: Collection[str] = ()) -> list[Component]:
    """Each node's runtime, then its kubelet, in start order (but none for the real nodes named in `leave_out`);
    then one process for all simulated nodes."""
    result = []
    simulated = [node for node in nodes.nodes if node.simulated]
    for node in nodes.nodes:
        if node.simulated or node.name in leave_out:
            continue
        socket_path = runtime_socket(cluster, node)
        outside = not str(socket_path).startswith(str(cluster.dir))
        if node.runtime == "containerd":
            result.append(Component(
                name=f"containerd-{node.name}", address=f"unix://{socket_path}", ports={},
                ready_timeout=RUNTIME_READY_TIMEOUT, argv=functools.partial(_prepared_containerd_argv, cluster, nodes, node),
                probe=functools.partial(probe_runtime, cluster, node),
                after_start=functools.partial(import_builtin_images, cluster, node)))
        else:
            result.append(Component(
                name=f"fake-cri-{node.name}", address=f"unix://{socket_path}", ports={},
                ready_timeout=RUNTIME_READY_TIMEOUT, argv=functools.partial(runtime_argv, cluster, node),
                probe=functools.partial(probe_runtime, cluster, node), marker=str(socket_path) if outside else ""))
        result.append(Component(
            name=f"kubelet-{node.name}", address=f"https://{HOST}:{node.kubelet_port}",
            ports={"kubelet": node.kubelet_port, "kubelet healthz": node.healthz_port},
            ready_timeout=KUBELET_READY_TIMEOUT, argv=functools.partial(kubelet_argv, cluster, node),
            probe=functools.partial(probe_https, HOST, node.healthz_port, "/healthz", unverified_tls_context())))
    if simulated:
        result.append(Component(
            name="simulated-nodes", address=f"{len(simulated)} nodes, {simulated[0].name} ...", ports={},
            ready_timeout=RUNTIME_READY_TIMEOUT + len(simulated) * 0.05,
            argv=functools.partial(_hollow_nodes_argv, cluster, simulated),
            probe=functools.partial(probe_runtime, cluster, simulated[-1])))
    return result


def simulated_nodes_changed(cluster: Cluster, nodes: NodeSet) -> bool:
    """Whether the running simulated-nodes process serves a different node list than `nodes` plans (then it
    must be restarted to pick up the new nodes)."""
    try:
        running = [entry["name"] for entry in json.loads((cluster.dir / "nodes" / "simulated.json").read_text())["nodes"]]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return running != [node.name for node in nodes.nodes if node.simulated]


def _hollow_nodes_argv(cluster: Cluster, simulated: list[Node]) -> list[str]:
    """Write the simulated nodes' list (kubelet/hollow.py reads it) and the command that runs them all."""
    path = cluster.dir / "nodes" / "simulated.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"name": node.name, "kubeconfig": str(cluster.component_kubeconfig(f"kubelet-{node.name}")),
                "socket": str(runtime_socket(cluster, node)), "root_dir": str(kubelet_root_dir(cluster, node)),
                "cloud_provider": "external"}
               for node in simulated]
    path.write_text(json.dumps({"nodes": entries}, indent=2) + "\n")
    return [sys.executable, "-m", "minikube_py.cli.main", "hollow-nodes", f"--config={path}"]


def _prepared_containerd_argv(cluster: Cluster, nodes: NodeSet, node: Node) -> list[str]:
    prepare_containerd(cluster, nodes, node)
    return runtime_argv(cluster, node)


def ensure_identities(cluster: Cluster, nodes: NodeSet) -> None:
    """Each kubelet's client identity (system:node:<node>) and its serving certificate, issued once."""
    from minikube_py.auth import pki
    from minikube_py.cli.lifecycle import ensure_node_identity

    ca = pki.ensure_ca(cluster.pki_dir)
    for node in nodes.nodes:
        ensure_node_identity(cluster, node.name)
        pki.ensure_serving_cert(cluster.pki_dir, ca, f"kubelet-{node.name}-serving",
                                common_name=f"system:node:{node.name}",
                                ip_addresses=[ipaddress.ip_address(HOST)], dns_names=[node.name])


def drain(cluster: Cluster, node: Node) -> int:
    """Stop and remove every pod sandbox of a containerd node (before containerd stops, so no container
    outlives its node); the number removed. A runtime that does not answer is left alone."""
    from minikube_py.kubelet.cri.client import RuntimeClient
    from minikube_py.kubelet.cri.errors import CRIError

    async def remove_all() -> int:
        async with RuntimeClient(str(runtime_socket(cluster, node)), timeout=30.0) as runtime:
            sandboxes = await runtime.list_pod_sandbox()
            for sandbox in sandboxes:
                with contextlib.suppress(CRIError):
                    await runtime.stop_pod_sandbox(sandbox.id)
                    await runtime.remove_pod_sandbox(sandbox.id)
            return len(sandboxes)

    try:
        return asyncio.run(remove_all())
    except CRIError:
        return 0


def remove_node_host_state(cluster: Cluster, node: Node) -> None:
    """What one node leaves outside the cluster directory: its bridge and cgroup (containerd), its short socket
    directory, its kubelet's files in memory (a fake-runtime node); and the CNI config containerd rendered for
    its pod CIDR, which a node coming back under the same name must not inherit (node-ipam may give it another
    CIDR)."""
    from minikube_py.kubelet.runtime import containerd

    if node.runtime == "containerd":
        containerd.remove_network_config(containerd_layout(cluster, node))
        with contextlib.suppress(OSError, RuntimeError):
            containerd.remove_bridge(bridge_name(cluster, node))
        with contextlib.suppress(OSError):
            containerd.remove_cgroup_tree(cgroup_root(cluster, node))
    for outside in (socket_dir(cluster, node), kubelet_root_dir(cluster, node).parent):
        if outside != node_dir(cluster, node):
            shutil.rmtree(outside, ignore_errors=True)


def remove_host_state(cluster: Cluster) -> None:
    """What nodes leave outside the cluster directory: bridges, cgroups, the NAT rule and sockets (containerd
    nodes), the kubelet files of fake-runtime nodes in memory."""
    from minikube_py.kubelet.runtime import containerd

    nodes = load(cluster)
    if nodes is None:
        return
    for node in nodes.nodes:
        remove_node_host_state(cluster, node)
    shutil.rmtree(_memory_dir(cluster), ignore_errors=True)
    with contextlib.suppress(OSError):  # the last cluster's
        _memory_dir(cluster).parent.rmdir()
    if any(node.runtime == "containerd" for node in nodes.nodes):
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            containerd.remove_host_network(nodes.cluster_cidr)
    with contextlib.suppress(OSError):
        containerd.remove_cgroup_tree(f"/mkpy-{_cluster_id(cluster)}")


def wait_ready_and_label(cluster: Cluster, nodes: NodeSet, timeout: float = NODES_READY_TIMEOUT, *,
                         initialized: bool = True) -> list[str]:
    """Wait until every node's Node object says Ready (and, with `initialized`, the cloud controller manager
    has removed its `node.cloudprovider.kubernetes.io/uninitialized` taint), and give the first node the
    control-plane role label (as minikube and kind do; a kubelet may not set `node-role.kubernetes.io/*`
    itself). The nodes that are still not ready when `timeout` runs out."""
    import httpx

    ca_file, _ = cluster.cert_files("ca")
    cert_file, key_file = cluster.cert_files("admin")
    wanted = {node.name for node in nodes.nodes}
    deadline = time.monotonic() + timeout
    tls = client_tls_context(ca_file, cert_file, key_file)
    with httpx.Client(base_url=cluster.apiserver_url, verify=tls, timeout=5.0) as api:
        while True:
            listed = api.get("/api/v1/nodes")
            items = listed.json().get("items", []) if listed.status_code == 200 else []
            ready = {n["metadata"]["name"] for n in items
                     if any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in (n.get("status") or {}).get("conditions") or [])
                     and not (initialized and any(t.get("key") == UNINITIALIZED_TAINT
                                                  for t in (n.get("spec") or {}).get("taints") or []))}
            if wanted <= ready or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        first = next((node for node in nodes.nodes if not node.simulated), None)
        if first is not None and first.name in ready:
            api.patch(f"/api/v1/nodes/{first.name}", json={"metadata": {"labels": {CONTROL_PLANE_ROLE: ""}}},
                      headers={"Content-Type": "application/merge-patch+json"})
    return sorted(wanted - ready)

"""`mkpy up`, `mkpy down`, `mkpy delete`: a cluster's lifecycle.

`up` is the supervisor of DESIGN.md: it creates the cluster directory on first use, makes sure the PKI and
kubeconfigs exist, starts every component of `components.control_plane` that is not running (in order,
each only once the previous one is healthy), waits for the apiserver's /readyz and exits, leaving the
components running detached. Running `up` on a running cluster only says so. `down` stops the processes
and keeps the directory (etcd's data included), so the next `up` resumes the same cluster with the same
objects, ports and credentials. `delete` also removes the directory and our kubeconfig entries.

Usage rules: `up` has a 3 s budget from command to ready apiserver, so it does nothing slow: keys are
generated only on the first up (or when a certificate must be reissued), health is polled every 20 ms,
and the apiserver is started only after etcd answers, so it never begins with a failing connection.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import click
from rich.console import Console

from minikube_py.apiserver.options import ServerOptions
from minikube_py.auth import pki
from minikube_py.ccm.cloud.local.instances import STOPPED
from minikube_py.cli import cloud, kubeconfig, nodes
from minikube_py.cli.cluster import (
    DEFAULT_NAME,
    Cluster,
    cluster_lock,
    context_name,
    mkpy_home,
    name_option,
    port_in_use,
)
from minikube_py.cli.components import (
    COMPONENT_NAMES,
    CORE_COMPONENTS,
    Component,
    control_plane,
    host_address,
)
from minikube_py.cli.supervisor import Supervised

EXTRA_CONFIG_COMPONENTS = (*COMPONENT_NAMES, "kubelet")
EXTRA_CONFIG_FLAG = re.compile(r"[a-z0-9][a-z0-9-]*")
ADMIN_USER = "kubernetes-admin"
ADMIN_GROUPS = ("system:masters",)
APISERVER_KUBELET_CLIENT = "kube-apiserver-kubelet-client"
# Each control-plane component's own identity, as kubeadm issues them (certificate/kubeconfig name, user);
# none is in a group: RBAC's bootstrap bindings name these users. Kubelets get one per node
# (`ensure_node_identity`).
COMPONENT_IDENTITIES = (
    ("controller-manager", "system:kube-controller-manager"),
    ("scheduler", "system:kube-scheduler"),
    ("cloud-controller-manager", "system:cloud-controller-manager"),
)


def _parse_extra_config(ctx: click.Context, param: click.Parameter,
                        values: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """`kcm.node-monitor-grace-period=10s` ... as {"kcm": {"node-monitor-grace-period": "10s"}} (minikube's flag)."""
    parsed: dict[str, dict[str, str]] = {}
    for value in values:
        target, equals, flag_value = value.partition("=")
        component, dot, flag = target.partition(".")
        if not (equals and dot and flag) or not EXTRA_CONFIG_FLAG.fullmatch(flag):
            raise click.BadParameter(f"{value!r} is not COMPONENT.FLAG=VALUE (e.g. kcm.node-monitor-grace-period=10s)")
        if component not in EXTRA_CONFIG_COMPONENTS:
            raise click.BadParameter(f"{value!r}: unknown component {component!r}; one of "
                                     f"{', '.join(EXTRA_CONFIG_COMPONENTS)}")
        parsed.setdefault(component, {})[flag] = flag_value
    return parsed


@click.command()
@name_option
@click.option("--no-switch-context", is_flag=True, help="Leave kubectl's current context as it is.")
@click.option("--without", multiple=True, metavar="COMPONENT",
              type=click.Choice([c for c in COMPONENT_NAMES if c not in CORE_COMPONENTS]),
              help="Run the cluster without this component (stopping it if it runs), e.g. to schedule pods by "
                   "hand. Repeatable.")
@click.option("--nodes", "node_count", type=click.IntRange(0, 50), default=None,
              help="Nodes with a real containerd (or the fake runtime where containerd cannot run); 0 for a "
                   "control plane alone. [default: 1 for a new cluster] A cluster keeps the nodes it has: "
                   "this only adds.")
@click.option("--simulated-nodes", type=click.IntRange(0, 1000), default=None,
              help="Nodes on the fake CRI runtime (containers without processes), for scale labs. [default: 0]")
@click.option("--extra-config", multiple=True, metavar="COMPONENT.FLAG=VALUE", callback=_parse_extra_config,
              help="A flag for a component (etcd, apiserver, kcm, ccm, scheduler, kubelet: every real node's), "
                   "e.g. kcm.node-monitor-grace-period=10s; kept for the cluster's later starts, and used when "
                   "the component next starts. Repeatable.")
def up(name: str, no_switch_context: bool, without: tuple[str, ...], node_count: int | None,
       simulated_nodes: int | None, extra_config: dict[str, dict[str, str]]) -> None:
    """Start a cluster (creating it on first use) and wait until its apiserver and nodes are ready."""
    started = time.monotonic()
    console = Console(highlight=False, soft_wrap=True)
    cluster = Cluster.create_or_load(name)
    with cluster_lock(cluster.dir):
        if extra_config:
            for component, flags in extra_config.items():
                cluster.extra_config.setdefault(component, {}).update(flags)
            cluster.save()
        advertise_address = host_address()
        node_set, runtime_reason = nodes.plan(cluster, node_count, simulated_nodes)
        # every node is a VM of the cluster's cloud; one stopped in the cloud console stays down
        stopped = {name for name, state in cloud.launch(cluster, [node.name for node in node_set.nodes]).items()
                   if state == STOPPED}
        components = [c for c in control_plane(cluster, advertise_address) if c.name not in without]
        components += nodes.components(cluster, node_set, leave_out=stopped)
        was_running = all(component.process(cluster).pid() is not None for component in components)
        if not was_running:
            console.print(f'Starting cluster "{name}" in {cluster.dir}')
            _say_runtimes(console, node_set, runtime_reason)
        _ensure_pki(cluster, advertise_address)
        nodes.ensure_identities(cluster, node_set)
        if nodes.simulated_nodes_changed(cluster, node_set):
            _report_stop(console, "simulated-nodes", Supervised("simulated-nodes", cluster.dir).stop(), quiet=True)
        merged_into = _write_kubeconfigs(console, cluster, switch_context=not no_switch_context)
        bring_up_all(console, cluster, components)
        running = nodes.NodeSet(node_set.cluster_cidr, [n for n in node_set.nodes if n.name not in stopped])
        if running.nodes:
            with console.status(f"Waiting for {len(running.nodes)} node(s) to be Ready"):
                # the CCM removes each new node's uninitialized taint; without it they stay tainted
                not_ready = nodes.wait_ready_and_label(cluster, running, initialized="ccm" not in without)
            if not_ready:
                console.print(f"[yellow]![/] not Ready yet: {', '.join(not_ready)} (see `mkpy logs kubelet-NODE`)")
            else:
                console.print(f"[green]✓[/] {len(running.nodes)} node(s) Ready")
        if stopped:
            console.print(f"  stopped in the cloud, left down: {', '.join(sorted(stopped))} "
                          f"(`mkpy cloud instance start NODE`)")
        _stop_all(console, cluster.dir, only=without, quiet=True)
    if was_running:
        console.print(f'[green]✓[/] cluster "{name}" is already running at {cluster.apiserver_url}')
    else:
        elapsed = time.monotonic() - started
        console.print(f'[green]✓[/] cluster "{name}" is ready in {elapsed:.1f}s')
    _print_usage(console, cluster, merged_into, switched=not no_switch_context)


@click.command()
@name_option
def down(name: str) -> None:
    """Stop a cluster's processes; its data stays for the next `mkpy up`."""
    console = Console(highlight=False, soft_wrap=True)
    cluster = Cluster.load(name)
    with cluster_lock(cluster.dir):
        _stop_all(console, cluster.dir)
    again = "mkpy up" + ("" if name == DEFAULT_NAME else f" --name {name}")
    console.print(f'cluster "{name}" is stopped; its data is kept in {cluster.dir} (`{again}` resumes it)')


@click.command()
@name_option
def delete(name: str) -> None:
    """Stop a cluster and remove its directory and kubeconfig entries."""
    console = Console(highlight=False, soft_wrap=True)
    cluster = Cluster.find(name)
    # Stopping works from the pidfiles alone, so even a directory with a broken cluster.json can be deleted.
    cluster_dir = mkpy_home() / name
    if cluster_dir.is_dir():
        with cluster_lock(cluster_dir):
            _stop_all(console, cluster_dir)
            if cluster is not None:
                nodes.remove_host_state(cluster)
            shutil.rmtree(cluster_dir)
        console.print(f'[green]✓[/] deleted cluster "{name}" ({cluster_dir})')
    else:
        console.print(f'cluster "{name}" does not exist; nothing to delete')
    targets = {kubeconfig.user_kubeconfig_path(mkpy_home())}
    if cluster is not None and cluster.kubeconfig_merged_into:
        targets.add(Path(cluster.kubeconfig_merged_into))
    for target in sorted(targets):
        try:
            if kubeconfig.remove(target, context_name(name)):
                console.print(f"[green]✓[/] removed context {context_name(name)} from {target}")
        except kubeconfig.KubeconfigError as err:
            console.print(f"[yellow]![/] {err}")


def _ensure_pki(cluster: Cluster, advertise_address: str) -> None:
    """The CA, the apiserver's serving certificate, the admin's and every component's client certificate
    (with its kubeconfig) and the service-account key pair, all reused when valid."""
    ca = pki.ensure_ca(cluster.pki_dir)
    ips, dns_names = pki.apiserver_sans(advertise_address, ServerOptions().service_cluster_ip_range)
    pki.ensure_serving_cert(cluster.pki_dir, ca, "apiserver", common_name="kube-apiserver",
                            ip_addresses=ips, dns_names=dns_names)
    pki.ensure_client_cert(cluster.pki_dir, ca, "admin", user=ADMIN_USER, groups=ADMIN_GROUPS)
    # How the apiserver proves itself to kubelets (logs, exec, port-forward): RBAC binds this user to
    # system:kubelet-api-admin, as kubeadm does.
    pki.ensure_client_cert(cluster.pki_dir, ca, "apiserver-kubelet-client", user=APISERVER_KUBELET_CLIENT)
    for component, user in COMPONENT_IDENTITIES:
        _write_identity(cluster, component, pki.ensure_client_cert(cluster.pki_dir, ca, component, user=user))
    pki.ensure_service_account_key(cluster.pki_dir)


def ensure_node_identity(cluster: Cluster, node_name: str) -> Path:
    """The kubeconfig of node `node_name`'s kubelet (`system:node:<name>` in `system:nodes`), issued by the
    cluster CA on first use; what node creation hands to each kubelet."""
    ca = pki.ensure_ca(cluster.pki_dir)
    pair = pki.ensure_node_client_cert(cluster.pki_dir, ca, node_name)
    return _write_identity(cluster, f"kubelet-{node_name}", pair)


def _write_identity(cluster: Cluster, component: str, pair: pki.KeyPair) -> Path:
    """Write `kubeconfigs/<component>.conf` for `pair` (rewritten on every up, as the admin's is, so it
    follows a reissued certificate)."""
    ca_file, _ = cluster.cert_files("ca")
    config = kubeconfig.standalone(cluster.context_name, cluster.apiserver_url, ca_file.read_bytes(),
                                   pair.cert_path.read_bytes(), pair.key_path.read_bytes())
    path = cluster.component_kubeconfig(component)
    kubeconfig.write(path, config)
    return path


def _write_kubeconfigs(console: Console, cluster: Cluster, *, switch_context: bool) -> Path | None:
    """Write the standalone kubeconfig and merge it into the user's; the file merged into, if any."""
    ca_file, _ = cluster.cert_files("ca")
    cert_file, key_file = cluster.cert_files("admin")
    config = kubeconfig.standalone(cluster.context_name, cluster.apiserver_url, ca_file.read_bytes(),
                                   cert_file.read_bytes(), key_file.read_bytes())
    kubeconfig.write(cluster.kubeconfig_path, config)
    target = kubeconfig.user_kubeconfig_path(mkpy_home())
    try:
        kubeconfig.merge(target, config, switch_context=switch_context)
    except kubeconfig.KubeconfigError as err:
        # The cluster is still usable through the standalone kubeconfig; say so instead of failing.
        console.print(f"[yellow]![/] {err}; use KUBECONFIG={cluster.kubeconfig_path} instead")
        return None
    if cluster.kubeconfig_merged_into != str(target):
        cluster.kubeconfig_merged_into = str(target)
        cluster.save()
    return target


def bring_up_all(console: Console, cluster: Cluster, components: list[Component]) -> None:
    """Bring up `components` in order; neighbours that wait only for the same component (brought up before
    them) start together, and then each is waited for."""
    waves: list[list[Component]] = []
    for component in components:
        if component.waits_only_for and waves and waves[-1][0].waits_only_for == component.waits_only_for:
            waves[-1].append(component)
        else:
            waves.append([component])
    for wave in waves:
        started = []
        for component in wave:
            began = time.monotonic()
            started.append((component, _start(cluster, component), began))
        for component, process, began in started:
            _wait_healthy(console, cluster, component, process, began)


def bring_up(console: Console, cluster: Cluster, component: Component) -> None:
    """Start `component` unless it runs already, then wait until its probe says healthy."""
    began = time.monotonic()
    _wait_healthy(console, cluster, component, _start(cluster, component), began)


def _start(cluster: Cluster, component: Component) -> subprocess.Popen[bytes] | None:
    """Start `component`'s process, unless it runs already (then None)."""
    supervised = component.process(cluster)
    if supervised.pid() is not None:
        return None
    for what, port in component.ports.items():
        if port_in_use(port):
            raise click.ClickException(
                f"port {port} ({what}) on 127.0.0.1 is in use by another process; stop that process, or "
                f"`mkpy delete --name {cluster.name}` and `mkpy up` again to get new ports")
    return supervised.start(component.argv() + cluster.extra_args(component.name))


def _wait_healthy(console: Console, cluster: Cluster, component: Component,
                  process: subprocess.Popen[bytes] | None, began: float) -> None:
    with console.status(f"Waiting for {component.name} at {component.address}"):
        component.process(cluster).wait_healthy(component.probe, component.ready_timeout, process)
        if component.after_start is not None:
            component.after_start()
    if process is None:
        console.print(f"[green]✓[/] {component.name:<10} running at {component.address}")
    else:
        took = time.monotonic() - began
        console.print(f"[green]✓[/] {component.name:<10} ready at {component.address} ({took:.2f}s)")


def _say_runtimes(console: Console, node_set: nodes.NodeSet, reason: str) -> None:
    real = [node for node in node_set.nodes if not node.simulated]
    if real:
        runtime = real[0].runtime
        console.print(f"  {len(real)} node(s) on {runtime}" + ("" if runtime == "containerd" else f" ({reason})"))
    simulated = len(node_set.nodes) - len(real)
    if simulated:
        console.print(f"  {simulated} simulated node(s) on the fake CRI runtime")


def _stop_all(console: Console, cluster_dir: Path, only: tuple[str, ...] | None = None,
              quiet: bool = False) -> None:
    """Stop the nodes (kubelets, then runtimes: a containerd node's pods first), then the control plane in
    reverse start order; `only` limits it to those control-plane components."""
    cluster = Cluster.find(cluster_dir.name) if only is None else None
    if cluster is not None and cluster.dir == cluster_dir:
        node_set = nodes.load(cluster)
        node_components = nodes.components(cluster, node_set) if node_set else []
        for component in [c for c in node_components if c.name.startswith("kubelet-")] + \
                [c for c in node_components if not c.name.startswith("kubelet-")]:
            supervised = component.process(cluster)
            if component.name.startswith("containerd-") and supervised.pid() is not None and node_set:
                node = node_set.find(component.name.removeprefix("containerd-"))
                if node is not None:
                    nodes.drain(cluster, node)
            _report_stop(console, component.name, supervised.stop(), quiet)
    for name in reversed(COMPONENT_NAMES):
        if only is not None and name not in only:
            continue
        _report_stop(console, name, Supervised(name, cluster_dir).stop(), quiet)


def _report_stop(console: Console, name: str, pid: int | None, quiet: bool) -> None:
    if pid is None:
        if not quiet:
            console.print(f"  {name:<10} was not running")
    else:
        console.print(f"[green]✓[/] {name:<10} stopped (pid {pid})")


def _print_usage(console: Console, cluster: Cluster, merged_into: Path | None, *, switched: bool) -> None:
    console.print()
    if merged_into is not None and switched:
        console.print(f"kubectl now uses context {cluster.context_name} (in {merged_into}). Try:")
        console.print("  kubectl get namespaces")
    elif merged_into is not None:
        console.print(f"Context {cluster.context_name} is in {merged_into}. Try:")
        console.print(f"  kubectl --context {cluster.context_name} get namespaces")
    console.print("Or, with a kubeconfig for this cluster alone:")
    console.print(f"  export KUBECONFIG={cluster.kubeconfig_path}")

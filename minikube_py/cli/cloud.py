"""`mkpy cloud`: the console of the local cloud, the cloud the cluster's cloud-controller-manager talks to.

Reading, from the cloud's state file (what the cloud thinks, whatever the Kubernetes objects say):

    mkpy cloud instances      NAME  PROVIDER-ID  TYPE  ZONE  REGION  STATE   (one VM per node)
    mkpy cloud lbs            NAME  SERVICE  ADDRESS  PORTS  BACKENDS        (one per LoadBalancer Service)
    mkpy cloud routes         NAME  NODE  CIDR                               (with --configure-cloud-routes)

Acting, as a cloud console acts on a VM:

    mkpy cloud instance stop NODE        shut the VM down: its pods' containers go, then its kubelet and its
                                         container runtime stop, so the kubelet stops answering and posting
                                         status, as on a powered-off machine
    mkpy cloud instance start NODE       boot it again: runtime, then kubelet, each waited for
    mkpy cloud instance terminate NODE   shut it down for good: the VM is "terminated" and the node leaves
                                         the cluster's node list, so `mkpy up` never starts it again

The cloud only changes the VM; reacting is the CCM's job: the cloud-node-lifecycle controller taints a stopped
VM's NotReady node `node.cloudprovider.kubernetes.io/shutdown` and deletes a terminated VM's node.

Where things live: `<cluster>/cloud/cloud-config.yaml` (the CCM's `--cloud-config`, written by `mkpy up` with
`write_cloud_config`) and `<cluster>/cloud/state.json` (the cloud's state, see ccm/cloud/local/state.py).
Usage rules: instance actions hold the cluster's lock, as up and down do; every mistake (unknown cluster or
node, stopping a stopped VM, starting a terminated one, a simulated node) is one line and a non-zero exit.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from minikube_py.ccm.cloud.interface import InvalidCloudConfig
from minikube_py.ccm.cloud.local import config as cloud_config
from minikube_py.ccm.cloud.local.instances import RUNNING, STOPPED, TERMINATED, launch_instances
from minikube_py.ccm.cloud.local.state import CloudStateError, CloudStateStore, State
from minikube_py.cli import nodes
from minikube_py.cli.cluster import Cluster, cluster_lock, list_clusters, name_option
from minikube_py.cli.components import Component

LOAD_BALANCER_NETWORKS = 100 * 256  # 127.<100..199>.<0..255>.0/24, one per cluster


def cloud_config_path(cluster: Cluster) -> Path:
    return cluster.dir / "cloud" / "cloud-config.yaml"


def state_path(cluster: Cluster) -> Path:
    return cluster.dir / "cloud" / "state.json"


def write_cloud_config(cluster: Cluster) -> Path:
    """The cluster's cloud config, written on first use (later edits, e.g. of `zones`, are kept)."""
    path = cloud_config_path(cluster)
    if not path.exists():
        config = cloud_config.LocalCloudConfig(cluster_name=cluster.name, state_file=state_path(cluster),
                                               load_balancer_cidr=_choose_load_balancer_cidr(cluster))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(cloud_config.render(config), encoding="utf-8")
    return path


def _choose_load_balancer_cidr(cluster: Cluster) -> ipaddress.IPv4Network:
    """127.<100..199>.<y>.0/24, unused by the other clusters' clouds, derived first from the cluster directory
    (as the pod network is), so clusters in different homes rarely pick the same one."""
    used = set()
    for other in list_clusters():
        with contextlib.suppress(OSError, InvalidCloudConfig):
            used.add(cloud_config.parse(cloud_config_path(other).read_text(encoding="utf-8")).load_balancer_cidr)
    start = int(hashlib.sha256(str(cluster.dir).encode()).hexdigest(), 16) % LOAD_BALANCER_NETWORKS
    for offset in range(LOAD_BALANCER_NETWORKS):
        index = (start + offset) % LOAD_BALANCER_NETWORKS
        network = ipaddress.IPv4Network(f"127.{100 + index // 256}.{index % 256}.0/24")
        if network not in used:
            return network
    raise click.ClickException("no free 127.x.y.0/24 load-balancer network left for this cluster")


def launch(cluster: Cluster, node_names: list[str]) -> dict[str, str]:
    """What `mkpy up` does before it starts nodes: every node it plans becomes a VM of the cluster's cloud (the
    ones it has are kept); the state of each VM by node name ("running", "stopped", ...)."""
    with _state_errors():
        try:
            config = cloud_config.parse(write_cloud_config(cluster).read_text(encoding="utf-8"))
        except (OSError, InvalidCloudConfig) as error:
            raise click.ClickException(f"{cloud_config_path(cluster)}: {error}") from None
        store = CloudStateStore(config.state_file)
        launch_instances(config, store, node_names)
        return {name: record["state"] for name, record in store.read()["instances"].items()}


@click.group()
def cloud() -> None:
    """The local cloud's console: its instances, load balancers and routes."""


@cloud.command()
@name_option
def instances(name: str) -> None:
    """List the cloud's VMs (one per node)."""
    records = _read(Cluster.load(name))["instances"]
    _print_table(name, "instances", ("NAME", "PROVIDER-ID", "TYPE", "ZONE", "REGION", "STATE"), [
        (node, r["providerID"], r["instanceType"], r["zone"], r["region"], r["state"])
        for node, r in sorted(records.items())])


@cloud.command()
@name_option
def lbs(name: str) -> None:
    """List the cloud's load balancers (one per LoadBalancer Service)."""
    records = _read(Cluster.load(name))["loadBalancers"]
    _print_table(name, "load balancers", ("NAME", "SERVICE", "ADDRESS", "PORTS", "BACKENDS"), [
        (lb, r["service"], r["address"], ",".join(f"{p['port']}/{p['protocol']}" for p in r["ports"]) or "<none>",
         ",".join(r["backends"]) or "<none>")
        for lb, r in sorted(records.items())])


@cloud.command()
@name_option
def routes(name: str) -> None:
    """List the cloud's routes (one per node's pod CIDR, with `--configure-cloud-routes`)."""
    records = _read(Cluster.load(name))["routes"]
    _print_table(name, "routes", ("NAME", "NODE", "CIDR"), [
        (route, r["targetNode"], r["destinationCIDR"]) for route, r in sorted(records.items())])


@cloud.group()
def instance() -> None:
    """Stop, start or terminate a VM, as a cloud console does."""


@instance.command()
@click.argument("node")
@name_option
def stop(node: str, name: str) -> None:
    """Shut a VM down: its containers, kubelet and container runtime stop."""
    cluster = Cluster.load(name)
    with cluster_lock(cluster.dir):
        _require_state(cluster, node, "stop", RUNNING)
        node_set, member = _real_node(cluster, node, "stopped")
        _power_off(cluster, node_set, member)
        _set_state(cluster, node, STOPPED)
    click.echo(f"instance {node} stopped (its kubelet no longer answers)")


@instance.command()
@click.argument("node")
@name_option
def start(node: str, name: str) -> None:
    """Boot a stopped VM: its container runtime, then its kubelet."""
    cluster = Cluster.load(name)
    with cluster_lock(cluster.dir):
        _require_state(cluster, node, "start", STOPPED)
        node_set, member = _real_node(cluster, node, "started")
        _power_on(cluster, node_set, member)  # first: a failed boot leaves the VM stopped, to start again
        _set_state(cluster, node, RUNNING)
    click.echo(f"instance {node} running")


@instance.command()
@click.argument("node")
@name_option
def terminate(node: str, name: str) -> None:
    """Shut a VM down for good; its node leaves the cluster's node list."""
    cluster = Cluster.load(name)
    with cluster_lock(cluster.dir):
        _require_state(cluster, node, "terminate", RUNNING, STOPPED)
        node_set, member = _real_node(cluster, node, "terminated")
        _power_off(cluster, node_set, member)
        _set_state(cluster, node, TERMINATED)
        nodes.remove_node_host_state(cluster, member)
        node_set.nodes.remove(member)
        nodes.save(cluster, node_set)
    click.echo(f"instance {node} terminated")


def _require_state(cluster: Cluster, node: str, action: str, *allowed: str) -> None:
    records = _read(cluster)["instances"]
    if node not in records:
        known = ", ".join(sorted(records)) or "none"
        raise click.ClickException(f'the cloud of cluster "{cluster.name}" has no instance "{node}" '
                                   f"(instances: {known})")
    state = records[node]["state"]
    if state not in allowed:
        raise click.ClickException(f"cannot {action} instance {node}: it is {state}")


def _real_node(cluster: Cluster, node: str, done: str) -> tuple[nodes.NodeSet, nodes.Node]:
    """The node set and the node behind a VM; one line for a simulated node, which has no processes alone."""
    node_set = nodes.load(cluster)
    member = node_set.find(node) if node_set else None
    if node_set is None or member is None:
        raise click.ClickException(f'node "{node}" is not in cluster "{cluster.name}" ({cluster.dir}/nodes.json)')
    if member.simulated:
        raise click.ClickException(f"{node} is a simulated node: all simulated nodes run in one process "
                                   f"(simulated-nodes), so one cannot be {done} alone")
    return node_set, member


def _node_components(cluster: Cluster, node_set: nodes.NodeSet, node: nodes.Node) -> list[Component]:
    """The node's container runtime and kubelet, in start order."""
    own = {f"containerd-{node.name}", f"fake-cri-{node.name}", f"kubelet-{node.name}"}
    return [component for component in nodes.components(cluster, node_set) if component.name in own]


def _power_off(cluster: Cluster, node_set: nodes.NodeSet, node: nodes.Node) -> None:
    """The kubelet first (it would restart what goes next), then the pods of a containerd node, then the
    runtime: `mkpy down` does the same for every node."""
    for component in reversed(_node_components(cluster, node_set, node)):
        supervised = component.process(cluster)
        if component.name.startswith("containerd-") and supervised.pid() is not None:
            nodes.drain(cluster, node)
        supervised.stop()


def _power_on(cluster: Cluster, node_set: nodes.NodeSet, node: nodes.Node) -> None:
    from rich.console import Console

    from minikube_py.cli.lifecycle import bring_up

    console = Console(highlight=False, soft_wrap=True)
    for component in _node_components(cluster, node_set, node):
        bring_up(console, cluster, component)


def _set_state(cluster: Cluster, node: str, state: str) -> None:
    with _state_errors(), CloudStateStore(state_path(cluster)).edit() as cloud_state:
        cloud_state["instances"][node]["state"] = state


def _read(cluster: Cluster) -> State:
    with _state_errors():
        return CloudStateStore(state_path(cluster)).read()


@contextlib.contextmanager
def _state_errors() -> Iterator[None]:
    try:
        yield
    except CloudStateError as error:
        raise click.ClickException(str(error)) from None


def _print_table(name: str, what: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """kubectl's plain columns (3 spaces after the widest cell), or one line when there are no rows."""
    if not rows:
        click.echo(f'no {what} in the cloud of cluster "{name}"')
        return
    lines = [list(header), *([str(cell) for cell in row] for row in rows)]
    widths = [max(len(line[i]) for line in lines) + 3 for i in range(len(header) - 1)]
    for line in lines:
        click.echo("".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + line[-1])

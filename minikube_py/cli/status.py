"""`mkpy status` and `mkpy list`: what runs, and is it healthy?

`status` shows one cluster's components as a table: pid, whether the process runs, what its health
endpoint says (etcd's /health, the apiserver's /readyz as the admin) and where it serves. `list` shows
every cluster in `$MKPY_HOME` with its state, from pidfiles only (no network calls, so it stays instant).

Usage rules: both are read-only and exit 0 whatever the state (a stopped cluster is a fact, not an error);
only an unknown cluster name is an error.
"""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from minikube_py.cli import nodes
from minikube_py.cli.cluster import Cluster, list_clusters, mkpy_home, name_option
from minikube_py.cli.components import CORE_COMPONENTS, control_plane
from minikube_py.cli.supervisor import Supervised


@click.command()
@name_option
def status(name: str) -> None:
    """Show the health of each component of a cluster."""
    cluster = Cluster.load(name)
    table = Table(title=f'cluster "{name}"  ({cluster.dir})', title_justify="left")
    for column in ("COMPONENT", "PID", "RUNNING", "HEALTH", "ADDRESS"):
        table.add_column(column)
    node_set = nodes.load(cluster)
    for component in control_plane(cluster) + (nodes.components(cluster, node_set) if node_set else []):
        pid = component.process(cluster).pid()
        if pid is None:
            table.add_row(component.name, "-", "[red]no[/]", "-", component.address)
            continue
        health = component.probe()
        colour = "green" if health.ok else "yellow"
        table.add_row(component.name, str(pid), "[green]yes[/]", f"[{colour}]{health.detail}[/]",
                      component.address)
    Console(highlight=False, soft_wrap=True).print(table)


@click.command()
def list_clusters_command() -> None:
    """List the clusters and whether they are running."""
    console = Console(highlight=False, soft_wrap=True)
    clusters = list_clusters()
    if not clusters:
        console.print(f"no clusters in {mkpy_home()}; create one with `mkpy up`")
        return
    table = Table()
    for column in ("NAME", "STATE", "API SERVER", "DIRECTORY"):
        table.add_column(column)
    for cluster in clusters:
        running = sum(Supervised(name, cluster.dir).pid() is not None for name in CORE_COMPONENTS)
        state = ("[green]running[/]" if running == len(CORE_COMPONENTS)
                 else "stopped" if running == 0 else "[yellow]partly running[/]")
        table.add_row(cluster.name, state, cluster.apiserver_url, str(cluster.dir))
    console.print(table)

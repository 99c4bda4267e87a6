"""`mkpy scheduler explain POD`: the scheduler's recorded reasoning about one pod, as tables.

Reads the annotations a scheduler running with `--explain` writes (scheduler/explain.py) and prints one
table of Filter verdicts (a row per node, a column per plugin) and one of weighted scores with each node's
total, then the outcome: the node chosen, or the FailedScheduling message.

Usage rules: read-only; a pod without the annotations gets a one-line hint, not an empty table.
"""

from __future__ import annotations

import asyncio
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from minikube_py.cli.cluster import Cluster
from minikube_py.client import errors, resources
from minikube_py.client.kubeconfig import ConfigError, load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.scheduler.explain import PASSED, read


def show(pod_name: str, namespace: str, cluster_name: str, kubeconfig: str | None) -> None:
    path = kubeconfig or str(Cluster.load(cluster_name).kubeconfig_path)
    try:
        pod = asyncio.run(_get_pod(path, pod_name, namespace))
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    except errors.APIStatusError as error:
        raise click.ClickException(error.message) from None
    recorded = read(pod)
    if recorded is None:
        raise click.ClickException(f'pod "{namespace}/{pod_name}" has no explanation; the scheduler records one '
                                   "only when it runs with --explain (then delete and re-create the pod)")
    filters, scores, outcome = recorded
    console = Console(highlight=False, soft_wrap=True)
    console.print(_filter_table(filters))
    if scores:
        console.print(_score_table(scores, outcome.get("totalScores") or {}))
    for point in ("PreFilter", "PreScore"):
        verdicts = outcome.get(point) or {}
        if verdicts:
            console.print(f"{point}: " + ", ".join(f"{plugin} {verdict}" for plugin, verdict in verdicts.items()))
    if outcome.get("selectedNode"):
        console.print(f"Selected node: [bold]{outcome['selectedNode']}[/] ({outcome.get('feasibleNodes')} feasible "
                      f"of {outcome.get('evaluatedNodes')} evaluated)")
    if outcome.get("failure"):
        console.print(f"[red]Not scheduled:[/] {outcome['failure']}")


async def _get_pod(kubeconfig: str, name: str, namespace: str) -> dict[str, Any]:
    async with RESTClient(load_kubeconfig(kubeconfig)) as client:
        return await client.get(resources.PODS, name, namespace)


def _filter_table(filters: dict[str, dict[str, str]]) -> Table:
    plugins = list(dict.fromkeys(plugin for verdicts in filters.values() for plugin in verdicts))
    table = Table(title="Filter", title_justify="left")
    table.add_column("NODE")
    for plugin in plugins:
        table.add_column(plugin)
    for node, verdicts in sorted(filters.items()):
        cells = []
        for plugin in plugins:
            verdict = verdicts.get(plugin)
            cells.append("" if verdict is None else "[green]✓[/]" if verdict == PASSED else f"[red]{verdict}[/]")
        table.add_row(node, *cells)
    return table


def _score_table(scores: dict[str, dict[str, int]], totals: dict[str, int]) -> Table:
    plugins = list(dict.fromkeys(plugin for values in scores.values() for plugin in values))
    table = Table(title="Score (weighted)", title_justify="left")
    for column in ("NODE", *plugins, "TOTAL"):
        table.add_column(column, justify="left" if column == "NODE" else "right")
    for node in sorted(scores, key=lambda n: -totals.get(n, 0)):
        table.add_row(node, *(str(scores[node].get(p, "")) for p in plugins), str(totals.get(node, "")))
    return table

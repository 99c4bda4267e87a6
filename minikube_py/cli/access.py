"""`mkpy logs`, `mkpy kubeconfig`, `mkpy etcdctl`: ways into a cluster besides kubectl.

* `logs COMPONENT [-f]` prints a component's log file (every start appends to it, headed by the command
  line used); `-f` keeps printing what is appended until Ctrl-C, like `tail -f`.
* `kubeconfig` prints the path of the standalone admin kubeconfig, for `export KUBECONFIG=$(mkpy kubeconfig)`.
* `etcdctl ARGS...` runs the real etcdctl against the cluster's etcd, so a lab can look under the
  apiserver: `mkpy etcdctl get --prefix --keys-only /registry/pods`. Everything after the first argument
  that is not `--name` goes to etcdctl verbatim, and etcdctl's exit code is mkpy's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import click

from minikube_py.cli.cluster import Cluster, name_option
from minikube_py.cli.components import COMPONENT_NAMES
from minikube_py.cli.supervisor import Supervised

FOLLOW_INTERVAL = 0.25  # seconds between looks at a followed log; a person is reading it


@click.command()
@click.argument("component", type=click.Choice(COMPONENT_NAMES), metavar="COMPONENT")
@click.option("-f", "--follow", is_flag=True, help="Keep printing what is appended to the log.")
@name_option
def logs(component: str, follow: bool, name: str) -> None:
    """Print the log of a cluster component."""
    cluster = Cluster.load(name)
    path = Supervised(component, cluster.dir).log_path
    try:
        log = open(path, "rb")
    except FileNotFoundError:
        raise click.ClickException(f'{component} of cluster "{name}" has no log yet ({path})') from None
    out = sys.stdout.buffer
    with log:
        try:
            while True:
                chunk = log.read(64 * 1024)
                if chunk:
                    out.write(chunk)
                    continue
                out.flush()
                if not follow:
                    return
                time.sleep(FOLLOW_INTERVAL)
        except KeyboardInterrupt:
            out.flush()


@click.command()
@name_option
def kubeconfig(name: str) -> None:
    """Print the path of the cluster's standalone admin kubeconfig."""
    cluster = Cluster.load(name)
    if not cluster.kubeconfig_path.exists():
        raise click.ClickException(f'cluster "{name}" has no kubeconfig yet; run `mkpy up --name {name}`')
    click.echo(str(cluster.kubeconfig_path))


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@name_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def etcdctl(ctx: click.Context, name: str, args: tuple[str, ...]) -> None:
    """Run etcdctl against the cluster's etcd.

    For example: mkpy etcdctl get --prefix --keys-only /registry/
    """
    from minikube_py.store.etcd_server import EtcdNotFoundError, etcdctl_binary

    cluster = Cluster.load(name)
    try:
        binary = etcdctl_binary()
    except EtcdNotFoundError as err:
        raise click.ClickException(str(err)) from err
    argv = [binary, f"--endpoints={cluster.etcd_endpoint}", *args]
    try:
        completed = subprocess.run(argv, env={**os.environ, "ETCDCTL_API": "3"})
    except KeyboardInterrupt:
        ctx.exit(130)
    ctx.exit(completed.returncode)

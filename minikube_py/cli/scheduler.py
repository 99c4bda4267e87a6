"""`mkpy scheduler`: run the scheduler in the foreground with kube-scheduler's flags; `mkpy scheduler explain POD`.

`mkpy up` starts the scheduler through this very command (`mkpy logs scheduler` shows the line), so a lab can
`mkpy up --without scheduler` and run it by hand, with its own `--config` (a KubeSchedulerConfiguration) or
with `--explain` to record every plugin's verdict on each pod. Flags keep kube-scheduler's names; flags left
out fall back to the config file, then to kube's defaults.

Usage rules: the config file and kubeconfig are read before anything starts, so a mistake is a one-line error
and exit status 1. The process runs until SIGTERM or SIGINT (releasing its Lease) or until it loses the
Lease (exit status 1, as kube-scheduler).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click
import uvloop

from minikube_py.cli.flags import Duration, IPAddress
from minikube_py.cli.signals import run_until_signalled

_FILE = click.Path(exists=True, dir_okay=False)


@click.group(invoke_without_command=True, context_settings={"show_default": True})
@click.option("--config", "config_file", type=_FILE, help="KubeSchedulerConfiguration file (profiles, plugins).")
@click.option("--kubeconfig", type=_FILE, help="Kubeconfig with the scheduler's identity and the apiserver.")
@click.option("--leader-elect", type=click.BOOL, is_flag=False, flag_value=True, default=None,
              help="Schedule only while holding the kube-scheduler Lease. [default: true]")
@click.option("--leader-elect-lease-duration", type=Duration(), help="How long a Lease lasts unrenewed. [15s]")
@click.option("--leader-elect-renew-deadline", type=Duration(), help="How long the leader tries to renew. [10s]")
@click.option("--leader-elect-retry-period", type=Duration(), help="How often to try the Lease. [2s]")
@click.option("--leader-elect-resource-name", help="The Lease's name. [kube-scheduler]")
@click.option("--leader-elect-resource-namespace", help="The Lease's namespace. [kube-system]")
@click.option("--bind-address", type=IPAddress(), default="0.0.0.0", help="Address to serve /healthz on.")
@click.option("--secure-port", type=click.IntRange(0, 65535), default=10259,
              help="Port to serve /healthz on over HTTPS (0: not at all).")
@click.option("--tls-cert-file", type=_FILE, help="Serving certificate (default: a self-signed one).")
@click.option("--tls-private-key-file", type=_FILE, help="Private key of --tls-cert-file.")
@click.option("--explain", is_flag=True,
              help="Record every plugin's filter verdict and score on each pod (see `mkpy scheduler explain`).")
@click.option("--v", "verbosity", type=click.IntRange(0, 10), default=2, help="Log verbosity (4+ for debug).")
@click.pass_context
def scheduler(ctx: click.Context, **flags: Any) -> None:
    """Run the scheduler in the foreground (or a subcommand)."""
    if ctx.invoked_subcommand is not None:
        return
    if bool(flags["tls_cert_file"]) != bool(flags["tls_private_key_file"]):
        raise click.UsageError("--tls-cert-file and --tls-private-key-file must be given together")
    logging.basicConfig(level=logging.DEBUG if flags["verbosity"] >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(logging.DEBUG if flags["verbosity"] >= 6 else logging.WARNING)
    from minikube_py.scheduler import app

    options = app.Options(
        kubeconfig=flags["kubeconfig"] or "", config_file=flags["config_file"] or "",
        leader_elect=flags["leader_elect"], lease_duration=flags["leader_elect_lease_duration"],
        renew_deadline=flags["leader_elect_renew_deadline"], retry_period=flags["leader_elect_retry_period"],
        resource_name=flags["leader_elect_resource_name"],
        resource_namespace=flags["leader_elect_resource_namespace"], bind_address=flags["bind_address"],
        secure_port=flags["secure_port"], tls_cert_file=flags["tls_cert_file"] or "",
        tls_private_key_file=flags["tls_private_key_file"] or "", explain=flags["explain"])
    try:
        # uvloop: binds, events and watch streams are event-loop work, which uvloop does with less CPU
        stopped = uvloop.run(run_until_signalled(app.run(options)))
    except app.SchedulerSetupError as error:
        raise click.ClickException(str(error)) from None
    if not stopped:  # app.run returns only when the Lease was lost
        sys.exit(1)


@scheduler.command()
@click.argument("pod")
@click.option("-n", "--namespace", default="default", help="The pod's namespace.")
@click.option("--name", "cluster_name", default="mkpy", help="Cluster name (for its admin kubeconfig).")
@click.option("--kubeconfig", type=_FILE, help="Use this kubeconfig instead of the cluster's.")
def explain(pod: str, namespace: str, cluster_name: str, kubeconfig: str | None) -> None:
    """Show why the scheduler put POD where it did: every plugin's verdict and score per node.

    Needs a scheduler started with --explain."""
    from minikube_py.cli.explain import show

    show(pod, namespace, cluster_name, kubeconfig)

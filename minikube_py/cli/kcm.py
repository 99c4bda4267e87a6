"""`mkpy kcm`: run the controller manager in the foreground with kube-controller-manager's flags.

`mkpy up` starts it through this very command (`mkpy logs kcm` shows the line), so a lab can `mkpy up
--without kcm` and run it by hand, e.g. with `--controllers=*,-podgc` or a second copy to watch leader
election. `--concurrent-<name>-syncs` flags exist for every controller with workers (the registry lists them).

Usage rules: the flags, the kubeconfig and the controller names are checked before anything starts, so a
mistake is a one-line error and exit status 1 (2 for a malformed flag). The process runs until SIGTERM or
SIGINT (releasing its Lease) or until it loses the Lease (exit status 1, as kube-controller-manager).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from typing import Any

import click

from minikube_py.cli.flags import Duration, IPAddress, StringList
from minikube_py.cli.signals import run_until_signalled

_FILE = click.Path(exists=True, dir_okay=False)


def _worker_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """One `--concurrent-<name>-syncs` option per controller that has workers."""
    from minikube_py.kcm.controllers import descriptors

    for descriptor in descriptors():
        if descriptor.workers_flag:
            command = click.option(f"--concurrent-{descriptor.workers_flag}-syncs", type=click.IntRange(1, 1000),
                                   default=descriptor.default_workers,
                                   help=f"Workers syncing {descriptor.name} objects at once.")(command)
    return command


@click.command(context_settings={"show_default": True})
@click.option("--kubeconfig", type=_FILE, help="Kubeconfig with the controller manager's identity and the apiserver.")
@click.option("--controllers", type=StringList(), default="*",
              help="Controllers to run: '*' all on by default, 'foo' adds foo, '-foo' leaves foo out.")
@_worker_flags
@click.option("--cloud-provider", default="", help="'external' leaves the cloud controllers to a CCM.")
@click.option("--terminated-pod-gc-threshold", type=click.IntRange(0), default=12500,
              help="Terminated pods kept before the pod GC deletes the oldest (0: no limit).")
@click.option("--leader-elect", type=click.BOOL, is_flag=False, flag_value=True, default=True,
              help="Run controllers only while holding the kube-controller-manager Lease.")
@click.option("--leader-elect-lease-duration", type=Duration(), default="15s", help="How long a Lease lasts.")
@click.option("--leader-elect-renew-deadline", type=Duration(), default="10s", help="How long the leader tries to renew.")
@click.option("--leader-elect-retry-period", type=Duration(), default="2s", help="How often to try the Lease.")
@click.option("--bind-address", type=IPAddress(), default="0.0.0.0", help="Address to serve /healthz on.")
@click.option("--secure-port", type=click.IntRange(0, 65535), default=10257,
              help="Port to serve /healthz on over HTTPS (0: not at all).")
@click.option("--tls-cert-file", type=_FILE, help="Serving certificate (default: a self-signed one).")
@click.option("--tls-private-key-file", type=_FILE, help="Private key of --tls-cert-file.")
@click.option("--v", "verbosity", type=click.IntRange(0, 10), default=2, help="Log verbosity (4+ for debug).")
def kcm(**flags: Any) -> None:
    """Run the kube-controller-manager in the foreground."""
    if bool(flags["tls_cert_file"]) != bool(flags["tls_private_key_file"]):
        raise click.UsageError("--tls-cert-file and --tls-private-key-file must be given together")
    logging.basicConfig(level=logging.DEBUG if flags["verbosity"] >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(logging.DEBUG if flags["verbosity"] >= 6 else logging.WARNING)
    from minikube_py.kcm import app
    from minikube_py.kcm.context import ControllerSettings

    workers = {name[len("concurrent_"):-len("_syncs")].replace("_", "-"): value
               for name, value in flags.items() if name.startswith("concurrent_") and name.endswith("_syncs")}
    options = app.Options(
        kubeconfig=flags["kubeconfig"] or "", controllers=flags["controllers"], workers=workers,
        cloud_provider=flags["cloud_provider"], leader_elect=flags["leader_elect"],
        lease_duration=flags["leader_elect_lease_duration"], renew_deadline=flags["leader_elect_renew_deadline"],
        retry_period=flags["leader_elect_retry_period"], bind_address=flags["bind_address"],
        secure_port=flags["secure_port"], tls_cert_file=flags["tls_cert_file"] or "",
        tls_private_key_file=flags["tls_private_key_file"] or "",
        settings=ControllerSettings(terminated_pod_gc_threshold=flags["terminated_pod_gc_threshold"]))
    try:
        app.enabled_controllers(options)  # unknown names fail here, before the event loop starts
        stopped = asyncio.run(run_until_signalled(app.run(options)))
    except app.ControllerManagerSetupError as error:
        raise click.ClickException(str(error)) from None
    if not stopped:  # app.run returns only when the Lease was lost
        sys.exit(1)

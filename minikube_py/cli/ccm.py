"""`mkpy ccm`: run the cloud-controller-manager in the foreground with kube's cloud-controller-manager flags.

`mkpy up` starts it through this very command with the `local` provider (`mkpy logs ccm` shows the line), so a
lab can `mkpy up --without ccm`, watch new nodes stay tainted and LoadBalancer Services stay `<pending>`, and
then run it by hand, with another provider too:

    mkpy ccm --kubeconfig ~/.local/share/mkpy/mkpy/kubeconfigs/cloud-controller-manager.conf \\
             --cloud-provider local --cloud-config ~/.local/share/mkpy/mkpy/cloud/cloud-config.yaml

Usage rules: the provider, its config, the kubeconfig and the controller names are checked before anything
starts, so a mistake is a one-line error and exit status 1 (2 for a malformed flag). The process runs until
SIGTERM or SIGINT (releasing its Lease) or until it loses the Lease (exit status 1).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click
import uvloop

from minikube_py.cli.flags import Duration, IPAddress, StringList
from minikube_py.cli.signals import run_until_signalled

_FILE = click.Path(exists=True, dir_okay=False)


@click.command(context_settings={"show_default": True})
@click.option("--cloud-provider", default="", help="The cloud: local, fake, an entry-point name or module:factory.")
@click.option("--cloud-config", type=_FILE, help="The provider's configuration file.")
@click.option("--kubeconfig", type=_FILE, help="Kubeconfig with the CCM's identity and the apiserver.")
@click.option("--controllers", type=StringList(), default="*",
              help="Controllers to run: '*' all on by default, 'foo' adds foo, '-foo' leaves foo out.")
@click.option("--cluster-name", default="kubernetes", help="The name the cloud knows this cluster by.")
@click.option("--configure-cloud-routes", type=click.BOOL, is_flag=False, flag_value=True, default=False,
              help="Have the route controller create a cloud route per node podCIDR.")
@click.option("--cluster-cidr", default="", help="The pod address range routes are kept for.")
@click.option("--concurrent-service-syncs", type=click.IntRange(1, 1000), default=1,
              help="Services whose load balancers are synced at once.")
@click.option("--concurrent-node-syncs", type=click.IntRange(1, 1000), default=1,
              help="Nodes initialized at once.")
@click.option("--node-monitor-period", type=Duration(), default="5s",
              help="How often not-ready nodes are checked against the cloud.")
@click.option("--node-status-update-frequency", type=Duration(), default="5m",
              help="How often initialized nodes' addresses are refreshed from the cloud.")
@click.option("--node-sync-period", type=Duration(), default="100s",
              help="How often every load balancer's nodes are resynced.")
@click.option("--route-reconciliation-period", type=Duration(), default="10s",
              help="How often routes are reconciled with the nodes.")
@click.option("--cloud-call-timeout", type=Duration(), default="30s",
              help="How long one call into the cloud provider may take before it counts as failed.")
@click.option("--leader-elect", type=click.BOOL, is_flag=False, flag_value=True, default=True,
              help="Run controllers only while holding the cloud-controller-manager Lease.")
@click.option("--leader-elect-lease-duration", type=Duration(), default="15s", help="How long a Lease lasts.")
@click.option("--leader-elect-renew-deadline", type=Duration(), default="10s", help="How long the leader tries to renew.")
@click.option("--leader-elect-retry-period", type=Duration(), default="2s", help="How often to try the Lease.")
@click.option("--bind-address", type=IPAddress(), default="0.0.0.0", help="Address to serve /healthz on.")
@click.option("--secure-port", type=click.IntRange(0, 65535), default=10258,
              help="Port to serve /healthz on over HTTPS (0: not at all).")
@click.option("--tls-cert-file", type=_FILE, help="Serving certificate (default: a self-signed one).")
@click.option("--tls-private-key-file", type=_FILE, help="Private key of --tls-cert-file.")
@click.option("--v", "verbosity", type=click.IntRange(0, 10), default=2, help="Log verbosity (4+ for debug).")
def ccm(**flags: Any) -> None:
    """Run the cloud-controller-manager in the foreground."""
    if bool(flags["tls_cert_file"]) != bool(flags["tls_private_key_file"]):
        raise click.UsageError("--tls-cert-file and --tls-private-key-file must be given together")
    logging.basicConfig(level=logging.DEBUG if flags["verbosity"] >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(logging.DEBUG if flags["verbosity"] >= 6 else logging.WARNING)
    from minikube_py.ccm import app
    from minikube_py.ccm.context import CloudSettings

    options = app.Options(
        cloud_provider=flags["cloud_provider"], cloud_config=flags["cloud_config"] or "",
        kubeconfig=flags["kubeconfig"] or "", controllers=flags["controllers"],
        workers={"service": flags["concurrent_service_syncs"], "node": flags["concurrent_node_syncs"]}, leader_elect=flags["leader_elect"],
        lease_duration=flags["leader_elect_lease_duration"], renew_deadline=flags["leader_elect_renew_deadline"],
        retry_period=flags["leader_elect_retry_period"], bind_address=flags["bind_address"],
        secure_port=flags["secure_port"], tls_cert_file=flags["tls_cert_file"] or "",
        tls_private_key_file=flags["tls_private_key_file"] or "",
        settings=CloudSettings(cluster_name=flags["cluster_name"], node_monitor_period=flags["node_monitor_period"],
                               node_status_update_frequency=flags["node_status_update_frequency"],
                               node_sync_period=flags["node_sync_period"],
                               configure_cloud_routes=flags["configure_cloud_routes"],
                               route_reconciliation_period=flags["route_reconciliation_period"],
                               cluster_cidr=flags["cluster_cidr"], cloud_call_timeout=flags["cloud_call_timeout"]))
    try:
        app.enabled_controllers(options)  # unknown names and providers fail here, before the event loop starts
        app.cloud_provider(options)
        # uvloop: the local cloud's load balancers are proxies in this process, and its loop moves their bytes
        # with about half the CPU of asyncio's own
        stopped = uvloop.run(run_until_signalled(app.run(options)))
    except app.CloudControllerManagerSetupError as error:
        raise click.ClickException(str(error)) from None
    if not stopped:  # app.run returns only when the Lease was lost
        sys.exit(1)

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
import os
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
@click.option("--root-ca-file", type=_FILE,
              help="CA bundle published in every namespace's kube-root-ca.crt (default: the kubeconfig's CA).")
@click.option("--resource-quota-sync-period", type=Duration(), default="5m",
              help="How often every quota's usage is recounted.")
@click.option("--node-monitor-period", type=Duration(), default="5s", help="How often node health is checked.")
@click.option("--node-monitor-grace-period", type=Duration(), default="50s",
              help="How long a node may stay silent before it is marked Unknown.")
@click.option("--node-startup-grace-period", type=Duration(), default="1m",
              help="The same for a node that has never reported.")
@click.option("--node-eviction-rate", type=click.FloatRange(0), default=0.1,
              help="Nodes per second whose pods are evicted while their zone is healthy.")
@click.option("--secondary-node-eviction-rate", type=click.FloatRange(0), default=0.01,
              help="The same while the zone is partly unhealthy.")
@click.option("--large-cluster-size-threshold", type=click.IntRange(0), default=50,
              help="Zones up to this size stop evicting when partly unhealthy.")
@click.option("--unhealthy-zone-threshold", type=click.FloatRange(0, 1), default=0.55,
              help="Share of not-ready nodes that makes a zone unhealthy.")
@click.option("--allocate-node-cidrs", type=click.BOOL, is_flag=False, flag_value=True, default=False,
              help="Give every node a spec.podCIDR cut from --cluster-cidr.")
@click.option("--cluster-cidr", default="", help="The pod address range node CIDRs come from.")
@click.option("--node-cidr-mask-size", type=click.IntRange(1, 32), default=24, help="Prefix length of a node CIDR.")
@click.option("--max-endpoints-per-slice", type=click.IntRange(1, 1000), default=100,
              help="Most endpoints one EndpointSlice holds.")
@click.option("--horizontal-pod-autoscaler-sync-period", type=Duration(), default="15s",
              help="How often every HorizontalPodAutoscaler is evaluated.")
@click.option("--horizontal-pod-autoscaler-downscale-stabilization", type=Duration(), default="5m",
              help="How far back the autoscaler looks for the highest recommendation before scaling down.")
@click.option("--horizontal-pod-autoscaler-tolerance", type=click.FloatRange(0), default=0.1,
              help="How far the usage ratio may be from 1.0 before the autoscaler acts.")
@click.option("--horizontal-pod-autoscaler-cpu-initialization-period", type=Duration(), default="5m",
              help="How long after a pod starts its CPU samples are not trusted.")
@click.option("--horizontal-pod-autoscaler-initial-readiness-delay", type=Duration(), default="30s",
              help="How long after a pod starts its readiness changes count as initial.")
@click.option("--pvclaimbinder-sync-period", type=Duration(), default="15s",
              help="How often the persistent volume binder re-syncs every claim and volume.")
@click.option("--enable-hostpath-provisioner", type=click.BOOL, is_flag=False, flag_value=True, default=False,
              help="Provision kubernetes.io/host-path StorageClasses as directories on this machine "
                   "(a single-node cluster only).")
@click.option("--hostpath-provisioner-dir", type=click.Path(file_okay=False), default="/tmp/hostpath_pv",
              help="The directory host-path volumes are provisioned in; only volumes under it are ever removed.")
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
        settings=ControllerSettings(terminated_pod_gc_threshold=flags["terminated_pod_gc_threshold"],
                                    root_ca=_read(flags["root_ca_file"]),
                                    resource_quota_sync_period=flags["resource_quota_sync_period"],
                                    max_endpoints_per_slice=flags["max_endpoints_per_slice"],
                                    node_monitor_period=flags["node_monitor_period"],
                                    node_monitor_grace_period=flags["node_monitor_grace_period"],
                                    node_startup_grace_period=flags["node_startup_grace_period"],
                                    node_eviction_rate=flags["node_eviction_rate"],
                                    secondary_node_eviction_rate=flags["secondary_node_eviction_rate"],
                                    large_cluster_size_threshold=flags["large_cluster_size_threshold"],
                                    unhealthy_zone_threshold=flags["unhealthy_zone_threshold"],
                                    allocate_node_cidrs=flags["allocate_node_cidrs"], cluster_cidr=flags["cluster_cidr"],
                                    node_cidr_mask_size=flags["node_cidr_mask_size"],
                                    hpa_sync_period=flags["horizontal_pod_autoscaler_sync_period"],
                                    hpa_downscale_stabilization=flags["horizontal_pod_autoscaler_downscale_stabilization"],
                                    hpa_tolerance=flags["horizontal_pod_autoscaler_tolerance"],
                                    hpa_cpu_initialization_period=flags["horizontal_pod_autoscaler_cpu_initialization_period"],
                                    hpa_initial_readiness_delay=flags["horizontal_pod_autoscaler_initial_readiness_delay"],
                                    pv_claim_binder_sync_period=flags["pvclaimbinder_sync_period"],
                                    enable_hostpath_provisioner=flags["enable_hostpath_provisioner"],
                                    hostpath_provisioner_dir=os.path.abspath(flags["hostpath_provisioner_dir"])))
    try:
        app.enabled_controllers(options)  # unknown names fail here, before the event loop starts
        stopped = asyncio.run(run_until_signalled(app.run(options)))
    except app.ControllerManagerSetupError as error:
        raise click.ClickException(str(error)) from None
    if not stopped:  # app.run returns only when the Lease was lost
        sys.exit(1)


def _read(path: str | None) -> str:
    if not path:
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()

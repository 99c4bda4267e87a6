"""`mkpy kubelet`: run one node's kubelet in the foreground, with the real kubelet's flags.

`mkpy up` starts each node's kubelet through this very command (`mkpy logs kubelet-<node>` shows the line), so a
lab can stop one and run it by hand against the same runtime socket. The capacity flags are mkpy's own: they
let a simulated node claim what it likes.

Usage rules: flag values are checked before anything starts (one-line error, exit status 1); the process runs
until SIGTERM or SIGINT. Stopping the kubelet leaves its pods running, as in kube; the next start adopts them.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import click

from minikube_py.cli.flags import Duration, IPAddress
from minikube_py.cli.signals import run_until_signalled

_FILE = click.Path(exists=True, dir_okay=False)


@click.command(context_settings={"show_default": True})
@click.option("--kubeconfig", type=_FILE, help="Kubeconfig with the node's identity (system:node:<name>).")
@click.option("--hostname-override", "node_name", default="", help="The Node's name. [default: the host name]")
@click.option("--container-runtime-endpoint", default="unix:///run/containerd/containerd.sock",
              help="CRI socket of the container runtime (containerd, or `mkpy fake-cri`).")
@click.option("--root-dir", type=click.Path(file_okay=False), default="/var/lib/kubelet",
              help="Where pod volumes and container logs live.")
@click.option("--pod-cidr", default="",
              help="Deprecated: a pod CIDR given to the runtime at start; the Node's spec.podCIDRs win.")
@click.option("--node-ip", type=IPAddress(), default=None, help="The node's InternalIP. [default: 127.0.0.1]")
@click.option("--node-labels", default="", help="Extra labels on the Node: key=value,...")
@click.option("--register-with-taints", default="", help="Taints the Node registers with: key=value:Effect,...")
@click.option("--cloud-provider", type=click.Choice(["", "external"]), default="",
              help="external: register with the uninitialized taint for the cloud controller manager.")
@click.option("--address", type=IPAddress(), default="0.0.0.0", help="Address the kubelet API serves on.")
@click.option("--port", type=click.IntRange(0, 65535), default=10250, help="Kubelet API port (0: off).")
@click.option("--tls-cert-file", type=_FILE, help="The kubelet API's serving certificate.")
@click.option("--tls-private-key-file", type=_FILE, help="Private key of --tls-cert-file.")
@click.option("--client-ca-file", type=_FILE, help="CA that signs the client certificates the API accepts.")
@click.option("--healthz-port", type=click.IntRange(0, 65535), default=10248, help="/healthz port (0: off).")
@click.option("--node-status-update-frequency", type=Duration(), default="10s", help="How often the status is computed.")
@click.option("--sync-frequency", type=Duration(), default="1m", help="How often every pod is re-synced.")
@click.option("--max-pods", type=int, default=110, help="Pods this node accepts.")
@click.option("--cgroup-root", default="", help="Parent cgroup of every pod (one per node when nodes share a host).")
@click.option("--capacity-cpu", default="", help="CPU the node offers. [default: this machine's]")
@click.option("--capacity-memory", default="", help="Memory the node offers. [default: this machine's]")
@click.option("--v", "verbosity", type=click.IntRange(0, 10), default=2, help="Log verbosity (4+ for debug).")
def kubelet(**flags: Any) -> None:
    """Run a kubelet in the foreground."""
    from minikube_py.kubelet import app
    from minikube_py.kubelet.config import KubeletConfig, KubeletConfigError, parse_labels, parse_taints

    logging.basicConfig(level=logging.DEBUG if flags["verbosity"] >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(logging.DEBUG if flags["verbosity"] >= 6 else logging.WARNING)
    try:
        config = KubeletConfig(
            node_name=flags["node_name"], kubeconfig=flags["kubeconfig"] or "",
            container_runtime_endpoint=flags["container_runtime_endpoint"], root_dir=Path(flags["root_dir"]),
            pod_cidr=flags["pod_cidr"], node_ip=flags["node_ip"] or "",
            node_labels=parse_labels(flags["node_labels"].split(",")),
            register_with_taints=parse_taints(flags["register_with_taints"].split(",")),
            cloud_provider=flags["cloud_provider"], address=flags["address"], port=flags["port"],
            tls_cert_file=flags["tls_cert_file"] or "", tls_private_key_file=flags["tls_private_key_file"] or "",
            client_ca_file=flags["client_ca_file"] or "", healthz_port=flags["healthz_port"],
            node_status_update_frequency=flags["node_status_update_frequency"],
            sync_frequency=flags["sync_frequency"], max_pods=flags["max_pods"], cgroup_root=flags["cgroup_root"],
            capacity_cpu=flags["capacity_cpu"], capacity_memory=flags["capacity_memory"])
    except KubeletConfigError as error:
        raise click.UsageError(str(error)) from None
    try:
        asyncio.run(run_until_signalled(app.run(config)))
    except app.KubeletSetupError as error:
        raise click.ClickException(str(error)) from None

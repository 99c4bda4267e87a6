"""The control-plane components `mkpy up` runs, in start order: how each is started and how its health is read.

This is the one table to extend when a component joins the cluster (controller manager, scheduler,
kubelets): `mkpy up` starts them in this order, `mkpy down` stops them in reverse, `mkpy status` probes
each, and `mkpy logs` accepts their names. Once the apiserver answers, `mkpy up` makes sure the default
StorageClass `standard` exists (`ensure_default_storage_class`), as minikube's addon does.

Usage rules: every component's command line names the cluster directory (the supervisor recognises its
processes by that) and uses real flags, so the header line in its log can be pasted to run it by hand.
The apiserver is `mkpy apiserver` run by the same Python, so a virtualenv without the console script on
PATH still works.
"""

from __future__ import annotations

import functools
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from minikube_py.cli.cluster import HOST, Cluster
from minikube_py.cli.supervisor import Health, Supervised, client_tls_context, probe_http, probe_https

ETCD_READY_TIMEOUT = 10.0  # seconds; etcd with fast elections needs ~60 ms
APISERVER_READY_TIMEOUT = 30.0  # seconds; generous for a cold disk cache on the first start
SCHEDULER_READY_TIMEOUT = 10.0  # seconds; it serves /healthz before it has won leader election
KCM_READY_TIMEOUT = 10.0  # seconds; the same for the controller manager
CCM_READY_TIMEOUT = 10.0  # seconds; and for the cloud controller manager
COMPONENT_NAMES = ("etcd", "apiserver", "kcm", "ccm", "scheduler")  # the names control_plane() returns, in start order
CORE_COMPONENTS = ("etcd", "apiserver")  # a cluster runs when these do; `mkpy up --without` spares the rest
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"  # as kubeadm sets it
DEFAULT_STORAGE_CLASS = "standard"  # as minikube's default-storageclass addon names it


@dataclass(frozen=True)
class Component:
    """One control-plane process of a cluster."""

    name: str
    address: str  # where it serves, as `mkpy status` shows it
    ports: dict[str, int]  # "what" -> port; each must be free before the component starts
    ready_timeout: float
    argv: Callable[[], list[str]]  # built only when starting: it may need to locate a binary
    probe: Callable[[], Health]
    # A path its command line always contains, if not the cluster directory (a runtime serving on a short
    # socket path outside it); how the supervisor tells its process from an unrelated one with a reused pid.
    marker: str = ""
    after_start: Callable[[], None] | None = None  # run once it is healthy (e.g. importing images)
    # The one component it needs healthy before it starts ("": every component before it). Components next
    # to each other that wait only for the same one start together: the controller manager, the cloud
    # controller manager and the scheduler each need just the apiserver.
    waits_only_for: str = ""

    def process(self, cluster: Cluster) -> Supervised:
        return Supervised(self.name, cluster.dir, self.marker)


def control_plane(cluster: Cluster, advertise_address: str = "") -> list[Component]:
    """The cluster's components in start order. `advertise_address` only matters when starting them."""
    ports = cluster.ports
    return [
        Component(
            name="etcd",
            address=cluster.etcd_endpoint,
            ports={"etcd client": ports.etcd_client, "etcd peer": ports.etcd_peer},
            ready_timeout=ETCD_READY_TIMEOUT,
            argv=functools.partial(_etcd_argv, cluster),
            probe=functools.partial(probe_http, HOST, ports.etcd_client, "/health"),
        ),
        Component(
            name="apiserver",
            address=cluster.apiserver_url,
            ports={"apiserver": ports.apiserver},
            ready_timeout=APISERVER_READY_TIMEOUT,
            argv=functools.partial(_apiserver_argv, cluster, advertise_address),
            probe=functools.partial(_apiserver_probe, cluster),
            after_start=functools.partial(ensure_default_storage_class, cluster),
        ),
        Component(
            name="kcm",
            address=f"https://{HOST}:{ports.kcm}/healthz",
            ports={"kcm": ports.kcm},
            ready_timeout=KCM_READY_TIMEOUT,
            argv=functools.partial(_kcm_argv, cluster),
            probe=functools.partial(probe_https, HOST, ports.kcm, "/healthz", unverified_tls_context()),
            waits_only_for="apiserver",
        ),
        Component(
            name="ccm",
            address=f"https://{HOST}:{ports.ccm}/healthz",
            ports={"ccm": ports.ccm},
            ready_timeout=CCM_READY_TIMEOUT,
            argv=functools.partial(_ccm_argv, cluster),
            probe=functools.partial(probe_https, HOST, ports.ccm, "/healthz", unverified_tls_context()),
            waits_only_for="apiserver",
        ),
        Component(
            name="scheduler",
            address=f"https://{HOST}:{ports.scheduler}/healthz",
            ports={"scheduler": ports.scheduler},
            ready_timeout=SCHEDULER_READY_TIMEOUT,
            argv=functools.partial(_scheduler_argv, cluster),
            probe=functools.partial(probe_https, HOST, ports.scheduler, "/healthz", unverified_tls_context()),
            waits_only_for="apiserver",
        ),
    ]


def host_address() -> str:
    """This machine's address on its default route (what kube-apiserver advertises by default), else 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            # Connecting a UDP socket sends nothing; it only makes the kernel pick the outgoing address.
            sock.connect(("192.0.2.1", 9))
            return str(sock.getsockname()[0])
        except OSError:
            return HOST


def _etcd_argv(cluster: Cluster) -> list[str]:
    from minikube_py.store.etcd_server import etcd_argv

    # fsync stays on: `mkpy down`/`up` promises to keep every object, also across a machine crash.
    return etcd_argv(cluster.name, cluster.etcd_data_dir, cluster.ports.etcd_client, cluster.ports.etcd_peer,
                     fast=True, unsafe_no_fsync=False, progress_notify_interval="5s")


def _apiserver_argv(cluster: Cluster, advertise_address: str) -> list[str]:
    ca_file, _ = cluster.cert_files("ca")
    cert_file, key_file = cluster.cert_files("apiserver")
    sa_key, sa_pub = cluster.service_account_key_files
    kubelet_client_cert, kubelet_client_key = cluster.cert_files("apiserver-kubelet-client")
    argv = [
        sys.executable, "-m", "minikube_py.cli.main", "apiserver",
        f"--etcd-servers={cluster.etcd_endpoint}",
        f"--bind-address={HOST}",
        f"--secure-port={cluster.ports.apiserver}",
        f"--tls-cert-file={cert_file}",
        f"--tls-private-key-file={key_file}",
        f"--client-ca-file={ca_file}",
        f"--service-account-key-file={sa_pub}",
        f"--service-account-signing-key-file={sa_key}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        "--authorization-mode=Node,RBAC",  # as kubeadm: kubelets by the Node authorizer, everyone else by RBAC
        "--enable-admission-plugins=NodeRestriction",
        f"--kubelet-client-certificate={kubelet_client_cert}", f"--kubelet-client-key={kubelet_client_key}",
        f"--kubelet-certificate-authority={ca_file}",
    ]
    if advertise_address:
        argv.append(f"--advertise-address={advertise_address}")
    # A lab enables static tokens by writing pki/tokens.csv and restarting the cluster.
    if cluster.token_auth_file.exists():
        argv.append(f"--token-auth-file={cluster.token_auth_file}")
    return argv + _encryption_and_audit_flags(cluster)


def _encryption_and_audit_flags(cluster: Cluster) -> list[str]:
    """Secrets encrypted with the cluster's own aescbc key (pki/encryption-config.yaml, made once and kept),
    and every request audited at Metadata level to logs/audit.log (policy: audit-policy.yaml, editable)."""
    from minikube_py.apiserver.auditpolicy import ensure_default_policy
    from minikube_py.apiserver.encryption import ensure_config_file

    encryption = ensure_config_file(cluster.pki_dir / "encryption-config.yaml")
    policy = ensure_default_policy(cluster.dir / "audit-policy.yaml")
    return [f"--encryption-provider-config={encryption}", f"--audit-policy-file={policy}",
            f"--audit-log-path={cluster.logs_dir / 'audit.log'}"]


def _scheduler_argv(cluster: Cluster) -> list[str]:
    return [sys.executable, "-m", "minikube_py.cli.main", "scheduler",
            f"--kubeconfig={cluster.component_kubeconfig('scheduler')}",
            f"--bind-address={HOST}", f"--secure-port={cluster.ports.scheduler}", "--leader-elect=true"]


def _kcm_argv(cluster: Cluster) -> list[str]:
    from minikube_py.cli import nodes  # nodes.py builds on this module

    ca_file, _ = cluster.cert_files("ca")
    node_set = nodes.load(cluster)
    # node IPAM hands a /24 of the cluster's pod range to a Node registered without one (mkpy's kubelets
    # register with the one `mkpy up` planned for them; the allocator marks those used)
    ipam = ["--allocate-node-cidrs=true", f"--cluster-cidr={node_set.cluster_cidr}",
            "--node-cidr-mask-size=24"] if node_set is not None else []
    # claims of the default class `standard` become directories under the cluster directory (kube's in-tree
    # host-path provisioner; every node is on this machine, so every kubelet can mount them)
    storage = ["--enable-hostpath-provisioner=true", f"--hostpath-provisioner-dir={storage_dir(cluster)}"]
    return [sys.executable, "-m", "minikube_py.cli.main", "kcm",
            f"--kubeconfig={cluster.component_kubeconfig('controller-manager')}", f"--root-ca-file={ca_file}",
            *ipam, *storage, "--cloud-provider=external", f"--bind-address={HOST}",
            f"--secure-port={cluster.ports.kcm}", "--leader-elect=true"]


def storage_dir(cluster: Cluster) -> Path:
    """Where the host-path provisioner puts the cluster's dynamically provisioned volumes."""
    return cluster.dir / "storage"


def ensure_default_storage_class(cluster: Cluster) -> None:
    """minikube's default-storageclass addon: the StorageClass `standard`, marked the cluster's default, whose
    claims the controller manager provisions under `storage_dir`. Made when absent; an existing one (perhaps
    edited by its admin) is left alone."""
    import httpx  # only here: importing it costs `mkpy up` time

    ca_file, _ = cluster.cert_files("ca")
    cert_file, key_file = cluster.cert_files("admin")
    classes = "/apis/storage.k8s.io/v1/storageclasses"
    tls = _admin_tls_context(ca_file, cert_file, key_file)
    with httpx.Client(base_url=cluster.apiserver_url, verify=tls, timeout=5.0) as api:
        if api.get(f"{classes}/{DEFAULT_STORAGE_CLASS}").status_code != 404:
            return
        created = api.post(classes, json=_default_storage_class())
        if created.status_code not in (201, 409):  # 409: another `mkpy up` was quicker
            raise click.ClickException(f"could not create the default StorageClass: {created.text}")


def _default_storage_class() -> dict[str, object]:
    from minikube_py.api.defaults.storage import IS_DEFAULT_CLASS_ANNOTATION

    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": DEFAULT_STORAGE_CLASS, "annotations": {IS_DEFAULT_CLASS_ANNOTATION: "true"},
                         "labels": {"addonmanager.kubernetes.io/mode": "EnsureExists"}},
            "provisioner": "kubernetes.io/host-path", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}


def _ccm_argv(cluster: Cluster) -> list[str]:
    from minikube_py.cli import cloud, nodes  # both build on this module

    node_set = nodes.load(cluster)
    routes = ["--configure-cloud-routes=true", f"--cluster-cidr={node_set.cluster_cidr}"] if node_set else []
    return [sys.executable, "-m", "minikube_py.cli.main", "ccm",
            f"--kubeconfig={cluster.component_kubeconfig('cloud-controller-manager')}",
            "--cloud-provider=local", f"--cloud-config={cloud.write_cloud_config(cluster)}",
            f"--cluster-name={cluster.name}", *routes, f"--bind-address={HOST}",
            f"--secure-port={cluster.ports.ccm}", "--leader-elect=true"]


@functools.lru_cache(maxsize=1)
def unverified_tls_context() -> ssl.SSLContext:
    """Components other than the apiserver serve /healthz with a self-signed certificate; like kubeadm's
    liveness probes, the health check does not verify it (it learns nothing secret)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _apiserver_probe(cluster: Cluster) -> Health:
    ca_file, _ = cluster.cert_files("ca")
    cert_file, key_file = cluster.cert_files("admin")
    try:
        context = _admin_tls_context(ca_file, cert_file, key_file)
    except (OSError, ssl.SSLError) as err:
        return Health(False, f"no admin credentials: {err}")
    return probe_https(HOST, cluster.ports.apiserver, "/readyz", context)


@functools.lru_cache(maxsize=8)
def _admin_tls_context(ca_file: Path, cert_file: Path, key_file: Path) -> ssl.SSLContext:
    # Cached: readiness polling probes every 20 ms and loading the files each time would dominate.
    return client_tls_context(ca_file, cert_file, key_file)


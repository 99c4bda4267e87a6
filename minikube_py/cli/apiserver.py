"""`mkpy apiserver`: run the apiserver alone, in the foreground, with kube-apiserver's flags.

`mkpy up` starts the apiserver through this very command (its log shows the full command line), and a lab
can stop that process and run the same line by hand, or point it at an external etcd cluster with
`--etcd-servers=http://a:2379,http://b:2379,...`. Flags keep kube-apiserver's names and value formats;
each maps onto one field of `ServerOptions`, whose defaults are the flags' defaults.

Usage rules: flag values are checked here, before anything starts, so a typo is a one-line usage error.
The server module (Starlette, uvicorn, the etcd client) is imported only once the flags are good, so
`mkpy --help` and the other commands stay fast. The process runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import click

from minikube_py.apiserver.options import ServerOptions
from minikube_py.auth.authn import TokenFileError, parse_token_file
from minikube_py.cli.components import host_address
from minikube_py.cli.flags import CIDR, Duration, IPAddress, PortRange, URLList

DEFAULTS = ServerOptions()
_FILE = click.Path(exists=True, dir_okay=False)


@click.command(context_settings={"show_default": True})
@click.option("--etcd-servers", type=URLList(), default=",".join(DEFAULTS.etcd_servers),
              help="etcd members to connect to, comma-separated (several for an external etcd cluster).")
@click.option("--bind-address", type=IPAddress(), default=DEFAULTS.bind_address,
              help="Address to serve HTTPS on.")
@click.option("--secure-port", type=click.IntRange(1, 65535), default=DEFAULTS.secure_port,
              help="Port to serve HTTPS on.")
@click.option("--advertise-address", type=IPAddress(), default=DEFAULTS.advertise_address or None,
              help="Address published in the kubernetes Service's endpoints. [default: --bind-address, or "
                   "this host's address if that is 0.0.0.0]")
@click.option("--tls-cert-file", type=_FILE, help="Serving certificate (PEM), signed by the cluster CA.")
@click.option("--tls-private-key-file", type=_FILE, help="Private key (PEM) of --tls-cert-file.")
@click.option("--client-ca-file", type=_FILE,
              help="CA whose client certificates authenticate users (user = CN, groups = O).")
@click.option("--token-auth-file", type=_FILE,
              help='Static bearer tokens, one per line: token,user,uid,"group1,group2".')
@click.option("--service-cluster-ip-range", type=CIDR(), default=DEFAULTS.service_cluster_ip_range,
              help="CIDR that Service ClusterIPs are allocated from.")
@click.option("--service-node-port-range", type=PortRange(), default=DEFAULTS.service_node_port_range,
              help="Port range that Service NodePorts are allocated from.")
@click.option("--etcd-compaction-interval", type=Duration(), default=f"{DEFAULTS.etcd_compaction_interval:g}s",
              help="How often to compact etcd's history (Go duration, e.g. 5m0s; 0 disables).")
@click.option("--min-request-timeout", type=click.IntRange(min=1), default=int(DEFAULTS.min_request_timeout),
              help="Seconds a watch lasts at least (each lasts a random 1-2x this).")
def apiserver(etcd_servers: list[str], bind_address: str, secure_port: int, advertise_address: str | None,
              tls_cert_file: str | None, tls_private_key_file: str | None, client_ca_file: str | None,
              token_auth_file: str | None, service_cluster_ip_range: str, service_node_port_range: str,
              etcd_compaction_interval: float, min_request_timeout: int) -> None:
    """Run the Kubernetes API server in the foreground."""
    if bool(tls_cert_file) != bool(tls_private_key_file):
        raise click.UsageError("--tls-cert-file and --tls-private-key-file must be given together")
    if token_auth_file:
        try:
            parse_token_file(token_auth_file)  # the server parses it again; this makes a bad line a clean error
        except TokenFileError as err:
            raise click.UsageError(f"--token-auth-file: {err}") from err
    options = ServerOptions(
        etcd_servers=etcd_servers,
        bind_address=bind_address,
        secure_port=secure_port,
        tls_cert_file=tls_cert_file or "",
        tls_private_key_file=tls_private_key_file or "",
        client_ca_file=client_ca_file or "",
        token_auth_file=token_auth_file or "",
        service_cluster_ip_range=service_cluster_ip_range,
        service_node_port_range=service_node_port_range,
        etcd_compaction_interval=etcd_compaction_interval,
        min_request_timeout=float(min_request_timeout),
        advertise_address=advertise_address or _default_advertise_address(bind_address),
    )
    from minikube_py.apiserver.server import serve

    try:
        serve(options)
    except KeyboardInterrupt:
        pass


def _default_advertise_address(bind_address: str) -> str:
    """kube-apiserver's rule: the bind address, or the host's own address when bound to all interfaces."""
    return host_address() if bind_address in ("0.0.0.0", "::") else bind_address

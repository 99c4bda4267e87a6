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

from typing import Any

import click

from minikube_py.admission.chain import enabled_plugins
from minikube_py.apiserver.options import ServerOptions
from minikube_py.auth.authn import TokenFileError, parse_token_file
from minikube_py.cli.components import host_address
from minikube_py.cli.flags import CIDR, Duration, IPAddress, PortRange, StringList, URLList

DEFAULTS = ServerOptions()
AUTHORIZATION_MODES = ("AlwaysAllow", "AlwaysDeny", "Node", "RBAC")
_FILE = click.Path(exists=True, dir_okay=False)


def _event_ttl_seconds(ctx: click.Context, param: click.Parameter, seconds: float) -> int:
    """--event-ttl in whole seconds, truncated as kube-apiserver does. As there, 0 attaches no lease (Events
    are kept until deleted); a fraction of a second would silently mean the same, so it is refused."""
    if 0 < seconds < 1:
        raise click.BadParameter(f"must be 0 (keep Events until deleted) or at least 1s, not {seconds:g}s")
    return int(seconds)


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
@click.option("--event-ttl", type=Duration(), default=f"{DEFAULTS.event_ttl}s", callback=_event_ttl_seconds,
              help="How long Events are kept after their last write (Go duration, whole seconds, e.g. 1h0m0s; "
                   "0 keeps them until deleted).")
@click.option("--min-request-timeout", type=click.IntRange(min=1), default=int(DEFAULTS.min_request_timeout),
              help="Seconds a watch lasts at least (each lasts a random 1-2x this).")
@click.option("--anonymous-auth/--no-anonymous-auth", default=DEFAULTS.anonymous_auth,
              help="Treat requests without credentials as system:anonymous (RBAC decides what it may do).")
@click.option("--authorization-mode", type=StringList(AUTHORIZATION_MODES),
              default=",".join(DEFAULTS.authorization_mode),
              help=f"Authorizers to chain, in order, comma-separated ({', '.join(AUTHORIZATION_MODES)}).")
@click.option("--enable-admission-plugins", type=StringList(), default="",
              help="Admission plugins to turn on besides the defaults (the order is fixed, not this list's).")
@click.option("--disable-admission-plugins", type=StringList(), default="",
              help="Default admission plugins to turn off.")
@click.option("--service-account-key-file", "service_account_key_files", type=_FILE, multiple=True,
              help="Public (or private) key that verifies service-account tokens; repeatable.")
@click.option("--service-account-signing-key-file", type=_FILE,
              help="Private key that signs service-account tokens.")
@click.option("--service-account-issuer", default=DEFAULTS.service_account_issuer,
              help="The `iss` of the service-account tokens this apiserver issues.")
@click.option("--api-audiences", type=StringList(), default="",
              help="Audiences every token must carry one of (default: the issuer).")
@click.option("--encryption-provider-config", type=_FILE,
              help="EncryptionConfiguration file: how resources are encrypted in etcd.")
@click.option("--audit-policy-file", type=_FILE, help="Audit Policy file: what is logged for which request.")
@click.option("--audit-log-path", type=click.Path(dir_okay=False),
              help="Where audit events are written, one JSON object a line.")
@click.option("--kubelet-client-certificate", type=_FILE,
              help="Client certificate (PEM) the apiserver shows kubelets (logs, exec, port-forward).")
@click.option("--kubelet-client-key", type=_FILE, help="Private key (PEM) of --kubelet-client-certificate.")
@click.option("--kubelet-certificate-authority", type=_FILE,
              help="CA that verifies kubelets' serving certificates (default: not verified).")
def apiserver(**flags: Any) -> None:
    """Run the Kubernetes API server in the foreground."""
    if bool(flags["tls_cert_file"]) != bool(flags["tls_private_key_file"]):
        raise click.UsageError("--tls-cert-file and --tls-private-key-file must be given together")
    if bool(flags["kubelet_client_certificate"]) != bool(flags["kubelet_client_key"]):
        raise click.UsageError("--kubelet-client-certificate and --kubelet-client-key must be given together")
    _check_files(flags)
    try:
        enabled_plugins(flags["enable_admission_plugins"], flags["disable_admission_plugins"])
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    flags["min_request_timeout"] = float(flags["min_request_timeout"])
    flags["service_account_key_files"] = list(flags["service_account_key_files"])
    flags["advertise_address"] = flags["advertise_address"] or _default_advertise_address(flags["bind_address"])
    options = ServerOptions(**{name: "" if value is None else value for name, value in flags.items()})
    from minikube_py.apiserver.server import serve

    try:
        serve(options)
    except KeyboardInterrupt:
        pass


def _check_files(flags: dict[str, Any]) -> None:
    """Every file the apiserver will read at start is read here first, so that a bad one is a one-line
    usage error naming the flag and the problem instead of a server that dies while starting."""
    if flags["token_auth_file"]:
        try:
            parse_token_file(flags["token_auth_file"])
        except TokenFileError as err:
            raise click.UsageError(f"--token-auth-file: {err}") from err
    if flags["service_account_key_files"] or flags["service_account_signing_key_file"]:
        from minikube_py.auth.serviceaccount import KeyFileError, load_public_keys, load_signing_key

        try:
            for path in flags["service_account_key_files"]:
                load_public_keys(path)
            if flags["service_account_signing_key_file"]:
                load_signing_key(flags["service_account_signing_key_file"])
        except KeyFileError as err:
            raise click.UsageError(str(err)) from err
    if flags["encryption_provider_config"]:
        from minikube_py.apiserver.encryption import EncryptionConfigError, load_encryption_config

        try:
            load_encryption_config(flags["encryption_provider_config"])
        except EncryptionConfigError as err:
            raise click.UsageError(f"--encryption-provider-config: {err}") from err
    if flags["audit_policy_file"] or flags["audit_log_path"]:
        from minikube_py.apiserver.audit import PolicyError, check_audit_flags

        try:
            check_audit_flags(flags["audit_policy_file"] or "", flags["audit_log_path"] or "")
        except PolicyError as err:
            raise click.UsageError(f"--audit-policy-file: {err}") from err


def _default_advertise_address(bind_address: str) -> str:
    """kube-apiserver's rule: the bind address, or the host's own address when bound to all interfaces."""
    return host_address() if bind_address in ("0.0.0.0", "::") else bind_address

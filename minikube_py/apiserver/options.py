"""The apiserver's configuration, as set by `mkpy apiserver` flags (named after kube-apiserver's own).

`mkpy up` fills these in from the cluster directory; a lab can run `mkpy apiserver --etcd-servers=...` by
hand with the same flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ServerOptions:
    etcd_servers: list[str] = field(default_factory=lambda: ["http://127.0.0.1:2379"])
    bind_address: str = "127.0.0.1"
    secure_port: int = 6443
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    token_auth_file: str = ""
    service_cluster_ip_range: str = "10.96.0.0/12"
    service_node_port_range: str = "30000-32767"
    etcd_compaction_interval: float = 300.0  # seconds; 0 disables periodic compaction
    event_ttl: int = 3600  # seconds Events live after their last write; 0 keeps them until deleted
    max_request_body_bytes: int = 3 * 1024 * 1024
    min_request_timeout: float = 1800.0  # seconds; watches last between 1x and 2x this
    advertise_address: str = ""  # the address put in the kubernetes Service's Endpoints
    # security (docs/security.md)
    anonymous_auth: bool = True
    authorization_mode: list[str] = field(default_factory=lambda: ["AlwaysAllow"])
    enable_admission_plugins: list[str] = field(default_factory=list)  # added to the default set
    disable_admission_plugins: list[str] = field(default_factory=list)  # taken from it
    service_account_key_files: list[str] = field(default_factory=list)  # public keys that verify SA tokens
    service_account_signing_key_file: str = ""  # private key that signs them
    service_account_issuer: str = "https://kubernetes.default.svc.cluster.local"
    api_audiences: list[str] = field(default_factory=list)  # default: [service_account_issuer]
    encryption_provider_config: str = ""
    audit_policy_file: str = ""
    audit_log_path: str = ""
    # the apiserver as a client of kubelets (logs, exec, attach, port-forward, nodes/proxy): nodeproxy.py
    kubelet_client_certificate: str = ""
    kubelet_client_key: str = ""
    kubelet_certificate_authority: str = ""  # empty: the kubelet's serving certificate is not verified

"""Where a component finds its apiserver and credentials: a kubeconfig file, or the pod's service account.

`load_kubeconfig` reads kubectl's file format (clusters, users, contexts, current-context) and resolves one
context into a `ClientConfig`: the server URL, the CA that signs the server's certificate, and the client's
identity (a client certificate and key, or a bearer token). `in_cluster_config` builds the same from what the
kubelet mounts into every pod (`/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}`) and
the `KUBERNETES_SERVICE_HOST`/`_PORT` variables. `ClientConfig.ssl_context()` turns it into the TLS context
`rest.RESTClient` connects with.

Rules, as clientcmd applies them:
* The file is `path`, else the files in `$KUBECONFIG` (merged: the first file to define a name wins, and the
  first `current-context` wins; missing files are skipped), else `~/.kube/config`.
* Relative file paths (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`) are relative
  to the directory of the file that defines the entry.
* `*-data` fields are base64 PEM and win over the matching file; a `token` wins over a `tokenFile`'s token
  only when no file is given (the file is re-read by the REST client, so rotated tokens are picked up).
* Any problem with the input is a `ConfigError` whose one-line message names the file and the entry.
"""

from __future__ import annotations

import base64
import binascii
import importlib.metadata
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def _version() -> str:
    try:
        return importlib.metadata.version("minikube_py")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


VERSION = _version()


def user_agent(component: str) -> str:
    """The User-Agent a component sends (`mkpy-scheduler/v0.1.0`); the apiserver takes the part before the
    slash as the default field manager, as kube does with `kube-scheduler/v1.32.0`."""
    return f"{component}/v{VERSION}"


DEFAULT_USER_AGENT = user_agent("mkpy")


class ConfigError(Exception):
    """The kubeconfig or in-cluster configuration cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class ClientConfig:
    """Everything a REST client needs to reach and authenticate to one apiserver."""

    server: str
    ca_file: str | None = None
    ca_data: bytes | None = None
    cert_file: str | None = None
    cert_data: bytes | None = None
    key_file: str | None = None
    key_data: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    insecure_skip_tls_verify: bool = False
    namespace: str = "default"
    user_agent: str = DEFAULT_USER_AGENT
    qps: float = 0.0  # requests per second the client allows itself; 0 = unlimited
    burst: int = 0

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context: only the cluster's CA is trusted (the system's CAs when none is given; nothing is
        verified if asked), and the client certificate is presented."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            if self.insecure_skip_tls_verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            elif self.ca_data:
                context.load_verify_locations(cadata=self.ca_data.decode("ascii", "replace"))
            elif self.ca_file:
                context.load_verify_locations(cafile=self.ca_file)
            else:
                context.load_default_certs()
        except (OSError, ssl.SSLError, ValueError) as err:
            raise ConfigError(f"cannot load the certificate authority: {_one_line(err)}") from err
        if self.cert_file or self.cert_data:
            self._load_client_certificate(context)
        return context

    def _load_client_certificate(self, context: ssl.SSLContext) -> None:
        if not (self.key_file or self.key_data):
            raise ConfigError("a client certificate is set but no client key")
        try:
            with tempfile.TemporaryDirectory(prefix="mkpy-tls-") as scratch:
                # ssl loads key pairs only from files: embedded data goes to private, short-lived ones
                cert = self.cert_file or _private_file(Path(scratch) / "client.crt", self.cert_data)
                key = self.key_file or _private_file(Path(scratch) / "client.key", self.key_data)
                context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as err:
            raise ConfigError(f"cannot load the client certificate and key: {_one_line(err)}") from err


def load_kubeconfig(path: str | os.PathLike[str] | None = None, context: str | None = None) -> ClientConfig:
    """The ClientConfig of `context` (default: the current context) in the kubeconfig file(s)."""
    merged = _Merged()
    for file in _kubeconfig_files(path):
        merged.add(file, _read(file))
    name = context or merged.current_context
    if not name:
        raise ConfigError(f"{merged.describe()}: no current-context is set and no context was given")
    ctx, ctx_file = merged.entry("contexts", "context", name)
    cluster, cluster_file = merged.entry("clusters", "cluster", _required(ctx, "cluster", f"context {name!r}"))
    user, user_file = (merged.entry("users", "user", ctx["user"]) if ctx.get("user") else ({}, cluster_file))
    server = _required(cluster, "server", f"cluster {ctx['cluster']!r} in {cluster_file}")
    _refuse_unsupported_auth(user, user_file)
    return ClientConfig(
        server=server.rstrip("/"),
        ca_file=_path(cluster, "certificate-authority", cluster_file),
        ca_data=_data(cluster, "certificate-authority-data", cluster_file),
        cert_file=_path(user, "client-certificate", user_file),
        cert_data=_data(user, "client-certificate-data", user_file),
        key_file=_path(user, "client-key", user_file),
        key_data=_data(user, "client-key-data", user_file),
        token=user.get("token") or None,
        token_file=_path(user, "tokenFile", user_file),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        namespace=ctx.get("namespace") or "default",
    )


def in_cluster_config(directory: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
                      environ: Mapping[str, str] | None = None) -> ClientConfig:
    """The ClientConfig of a process running in a pod: the service account's token, CA and namespace."""
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT must be defined")
    folder = Path(directory)
    token_file, ca_file, namespace_file = folder / "token", folder / "ca.crt", folder / "namespace"
    if not token_file.is_file():
        raise ConfigError(f"unable to load in-cluster configuration: no service account token at {token_file}")
    host = f"[{host}]" if ":" in host else host
    namespace = namespace_file.read_text().strip() if namespace_file.is_file() else ""
    return ClientConfig(server=f"https://{host}:{port}", ca_file=str(ca_file) if ca_file.is_file() else None,
                        token_file=str(token_file), namespace=namespace or "default")


class _Merged:
    """Several kubeconfig files seen as one: per section, the first file to define a name wins."""

    def __init__(self) -> None:
        self.sections: dict[str, dict[str, tuple[dict[str, Any], Path]]] = {
            "clusters": {}, "users": {}, "contexts": {}}
        self.current_context = ""
        self.files: list[Path] = []

    def add(self, file: Path, config: dict[str, Any]) -> None:
        self.files.append(file)
        self.current_context = self.current_context or str(config.get("current-context") or "")
        for section, entries in self.sections.items():
            for entry in config.get(section) or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise ConfigError(f"{file}: every entry of {section} needs a name")
                entries.setdefault(entry["name"], (entry, file))

    def entry(self, section: str, field: str, name: str) -> tuple[dict[str, Any], Path]:
        found = self.sections[section].get(name)
        if found is None:
            raise ConfigError(f"{self.describe()}: {section[:-1]} {name!r} does not exist")
        entry, file = found
        body = entry.get(field) or {}
        if not isinstance(body, dict):
            raise ConfigError(f"{file}: {section[:-1]} {name!r}: {field} must be a mapping")
        return body, file

    def describe(self) -> str:
        return ", ".join(str(file) for file in self.files)


def _kubeconfig_files(path: str | os.PathLike[str] | None) -> list[Path]:
    if path is not None:
        return [Path(path)]
    listed = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    files = [file for file in listed if file.exists()]
    if listed and not files:
        raise ConfigError(f"none of the files in KUBECONFIG exist: {os.pathsep.join(map(str, listed))}")
    return files or [Path.home() / ".kube" / "config"]


def _read(file: Path) -> dict[str, Any]:
    try:
        config = yaml.safe_load(file.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such kubeconfig file") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{file}: cannot read the kubeconfig: {_one_line(err)}") from err
    if not isinstance(config, dict):
        raise ConfigError(f"{file}: not a kubeconfig (expected a mapping with clusters, users and contexts)")
    for section in ("clusters", "users", "contexts"):
        if not isinstance(config.get(section) or [], list):
            raise ConfigError(f"{file}: {section} must be a list")
    return config


def _required(entry: dict[str, Any], field: str, where: str) -> str:
    value = entry.get(field)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} has no {field}")
    return value


def _path(entry: dict[str, Any], field: str, file: Path) -> str | None:
    value = entry.get(field)
    if not value:
        return None
    resolved = Path(str(value))
    return str(resolved if resolved.is_absolute() else file.parent / resolved)


def _data(entry: dict[str, Any], field: str, file: Path) -> bytes | None:
    value = entry.get(field)
    if not value:
        return None
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{file}: {field} is not valid base64") from None


def _refuse_unsupported_auth(user: dict[str, Any], file: Path) -> None:
    for field in ("exec", "auth-provider", "username"):
        if user.get(field):
            raise ConfigError(f"{file}: user authentication by {field!r} is not supported by mkpy; "
                              "use a client certificate or a token")


def _private_file(path: Path, data: bytes | None) -> str:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data or b"")
    return str(path)


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())

"""A real control plane for tests and benchmarks: etcd plus an apiserver process, over HTTPS.

`ControlPlane` starts an etcd member (store.etcd_server.EtcdServer), issues a throwaway PKI (a CA, a serving
certificate, an admin client certificate in `system:masters`, the service-account key pair), and runs
`mkpy apiserver` as a child process exactly as `mkpy up` does. Beside it runs `mkpy kcm` with the controllers
every namespace relies on (`NAMESPACE_CONTROLLERS`: the default ServiceAccount, `kube-root-ca.crt`, quota
usage, namespace deletion, and the protection finalizers of claims and volumes taken off), as `system:kube-controller-manager`; tests of other controllers run those
in-process (tests/kcm/running.py). `controllers=""` leaves the controller manager out. `client()` returns an httpx client that
authenticates with the admin certificate; `kubeconfig` is a file for kubectl and the Python client.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from minikube_py.auth import pki
from minikube_py.store.etcd_server import EtcdCluster, EtcdServer, free_port

READY_TIMEOUT = 30.0
NAMESPACE_CONTROLLERS = "serviceaccount,root-ca-cert-publisher,resourcequota,namespace,pvc-protection,pv-protection"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


class ControlPlane:
    def __init__(self, *, extra_args: tuple[str, ...] = (), etcd: EtcdServer | EtcdCluster | None = None,
                 controllers: str = NAMESPACE_CONTROLLERS) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="mkpy-cp-"))
        self._owns_etcd = etcd is None
        self.etcd = etcd or EtcdServer(workdir=self.workdir / "etcd")
        self.port = free_port()
        self.extra_args = extra_args
        self.process: subprocess.Popen[bytes] | None = None
        self.controllers = controllers
        self.kcm: ChildProcess | None = None
        pki_dir = self.workdir / "pki"
        ca = pki.ensure_ca(pki_dir)
        ips, dns = pki.apiserver_sans("127.0.0.1", "10.96.0.0/12")
        self.serving = pki.ensure_serving_cert(pki_dir, ca, "apiserver", common_name="kube-apiserver",
                                               ip_addresses=ips, dns_names=dns)
        self.admin = pki.ensure_client_cert(pki_dir, ca, "admin", user="kubernetes-admin",
                                            groups=["system:masters"])
        self.ca_file = ca.cert_path
        self.sa_key, self.sa_pub = pki.ensure_service_account_key(pki_dir)
        self.kubeconfig = self.workdir / "kubeconfig"
        self._write_kubeconfig()

    @property
    def etcd_endpoints(self) -> list[str]:
        if isinstance(self.etcd, EtcdCluster):
            return self.etcd.endpoints
        return [self.etcd.endpoint]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "apiserver.log"

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "minikube_py.cli.main", "apiserver",
                f"--etcd-servers={','.join(self.etcd_endpoints)}", "--bind-address=127.0.0.1",
                f"--secure-port={self.port}", f"--tls-cert-file={self.serving.cert_path}",
                f"--tls-private-key-file={self.serving.key_path}", f"--client-ca-file={self.ca_file}",
                f"--service-account-key-file={self.sa_pub}", f"--service-account-signing-key-file={self.sa_key}",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
                *self.extra_args]  # extra_args may name other modes or plugins: the last of a flag wins

    def start(self) -> ControlPlane:
        if isinstance(self.etcd, EtcdCluster) or not self.etcd.running:
            self.etcd.start()
        self.start_apiserver()
        if self.controllers:
            self.start_kcm()
        return self

    def start_kcm(self) -> None:
        kubeconfig = self.component_kubeconfig("controller-manager", user="system:kube-controller-manager")
        self.kcm = ChildProcess([sys.executable, "-m", "minikube_py.cli.main", "kcm", f"--kubeconfig={kubeconfig}",
                                 f"--controllers={self.controllers}", f"--root-ca-file={self.ca_file}",
                                 "--leader-elect=false", "--secure-port=0"], self.workdir / "kcm.log")

    def start_apiserver(self) -> None:
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(self.argv(), stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        with self.client() as c:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"apiserver exited:\n{self.log_file.read_text()[-3000:]}")
                try:
                    if c.get("/readyz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        raise RuntimeError(f"apiserver not ready in {READY_TIMEOUT}s:\n{self.log_file.read_text()[-3000:]}")

    def stop_apiserver(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        if self.kcm is not None:
            self.kcm.stop()
        self.stop_apiserver()
        self.etcd.stop()
        # certificates, logs and (when it ran our own etcd) a 64 MB etcd WAL: a suite run would leave
        # hundreds of these behind
        shutil.rmtree(self.workdir, ignore_errors=True)

    def tls_context(self, *, with_admin_cert: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        if with_admin_cert:
            context.load_cert_chain(str(self.admin.cert_path), str(self.admin.key_path))
        return context

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, verify=self.tls_context(), timeout=30, **kwargs)  # type: ignore[arg-type]

    def async_client(self, **kwargs: object) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, verify=self.tls_context(), timeout=30, **kwargs)  # type: ignore[arg-type]

    def component_kubeconfig(self, name: str, user: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig with its own client certificate (e.g. "scheduler" as system:kube-scheduler), so a
        component runs with exactly the rights RBAC gives it, as under `mkpy up`."""
        pair = pki.ensure_client_cert(self.workdir / "pki", pki.ensure_ca(self.workdir / "pki"), name, user=user,
                                      groups=list(groups))
        path = self.workdir / f"{name}.kubeconfig"
        self._write_kubeconfig(path, pair.cert_path, pair.key_path)
        return path

    def _write_kubeconfig(self, path: Path | None = None, cert: Path | None = None, key: Path | None = None) -> None:
        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url,
                                                      "certificate-authority-data": b64(self.ca_file)}}],
            "users": [{"name": "user", "user": {"client-certificate-data": b64(cert or self.admin.cert_path),
                                                "client-key-data": b64(key or self.admin.key_path)}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "user"}}],
        }
        (path or self.kubeconfig).write_text(yaml.safe_dump(config))


class ChildProcess:
    """A component started as a child process of the tests, its output appended to `log_file`."""

    def __init__(self, argv: list[str], log_file: Path, env: dict[str, str] | None = None) -> None:
        self.log_file = log_file
        with open(log_file, "ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                            cwd=Path(__file__).resolve().parents[1],
                                            env={**(env or os.environ), "PYTHONUNBUFFERED": "1"})

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def stop(self, kill: bool = False) -> None:
        if self.process.poll() is None:
            self.process.kill() if kill else self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

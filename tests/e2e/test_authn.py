"""Authentication end to end: `kubectl create token`, the token used by kubectl and the Python client,
`kubectl auth whoami` (also with `--as`), and the component identities `mkpy up` issues.

kubectl sends TokenRequest and SelfSubjectReview bodies as protobuf, so these tests also cover decoding.
A token is only as good as what RBAC grants, so the tests bind the service account to a role that may
list namespaces (which also works while authorization is AlwaysAllow).
"""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest
import yaml
from kubernetes import client

from tests.e2e.conftest import KubeCluster, pod_manifest, run, unique

pytestmark = pytest.mark.e2e

ISSUER = "https://kubernetes.default.svc.cluster.local"


def claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


@pytest.fixture()
def bot(cluster: KubeCluster, namespace: str) -> str:
    """A service account `bot` in `namespace` that may list namespaces; its name."""
    cluster.kubectl("create", "serviceaccount", "bot", "-n", namespace)
    role = unique("ns-lister")
    cluster.kubectl("create", "clusterrole", role, "--verb=list,get", "--resource=namespaces")
    cluster.kubectl("create", "clusterrolebinding", role, f"--clusterrole={role}",
                    f"--serviceaccount={namespace}:bot")
    return "bot"


def kubectl_with_token(cluster: KubeCluster, token: str, *args: str, tmp_path: Path, check: bool = True):
    """kubectl with only a bearer token (an empty kubeconfig: no client certificate to fall back on)."""
    empty = tmp_path / "empty-kubeconfig"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    return run(["kubectl", f"--kubeconfig={empty}", f"--server={cluster.server}",
                f"--certificate-authority={cluster.dir / 'pki' / 'ca.crt'}", f"--token={token}", *args],
               env=cluster.env, check=check)


def test_a_token_from_kubectl_create_token_works_for_kubectl_and_the_python_client(cluster, namespace, bot,
                                                                                    tmp_path):
    token = cluster.kubectl("create", "token", bot, "-n", namespace).stdout.strip()
    assert claims(token)["sub"] == f"system:serviceaccount:{namespace}:bot"
    listed = kubectl_with_token(cluster, token, "get", "namespaces", "-o", "name", tmp_path=tmp_path).stdout
    assert f"namespace/{namespace}" in listed.split()
    configuration = client.Configuration(host=cluster.server, api_key={"authorization": token},
                                         api_key_prefix={"authorization": "Bearer"})
    configuration.ssl_ca_cert = str(cluster.dir / "pki" / "ca.crt")
    with client.ApiClient(configuration) as api:
        names = [ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items]
    assert namespace in names


def test_create_token_takes_a_duration_an_audience_and_a_bound_pod(cluster, namespace, bot):
    token = cluster.kubectl("create", "token", bot, "-n", namespace, "--duration=10m", "--audience=vault",
                            "--audience", ISSUER).stdout.strip()
    found = claims(token)
    assert found["aud"] == ["vault", ISSUER] and found["exp"] - found["iat"] == 600
    cluster.apply_manifest(yaml.safe_dump({**yaml.safe_load(pod_manifest("web")),
                                           "spec": {"serviceAccountName": bot,
                                                    "containers": [{"name": "app", "image": "nginx:1.27"}]}}),
                           namespace)
    bound = cluster.kubectl("create", "token", bot, "-n", namespace, "--bound-object-kind=Pod",
                            "--bound-object-name=web").stdout.strip()
    assert claims(bound)["kubernetes.io"]["pod"]["name"] == "web"


def test_create_token_errors_are_kubes(cluster, namespace, bot):
    short = cluster.kubectl("create", "token", bot, "-n", namespace, "--duration=1m", expect_failure=True)
    assert ('TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not '
            "specify a duration less than 10 minutes") in short.stderr
    missing = cluster.kubectl("create", "token", "ghost", "-n", namespace, expect_failure=True)
    assert 'serviceaccounts "ghost" not found' in missing.stderr


def test_auth_whoami_shows_the_user_and_acts_as_another_with_as(cluster, namespace, bot, tmp_path):
    table = cluster.kubectl("auth", "whoami").stdout
    assert table.split("\n")[0].split() == ["ATTRIBUTE", "VALUE"]
    assert "kubernetes-admin" in table and "system:masters" in table
    as_alice = yaml.safe_load(cluster.kubectl("--as", "alice", "--as-group", "devs", "auth", "whoami",
                                              "-o", "yaml").stdout)
    assert as_alice["status"]["userInfo"] == {"username": "alice", "groups": ["devs", "system:authenticated"]}
    token = cluster.kubectl("create", "token", bot, "-n", namespace).stdout.strip()
    mine = kubectl_with_token(cluster, token, "auth", "whoami", tmp_path=tmp_path).stdout
    assert f"system:serviceaccount:{namespace}:bot" in mine and f"system:serviceaccounts:{namespace}" in mine


@pytest.mark.parametrize("component,user", [
    ("controller-manager", "system:kube-controller-manager"),
    ("scheduler", "system:kube-scheduler"),
    ("cloud-controller-manager", "system:cloud-controller-manager"),
])
def test_each_component_has_its_own_identity_and_kubeconfig(cluster, component, user):
    config = cluster.dir / "kubeconfigs" / f"{component}.conf"
    assert config.stat().st_mode & 0o777 == 0o600
    shown = run(["kubectl", f"--kubeconfig={config}", "auth", "whoami", "-o", "yaml"], env=cluster.env).stdout
    assert yaml.safe_load(shown)["status"]["userInfo"] == {"username": user, "groups": ["system:authenticated"]}

"""RBAC through the real kubectl: an `auth can-i --as` matrix over users, groups and service accounts,
`auth can-i --list`, and `auth reconcile`, on the shared `mkpy up` cluster (which runs RBAC)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import KubeCluster, unique, wait_until

pytestmark = pytest.mark.e2e


def rbac_manifest(ns: str) -> str:
    return f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: pod-reader, namespace: {ns}}}
rules:
- {{apiGroups: [""], resources: [pods, pods/log], verbs: [get, list, watch]}}
- {{apiGroups: [""], resources: [configmaps], resourceNames: [settings], verbs: [get]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: readers, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}}
subjects:
- {{kind: User, apiGroup: rbac.authorization.k8s.io, name: alice}}
- {{kind: Group, apiGroup: rbac.authorization.k8s.io, name: auditors}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: robot-edit, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}}
subjects:
- {{kind: ServiceAccount, name: robot, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {ns}-ops}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
subjects:
- {{kind: Group, apiGroup: rbac.authorization.k8s.io, name: {ns}-ops}}
"""


@pytest.fixture(scope="module")
def rbac_ns(cluster: KubeCluster) -> str:
    ns = unique("rbac")
    cluster.kubectl("create", "namespace", ns)
    cluster.apply_manifest(rbac_manifest(ns))
    return ns


def can_i(cluster: KubeCluster, *args: str) -> bool:
    result = cluster.kubectl("auth", "can-i", *args, check=False)
    assert result.returncode in (0, 1), result
    assert result.stdout.strip() == ("yes" if result.returncode == 0 else "no"), result
    return result.returncode == 0


MATRIX = [
    # (who, verb and resource, in the test namespace?, allowed)
    (["--as", "alice"], ["list", "pods"], True, True),
    (["--as", "alice"], ["get", "pods/log"], True, True),
    (["--as", "alice"], ["delete", "pods"], True, False),
    (["--as", "alice"], ["list", "pods"], False, False),
    (["--as", "alice"], ["get", "configmaps/settings"], True, True),
    (["--as", "alice"], ["get", "configmaps/other"], True, False),
    (["--as", "mallory", "--as-group", "auditors"], ["watch", "pods"], True, True),
    (["--as", "mallory"], ["watch", "pods"], True, False),
    (["--as", "system:serviceaccount:{ns}:robot"], ["create", "deployments.apps"], True, True),
    (["--as", "system:serviceaccount:{ns}:robot"], ["create", "roles.rbac.authorization.k8s.io"], True, False),
    (["--as", "system:serviceaccount:default:robot"], ["create", "deployments.apps"], True, False),
    (["--as", "oscar", "--as-group", "{ns}-ops"], ["list", "services"], False, True),
    (["--as", "oscar", "--as-group", "{ns}-ops"], ["list", "secrets"], False, False),
    (["--as", "oscar", "--as-group", "system:masters"], ["delete", "nodes"], False, True),
    ([], ["create", "pods"], False, True),  # the admin
]


@pytest.mark.parametrize("who, what, in_namespace, allowed", MATRIX)
def test_can_i_matrix(cluster: KubeCluster, rbac_ns: str, who: list[str], what: list[str], in_namespace: bool,
                      allowed: bool) -> None:
    who = [part.format(ns=rbac_ns) for part in who]
    where = ["-n", rbac_ns] if in_namespace else ["-n", "default"]
    assert wait_until(lambda: can_i(cluster, *what, *who, *where) is allowed,
                      f"can-i {what} {who} to be {allowed}")


def test_can_i_list_shows_the_rules_table(cluster: KubeCluster, rbac_ns: str) -> None:
    out = cluster.kubectl("auth", "can-i", "--list", "--as", "alice", "-n", rbac_ns).stdout
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert lines[0] == "Resources Non-Resource URLs Resource Names Verbs"
    assert "pods/log [] [] [get list watch]" in lines
    assert "configmaps [] [settings] [get]" in lines
    assert "selfsubjectaccessreviews.authorization.k8s.io [] [] [create]" in lines
    assert "[/healthz] [] [get]" in lines  # the empty Resources column collapsed by split()


def test_auth_reconcile_creates_then_completes(cluster: KubeCluster) -> None:
    ns = unique("recon")
    cluster.kubectl("create", "namespace", ns)
    manifest = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: deployer, namespace: {ns}}}
rules:
- {{apiGroups: [apps], resources: [deployments], verbs: [get, create]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: deployer, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}}
subjects:
- {{kind: User, apiGroup: rbac.authorization.k8s.io, name: dana}}
"""
    out = cluster.kubectl("auth", "reconcile", "-f", "-", input=manifest).stdout
    assert "role.rbac.authorization.k8s.io/deployer reconciled" in out
    assert wait_until(lambda: can_i(cluster, "create", "deployments.apps", "--as", "dana", "-n", ns),
                      "dana to be able to create deployments")
    out = cluster.kubectl("auth", "reconcile", "-f", "-", input=manifest.replace("get, create", "delete")).stdout
    assert "reconciled" in out
    rules = cluster.kubectl_json("get", "role", "deployer", "-n", ns)["rules"]
    assert {tuple(r["verbs"]) for r in rules} >= {("get", "create"), ("delete",)}

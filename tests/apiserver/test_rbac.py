"""RBAC against a real apiserver started with `--authorization-mode=RBAC`: bootstrap policy, bindings taking
effect, missing roles, escalation prevention, aggregation and the access reviews.

Other users are played by the admin (system:masters) through impersonation headers, as `kubectl --as` does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.harness import ControlPlane

RBAC = "/apis/rbac.authorization.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def rbac_plane() -> Iterator[ControlPlane]:
    cp = ControlPlane(extra_args=("--authorization-mode=RBAC",)).start()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture()
def admin(rbac_plane: ControlPlane) -> Iterator[httpx.Client]:
    with rbac_plane.client() as client:
        yield client


@pytest.fixture()
def ns(admin: httpx.Client) -> str:
    name = f"rbac-{uuid.uuid4().hex[:8]}"
    r = admin.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert r.status_code == 201, r.text
    return name


def as_user(user: str, *groups: str) -> dict[str, str]:
    headers = {"Impersonate-User": user}
    return headers | ({"Impersonate-Group": groups[0]} if groups else {})


def eventually(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


def role(name: str, rules: list[dict[str, Any]], kind: str = "Role") -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "rules": rules}


def binding(name: str, role_kind: str, role_name: str, subjects: list[dict[str, Any]],
            kind: str = "RoleBinding") -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
            "subjects": subjects}


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def test_bootstrap_roles_and_bindings_exist_with_kube_metadata(admin: httpx.Client) -> None:
    for name in ("cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
                 "system:public-info-viewer", "system:node", "system:kube-scheduler",
                 "system:kube-controller-manager", "system:controller:deployment-controller"):
        r = admin.get(f"{RBAC}/clusterroles/{name}")
        assert r.status_code == 200, name
        meta = r.json()["metadata"]
        assert meta["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"
    crb = admin.get(f"{RBAC}/clusterrolebindings/system:controller:job-controller").json()
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system"}]
    assert admin.get(f"{RBAC}/clusterrolebindings/cluster-admin").json()["subjects"][0]["name"] == "system:masters"
    assert "subjects" not in admin.get(f"{RBAC}/clusterrolebindings/system:node").json()


def test_aggregated_roles_are_filled_and_follow_new_sources(admin: httpx.Client) -> None:
    view = admin.get(f"{RBAC}/clusterroles/view").json()
    assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]} in view["rules"]
    admin_rules = admin.get(f"{RBAC}/clusterroles/admin").json()["rules"]
    assert any("rolebindings" in r.get("resources", []) for r in admin_rules)  # from aggregate-to-admin
    assert any("pods/log" in r.get("resources", []) for r in admin_rules)  # view → edit → admin
    name = f"widgets-view-{uuid.uuid4().hex[:6]}"
    extra = role(name, [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}], "ClusterRole")
    extra["metadata"]["labels"] = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
    assert admin.post(f"{RBAC}/clusterroles", json=extra).status_code == 201
    assert eventually(lambda: any("widgets" in r.get("resources", [])
                                  for r in admin.get(f"{RBAC}/clusterroles/view").json()["rules"]))
    admin.delete(f"{RBAC}/clusterroles/{name}")
    assert eventually(lambda: not any("widgets" in r.get("resources", [])
                                      for r in admin.get(f"{RBAC}/clusterroles/view").json()["rules"]))


def test_anonymous_may_read_health_but_not_resources(rbac_plane: ControlPlane) -> None:
    with httpx.Client(base_url=rbac_plane.url, verify=rbac_plane.tls_context(with_admin_cert=False)) as anon:
        for path in ("/healthz", "/livez", "/readyz", "/version"):
            assert anon.get(path).status_code == 200, path
        r = anon.get("/api/v1/namespaces")
        assert r.status_code == 403
        assert r.json()["message"] == ('namespaces is forbidden: User "system:anonymous" cannot list resource '
                                       '"namespaces" in API group "" at the cluster scope')
        assert anon.get("/apis").status_code == 403  # discovery is for authenticated users only


def test_a_rolebinding_takes_effect_at_once_and_only_in_its_namespace(admin: httpx.Client, ns: str) -> None:
    alice = as_user("alice")
    r = admin.get(f"/api/v1/namespaces/{ns}/pods", headers=alice)
    assert r.status_code == 403
    assert r.json()["message"] == (f'pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
                                   f'in the namespace "{ns}"')
    assert admin.post(f"{RBAC}/namespaces/{ns}/rolebindings",
                      json=binding("alice-view", "ClusterRole", "view", [user("alice")])).status_code == 201
    assert eventually(lambda: admin.get(f"/api/v1/namespaces/{ns}/pods", headers=alice).status_code == 200, 1.0)
    assert admin.get("/api/v1/namespaces/default/pods", headers=alice).status_code == 403
    assert admin.get(f"/api/v1/namespaces/{ns}/secrets", headers=alice).status_code == 403  # view has no secrets


def test_a_binding_to_a_missing_role_grants_nothing_and_says_why(admin: httpx.Client, ns: str) -> None:
    assert admin.post(f"{RBAC}/namespaces/{ns}/rolebindings",
                      json=binding("ghost", "ClusterRole", "no-such-role", [user("carol")])).status_code == 201
    r = eventually(lambda: (lambda r: r if "not found" in r.text else None)(
        admin.get(f"/api/v1/namespaces/{ns}/pods", headers=as_user("carol"))))
    assert r is not None and r.status_code == 403
    assert r.json()["message"].endswith(
        ': RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found')


def ssar(client: httpx.Client, headers: dict[str, str], **attributes: str) -> dict[str, Any]:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes}}
    r = client.post(f"{AUTHZ}/selfsubjectaccessreviews", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["status"]


def test_self_subject_access_review_answers_with_kube_reasons(admin: httpx.Client, ns: str) -> None:
    assert admin.post(f"{RBAC}/clusterrolebindings", json=binding(
        f"dave-{ns}", "ClusterRole", "view", [user("dave")], "ClusterRoleBinding")).status_code == 201
    status = eventually(lambda: (lambda s: s if s["allowed"] else None)(
        ssar(admin, as_user("dave"), verb="get", resource="pods", namespace=ns)))
    assert status == {"allowed": True, "reason":
                      f'RBAC: allowed by ClusterRoleBinding "dave-{ns}" of ClusterRole "view" to User "dave"'}
    assert ssar(admin, as_user("dave"), verb="delete", resource="pods", namespace=ns) == {"allowed": False}
    assert ssar(admin, as_user("dave"), verb="get", resource="pods", subresource="log", namespace=ns)["allowed"]


def test_subject_and_local_subject_access_reviews(admin: httpx.Client, ns: str) -> None:
    sar = {"spec": {"user": "erin", "groups": ["system:masters"],
                    "resourceAttributes": {"verb": "delete", "resource": "nodes"}}}
    r = admin.post(f"{AUTHZ}/subjectaccessreviews", json=sar)
    assert r.status_code == 201 and r.json()["status"]["allowed"] is True
    bad = admin.post(f"{AUTHZ}/subjectaccessreviews", json={"spec": {"resourceAttributes": {"verb": "get"}}})
    assert bad.status_code == 422
    assert "at least one of user or group must be specified" in bad.json()["message"]
    neither = admin.post(f"{AUTHZ}/subjectaccessreviews", json={"spec": {"user": "x"}})
    assert neither.status_code == 422
    lsar = {"spec": {"user": "erin", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "x"}}}
    r = admin.post(f"{AUTHZ}/namespaces/{ns}/localsubjectaccessreviews", json=lsar)
    assert r.status_code == 400
    assert r.json()["message"] == f"spec.resourceAttributes.namespace must match namespace: {ns}"


def test_self_subject_rules_review_lists_what_the_user_holds(admin: httpx.Client, ns: str) -> None:
    admin.post(f"{RBAC}/namespaces/{ns}/roles", json=role("cm-reader", [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"]}]))
    admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=binding("frank", "Role", "cm-reader", [user("frank")]))

    def rules() -> Any:
        body = {"spec": {"namespace": ns}}
        r = admin.post(f"{AUTHZ}/selfsubjectrulesreviews", json=body, headers=as_user("frank"))
        assert r.status_code == 201, r.text
        found = r.json()["status"]
        return found if any("configmaps" in x["resources"] for x in found["resourceRules"]) else None
    status = eventually(rules)
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["settings"]} in status["resourceRules"]
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} \
        in status["nonResourceRules"]
    assert status["incomplete"] is False


def test_creating_a_role_with_permissions_not_held_is_forbidden(admin: httpx.Client, ns: str) -> None:
    admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=binding("gina-admin", "ClusterRole", "admin",
                                                                    [user("gina")]))
    gina = as_user("gina", "devs")
    ok = role("reader", [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
    assert eventually(lambda: admin.post(f"{RBAC}/namespaces/{ns}/roles", json=ok, headers=gina).status_code == 201)
    grab = role("grab", [{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["nodes"]},
                         {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
    r = admin.post(f"{RBAC}/namespaces/{ns}/roles", json=grab, headers=gina)
    assert r.status_code == 403
    assert r.json()["message"] == (
        'roles.rbac.authorization.k8s.io "grab" is forbidden: user "gina" (groups=["devs" "system:authenticated"])'
        ' is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["nodes"], Verbs:["get" "delete"]}')
    live = admin.get(f"{RBAC}/namespaces/{ns}/roles/reader").json()
    live["rules"][0]["verbs"].append("deletecollection")
    live["rules"].append({"verbs": ["create"], "apiGroups": [""], "resources": ["nodes"]})
    r = admin.put(f"{RBAC}/namespaces/{ns}/roles/reader", json=live, headers=gina)
    assert r.status_code == 403 and 'Resources:["nodes"], Verbs:["create"]}' in r.json()["message"]


def test_binding_needs_the_roles_permissions_or_bind(admin: httpx.Client, ns: str) -> None:
    admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=binding("hal-admin", "ClusterRole", "admin",
                                                                    [user("hal")]))
    hal = as_user("hal")
    to_edit = binding("x-edit", "ClusterRole", "edit", [user("x")])
    assert eventually(lambda: admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=to_edit,
                                         headers=hal).status_code == 201)
    to_admin = binding("x-cluster-admin", "ClusterRole", "cluster-admin", [user("x")])
    r = admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=to_admin, headers=hal)
    assert r.status_code == 403
    assert r.json()["message"].startswith('rolebindings.rbac.authorization.k8s.io "x-cluster-admin" is forbidden: '
                                          'user "hal" (groups=["system:authenticated"]) is attempting to grant')
    r = admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=binding("x-ghost", "ClusterRole", "ghost",
                                                                        [user("x")]), headers=hal)
    assert r.status_code == 404
    assert r.json()["message"] == 'clusterrole.rbac.authorization.k8s.io "ghost" not found'
    admin.post(f"{RBAC}/namespaces/{ns}/roles", json=role("binder", [{
        "verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
        "resourceNames": ["cluster-admin"]}]))
    admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=binding("hal-binder", "Role", "binder", [user("hal")]))
    assert eventually(lambda: admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=to_admin,
                                         headers=hal).status_code == 201)

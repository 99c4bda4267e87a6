"""The RBAC policy translation (objects → Casbin), the authorizer's decisions and reasons, escalation
checks and the bootstrap data, without a server."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.auth.authn import UserInfo
from minikube_py.auth.authorizer import Attributes, Decision
from minikube_py.auth.rbac import bootstrap
from minikube_py.auth.rbac.authorizer import RBACAuthorizer, decide
from minikube_py.auth.rbac.escalation import confirm_no_escalation, go_quote
from minikube_py.auth.rbac.policy import Policy, Rule


def rule(verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": verbs.split()}
    if resources:
        out["apiGroups"] = ["" if g == "core" else g for g in groups.split()] or [""]
        out["resources"] = resources.split()
    if names:
        out["resourceNames"] = names.split()
    if urls:
        out["nonResourceURLs"] = urls.split()
    return out


def cluster_role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": list(rules)}


def binding(name: str, role_kind: str, role: str, *subjects: dict[str, Any], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "roleRef": {"kind": role_kind, "name": role}, "subjects": list(subjects)}


ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))
BOB = UserInfo("bob", groups=("system:authenticated",))
ROBOT = UserInfo("system:serviceaccount:apps:robot", groups=("system:serviceaccounts",))

POLICY = Policy.build(
    roles=[{"metadata": {"name": "cm", "namespace": "team"},
            "rules": [rule("get", "core", "configmaps", names="settings")]}],
    cluster_roles=[
        cluster_role("pod-reader", rule("get list", "core", "pods pods/log")),
        cluster_role("scaler", rule("get update", "*", "*/scale")),
        cluster_role("star-sub", rule("get", "core", "pods/*")),
        cluster_role("everything", rule("*", "*", "*")),
        cluster_role("health", rule("get", urls="/healthz /logs/*")),
        cluster_role("deploys", rule("create", "apps", "deployments")),
    ],
    role_bindings=[
        binding("alice-pods", "ClusterRole", "pod-reader", {"kind": "User", "name": "alice"}, namespace="team"),
        binding("alice-cm", "Role", "cm", {"kind": "User", "name": "alice"}, namespace="team"),
        binding("robot", "ClusterRole", "everything", {"kind": "ServiceAccount", "name": "robot"}, namespace="apps"),
        binding("ghost", "ClusterRole", "no-such", {"kind": "Group", "name": "devs"}, namespace="team"),
        binding("odd", "ClusterRole", "everything", {"kind": "Robot", "name": "alice"}, namespace="team"),
    ],
    cluster_role_bindings=[
        binding("devs-scale", "ClusterRole", "scaler", {"kind": "Group", "name": "devs"}),
        binding("devs-star", "ClusterRole", "star-sub", {"kind": "Group", "name": "devs"}),
        binding("all-health", "ClusterRole", "health", {"kind": "Group", "name": "system:authenticated"}),
        binding("bob-deploys", "ClusterRole", "deploys", {"kind": "User", "name": "bob"}),
        binding("bad-role-kind", "Role", "cm", {"kind": "User", "name": "bob"}),
    ],
)


def res(user: UserInfo, verb: str, resource: str, namespace: str = "", group: str = "", name: str = "",
        sub: str = "") -> Attributes:
    return Attributes(user=user, verb=verb, namespace=namespace, api_group=group, resource=resource, name=name,
                      subresource=sub)


def path(user: UserInfo, verb: str, url: str) -> Attributes:
    return Attributes(user=user, verb=verb, resource_request=False, path=url)


@pytest.mark.parametrize("case, attributes, allowed", [
    ("a RoleBinding to a ClusterRole grants in its namespace", res(ALICE, "list", "pods", "team"), True),
    ("... and nowhere else", res(ALICE, "list", "pods", "other"), False),
    ("... and not at the cluster scope", res(ALICE, "list", "pods"), False),
    ("a listed subresource", res(ALICE, "get", "pods", "team", sub="log"), True),
    ("an unlisted verb", res(ALICE, "delete", "pods", "team"), False),
    ("*/scale matches any scale subresource via a group", res(ALICE, "update", "deployments", "x", "apps",
                                                              sub="scale"), True),
    ("*/scale does not match the resource itself", res(ALICE, "get", "deployments", "x", "apps"), False),
    ("pods/* is a literal name in kube, not a wildcard", res(ALICE, "get", "pods", "x", sub="exec"), False),
    ("resourceNames: the named object", res(ALICE, "get", "configmaps", "team", name="settings"), True),
    ("resourceNames: another object", res(ALICE, "get", "configmaps", "team", name="other"), False),
    ("resourceNames: a list has no name", res(ALICE, "list", "configmaps", "team"), False),
    ("a service account subject is its user name", res(ROBOT, "delete", "secrets", "apps"), True),
    ("... only in the binding's namespace", res(ROBOT, "delete", "secrets", "default"), False),
    ("a ClusterRoleBinding grants everywhere", res(BOB, "create", "deployments", "any", "apps"), True),
    ("... but only the role's group", res(BOB, "create", "deployments", "any", "extensions"), False),
    ("a ClusterRoleBinding may not reference a Role", res(BOB, "get", "configmaps", "team", name="settings"),
     False),
    ("a non-resource URL exactly", path(BOB, "get", "/healthz"), True),
    ("a non-resource URL by prefix*", path(BOB, "get", "/logs/kube.log"), True),
    ("a non-resource URL not granted", path(BOB, "get", "/metrics"), False),
    ("an unknown subject kind grants nothing", res(ALICE, "delete", "secrets", "team"), False),
])
def test_authorize(case: str, attributes: Attributes, allowed: bool) -> None:
    decision, _ = decide(POLICY, attributes)
    assert (decision is Decision.ALLOW) is allowed, case


def test_allow_reasons_name_the_binding_the_way_kube_does() -> None:
    assert decide(POLICY, res(ALICE, "list", "pods", "team")) == (
        Decision.ALLOW, 'RBAC: allowed by RoleBinding "alice-pods/team" of ClusterRole "pod-reader" to User "alice"')
    assert decide(POLICY, res(ROBOT, "get", "pods", "apps"))[1] == (
        'RBAC: allowed by RoleBinding "robot/apps" of ClusterRole "everything" to ServiceAccount "robot/apps"')
    assert decide(POLICY, res(BOB, "create", "deployments", "x", "apps"))[1] == (
        'RBAC: allowed by ClusterRoleBinding "bob-deploys" of ClusterRole "deploys" to User "bob"')


def test_a_missing_role_is_the_denial_reason_and_never_an_error() -> None:
    assert decide(POLICY, res(ALICE, "delete", "pods", "team")) == (
        Decision.NO_OPINION, 'RBAC: clusterrole.rbac.authorization.k8s.io "no-such" not found')
    assert decide(POLICY, res(ALICE, "delete", "pods", "elsewhere")) == (Decision.NO_OPINION, "")


def test_building_from_garbage_never_raises() -> None:
    policy = Policy.build([{}], [{"metadata": {"name": "x"}, "rules": ["not a rule", {"verbs": "get"}]}],
                          [{"roleRef": "nope"}, {"roleRef": {"kind": "ClusterRole"}, "subjects": [{}]}],
                          [{"metadata": {"name": "y"}, "roleRef": {"kind": "ClusterRole", "name": "x"},
                            "subjects": [{"kind": "User", "name": "u"}, "junk"]}])
    assert decide(policy, res(UserInfo("u"), "get", "pods"))[0] is Decision.NO_OPINION


def test_decisions_are_cached_until_the_policy_changes() -> None:
    current = [POLICY]
    authorizer = RBACAuthorizer(lambda: current[0])
    assert authorizer.authorize(res(BOB, "list", "pods"))[0] is Decision.NO_OPINION
    current[0] = Policy.build([], [cluster_role("r", rule("list", "core", "pods"))], [],
                              [binding("b", "ClusterRole", "r", {"kind": "User", "name": "bob"})])
    assert authorizer.authorize(res(BOB, "list", "pods"))[0] is Decision.ALLOW


def test_one_cached_decision_serves_every_name_unless_a_rule_names_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    import minikube_py.auth.rbac.authorizer as module

    asked: list[str] = []

    def counting(policy: Policy, attributes: Attributes) -> tuple[Decision, str]:
        asked.append(attributes.name)
        return decide(policy, attributes)

    monkeypatch.setattr(module, "decide", counting)
    authorizer = RBACAuthorizer(lambda: POLICY)
    for name in ("a", "b", "c"):
        assert authorizer.authorize(res(ALICE, "get", "pods", namespace="team", name=name))[0] is Decision.ALLOW
    assert asked == ["a"]  # no rule lists pod names: the name cannot change the answer
    # a Role grants alice the configmap "settings" only: each name is decided on its own
    assert authorizer.authorize(res(ALICE, "get", "configmaps", namespace="team", name="settings"))[0] \
        is Decision.ALLOW
    assert authorizer.authorize(res(ALICE, "get", "configmaps", namespace="team", name="other"))[0] \
        is Decision.NO_OPINION
    assert asked == ["a", "settings", "other"]


def test_escalation_message_matches_kube() -> None:
    wanted = [Rule.from_api(rule("get list delete", "core", "pods")), Rule.from_api(rule("get", urls="/metrics"))]
    message = confirm_no_escalation(POLICY, ALICE, "team", wanted)
    assert message == ('user "alice" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC '
                       'permissions not currently held:\n'
                       '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}\n'
                       '{NonResourceURLs:["/metrics"], Verbs:["get"]}'
                       '; resolution errors: [clusterrole.rbac.authorization.k8s.io "no-such" not found]')


@pytest.mark.parametrize("case, user, namespace, rules, held", [
    ("rules the user holds", ALICE, "team", [rule("get", "core", "pods/log")], True),
    ("a wildcard verb is covered only by a wildcard", ALICE, "team", [rule("*", "core", "pods")], False),
    ("a named object inside an unnamed grant", ALICE, "team", [rule("get", "core", "pods", names="a")], True),
    ("all objects when only one is held", ALICE, "team", [rule("get", "core", "configmaps")], False),
    ("everything for an everything holder", ROBOT, "apps", [rule("*", "*", "*")], True),
    ("system:masters holds everything", UserInfo("root", groups=("system:masters",)), "",
     [rule("*", "*", "*")], True),
])
def test_covers(case: str, user: UserInfo, namespace: str, rules: list[dict[str, Any]], held: bool) -> None:
    message = confirm_no_escalation(POLICY, user, namespace, [Rule.from_api(r) for r in rules])
    assert (message is None) is held, case


def test_go_quote_escapes_like_go() -> None:
    assert go_quote('a"b\\c\n') == '"a\\"b\\\\c\\n"'


def test_bootstrap_policy_is_kube_shaped() -> None:
    roles = {r["metadata"]["name"]: r for r in bootstrap.cluster_roles()}
    bindings = {b["metadata"]["name"]: b for b in bootstrap.cluster_role_bindings()}
    assert roles["cluster-admin"]["rules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, {"verbs": ["*"], "nonResourceURLs": ["*"]}]
    assert roles["edit"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert roles["view"]["aggregationRule"] == {"clusterRoleSelectors": [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
    assert set(bindings) <= set(roles)  # every bootstrap binding has its role
    for name in ("deployment", "replicaset", "replication", "statefulset", "daemon-set", "job", "cronjob",
                 "endpoint", "endpointslice", "namespace", "service-account", "node", "pod-garbage-collector",
                 "horizontal-pod-autoscaler", "disruption", "ttl-after-finished", "root-ca-cert-publisher"):
        full = name if name.endswith(("collector", "autoscaler", "publisher")) else f"{name}-controller"
        assert bindings[f"system:controller:{full}"]["subjects"] == [
            {"kind": "ServiceAccount", "name": full, "namespace": "kube-system"}]
    assert bindings["system:public-info-viewer"]["subjects"][1]["name"] == "system:unauthenticated"
    policy = Policy.build([], bootstrap.cluster_roles(), [], bootstrap.cluster_role_bindings())
    anonymous = UserInfo("system:anonymous", groups=("system:unauthenticated",))
    assert decide(policy, path(anonymous, "get", "/readyz"))[0] is Decision.ALLOW
    assert decide(policy, path(anonymous, "get", "/api"))[0] is Decision.NO_OPINION
    scheduler = UserInfo("system:kube-scheduler", groups=("system:authenticated",))
    assert decide(policy, res(scheduler, "create", "pods", "x", sub="binding"))[0] is Decision.ALLOW


CCM = UserInfo("system:cloud-controller-manager", groups=("system:authenticated",))


@pytest.mark.parametrize("attributes, allowed", [
    (res(CCM, "update", "nodes", name="n1"), True),  # the cloud-node controller initializes a node
    (res(CCM, "delete", "nodes", name="n1"), True),  # the lifecycle controller deletes a node whose VM is gone
    (res(CCM, "patch", "nodes", name="n1", sub="status"), True),  # addresses, NetworkUnavailable
    (res(CCM, "update", "nodes", name="n1", sub="status"), False),
    (res(CCM, "patch", "services", "web", name="web"), True),  # the load-balancer finalizer
    (res(CCM, "patch", "services", "web", name="web", sub="status"), True),  # status.loadBalancer
    (res(CCM, "create", "services", "web"), False),
    (res(CCM, "watch", "endpoints"), True),  # the local cloud's load balancers follow the endpoints
    (res(CCM, "create", "events", "web"), True),
    (res(CCM, "update", "leases", "kube-system", "coordination.k8s.io", "cloud-controller-manager"), True),
    (res(CCM, "update", "leases", "kube-system", "coordination.k8s.io", "kube-controller-manager"), False),
    (res(CCM, "get", "secrets", "kube-system"), False),
    (res(CCM, "delete", "pods", "web"), False),
])
def test_the_cloud_controller_manager_may_do_exactly_what_its_controllers_need(attributes, allowed) -> None:
    policy = Policy.build([], bootstrap.cluster_roles(), [], bootstrap.cluster_role_bindings())
    assert (decide(policy, attributes)[0] is Decision.ALLOW) is allowed


def test_the_cloud_controller_manager_role_is_the_documented_one() -> None:
    role = {r["metadata"]["name"]: r for r in bootstrap.cluster_roles()}["system:cloud-controller-manager"]
    granted = {(resource, verb) for rule in role["rules"] for resource in rule["resources"] for verb in rule["verbs"]}
    assert granted == {
        *(("events", v) for v in ("create", "patch", "update")), ("nodes", "*"), ("nodes/status", "patch"),
        *(("services", v) for v in ("list", "patch", "update", "watch")),
        *(("services/status", v) for v in ("patch", "update")), ("serviceaccounts", "create"),
        *(("persistentvolumes", v) for v in ("get", "list", "update", "watch")),
        *(("endpoints", v) for v in ("create", "get", "list", "update", "watch")),
        ("leases", "create"), ("leases", "get"), ("leases", "update")}


SCHEDULER = UserInfo("system:kube-scheduler", groups=("system:authenticated",))


@pytest.mark.parametrize("attributes, allowed", [
    *((res(SCHEDULER, verb, "persistentvolumeclaims", "web"), True) for verb in ("get", "list", "watch")),
    *((res(SCHEDULER, verb, "persistentvolumes"), True) for verb in ("get", "list", "watch")),
    *((res(SCHEDULER, verb, "storageclasses", group="storage.k8s.io"), True) for verb in ("get", "list", "watch")),
    (res(SCHEDULER, "create", "storageclasses", group="storage.k8s.io"), False),
    (res(SCHEDULER, "delete", "persistentvolumeclaims", "web", name="data"), False),
])
def test_the_scheduler_reads_claims_volumes_and_storage_classes_for_volume_binding(attributes, allowed) -> None:
    """system:kube-scheduler reads claims and volumes, and system:volume-scheduler (bound to the same user)
    adds StorageClasses: what the VolumeBinding plugin needs."""
    policy = Policy.build([], bootstrap.cluster_roles(), [], bootstrap.cluster_role_bindings())
    assert (decide(policy, attributes)[0] is Decision.ALLOW) is allowed

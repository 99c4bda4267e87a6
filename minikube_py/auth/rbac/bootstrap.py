"""kube's bootstrap RBAC policy: the ClusterRoles and ClusterRoleBindings every cluster starts with.

The data reproduces kube-apiserver 1.32's `bootstrappolicy` (policy.go and controller_policy.go): the
user-facing roles (cluster-admin, admin, edit, view and their `system:aggregate-to-*` parts, aggregated by
label), the discovery and public-info roles, one role per component identity (system:kube-scheduler,
system:kube-controller-manager, system:node, system:node-proxier, ...) and one `system:controller:<name>`
role per controller of kube-controller-manager, bound to that controller's ServiceAccount in kube-system.
`system:node` is bound to nobody: the Node authorizer decides for kubelets, as in kube. Two objects come
from elsewhere, for what mkpy builds in: kubeadm's kubelet-api-admin binding for the apiserver's kubelet
client, and metrics-server's system:aggregated-metrics-reader (metrics.k8s.io for view, edit and admin).

Every object carries the label `kubernetes.io/bootstrapping: rbac-defaults` and the annotation
`rbac.authorization.kubernetes.io/autoupdate: "true"`; `apiserver/rbac.py` reconciles them at start.
The controllers' roles are in `controller_roles.py`. Role rules are written with `rules.rule()`.
"""

from __future__ import annotations

import copy
from typing import Any

from .controller_roles import CONTROLLER_ROLES
from .rules import CORE, EVENTS, READ, READ_WRITE, WRITE, rule, urls

RBAC_API = "rbac.authorization.k8s.io/v1"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"

def _aggregate_to(role: str) -> dict[str, str]:
    return {AGGREGATE_TO + role: "true"}


# name → (rules, extra labels, aggregated from the roles with these labels)
_CLUSTER_ROLES: dict[str, tuple[list[dict[str, Any]], dict[str, str], dict[str, str] | None]] = {
    "cluster-admin": ([rule("*", ("*",), "*"), urls("*", "*")], {}, None),
    "admin": ([], {}, _aggregate_to("admin")),
    "edit": ([], _aggregate_to("admin"), _aggregate_to("edit")),
    "view": ([], _aggregate_to("edit"), _aggregate_to("view")),
    "system:aggregate-to-admin": ([
        rule("create", ("authorization.k8s.io",), "localsubjectaccessreviews"),
        rule(READ_WRITE, ("rbac.authorization.k8s.io",), "rolebindings roles"),
    ], _aggregate_to("admin"), None),
    "system:aggregate-to-edit": ([
        rule(READ, CORE, "pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy"),
        rule("impersonate", CORE, "serviceaccounts"),
        rule(WRITE, CORE, "pods pods/attach pods/exec pods/portforward pods/proxy"),
        rule("create", CORE, "pods/eviction"),
        rule(WRITE, CORE, "configmaps events persistentvolumeclaims replicationcontrollers "
                          "replicationcontrollers/scale secrets serviceaccounts services services/proxy"),
        rule("create", CORE, "serviceaccounts/token"),
        rule(WRITE, ("apps",), "daemonsets deployments deployments/rollback deployments/scale replicasets "
                               "replicasets/scale statefulsets statefulsets/scale"),
        rule(WRITE, ("autoscaling",), "horizontalpodautoscalers"),
        rule(WRITE, ("batch",), "cronjobs jobs"),
        rule(WRITE, ("extensions",), "daemonsets deployments deployments/rollback deployments/scale ingresses "
                                     "networkpolicies replicasets replicasets/scale replicationcontrollers/scale"),
        rule(WRITE, ("policy",), "poddisruptionbudgets"),
        rule(WRITE, ("networking.k8s.io",), "ingresses networkpolicies"),
        rule(READ_WRITE, ("coordination.k8s.io",), "leases"),
    ], _aggregate_to("edit"), None),
    "system:aggregate-to-view": ([
        rule(READ, CORE, "configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status pods "
                         "replicationcontrollers replicationcontrollers/scale serviceaccounts services "
                         "services/status"),
        rule(READ, CORE, "bindings events limitranges namespaces/status pods/log pods/status "
                         "replicationcontrollers/status resourcequotas resourcequotas/status"),
        rule(READ, CORE, "namespaces"),
        rule(READ, ("discovery.k8s.io",), "endpointslices"),
        rule(READ, ("apps",), "controllerrevisions daemonsets daemonsets/status deployments deployments/scale "
                              "deployments/status replicasets replicasets/scale replicasets/status statefulsets "
                              "statefulsets/scale statefulsets/status"),
        rule(READ, ("autoscaling",), "horizontalpodautoscalers horizontalpodautoscalers/status"),
        rule(READ, ("batch",), "cronjobs cronjobs/status jobs jobs/status"),
        rule(READ, ("extensions",), "daemonsets daemonsets/status deployments deployments/scale "
                                    "deployments/status ingresses ingresses/status networkpolicies replicasets "
                                    "replicasets/scale replicasets/status replicationcontrollers/scale"),
        rule(READ, ("policy",), "poddisruptionbudgets poddisruptionbudgets/status"),
        rule(READ, ("networking.k8s.io",), "ingresses ingresses/status networkpolicies"),
    ], _aggregate_to("view"), None),
    # not in kube's own policy: metrics-server's manifest adds it; mkpy serves metrics.k8s.io itself
    "system:aggregated-metrics-reader": ([rule(READ, ("metrics.k8s.io",), "pods nodes")],
                                         {**_aggregate_to("view"), **_aggregate_to("edit"),
                                          **_aggregate_to("admin")}, None),
    "system:auth-delegator": ([
        rule("create", ("authentication.k8s.io",), "tokenreviews"),
        rule("create", ("authorization.k8s.io",), "subjectaccessreviews"),
    ], {}, None),
    "system:basic-user": ([
        rule("create", ("authorization.k8s.io",), "selfsubjectaccessreviews selfsubjectrulesreviews"),
        rule("create", ("authentication.k8s.io",), "selfsubjectreviews"),
    ], {}, None),
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient": ([
        rule("create", ("certificates.k8s.io",), "certificatesigningrequests/nodeclient")], {}, None),
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient": ([
        rule("create", ("certificates.k8s.io",), "certificatesigningrequests/selfnodeclient")], {}, None),
    "system:certificates.k8s.io:kube-apiserver-client-approver": ([
        rule("approve", ("certificates.k8s.io",), "signers", "kubernetes.io/kube-apiserver-client")], {}, None),
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver": ([
        rule("approve", ("certificates.k8s.io",), "signers", "kubernetes.io/kube-apiserver-client-kubelet")],
        {}, None),
    "system:certificates.k8s.io:kubelet-serving-approver": ([
        rule("approve", ("certificates.k8s.io",), "signers", "kubernetes.io/kubelet-serving")], {}, None),
    "system:certificates.k8s.io:legacy-unknown-approver": ([
        rule("approve", ("certificates.k8s.io",), "signers", "kubernetes.io/legacy-unknown")], {}, None),
    "system:discovery": ([urls("get", "/api /api/* /apis /apis/* /healthz /livez /openapi /openapi/* /readyz "
                                      "/version /version/")], {}, None),
    "system:heapster": ([
        rule(READ, CORE, "events namespaces nodes pods"),
        rule(READ, ("extensions",), "deployments"),
    ], {}, None),
    "system:kube-aggregator": ([rule(READ, CORE, "endpoints services")], {}, None),
    "system:kube-controller-manager": ([
        EVENTS,
        rule("create", ("coordination.k8s.io",), "leases"),
        rule("get update", ("coordination.k8s.io",), "leases", "kube-controller-manager"),
        rule("create", CORE, "secrets serviceaccounts"),
        rule("delete", CORE, "secrets"),
        rule("get", CORE, "configmaps namespaces secrets serviceaccounts"),
        rule("update", CORE, "secrets serviceaccounts"),
        rule("create", ("authentication.k8s.io",), "tokenreviews"),
        rule("create", ("authorization.k8s.io",), "subjectaccessreviews"),
        rule("list watch", ("*",), "*"),
        rule("create", CORE, "serviceaccounts/token"),
    ], {}, None),
    "system:kube-dns": ([rule("list watch", CORE, "endpoints services")], {}, None),
    # kube ships this role with the cloud-controller-manager's manifests rather than in its bootstrap policy;
    # mkpy bootstraps it so `mkpy ccm` works out of the box. Exactly what the four cloud controllers, the
    # local cloud's load balancers (endpoints) and leader election use.
    "system:cloud-controller-manager": ([
        rule("create patch update", CORE, "events"),
        rule("*", CORE, "nodes"),
        rule("patch", CORE, "nodes/status"),
        rule("list patch update watch", CORE, "services"),
        rule("patch update", CORE, "services/status"),
        rule("create", CORE, "serviceaccounts"),
        rule("get list update watch", CORE, "persistentvolumes"),
        rule("create get list update watch", CORE, "endpoints"),
        rule("create", ("coordination.k8s.io",), "leases"),
        rule("get update", ("coordination.k8s.io",), "leases", "cloud-controller-manager"),
    ], {}, None),
    "system:kube-scheduler": ([
        EVENTS,
        rule("create", ("coordination.k8s.io",), "leases"),
        rule("get update", ("coordination.k8s.io",), "leases", "kube-scheduler"),
        rule(READ, CORE, "nodes"),
        rule("delete get list watch", CORE, "pods"),
        rule("create", CORE, "bindings pods/binding"),
        rule("patch update", CORE, "pods/status"),
        rule(READ, CORE, "replicationcontrollers services"),
        rule(READ, ("apps", "extensions"), "replicasets"),
        rule(READ, ("apps",), "statefulsets"),
        rule(READ, ("policy",), "poddisruptionbudgets"),
        rule(READ, CORE, "persistentvolumeclaims persistentvolumes"),
        rule("create", ("authentication.k8s.io",), "tokenreviews"),
        rule("create", ("authorization.k8s.io",), "subjectaccessreviews"),
        rule(READ, ("storage.k8s.io",), "csinodes"),
        rule(READ, CORE, "namespaces"),
        rule(READ, ("storage.k8s.io",), "csidrivers"),
        rule(READ, ("storage.k8s.io",), "csistoragecapacities"),
    ], {}, None),
    "system:kubelet-api-admin": ([
        rule(READ, CORE, "nodes"),
        rule("proxy", CORE, "nodes"),
        rule("*", CORE, "nodes/log nodes/metrics nodes/proxy nodes/stats"),
    ], {}, None),
    "system:monitoring": ([urls("get", "/healthz /healthz/* /livez /livez/* /metrics /metrics/slis /readyz "
                                       "/readyz/*")], {}, None),
    "system:node": ([
        rule("create", ("authentication.k8s.io",), "tokenreviews"),
        rule("create", ("authorization.k8s.io",), "localsubjectaccessreviews subjectaccessreviews"),
        rule(READ, CORE, "services"),
        rule("create get list watch", CORE, "nodes"),
        rule("patch update", CORE, "nodes/status"),
        rule("patch update", CORE, "nodes"),
        rule("create patch update", CORE, "events"),
        rule(READ, CORE, "pods"),
        rule("create delete", CORE, "pods"),
        rule("patch update", CORE, "pods/status"),
        rule("create", CORE, "pods/eviction"),
        rule(READ, CORE, "configmaps secrets"),
        rule("get", CORE, "persistentvolumeclaims persistentvolumes"),
        rule("get", CORE, "endpoints"),
        rule("create get list watch", ("certificates.k8s.io",), "certificatesigningrequests"),
        rule("create delete get patch update", ("coordination.k8s.io",), "leases"),
        rule("get", ("storage.k8s.io",), "volumeattachments"),
        rule("create", CORE, "serviceaccounts/token"),
        rule("get patch update", CORE, "persistentvolumeclaims/status"),
        rule(READ, ("storage.k8s.io",), "csidrivers"),
        rule("create delete get patch update", ("storage.k8s.io",), "csinodes"),
        rule(READ, ("node.k8s.io",), "runtimeclasses"),
    ], {}, None),
    "system:node-bootstrapper": ([
        rule("create get list watch", ("certificates.k8s.io",), "certificatesigningrequests")], {}, None),
    "system:node-problem-detector": ([
        rule("get", CORE, "nodes"), rule("patch", CORE, "nodes/status"), EVENTS], {}, None),
    "system:node-proxier": ([
        rule("list watch", CORE, "endpoints services"),
        rule(READ, CORE, "nodes"),
        EVENTS,
        rule("list watch", ("discovery.k8s.io",), "endpointslices"),
    ], {}, None),
    "system:persistent-volume-provisioner": ([
        rule("create delete get list watch", CORE, "persistentvolumes"),
        rule("get list update watch", CORE, "persistentvolumeclaims"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule("watch", CORE, "events"),
        EVENTS,
    ], {}, None),
    "system:public-info-viewer": ([urls("get", "/healthz /livez /readyz /version /version/")], {}, None),
    "system:service-account-issuer-discovery": ([
        urls("get", "/.well-known/openid-configuration /openid/v1/jwks")], {}, None),
    "system:volume-scheduler": ([
        rule("get list patch update watch", CORE, "persistentvolumes"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule("get list patch update watch", CORE, "persistentvolumeclaims"),
    ], {}, None),
}

# ClusterRoleBinding (named after its ClusterRole) → subjects as (kind, name); "" = none
_CLUSTER_ROLE_BINDINGS: dict[str, list[tuple[str, str]]] = {
    "cluster-admin": [("Group", "system:masters")],
    "system:monitoring": [("Group", "system:monitoring")],
    "system:discovery": [("Group", "system:authenticated")],
    "system:basic-user": [("Group", "system:authenticated")],
    "system:public-info-viewer": [("Group", "system:authenticated"), ("Group", "system:unauthenticated")],
    "system:node-proxier": [("User", "system:kube-proxy")],
    "system:kube-controller-manager": [("User", "system:kube-controller-manager")],
    "system:kube-dns": [("ServiceAccount", "kube-dns")],
    "system:cloud-controller-manager": [("User", "system:cloud-controller-manager")],
    "system:kube-scheduler": [("User", "system:kube-scheduler")],
    "system:volume-scheduler": [("User", "system:kube-scheduler")],
    "system:node": [],
    # not in kube's own policy: kubeadm binds it (as kubeadm:kubelet-api-admin) to the apiserver's kubelet client
    "system:kubelet-api-admin": [("User", "kube-apiserver-kubelet-client")],
    "system:service-account-issuer-discovery": [("Group", "system:serviceaccounts")],
}

CONTROLLER_PREFIX = "system:controller:"


def _metadata(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {**BOOTSTRAP_LABELS, **(labels or {})},
            "annotations": {AUTOUPDATE: "true"}}


def _cluster_role(name: str, rules: list[dict[str, Any]], labels: dict[str, str],
                  aggregate_from: dict[str, str] | None) -> dict[str, Any]:
    role: dict[str, Any] = {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": _metadata(name, labels),
                            "rules": rules}
    if aggregate_from is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate_from}]}
    return role


def _binding(name: str, subjects: list[tuple[str, str]]) -> dict[str, Any]:
    def subject(kind: str, subject_name: str) -> dict[str, Any]:
        if kind == "ServiceAccount":
            return {"kind": kind, "name": subject_name, "namespace": "kube-system"}
        return {"kind": kind, "apiGroup": "rbac.authorization.k8s.io", "name": subject_name}
    binding: dict[str, Any] = {
        "apiVersion": RBAC_API, "kind": "ClusterRoleBinding", "metadata": _metadata(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}}
    if subjects:
        binding["subjects"] = [subject(kind, subject_name) for kind, subject_name in subjects]
    return binding


def cluster_roles() -> list[dict[str, Any]]:
    """Every bootstrap ClusterRole, fresh objects each call (callers may change them)."""
    roles = [_cluster_role(name, rules, labels, aggregate) for name, (rules, labels, aggregate)
             in _CLUSTER_ROLES.items()]
    roles += [_cluster_role(CONTROLLER_PREFIX + name, rules, {}, None) for name, rules in CONTROLLER_ROLES.items()]
    return _fresh(roles)


def cluster_role_bindings() -> list[dict[str, Any]]:
    """Every bootstrap ClusterRoleBinding, fresh objects each call."""
    bindings = [_binding(name, subjects) for name, subjects in _CLUSTER_ROLE_BINDINGS.items()]
    bindings += [_binding(CONTROLLER_PREFIX + name, [("ServiceAccount", name)]) for name in CONTROLLER_ROLES]
    return _fresh(bindings)


def _fresh(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(objects)

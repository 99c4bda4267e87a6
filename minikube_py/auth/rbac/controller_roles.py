"""The `system:controller:<name>` ClusterRoles: one per kube-controller-manager controller.

Data for `bootstrap.py`, reproducing kube 1.32's controller_policy.go: each controller runs as the
ServiceAccount kube-system/<name> (with `--use-service-account-credentials`) and holds exactly these rules.
Controllers behind feature gates mkpy does not serve (dynamic resource allocation, SELinux warnings,
service CIDRs, volume attributes classes) are left out.
"""

from __future__ import annotations

from typing import Any

from .rules import CORE, EVENTS, READ, rule

_APPS = ("apps", "extensions")

# system:controller:<name>, each bound to the ServiceAccount kube-system/<name>
CONTROLLER_ROLES: dict[str, list[dict[str, Any]]] = {
    "attachdetach-controller": [
        rule("list watch", CORE, "persistentvolumeclaims persistentvolumes"),
        rule(READ, CORE, "nodes"),
        rule("patch update", CORE, "nodes/status"),
        rule("list watch", CORE, "pods"),
        EVENTS,
        rule("create delete get list watch", ("storage.k8s.io",), "volumeattachments"),
        rule(READ, ("storage.k8s.io",), "csidrivers"),
        rule(READ, ("storage.k8s.io",), "csinodes"),
    ],
    "certificate-controller": [
        rule("delete get list watch", ("certificates.k8s.io",), "certificatesigningrequests"),
        rule("update", ("certificates.k8s.io",),
             "certificatesigningrequests/approval certificatesigningrequests/status"),
        rule("approve", ("certificates.k8s.io",), "signers", "kubernetes.io/kube-apiserver-client-kubelet"),
        rule("sign", ("certificates.k8s.io",), "signers",
             "kubernetes.io/kube-apiserver-client kubernetes.io/kube-apiserver-client-kubelet "
             "kubernetes.io/kubelet-serving kubernetes.io/legacy-unknown"),
        rule("create", ("authorization.k8s.io",), "subjectaccessreviews"),
        EVENTS,
    ],
    "clusterrole-aggregation-controller": [
        rule("escalate get list patch update watch", ("rbac.authorization.k8s.io",), "clusterroles")],
    "cronjob-controller": [
        rule("get list update watch", ("batch",), "cronjobs"),
        rule("create delete get list patch update watch", ("batch",), "jobs"),
        rule("update", ("batch",), "cronjobs/status"),
        rule("update", ("batch",), "cronjobs/finalizers"),
        rule("delete list watch", CORE, "pods"),
        EVENTS,
    ],
    "daemon-set-controller": [
        rule(READ, _APPS, "daemonsets"),
        rule("update", _APPS, "daemonsets/status"),
        rule("update", _APPS, "daemonsets/finalizers"),
        rule("list watch", CORE, "nodes"),
        rule("create delete list patch watch", CORE, "pods"),
        rule("create", CORE, "pods/binding"),
        rule("create delete get list patch update watch", ("apps",), "controllerrevisions"),
        EVENTS,
    ],
    "deployment-controller": [
        rule("get list update watch", _APPS, "deployments"),
        rule("update", _APPS, "deployments/status"),
        rule("update", _APPS, "deployments/finalizers"),
        rule("create delete get list patch update watch", _APPS, "replicasets"),
        rule("get list update watch", CORE, "pods"),
        EVENTS,
    ],
    "disruption-controller": [
        rule(READ, _APPS, "deployments"),
        rule(READ, _APPS, "replicasets"),
        rule(READ, CORE, "replicationcontrollers"),
        rule(READ, ("policy",), "poddisruptionbudgets"),
        rule(READ, ("apps",), "statefulsets"),
        rule("update", ("policy",), "poddisruptionbudgets/status"),
        rule("patch update", CORE, "pods/status"),
        rule("get", ("*",), "*/scale"),
        EVENTS,
    ],
    "endpoint-controller": [
        rule(READ, CORE, "pods services"),
        rule("create delete get list update watch", CORE, "endpoints"),
        rule("create", CORE, "endpoints/restricted"),
        EVENTS,
    ],
    "endpointslice-controller": [
        rule(READ, CORE, "nodes pods services"),
        rule("update", CORE, "services/finalizers"),
        rule("create delete get list update watch", ("discovery.k8s.io",), "endpointslices"),
        EVENTS,
    ],
    "endpointslicemirroring-controller": [
        rule(READ, CORE, "endpoints services"),
        rule("update", CORE, "services/finalizers"),
        rule("update", CORE, "endpoints/finalizers"),
        rule("create delete get list update watch", ("discovery.k8s.io",), "endpointslices"),
        EVENTS,
    ],
    "ephemeral-volume-controller": [
        rule(READ, CORE, "pods"),
        rule("update", CORE, "pods/finalizers"),
        rule("create get list watch", CORE, "persistentvolumeclaims"),
        EVENTS,
    ],
    "expand-controller": [
        rule("get list patch update watch", CORE, "persistentvolumes"),
        rule("patch update", CORE, "persistentvolumeclaims/status"),
        rule(READ, CORE, "persistentvolumeclaims"),
        EVENTS,
    ],
    "generic-garbage-collector": [rule("delete get list patch update watch", ("*",), "*"), EVENTS],
    "horizontal-pod-autoscaler": [
        rule(READ, ("autoscaling",), "horizontalpodautoscalers"),
        rule("update", ("autoscaling",), "horizontalpodautoscalers/status"),
        rule("get update", ("*",), "*/scale"),
        rule("list watch", CORE, "pods"),
        rule("list watch", ("metrics.k8s.io",), "pods"),
        rule(READ, ("custom.metrics.k8s.io",), "*"),
        rule(READ, ("external.metrics.k8s.io",), "*"),
        EVENTS,
    ],
    "job-controller": [
        rule("get list patch update watch", ("batch",), "jobs"),
        rule("update", ("batch",), "jobs/status"),
        rule("update", ("batch",), "jobs/finalizers"),
        rule("create delete list patch watch", CORE, "pods"),
        EVENTS,
    ],
    "legacy-service-account-token-cleaner": [
        rule("get", CORE, "configmaps", "kube-apiserver-legacy-service-account-token-tracking"),
        rule("delete patch", CORE, "secrets"),
    ],
    "namespace-controller": [
        rule("delete get list watch", CORE, "namespaces"),
        rule("update", CORE, "namespaces/finalize namespaces/status"),
        rule("delete deletecollection get list watch", ("*",), "*"),
    ],
    "node-controller": [
        rule("delete get list patch update watch", CORE, "nodes"),
        rule("patch update", CORE, "nodes/status"),
        rule("patch update", CORE, "pods/status"),
        rule("delete get list watch", CORE, "pods"),
        EVENTS,
    ],
    "persistent-volume-binder": [
        rule("create delete get list update watch", CORE, "persistentvolumes"),
        rule("update", CORE, "persistentvolumes/status"),
        rule("get list update watch", CORE, "persistentvolumeclaims"),
        rule("update", CORE, "persistentvolumeclaims/status"),
        rule("create delete get list watch", CORE, "pods"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule("list watch", CORE, "nodes"),
        EVENTS,
        rule("watch", CORE, "events"),
    ],
    "pod-garbage-collector": [
        rule("delete list watch", CORE, "pods"),
        rule(READ, CORE, "nodes"),
        rule("patch", CORE, "pods/status"),
    ],
    "pv-protection-controller": [rule("get list update watch", CORE, "persistentvolumes"), EVENTS],
    "pvc-protection-controller": [
        rule("get list update watch", CORE, "persistentvolumeclaims"),
        rule("update", CORE, "persistentvolumeclaims/status"),
        rule(READ, CORE, "pods"),
        EVENTS,
    ],
    "replicaset-controller": [
        rule("get list update watch", _APPS, "replicasets"),
        rule("update", _APPS, "replicasets/status"),
        rule("update", _APPS, "replicasets/finalizers"),
        rule("create delete list patch watch", CORE, "pods"),
        EVENTS,
    ],
    "replication-controller": [
        rule("get list update watch", CORE, "replicationcontrollers"),
        rule("update", CORE, "replicationcontrollers/status"),
        rule("update", CORE, "replicationcontrollers/finalizers"),
        rule("create delete list patch watch", CORE, "pods"),
        EVENTS,
    ],
    "resourcequota-controller": [
        rule("list watch", ("*",), "*"),
        rule("update", CORE, "resourcequotas/status"),
        EVENTS,
    ],
    "root-ca-cert-publisher": [rule("create update", CORE, "configmaps"), EVENTS],
    "route-controller": [rule("list watch", CORE, "nodes"), rule("patch", CORE, "nodes/status"), EVENTS],
    "service-account-controller": [rule("create", CORE, "serviceaccounts"), EVENTS],
    "service-controller": [
        rule(READ, CORE, "services"),
        rule("patch update", CORE, "services/status"),
        rule("list watch", CORE, "nodes"),
        EVENTS,
    ],
    "statefulset-controller": [
        rule("list watch", CORE, "pods"),
        rule(READ, ("apps",), "statefulsets"),
        rule("update", ("apps",), "statefulsets/status"),
        rule("update", ("apps",), "statefulsets/finalizers"),
        rule("create delete get patch update", CORE, "pods"),
        rule("create delete get list patch update watch", ("apps",), "controllerrevisions"),
        rule("create get list watch", CORE, "persistentvolumeclaims"),
        rule("delete update", CORE, "persistentvolumeclaims"),
        rule("update", CORE, "pods/finalizers"),
        EVENTS,
    ],
    "ttl-after-finished-controller": [rule("delete get list watch", ("batch",), "jobs"), EVENTS],
    "ttl-controller": [rule("list patch update watch", CORE, "nodes"), EVENTS],
    "validatingadmissionpolicy-status-controller": [
        rule(READ, ("admissionregistration.k8s.io",), "validatingadmissionpolicies"),
        rule("get patch update", ("admissionregistration.k8s.io",), "validatingadmissionpolicies/status"),
        EVENTS,
    ],
}

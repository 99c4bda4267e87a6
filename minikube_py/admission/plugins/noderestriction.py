"""NodeRestriction: a kubelet may write only what belongs to its own node.

The Node authorizer (`auth/node.py`) lets every node create and update Node objects, create and delete
pods, update pod status, evict pods and write leases, because it cannot see the object a request
carries. This mutating plugin, which runs once the object is decoded, narrows each of those to the
requesting node (`system:node:<name>` in `system:nodes`), as kube's does:

* nodes: only its own; on create no `spec.configSource` and no restricted labels; on update no new
  `configSource`, no change to taints and no change to restricted labels. Restricted labels are those
  under `node-restriction.kubernetes.io/`, and any other `kubernetes.io`/`k8s.io` label the kubelet does
  not own (`KUBELET_LABELS`, or under `kubelet.kubernetes.io/` or `node.kubernetes.io/`);
* pods: create only mirror pods (the `kubernetes.io/config.mirror` annotation) bound to itself, owned by
  its Node (one controller reference with the Node's uid, no blockOwnerDeletion) and referencing nothing
  (no service account, secret, configmap, cluster trust bundle or claim); delete, update status of and
  evict only pods bound to itself, and never change labels through status;
* persistentvolumeclaims: only the status, and of it only capacity, conditions and the allocated resources;
* serviceaccounts/token: only tokens bound to a pod (with its uid) running on the node;
* leases: only its own, in `kube-node-lease`; csinodes: only its own.

Everything else, and every request of anyone who is not a node, passes untouched. Refusals are kube's 403
messages, e.g. `pods "web" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node
"n1" can only create mirror pods`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...api import errors
from ...api.gofmt import go_quote
from ...api.validation.pod import MIRROR_POD_ANNOTATION
from ...auth.node import NODE_LEASE_NAMESPACE, node_identity, pod_references
from ..interface import CREATE, DELETE, UPDATE, Attributes, ClusterState, forbidden

RESTRICTED_LABEL_DOMAIN = "node-restriction.kubernetes.io"
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
})
KUBELET_LABEL_DOMAINS = ("kubelet.kubernetes.io", "node.kubernetes.io")
# What a node may change through `persistentvolumeclaims/status`.
_PVC_STATUS_FIELDS = ("capacity", "conditions", "allocatedResourceStatuses", "allocatedResources")


def _in_domain(domain: str, parent: str) -> bool:
    return domain == parent or domain.endswith("." + parent)


def forbidden_labels(labels: dict[str, str], old_labels: dict[str, str]) -> list[str]:
    """The keys added, removed or changed between `old_labels` and `labels` that a node may not touch."""
    changed = {key for key in labels.keys() | old_labels.keys() if labels.get(key) != old_labels.get(key)}
    refused = []
    for key in sorted(changed):
        domain = key.split("/", 1)[0] if "/" in key else ""
        kubernetes = _in_domain(domain, "kubernetes.io") or _in_domain(domain, "k8s.io")
        kubelet = key in KUBELET_LABELS or any(_in_domain(domain, d) for d in KUBELET_LABEL_DOMAINS)
        if _in_domain(domain, RESTRICTED_LABEL_DOMAIN) or (kubernetes and not kubelet):
            refused.append(key)
    return refused


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def _spec(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("spec") or {}


def _bound_node(pod: dict[str, Any] | None) -> str:
    return str(_spec(pod).get("nodeName") or "")


class NodeRestriction:
    name = "NodeRestriction"

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._checks: dict[tuple[str, str], Callable[[str, Attributes], None]] = {
            ("", "pods"): self._pod,
            ("", "nodes"): self._node,
            ("", "persistentvolumeclaims"): self._claim,
            ("", "serviceaccounts"): self._token,
            ("coordination.k8s.io", "leases"): self._lease,
            ("storage.k8s.io", "csinodes"): self._csinode,
        }

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE, DELETE)

    async def admit(self, attributes: Attributes) -> None:
        node, is_node = node_identity(attributes.user)
        if not is_node:
            return
        if not node:
            raise forbidden(attributes, f"could not determine node from user {go_quote(attributes.user.username)}")
        check = self._checks.get((attributes.group, attributes.resource))
        if check is not None:
            check(node, attributes)

    def _existing_pod(self, namespace: str, name: str) -> dict[str, Any]:
        pod = self.state.get("", "pods", namespace, name)
        if pod is None:
            raise errors.not_found("pod", name)  # kube's lister names the resource in the singular
        return pod

    # pods -------------------------------------------------------------------------------------------

    def _pod(self, node: str, a: Attributes) -> None:
        if a.subresource == "status":
            self._pod_status(node, a)
        elif a.subresource == "eviction":
            self._eviction(node, a)
        elif a.subresource:
            raise forbidden(a, f"unexpected pod subresource {go_quote(a.subresource)}, "
                               "only 'status' and 'eviction' are allowed")
        elif a.operation == CREATE:
            self._mirror_pod(node, a)
        elif a.operation == DELETE:
            pod = a.old_object or self._existing_pod(a.namespace, a.name)
            if _bound_node(pod) != node:
                raise forbidden(a, f"node {go_quote(node)} can only delete pods with spec.nodeName set to itself")
        else:
            raise forbidden(a, f"unexpected operation {go_quote(a.operation)}, node {go_quote(node)} "
                               "can only create and delete mirror pods")

    def _mirror_pod(self, node: str, a: Attributes) -> None:
        pod, quoted = a.object or {}, go_quote(node)
        if MIRROR_POD_ANNOTATION not in (_meta(pod).get("annotations") or {}):
            raise forbidden(a, f"pod does not have {go_quote(MIRROR_POD_ANNOTATION)} annotation, node {quoted} "
                               "can only create mirror pods")
        if _bound_node(pod) != node:
            raise forbidden(a, f"node {quoted} can only create pods with spec.nodeName set to itself")
        self._mirror_pod_owner(node, a, _meta(pod).get("ownerReferences") or [])
        references = {kind for kind, _ in pod_references(pod)}
        for kind, what in (("serviceaccount", "a service account"), ("secret", "secrets"),
                           ("configmap", "configmaps")):
            if kind in references:
                raise forbidden(a, f"node {quoted} can not create pods that reference {what}")
        volumes = [v for v in _spec(pod).get("volumes") or () if isinstance(v, dict)]
        for volume in volumes:
            for source in (volume.get("projected") or {}).get("sources") or ():
                if isinstance(source, dict) and source.get("clusterTrustBundle") is not None:
                    raise forbidden(a, f"node {quoted} can not create pods that reference clustertrustbundles")
        if any(volume.get("persistentVolumeClaim") is not None for volume in volumes):
            raise forbidden(a, f"node {quoted} can not create pods that reference persistentvolumeclaims")

    def _mirror_pod_owner(self, node: str, a: Attributes, owners: list[Any]) -> None:
        quoted = go_quote(node)
        if len(owners) > 1:
            raise forbidden(a, f"node {quoted} can only create pods with a single owner reference set to itself")
        owner = owners[0] if owners and isinstance(owners[0], dict) else None
        if owner is None or (owner.get("apiVersion"), owner.get("kind"), owner.get("name")) != ("v1", "Node", node):
            raise forbidden(a, f"node {quoted} can only create pods with an owner reference set to itself")
        if owner.get("controller") is not True:
            raise forbidden(a, f"node {quoted} can only create pods with a controller owner reference set to itself")
        if owner.get("blockOwnerDeletion") is True:
            raise forbidden(a, f"node {quoted} must not set blockOwnerDeletion on an owner reference")
        found = self.state.get("", "nodes", "", node)
        if found is None:
            raise errors.not_found("node", node)
        uid = _meta(found).get("uid", "")
        if owner.get("uid", "") != uid:
            raise forbidden(a, f"node {node} UID mismatch: expected {owner.get('uid', '')} got {uid}")

    def _pod_status(self, node: str, a: Attributes) -> None:
        if a.operation != UPDATE:
            raise forbidden(a, f"unexpected operation {go_quote(a.operation)}")
        if _bound_node(a.old_object) != node:
            raise forbidden(a, f"node {go_quote(node)} can only update pod status for pods with spec.nodeName "
                               "set to itself")
        if (_meta(a.object).get("labels") or {}) != (_meta(a.old_object).get("labels") or {}):
            raise forbidden(a, f"node {go_quote(node)} cannot update labels through pod status")

        def claims(pod: dict[str, Any] | None) -> list[tuple[Any, Any]]:
            statuses = ((pod or {}).get("status") or {}).get("resourceClaimStatuses") or []
            return [(s.get("name"), s.get("resourceClaimName")) for s in statuses if isinstance(s, dict)]
        if claims(a.object) != claims(a.old_object):
            raise forbidden(a, f"node {go_quote(node)} cannot update resource claim statues")

    def _eviction(self, node: str, a: Attributes) -> None:
        if a.operation != CREATE:
            raise forbidden(a, f"unexpected operation {a.operation}")
        name = a.name or str(_meta(a.object).get("name") or "")
        if not name:
            raise forbidden(a, "could not determine pod from request data")
        if _bound_node(self._existing_pod(a.namespace, name)) != node:
            raise forbidden(a, f"node {node} can only evict pods with spec.nodeName set to itself")

    # everything else a node writes ------------------------------------------------------------------

    def _node(self, node: str, a: Attributes) -> None:
        requested = a.name or str(_meta(a.object).get("name") or "")
        quoted = go_quote(node)
        if requested != node:
            raise forbidden(a, f"node {quoted} is not allowed to modify node {go_quote(requested)}")
        new_spec, old_spec = _spec(a.object), _spec(a.old_object)
        labels = _meta(a.object).get("labels") or {}
        if a.operation == CREATE:
            if new_spec.get("configSource") is not None:
                # kube's wording, "pods" included
                raise forbidden(a, f"node {quoted} is not allowed to create pods with a non-nil configSource")
            refused = forbidden_labels(labels, {})
            if refused:
                raise forbidden(a, f"node {quoted} is not allowed to set the following labels: {', '.join(refused)}")
        elif a.operation == UPDATE:
            config = new_spec.get("configSource")
            if config is not None and config != old_spec.get("configSource"):
                raise forbidden(a, f"node {quoted} is not allowed to update configSource to a new non-nil "
                                   "configSource")
            if (new_spec.get("taints") or []) != (old_spec.get("taints") or []):
                raise forbidden(a, f"node {quoted} is not allowed to modify taints")
            refused = forbidden_labels(labels, _meta(a.old_object).get("labels") or {})
            if refused:
                raise forbidden(a, f"is not allowed to modify labels: {', '.join(refused)}")

    def _claim(self, node: str, a: Attributes) -> None:
        if a.subresource != "status":
            raise forbidden(a, "may only update PVC status")
        if a.operation != UPDATE:
            raise forbidden(a, f"unexpected operation {go_quote(a.operation)}")
        changed = _claim_changes(a.old_object or {}, a.object or {})
        if changed:
            raise forbidden(a, f"node {go_quote(node)} is not allowed to update fields other than status.quantity "
                               f"and status.conditions: {', '.join(changed)}")

    def _token(self, node: str, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource != "token":
            return
        ref = _spec(a.object).get("boundObjectRef") or {}
        if (ref.get("apiVersion"), ref.get("kind")) != ("v1", "Pod") or not ref.get("name"):
            raise forbidden(a, "node requested token not bound to a pod")
        if not ref.get("uid"):
            raise forbidden(a, "node requested token with a pod binding without a uid")
        pod = self._existing_pod(a.namespace, str(ref["name"]))
        if ref["uid"] != _meta(pod).get("uid"):
            raise forbidden(a, f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
                               "record. The object might have been deleted and then recreated")
        if _bound_node(pod) != node:
            raise forbidden(a, "node requested token bound to a pod scheduled on a different node")

    def _lease(self, node: str, a: Attributes) -> None:
        if a.namespace != NODE_LEASE_NAMESPACE:
            raise forbidden(a, f"can only access leases in the {go_quote(NODE_LEASE_NAMESPACE)} system namespace")
        name = _meta(a.object).get("name") if a.operation == CREATE else a.name
        if name != node:
            raise forbidden(a, "can only access node lease with the same name as the requesting node")

    def _csinode(self, node: str, a: Attributes) -> None:
        name = _meta(a.object).get("name") if a.operation == CREATE else a.name
        if name != node:
            raise forbidden(a, "can only access CSINode with the same name as the requesting node")


def _claim_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The fields outside status.capacity/conditions/allocated* a status update changes (resourceVersion and
    managedFields aside, as kube compares)."""
    def comparable(claim: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in _meta(claim).items() if k not in ("resourceVersion", "managedFields")}
        status = {k: v for k, v in (claim.get("status") or {}).items() if k not in _PVC_STATUS_FIELDS}
        return {"metadata": meta, "spec": _spec(claim), "status": status}
    before, after = comparable(old), comparable(new)
    return [f"{part}.{key}" for part in ("metadata", "spec", "status")
            for key in sorted(before[part].keys() | after[part].keys())
            if before[part].get(key) != after[part].get(key)]

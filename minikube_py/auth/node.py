"""The Node authorizer (`--authorization-mode=Node`): what a kubelet may do, decided by the pods bound to it.

A kubelet authenticates as `system:node:<name>` in the group `system:nodes` (`node_identity`). For anyone
else this authorizer has no opinion. For a node it answers the way kube 1.32's does (with the
`AuthorizeNodeWithSelectors` feature on, its default):

* secrets, configmaps (get/list/watch of one named object), persistentvolumeclaims, persistentvolumes
  (get), `persistentvolumeclaims/status` (update/patch) and `serviceaccounts/token` (create): only when the
  object is related to the node in the `NodeGraph` (node <- pod <- secret/configmap/pvc/service account,
  node <- pod <- pvc <- pv <- secret); otherwise kube's `no relationship found between node 'n1' and this
  object`;
* its own Node (get/list/watch by name; create/update/patch and `nodes/status` for any name, which the
  NodeRestriction admission plugin narrows to its own), its own Lease in `kube-node-lease` and its own
  CSINode;
* pods: get of a pod bound to it; list/watch of one named pod bound to it; create/delete (mirror pods),
  `pods/status` update/patch and `pods/eviction` create, narrowed by NodeRestriction;
* a few more resources every node may use alike (`STATIC_RULES`, kube's `system:node` rules that the graph
  does not subdivide): services, events, endpoints, token and access reviews, CSRs, CSI drivers,
  runtime classes.

`pod_references` lists what a pod lets its node read (the graph's edges); NodeRestriction uses it to keep
nodes from creating pods that reference anything. Usage rules: `authorize` is called for every request of
every user, so the non-node path is a string test; the graph refreshes itself from the watch caches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ..api.gofmt import go_quote
from .authn import UserInfo
from .authorizer import Attributes, Decision

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
NODE_LEASE_NAMESPACE = "kube-node-lease"

# Vertex types of the graph: what a node can reach through the pods bound to it.
POD, SECRET, CONFIGMAP, PVC, PV, SERVICE_ACCOUNT = "pod", "secret", "configmap", "pvc", "pv", "serviceaccount"


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """(node name, is a node): a node is `system:node:<name>` in `system:nodes`; the name may be empty."""
    if not user.username.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return "", False
    return user.username[len(NODE_USER_PREFIX):], True


class NodeGraph(Protocol):
    def has_path(self, node: str, vertex_type: str, namespace: str, name: str) -> bool:
        """Whether the object (namespace "" for cluster-scoped ones) is related to `node`. Fast, no I/O."""
        ...


# Volume sources whose secret the kubelet reads, and where the name is (kube's VisitPodSecretNames).
_VOLUME_SECRET_PATHS = (
    ("secret", "secretName"), ("azureFile", "secretName"), ("cephfs", "secretRef", "name"),
    ("cinder", "secretRef", "name"), ("flexVolume", "secretRef", "name"), ("rbd", "secretRef", "name"),
    ("scaleIO", "secretRef", "name"), ("iscsi", "secretRef", "name"), ("storageos", "secretRef", "name"),
    ("csi", "nodePublishSecretRef", "name"),
)


def _at(obj: Any, *path: str) -> Any:
    for step in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(step)
    return obj


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or ():
            if isinstance(container, dict):
                yield container


def _container_references(container: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for source in container.get("envFrom") or ():
        yield SECRET, _at(source, "secretRef", "name")
        yield CONFIGMAP, _at(source, "configMapRef", "name")
    for env in container.get("env") or ():
        yield SECRET, _at(env, "valueFrom", "secretKeyRef", "name")
        yield CONFIGMAP, _at(env, "valueFrom", "configMapKeyRef", "name")


def _volume_references(pod_name: str, volume: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for path in _VOLUME_SECRET_PATHS:
        yield SECRET, _at(volume, *path)
    yield CONFIGMAP, _at(volume, "configMap", "name")
    for source in _at(volume, "projected", "sources") or ():
        yield SECRET, _at(source, "secret", "name")
        yield CONFIGMAP, _at(source, "configMap", "name")
    yield PVC, _at(volume, "persistentVolumeClaim", "claimName")
    if isinstance(volume.get("ephemeral"), dict):  # the claim the ephemeral volume controller makes
        yield PVC, f"{pod_name}-{volume.get('name', '')}"


def pod_references(pod: dict[str, Any]) -> set[tuple[str, str]]:
    """(vertex type, name) of every object in the pod's namespace its node may read because of it: the
    service account, image pull secrets, secrets and configmaps of env, envFrom and volumes (projected ones
    too), and claims of persistentVolumeClaim and ephemeral volumes."""
    spec = pod.get("spec") or {}
    found: list[tuple[str, Any]] = [(SERVICE_ACCOUNT, spec.get("serviceAccountName"))]
    found += [(SECRET, _at(ref, "name")) for ref in spec.get("imagePullSecrets") or ()]
    for container in _containers(spec):
        found += _container_references(container)
    pod_name = str(_at(pod, "metadata", "name") or "")
    for volume in spec.get("volumes") or ():
        if isinstance(volume, dict):
            found += _volume_references(pod_name, volume)
    return {(kind, name) for kind, name in found if isinstance(name, str) and name}


# kube's `system:node` rules for what the graph does not subdivide: (group, resource[/subresource]) → verbs.
STATIC_RULES: dict[tuple[str, str], frozenset[str]] = {
    ("authentication.k8s.io", "tokenreviews"): frozenset({"create"}),
    ("authorization.k8s.io", "subjectaccessreviews"): frozenset({"create"}),
    ("authorization.k8s.io", "localsubjectaccessreviews"): frozenset({"create"}),
    ("", "services"): frozenset({"get", "list", "watch"}),
    ("", "events"): frozenset({"create", "update", "patch"}),
    ("", "endpoints"): frozenset({"get"}),
    ("certificates.k8s.io", "certificatesigningrequests"): frozenset({"create", "get", "list", "watch"}),
    ("storage.k8s.io", "csidrivers"): frozenset({"get", "list", "watch"}),
    ("node.k8s.io", "runtimeclasses"): frozenset({"get", "list", "watch"}),
}

Result = tuple[Decision, str]
ALLOWED: Result = (Decision.ALLOW, "")


def _no(reason: str = "") -> Result:
    return Decision.NO_OPINION, reason


class NodeAuthorizer:
    """kube's Node authorization mode over a `NodeGraph`."""

    def __init__(self, graph: NodeGraph) -> None:
        self.graph = graph
        self._subdivided: dict[tuple[str, str], Callable[[str, Attributes], Result]] = {
            ("", "secrets"): lambda node, a: self._read_namespaced(node, SECRET, a),
            ("", "configmaps"): lambda node, a: self._read_namespaced(node, CONFIGMAP, a),
            ("", "persistentvolumeclaims"): self._claim,
            ("", "persistentvolumes"): lambda node, a: self._get(node, PV, a),
            ("", "serviceaccounts"): self._create_token,
            ("coordination.k8s.io", "leases"): self._lease,
            ("storage.k8s.io", "csinodes"): self._csinode,
            ("", "nodes"): self._node,
            ("", "pods"): self._pod,
        }

    def authorize(self, attributes: Attributes) -> Result:
        node, is_node = node_identity(attributes.user)
        if not is_node:
            return _no()
        if not node:
            return _no(f"unknown node for user {go_quote(attributes.user.username)}")
        if attributes.resource_request:
            decide = self._subdivided.get((attributes.api_group, attributes.resource))
            if decide is not None:
                return decide(node, attributes)
            resource = attributes.resource + (f"/{attributes.subresource}" if attributes.subresource else "")
            if attributes.verb in STATIC_RULES.get((attributes.api_group, resource), ()):
                return ALLOWED
        return _no()

    # the graph ------------------------------------------------------------------------------------

    def _related(self, node: str, vertex_type: str, a: Attributes) -> Result:
        if not a.name:
            return _no("No Object name found")
        if self.graph.has_path(node, vertex_type, a.namespace, a.name):
            return ALLOWED
        return _no(f"no relationship found between node '{node}' and this object")

    def _read_namespaced(self, node: str, vertex_type: str, a: Attributes) -> Result:
        if a.verb not in ("get", "list", "watch"):
            return _no("can only read resources of this type")
        if a.subresource:
            return _no("cannot read subresource")
        if not a.namespace:
            return _no("can only read namespaced object of this type")
        return self._related(node, vertex_type, a)

    def _get(self, node: str, vertex_type: str, a: Attributes) -> Result:
        if a.verb != "get":
            return _no("can only get individual resources of this type")
        if a.subresource:
            return _no("cannot get subresource")
        return self._related(node, vertex_type, a)

    def _claim(self, node: str, a: Attributes) -> Result:
        if a.subresource != "status":
            return self._get(node, PVC, a)
        if a.verb not in ("update", "patch"):
            return _no("can only get/update/patch this type")
        return self._related(node, PVC, a)

    def _create_token(self, node: str, a: Attributes) -> Result:
        if a.verb != "create" or not a.name:
            return _no("can only create tokens for individual service accounts")
        if a.subresource != "token":
            return _no("can only create token subresource of serviceaccount")
        return self._related(node, SERVICE_ACCOUNT, a)

    # objects named after the node -----------------------------------------------------------------

    def _lease(self, node: str, a: Attributes) -> Result:
        if a.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a node lease")
        if a.namespace != NODE_LEASE_NAMESPACE:
            return _no(f"can only access leases in the {go_quote(NODE_LEASE_NAMESPACE)} system namespace")
        # a create names no object in the URL: NodeRestriction checks the new lease's name
        if a.verb != "create" and a.name != node:
            return _no("can only access node lease with the same name as the requesting node")
        return ALLOWED

    def _csinode(self, node: str, a: Attributes) -> Result:
        if a.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a CSINode")
        if a.subresource:
            return _no("cannot authorize CSINode subresources")
        if a.verb != "create" and a.name != node:
            return _no("can only access CSINode with the same name as the requesting node")
        return ALLOWED

    def _node(self, node: str, a: Attributes) -> Result:
        if not a.subresource and a.verb in ("create", "update", "patch"):
            return ALLOWED  # NodeRestriction limits writes to the node's own object
        if not a.subresource and a.verb in ("get", "list", "watch"):
            # by name rather than through the graph, so a kubelet can look for its Node before creating it
            if a.name == node:
                return ALLOWED
            if not a.name:
                return _no(f"node '{node}' cannot read all nodes, only its own Node object")
            return _no(f"node '{node}' cannot read '{a.name}', only its own Node object")
        if a.subresource == "status" and a.verb in ("update", "patch"):
            return ALLOWED
        return _no()

    def _pod(self, node: str, a: Attributes) -> Result:
        if not a.subresource:
            if a.verb == "get":
                return self._get(node, POD, a)
            if a.verb in ("list", "watch"):
                if a.name:
                    return self._related(node, POD, a)
                if ("spec.nodeName", "=", node) in a.field_selector:
                    return ALLOWED
                return _no("can only list/watch pods with spec.nodeName field selector")
            if a.verb in ("create", "delete"):
                return ALLOWED  # mirror pods; NodeRestriction limits them to the node's own
        elif (a.subresource == "status" and a.verb in ("update", "patch")) or (
                a.subresource == "eviction" and a.verb == "create"):
            return ALLOWED  # NodeRestriction limits both to pods bound to the node
        return _no()

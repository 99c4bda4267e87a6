"""NodeRestriction: a node writes only its own Node, Lease, CSINode, mirror pods and pods, with kube's words."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from minikube_py.admission.interface import CREATE, DELETE, UPDATE, Attributes
from minikube_py.admission.plugins import PLUGINS
from minikube_py.admission.plugins.noderestriction import NodeRestriction, forbidden_labels
from minikube_py.api.errors import APIError
from minikube_py.auth.authn import UserInfo

N1 = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
ALICE = UserInfo("alice", groups=("system:authenticated",))
MIRROR = {"kubernetes.io/config.mirror": "hash"}
OWNER = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid", "controller": True}


# builders -------------------------------------------------------------------------------------------

def pod(name: str = "web", node: str = "n1", annotations: dict[str, str] | None = None,
        owners: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"{name}-uid",
                            "annotations": annotations or {}, "labels": labels or {}}
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **spec}, "status": {}}


def mirror(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("owners", [dict(OWNER)])
    return pod(annotations=MIRROR, **kwargs)


def node(name: str = "n1", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"{name}-uid" if name != "n1"
                                                             else "node-uid", "labels": labels or {}},
            "spec": spec}


def request(operation: str, resource: str, *, name: str = "", namespace: str = "ns", subresource: str = "",
            obj: dict[str, Any] | None = None, old: dict[str, Any] | None = None, group: str = "",
            user: UserInfo = N1) -> Attributes:
    return Attributes(operation=operation, group=group, version="v1", resource=resource, kind=(group, "v1", "X"),
                      user=user, namespace=namespace, name=name, subresource=subresource, object=obj,
                      old_object=old)


class FakeState:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        kind = {"pods": "Pod", "nodes": "Node"}[resource]
        return self.objects.get((kind, namespace, name))

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        raise AssertionError("NodeRestriction reads single objects")

    async def update(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise AssertionError("NodeRestriction writes nothing")


STATE = FakeState(node(), node("n2"), pod("mine"), pod("theirs", node="n2"))


def admit(attributes: Attributes) -> None:
    asyncio.run(NodeRestriction(STATE).admit(attributes))


def refusal(attributes: Attributes) -> APIError:
    with pytest.raises(APIError) as caught:
        admit(attributes)
    return caught.value


def with_change(obj: dict[str, Any], change: Any) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    change(changed)
    return changed


# allowed --------------------------------------------------------------------------------------------

LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n1"}}
TOKEN = {"kind": "TokenRequest", "metadata": {}, "spec": {"boundObjectRef": {
    "apiVersion": "v1", "kind": "Pod", "name": "mine", "uid": "mine-uid"}}}

ALLOWED = [
    ("anyone who is not a node passes untouched", request(CREATE, "pods", obj=pod(), user=ALICE)),
    ("a node creates a mirror pod of its own", request(CREATE, "pods", obj=mirror())),
    ("a node deletes a pod bound to it", request(DELETE, "pods", name="mine", old=pod("mine"))),
    ("a node updates status of its pod", request(UPDATE, "pods", name="mine", subresource="status",
                                                 obj=with_change(pod("mine"), lambda p: p["status"].update(
                                                     phase="Running")), old=pod("mine"))),
    ("a node evicts its pod", request(CREATE, "pods", name="mine", subresource="eviction",
                                      obj={"kind": "Eviction", "metadata": {"name": "mine"}})),
    ("a node registers itself with kubelet labels", request(CREATE, "nodes", namespace="", obj=node(labels={
        "kubernetes.io/hostname": "n1", "node.kubernetes.io/instance-type": "big", "example.com/x": "y"}))),
    ("a node updates its own status", request(UPDATE, "nodes", name="n1", namespace="", subresource="status",
                                              obj=node(), old=node())),
    ("a node relabels itself in its own domains", request(UPDATE, "nodes", name="n1", namespace="", obj=node(
        labels={"kubelet.kubernetes.io/x": "1", "team": "a"}), old=node())),
    ("a node creates its lease", request(CREATE, "leases", namespace="kube-node-lease", obj=LEASE,
                                         group="coordination.k8s.io")),
    ("a node renews its lease", request(UPDATE, "leases", name="n1", namespace="kube-node-lease", obj=LEASE,
                                        old=LEASE, group="coordination.k8s.io")),
    ("a node gets a token for its pod", request(CREATE, "serviceaccounts", name="sa", subresource="token",
                                                obj=TOKEN)),
    ("a node updates the capacity of a claim", request(UPDATE, "persistentvolumeclaims", name="c",
                                                       subresource="status", obj={"metadata": {"name": "c"},
                                                       "status": {"capacity": {"storage": "2Gi"}}},
                                                       old={"metadata": {"name": "c", "resourceVersion": "5"},
                                                            "status": {"capacity": {"storage": "1Gi"}}})),
    ("a node creates its CSINode", request(CREATE, "csinodes", namespace="", group="storage.k8s.io",
                                           obj={"metadata": {"name": "n1"}})),
    ("other resources are not NodeRestriction's", request(CREATE, "events", obj={"metadata": {"name": "e"}})),
]


@pytest.mark.parametrize("attributes", [c[1] for c in ALLOWED], ids=[c[0] for c in ALLOWED])
def test_node_restriction_allows(attributes: Attributes) -> None:
    admit(attributes)


# refused --------------------------------------------------------------------------------------------

NOT_MIRROR = 'pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods'
REFUSED = [
    ("a plain pod", request(CREATE, "pods", obj=pod()), f'pods "web" is forbidden: {NOT_MIRROR}'),
    ("a mirror pod for another node", request(CREATE, "pods", obj=mirror(node="n2")),
     'node "n1" can only create pods with spec.nodeName set to itself'),
    ("a mirror pod without an owner", request(CREATE, "pods", obj=mirror(owners=[])),
     'node "n1" can only create pods with an owner reference set to itself'),
    ("a mirror pod owned twice", request(CREATE, "pods", obj=mirror(owners=[OWNER, OWNER])),
     'node "n1" can only create pods with a single owner reference set to itself'),
    ("a mirror pod owned by another node", request(CREATE, "pods", obj=mirror(owners=[{**OWNER, "name": "n2"}])),
     'node "n1" can only create pods with an owner reference set to itself'),
    ("a mirror pod whose owner is no controller", request(CREATE, "pods", obj=mirror(owners=[{
        **OWNER, "controller": False}])), 'node "n1" can only create pods with a controller owner reference'),
    ("a mirror pod blocking owner deletion", request(CREATE, "pods", obj=mirror(owners=[{
        **OWNER, "blockOwnerDeletion": True}])), 'node "n1" must not set blockOwnerDeletion on an owner reference'),
    ("a mirror pod owned by a stale node", request(CREATE, "pods", obj=mirror(owners=[{**OWNER, "uid": "old"}])),
     "node n1 UID mismatch: expected old got node-uid"),
    ("a mirror pod with a service account", request(CREATE, "pods", obj=mirror(serviceAccountName="sa")),
     'node "n1" can not create pods that reference a service account'),
    ("a mirror pod with a secret", request(CREATE, "pods", obj=mirror(imagePullSecrets=[{"name": "s"}])),
     'node "n1" can not create pods that reference secrets'),
    ("a mirror pod with a configmap", request(CREATE, "pods", obj=mirror(volumes=[{"name": "v", "configMap": {
        "name": "c"}}])), 'node "n1" can not create pods that reference configmaps'),
    ("a mirror pod with a trust bundle", request(CREATE, "pods", obj=mirror(volumes=[{"name": "v", "projected": {
        "sources": [{"clusterTrustBundle": {"name": "b", "path": "p"}}]}}])),
     'node "n1" can not create pods that reference clustertrustbundles'),
    ("a mirror pod with a claim", request(CREATE, "pods", obj=mirror(volumes=[{"name": "v", "persistentVolumeClaim": {
        "claimName": "c"}}])), 'node "n1" can not create pods that reference persistentvolumeclaims'),
    ("deleting another node's pod", request(DELETE, "pods", name="theirs", old=pod("theirs", node="n2")),
     'node "n1" can only delete pods with spec.nodeName set to itself'),
    ("updating a pod", request(UPDATE, "pods", name="mine", obj=pod("mine"), old=pod("mine")),
     'unexpected operation "UPDATE", node "n1" can only create and delete mirror pods'),
    ("another pod subresource", request(CREATE, "pods", name="mine", subresource="binding", obj={}),
     'unexpected pod subresource "binding", only \'status\' and \'eviction\' are allowed'),
    ("status of another node's pod", request(UPDATE, "pods", name="theirs", subresource="status",
                                            obj=pod("theirs", node="n2"), old=pod("theirs", node="n2")),
     'node "n1" can only update pod status for pods with spec.nodeName set to itself'),
    ("labels through status", request(UPDATE, "pods", name="mine", subresource="status",
                                      obj=pod("mine", labels={"a": "b"}), old=pod("mine")),
     'node "n1" cannot update labels through pod status'),
    ("evicting another node's pod", request(CREATE, "pods", name="theirs", subresource="eviction",
                                            obj={"kind": "Eviction", "metadata": {"name": "theirs"}}),
     "node n1 can only evict pods with spec.nodeName set to itself"),
    ("an eviction naming no pod", request(CREATE, "pods", subresource="eviction", obj={"metadata": {}}),
     "could not determine pod from request data"),
    ("another node", request(UPDATE, "nodes", name="n2", namespace="", obj=node("n2"), old=node("n2")),
     'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'),
    ("registering as another node", request(CREATE, "nodes", namespace="", obj=node("n2")),
     'node "n1" is not allowed to modify node "n2"'),
    ("registering with a restricted label", request(CREATE, "nodes", namespace="", obj=node(labels={
        "node-restriction.kubernetes.io/pool": "a", "node-role.kubernetes.io/control-plane": ""})),
     'node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/pool, '
     "node-role.kubernetes.io/control-plane"),
    ("registering with a configSource", request(CREATE, "nodes", namespace="", obj=node(configSource={})),
     'node "n1" is not allowed to create pods with a non-nil configSource'),
    ("changing its taints", request(UPDATE, "nodes", name="n1", namespace="", obj=node(taints=[
        {"key": "k", "effect": "NoSchedule"}]), old=node()), 'node "n1" is not allowed to modify taints'),
    ("dropping a restricted label", request(UPDATE, "nodes", name="n1", namespace="", obj=node(),
                                            old=node(labels={"example.k8s.io/x": "1"})),
     'nodes "n1" is forbidden: is not allowed to modify labels: example.k8s.io/x'),
    ("a new configSource", request(UPDATE, "nodes", name="n1", namespace="", obj=node(configSource={"a": 1}),
                                   old=node()),
     'node "n1" is not allowed to update configSource to a new non-nil configSource'),
    ("another node's lease", request(UPDATE, "leases", name="n2", namespace="kube-node-lease",
                                     group="coordination.k8s.io", obj=LEASE, old=LEASE),
     "can only access node lease with the same name as the requesting node"),
    ("creating another node's lease", request(CREATE, "leases", namespace="kube-node-lease",
                                              group="coordination.k8s.io", obj={"metadata": {"name": "n2"}}),
     "can only access node lease with the same name as the requesting node"),
    ("a lease elsewhere", request(UPDATE, "leases", name="n1", namespace="default", group="coordination.k8s.io",
                                  obj=LEASE, old=LEASE),
     'can only access leases in the "kube-node-lease" system namespace'),
    ("another node's CSINode", request(DELETE, "csinodes", name="n2", namespace="", group="storage.k8s.io"),
     "can only access CSINode with the same name as the requesting node"),
    ("a token bound to nothing", request(CREATE, "serviceaccounts", name="sa", subresource="token",
                                         obj={"spec": {}}), "node requested token not bound to a pod"),
    ("a token without the pod's uid", request(CREATE, "serviceaccounts", name="sa", subresource="token",
                                              obj=with_change(TOKEN, lambda t: t["spec"]["boundObjectRef"].pop(
                                                  "uid"))), "node requested token with a pod binding without a uid"),
    ("a token for a recreated pod", request(CREATE, "serviceaccounts", name="sa", subresource="token",
                                            obj=with_change(TOKEN, lambda t: t["spec"]["boundObjectRef"].update(
                                                uid="old"))),
     "the UID in the bound object reference (old) does not match the UID in record. The object might have been "
     "deleted and then recreated"),
    ("a token for another node's pod", request(CREATE, "serviceaccounts", name="sa", subresource="token",
                                               obj=with_change(TOKEN, lambda t: t["spec"]["boundObjectRef"].update(
                                                   name="theirs", uid="theirs-uid"))),
     "node requested token bound to a pod scheduled on a different node"),
    ("writing a claim", request(UPDATE, "persistentvolumeclaims", name="c", obj={}, old={}),
     "may only update PVC status"),
    ("relabelling a claim through status", request(UPDATE, "persistentvolumeclaims", name="c", subresource="status",
                                                   obj={"metadata": {"name": "c", "labels": {"a": "b"}}},
                                                   old={"metadata": {"name": "c"}}),
     'node "n1" is not allowed to update fields other than status.quantity and status.conditions: metadata.labels'),
    ("a node without a name", request(CREATE, "pods", obj=mirror(), user=UserInfo(
        "system:node:", groups=("system:nodes",))), 'could not determine node from user "system:node:"'),
]


@pytest.mark.parametrize("attributes, message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_node_restriction_refuses_with_kubes_message(attributes: Attributes, message: str) -> None:
    err = refusal(attributes)
    assert (err.code, err.reason) == (403, "Forbidden")
    assert message in err.message


@pytest.mark.parametrize("attributes, message", [
    (request(CREATE, "pods", name="gone", subresource="eviction", obj={"metadata": {"name": "gone"}}),
     'pod "gone" not found'),
    (request(CREATE, "serviceaccounts", name="sa", subresource="token", obj=with_change(
        TOKEN, lambda t: t["spec"]["boundObjectRef"].update(name="gone"))), 'pod "gone" not found'),
], ids=["evicting a missing pod", "a token for a missing pod"])
def test_a_missing_pod_is_not_found(attributes: Attributes, message: str) -> None:
    err = refusal(attributes)
    assert (err.code, err.message) == (404, message)


def test_a_mirror_pod_of_an_unregistered_node_is_not_found() -> None:
    plugin = NodeRestriction(FakeState())
    with pytest.raises(APIError) as caught:
        asyncio.run(plugin.admit(request(CREATE, "pods", obj=mirror())))
    assert (caught.value.code, caught.value.message) == (404, 'node "n1" not found')


@pytest.mark.parametrize("labels, old, refused", [
    ({"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z"}, {}, []),
    ({"foo.node-restriction.kubernetes.io/x": "1"}, {}, ["foo.node-restriction.kubernetes.io/x"]),
    ({"node-role.kubernetes.io/worker": ""}, {}, ["node-role.kubernetes.io/worker"]),
    ({"example.com/owner": "me", "k8s.io/x": "same"}, {"k8s.io/x": "same"}, []),
    ({}, {"kubernetes.io/role": "x"}, ["kubernetes.io/role"]),
], ids=["kubelet labels", "a node-restriction subdomain", "a role label", "unchanged and foreign labels",
        "removing a restricted label"])
def test_forbidden_labels(labels: dict[str, str], old: dict[str, str], refused: list[str]) -> None:
    assert forbidden_labels(labels, old) == refused


def test_node_restriction_is_registered_and_runs_on_writes_only() -> None:
    plugin = PLUGINS["NodeRestriction"](STATE, None)
    assert plugin.name == "NodeRestriction"
    assert [plugin.handles(op) for op in (CREATE, UPDATE, DELETE, "CONNECT")] == [True, True, True, False]

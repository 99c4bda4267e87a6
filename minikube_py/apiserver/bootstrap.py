"""What exists in every cluster from the start: the system namespaces and the `kubernetes` Service.

On every start the apiserver makes sure of (creating what is missing, leaving what exists alone):
* the namespaces `default`, `kube-system`, `kube-public` and `kube-node-lease`;
* the `default/kubernetes` Service, at the first address of the service CIDR, port 443 (`https`), and its
  Endpoints and EndpointSlice pointing at the apiserver itself (kube's "master endpoint reconciler");
* the two built-in PriorityClasses `system-cluster-critical` and `system-node-critical`.

Objects go through the same registry as client requests, so they get defaults, validation and allocation.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from .registry.generic import ResourceStore

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def kubernetes_service(cluster_ip: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": cluster_ip, "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    }


def kubernetes_endpoints(address: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": address}],
                     "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    }


def kubernetes_endpoint_slice(address: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": False,
            "description": f"Used for {name.removeprefix('system-').replace('-', ' ')} pods that must not be "
                           "moved from their current node."}


async def ensure(store: ResourceStore, namespace: str, obj: dict[str, Any], *, validate: bool = True) -> None:
    try:
        await store.create(namespace, obj, validate=validate)
    except errors.APIError as err:
        if err.reason != "AlreadyExists":
            raise


async def bootstrap(stores: dict[tuple[str, str, str], ResourceStore], cluster_ip: str, address: str,
                    port: int) -> None:
    namespaces = stores[("", "v1", "namespaces")]
    for name in SYSTEM_NAMESPACES:
        await ensure(namespaces, "", _namespace(name))
    await ensure(stores[("", "v1", "services")], "default", kubernetes_service(cluster_ip, port))
    await ensure(stores[("", "v1", "endpoints")], "default", kubernetes_endpoints(address, port),
                 validate=False)
    await ensure(stores[("discovery.k8s.io", "v1", "endpointslices")], "default",
                 kubernetes_endpoint_slice(address, port), validate=False)
    priority = stores[("scheduling.k8s.io", "v1", "priorityclasses")]
    await ensure(priority, "", _priority_class("system-cluster-critical", 2000000000))
    await ensure(priority, "", _priority_class("system-node-critical", 2000001000))

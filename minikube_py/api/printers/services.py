"""Printers for how pods are reached: core/v1 Services and Endpoints.

A Service row shows the first cluster IP, an EXTERNAL-IP that depends on the type (`<none>` for ClusterIP
and NodePort without `externalIPs`, the load balancer's addresses or `<pending>` for LoadBalancer, the
DNS name for ExternalName) and its ports as `80/TCP` or `80:30080/TCP` when a node port is allocated.
An Endpoints row lists up to three `ip:port` pairs and `+ N more...`. EndpointSlices live in
`discovery.py`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, first_with_more, format_labels, object_name


def cluster_ip(spec: dict[str, Any]) -> str:
    """The first cluster IP; `spec.clusterIP` is authoritative over `clusterIPs`, as in kube's conversion."""
    cluster_ips = spec.get("clusterIPs") or ["<none>"]
    return str(spec.get("clusterIP") or cluster_ips[0])


def load_balancer_addresses(load_balancer: dict[str, Any] | None) -> list[str]:
    """Each ingress point's IP, else its hostname, sorted and unique (also used for Ingresses)."""
    points = (load_balancer or {}).get("ingress") or []
    return sorted({point.get("ip") or point.get("hostname") for point in points} - {None, ""})


def external_ip(service: dict[str, Any]) -> str:
    spec = service.get("spec") or {}
    external_ips = spec.get("externalIPs") or []
    service_type = spec.get("type")
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) or "<none>"
    if service_type == "LoadBalancer":
        addresses = load_balancer_addresses((service.get("status") or {}).get("loadBalancer"))
        if external_ips:
            return ",".join(addresses + external_ips)
        return ",".join(addresses) or "<pending>"
    if service_type == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _port(port: dict[str, Any]) -> str:
    protocol = port.get("protocol", "")
    if port.get("nodePort"):
        return f"{port.get('port', 0)}:{port['nodePort']}/{protocol}"
    return f"{port.get('port', 0)}/{protocol}"


def _service_cells(service: dict[str, Any], now: datetime) -> list[Cell]:
    spec = service.get("spec") or {}
    ports = ",".join(_port(port) for port in spec.get("ports") or []) or "<none>"
    return [
        object_name(service), spec.get("type", ""), cluster_ip(spec),
        external_ip(service), ports, age(service, now), format_labels(spec.get("selector")),
    ]


def _host_port(ip: str, port: int) -> str:
    """`ip:port`, bracketing IPv6 addresses like Go's `net.JoinHostPort`."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def format_endpoints(endpoints: dict[str, Any]) -> str:
    """Ready addresses (with each port when the subset has ports), the first three shown."""
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return "<none>"
    addresses: list[str] = []
    for subset in subsets:
        ips = [address.get("ip", "") for address in subset.get("addresses") or []]
        # Headless services may publish endpoints without ports.
        ports = [port.get("port", 0) for port in subset.get("ports") or []] or [None]
        addresses += [ip if port is None else _host_port(ip, port) for port in ports for ip in ips]
    return first_with_more(addresses)


def _endpoints_cells(endpoints: dict[str, Any], now: datetime) -> list[Cell]:
    name = object_name(endpoints)
    return [name, format_endpoints(endpoints), age(endpoints, now)]


SERVICE = Printer(
    (
        NAME,
        Column("Type", "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
                       "ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a "
                       "cluster-internal IP address for load-balancing to endpoints. Endpoints are "
                       "determined by the selector or if that is not specified, by manual construction of an "
                       "Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP "
                       "is allocated and the endpoints are published as a set of endpoints rather than a "
                       "virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node "
                       "which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on "
                       "NodePort and creates an external load-balancer (if supported in the current cloud) "
                       "which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this "
                       "service to the specified externalName. Several other fields do not apply to "
                       "ExternalName services. More info: https://kubernetes.io/docs/concepts/"
                       "services-networking/service/#publishing-services-service-types"),
        Column("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly. "
                             "If an address is specified manually, is in-range (as per system "
                             "configuration), and is not in use, it will be allocated to the service; "
                             "otherwise creation of the service will fail. This field may not be changed "
                             "through updates unless the type field is also being changed to ExternalName "
                             "(which requires this field to be blank) or the type field is being changed "
                             "from ExternalName (in which case this field may optionally be specified, as "
                             "describe above).  Valid values are \"None\", empty string (\"\"), or a valid "
                             "IP address. Setting this to \"None\" makes a \"headless service\" (no virtual "
                             "IP), which is useful when direct endpoint connections are preferred and "
                             "proxying is not required.  Only applies to types ClusterIP, NodePort, and "
                             "LoadBalancer. If this field is specified when creating a Service of type "
                             "ExternalName, creation will fail. This field will be wiped when updating a "
                             "Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/"
                             "services-networking/service/#virtual-ips-and-service-proxies"),
        Column("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will "
                              "also accept traffic for this service.  These IPs are not managed by "
                              "Kubernetes.  The user is responsible for ensuring that traffic arrives at a "
                              "node with this IP.  A common example is external load-balancers that are not "
                              "part of the Kubernetes system."),
        Column("Port(s)", "The list of ports that are exposed by this service. More info: https://"
                          "kubernetes.io/docs/concepts/services-networking/service/"
                          "#virtual-ips-and-service-proxies"),
        AGE,
        Column("Selector", "Route service traffic to pods with label keys and values matching this selector. "
                           "If empty or not present, the service is assumed to have an external process "
                           "managing its endpoints, which Kubernetes will not modify. Only applies to types "
                           "ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More "
                           "info: "
                           "https://kubernetes.io/docs/concepts/services-networking/service/", priority=1),
    ),
    _service_cells,
)

ENDPOINTS = Printer(
    (
        NAME,
        Column("Endpoints", "The set of all endpoints is the union of all subsets. Addresses are placed into "
                            "subsets according to the IPs they share. A single address with multiple ports, "
                            "some of which are ready and some of which are not (because they come from "
                            "different containers) will result in the address being displayed in different "
                            "subsets for the different ports. No address will appear in both Addresses and "
                            "NotReadyAddresses in the same subset. Sets of addresses and ports that comprise "
                            "a service."),
        AGE,
    ),
    _endpoints_cells,
)

PRINTERS = {("", "v1", "Service"): SERVICE, ("", "v1", "Endpoints"): ENDPOINTS}

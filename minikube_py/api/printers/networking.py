"""Printers for networking.k8s.io/v1: Ingresses and NetworkPolicies.

An Ingress row shows its class (`<none>` without one), up to three rule hosts (`*` when no rule names a
host), the load balancer's addresses and PORTS `80`, or `80, 443` once TLS is configured. A NetworkPolicy
row shows its pod selector, `<none>` when it selects every pod in the namespace.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, format_label_selector, object_name
from minikube_py.api.printers.services import load_balancer_addresses

_SHOWN_HOSTS = 3


def ingress_hosts(rules: list[dict[str, Any]]) -> str:
    """The first three hosts named by rules; kube counts the rest by rules, host-less ones included."""
    hosts: list[str] = []
    for rule in rules:
        if len(hosts) == _SHOWN_HOSTS:
            return f"{','.join(hosts)} + {len(rules) - _SHOWN_HOSTS} more..."
        if rule.get("host"):
            hosts.append(rule["host"])
    return ",".join(hosts) or "*"


def _ingress_cells(ingress: dict[str, Any], now: datetime) -> list[Cell]:
    spec = ingress.get("spec") or {}
    addresses = load_balancer_addresses((ingress.get("status") or {}).get("loadBalancer"))
    return [
        object_name(ingress), spec.get("ingressClassName") or "<none>",
        ingress_hosts(spec.get("rules") or []), ",".join(addresses), "80, 443" if spec.get("tls") else "80",
        age(ingress, now),
    ]


def _network_policy_cells(policy: dict[str, Any], now: datetime) -> list[Cell]:
    selector = (policy.get("spec") or {}).get("podSelector")
    return [object_name(policy), format_label_selector(selector), age(policy, now)]


INGRESS = Printer(
    (
        NAME,
        Column("Class", "The name of the IngressClass resource that should be used for additional "
                        "configuration"),
        Column("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
        Column("Address", "Address is a list containing ingress points for the load-balancer"),
        Column("Ports", "Ports of TLS configurations that open"),
        AGE,
    ),
    _ingress_cells,
)

NETWORK_POLICY = Printer(
    (
        NAME,
        Column("Pod-Selector", "Selects the pods to which this NetworkPolicy object applies.  The array of "
                               "ingress rules is applied to any pods selected by this field. Multiple "
                               "network policies can select the same set of pods.  In this case, the ingress "
                               "rules for each are combined additively. This field is NOT optional and "
                               "follows standard label selector semantics. An empty podSelector matches all "
                               "pods in this namespace."),
        AGE,
    ),
    _network_policy_cells,
)

PRINTERS = {
    ("networking.k8s.io", "v1", "Ingress"): INGRESS,
    ("networking.k8s.io", "v1", "NetworkPolicy"): NETWORK_POLICY,
}

"""Table printers for the built-in kinds, one module per API group (core/v1 split by concept).

Each module exports `PRINTERS`, a dict from `(group, version, kind)` to a `Printer`; `PRINTERS` here
merges them explicitly and refuses duplicates. Kinds kube has no printer for (Roles, ClusterRoles,
LimitRanges, CRDs, custom resources) fall back to `DEFAULT_PRINTER` through `printer_for`.
Use `minikube_py.api.tables` to build Tables; this package only describes columns and cells.
"""

from __future__ import annotations

from minikube_py.api.printers import (
    apps,
    autoscaling,
    batch,
    coordination,
    core,
    discovery,
    events,
    metrics,
    networking,
    nodes,
    pods,
    policy,
    rbac,
    scheduling,
    services,
    storage,
    volumes,
)
from minikube_py.api.printers.base import DEFAULT_PRINTER, Printer

GroupVersionKind = tuple[str, str, str]

_MODULES = (core, pods, services, nodes, volumes, events, apps, batch, autoscaling, coordination, discovery,
            networking, policy, rbac, scheduling, storage, metrics)


def _merge() -> dict[GroupVersionKind, Printer]:
    merged: dict[GroupVersionKind, Printer] = {}
    for module in _MODULES:
        for gvk, printer in module.PRINTERS.items():
            if gvk in merged:
                raise ValueError(f"duplicate printer for {gvk}")
            merged[gvk] = printer
    return merged


PRINTERS = _merge()


def printer_for(group: str, version: str, kind: str) -> Printer:
    return PRINTERS.get((group, version, kind), DEFAULT_PRINTER)

"""The Lease printer (coordination.k8s.io/v1): HOLDER is `spec.holderIdentity`, empty while unheld.

Leader election (kube-controller-manager, kube-scheduler) and node heartbeats (kube-node-lease) are Leases,
so `kubectl get leases -A` shows who leads and which kubelets are alive.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, object_name


def _lease_cells(lease: dict[str, Any], now: datetime) -> list[Cell]:
    holder = (lease.get("spec") or {}).get("holderIdentity") or ""
    return [object_name(lease), holder, age(lease, now)]


LEASE = Printer(
    (
        NAME,
        Column("Holder", "holderIdentity contains the identity of the holder of a current lease. If "
                         "Coordinated Leader Election is used, the holder identity must be equal to the "
                         "elected LeaseCandidate.metadata.name field."),
        AGE,
    ),
    _lease_cells,
)

PRINTERS = {("coordination.k8s.io", "v1", "Lease"): LEASE}

"""The PodDisruptionBudget printer (policy/v1).

MIN AVAILABLE and MAX UNAVAILABLE print the int-or-string as written (`2`, `50%`) or `N/A` when unset;
ALLOWED DISRUPTIONS is the disruption controller's `status.disruptionsAllowed`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, object_name


def _int_or_string(value: int | str | None) -> str:
    return "N/A" if value is None else str(value)


def _pod_disruption_budget_cells(budget: dict[str, Any], now: datetime) -> list[Cell]:
    spec = budget.get("spec") or {}
    return [
        object_name(budget), _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")), (budget.get("status") or {}).get("disruptionsAllowed", 0),
        age(budget, now),
    ]


POD_DISRUPTION_BUDGET = Printer(
    (
        NAME,
        Column("Min Available", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "The maximum number of pods that may be unavailable."),
        Column("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.",
               type="integer"),
        AGE,
    ),
    _pod_disruption_budget_cells,
)

PRINTERS = {("policy", "v1", "PodDisruptionBudget"): POD_DISRUPTION_BUDGET}

"""The PriorityClass printer (scheduling.k8s.io/v1): VALUE, GLOBAL-DEFAULT and PREEMPTIONPOLICY.

VALUE is an int cell and GLOBAL-DEFAULT a bool cell (kubectl prints `true`/`false`), as kube sends them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, object_name


def _priority_class_cells(priority_class: dict[str, Any], now: datetime) -> list[Cell]:
    return [
        object_name(priority_class), priority_class.get("value", 0),
        bool(priority_class.get("globalDefault")), age(priority_class, now),
        priority_class.get("preemptionPolicy") or "",
    ]


PRIORITY_CLASS = Printer(
    (
        NAME,
        Column("Value", "value represents the integer value of this priority class. This is the actual "
                        "priority that pods receive when they have the name of this class in their pod spec.",
               type="integer"),
        Column("Global-Default", "globalDefault specifies whether this PriorityClass should be considered as "
                                 "the default priority for pods that do not have any priority class. Only "
                                 "one PriorityClass can be marked as `globalDefault`. However, if more than "
                                 "one PriorityClasses exists with their `globalDefault` field set to true, "
                                 "the smallest value of such global default PriorityClasses will be used as "
                                 "the default priority.", type="boolean"),
        AGE,
        Column("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with lower priority. "
                                   "One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if "
                                   "unset."),
    ),
    _priority_class_cells,
)

PRINTERS = {("scheduling.k8s.io", "v1", "PriorityClass"): PRIORITY_CLASS}

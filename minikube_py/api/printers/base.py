"""The shape of a printer: the columns of one kind's Table and the function that fills a row.

A `Printer` pairs the `Column`s kube declares for a kind (pkg/printers/internalversion) with a `cells`
function `(obj, now) -> list` that returns one value per column, wide (priority 1) columns included:
the apiserver always prints wide and kubectl drops priority-1 columns unless asked for `-o wide`.
Cell values are what kube puts on the wire: strings, ints where kube puts an int64, bools where kube puts a
Go bool. kubectl renders each with `fmt.Sprint`, so `3` and `"3"` look alike but differ in `-o json`.

The columns every printer reuses (`NAME`, `AGE`, `CONTAINERS`, `IMAGES`) live here so their descriptions
are written once; `DEFAULT_PRINTER` is the apiserver's fallback for kinds without a printer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minikube_py.api.printers.format import object_name, rfc3339

Cell = str | int | bool
CellsFunc = Callable[[dict[str, Any], datetime], list[Cell]]
ConditionsFunc = Callable[[dict[str, Any]], list[dict[str, str]]]


@dataclass(frozen=True)
class Column:
    """A `metav1.TableColumnDefinition`; `priority=1` marks a column shown only with `-o wide`."""

    name: str
    description: str
    type: str = "string"
    format: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


def _no_conditions(obj: dict[str, Any]) -> list[dict[str, str]]:
    return []


@dataclass(frozen=True)
class Printer:
    """One kind's Table columns, its row cells and (pods only, in kube) its row conditions."""

    columns: tuple[Column, ...]
    cells: CellsFunc
    conditions: ConditionsFunc = _no_conditions


NAME = Column(
    "Name",
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    format="name",
)
_CREATION_TIMESTAMP_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this "
    "value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for "
    "lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
AGE = Column("Age", _CREATION_TIMESTAMP_DOC)
CONTAINERS = Column("Containers", "Names of each container in the template.", priority=1)
IMAGES = Column("Images", "Images referenced by each container in the template.", priority=1)


def _default_cells(obj: dict[str, Any], now: datetime) -> list[Cell]:
    return [object_name(obj), rfc3339((obj.get("metadata") or {}).get("creationTimestamp"))]


# The apiserver's default convertor (registry/rest/table.go): name plus the raw creation time, so
# `kubectl get roles` shows CREATED AT rather than AGE.
DEFAULT_PRINTER = Printer((NAME, Column("Created At", _CREATION_TIMESTAMP_DOC, type="date")), _default_cells)

"""Server-side printing: `meta.k8s.io/v1` Tables, the form `kubectl get` asks for.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints whatever columns the
server declares, so the columns and every cell string (ages, `Init:0/1`, `80:30080/TCP`, `<none>`) are
decided here, reproducing kube-apiserver 1.32 (pkg/printers/internalversion). The per-kind columns and
cells live in `api/printers/`; this module is the single entry point:

* `column_definitions(resource)` and `row_cells(resource, obj, now)` for one kind;
* `build_table(...)` for a list response, a single object (a one-row Table) or one watch event.

Like kube-apiserver, the server always prints wide: priority-1 columns are declared and filled, and
kubectl hides them unless `-o wide`. Each row carries the object kubectl needs for NAMESPACE, `-L`,
`--show-labels` and `--show-kind`: its metadata as a `PartialObjectMetadata` by default
(`includeObject=Metadata`), the whole object for `includeObject=Object` (`--sort-by`), nothing for `None`.
Rows reference the objects' metadata rather than copying it: serialize a Table, do not mutate it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from minikube_py.api.kinds import Resource
from minikube_py.api.printers import printer_for
from minikube_py.api.printers.base import Cell, Printer
from minikube_py.api.printers.custom import custom_resource_printer

IncludeObject = Literal["None", "Metadata", "Object"]
INCLUDE_OBJECT_POLICIES = ("None", "Metadata", "Object")


def _printer(resource: Resource) -> Printer:
    if resource.custom:
        return custom_resource_printer(resource.printer_columns)
    return printer_for(resource.group, resource.version, resource.kind)


def column_definitions(resource: Resource) -> list[dict[str, Any]]:
    """The `columnDefinitions` of a kind's Tables, wide columns included."""
    return [column.definition() for column in _printer(resource).columns]


def row_cells(resource: Resource, obj: dict[str, Any], now: datetime) -> list[Cell]:
    """One object's cells, in column order."""
    return _printer(resource).cells(obj, now)


def _row_object(resource: Resource, obj: dict[str, Any],
                include_object: IncludeObject) -> dict[str, Any] | None:
    if include_object == "Object":
        # kubectl decodes embedded objects by their type meta (`--sort-by` needs them), as kube's
        # serializer always writes it.
        return {"kind": resource.kind, "apiVersion": resource.api_version, **obj}
    if include_object == "Metadata":
        return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata") or {}}
    return None


def _row(resource: Resource, printer: Printer, obj: dict[str, Any], include_object: IncludeObject,
         now: datetime) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": printer.cells(obj, now)}
    conditions = printer.conditions(obj)
    if conditions:
        row["conditions"] = conditions
    embedded = _row_object(resource, obj, include_object)
    if embedded is not None:
        row["object"] = embedded
    return row


def _list_meta(list_rv: str | None, continue_token: str | None, remaining: int | None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if list_rv:
        meta["resourceVersion"] = list_rv
    if continue_token:
        meta["continue"] = continue_token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    return meta


def build_table(resource: Resource, objects: list[dict[str, Any]], *, list_rv: str | None,
                continue_token: str | None = None, remaining: int | None = None,
                include_object: IncludeObject | Literal[""] = "Metadata", now: datetime,
                with_columns: bool = True) -> dict[str, Any]:
    """A Table of `objects` (one object for a GET or a watch event).

    `list_rv` is the list's resourceVersion (the object's own for a single object or a watch event);
    `include_object` is the request's `includeObject` (empty means Metadata, as in kube);
    `with_columns=False` sends `columnDefinitions: []`, as watch events after the first do.
    """
    policy = include_object or "Metadata"
    if policy not in INCLUDE_OBJECT_POLICIES:
        raise ValueError(f"includeObject must be one of {', '.join(INCLUDE_OBJECT_POLICIES)}, not {policy!r}")
    printer = _printer(resource)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": _list_meta(list_rv, continue_token, remaining),
        "columnDefinitions": column_definitions(resource) if with_columns else [],
        "rows": [_row(resource, printer, obj, policy, now) for obj in objects],
    }

"""Tables for custom resources: the columns a CustomResourceDefinition declares.

A CRD version's `additionalPrinterColumns` name a column, its type (`string`, `integer`, `number`,
`boolean`, `date`), a `priority` (1 = only with `-o wide`) and a `jsonPath` into the object such as
`.spec.replicas` or `.status.conditions[?(@.type=="Ready")].status`. Kube then prints NAME, those columns,
and, when a CRD declares none, AGE. A `date` cell is shown as an age ("5m"), as kube does.

The JSONPath subset here covers what CRDs use in practice: `.field`, `['field']`, `[n]`, `[*]` and
`[?(@.key=="value")]` filters; a path that finds nothing gives an empty cell.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, object_name, since

_STEP = re.compile(r"""\.([A-Za-z0-9_$-]+)|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\]|\[(\*|-?\d+)\]"""
                   r"""|\[\?\(@\.([A-Za-z0-9_.-]+)\s*==\s*(?:"([^"]*)"|'([^']*)')\)\]""")


def parse_json_path(path: str) -> list[tuple[str, str, str]]:
    """Steps of a CRD column's jsonPath: ("field", name, ""), ("index", n, ""), ("all", "", "") or
    ("filter", key, value). Raises ValueError on anything outside the supported subset."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps, pos = [], 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {text[pos:]!r}")
        field, quoted1, quoted2, index, key, value1, value2 = m.groups()
        if field or quoted1 is not None or quoted2 is not None:
            steps.append(("field", field or quoted1 or quoted2 or "", ""))
        elif index == "*":
            steps.append(("all", "", ""))
        elif index is not None:
            steps.append(("index", index, ""))
        else:
            steps.append(("filter", key, value1 if value1 is not None else value2))
        pos = m.end()
    return steps


def evaluate(steps: list[tuple[str, str, str]], obj: Any) -> list[Any]:
    values = [obj]
    for kind, arg, value in steps:
        found: list[Any] = []
        for current in values:
            found.extend(_step(kind, arg, value, current))
        values = found
    return values


def _step(kind: str, arg: str, value: str, current: Any) -> list[Any]:
    if kind == "field":
        return [current[arg]] if isinstance(current, dict) and arg in current else []
    if not isinstance(current, list):
        return []
    if kind == "index":
        i = int(arg)
        return [current[i]] if -len(current) <= i < len(current) else []
    if kind == "all":
        return list(current)
    return [item for item in current if isinstance(item, dict) and _lookup(item, arg) == value]


def _lookup(item: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(item, dict):
            return None
        item = item.get(part)  # type: ignore[assignment]
    return str(item) if isinstance(item, bool | int | float) and not isinstance(item, str) else item


PrinterColumn = tuple[str, str, str, str, int, str]  # name, type, format, description, priority, jsonPath


def _cell(column_type: str, steps: list[tuple[str, str, str]], obj: dict[str, Any], now: datetime) -> Cell:
    values = evaluate(steps, obj)
    if not values or values[0] is None:
        return None  # type: ignore[return-value]
    if column_type == "date" and isinstance(values[0], str):
        return since(values[0], now)
    if len(values) > 1:
        return ",".join(str(v) for v in values)
    value = values[0]
    return value if isinstance(value, str | int | float | bool) else str(value)


@functools.lru_cache(maxsize=256)
def custom_resource_printer(columns: tuple[PrinterColumn, ...]) -> Printer:
    """The Table printer of a CRD version with these `additionalPrinterColumns` (built once per CRD)."""
    if not columns:
        return Printer((NAME, AGE), lambda obj, now: [object_name(obj), age(obj, now)])
    compiled = [(column_type, parse_json_path(path)) for _, column_type, _, _, _, path in columns]
    defs = tuple(Column(name, description, column_type, fmt, priority)
                 for name, column_type, fmt, description, priority, _ in columns)

    def cells(obj: dict[str, Any], now: datetime) -> list[Cell]:
        return [object_name(obj)] + [_cell(column_type, steps, obj, now) for column_type, steps in compiled]

    return Printer((NAME, *defs), cells)

"""The Event printer, for core/v1 Events and their events.k8s.io/v1 view alike.

Kube prints both API versions from the one internal Event, so the columns are the same: LAST SEEN, TYPE,
REASON, OBJECT (`kind/name` of the involved object, kind lower-cased), MESSAGE, and wide SUBOBJECT,
SOURCE, FIRST SEEN, COUNT, NAME. Timestamps fall back the way events evolved: a missing first timestamp
uses `eventTime`, a missing last timestamp uses the first, and a series overrides both the last time
and the count; a singleton new-style event counts 1.

An events.k8s.io/v1 object names its fields differently (`regarding`, `note`, `deprecated*`,
`reportingController`); `_as_core_event` renames them before printing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import NAME, Cell, Column, Printer
from minikube_py.api.printers.format import object_name, since


def _source(event: dict[str, Any]) -> str:
    """`component, host`, falling back to the reporting controller and instance of new-style events."""
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent", "")
    instance = source.get("host") or event.get("reportingInstance", "")
    return f"{component}, {instance}" if instance else component


def _involved_object(event: dict[str, Any]) -> str:
    involved = event.get("involvedObject") or {}
    kind, name = involved.get("kind", "").lower(), involved.get("name", "")
    return f"{kind}/{name}" if name else kind


def _seen(event: dict[str, Any], now: datetime) -> tuple[str, str, int]:
    """LAST SEEN, FIRST SEEN and COUNT."""
    first_seen = since(event.get("firstTimestamp") or event.get("eventTime"), now)
    last_seen = since(event["lastTimestamp"], now) if event.get("lastTimestamp") else first_seen
    series = event.get("series")
    if series is not None:
        return since(series.get("lastObservedTime"), now), first_seen, series.get("count", 0)
    return last_seen, first_seen, event.get("count") or 1


def _event_cells(event: dict[str, Any], now: datetime) -> list[Cell]:
    last_seen, first_seen, count = _seen(event, now)
    return [
        last_seen, event.get("type", ""), event.get("reason", ""), _involved_object(event),
        (event.get("involvedObject") or {}).get("fieldPath", ""), _source(event),
        event.get("message", "").strip(), first_seen, count, object_name(event),
    ]


_RENAMED_IN_EVENTS_V1 = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}


def _as_core_event(event: dict[str, Any]) -> dict[str, Any]:
    return {_RENAMED_IN_EVENTS_V1.get(key, key): value for key, value in event.items()}


def _events_v1_cells(event: dict[str, Any], now: datetime) -> list[Cell]:
    return _event_cells(_as_core_event(event), now)


_COLUMNS = (
    Column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    Column("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    Column("Reason", "This should be a short, machine understandable string that gives the reason for the "
                     "transition into the object's current status."),
    Column("Object", "The object that this event is about."),
    Column("Subobject", "If referring to a piece of an object instead of an entire object, this string "
                        "should contain a valid JSON/Go field access statement, such as "
                        "desiredState.manifest.containers[2]. For example, if the object reference is to a "
                        "container within a pod, this would take on a value like: \"spec.containers{name}\" "
                        "(where \"name\" refers to the name of the container that triggered the event) or if "
                        "no container name is specified \"spec.containers[2]\" (container with index 2 in "
                        "this pod). This syntax is chosen only to have some well-defined way of referencing "
                        "a part of an object.", priority=1),
    Column("Source", "The component reporting this event. Should be a short machine understandable string.",
           priority=1),
    Column("Message", "A human-readable description of the status of this operation."),
    Column("First Seen", "The time at which the event was first recorded. (Time of server receipt is in "
                         "TypeMeta.)", priority=1),
    Column("Count", "The number of times this event has occurred.", priority=1),
    Column(NAME.name, NAME.description, format=NAME.format, priority=1),
)

PRINTERS = {
    ("", "v1", "Event"): Printer(_COLUMNS, _event_cells),
    ("events.k8s.io", "v1", "Event"): Printer(_COLUMNS, _events_v1_cells),
}

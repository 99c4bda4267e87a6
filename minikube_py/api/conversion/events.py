"""events.k8s.io/v1 Events ↔ the core/v1 Events they are stored as.

The newer API renamed fields and marked the old counting fields deprecated: `regarding` ↔ `involvedObject`,
`note` ↔ `message`, `reportingController` ↔ `reportingComponent`, `deprecatedSource`/`deprecatedFirstTimestamp`
/`deprecatedLastTimestamp`/`deprecatedCount` ↔ `source`/`firstTimestamp`/`lastTimestamp`/`count`. Every other
field keeps its name.
"""

from __future__ import annotations

from minikube_py.api.conversion.shape import Object, as_dict, head, put
from minikube_py.api.jsoncopy import copy_json


def event_to_core(event: Object) -> Object:
    out = head("v1", "Event", event)
    out["involvedObject"] = copy_json(as_dict(event.get("regarding")))
    put(out, "reason", event.get("reason"))
    put(out, "message", event.get("note"))
    out["source"] = copy_json(as_dict(event.get("deprecatedSource")))
    out["firstTimestamp"] = event.get("deprecatedFirstTimestamp")
    out["lastTimestamp"] = event.get("deprecatedLastTimestamp")
    put(out, "count", event.get("deprecatedCount"))
    put(out, "type", event.get("type"))
    out["eventTime"] = event.get("eventTime")
    put(out, "series", event.get("series"))
    put(out, "action", event.get("action"))
    put(out, "related", event.get("related"))
    out["reportingComponent"] = event.get("reportingController") or ""
    out["reportingInstance"] = event.get("reportingInstance") or ""
    return out


def event_from_core(event: Object) -> Object:
    out = head("events.k8s.io/v1", "Event", event)
    out["eventTime"] = event.get("eventTime")
    put(out, "series", event.get("series"))
    put(out, "reportingController", event.get("reportingComponent"))
    put(out, "reportingInstance", event.get("reportingInstance"))
    put(out, "action", event.get("action"))
    put(out, "reason", event.get("reason"))
    out["regarding"] = copy_json(as_dict(event.get("involvedObject")))
    put(out, "related", event.get("related"))
    put(out, "note", event.get("message"))
    put(out, "type", event.get("type"))
    out["deprecatedSource"] = copy_json(as_dict(event.get("source")))
    out["deprecatedFirstTimestamp"] = event.get("firstTimestamp")
    out["deprecatedLastTimestamp"] = event.get("lastTimestamp")
    put(out, "deprecatedCount", event.get("count"))
    return out

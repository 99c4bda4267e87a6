"""Events, validated in their stored core/v1 shape whichever API they came through.

kube validates the internal Event, so errors name the core fields (`involvedObject`, `message`,
`reportingController`) even for an events.k8s.io/v1 request (`regarding`, `note`). Requests through
core/v1 get only the lenient legacy checks, for old clients; events.k8s.io/v1 requests also get the strict
ones (an `eventTime`, a `series` that counts, no deprecated fields). The package converts events.k8s.io
objects to the core shape before calling in here.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, invalid, required
from minikube_py.api.validation.messages import GoValue, as_dict, go_scalar, immutable, invalid_value

_LIMITS = (("reportingInstance", "reportingInstance", 128), ("action", "action", 128),
           ("reason", "reason", 128))


def legacy(event: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    namespace = str(as_dict(event.get("metadata")).get("namespace") or "")
    involved = str(as_dict(event.get("involvedObject")).get("namespace") or "")
    mismatch = invalid("involvedObject.namespace", involved, "does not match event.namespace")
    if event.get("eventTime") is None:
        if (not involved and namespace not in ("", "default")) or (involved and namespace != involved):
            errs.append(mismatch)
    else:
        if not involved and namespace not in ("default", "kube-system"):
            errs.append(mismatch)
        controller = str(event.get("reportingComponent") or "")
        if not controller:
            errs.append(required("reportingController"))
        errs += [invalid_value("reportingController", controller, m) for m in names.is_qualified_name(controller)]
        for key, path, limit in _LIMITS:
            value = str(event.get(key) or "")
            if not value:
                errs.append(required(path))
            if len(value) > limit:
                errs.append(invalid(path, "", f"can have at most {limit} characters"))
        if len(str(event.get("message") or "")) > 1024:
            errs.append(invalid("message", "", "can have at most 1024 characters"))
    errs += [invalid_value("namespace", namespace, m) for m in names.is_dns1123_subdomain(namespace)]
    return errs


def _series(event: dict[str, Any]) -> list[FieldError]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    errs = [] if (series.get("count") or 0) >= 2 else [invalid("series.count", "", "should be at least 2")]
    if not series.get("lastObservedTime"):
        errs.append(required("series.lastObservedTime"))
    return errs


def strict_create(event: dict[str, Any]) -> list[FieldError]:
    errs = legacy(event) + _series(event)
    if event.get("eventTime") is None:
        errs.append(required("eventTime"))
    if event.get("type") not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {event.get('type') or ''}"))
    errs += [invalid(key, "", "needs to be unset") for key in ("firstTimestamp", "lastTimestamp")
             if event.get(key) is not None]
    if event.get("count"):
        errs.append(invalid("count", "", "needs to be unset"))
    source = as_dict(event.get("source"))
    if source.get("component") or source.get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs


_IMMUTABLE = (("involvedObject", "involvedObject"), ("reason", "reason"), ("message", "message"),
              ("source", "source"), ("firstTimestamp", "firstTimestamp"), ("lastTimestamp", "lastTimestamp"),
              ("count", "count"), ("type", "type"), ("eventTime", "eventTime"), ("action", "action"),
              ("related", "related"), ("reportingComponent", "reportingController"),
              ("reportingInstance", "reportingInstance"))


def strict_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = legacy(new)
    if new.get("series") != old.get("series"):
        errs += _series(new)
    for key, path in _IMMUTABLE:
        # Absent, null and Go's zero value are the same thing once decoded.
        value, previous = new.get(key) or None, old.get(key) or None
        shown = GoValue(f"core.{key[0].upper()}{key[1:]}{{...}}") if isinstance(value, dict) else go_scalar(value)
        errs += immutable(path, value, previous, shown)
    return errs

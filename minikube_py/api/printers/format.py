"""Cell formatting shared by every printer: ages, label maps, label selectors, container lists.

Each helper reproduces one of the Go functions kube's printers call, because kubectl shows the strings
exactly as the server renders them:
* `human_duration` is apimachinery's `duration.HumanDuration` (`45s`, `119s`, `2m5s`, `3m`, `5h30m`, `10h`,
  `2d5h`, `10d`, `2y30d`, `9y`), `since` is the printers' `translateTimestampSince` (`<unknown>` when unset),
  `age` applies it to `metadata.creationTimestamp`;
* `format_labels` is `labels.FormatLabels` (sorted `k=v,k2=v2`, `<none>` when empty);
* `selector_string` is `LabelSelectorAsSelector(...).String()` (parsed by `api/selectors.py`),
  `format_label_selector` is `metav1.FormatLabelSelector` (`<none>` when it selects everything, `<error>`
  when malformed);
* `first_with_more` and `list_with_more` shorten long lists to three items and `+ N more...`;
* `container_cells` lays a pod template's containers out as the CONTAINERS and IMAGES cells.

Times arrive as the RFC 3339 strings the API serves (`2026-11-21T22:46:12Z`, micro-times with a fraction);
`now` is always passed in, never read from the clock here, so tables are deterministic under test.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from minikube_py.api.errors import APIError
from minikube_py.api.selectors import LabelSelector
from minikube_py.api.timestamps import time_string

_MICROSECONDS_PER_SECOND = 1_000_000
_GO_ZERO_TIME = "0001-01-01T00:00:00Z"


def parse_time(value: str | None) -> datetime | None:
    """An API timestamp as an aware datetime; None for an unset (Go zero) time."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def rfc3339(value: str | None) -> str:
    """A timestamp re-rendered the way Go's `time.RFC3339` prints it in UTC (whole seconds)."""
    parsed = parse_time(value)
    if parsed is None:
        return _GO_ZERO_TIME
    return time_string(parsed.astimezone(UTC))


def human_duration(elapsed: timedelta) -> str:
    """A duration rounded down to its two most significant units, with coarser units as it grows."""
    micros = elapsed // timedelta(microseconds=1)
    seconds = int(micros / _MICROSECONDS_PER_SECOND)  # Go truncates toward zero
    # Up to a second of clock skew between machines still reads as "now".
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return _pair(minutes, "m", seconds % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return _pair(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _pair(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _pair(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _pair(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def since(timestamp: str | None, now: datetime) -> str:
    """Time elapsed since an API timestamp, `<unknown>` when it is unset."""
    parsed = parse_time(timestamp)
    return "<unknown>" if parsed is None else human_duration(now - parsed)


def object_name(obj: dict[str, Any]) -> str:
    """The NAME cell: `metadata.name`."""
    return str((obj.get("metadata") or {}).get("name", ""))


def being_deleted(obj: dict[str, Any]) -> bool:
    """Whether the object has a `deletionTimestamp` (it waits on finalizers or a grace period)."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def age(obj: dict[str, Any], now: datetime) -> str:
    """The AGE cell: time since `metadata.creationTimestamp`."""
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def format_labels(labels: dict[str, str] | None) -> str:
    """A label map as sorted `k=v` pairs, `<none>` when empty."""
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels)) if labels else "<none>"


def selector_string(selector: dict[str, Any] | None) -> str:
    """A `metav1.LabelSelector` in selector syntax, requirements sorted by key; APIError if malformed."""
    return LabelSelector.from_api(selector).to_string()


def format_label_selector(selector: dict[str, Any] | None) -> str:
    """The SELECTOR cell of most workloads: `<none>` for an empty selector, `<error>` for a malformed one."""
    try:
        return selector_string(selector) or "<none>"
    except APIError:
        return "<error>"


def container_cells(pod_spec: dict[str, Any] | None) -> list[str]:
    """The CONTAINERS and IMAGES cells: each comma-joined in container order."""
    containers = (pod_spec or {}).get("containers") or []
    return [",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)]


def template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """`spec.template.spec` of a workload, empty when any level is missing."""
    template = (obj.get("spec") or {}).get("template") or {}
    return template.get("spec") or {}


def desired_replicas(spec: dict[str, Any]) -> int:
    """`spec.replicas` of a workload; kube defaults an unset one to 1 before the object is stored."""
    replicas = spec.get("replicas")
    return 1 if replicas is None else replicas


def first_with_more(items: list[str], limit: int = 3, separator: str = ",") -> str:
    """The first `limit` items joined, then `+ N more...` counting the rest, as kube shortens long cells."""
    text = separator.join(items[:limit])
    return f"{text} + {len(items) - limit} more..." if len(items) > limit else text


def list_with_more(items: list[str]) -> str:
    """Kube's `listWithMoreString`: the first three items, `<unset>` when there are none."""
    return first_with_more(items) or "<unset>"


def condition_status(conditions: list[dict[str, Any]] | None, condition_type: str) -> str | None:
    """The status of the first condition of a type, None when there is none."""
    for condition in conditions or []:
        if condition.get("type") == condition_type:
            return condition.get("status")
    return None

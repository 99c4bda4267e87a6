"""The pod failure backoff: how long a Job waits before replacing failed pods.

After a pod fails, the replacement is not created at once but after an exponential delay: 10 s after
one failure, 20 s after two in a row, 40 s, … capped at 10 minutes (kube 1.32's code; its documentation
still says six). A success resets the count. The controller remembers per Job a `BackoffRecord` (how many
pods failed since the last success and when the last one failed, from the pods' own finish times) in a
`BackoffStore` in memory, as kube does; a restarted controller starts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minikube_py.kcm.controllers.job.pods import finished_time

DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0


@dataclass(frozen=True)
class BackoffRecord:
    key: str
    failures_after_last_success: int = 0
    last_failure_time: datetime | None = None

    def remaining_time(self, now: datetime) -> float:
        return remaining_time(self.failures_after_last_success, self.last_failure_time, now)


class BackoffStore:
    def __init__(self) -> None:
        self._records: dict[str, BackoffRecord] = {}

    def update(self, record: BackoffRecord) -> None:
        self._records[record.key] = record

    def remove(self, key: str) -> None:
        self._records.pop(key, None)

    def new_record(self, key: str, succeeded: list[dict[str, Any]], failed: list[dict[str, Any]]) -> BackoffRecord:
        """The record after this sync's newly finished pods (not yet stored: see `update`)."""
        old = self._records.get(key, BackoffRecord(key))
        failed_times = sorted(finished_time(pod) for pod in failed)
        if not succeeded:
            if not failed_times:
                return old
            return BackoffRecord(key, old.failures_after_last_success + len(failed_times), failed_times[-1])
        last_success = max(finished_time(pod) for pod in succeeded)
        after = [t for t in failed_times if t > last_success]
        return BackoffRecord(key, len(after), after[-1] if after else None)


def remaining_time(failures: int, last_failure: datetime | None, now: datetime) -> float:
    """Seconds still to wait after `failures` consecutive failures, the last at `last_failure`."""
    if failures == 0 or last_failure is None:
        return 0.0
    backoff = min(DEFAULT_POD_FAILURE_BACKOFF * 2 ** min(failures - 1, 32), MAX_POD_FAILURE_BACKOFF)
    return max(backoff - (now - last_failure).total_seconds(), 0.0)

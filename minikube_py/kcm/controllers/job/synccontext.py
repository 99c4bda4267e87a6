"""What one sync of a Job knows (kube's `syncJobCtx`), passed between the controller's steps.

Built at the start of `sync` from the cache and the Job's status, then refined: the counts including pods
that finished since the last status write, the (interim) finished condition once the outcome is decided,
the succeeded and failed indexes of an Indexed Job, and the backoff record after this sync's failures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minikube_py.kcm.controllers.job.backoff import BackoffRecord
from minikube_py.kcm.controllers.job.indexes import Intervals


@dataclass
class SyncContext:
    job: dict[str, Any]  # a private copy: the sync edits its status
    pods: list[dict[str, Any]]  # every pod the Job owns, finished ones included
    active_pods: list[dict[str, Any]]
    ready: int
    terminating: int
    uncounted_succeeded: set[str]  # status.uncountedTerminatedPods as the sync found it
    uncounted_failed: set[str]
    expected_rm_finalizers: set[str]  # pod uids whose finalizer removal the cache has not shown yet
    backoff: BackoffRecord
    succeeded: int = 0
    failed: int = 0
    finished_condition: dict[str, Any] | None = None
    prev_succeeded_indexes: Intervals = field(default_factory=Intervals)
    succeeded_indexes: Intervals = field(default_factory=Intervals)
    failed_indexes: Intervals | None = None  # only with backoffLimitPerIndex
    delayed_deletion: dict[int, dict[str, Any]] = field(default_factory=dict)

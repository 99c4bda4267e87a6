"""Indexed Jobs (`completionMode: Indexed`): each of `completions` indexes must succeed once.

Every pod carries its index as the annotation and label `batch.kubernetes.io/job-completion-index`, runs
with hostname `<job>-<index>` (stable DNS names with a headless Service), gets the environment variable
`JOB_COMPLETION_INDEX` through the downward API (a fieldRef to that label), and is named
`<job>-<index>-<random>`. The controller keeps at most one active pod per index (duplicates, pods without
a valid index and indexes beyond `completions` are deleted), and creates pods for the lowest indexes that
neither succeeded nor are running.

Succeeded (and, with `backoffLimitPerIndex`, failed) indexes are written compressed, as ordered intervals:
`Intervals` turns {0,1,2,3,5,7,8} into "0-3,5,7,8" (two neighbours are listed, three or more become a
range) and back.

`backoffLimitPerIndex`: every index gets its own retry budget. A replacement pod inherits the failure
counts of the pod it replaces (annotations `batch.kubernetes.io/job-index-failure-count` and
`…-ignored-failure-count`); the failed pod keeps its finalizer until its replacement exists, so the count is
never lost. An index whose count exceeds the limit, or whose pod matched a `FailIndex` rule, is failed for
good and listed in `status.failedIndexes`.

`spec.successPolicy` can declare an Indexed Job successful early: a rule with `succeededIndexes` (all of
them, or `succeededCount` of them, must have succeeded) and/or `succeededCount` (that many indexes at all).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minikube_py.kcm.controllers.job.podfailurepolicy import FAIL_INDEX, match_pod_failure_policy
from minikube_py.kcm.controllers.job.pods import (
    finished_time,
    has_tracking_finalizer,
    is_pod_failed,
    is_terminating,
    only_replace_failed_pods,
    phase,
)
from minikube_py.kcm.controllers.replicaset import active_pods_rank

if TYPE_CHECKING:
    from minikube_py.kcm.controllers.job.synccontext import SyncContext

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
MAX_GENERATED_NAME_LENGTH = 58  # a generateName prefix leaves room for the 5 random characters
MAX_INT32 = 2**31 - 1


@dataclass(frozen=True)
class Intervals:
    """A set of indexes as sorted, disjoint, non-adjacent (first, last) pairs."""

    spans: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, text: str | None, completions: int) -> Intervals:
        """Read "0-3,5" back, keeping only indexes below `completions`; corrupt parts are skipped."""
        indexes: list[int] = []
        for part in (text or "").split(","):
            bounds = part.split("-")
            try:
                first, last = int(bounds[0]), int(bounds[-1])
            except ValueError:
                continue
            if first >= completions:
                break
            indexes.extend(range(first, min(last, completions - 1) + 1))
        return cls().with_indexes(indexes)

    def with_indexes(self, indexes: Iterable[int]) -> Intervals:
        return self.merge(Intervals(tuple((ix, ix) for ix in sorted(set(indexes)))))

    def merge(self, other: Intervals) -> Intervals:
        merged: list[list[int]] = []
        for first, last in sorted(self.spans + other.spans):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        return Intervals(tuple((first, last) for first, last in merged))

    def total(self) -> int:
        return sum(last - first + 1 for first, last in self.spans)

    def has(self, index: int) -> bool:
        return any(first <= index <= last for first, last in self.spans)

    def indexes(self) -> set[int]:
        return {ix for first, last in self.spans for ix in range(first, last + 1)}

    def __str__(self) -> str:
        parts = []
        for first, last in self.spans:
            parts.append(str(first) if first == last else f"{first}{',' if last == first + 1 else '-'}{last}")
        return ",".join(parts)


def is_indexed(job: dict[str, Any]) -> bool:
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def has_backoff_limit_per_index(job: dict[str, Any]) -> bool:
    return (job.get("spec") or {}).get("backoffLimitPerIndex") is not None


def completions(job: dict[str, Any]) -> int:
    return int((job.get("spec") or {}).get("completions") or 0)


def completion_index(pod: dict[str, Any]) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        index = int(str(value))
    except ValueError:
        return None
    return index if index >= 0 else None


def valid_index(pod: dict[str, Any], job: dict[str, Any]) -> int | None:
    """The pod's index if it is one of the Job's (below `completions`)."""
    index = completion_index(pod)
    return index if index is not None and index < completions(job) else None


def succeeded_indexes(job: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[Intervals, Intervals]:
    """(the indexes in status.completedIndexes, those plus the ones whose pods succeeded since)."""
    previous = Intervals.parse((job.get("status") or {}).get("completedIndexes"), completions(job))
    new = [ix for pod in pods if phase(pod) == "Succeeded" and has_tracking_finalizer(pod)
           and (ix := valid_index(pod, job)) is not None]
    return previous, previous.with_indexes(new)


def failed_indexes(job: dict[str, Any], pods: list[dict[str, Any]]) -> Intervals:
    previous = Intervals.parse((job.get("status") or {}).get("failedIndexes"), completions(job))
    new = [ix for pod in pods if has_tracking_finalizer(pod) and (ix := valid_index(pod, job)) is not None
           and _is_index_failed(job, pod)]
    return previous.with_indexes(new)


def _is_index_failed(job: dict[str, Any], pod: dict[str, Any]) -> bool:
    if not is_pod_failed(pod, job):
        return False
    matched = match_pod_failure_policy((job.get("spec") or {}).get("podFailurePolicy"), pod)
    if matched.action == FAIL_INDEX:
        return True
    limit = int((job.get("spec") or {}).get("backoffLimitPerIndex") or 0)
    return matched.count_failed and _annotation_count(pod, INDEX_FAILURE_COUNT) >= limit


def first_pending_indexes(ctx: SyncContext, count: int) -> list[int]:
    """The `count` lowest indexes that did not succeed or fail and have no active (or terminating) pod."""
    taken = ctx.succeeded_indexes.indexes() | _indexes(ctx.active_pods)
    if ctx.failed_indexes is not None:
        taken |= ctx.failed_indexes.indexes()
    if only_replace_failed_pods(ctx.job):
        taken |= _indexes(pod for pod in ctx.pods if is_terminating(pod))
    return [ix for ix in range(completions(ctx.job)) if ix not in taken][:count]


def _indexes(pods: Iterable[dict[str, Any]]) -> set[int]:
    return {ix for pod in pods if (ix := completion_index(pod)) is not None}


def surplus_index_pods(pods: list[dict[str, Any]], job: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(active pods to delete: no valid index, or a second pod of an index; the rest). Of duplicates the pod
    most worth keeping stays (kube's ActivePods order, `replicaset.active_pods_rank`)."""
    by_index: dict[int, list[dict[str, Any]]] = {}
    doomed = []
    for pod in pods:
        index = valid_index(pod, job)
        if index is None:
            doomed.append(pod)
        else:
            by_index.setdefault(index, []).append(pod)
    kept = []
    for index in sorted(by_index):
        group = sorted(by_index[index], key=active_pods_rank)
        doomed.extend(group[:-1])
        kept.append(group[-1])
    return doomed, kept


def index_pod_template(template: dict[str, Any], job: dict[str, Any], index: int,
                       replaced: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
    """The template of index `index`'s pod, and its generateName."""
    template = copy.deepcopy(template)
    meta = template.setdefault("metadata", {})
    meta.setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
    meta.setdefault("labels", {})[COMPLETION_INDEX] = str(index)
    name = job["metadata"]["name"]
    template.setdefault("spec", {})["hostname"] = f"{name}-{index}"
    if has_backoff_limit_per_index(job):
        failures, ignored = new_index_failure_counts(job, replaced)
        meta["annotations"][INDEX_FAILURE_COUNT] = str(failures)
        if ignored:
            meta["annotations"][INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
    suffix = f"-{index}-"
    prefix = name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return template, prefix


def add_completion_index_env(template: dict[str, Any]) -> None:
    """Give every (init) container JOB_COMPLETION_INDEX from the pod's index label, unless it sets it."""
    spec = template.get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        env = container.setdefault("env", [])
        if not any(var.get("name") == COMPLETION_INDEX_ENV for var in env):
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}}})


def new_index_failure_counts(job: dict[str, Any], replaced: dict[str, Any] | None) -> tuple[int, int]:
    """(failures, ignored failures) of an index whose pod `replaced` is being replaced."""
    if replaced is None:
        return 0, 0
    failures = _annotation_count(replaced, INDEX_FAILURE_COUNT)
    ignored = _annotation_count(replaced, INDEX_IGNORED_FAILURE_COUNT)
    if match_pod_failure_policy((job.get("spec") or {}).get("podFailurePolicy"), replaced).count_failed:
        return failures + 1, ignored
    return failures, ignored + 1


def pods_with_delayed_deletion(ctx: SyncContext) -> dict[int, dict[str, Any]]:
    """Per index still to be retried, its latest failed pod: kept (finalizer on) until it is replaced."""
    active = _indexes(ctx.active_pods)
    delayed: dict[int, dict[str, Any]] = {}
    for pod in ctx.pods:
        uid = pod["metadata"]["uid"]
        if not has_tracking_finalizer(pod) or uid in ctx.expected_rm_finalizers or not is_pod_failed(pod, ctx.job):
            continue
        index = valid_index(pod, ctx.job)
        if index is None or index in active or ctx.succeeded_indexes.has(index) or \
                (ctx.failed_indexes is not None and ctx.failed_indexes.has(index)):
            continue
        current = delayed.get(index)
        if current is None or (_absolute_failures(current) <= _absolute_failures(pod)
                               and finished_time(pod) >= finished_time(current)):
            delayed[index] = pod
    return delayed


def _absolute_failures(pod: dict[str, Any]) -> int:
    return _annotation_count(pod, INDEX_FAILURE_COUNT) + _annotation_count(pod, INDEX_IGNORED_FAILURE_COUNT)


def _annotation_count(pod: dict[str, Any], key: str) -> int:
    try:
        value = int((pod["metadata"].get("annotations") or {}).get(key, "0"))
    except ValueError:
        return 0
    return value if 0 <= value <= MAX_INT32 else 0


def match_success_policy(job: dict[str, Any], succeeded: Intervals) -> str | None:
    """The SuccessCriteriaMet message if a rule of `spec.successPolicy` is met, else None."""
    policy = (job.get("spec") or {}).get("successPolicy")
    if not policy or not succeeded.spans:
        return None
    done = succeeded.indexes()
    for number, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = Intervals.parse(rule["succeededIndexes"], completions(job)).indexes()
            if required and (required <= done or (count is not None and len(required & done) >= count)):
                return f"Matched rules at index {number}"
        elif count is not None and len(done) >= count:
            return f"Matched rules at index {number}"
    return None

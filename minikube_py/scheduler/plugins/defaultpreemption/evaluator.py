"""Preemption: find pods of lower priority whose eviction lets a pod that fits nowhere fit somewhere
(kube's generic `preemption.Evaluator` with DefaultPreemption's choices).

It runs in PostFilter, after every node failed Filter for the pod, in five steps:

1. eligibility: a pod with `preemptionPolicy: Never` never preempts, and a pod that already preempted (it has
   a nominated node) waits while lower-priority pods on that node are still terminating by preemption;
2. candidates: only nodes that failed with Unschedulable are worth trying (UnschedulableAndUnresolvable
   means evicting pods cannot help); starting from a random node, each is dry-run on a copy of the node and
   the cycle state until enough candidates are found (`minCandidateNodesPercentage`/`Absolute`);
3. victims on a node (`select_victims_on_node`): remove every lower-priority pod, check the pod then fits,
   and put back ("reprieve") as many as possible, most important first, the PDB-violating ones before
   the others, so the victims are the fewest and least important pods that make room;
4. the best candidate (`select_candidate`): fewest PDB violations, then the lowest highest-victim priority,
   the smallest sum of priorities, the fewest victims, the latest start among the most important victims,
   then the first;
5. preparation (`prepare_candidate`): mark each victim with a DisruptionTarget condition, delete it (or
   reject it if it waits at Permit), record a `Preempted` event on it, and clear the nomination of
   lower-priority pods nominated to the same node, which may no longer fit there.

The pod is then nominated to the node (the result's `nominated_node_name`; the scheduler's failure handler
writes `status.nominatedNodeName`) and retried once the victims are gone.

Usage rules: the dry run only touches clones (`NodeInfo.clone`, `CycleState.clone`); only step 5 writes to
the apiserver. A `PostFilterResult("")` with Unschedulable means "no candidate: clear the nomination";
None means "leave the nomination as it is".
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    Handle,
    Pod,
    PostFilterResult,
    Status,
    is_success,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo, pod_uid, reasons_histogram
from minikube_py.scheduler.plugins.defaultpreemption.pdb import (
    Budget,
    filter_pods_with_pdb_violation,
    pod_disruption_budgets,
)

logger = logging.getLogger(__name__)

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
_PRIORITY_SHIFT = 2**31  # makes every int32 priority positive before summing


@dataclass
class Candidate:
    """A node where the pod would fit once `victims` (most important first) are gone."""

    name: str
    victims: list[PodInfo]
    num_pdb_violations: int = 0


class _ExtensionFailed(Exception):
    """A PreFilter AddPod/RemovePod extension failed during a dry run (turned into an Error status)."""


class Evaluator:
    """Preemption for one profile: `preempt` runs the five steps; the others are its parts, public for tests
    and for plugins that preempt differently."""

    def __init__(self, handle: Handle, plugin_name: str, min_candidate_nodes_percentage: int,
                 min_candidate_nodes_absolute: int, rng: random.Random | None = None) -> None:
        self.handle = handle
        self.plugin_name = plugin_name
        self.min_candidate_nodes_percentage = min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = min_candidate_nodes_absolute
        self.rng = rng or random.Random()
        # Asked for now, so the scheduler's informer factory starts these informers with the others.
        self.pod_lister = handle.informers.lister(resources.PODS)
        self.pdb_lister = handle.informers.lister(resources.POD_DISRUPTION_BUDGETS)

    async def preempt(self, state: CycleState, pod: Pod,
                      node_statuses: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status]:
        """Steps 1–5 for `pod`, given each node's Filter status (absent nodes count as unresolvable)."""
        try:  # the queue's copy may be stale; the nominated node matters here
            pod = self.pod_lister.get(_name(pod), _namespace(pod))
        except Exception as error:  # deleted meanwhile, or the cache is unreachable: retry later
            return None, Status.as_error(error)
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
        eligible, message = self.pod_eligible_to_preempt_others(pod, node_statuses.get(nominated))
        if not eligible:
            return None, Status.unschedulable(message)
        all_nodes = list(self.handle.snapshot.list())
        if not all_nodes:
            return None, Status.as_error("no nodes available")
        candidates, statuses, error = self.find_candidates(state, pod, all_nodes, node_statuses)
        if not candidates:
            if error:
                return None, Status.as_error(error)
            return PostFilterResult(""), Status.unschedulable(fit_error_message(len(all_nodes), statuses))
        best = select_candidate(candidates)
        status = await self.prepare_candidate(best, pod)
        if not status.is_success():
            return None, status
        return PostFilterResult(best.name), Status()

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        """Whether `pod` may preempt now, and why not."""
        if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
        if not nominated or nominated_node_status is None:
            return True, ""
        if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""  # the nominated node can no longer take the pod: look elsewhere
        node_info = self.handle.snapshot.get(nominated)
        priority = pod_priority(pod)
        for pod_info in node_info.pods if node_info is not None else ():
            if pod_info.priority < priority and _terminating_by_preemption(pod_info.pod):
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    # --- step 2: candidates ------------------------------------------------------------------------------

    def find_candidates(self, state: CycleState, pod: Pod, all_nodes: Sequence[NodeInfo],
                        node_statuses: Mapping[str, Status]) -> tuple[list[Candidate], dict[str, Status], str]:
        """Candidates, the status of each node tried without success, and any errors met (joined)."""
        potential = [n for n in all_nodes
                     if (s := node_statuses.get(n.name)) is not None and s.code == Code.UNSCHEDULABLE]
        if not potential:
            return [], {}, ""
        budgets = pod_disruption_budgets(self.pdb_lister)
        offset, count = self.offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, budgets, offset, count)

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Where to start trying nodes (random, so preemption spreads over the cluster) and how many
        candidates are enough."""
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def calculate_num_candidates(self, num_nodes: int) -> int:
        wanted = num_nodes * self.min_candidate_nodes_percentage // 100
        return min(max(wanted, self.min_candidate_nodes_absolute), num_nodes)

    def dry_run_preemption(self, state: CycleState, pod: Pod, potential: Sequence[NodeInfo],
                           budgets: Sequence[Budget], offset: int,
                           count: int) -> tuple[list[Candidate], dict[str, Status], str]:
        """Try nodes from `offset` on until `count` candidates are found, one of them violating no PDB."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        failures: list[str] = []
        for i in range(len(potential)):
            node_info = potential[(offset + i) % len(potential)].clone()
            victims, violations, status = self.select_victims_on_node(state.clone(), pod, node_info, budgets)
            if status.is_success() and victims:
                found = violating if violations else non_violating
                if len(found) < count:
                    found.append(Candidate(node_info.name, victims, violations))
                if non_violating and len(non_violating) + len(violating) >= count:
                    break
                continue
            if status.is_success():
                status = Status.as_error(f'expected at least one victim pod on node "{node_info.name}"')
            if status.code == Code.ERROR:
                failures.append(status.message())
            statuses[node_info.name] = status
        return non_violating + violating, statuses, _aggregate(failures)

    # --- step 3: victims on one node ---------------------------------------------------------------------

    def select_victims_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo,
                               budgets: Sequence[Budget]) -> tuple[list[PodInfo], int, Status]:
        """The fewest, least important pods to evict from `node_info` (a clone: it is changed) so `pod` fits,
        and how many of them violate a PDB."""
        priority = pod_priority(pod)
        potential = [pod_info for pod_info in node_info.pods if pod_info.priority < priority]
        victims: list[PodInfo] = []
        try:
            for pod_info in potential:
                self._remove_pod(state, pod, pod_info, node_info)
            if not potential:
                return [], 0, Status.unschedulable(NO_VICTIMS, resolvable=False)
            status = self.handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if not is_success(status):
                return [], 0, status
            potential.sort(key=importance_key(datetime.now(UTC)))
            violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
            num_violating = sum(not self._reprieve(state, pod, v, node_info, victims) for v in violating)
            for pod_info in non_violating:
                self._reprieve(state, pod, pod_info, node_info, victims)
        except _ExtensionFailed as error:
            return [], 0, Status.as_error(str(error))
        if violating and non_violating:  # two runs, each most important first: merge them
            victims.sort(key=importance_key(datetime.now(UTC)))
        return victims, num_violating, Status()

    def _remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> None:
        node_info.remove_pod(pod_info.pod)
        status = self.handle.run_pre_filter_extension_remove_pod(state, pod, pod_info, node_info)
        if not is_success(status):
            raise _ExtensionFailed(status.message())

    def _reprieve(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo,
                  victims: list[PodInfo]) -> bool:
        """Put `pod_info` back; if `pod` no longer fits, take it out again as a victim. Whether it stays."""
        node_info.add_pod(pod_info)
        status = self.handle.run_pre_filter_extension_add_pod(state, pod, pod_info, node_info)
        if not is_success(status):
            raise _ExtensionFailed(status.message())
        if is_success(self.handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)):
            return True
        self._remove_pod(state, pod, pod_info, node_info)
        victims.append(pod_info)
        return False

    # --- step 5: preparation -----------------------------------------------------------------------------

    async def prepare_candidate(self, candidate: Candidate, pod: Pod) -> Status:
        """Evict the candidate's victims and clear lower-priority nominations to its node."""
        statuses = await asyncio.gather(*(self.preempt_pod(candidate, pod, v) for v in candidate.victims))
        for status in statuses:
            if not status.is_success():
                return status
        await self._clear_lower_priority_nominations(pod, candidate.name)
        return SUCCESS

    async def preempt_pod(self, candidate: Candidate, preemptor: Pod, victim: PodInfo) -> Status:
        """Reject `victim` if it waits at Permit, else mark and delete it; then record the event on it."""
        waiting_pod = self.handle.get_waiting_pod(victim.uid)
        if waiting_pod is not None:
            waiting_pod.reject(self.plugin_name, "preempted")
        else:
            client = self.handle.client
            condition = disruption_target_condition(preemptor)
            try:
                if not _has_condition(victim.pod, condition):
                    await client.patch(resources.PODS, victim.name, {"status": {"conditions": [condition]}},
                                       victim.namespace, patch_type="strategic", subresource="status")
                await client.delete(resources.PODS, victim.name, victim.namespace)
            except Exception as error:  # API or transport errors: the pod is retried
                return SUCCESS if isinstance(error, errors.NotFound) else Status.as_error(error)
        note = f"Preempted by pod {pod_uid(preemptor)} on node {candidate.name}"
        self.handle.event_recorder.eventf(victim.pod, preemptor, "Normal", "Preempted", "Preempting", note)
        return SUCCESS

    async def _clear_lower_priority_nominations(self, pod: Pod, node_name: str) -> None:
        """Pods of lower priority nominated to the node may no longer fit there: send them elsewhere."""
        priority = pod_priority(pod)
        for pod_info in self.handle.nominated_pods_for_node(node_name):
            if pod_info.priority >= priority or not (pod_info.pod.get("status") or {}).get("nominatedNodeName"):
                continue
            try:
                await self.handle.client.patch(resources.PODS, pod_info.name, {"status": {"nominatedNodeName": None}},
                                               pod_info.namespace, patch_type="strategic", subresource="status")
            except Exception as error:  # not critical: the pod's next cycle will notice
                logger.warning("cannot clear nominatedNodeName of pod %s: %s", pod_info.key, error)


# --- step 4: choosing among candidates ---------------------------------------------------------------------


def select_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """The best candidate by kube's criteria, each one only breaking the previous one's ties."""
    now = datetime.now(UTC)
    criteria: list[Callable[[Candidate], Any]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + _PRIORITY_SHIFT for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_most_important(c.victims, now),
    ]
    remaining = list(candidates)
    for score in criteria:
        if len(remaining) == 1:
            break
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
    return remaining[0]


def _earliest_start_of_most_important(victims: Sequence[PodInfo], now: datetime) -> datetime:
    top = max(v.priority for v in victims)
    return min(pod_start_time(v.pod, now) for v in victims if v.priority == top)


# --- small helpers ----------------------------------------------------------------------------------------


def pod_priority(pod: Pod) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def pod_start_time(pod: Pod, now: datetime) -> datetime:
    """`status.startTime`, or `now` for a pod that has not started (as kube's GetPodStartTime)."""
    raw = (pod.get("status") or {}).get("startTime")
    try:
        started = datetime.fromisoformat(raw) if isinstance(raw, str) else now
    except ValueError:
        return now
    return started if started.tzinfo else started.replace(tzinfo=UTC)


def importance_key(now: datetime) -> Callable[[PodInfo], tuple[int, datetime]]:
    """Sort key putting the most important pod first: higher priority, then the one running longer."""
    return lambda pod_info: (-pod_info.priority, pod_start_time(pod_info.pod, now))


def disruption_target_condition(preemptor: Pod) -> dict[str, Any]:
    scheduler = (preemptor.get("spec") or {}).get("schedulerName") or "default-scheduler"
    return {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": f"{scheduler}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": time_string()}


def fit_error_message(num_all_nodes: int, statuses: Mapping[str, Status]) -> str:
    """kube's FitError text: "0/3 nodes are available: 1 Insufficient cpu, 2 <reason>."; nodes without a
    status were not worth trying."""
    counts = reasons_histogram(statuses.values())
    if (absent := num_all_nodes - len(statuses)) > 0:
        counts[NOT_HELPFUL] = counts.get(NOT_HELPFUL, 0) + absent
    reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{num_all_nodes} nodes are available:" + (f" {', '.join(reasons)}." if reasons else "")


def _terminating_by_preemption(pod: Pod) -> bool:
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget":
            return condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler"
    return False


def _has_condition(pod: Pod, condition: Mapping[str, Any]) -> bool:
    """Whether the pod already carries `condition` (same status, reason and message): no patch needed."""
    for existing in (pod.get("status") or {}).get("conditions") or []:
        if existing.get("type") == condition["type"]:
            return all(existing.get(k) == condition[k] for k in ("status", "reason", "message"))
    return False


def _aggregate(messages: list[str]) -> str:
    """Several errors as kube's utilerrors aggregate prints them: duplicates dropped, "[a, b]" when many."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]" if unique else ""


def _name(pod: Pod) -> str:
    return (pod.get("metadata") or {}).get("name", "")


def _namespace(pod: Pod) -> str:
    return (pod.get("metadata") or {}).get("namespace", "")

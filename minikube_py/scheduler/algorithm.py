"""Choosing a node for one pod: filter until enough feasible nodes are found, score them, pick the best.

This is the heart of the scheduling cycle (kube's `schedulePod`), between the queue handing out a pod and
Reserve:

1. PreFilter once for the pod; it may narrow the nodes (`PreFilterResult`) or reject the pod outright.
2. A pod that preemption nominated for a node tries that node first.
3. Filter node after node, starting where the previous pod stopped (so every node gets its turn), until
   `num_feasible_nodes_to_find` nodes passed: with many nodes, scoring them all buys little. (The framework
   is handed runs of nodes, which its plugins may check in one call; the outcome is the same.)
4. PreScore and Score the feasible nodes (weights and normalisation are the framework's job), then pick the
   highest total, breaking ties uniformly at random.

When no node passes, `FitError` carries each node's verdict and renders kube's message:
"0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {…}. preemption: …".

Usage rules: the functions read only the cycle's snapshot and state; `next_start_node_index` is the one
piece of memory kept between cycles (on the `NodeCursor`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minikube_py.scheduler.framework.interface import Code, CycleState, Pod, Status
from minikube_py.scheduler.framework.runtime import NodeScores
from minikube_py.scheduler.framework.types import Diagnosis, NodeInfo, reasons_histogram

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class FitError(Exception):
    """No node fits the pod; `str()` is the message FailedScheduling events and the PodScheduled condition show."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        message = f"0/{self.num_all_nodes} nodes are available:"
        if self.diagnosis.pre_filter_msg:
            message += f" {self.diagnosis.pre_filter_msg}."
        else:
            counts = reasons_histogram(self.diagnosis.node_to_status.values())
            reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
            if reasons:
                message += f" {', '.join(reasons)}."
        if self.diagnosis.post_filter_msg:
            message += f" {self.diagnosis.post_filter_msg}."  # kube's double full stop after preemption's
        return message


class NoNodesAvailable(Exception):
    def __str__(self) -> str:
        return NO_NODES_AVAILABLE


@dataclass
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int  # filtered: feasible plus rejected
    feasible_nodes: int
    scores: Sequence[Any] = ()  # the framework's per-node scores (`NodeScores`), for explain mode


@dataclass
class NodeCursor:
    """Where the next pod's filtering starts, so successive pods look at different nodes first."""

    next_start_node_index: int = 0


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for: all of them under 100 nodes; otherwise `percentage` of them (when
    unset, kube's adaptive 50% - 1% per 125 nodes, at least 5%), but never fewer than 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    adaptive = percentage or 0
    if adaptive >= 100:
        return num_all_nodes
    if adaptive <= 0:
        adaptive = max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, 50 - num_all_nodes // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, num_all_nodes * adaptive // 100)


def schedule_pod(fwk: Any, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], cursor: NodeCursor,
                 percentage: int | None) -> ScheduleResult:
    """The node the pod should go to; raises FitError (no node fits), NoNodesAvailable, or SchedulingError
    (a plugin failed)."""
    if not nodes:
        raise NoNodesAvailable()
    feasible, diagnosis = find_nodes_that_fit(fwk, state, pod, nodes, cursor, percentage)
    if not feasible:
        raise FitError(pod, len(nodes), diagnosis)
    evaluated = len(feasible) + len(diagnosis.node_to_status)
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    scores = prioritize_nodes(fwk, state, pod, feasible)
    return ScheduleResult(select_host(scores), evaluated, len(feasible), scores)


class SchedulingError(Exception):
    """A plugin returned Error: the scheduler, not the pod, is at fault; the pod is retried after backoff."""

    def __init__(self, status: Status) -> None:
        super().__init__(f"running {status.plugin or 'a'} plugin: {status.message()}")
        self.status = status


def find_nodes_that_fit(fwk: Any, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], cursor: NodeCursor,
                        percentage: int | None) -> tuple[list[NodeInfo], Diagnosis]:
    diagnosis = Diagnosis()
    result, status, rejecting = fwk.run_pre_filter_plugins(state, pod, nodes)
    if status.code == Code.ERROR:
        raise SchedulingError(status)
    if not status.is_success():
        diagnosis.pre_filter_msg = status.message()
        diagnosis.unschedulable_plugins.update(rejecting or {status.plugin})
        diagnosis.node_to_status = {node.name: status for node in nodes}
        return [], diagnosis
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if nominated:
        node_info = fwk.snapshot.get(nominated)
        if node_info is not None and fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info).is_success():
            return [node_info], diagnosis
    if result is not None and result.node_names is not None:
        nodes = [node for node in nodes if node.name in result.node_names]
    to_find = num_feasible_nodes_to_find(percentage, len(nodes))
    return _filter(fwk, state, pod, nodes, cursor, to_find, diagnosis), diagnosis


def _filter(fwk: Any, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], cursor: NodeCursor, to_find: int,
            diagnosis: Diagnosis) -> list[NodeInfo]:
    """Filter from the cursor on, until `to_find` nodes passed or every node was tried. The nodes go to Filter
    in runs as long as the number of feasible nodes still missing, so no node after the last one needed is
    checked: the outcome is that of checking them one by one."""
    count = len(nodes)
    if count == 0:
        return []
    start = cursor.next_start_node_index % count
    ordered = [*nodes[start:], *nodes[:start]]
    check = fwk.node_filter(state, pod)
    statuses = diagnosis.node_to_status
    feasible: list[NodeInfo] = []
    processed = 0
    while processed < count and len(feasible) < to_find:
        run = ordered[processed:processed + to_find - len(feasible)]
        for node_info, status in zip(run, check(run), strict=True):
            code = status.code
            if not code:  # Success
                feasible.append(node_info)
            elif code == Code.ERROR:
                raise SchedulingError(status)
            else:
                statuses[node_info.name] = status
                diagnosis.unschedulable_plugins.add(status.plugin)
        processed += len(run)
    cursor.next_start_node_index = (start + processed) % count
    return feasible


def prioritize_nodes(fwk: Any, state: CycleState, pod: Pod, feasible: list[NodeInfo]) -> NodeScores:
    """Each feasible node's total score (all 0 without Score plugins)."""
    status = fwk.run_pre_score_plugins(state, pod, feasible)
    if status.code == Code.ERROR:
        raise SchedulingError(status)
    scores, status = fwk.run_score_plugins(state, pod, feasible)
    if not status.is_success():
        raise SchedulingError(status)
    return scores


def select_host(scores: NodeScores) -> str:
    """The name of a node with the highest total score; among equals each is equally likely (kube samples the
    ties as it goes; one draw among all of them is the same choice)."""
    totals = scores.totals
    best = max(totals)
    winners = [index for index, total in enumerate(totals) if total == best]
    return scores.names[winners[random.randrange(len(winners))]]

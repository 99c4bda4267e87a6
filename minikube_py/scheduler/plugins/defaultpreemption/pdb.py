"""Which preemption victims would break a PodDisruptionBudget (kube's `filterPodsWithPDBViolation`).

Preemption prefers to keep pods whose eviction would take a budget below its floor: when it decides which
of a node's potential victims to spare, it tries the budget-breaking ones first, and among candidate nodes
it prefers the one with the fewest violations. It never refuses to preempt because of a budget.

How a budget is read, as the scheduler does (not as the eviction API does):
* `status.disruptionsAllowed` is how many more matching pods may go; each potential victim the budget
  selects uses one up, and once the count drops below zero the victim violates the budget;
* a pod already listed in `status.disruptedPods` has been counted by the apiserver, so it uses nothing up;
* only budgets in the pod's namespace count; a budget with no selector, an empty one or an invalid one
  selects nothing, and a pod without labels matches no budget.

Usage rules: `pod_disruption_budgets(lister)` reads the informer cache (the lister of
`handle.informers.lister(resources.POD_DISRUPTION_BUDGETS)`) once per preemption attempt; pass the result to
`filter_pods_with_pdb_violation` for each node. Budgets are never modified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikube_py.api.errors import APIError
from minikube_py.api.selectors import LabelSelector
from minikube_py.scheduler.framework.types import PodInfo


@dataclass(frozen=True, slots=True)
class Budget:
    """One PodDisruptionBudget as preemption reads it."""

    namespace: str
    selector: LabelSelector | None  # None: selects nothing (missing, empty or invalid selector)
    disruptions_allowed: int
    disrupted_pods: frozenset[str]  # names the apiserver has already counted as disrupted

    @classmethod
    def of(cls, pdb: Mapping[str, Any]) -> Budget:
        metadata = pdb.get("metadata") or {}
        spec = pdb.get("spec") or {}
        status = pdb.get("status") or {}
        allowed = status.get("disruptionsAllowed")
        return cls(
            namespace=metadata.get("namespace", ""),
            selector=_selector(spec.get("selector")),
            disruptions_allowed=allowed if isinstance(allowed, int) else 0,
            disrupted_pods=frozenset(status.get("disruptedPods") or {}),
        )

    def selects(self, pod_info: PodInfo) -> bool:
        return (self.selector is not None and pod_info.namespace == self.namespace
                and self.selector.matches(pod_info.labels))


def _selector(raw: Any) -> LabelSelector | None:
    if not isinstance(raw, dict):
        return None
    try:
        selector = LabelSelector.from_api(raw)
    except APIError:  # an invalid selector the apiserver let through matches no pod
        return None
    return None if selector.empty else selector


def pod_disruption_budgets(lister: Any) -> list[Budget]:
    """Every budget in the scheduler's informer cache (a `client.listers.Lister` of PDBs), parsed once."""
    return [Budget.of(pdb) for pdb in lister.list()]


def filter_pods_with_pdb_violation(pod_infos: Sequence[PodInfo],
                                   budgets: Sequence[Budget]) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split `pod_infos` (in the order given) into those whose eviction violates a budget and the rest.

    Victims use up a budget's allowance in order, so the same pod may violate or not depending on which
    pods come before it; callers pass the victims most important first, as kube does.
    """
    allowed = [budget.disruptions_allowed for budget in budgets]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod_info in pod_infos:
        violated = False
        if pod_info.labels:
            for i, budget in enumerate(budgets):
                if not budget.selects(pod_info) or pod_info.name in budget.disrupted_pods:
                    continue
                allowed[i] -= 1
                violated = violated or allowed[i] < 0
        (violating if violated else non_violating).append(pod_info)
    return violating, non_violating

"""How a DaemonSet replaces old pods with new ones (kube's `rollingUpdate` in controller/daemon/update.go).

After a template change every node runs an old pod. With `updateStrategy.type: OnDelete` nothing happens
until someone deletes them; with `RollingUpdate` this module picks, on each sync, which old pods to delete
and which nodes get a new pod now. The normal loop (`manage`) then fills the gaps a deletion leaves. Two
budgets, both an absolute number or a percentage of the nodes that should run the daemon
(`desiredNumberScheduled`, percentages rounded up):

* `maxUnavailable` (default 1), used when `maxSurge` is 0: delete old pods while fewer than maxUnavailable
  nodes lack an available pod. Old pods that are not available anyway are replaced at once, outside the budget;
  a node whose new pod is not available yet counts against it.
* `maxSurge`: create the new pod first, next to the old one, on up to maxSurge nodes at a time; the old pod
  is deleted once the new one is available (Ready for `minReadySeconds`). An old pod that is not available is
  replaced at once. An old pod on a node that no longer fits the daemon is only deleted while more pods are
  available than desired, so moving the daemon never leaves it with fewer available pods.

If both are 0 (the apiserver forbids it, but an old object may have it) one unavailable node is allowed.
A node with more than one old or more than one new pod is left to `manage` to prune, and counts as busy.

Usage rules: the functions are pure: they read pods, nodes and the clock's `now` and return decisions; the
controller does the writes. Nodes are visited in name order, so a result is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikube_py.kcm.controllers.daemonset.placement import Placement, is_updated, template_generation
from minikube_py.kcm.controllers.intstr import scaled_value
from minikube_py.kcm.controllers.podcontrol import is_available

Pod = dict[str, Any]


def is_rolling_update(ds: dict[str, Any]) -> bool:
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    return strategy.get("type", "RollingUpdate") == "RollingUpdate"


def surge_count(ds: dict[str, Any], desired: int) -> int:
    if not is_rolling_update(ds):
        return 0
    rolling = ds["spec"].get("updateStrategy", {}).get("rollingUpdate") or {}
    return scaled_value(rolling.get("maxSurge"), desired, True)


def unavailable_count(ds: dict[str, Any], desired: int) -> int:
    if not is_rolling_update(ds):
        return 0
    rolling = ds["spec"].get("updateStrategy", {}).get("rollingUpdate") or {}
    return scaled_value(rolling.get("maxUnavailable"), desired, True)


def allows_surge(ds: dict[str, Any]) -> bool:
    """Whether a node may run an old and a new pod side by side."""
    try:
        return surge_count(ds, 1) > 0
    except ValueError:
        return False


def find_updated_pods_on_node(pods: list[Pod], revision_hash: str,
                              generation: int | None) -> tuple[Pod | None, Pod | None] | None:
    """(new pod, old pod) among the node's pods not being deleted; None if there are two of either."""
    new = old = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if is_updated(pod, revision_hash, generation):
            if new is not None:
                return None
            new = pod
        else:
            if old is not None:
                return None
            old = pod
    return new, old


def replacements(ds: dict[str, Any], nodes: list[dict[str, Any]], node_to_pods: dict[str, list[Pod]],
                 placement: Placement, revision_hash: str, now: float) -> tuple[list[Pod], list[str]]:
    """(old pods to delete, nodes to create a new pod on) for one step of a rolling update.

    `node_to_pods` maps node names to the daemon pods there; `now` is wall-clock epoch seconds."""
    should_run = {node["metadata"]["name"]: placement.should_run(node)[0] for node in nodes}
    desired = sum(should_run.values())
    candidates = {name: [] for name, wanted in should_run.items() if wanted} | node_to_pods
    max_surge = surge_count(ds, desired)
    max_unavailable = unavailable_count(ds, desired)
    if desired > 0 and max_surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    generation = template_generation(ds)

    def available(pod: Pod) -> bool:
        return is_available(pod, min_ready, now)

    found = [(name, find_updated_pods_on_node(pods, revision_hash, generation))
             for name, pods in sorted(candidates.items())]
    if max_surge == 0:
        return _without_surge(found, max_unavailable, available), []
    return _with_surge(found, max_surge, desired, lambda name: should_run.get(name, False), available)


def _without_surge(nodes: list[tuple[str, tuple[Pod | None, Pod | None] | None]], max_unavailable: int,
                   available: Callable[[Pod], bool]) -> list[Pod]:
    unavailable = 0
    broken: list[Pod] = []  # old pods that are unavailable anyway: replaced outside the budget
    candidates: list[Pod] = []
    for _, found in nodes:
        if found is None:
            unavailable += 1  # manage prunes the extra pods first
            continue
        new, old = found
        if (new is None) == (old is None):
            unavailable += 1  # nothing yet, or manage is about to remove one of the two
        elif new is not None:
            unavailable += not available(new)
        elif not available(old):
            broken.append(old)
            unavailable += 1
        elif unavailable < max_unavailable:
            candidates.append(old)
    room = max(0, min(max_unavailable - unavailable, len(candidates)))
    return broken + candidates[:room]


def _with_surge(nodes: list[tuple[str, tuple[Pod | None, Pod | None] | None]], max_surge: int, desired: int,
                should_run: Callable[[str], bool], available: Callable[[Pod], bool]) -> tuple[list[Pod], list[str]]:
    to_delete: list[Pod] = []
    misplaced: list[Pod] = []  # available old pods on nodes the daemon left
    replace_now: list[str] = []  # nodes whose old pod is unavailable: a new pod at once
    candidates: list[str] = []
    surging = available_count = 0
    for name, found in nodes:
        if found is None:
            surging += 1
            continue
        new, old = found
        current = old if old is not None else new
        if current is not None and available(current):
            available_count += 1
        if old is None:
            continue  # manage creates the missing pod
        if new is not None:
            if available(new):
                to_delete.append(old)
            else:
                surging += 1
        elif not available(old):
            if should_run(name):
                replace_now.append(name)
            else:
                to_delete.append(old)
        elif not should_run(name):
            misplaced.append(old)
        elif surging < max_surge:
            candidates.append(name)
    spare = available_count - desired
    if spare > 0:
        to_delete += misplaced[:spare]
    room = max(0, min(max_surge - surging, len(candidates)))
    return to_delete, replace_now + candidates[:room]

"""The in-tree scheduler plugins, one module per plugin (kube's `framework/plugins`), registered by name in
`framework/registry.py`:

    queuesort.py           PrioritySort           QueueSort: higher priority first, then first come
    schedulinggates.py     SchedulingGates        PreEnqueue: keep gated pods out of the active queue
    nodeunschedulable.py   NodeUnschedulable      Filter: cordoned nodes (spec.unschedulable)
    nodename.py            NodeName               Filter: spec.nodeName
    tainttoleration.py     TaintToleration        Filter, Score: taints against tolerations
    nodeaffinity.py        NodeAffinity           PreFilter, Filter, Score: nodeSelector and node affinity
    nodeports.py           NodePorts              PreFilter, Filter: free host ports
    noderesources/         NodeResourcesFit       PreFilter, Filter, Score: requests against allocatable
                           NodeResourcesBalancedAllocation   Score: even use of cpu and memory
    volumebinding.py       VolumeBinding          PreFilter, Filter: claims bound, their volumes reachable
    imagelocality.py       ImageLocality          Score: nodes that already have the pod's images
    podtopologyspread/     PodTopologySpread      PreFilter, Filter, Score: spreading across topology domains
    interpodaffinity/      InterPodAffinity       PreFilter, Filter, Score: pod (anti-)affinity
    defaultpreemption/     DefaultPreemption      PostFilter: evict lower-priority pods
    defaultbinder.py       DefaultBinder          Bind: POST pods/binding

Each plugin is a class with a `name`, built as `Plugin(args, handle)` from its `pluginConfig` args, that
implements the Protocols of `framework/interface.py` for the extension points it serves. This package holds
the helpers several of them share: `default_normalize_score` (and `normalized`, its batch form) and the
`is_own_pod_update` queueing hint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from minikube_py.scheduler.framework.interface import MAX_NODE_SCORE, Pod, QueueingHint
from minikube_py.scheduler.framework.types import NodeScore


def default_normalize_score(scores: list[NodeScore], reverse: bool = False, max_priority: int = MAX_NODE_SCORE) -> None:
    """Scale raw scores in place so the highest becomes `max_priority` (kube's `DefaultNormalizeScore`);
    `reverse` turns a count of bad things into a score (the node with the most gets 0)."""
    for node_score, value in zip(scores, normalized([s.score for s in scores], reverse, max_priority), strict=True):
        node_score.score = value


def normalized(scores: Sequence[int], reverse: bool = False, max_priority: int = MAX_NODE_SCORE) -> list[int]:
    """`default_normalize_score` over bare scores (for plugins that normalise in batches)."""
    highest = max(scores, default=0)
    if highest <= 0:
        return [max_priority] * len(scores) if reverse else list(scores)
    if reverse:
        return [max_priority - max_priority * score // highest for score in scores]
    return [max_priority * score // highest for score in scores]


def is_own_pod_update(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A queueing hint for Pod updates that can only help the updated pod itself (its tolerations grew, its
    scheduling gates went): Queue when `new` is `pod`, by UID."""
    uid = (pod.get("metadata") or {}).get("uid")
    new_uid = ((new or {}).get("metadata") or {}).get("uid") if isinstance(new, dict) else None
    return QueueingHint.QUEUE if uid and uid == new_uid else QueueingHint.SKIP

"""PrioritySort: the default QueueSort plugin, which orders the active queue.

The scheduler takes pods from its active queue one at a time; this plugin decides which comes first: the pod
with the higher `spec.priority` (set by the Priority admission plugin from the pod's PriorityClass), and among
equals the one that entered the queue earlier. Exactly one QueueSort plugin is enabled per profile, and all
profiles must agree on it because they share one queue.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikube_py.scheduler.framework.interface import Handle
from minikube_py.scheduler.framework.types import QueuedPodInfo


class PrioritySort:
    name = "PrioritySort"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether `a` goes before `b`: higher priority first, then the earlier timestamp."""
        priority_a, priority_b = a.pod_info.priority, b.pod_info.priority
        return priority_a > priority_b or (priority_a == priority_b and a.timestamp < b.timestamp)

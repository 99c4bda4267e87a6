"""DefaultTolerationSeconds: pods stay five minutes on a node that stops answering, then are evicted.

The node lifecycle controller taints a node `node.kubernetes.io/not-ready:NoExecute` or
`node.kubernetes.io/unreachable:NoExecute` when its kubelet stops reporting; a NoExecute taint evicts every
pod that does not tolerate it. So that a short network blip does not evict everything, this plugin adds, on
pod create and update, a toleration of each taint for 300 seconds (`tolerationSeconds`) unless the pod
already tolerates it (a toleration with that key, or no key, and effect NoExecute or none).
"""

from __future__ import annotations

from typing import Any

from ..interface import CREATE, UPDATE, Attributes

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300


def _tolerates(tolerations: list[Any], key: str) -> bool:
    return any(isinstance(t, dict) and t.get("key", "") in ("", key) and t.get("effect", "") in ("", "NoExecute")
               for t in tolerations)


class DefaultTolerationSeconds:
    name = "DefaultTolerationSeconds"

    def __init__(self, not_ready_seconds: int = DEFAULT_TOLERATION_SECONDS,
                 unreachable_seconds: int = DEFAULT_TOLERATION_SECONDS) -> None:
        self.seconds = {NOT_READY_TAINT: not_ready_seconds, UNREACHABLE_TAINT: unreachable_seconds}

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE)

    async def admit(self, attributes: Attributes) -> None:
        if attributes.group or attributes.resource != "pods" or attributes.subresource:
            return
        pod = attributes.object
        if not isinstance(pod, dict):
            return
        spec = pod.setdefault("spec", {})
        tolerations = list(spec.get("tolerations") or [])
        added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                 for key, seconds in self.seconds.items() if not _tolerates(tolerations, key)]
        if added:
            spec["tolerations"] = tolerations + added

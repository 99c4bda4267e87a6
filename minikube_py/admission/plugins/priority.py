"""Priority: a pod's `priority` comes from its PriorityClass; at most one class is the global default.

Mutating, on pod create: `spec.priorityClassName` names a PriorityClass whose `value` becomes
`spec.priority` and whose `preemptionPolicy` becomes `spec.preemptionPolicy` (403 `no PriorityClass with
name x was found` when there is none). A pod naming no class gets the global default class (the one with
`globalDefault: true`, the lowest-valued one if a race left several) or, without one, priority 0 and
PreemptLowerPriority. A pod that sets `priority` or `preemptionPolicy` itself to anything else is refused:
the scheduler must be able to trust them. On update the values set at create are carried over (validation
forbids changing them). Since kube 1.17 any namespace may use the system-* classes (quota limits them).

Validating, on PriorityClass create and update: refuses a second `globalDefault: true` class with kube's
message.
"""

from __future__ import annotations

from typing import Any

from ..interface import CREATE, UPDATE, Attributes, ClusterState, forbidden
from .namespacelifecycle import wait_for

DEFAULT_PRIORITY = 0  # when no class is the global default
SCHEDULING = "scheduling.k8s.io"
CLASS_WAIT = 0.5  # seconds a named class is waited for in the cache (created a moment before the pod)


class Priority:
    name = "Priority"

    def __init__(self, state: ClusterState, class_wait: float = CLASS_WAIT) -> None:
        self.state = state
        self.class_wait = class_wait

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE)

    def _default_class(self) -> dict[str, Any] | None:
        defaults = [pc for pc in self.state.list(SCHEDULING, "priorityclasses") if pc.get("globalDefault")]
        return min(defaults, key=lambda pc: pc.get("value", 0), default=None)

    async def admit(self, attributes: Attributes) -> None:
        if attributes.group or attributes.resource != "pods" or attributes.subresource:
            return
        pod = attributes.object
        if not isinstance(pod, dict):
            return
        spec = pod.setdefault("spec", {})
        if attributes.operation == UPDATE:
            old_spec = (attributes.old_object or {}).get("spec") or {}
            for field in ("priority", "preemptionPolicy"):
                if spec.get(field) is None and old_spec.get(field) is not None:
                    spec[field] = old_spec[field]
            return
        await self._resolve(attributes, spec)

    async def _resolve(self, attributes: Attributes, spec: dict[str, Any]) -> None:
        class_name = spec.get("priorityClassName")
        if class_name:
            pc = await wait_for(self.state, SCHEDULING, "priorityclasses", "", class_name, self.class_wait)
            if pc is None:
                raise forbidden(attributes, f"no PriorityClass with name {class_name} was found")
            priority, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy")
        else:
            pc = self._default_class()
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
                priority, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy")
            else:
                priority, policy = DEFAULT_PRIORITY, "PreemptLowerPriority"
        given = spec.get("priority")
        if given is not None and given != priority:
            raise forbidden(attributes, f"the integer value of priority ({given}) must not be provided in pod "
                                        f"spec; priority admission controller computed {priority} from the given "
                                        "PriorityClass name")
        spec["priority"] = priority
        if policy is None:
            return
        given = spec.get("preemptionPolicy")
        if given is not None and given != policy:
            raise forbidden(attributes, f"the string value of PreemptionPolicy ({given}) must not be provided in "
                                        f"pod spec; priority admission controller computed {policy} from the given "
                                        "PriorityClass name")
        spec["preemptionPolicy"] = policy

    async def validate(self, attributes: Attributes) -> None:
        if attributes.group != SCHEDULING or attributes.resource != "priorityclasses" or attributes.subresource:
            return
        pc = attributes.object
        if not isinstance(pc, dict) or not pc.get("globalDefault"):
            return
        current = self._default_class()
        if current is None:
            return
        if attributes.operation == CREATE or current["metadata"]["name"] != pc["metadata"]["name"]:
            raise forbidden(attributes, f"PriorityClass {current['metadata']['name']} is already marked as "
                                        "default. Only one default can exist")

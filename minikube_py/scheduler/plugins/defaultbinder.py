"""DefaultBinder: binds a pod to its node by creating a Binding through the `pods/binding` subresource (Bind).

This is the last step of the binding cycle; the apiserver sets `spec.nodeName` and the PodScheduled
condition, and the node's kubelet then sees the pod. The same POST is what a student sends by hand in the
scheduler lab (`mkpy up --without scheduler`). Any failure (the pod is gone, the node name is taken, the
apiserver is down) becomes an Error status: the scheduler forgets the assumed pod and retries it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikube_py.client import resources
from minikube_py.scheduler.framework.interface import CycleState, Handle, Pod, Status


def binding_for(pod: Pod, node_name: str) -> dict[str, Any]:
    """The `v1.Binding` that assigns `pod` to `node_name`; the UID guards against a pod recreated meanwhile."""
    metadata = pod.get("metadata") or {}
    binding_meta = {"namespace": metadata.get("namespace", ""), "name": metadata.get("name", "")}
    if metadata.get("uid"):
        binding_meta["uid"] = metadata["uid"]
    return {"apiVersion": "v1", "kind": "Binding", "metadata": binding_meta,
            "target": {"kind": "Node", "name": node_name}}


class DefaultBinder:
    name = "DefaultBinder"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        binding = binding_for(pod, node_name)
        meta = binding["metadata"]
        try:
            await self.handle.client.create(resources.PODS, binding, meta["namespace"], name=meta["name"],
                                            subresource="binding")
        except Exception as error:  # any failure to bind is the pod's Error status, never the scheduler's crash
            return Status.as_error(error)
        return None

"""Subresources that act on their parent: `scale` and `binding`.

* `scale` (deployments, replicasets, statefulsets, replicationcontrollers) exposes the parent's replica
  count as an `autoscaling/v1 Scale`: reading it copies `spec.replicas`, `status.replicas` and the label
  selector (as a string) out of the parent; writing it changes only the parent's `spec.replicas`. This is
  what `kubectl scale` and the HorizontalPodAutoscaler talk to.
* `binding` (`pods/binding`, and the older `bindings` resource) is how the scheduler assigns a pod to a
  node: it sets `spec.nodeName` exactly once and marks the pod `PodScheduled`. A pod that is already bound
  or is being deleted cannot be bound (409).
"""

from __future__ import annotations

from typing import Any

from ...api import errors
from ...api.selectors import LabelSelector
from .. import codec
from .generic import ResourceStore


def to_scale(obj: dict[str, Any]) -> dict[str, Any]:
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    selector = spec.get("selector") or {}
    if obj.get("kind") == "ReplicationController":
        selector_text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    else:
        selector_text = LabelSelector.from_api(selector).to_string()
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {"replicas": status.get("replicas", 0), "selector": selector_text},
    }


async def update_scale(store: ResourceStore, namespace: str, name: str, scale: dict[str, Any],
                       *, dry_run: bool = False) -> dict[str, Any]:
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid_object("Scale", "autoscaling", name,
                                    [errors.invalid("spec.replicas", replicas,
                                                    "must be greater than or equal to 0")])
    precondition = str((scale.get("metadata") or {}).get("resourceVersion") or "")

    def set_replicas(obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("spec", {})["replicas"] = replicas
        return obj

    updated = await store.guaranteed_update(namespace, name, set_replicas, precondition=precondition,
                                            dry_run=dry_run)
    return to_scale(updated)


async def bind(pods: ResourceStore, namespace: str, binding: dict[str, Any]) -> dict[str, Any]:
    """Bind the pod named by `binding.metadata.name` to `binding.target.name`; returns a Success Status."""
    name = str((binding.get("metadata") or {}).get("name") or "")
    target = binding.get("target") or {}
    node = target.get("name")
    if not name or not node:
        problems = []
        if not name:
            problems.append(errors.required("metadata.name"))
        if not node:
            problems.append(errors.required("target.name"))
        raise errors.invalid_object("Binding", "", name, problems)
    annotations = (binding.get("metadata") or {}).get("annotations") or {}

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        spec, meta = pod.setdefault("spec", {}), pod["metadata"]
        if meta.get("deletionTimestamp"):
            raise errors.conflict("pods", name, f"pod {name} is being deleted, cannot be assigned to a host")
        if spec.get("nodeName"):
            raise errors.conflict("pods", name, f"pod {name} is already assigned to node \"{spec['nodeName']}\"")
        spec["nodeName"] = node
        if annotations:
            meta.setdefault("annotations", {}).update(annotations)
        _set_scheduled(pod)
        return pod

    await pods.guaranteed_update(namespace, name, assign, subresource="binding")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _set_scheduled(pod: dict[str, Any]) -> None:
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": codec.now_rfc3339()})

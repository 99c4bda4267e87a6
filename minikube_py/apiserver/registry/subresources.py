"""Subresources that act on their parent: `scale` and `binding`.

* `scale` exposes the parent's replica count as an `autoscaling/v1 Scale`: reading it copies the spec and
  status replica counts and the label selector (as a string) out of the parent; writing it changes only the
  parent's spec replica count. This is what `kubectl scale` and the HorizontalPodAutoscaler talk to.
  Built-in workloads (deployments, replicasets, statefulsets, replicationcontrollers) keep these at
  `spec.replicas`, `status.replicas` and `spec.selector`; a custom resource keeps them where its CRD's
  `subresources.scale` says (`Resource.scale_paths`: `specReplicasPath`, `statusReplicasPath`,
  `labelSelectorPath`, simple JSON paths such as `.spec.size`). As kube does for custom resources, nothing
  at the status replicas path reads as 0 and nothing at the selector path as ""; nothing at the spec
  replicas path cannot be read (500, `the spec replicas field ".spec.size" does not exist`) but can be
  written, and a patch that leaves it unset is a 400 (`... cannot be empty`); a Scale with no count
  otherwise asks for 0, as Go decodes it. A negative count makes the custom resource invalid
  (`.spec.size: Invalid value: -1: should be a non-negative integer`), where a built-in workload's Scale
  is (`spec.replicas: ... must be greater than or equal to 0`). A path through something that is not an
  object, or to a value of the wrong type, is a 400 with kube's accessor error (`.spec.size.count accessor
  error: small is of the type string, expected map[string]interface{}`) where kube lets it become a 500.
Admission sees writes to `scale` as the Scale they are (`ScaleAdmission`).

* `binding` (`pods/binding`, and the older `bindings` resource) is how the scheduler assigns a pod to a
  node: it sets `spec.nodeName` exactly once and marks the pod `PodScheduled`. A pod that is already bound
  or is being deleted cannot be bound (409).
"""

from __future__ import annotations

from typing import Any

from ...api import errors
from ...api.gofmt import go_quote, go_v, is_int
from ...api.kinds import Resource
from ...api.managedfields import FieldTracker
from ...api.selectors import LabelSelector
from ...api.strategicpatch.values import go_type
from ...api.timestamps import time_string
from .generic import Admission, ResourceStore


def to_scale(resource: Resource, obj: dict[str, Any], *, for_update: bool = False) -> dict[str, Any]:
    """The Scale of `obj`, one of `resource`'s objects. A custom resource with nothing at its spec replicas
    path has no Scale to read; `for_update` gives it one without `spec.replicas`, for a write to fill."""
    paths = resource.scale_paths
    if paths is None:
        return _workload_scale(obj)
    spec_replicas = _read(obj, paths.spec_replicas, int)
    if spec_replicas is None and not for_update:
        raise errors.internal(f"the spec replicas field {go_quote(paths.spec_replicas)} does not exist")
    status_replicas = _read(obj, paths.status_replicas, int)
    selector = _read(obj, paths.label_selector, str) if paths.label_selector else None
    return _scale(obj, {} if spec_replicas is None else {"replicas": spec_replicas},
                  {"replicas": status_replicas or 0, "selector": selector or ""})


def _workload_scale(obj: dict[str, Any]) -> dict[str, Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    selector = spec.get("selector") or {}
    if obj.get("kind") == "ReplicationController":
        selector_text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    else:
        selector_text = LabelSelector.from_api(selector).to_string()
    return _scale(obj, {"replicas": spec.get("replicas", 0)},
                  {"replicas": status.get("replicas", 0), "selector": selector_text})


def _scale(obj: dict[str, Any], spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": spec,
        "status": status,
    }


def _fields(path: str) -> list[str]:
    """The fields of a simple JSON path: `.spec.size` is `spec`, `size`."""
    return path.removeprefix(".").split(".")


def _read(obj: dict[str, Any], path: str, expected: type[int] | type[str]) -> Any:
    """The value at `path`, None if there is none; kube's accessor error (a 400) for a path through a
    non-object or to a value that is not an `expected`."""
    fields = _fields(path)
    value: Any = obj
    for i, field in enumerate(fields):
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _accessor_error(fields[:i + 1], value, "map[string]interface{}")
        if field not in value:
            return None
        value = value[field]
    matches = is_int(value) if expected is int else isinstance(value, str)
    if matches:
        return value
    raise _accessor_error(fields, value, "int64" if expected is int else "string")


def _accessor_error(fields: list[str], value: Any, expected: str) -> errors.APIError:
    found = "<nil>" if value is None else go_type(value)
    return errors.bad_request(f".{'.'.join(fields)} accessor error: {go_v(value)} is of the type {found}, "
                              f"expected {expected}")


def _write(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set `path` (read successfully before, so every field on the way is an object or nothing) to `value`."""
    *parents, last = _fields(path)
    for field in parents:
        if obj.get(field) is None:
            obj[field] = {}
        obj = obj[field]
    obj[last] = value


def set_replicas(resource: Resource, obj: dict[str, Any], replicas: Any) -> dict[str, Any]:
    """`obj` with `replicas` (an integer, as a Scale is decoded before this) at `resource`'s spec replicas
    path. A Scale with no count asks for 0 (Go's zero value), unless it was read from a custom resource that
    had none: kube refuses to guess then."""
    path = resource.scale_paths.spec_replicas if resource.scale_paths else ".spec.replicas"
    if replicas is None:
        if resource.scale_paths and _read(obj, path, int) is None:
            raise errors.bad_request(f"the spec replicas field {go_quote(path)} cannot be empty")
        replicas = 0
    if replicas < 0:
        raise _negative(resource, obj["metadata"]["name"], replicas)
    _write(obj, path, replicas)
    return obj


def _negative(resource: Resource, name: str, replicas: int) -> errors.APIError:
    """A negative count makes a custom resource invalid, and a built-in workload's Scale."""
    if resource.scale_paths is not None:
        return errors.invalid_object(resource.kind, resource.group, name, [
            errors.invalid(resource.scale_paths.spec_replicas, replicas, "should be a non-negative integer")])
    return errors.invalid_object("Scale", "autoscaling", name,
                                 [errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")])


class ScaleAdmission:
    """Admission of a write to `<resource>/scale`: plugins and webhooks see (and may change) the
    `autoscaling/v1 Scale`, as in kube, while the registry writes the parent object."""

    def __init__(self, resource: Resource, admission: Admission) -> None:
        self.resource = resource
        self.admission = admission

    async def mutate(self, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
        if obj is None:
            return await self.admission.mutate(None, self._scale(old))
        scale = self._scale(obj)
        ran = await self.admission.mutate(scale, self._scale(old))
        if ran:
            set_replicas(self.resource, obj, (scale.get("spec") or {}).get("replicas"))
        return ran

    async def validate(self, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        await self.admission.validate(self._scale(obj), self._scale(old))

    def _scale(self, obj: dict[str, Any] | None) -> dict[str, Any] | None:
        return to_scale(self.resource, obj, for_update=True) if obj is not None else None


async def update_scale(store: ResourceStore, namespace: str, name: str, scale: dict[str, Any],
                       *, dry_run: bool = False, tracker: FieldTracker | None = None,
                       admission: Admission | None = None) -> dict[str, Any]:
    precondition = str((scale.get("metadata") or {}).get("resourceVersion") or "")
    replicas = (scale.get("spec") or {}).get("replicas") or 0  # the count a Scale decodes to in Go

    def rescale(obj: dict[str, Any]) -> dict[str, Any]:
        to_scale(store.resource, obj, for_update=True)  # as kube does, refuse a parent its Scale cannot read
        return set_replicas(store.resource, obj, replicas)

    updated = await store.guaranteed_update(namespace, name, rescale, precondition=precondition,
                                            dry_run=dry_run, tracker=tracker,
                                            admission=ScaleAdmission(store.resource, admission) if admission else None)
    return to_scale(store.resource, updated)


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
                       "lastTransitionTime": time_string()})

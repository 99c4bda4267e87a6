"""PodSecurity: the Pod Security Standards, enforced, audited and warned per namespace (kube's PodSecurity).

A validating plugin, run on creates and updates of three kinds of object:

* pods (and their `ephemeralcontainers` subresource; other subresources such as status, binding or exec
  never change what the checks look at): evaluated against the namespace's policy (`levels.py`). A pod
  violating the enforce level is refused, 403 `pods "p" is forbidden: violates PodSecurity
  "restricted:latest": ...`; one violating the warn level gets a `Warning` header; one violating the audit
  level gets the `pod-security.kubernetes.io/audit-violations` audit annotation. Updates are evaluated only
  when they change a container image or add an ephemeral container, as in kube (the rest of a pod's spec is
  immutable, so metadata and status updates of existing pods are never refused);
* pod controllers (deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs, replicationcontrollers,
  podtemplates): their pod template is audited and warned about, never enforced: the pods they create are;
* namespaces: bad label values are refused (422, on create, and on update when they change); raising the
  enforce level warns about the namespace's existing pods that would be refused.

The namespace's labels come from the watch cache (`ClusterState`). Exemptions (usernames, namespaces,
runtime classes) need an AdmissionConfiguration file, which mkpy does not read: there are none.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ....api import errors
from ...interface import CREATE, UPDATE, Attributes, ClusterState, forbidden
from ..namespacelifecycle import wait_for
from .levels import PREFIX, PRIVILEGED, LevelVersion, Policy, policy_for, stricter
from .policy import Result, evaluate

Obj = dict[str, Any]

# pod subresources that cannot change a pod's spec (kube's list); any other (ephemeralcontainers) is evaluated
IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log", "portforward", "proxy",
                                      "status"})
# where each pod controller keeps its pod template
TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "podtemplates"): ("template",),
    ("", "replicationcontrollers"): ("spec", "template"),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}
# how many existing pods a namespace update checks (kube's default), and how long a namespace missing from the
# watch cache (created a moment ago) is waited for: kube reads it from the API instead
MAX_PODS_TO_CHECK = 3000
NAMESPACE_WAIT = 1.0


class PodSecurity:
    name = "PodSecurity"

    def __init__(self, state: ClusterState, namespace_wait: float = NAMESPACE_WAIT) -> None:
        self.state = state
        self.namespace_wait = namespace_wait

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE)

    async def validate(self, attributes: Attributes) -> None:
        target = (attributes.group, attributes.resource)
        if target == ("", "namespaces"):
            self._validate_namespace(attributes)
        elif target == ("", "pods"):
            await self._validate_pod(attributes)
        elif target in TEMPLATES:
            await self._validate_controller(attributes)

    # namespaces ----------------------------------------------------------------------------------

    def _validate_namespace(self, attributes: Attributes) -> None:
        if attributes.subresource:
            return
        policy, label_errors = policy_for(_labels(attributes.object))
        name = attributes.object_name
        if attributes.operation == CREATE:
            if label_errors:
                raise errors.invalid_object("Namespace", "", name, label_errors)
            return
        old_policy, old_errors = policy_for(_labels(attributes.old_object))
        if label_errors and label_errors != old_errors:  # labels already bad may stay bad
            raise errors.invalid_object("Namespace", "", name, label_errors)
        if _raises_enforce(old_policy.enforce, policy.enforce):
            _add_warnings(attributes, self._existing_pod_warnings(name, policy.enforce))

    def _existing_pod_warnings(self, namespace: str, enforce: LevelVersion) -> list[str]:
        """kube's warnings about the pods a new enforce level would refuse: one line per distinct set of
        violations, naming the lexically first such pod and how many others share it."""
        pods = _prioritized(self.state.list("", "pods", namespace))
        checked = pods[:MAX_PODS_TO_CHECK]
        first: dict[str, str] = {}
        count: Counter[str] = Counter()
        for pod in checked:
            result = evaluate(enforce, pod.get("metadata") or {}, pod.get("spec") or {})
            if not result.allowed:
                reason, name = result.reason(), str(pod["metadata"].get("name", ""))
                first[reason] = min(first.get(reason, name), name)
                count[reason] += 1
        warnings = []
        if len(checked) < len(pods):
            warnings.append(f"new PodSecurity enforce level only checked against the first {len(checked)} of "
                            f"{len(pods)} existing pods")
        if count:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce '
                            f'level "{enforce}"')
        return warnings + sorted(f"{first[r]}{_others(count[r])}: {r}" for r in count)

    # pods and pod controllers --------------------------------------------------------------------

    async def _validate_pod(self, attributes: Attributes) -> None:
        if attributes.subresource in IGNORED_POD_SUBRESOURCES:
            return
        namespace = await self._namespace(attributes.namespace)
        if namespace is None:
            raise errors.internal(f'failed to lookup namespace "{attributes.namespace}"')
        policy, label_errors = policy_for(_labels(namespace))
        if not label_errors and policy.fully_privileged():
            attributes.audit_annotations[PREFIX + "enforce-policy"] = str(LevelVersion())
            return
        pod, old = attributes.object or {}, attributes.old_object or {}
        spec = pod.get("spec") or {}
        if attributes.operation == UPDATE and not significant_update(spec, old.get("spec") or {}):
            return
        self._evaluate(attributes, policy, label_errors, pod.get("metadata") or {}, spec, enforce=True)

    async def _validate_controller(self, attributes: Attributes) -> None:
        if attributes.subresource:
            return
        namespace = await self._namespace(attributes.namespace)
        if namespace is None:  # never refuse a controller: its pods are checked when they are created
            attributes.audit_annotations[PREFIX + "error"] = \
                f'failed to lookup namespace "{attributes.namespace}"'
            return
        policy, label_errors = policy_for(_labels(namespace))
        if not label_errors and policy.warn.level == policy.audit.level == PRIVILEGED:
            return
        template = _template(attributes.object, TEMPLATES[(attributes.group, attributes.resource)])
        if template is not None:
            self._evaluate(attributes, policy, label_errors, template.get("metadata") or {},
                           template.get("spec") or {}, enforce=False)

    def _evaluate(self, attributes: Attributes, policy: Policy, label_errors: list[errors.FieldError],
                  metadata: Obj, spec: Obj, *, enforce: bool) -> None:
        """Enforce (refuse), audit (annotate) and warn, each at its own level; a refused request gets no
        warnings."""
        results: dict[str, Result] = {}  # by level: every version runs the same checks

        def result(level_version: LevelVersion) -> Result:
            if level_version.level not in results:
                results[level_version.level] = evaluate(level_version, metadata, spec)
            return results[level_version.level]

        notes = attributes.audit_annotations
        if label_errors:
            notes[PREFIX + "error"] = f"Failed to parse policy: {_aggregate(label_errors)}"
        if enforce:
            notes[PREFIX + "enforce-policy"] = str(policy.enforce)
        if not result(policy.audit).allowed:
            notes[PREFIX + "audit-violations"] = \
                f'would violate PodSecurity "{policy.audit}": {result(policy.audit).detail()}'
        if enforce and not result(policy.enforce).allowed:
            raise forbidden(attributes, f'violates PodSecurity "{policy.enforce}": '
                                        f"{result(policy.enforce).detail()}")
        if not result(policy.warn).allowed:
            warning = f'would violate PodSecurity "{policy.warn}": {result(policy.warn).detail()}'
            _add_warnings(attributes, [warning])

    async def _namespace(self, name: str) -> Obj | None:
        """The namespace from the watch cache, waiting a moment for one created just before."""
        return await wait_for(self.state, "", "namespaces", "", name, self.namespace_wait)


def significant_update(spec: Obj, old: Obj) -> bool:
    """Whether a pod update can change the verdict: a container image changed, or an ephemeral container
    was added or changed its image (kube's test; everything else the checks read is immutable)."""
    for field in ("containers", "initContainers"):
        new, before = spec.get(field) or [], old.get(field) or []
        if len(new) != len(before) or any(n.get("image") != b.get("image")
                                           for n, b in zip(new, before, strict=True)):
            return True
    before_images = {c.get("name"): c.get("image") for c in old.get("ephemeralContainers") or []}
    return any(c.get("name") not in before_images or c.get("image") != before_images[c.get("name")]
               for c in spec.get("ephemeralContainers") or [])


def _raises_enforce(old: LevelVersion, new: LevelVersion) -> bool:
    """Whether a namespace update makes the enforce level stricter (or changes its version), so that existing
    pods are worth checking."""
    if new == old or new.level == PRIVILEGED:
        return False
    return new.version != old.version or stricter(new.level, old.level)


def _prioritized(pods: list[Obj]) -> list[Obj]:
    """Pods in the order kube checks them: one per controller first, the controllers' other pods last."""
    first, rest, seen = [], [], set()
    for pod in pods:
        owner = next((ref.get("uid") for ref in pod["metadata"].get("ownerReferences") or []
                      if ref.get("controller")), None)
        if owner is not None and owner in seen:
            rest.append(pod)
        else:
            seen.add(owner)
            first.append(pod)
    return first + rest


def _others(count: int) -> str:
    if count <= 1:
        return ""
    return " (and 1 other pod)" if count == 2 else f" (and {count - 1} other pods)"


def _labels(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _template(obj: Obj | None, path: tuple[str, ...]) -> Obj | None:
    for key in path:
        obj = (obj or {}).get(key)
    return obj


def _aggregate(found: list[errors.FieldError]) -> str:
    joined = ", ".join(e.describe() for e in found)
    return f"[{joined}]" if len(found) > 1 else joined


def _add_warnings(attributes: Attributes, warnings: list[str]) -> None:
    # a conflicting update is retried through the same chain: say each thing once
    attributes.warnings.extend(w for w in warnings if w not in attributes.warnings)

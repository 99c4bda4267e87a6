"""Defaults for the smaller API groups: scheduling, autoscaling, networking, discovery, RBAC, apiextensions.

A CustomResourceDefinition also gets the status shape kube gives a new one (`acceptedNames` and the storage
version in `storedVersions`). HorizontalPodAutoscalers are defaulted at the version they arrive in: autoscaling/v1 only gets `minReplicas`
(its implicit 80% CPU target is added by conversion to v2, see `api/conversion.py`), autoscaling/v2 also gets
that CPU metric and, when a `behavior` is given, the missing scaling rules — kube leaves `behavior` unset
otherwise, and the controller applies the same rules implicitly.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.defaults.fields import child, dicts, set_default

RBAC_GROUP = "rbac.authorization.k8s.io"
DEFAULT_CPU_UTILIZATION = 80


def priority_class(obj: dict[str, Any]) -> None:
    set_default(obj, "preemptionPolicy", "PreemptLowerPriority")


def hpa_v1(obj: dict[str, Any]) -> None:
    set_default(child(obj, "spec"), "minReplicas", 1)


def hpa_v2(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    set_default(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [default_cpu_metric()]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), _scale_up_rules())
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), _scale_down_rules())


def default_cpu_metric() -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _scale_up_rules() -> dict[str, Any]:
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ]}


def _scale_down_rules() -> dict[str, Any]:
    # No stabilization window here: the controller's --horizontal-pod-autoscaler-downscale-stabilization
    # (5 minutes) applies when the field is unset.
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _rules(given: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(given, dict):
        return defaults
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies"):
        if given.get(key) is not None:
            defaults[key] = given[key]
    return defaults


def network_policy(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    if not spec.get("policyTypes"):
        # A policy without policyTypes always restricts ingress, and egress only if it has egress rules.
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    for direction in ("ingress", "egress"):
        for rule in dicts(spec, direction):
            for port in dicts(rule, "ports"):
                set_default(port, "protocol", "TCP")


def endpoint_slice(obj: dict[str, Any]) -> None:
    # `endpoints` has no omitempty: an EndpointSlice without endpoints shows `endpoints: null`.
    obj.setdefault("endpoints", None)
    for port in dicts(obj, "ports"):
        set_default(port, "name", "")
        set_default(port, "protocol", "TCP")


def role_binding(obj: dict[str, Any]) -> None:
    set_default(child(obj, "roleRef"), "apiGroup", RBAC_GROUP)
    for subject in dicts(obj, "subjects"):
        if not subject.get("apiGroup"):
            # a service account is in the core group: "", which Go's JSON drops (`apiGroup,omitempty`)
            subject.pop("apiGroup", None)
            if subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = RBAC_GROUP


def custom_resource_definition(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    names = child(spec, "names")
    kind = names.get("kind")
    if kind:
        set_default(names, "singular", str(kind).lower())
        set_default(names, "listKind", f"{kind}List")
    conversion = child(spec, "conversion")
    set_default(conversion, "strategy", "None")
    service = child(child(child(conversion, "webhook", create=False), "clientConfig", create=False), "service",
                    create=False)
    if service:
        set_default(service, "port", 443)


def custom_resource_definition_status(obj: dict[str, Any]) -> None:
    # The status a new CRD shows before the CRD controllers accept its names: kube's registry starts it with the
    # storage version recorded, which later updates keep (status is the controllers' to change).
    spec = child(obj, "spec")
    status = child(obj, "status")
    set_default(status, "acceptedNames", {"plural": "", "kind": ""})
    if status.get("storedVersions") is None:
        status["storedVersions"] = [v.get("name") for v in dicts(spec, "versions") if v.get("storage") is True][:1]

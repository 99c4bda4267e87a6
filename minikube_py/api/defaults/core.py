"""Defaults for the core/v1 kinds other than pods and workloads.

Some of these are not `SetDefaults_*` functions in kube but happen at the same point of the request for the
same reason, and are kept here so the stored object looks the same as in a real cluster:

* Secret `stringData` is folded into `data` (base64) and dropped: kube does it while decoding, so
  `stringData` is never stored and never returned.
* Service `clusterIPs`, `ipFamilyPolicy` and `ipFamilies` are filled the way the Service registry and its IP
  allocator fill them, for a single-stack IPv4 cluster; allocating the addresses and node ports is the
  allocator's job, not this module's.
* Events get the fields Go always serializes (`eventTime: null`, `reportingComponent: ""`, ...).
"""

from __future__ import annotations

import base64
from typing import Any

from minikube_py.api.defaults.fields import child, dicts, set_default

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DEFAULT_CLIENT_IP_AFFINITY_SECONDS = 10800


def service(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    _session_affinity(spec)
    set_default(spec, "type", "ClusterIP")
    for port in dicts(spec, "ports"):
        set_default(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    service_type = spec["type"]
    if externally_accessible(spec):
        set_default(spec, "externalTrafficPolicy", "Cluster")
    if service_type in ("ClusterIP", "NodePort", "LoadBalancer"):
        set_default(spec, "internalTrafficPolicy", "Cluster")
    if service_type == "LoadBalancer":
        set_default(spec, "allocateLoadBalancerNodePorts", True)
    if service_type != "ExternalName":
        _ip_families(spec)


def service_status(obj: dict[str, Any]) -> None:
    load_balancer = child(child(obj, "status"), "loadBalancer")
    if child(obj, "spec").get("type") == "LoadBalancer":
        for ingress in dicts(load_balancer, "ingress"):
            if ingress.get("ip"):
                set_default(ingress, "ipMode", "VIP")


def service_on_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Keep what the allocator gave the old Service when the client omits it, then re-sync clusterIP(s).

    `kubectl replace` and `apply` of a manifest without `clusterIP` or `nodePort` must not look like an attempt
    to release them, so kube copies them from the old object first.
    """
    spec, before = child(new, "spec"), child(old, "spec", create=False)
    if spec.get("type") != before.get("type"):
        _drop_type_dependent_fields(spec, before)
    if "ExternalName" not in (spec.get("type"), before.get("type")):
        if not spec.get("clusterIP") and before.get("clusterIP"):
            spec["clusterIP"] = before["clusterIP"]
        if not spec.get("clusterIPs") and before.get("clusterIPs"):
            spec["clusterIPs"] = list(before["clusterIPs"])
    if _needs_node_ports(spec) and _needs_node_ports(before):
        used = {p.get("nodePort") for p in dicts(spec, "ports")} & {p.get("nodePort") for p in dicts(before, "ports")}
        by_name = {p.get("name", ""): p.get("nodePort") for p in dicts(before, "ports")}
        for port in dicts(spec, "ports"):
            previous = by_name.get(port.get("name", ""))
            if not port.get("nodePort") and previous and previous not in used:
                port["nodePort"] = previous
    if _needs_health_check(spec) and _needs_health_check(before) and not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = before.get("healthCheckNodePort")
    if spec.get("clusterIP") != before.get("clusterIP") and spec.get("clusterIPs") == before.get("clusterIPs"):
        # A client that only knows the singular field changed it: follow it in the plural one.
        spec["clusterIPs"] = [spec["clusterIP"]] if spec.get("clusterIP") else []


def _drop_type_dependent_fields(spec: dict[str, Any], before: dict[str, Any]) -> None:
    """A type change drops what only the old type used, if the client left it as it was: `kubectl patch svc web
    -p '{"spec":{"type":"ClusterIP"}}'` on a LoadBalancer must not fail over its node ports or traffic policy.
    A value the client changed in the same request is kept (and validated)."""
    def unchanged(field: str) -> bool:
        return spec.get(field) == before.get(field)

    if _needs_node_ports(before) and not _needs_node_ports(spec):
        previous = {p.get("name", ""): p.get("nodePort") for p in dicts(before, "ports")}
        if all(port.get("nodePort") == previous.get(port.get("name", "")) for port in dicts(spec, "ports")):
            for port in dicts(spec, "ports"):
                port.pop("nodePort", None)
    if _needs_health_check(before) and not _needs_health_check(spec) and unchanged("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if not externally_accessible(spec) and unchanged("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    if before.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        for field in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if unchanged(field):
                spec.pop(field, None)


def _needs_node_ports(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "NodePort" or (
        spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False)


def _needs_health_check(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def externally_accessible(spec: dict[str, Any]) -> bool:
    service_type = spec.get("type")
    return service_type in ("LoadBalancer", "NodePort") or (
        service_type == "ClusterIP" and bool(spec.get("externalIPs")))


def _session_affinity(spec: dict[str, Any]) -> None:
    set_default(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = child(child(spec, "sessionAffinityConfig"), "clientIP")
        set_default(client_ip, "timeoutSeconds", DEFAULT_CLIENT_IP_AFFINITY_SECONDS)


def _ip_families(spec: dict[str, Any]) -> None:
    # Old clients only send clusterIP; the registry mirrors it into clusterIPs.
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    headless = spec.get("clusterIPs") == ["None"]
    if headless and not spec.get("selector"):
        # A headless service without selector has endpoints the user manages: any family may be used.
        set_default(spec, "ipFamilyPolicy", "RequireDualStack")
    else:
        set_default(spec, "ipFamilyPolicy", "SingleStack")
    if not spec.get("ipFamilies"):
        first = (spec.get("clusterIPs") or [""])[0]
        spec["ipFamilies"] = ["IPv6" if ":" in str(first) else "IPv4"]


def namespace(obj: dict[str, Any]) -> None:
    metadata = child(obj, "metadata")
    name = metadata.get("name")
    if name:
        child(metadata, "labels")[NAMESPACE_NAME_LABEL] = name
    child(obj, "spec")


def namespace_status(obj: dict[str, Any]) -> None:
    set_default(child(obj, "status"), "phase", "Active")


def node_status(obj: dict[str, Any]) -> None:
    status = child(obj, "status")
    capacity = status.get("capacity")
    if status.get("allocatable") is None and isinstance(capacity, dict):
        status["allocatable"] = dict(capacity)


def secret(obj: dict[str, Any]) -> None:
    set_default(obj, "type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = child(obj, "data")
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def pending(obj: dict[str, Any]) -> None:
    """The phase of a new PersistentVolume or claim."""
    set_default(child(obj, "status"), "phase", "Pending")


def persistent_volume(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    set_default(spec, "persistentVolumeReclaimPolicy", "Retain")
    set_default(spec, "volumeMode", "Filesystem")
    if isinstance(spec.get("hostPath"), dict):
        set_default(spec["hostPath"], "type", "")


def persistent_volume_claim(obj: dict[str, Any]) -> None:
    set_default(child(obj, "spec"), "volumeMode", "Filesystem")


def endpoints(obj: dict[str, Any]) -> None:
    for subset in dicts(obj, "subsets"):
        for port in dicts(subset, "ports"):
            set_default(port, "protocol", "TCP")


def limit_range(obj: dict[str, Any]) -> None:
    for item in dicts(child(obj, "spec"), "limits"):
        if item.get("type") != "Container":
            continue
        default = child(item, "default")
        default_request = child(item, "defaultRequest")
        # Fill the limit from max, then the request from the limit, then from min: kube's precedence.
        for source, target in ((item.get("max"), default), (default, default_request),
                               (item.get("min"), default_request)):
            for name, quantity in (source or {}).items():
                target.setdefault(name, quantity)


def core_event(obj: dict[str, Any]) -> None:
    for key in ("involvedObject", "source"):
        child(obj, key)
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        obj.setdefault(key, None)
    for key in ("reportingComponent", "reportingInstance"):
        set_default(obj, key, "")


def events_v1_event(obj: dict[str, Any]) -> None:
    for key in ("regarding", "deprecatedSource"):
        child(obj, key)
    for key in ("eventTime", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
        obj.setdefault(key, None)

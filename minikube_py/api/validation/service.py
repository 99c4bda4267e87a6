"""Services and Endpoints.

A Service's ports, type-dependent fields (node ports, load balancer settings, ExternalName) and its cluster
IPs and IP families. On update, the cluster IPs may not change except when the Service moves to or from
`ExternalName` (kube's dual-stack rules: a secondary IP may be added or released, the primary never changes).
Validation expects the registry to have copied already-allocated values (clusterIP(s), node ports) from the
old object into an update that omits them, as kube's Service REST does before validating.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.defaults.core import externally_accessible
from minikube_py.api.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from minikube_py.api.validation.containers import PORT_PROTOCOLS, port_num_or_name
from minikube_py.api.validation.messages import (
    GoValue,
    as_dict,
    as_int,
    as_list,
    dict_items,
    duplicate_go,
    go_int_or_string,
    go_string_slice,
    go_struct,
    invalid_go,
    invalid_value,
)
from minikube_py.api.validation.meta import validate_labels

SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
_MAX_AFFINITY_SECONDS = 86400


def cluster_ips(spec: dict[str, Any]) -> list[str]:
    ips = [str(ip) for ip in as_list(spec.get("clusterIPs"))]
    return ips or ([str(spec["clusterIP"])] if spec.get("clusterIP") else [])


def _headless(spec: dict[str, Any]) -> bool:
    return cluster_ips(spec) == ["None"]


def _enum(value: Any, path: str, supported: list[str]) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [] if value in supported else [not_supported(path, value, supported)]


def service(svc: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(svc.get("spec"))
    kind = spec.get("type")
    errs: list[FieldError] = []
    ports = dict_items(spec.get("ports"))
    if not ports and not _headless(spec) and kind != "ExternalName":
        errs.append(required("spec.ports"))
    errs += _type_specific(spec)
    seen: set[str] = set()
    for i, port in enumerate(ports):
        errs += _port(port, len(ports) > 1, seen, f"spec.ports[{i}]")
    if spec.get("selector") is not None:
        errs += validate_labels(spec["selector"], "spec.selector")
    errs += _session_affinity(spec)
    errs += _cluster_ip_fields(spec)
    for i, ip in enumerate(as_list(spec.get("externalIPs"))):
        problems = names.is_valid_ip(str(ip)) or names.is_non_special_ip(str(ip))
        errs += [invalid_value(f"spec.externalIPs[{i}]", ip, m) for m in problems]
    errs += _enum(kind, "spec.type", SERVICE_TYPES)
    errs += _port_uniqueness(spec, ports)
    errs += _load_balancer_fields(spec)
    errs += _traffic_policies(spec)
    return errs


def _type_specific(spec: dict[str, Any]) -> list[FieldError]:
    kind = spec.get("type")
    if kind in ("LoadBalancer", "NodePort") and _headless(spec):
        return [invalid_value("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {kind} services")]
    if kind != "ExternalName":
        return []
    errs = [forbidden(f"spec.{key}", "may not be set for ExternalName services")
            for key in ("clusterIPs", "ipFamilies", "ipFamilyPolicy") if spec.get(key)]
    cname = str(spec.get("externalName") or "").removesuffix(".")
    if cname:
        errs += [invalid_value("spec.externalName", cname, m) for m in names.is_dns1123_subdomain(cname)]
    else:
        errs.append(required("spec.externalName"))
    return errs


def _port(port: dict[str, Any], require_name: bool, seen: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name")
    if require_name and not name:
        errs.append(required(f"{path}.name"))
    elif name:
        errs += [invalid_value(f"{path}.name", name, m) for m in names.is_dns1123_label(str(name))]
        if name in seen:
            errs.append(duplicate(f"{path}.name", name))
        seen.add(str(name))
    number = as_int(port.get("port"))
    errs += [invalid(f"{path}.port", number, m) for m in names.is_valid_port_num(number)]
    errs += _enum(port.get("protocol"), f"{path}.protocol", PORT_PROTOCOLS)
    errs += port_num_or_name(port.get("targetPort"), f"{path}.targetPort")
    if port.get("appProtocol") is not None:
        app = str(port["appProtocol"])
        errs += [invalid_value(f"{path}.appProtocol", app, m) for m in names.is_qualified_name(app)]
    return errs


def _session_affinity(spec: dict[str, Any]) -> list[FieldError]:
    affinity = spec.get("sessionAffinity")
    errs = _enum(affinity, "spec.sessionAffinity", ["ClientIP", "None"])
    config = spec.get("sessionAffinityConfig")
    if affinity == "None" and config is not None:
        errs.append(forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    if affinity != "ClientIP":
        return errs
    path, reason = "spec.sessionAffinityConfig", "when session affinity type is ClientIP"
    client_ip = as_dict(config).get("clientIP")
    timeout = as_dict(client_ip).get("timeoutSeconds")
    if config is None:
        return errs + [required(path, reason)]
    if client_ip is None:
        return errs + [required(f"{path}.clientIP", reason)]
    if timeout is None:
        return errs + [required(f"{path}.clientIP.timeoutSeconds", reason)]
    if not 0 < as_int(timeout) <= _MAX_AFFINITY_SECONDS:
        errs.append(invalid(f"{path}.clientIP.timeoutSeconds", timeout,
                            f"must be greater than 0 and less than {_MAX_AFFINITY_SECONDS}"))
    return errs


def _cluster_ip_fields(spec: dict[str, Any]) -> list[FieldError]:
    """`ValidateServiceClusterIPsRelatedFields`: clusterIP vs clusterIPs, families, policy, dual-stack pairs."""
    if spec.get("type") == "ExternalName":
        return []
    ips = [str(ip) for ip in as_list(spec.get("clusterIPs"))]
    shown = go_string_slice(spec.get("clusterIPs"))
    errs: list[FieldError] = []
    if spec.get("clusterIP") and ips and ips[0] != spec["clusterIP"]:
        errs.append(invalid_go("spec.clusterIPs", shown, "first value must match `clusterIP`"))
    elif not spec.get("clusterIP") and ips:
        errs.append(invalid_go("spec.clusterIPs", shown, "must be empty when `clusterIP` is not specified"))
    seen: set[Any] = set()
    for i, family in enumerate(as_list(spec.get("ipFamilies"))):
        if family not in ("IPv4", "IPv6"):
            errs.append(not_supported(f"spec.ipFamilies[{i}]", family, ["IPv4", "IPv6"]))
        if family in seen:
            errs.append(duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
        errs.append(not_supported("spec.ipFamilyPolicy", policy, ["PreferDualStack", "RequireDualStack",
                                                                  "SingleStack"]))
    bad_ips = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad_ips = True
                errs.append(invalid_go("spec.clusterIPs", shown, "'None' must be the first and only value"))
            continue
        problems = names.is_valid_ip(ip)
        bad_ips = bad_ips or bool(problems)
        errs += [invalid_value(f"spec.clusterIPs[{i}]", ip, m) for m in problems]
    if len(ips) > 2:
        errs.append(invalid_go("spec.clusterIPs", shown, "may only hold up to 2 values"))
    if bad_ips:
        return errs
    return errs + _dual_stack(spec, ips, shown)


def _dual_stack(spec: dict[str, Any], ips: list[str], shown: str) -> list[FieldError]:
    errs: list[FieldError] = []
    versions = [names.parse_ip(ip).version for ip in ips if ip != "None"]  # type: ignore[union-attr]
    if len(ips) > 1 and sorted(versions) != [4, 6]:
        errs.append(invalid_go("spec.clusterIPs", shown, "may specify no more than one IP for each IP family"))
    families = as_list(spec.get("ipFamilies"))
    if ips == ["None"]:
        return errs
    for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
        is_v6 = ":" in ip
        if family == "IPv4" and is_v6:
            errs.append(invalid_value(f"spec.clusterIPs[{i}]", ip, f"expected an IPv4 value as indicated by "
                                                                   f"`ipFamilies[{i}]`"))
        if family == "IPv6" and not is_v6:
            errs.append(invalid_value(f"spec.clusterIPs[{i}]", ip, f"expected an IPv6 value as indicated by "
                                                                   f"`ipFamilies[{i}]`"))
    return errs


def _port_uniqueness(spec: dict[str, Any], ports: list[dict[str, Any]]) -> list[FieldError]:
    errs: list[FieldError] = []
    if spec.get("type") == "ClusterIP":
        errs += [forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'")
                 for i, port in enumerate(ports) if as_int(port.get("nodePort"))]
    node_ports: set[tuple[Any, int]] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol"), as_int(port.get("nodePort")))
        if key[1] and key in node_ports:
            errs.append(duplicate(f"spec.ports[{i}].nodePort", key[1]))
        node_ports.add(key)
    seen: set[tuple[Any, int]] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol"), as_int(port.get("port")))
        if key in seen:
            rendered = go_struct("core.ServicePort", {
                "Name": "", "Protocol": key[0] or "", "AppProtocol": GoValue("(*string)(nil)"), "Port": key[1],
                "TargetPort": GoValue(go_int_or_string(0)), "NodePort": 0})
            errs.append(duplicate_go(f"spec.ports[{i}]", rendered))
        seen.add(key)
    return errs


def _load_balancer_fields(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    is_lb = spec.get("type") == "LoadBalancer"
    ranges = as_list(spec.get("loadBalancerSourceRanges"))
    if ranges:
        # kube spells this path with a capital L.
        if not is_lb:
            errs.append(forbidden("spec.LoadBalancerSourceRanges", "may only be used when `type` is 'LoadBalancer'"))
        for i, cidr in enumerate(ranges):
            errs += [invalid_value(f"spec.LoadBalancerSourceRanges[{i}]", str(cidr).strip(), m)
                     for m in names.is_valid_cidr(str(cidr).strip())]
    if spec.get("allocateLoadBalancerNodePorts") is not None and not is_lb:
        errs.append(forbidden("spec.allocateLoadBalancerNodePorts", "may only be used when `type` is "
                                                                    "'LoadBalancer'"))
    if is_lb and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(required("allocateLoadBalancerNodePorts"))
    lb_class = spec.get("loadBalancerClass")
    if lb_class is not None:
        if not is_lb:
            errs.append(forbidden("spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'"))
        errs += [invalid_value("spec.loadBalancerClass", lb_class, m) for m in names.is_qualified_name(str(lb_class))]
    return errs


def _traffic_policies(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    external = spec.get("externalTrafficPolicy")
    if not externally_accessible(spec):
        if external:
            errs.append(invalid_value("spec.externalTrafficPolicy", external, "may only be set for "
                                                                              "externally-accessible services"))
    else:
        errs += _enum(external, "spec.externalTrafficPolicy", ["Cluster", "Local"])
    health = as_int(spec.get("healthCheckNodePort"))
    needs_health_check = spec.get("type") == "LoadBalancer" and external == "Local"
    if health and not needs_health_check:
        errs.append(invalid("spec.healthCheckNodePort", health, "may only be set when `type` is 'LoadBalancer' and "
                                                                "`externalTrafficPolicy` is 'Local'"))
    elif health:
        errs += [invalid("spec.healthCheckNodePort", health, m) for m in names.is_valid_port_num(health)]
    internal = spec.get("internalTrafficPolicy")
    if internal is None and spec.get("type") in ("ClusterIP", "NodePort", "LoadBalancer"):
        errs.append(required("spec.internalTrafficPolicy"))
    elif internal is not None and internal not in ("Cluster", "Local"):
        errs.append(not_supported("spec.internalTrafficPolicy", internal, ["Cluster", "Local"]))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution != "PreferClose":
        errs.append(not_supported("spec.trafficDistribution", distribution, ["PreferClose"]))
    return errs


def service_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    errs: list[FieldError] = []
    if "ExternalName" not in (new_spec.get("type"), old_spec.get("type")):
        errs += _cluster_ips_update(new_spec, old_spec)
    both_lb = new_spec.get("type") == old_spec.get("type") == "LoadBalancer"
    if both_lb and new_spec.get("loadBalancerClass") != old_spec.get("loadBalancerClass"):
        errs.append(invalid_value("spec.loadBalancerClass", new_spec.get("loadBalancerClass"), "may not change once "
                                                                                               "set"))
    local = both_lb and new_spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy") == "Local"
    if local and new_spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(forbidden("spec.healthCheckNodePort", "field is immutable"))
    return errs + service(new)


def _cluster_ips_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    after, before = cluster_ips(new), cluster_ips(old)
    if _headless(new) and _headless(old):
        return []
    shown = go_string_slice(after if after else None)
    if len(after) == len(before):
        return [invalid_go(f"spec.clusterIPs[{i}]", shown, "may not change once set")
                for i, ip in enumerate(before) if ip != after[i]]
    if len(before) > len(after):
        if not after:
            return [invalid_go("spec.clusterIPs[0]", shown, "primary clusterIP can not be unset")]
        errs = []
        if after[0] != before[0]:
            errs.append(invalid_go("spec.clusterIPs[0]", shown, "may not change once set"))
        if len(after) == 1 and new.get("ipFamilyPolicy") != "SingleStack":
            errs.append(invalid_value("spec.ipFamilyPolicy", new.get("ipFamilyPolicy"), "must be set to "
                                      "'SingleStack' when releasing the secondary clusterIP"))
        return errs
    if before and after[0] != before[0]:
        return [invalid_go("spec.clusterIPs[0]", shown, "may not change once set")]
    return []


def endpoints(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, subset in enumerate(dict_items(obj.get("subsets"))):
        at = f"subsets[{i}]"
        if not as_list(subset.get("addresses")) and not as_list(subset.get("notReadyAddresses")):
            errs.append(required(at, "must specify `addresses` or `notReadyAddresses`"))
        for key in ("addresses", "notReadyAddresses"):
            for j, address in enumerate(dict_items(subset.get(key))):
                errs += _endpoint_address(address, f"{at}.{key}[{j}]")
        ports = dict_items(subset.get("ports"))
        for j, port in enumerate(ports):
            errs += _endpoint_port(port, len(ports) > 1, f"{at}.ports[{j}]")
    return errs


def _endpoint_address(address: dict[str, Any], path: str) -> list[FieldError]:
    ip = str(address.get("ip") or "")
    errs = [invalid_value(f"{path}.ip", ip, m) for m in names.is_valid_ip(ip)]
    if address.get("hostname"):
        errs += [invalid_value(f"{path}.hostname", address["hostname"], m)
                 for m in names.is_dns1123_label(str(address["hostname"]))]
    if address.get("nodeName") is not None:
        node = str(address["nodeName"])
        errs += [invalid_value(f"{path}.nodeName", node, m) for m in names.is_dns1123_subdomain(node)]
    return errs + [invalid_value(f"{path}.ip", ip, m) for m in names.is_non_special_ip(ip)]


def _endpoint_port(port: dict[str, Any], require_name: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name")
    if require_name and not name:
        errs.append(required(f"{path}.name"))
    elif name:
        errs += [invalid_value(f"{path}.name", name, m) for m in names.is_dns1123_label(str(name))]
    number = as_int(port.get("port"))
    errs += [invalid(f"{path}.port", number, m) for m in names.is_valid_port_num(number)]
    errs += _enum(port.get("protocol"), f"{path}.protocol", PORT_PROTOCOLS)
    if port.get("appProtocol") is not None:
        app = str(port["appProtocol"])
        errs += [invalid_value(f"{path}.appProtocol", app, m) for m in names.is_qualified_name(app)]
    return errs

"""networking.k8s.io/v1 and discovery.k8s.io/v1: Ingresses, NetworkPolicies and EndpointSlices.

An Ingress must route somewhere (a default backend or rules), every HTTP path needs a `pathType`, and a
backend names exactly one of a Service (by port name or number) or a resource. A NetworkPolicy's peers are
selectors or IP blocks, never both in one peer. An EndpointSlice's addresses must match its `addressType`,
which never changes.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from minikube_py.api.validation.containers import PORT_PROTOCOLS
from minikube_py.api.validation.messages import (
    as_dict,
    as_int,
    as_list,
    dict_items,
    go_string_slice,
    immutable,
    invalid_go,
    invalid_value,
    too_many,
)
from minikube_py.api.validation.meta import validate_label_selector, validate_labels

_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
_BAD_PATH_PARTS = ("//", "/./", "/../", "%2f", "%2F")
_ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]


def ingress(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    rules = dict_items(spec.get("rules"))
    errs: list[FieldError] = []
    if not rules and spec.get("defaultBackend") is None:
        shown = go_string_slice([] if isinstance(spec.get("rules"), list) else None, "[]networking.IngressRule")
        errs.append(invalid_go("spec", shown, "either `defaultBackend` or `rules` must be specified"))
    if isinstance(spec.get("defaultBackend"), dict):
        errs += _backend(spec["defaultBackend"], "spec.defaultBackend")
    for i, rule in enumerate(rules):
        errs += _rule(rule, f"spec.rules[{i}]")
    for i, tls in enumerate(dict_items(spec.get("tls"))):
        for j, host in enumerate(as_list(tls.get("hosts"))):
            errs += _host(str(host), f"spec.tls[{i}].hosts[{j}]")
        if tls.get("secretName"):
            errs += [invalid_value(f"spec.tls[{i}].secretName", tls["secretName"], m)
                     for m in names.is_dns1123_subdomain(str(tls["secretName"]))]
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errs += [invalid_value("spec.ingressClassName", class_name, m)
                 for m in names.is_dns1123_subdomain(str(class_name))]
    return errs


def _host(host: str, path: str) -> list[FieldError]:
    if "*" in host:
        return [invalid_value(path, host, m) for m in names.is_wildcard_dns1123_subdomain(host)]
    return [invalid_value(path, host, m) for m in names.is_dns1123_subdomain(host)]


def _rule(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    host = str(rule.get("host") or "")
    if host:
        if names.parse_ip(host) is not None:
            errs.append(invalid_value(f"{path}.host", host, "must be a DNS name, not an IP address"))
        errs += _host(host, f"{path}.host")
    http = rule.get("http")
    if isinstance(http, dict):
        paths = dict_items(http.get("paths"))
        if not paths:
            errs.append(required(f"{path}.http.paths"))
        for i, route in enumerate(paths):
            errs += _http_path(route, f"{path}.http.paths[{i}]")
    return errs


def _http_path(route: dict[str, Any], path: str) -> list[FieldError]:
    kind, target = route.get("pathType"), str(route.get("path") or "")
    if kind is None:
        return [required(f"{path}.pathType", "pathType must be specified")]
    errs: list[FieldError] = []
    if kind in ("Exact", "Prefix"):
        if not target.startswith("/"):
            errs.append(invalid_value(f"{path}.path", target, "must be an absolute path"))
        errs += [invalid_value(f"{path}.path", target, f"must not contain '{part}'")
                 for part in _BAD_PATH_PARTS if target and part in target]
        errs += [invalid_value(f"{path}.path", target, f"cannot end with '{suffix}'")
                 for suffix in ("/..", "/.") if target and target.endswith(suffix)]
    elif kind == "ImplementationSpecific":
        if target and not target.startswith("/"):
            errs.append(invalid_value(f"{path}.path", target, "must be an absolute path"))
    else:
        errs.append(not_supported(f"{path}.pathType", kind, _PATH_TYPES))
    return errs + _backend(as_dict(route.get("backend")), f"{path}.backend")


def _backend(backend: dict[str, Any], path: str) -> list[FieldError]:
    resource, service = backend.get("resource"), backend.get("service")
    if isinstance(resource, dict) and isinstance(service, dict):
        return [invalid(path, "", "cannot set both resource and service backends")]
    if isinstance(resource, dict):
        return [required(f"{path}.resource.{key}") for key in ("kind", "name") if not resource.get(key)]
    if not isinstance(service, dict):
        return [invalid(path, "", "resource or service backend is required")]
    name = service.get("name")
    errs = [] if name else [required(f"{path}.service.name")]
    if name:
        errs += [invalid_value(f"{path}.service.name", name, m) for m in names.is_dns1035_label(str(name))]
    port = as_dict(service.get("port"))
    port_name, number = port.get("name") or "", as_int(port.get("number"))
    if port_name and number:
        errs.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += [invalid_value(f"{path}.service.port.name", port_name, m)
                 for m in names.is_valid_port_name(str(port_name))]
    elif number:
        errs += [invalid(f"{path}.service.port.number", number, m) for m in names.is_valid_port_num(number)]
    else:
        errs.append(required(path, "port name or number is required"))
    return errs


def network_policy(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs = validate_label_selector(as_dict(spec.get("podSelector")), "spec.podSelector")
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(dict_items(spec.get(direction))):
            at = f"spec.{direction}[{i}]"
            for j, port in enumerate(dict_items(rule.get("ports"))):
                errs += _policy_port(port, f"{at}.ports[{j}]")
            for j, peer in enumerate(dict_items(rule.get(peers))):
                errs += _peer(peer, f"{at}.{peers}[{j}]")
    types = as_list(spec.get("policyTypes"))
    if len(types) > 2:
        return errs + [invalid_go("spec.policyTypes", go_string_slice(types, "[]networking.PolicyType"),
                                  "may not specify more than two policyTypes")]
    return errs + [not_supported(f"spec.policyTypes[{i}]", t, ["Ingress", "Egress"])
                   for i, t in enumerate(types) if t not in ("Ingress", "Egress")]


def _policy_port(port: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PORT_PROTOCOLS:
        errs.append(not_supported(f"{path}.protocol", protocol, ["TCP", "UDP", "SCTP"]))
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(number, str):
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        errs += [invalid_value(f"{path}.port", number, m) for m in names.is_valid_port_name(number)]
    else:
        errs += [invalid(f"{path}.port", as_int(number), m) for m in names.is_valid_port_num(as_int(number))]
        if end is not None:
            if as_int(end) < as_int(number):
                errs.append(invalid(f"{path}.endPort", as_int(number), "must be greater than or equal to `port`"))
            errs += [invalid(f"{path}.endPort", as_int(end), m) for m in names.is_valid_port_num(as_int(end))]
    return errs


def _peer(peer: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if isinstance(peer.get(key), dict):
            count += 1
            errs += validate_label_selector(peer[key], f"{path}.{key}")
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        count += 1
        errs += _ip_block(block, f"{path}.ipBlock")
    if count == 0:
        errs.append(required(path, "must specify a peer"))
    elif count > 1 and isinstance(block, dict):
        errs.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _ip_block(block: dict[str, Any], path: str) -> list[FieldError]:
    cidr = str(block.get("cidr") or "")
    if not cidr:
        return [required(f"{path}.cidr")]
    errs = [invalid_value(f"{path}.cidr", cidr, m) for m in names.is_valid_cidr(cidr)]
    if errs:
        return errs
    network = ipaddress.ip_network(cidr, strict=False)
    for i, text in enumerate(as_list(block.get("except"))):
        problems = names.is_valid_cidr(str(text))
        errs += [invalid_value(f"{path}.except[{i}]", text, m) for m in problems]
        if problems:
            continue
        excluded = ipaddress.ip_network(str(text), strict=False)
        if excluded.version != network.version or not excluded.subnet_of(network) or (  # type: ignore[arg-type]
                excluded.prefixlen <= network.prefixlen):
            errs.append(invalid_value(f"{path}.except[{i}]", text, "must be a strict subset of `cidr`"))
    return errs


def endpoint_slice(obj: dict[str, Any]) -> list[FieldError]:
    address_type = obj.get("addressType")
    errs: list[FieldError] = []
    if not address_type:
        errs.append(required("addressType"))
    elif address_type not in _ADDRESS_TYPES:
        errs.append(not_supported("addressType", address_type, _ADDRESS_TYPES))
    endpoints = dict_items(obj.get("endpoints"))
    if len(endpoints) > 1000:
        errs.append(too_many("endpoints", len(endpoints), 1000))
        endpoints = []
    for i, endpoint in enumerate(endpoints):
        errs += _endpoint(endpoint, str(address_type), f"endpoints[{i}]")
    seen: set[str] = set()
    for i, port in enumerate(dict_items(obj.get("ports"))):
        name = str(port.get("name") or "")
        if name:
            errs += [invalid_value(f"ports[{i}].name", name, m) for m in names.is_dns1123_label(name)]
        if name in seen:
            errs.append(duplicate(f"ports[{i}].name", name))
        seen.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            errs.append(required(f"ports[{i}].protocol"))
        elif protocol not in PORT_PROTOCOLS:
            errs.append(not_supported(f"ports[{i}].protocol", protocol, PORT_PROTOCOLS))
        if port.get("appProtocol") is not None:
            app = str(port["appProtocol"])
            errs += [invalid_value(f"ports[{i}].appProtocol", app, m) for m in names.is_qualified_name(app)]
    return errs


def _endpoint(endpoint: dict[str, Any], address_type: str, path: str) -> list[FieldError]:
    addresses = as_list(endpoint.get("addresses"))
    errs: list[FieldError] = []
    if not addresses:
        errs.append(required(f"{path}.addresses", "must contain at least 1 address"))
    elif len(addresses) > 100:
        errs.append(too_many(f"{path}.addresses", len(addresses), 100))
    for i, address in enumerate(addresses):
        at, text = f"{path}.addresses[{i}]", str(address)
        ip = names.parse_ip(text)
        if address_type in ("IPv4", "IPv6"):
            if ip is None or ip.version != int(address_type[-1]):
                errs.append(invalid_value(at, text, f"must be a valid {address_type} address"))
            else:
                errs += [invalid_value(at, text, m) for m in names.is_non_special_ip(text)]
        elif address_type == "FQDN":
            errs += [invalid_value(at, text, m) for m in names.is_dns1123_subdomain(text.removesuffix("."))]
    if endpoint.get("nodeName") is not None:
        node = str(endpoint["nodeName"])
        errs += [invalid_value(f"{path}.nodeName", node, m) for m in names.is_dns1123_subdomain(node)]
    errs += validate_labels(endpoint.get("deprecatedTopology"), f"{path}.deprecatedTopology")
    if endpoint.get("hostname") is not None:
        hostname = str(endpoint["hostname"])
        errs += [invalid_value(f"{path}.hostname", hostname, m) for m in names.is_dns1123_label(hostname)]
    return errs


def endpoint_slice_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = endpoint_slice(new)
    return errs + immutable("addressType", new.get("addressType"), old.get("addressType"))

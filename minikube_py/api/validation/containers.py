"""Container validation: names, images, ports, env, probes, lifecycle hooks, resources, volume mounts.

`container_common` is kube's `validateContainerCommon`, the part shared by regular, init and ephemeral
containers; `pod.py` adds the rules that depend on the container's role and on the rest of the PodSpec.
Field paths are built by the caller (`spec.containers[0]`, `spec.template.spec.initContainers[1]`), so one
set of functions serves Pods and every pod template.
"""

from __future__ import annotations

import re
from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from minikube_py.api.validation.messages import (
    GoValue,
    as_dict,
    as_int,
    as_list,
    dict_items,
    invalid_value,
    nonnegative,
    not_found,
)
from minikube_py.api.validation.quantity import QuantityError, canonical, parse_quantity

PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_STANDARD_RESOURCES = frozenset(_CONTAINER_RESOURCES + tuple(f"{p}.{r}" for p in ("requests", "limits")
                                                                for r in _CONTAINER_RESOURCES) + (
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports", "services.loadbalancers"))
_MAX_INT32 = 2**31 - 1
_ENV_FIELD_PATHS = sorted(("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                           "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                           "status.podIPs"))
_CONVERTIBLE_FIELD_PATHS = frozenset(_ENV_FIELD_PATHS) | {"metadata.labels", "metadata.annotations",
                                                          "spec.restartPolicy", "spec.schedulerName", "status.phase"}


def container_common(ctr: dict[str, Any], volumes: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = ctr.get("name")
    if not name:
        errs.append(required(f"{path}.name"))
    else:
        errs += [invalid_value(f"{path}.name", name, m) for m in names.is_dns1123_label(str(name))]
    if not ctr.get("image"):
        errs.append(required(f"{path}.image"))
    errs += _choice(ctr.get("terminationMessagePolicy"), f"{path}.terminationMessagePolicy",
                    _TERMINATION_MESSAGE_POLICIES)
    errs += container_ports(dict_items(ctr.get("ports")), f"{path}.ports")
    errs += _env(dict_items(ctr.get("env")), f"{path}.env")
    errs += _env_from(dict_items(ctr.get("envFrom")), f"{path}.envFrom")
    errs += _volume_mounts(dict_items(ctr.get("volumeMounts")), volumes, f"{path}.volumeMounts")
    errs += _choice(ctr.get("imagePullPolicy"), f"{path}.imagePullPolicy", _PULL_POLICIES)
    errs += resource_requirements(as_dict(ctr.get("resources")), f"{path}.resources")
    errs += _security_context(ctr.get("securityContext"), f"{path}.securityContext")
    return errs


def probes_and_hooks(ctr: dict[str, Any], path: str, grace_period: Any) -> list[FieldError]:
    """What regular containers (and restartable init containers) may have and must get right."""
    errs: list[FieldError] = []
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                errs += _handler(lifecycle[hook], f"{path}.lifecycle.{hook}", grace_period, lifecycle=True)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = ctr.get(key)
        if isinstance(probe, dict):
            errs += _probe(probe, key, f"{path}.{key}", grace_period)
    return errs


def _choice(value: Any, path: str, supported: list[str]) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [] if value in supported else [not_supported(path, value, supported)]


def container_ports(ports: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        at = f"{path}[{i}]"
        name = port.get("name")
        if name:
            msgs = names.is_valid_port_name(str(name))
            if msgs:
                errs += [invalid_value(f"{at}.name", name, m) for m in msgs]
            elif name in seen:
                errs.append(duplicate(f"{at}.name", name))
            else:
                seen.add(name)
        number = as_int(port.get("containerPort"))
        if number == 0:
            errs.append(required(f"{at}.containerPort"))
        else:
            errs += [invalid(f"{at}.containerPort", number, m) for m in names.is_valid_port_num(number)]
        host_port = as_int(port.get("hostPort"))
        if host_port:
            errs += [invalid(f"{at}.hostPort", host_port, m) for m in names.is_valid_port_num(host_port)]
        errs += _choice(port.get("protocol"), f"{at}.protocol", PORT_PROTOCOLS)
    return errs


def _env(env: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in enumerate(env):
        name = var.get("name")
        if not name:
            errs.append(required(f"{path}[{i}].name"))
        else:
            errs += [invalid_value(f"{path}[{i}].name", name, m) for m in names.is_relaxed_env_var_name(str(name))]
        if isinstance(var.get("valueFrom"), dict):
            errs += _value_from(var, f"{path}[{i}].valueFrom")
    return errs


def _value_from(var: dict[str, Any], path: str) -> list[FieldError]:
    source = var["valueFrom"]
    errs: list[FieldError] = []
    kinds = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef") if source.get(k)]
    for kind in ("configMapKeyRef", "secretKeyRef"):
        if kind in kinds:
            errs += _key_selector(as_dict(source[kind]), f"{path}.{kind}")
    if "fieldRef" in kinds:
        errs += _field_ref(as_dict(source["fieldRef"]), f"{path}.fieldRef")
    if not kinds:
        errs.append(invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                                      "or `secretKeyRef`"))
    elif var.get("value"):
        errs.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif len(kinds) > 1:
        errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _field_ref(ref: dict[str, Any], path: str) -> list[FieldError]:
    """A downward API field of the pod itself, as an env var may read it."""
    for key in ("apiVersion", "fieldPath"):
        if not ref.get(key):
            return [required(f"{path}.{key}")]
    field = str(ref["fieldPath"])
    subscript = re.fullmatch(r"metadata\.(labels|annotations)\['(.*)'\]", field)
    if subscript:
        key = subscript.group(2).lower() if subscript.group(1) == "annotations" else subscript.group(2)
        return [invalid_value(path, key, m) for m in names.is_qualified_name(key)]
    if field not in _CONVERTIBLE_FIELD_PATHS:
        return [invalid_value(f"{path}.fieldPath", field, f"error converting fieldPath: field label not supported: "
                                                          f"{field}")]
    if field not in _ENV_FIELD_PATHS:
        return [not_supported(f"{path}.fieldPath", field, _ENV_FIELD_PATHS)]
    return []


def _key_selector(selector: dict[str, Any], path: str) -> list[FieldError]:
    name = str(selector.get("name") or "")
    errs = [invalid_value(f"{path}.name", name, m) for m in names.name_is_dns_subdomain(name)]
    key = selector.get("key")
    if not key:
        errs.append(required(f"{path}.key"))
    else:
        errs += [invalid_value(f"{path}.key", key, m) for m in names.is_config_map_key(str(key))]
    return errs


def _env_from(sources: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, source in enumerate(sources):
        at = f"{path}[{i}]"
        prefix = source.get("prefix")
        if prefix:
            errs += [invalid_value(f"{at}.prefix", prefix, m) for m in names.is_relaxed_env_var_name(str(prefix))]
        refs = [k for k in ("configMapRef", "secretRef") if isinstance(source.get(k), dict)]
        for ref in refs:
            name = source[ref].get("name")
            if not name:
                errs.append(required(f"{at}.{ref}.name"))
            else:
                errs += [invalid_value(f"{at}.{ref}.name", name, m)
                         for m in names.name_is_dns_subdomain(str(name), True)]
        if not refs:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(refs) > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _volume_mounts(mounts: list[dict[str, Any]], volumes: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    mount_points: set[str] = set()
    for i, mount in enumerate(mounts):
        at = f"{path}[{i}]"
        name, mount_path = mount.get("name") or "", mount.get("mountPath") or ""
        if not name:
            errs.append(required(f"{at}.name"))
        if name not in volumes:
            errs.append(not_found(f"{at}.name", name))
        if not mount_path:
            errs.append(required(f"{at}.mountPath"))
        if mount_path in mount_points:
            errs.append(invalid_value(f"{at}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
        # kube reports bad sub paths without the index: `...volumeMounts.subPath`.
        for key in ("subPath", "subPathExpr"):
            if mount.get(key):
                errs += local_descending_path(str(mount[key]), f"{path}.{key}")
        if mount.get("subPath") and mount.get("subPathExpr"):
            errs.append(invalid_value(f"{at}.subPathExpr", mount["subPathExpr"],
                                      "subPathExpr and subPath are mutually exclusive"))
    return errs


def local_descending_path(target: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if target.startswith("/"):
        errs.append(invalid_value(path, target, "must be a relative path"))
    if ".." in target.replace("\\", "/").split("/"):
        errs.append(invalid_value(path, target, "must not contain '..'"))
    return errs


def _probe(probe: dict[str, Any], kind: str, path: str, grace_period: Any) -> list[FieldError]:
    errs = _handler(probe, path, grace_period, lifecycle=False)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs += nonnegative(f"{path}.{key}", probe.get(key))
    probe_grace = probe.get("terminationGracePeriodSeconds")
    if isinstance(probe_grace, int) and probe_grace <= 0:
        errs.append(invalid(f"{path}.terminationGracePeriodSeconds", probe_grace, "must be greater than 0"))
    if kind in ("livenessProbe", "startupProbe") and probe.get("successThreshold") != 1:
        errs.append(invalid(f"{path}.successThreshold", as_int(probe.get("successThreshold")), "must be 1"))
    if kind == "readinessProbe" and probe_grace is not None:
        errs.append(invalid(f"{path}.terminationGracePeriodSeconds", probe_grace,
                            "must not be set for readinessProbes"))
    return errs


def _handler(handler: dict[str, Any], path: str, grace_period: Any, lifecycle: bool) -> list[FieldError]:
    kinds = ("exec", "httpGet", "tcpSocket", "sleep") if lifecycle else ("exec", "httpGet", "tcpSocket", "grpc")
    errs: list[FieldError] = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if not isinstance(action, dict):
            continue
        if count:
            errs.append(forbidden(f"{path}.{kind}", "may not specify more than 1 handler type"))
            continue
        count += 1
        errs += _action(kind, action, f"{path}.{kind}", grace_period)
    if not count:
        errs.append(required(path, "must specify a handler type"))
    return errs


def _action(kind: str, action: dict[str, Any], path: str, grace_period: Any) -> list[FieldError]:
    if kind == "exec":
        return [] if as_list(action.get("command")) else [required(f"{path}.command")]
    if kind == "httpGet":
        errs = [] if action.get("path") else [required(f"{path}.path")]
        errs += port_num_or_name(action.get("port"), f"{path}.port")
        if action.get("scheme") not in ("HTTP", "HTTPS"):
            errs.append(not_supported(f"{path}.scheme", action.get("scheme") or "", ["HTTP", "HTTPS"]))
        for header in dict_items(action.get("httpHeaders")):
            errs += [invalid_value(f"{path}.httpHeaders", header.get("name", ""), m)
                     for m in names.is_http_header_name(str(header.get("name", "")))]
        return errs
    if kind == "sleep":
        seconds = as_int(action.get("seconds"))
        if isinstance(grace_period, int) and not 0 < seconds <= grace_period:
            return [invalid(path, seconds, f"must be greater than 0 and less than terminationGracePeriodSeconds "
                                           f"({grace_period}). Enable AllowPodLifecycleSleepActionZeroValue "
                                           "feature gate for zero sleep.")]
        return []
    return port_num_or_name(action.get("port"), f"{path}.port")


def port_num_or_name(port: Any, path: str) -> list[FieldError]:
    """An `IntOrString` port: a number in 1..65535 or an IANA service name."""
    if isinstance(port, str):
        return [invalid_value(path, port, m) for m in names.is_valid_port_name(port)]
    number = as_int(port)
    return [invalid(path, number, m) for m in names.is_valid_port_num(number)]


def resource_requirements(resources: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    limits, requests = as_dict(resources.get("limits")), as_dict(resources.get("requests"))
    parsed_limits: dict[str, Any] = {}
    for name, quantity in limits.items():
        errs += _container_resource_name(name, f"{path}.limits[{name}]")
        parsed_limits[name], more = _quantity(name, quantity, f"{path}.limits[{name}]")
        errs += more
    for name, quantity in requests.items():
        errs += _container_resource_name(name, f"{path}.requests[{name}]")
        amount, more = _quantity(name, quantity, f"{path}.requests[{name}]")
        errs += more
        limit = parsed_limits.get(name)
        if amount is None:
            continue
        shown = canonical(quantity)
        if limit is not None and amount != limit and not _overcommittable(name):
            errs.append(invalid_value(f"{path}.requests", shown, f"must be equal to {name} limit of "
                                                                 f"{canonical(limits[name])}"))
        elif limit is not None and amount > limit:
            errs.append(invalid_value(f"{path}.requests", shown, f"must be less than or equal to {name} limit of "
                                                                 f"{canonical(limits[name])}"))
        elif name not in limits and not _overcommittable(name):
            errs.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    keys = set(limits) | set(requests)
    if any(k.startswith("hugepages-") for k in keys) and not keys & {"cpu", "memory"}:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    return errs


def _quantity(name: str, value: Any, path: str) -> tuple[Any, list[FieldError]]:
    try:
        amount = parse_quantity(value)
    except (QuantityError, ValueError, ZeroDivisionError) as exc:
        return None, [invalid_value(path, str(value), str(exc))]
    if amount < 0:
        return amount, [invalid_value(path, canonical(value), "must be greater than or equal to 0")]
    if _is_integer_resource(name) and amount.denominator != 1:
        return amount, [invalid_value(path, GoValue(canonical(value)), "must be an integer")]
    return amount, []


def _native(name: str) -> bool:
    return "/" not in name or name.startswith("kubernetes.io/")


def _overcommittable(name: str) -> bool:
    return _native(name) and not name.startswith("hugepages-")


def _is_integer_resource(name: str) -> bool:
    return not _native(name) or name in ("pods", "services", "secrets", "configmaps", "persistentvolumeclaims")


def _container_resource_name(name: str, path: str) -> list[FieldError]:
    errs = [invalid_value(path, name, m) for m in names.is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not name.startswith("hugepages-"):
            errs.append(invalid_value(path, name, "must be a standard resource type or fully qualified"))
        if name not in _CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.append(invalid_value(path, name, "must be a standard resource for containers"))
    elif not _native(name) and (name.startswith("requests.") or names.is_qualified_name("requests." + name)):
        errs.append(invalid_value(path, name, "doesn't follow extended resource name standard"))
    return errs


def _security_context(context: Any, path: str) -> list[FieldError]:
    if not isinstance(context, dict):
        return []
    errs: list[FieldError] = []
    for key in ("runAsUser", "runAsGroup"):
        value = context.get(key)
        if isinstance(value, int) and not 0 <= value <= _MAX_INT32:
            errs.append(invalid(f"{path}.{key}", value, names.inclusive_range_error(0, _MAX_INT32)))
    if context.get("allowPrivilegeEscalation") is False and context.get("privileged") is True:
        errs.append(invalid_value(path, GoValue("core.SecurityContext{...}"),
                                  "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
    return errs

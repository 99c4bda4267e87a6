"""The remaining core/v1 kinds: Secret, ConfigMap, Namespace, Node, LimitRange, ResourceQuota,
ReplicationController, PodTemplate.

Secrets and ConfigMaps are limited to 1 MiB of data because they travel whole through etcd and every
kubelet's watch; their keys become file names in volumes, hence the file-name-like key rule. A Secret's
`type` decides which keys it must carry. Objects marked `immutable: true` may never change their data again.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, forbidden, not_supported, required
from minikube_py.api.validation.messages import (
    GoValue,
    as_dict,
    as_list,
    dict_items,
    duplicate_go,
    go_quote,
    go_string_map,
    go_string_slice,
    go_struct,
    immutable,
    invalid_go,
    invalid_value,
    nonnegative,
    too_long,
)
from minikube_py.api.validation.meta import selector_matches, validate_label_name
from minikube_py.api.validation.pod import pod_template
from minikube_py.api.validation.quantity import QuantityError, canonical, parse_quantity
from minikube_py.api.validation.scheduling import TAINT_EFFECTS

MAX_SECRET_SIZE = 1024 * 1024
_REDACTED = "<secret contents redacted>"
_QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity")
_QUOTA_RESOURCES = frozenset((
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports", "services.loadbalancers",
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage"))


def _decoded_size(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value))


def _decoded(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        return b""


def secret(obj: dict[str, Any]) -> list[FieldError]:
    data = as_dict(obj.get("data"))
    errs = [invalid_value(f"data[{k}]", k, m) for k in data for m in names.is_config_map_key(k)]
    if sum(_decoded_size(v) for v in data.values()) > MAX_SECRET_SIZE:
        errs.append(too_long("data", MAX_SECRET_SIZE))
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        if not as_dict(as_dict(obj.get("metadata")).get("annotations")).get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errs.append(required(f"data[{key}]"))
        elif not _json_object(_decoded(data[key])):
            errs.append(invalid_value(f"data[{key}]", _REDACTED, "unexpected end of JSON input"))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [required("data[username]"), required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        errs += [required(f"data[{key}]") for key in ("tls.crt", "tls.key") if key not in data]
    return errs


def _json_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def _immutable_data(new: dict[str, Any], old: dict[str, Any], keys: tuple[str, ...]) -> list[FieldError]:
    if old.get("immutable") is not True:
        return []
    errs = [] if new.get("immutable") is True else [forbidden("immutable", "field is immutable when `immutable` "
                                                                           "is set")]
    return errs + [forbidden(key, "field is immutable when `immutable` is set") for key in keys
                   if as_dict(new.get(key)) != as_dict(old.get(key))]


def secret_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = immutable("type", new.get("type"), old.get("type"))
    return errs + _immutable_data(new, old, ("data",)) + secret(new)


def config_map(obj: dict[str, Any]) -> list[FieldError]:
    data, binary = as_dict(obj.get("data")), as_dict(obj.get("binaryData"))
    errs: list[FieldError] = []
    for key in data:
        errs += [invalid_value(f"data[{key}]", key, m) for m in names.is_config_map_key(key)]
        if key in binary:
            errs.append(invalid_value(f"data[{key}]", key, "duplicate of key present in binaryData"))
    errs += [invalid_value(f"binaryData[{k}]", k, m) for k in binary for m in names.is_config_map_key(k)]
    size = sum(len(str(v).encode()) for v in data.values()) + sum(_decoded_size(v) for v in binary.values())
    if size > MAX_SECRET_SIZE:
        errs.append(too_long("", MAX_SECRET_SIZE))
    return errs


def config_map_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return _immutable_data(new, old, ("data", "binaryData")) + config_map(new)


def namespace(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    # kube reports namespace finalizer problems without an index.
    for finalizer in as_list(as_dict(obj.get("spec")).get("finalizers")):
        text = str(finalizer)
        errs += [invalid_value("spec.finalizers", text, m) for m in names.is_qualified_name(text)]
        if "/" not in text and text not in ("kubernetes", "orphan", "foregroundDeletion"):
            errs.append(invalid_value("spec.finalizers", text, "name is neither a standard finalizer name nor is it "
                                                               "fully qualified"))
    return errs


def _taints(taints: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[Any, Any]] = set()
    for i, taint in enumerate(taints):
        at = f"{path}[{i}]"
        key, value, effect = str(taint.get("key") or ""), str(taint.get("value") or ""), taint.get("effect") or ""
        errs += validate_label_name(key, f"{at}.key")
        problems = names.is_valid_label_value(value)
        if problems:
            errs.append(invalid_value(f"{at}.value", value, ";".join(problems)))
        if not effect:
            errs.append(required(f"{at}.effect"))
        elif effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{at}.effect", effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            rendered = go_struct("core.Taint", {"Key": key, "Value": value, "Effect": effect,
                                                "TimeAdded": GoValue("(*v1.Time)(nil)")})
            error = duplicate_go(at, rendered)
            errs.append(FieldError(error.type, error.field, f"{error.message}: taints must be unique by key and "
                                                            "effect pair"))
            continue
        seen.add((key, effect))
    return errs


def node(obj: dict[str, Any]) -> list[FieldError]:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    # kube validates node taints under `metadata.taints`.
    errs = _taints(dict_items(spec.get("taints")), "metadata.taints")
    for kind in ("capacity", "allocatable"):
        for name, quantity in as_dict(status.get(kind)).items():
            errs += _quantity_value(name, quantity, f"status.{kind}.{name}")
    cidrs = [str(c) for c in as_list(spec.get("podCIDRs"))]
    for i, cidr in enumerate(cidrs):
        errs += [invalid_value(f"spec.podCIDRs[{i}]", cidr, m) for m in names.is_valid_cidr(cidr)]
    return errs


def node_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = node(new)
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    old_cidrs = as_list(old_spec.get("podCIDRs"))
    if old_cidrs and old_cidrs != as_list(new_spec.get("podCIDRs")):
        errs.append(forbidden("spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'))
    if old_spec.get("providerID") and old_spec["providerID"] != new_spec.get("providerID"):
        errs.append(forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid'))
    if new_spec.get("externalID") != old_spec.get("externalID"):
        errs.append(forbidden("spec.externalID", "may not be updated"))
    seen: list[Any] = []
    for i, address in enumerate(dict_items(as_dict(new.get("status")).get("addresses"))):
        if address in seen:
            rendered = go_struct("core.NodeAddress", {"Type": address.get("type", ""),
                                                      "Address": address.get("address", "")})
            errs.append(duplicate_go(f"status.addresses[{i}]", rendered))
        seen.append(address)
    return errs


def _quantity_value(name: str, value: Any, path: str) -> list[FieldError]:
    try:
        amount = parse_quantity(value)
    except QuantityError as exc:
        return [invalid_value(path, str(value), str(exc))]
    if amount < 0:
        return [invalid_value(path, canonical(value), "must be greater than or equal to 0")]
    integer = name in ("pods", "services", "secrets", "configmaps", "persistentvolumeclaims",
                       "replicationcontrollers", "resourcequotas", "services.nodeports", "services.loadbalancers")
    if (integer or name.startswith("count/")) and amount.denominator != 1:
        return [invalid_value(path, GoValue(canonical(value)), "must be an integer")]
    return []


def resource_quota(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs: list[FieldError] = []
    for name, quantity in as_dict(spec.get("hard")).items():
        at = f"spec.hard[{name}]"
        problems = names.is_qualified_name(name)
        errs += [invalid_value(at, name, m) for m in problems]
        if not problems and "/" not in name and name not in _QUOTA_RESOURCES and not name.startswith(
                ("hugepages-", "requests.hugepages-")):
            errs.append(invalid_value(at, name, "must be a standard resource for quota"))
        errs += _quantity_value(name, quantity, at)
    scopes = as_list(spec.get("scopes"))
    shown = go_string_slice(spec.get("scopes"), "[]core.ResourceQuotaScope")
    errs += [invalid_go("spec.scopes", shown, "unsupported scope") for s in scopes if s not in _QUOTA_SCOPES]
    for pair in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
        if set(pair) <= set(scopes):
            errs.append(invalid_go("spec.scopes", shown, "conflicting scopes"))
    return errs


def resource_quota_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = resource_quota(new)
    new_scopes, old_scopes = as_list(as_dict(new.get("spec")).get("scopes")), as_list(
        as_dict(old.get("spec")).get("scopes"))
    if set(new_scopes) != set(old_scopes):
        errs.append(invalid_go("spec.scopes", go_string_slice(as_dict(new.get("spec")).get("scopes"),
                                                              "[]core.ResourceQuotaScope"), "field is immutable"))
    return errs


def limit_range(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[Any] = set()
    for i, item in enumerate(dict_items(as_dict(obj.get("spec")).get("limits"))):
        at = f"spec.limits[{i}]"
        kind = str(item.get("type") or "")
        problems = names.is_qualified_name(kind)
        errs += [invalid_value(f"{at}.type", kind, m) for m in problems]
        if not problems and "/" not in kind and kind not in ("Pod", "Container", "PersistentVolumeClaim"):
            errs.append(invalid_value(f"{at}.type", kind, "must be a standard limit type or fully qualified"))
        if kind in seen:
            errs.append(FieldError("FieldValueDuplicate", f"{at}.type", f"Duplicate value: {go_quote(kind)}"))
        seen.add(kind)
        errs += _limit_bounds(item, kind, at)
    return errs


def _limit_bounds(item: dict[str, Any], kind: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if kind == "Pod":
        errs += [forbidden(f"{path}.{key}", "may not be specified when `type` is 'Pod'")
                 for key in ("default", "defaultRequest") if as_dict(item.get(key))]
    if kind == "PersistentVolumeClaim" and "storage" not in as_dict(item.get("min")) and "storage" not in as_dict(
            item.get("max")):
        errs.append(required(f"{path}.limits", "either minimum or maximum storage value is required, but neither "
                                               "was provided"))
    bounds = {key: _parsed(as_dict(item.get(key))) for key in ("min", "max", "default", "defaultRequest")}
    # (smaller, larger, field reported, bound whose value kube shows, message), in kube's order.
    checks = (("min", "max", "min", "min", "min value {a} is greater than max value {b}"),
              ("min", "defaultRequest", "defaultRequest", "defaultRequest",
               "min value {a} is greater than default request value {b}"),
              ("defaultRequest", "max", "defaultRequest", "defaultRequest",
               "default request value {a} is greater than max value {b}"),
              ("defaultRequest", "default", "defaultRequest", "defaultRequest",
               "default request value {a} is greater than default limit value {b}"),
              ("min", "default", "default", "min", "min value {a} is greater than default value {b}"),
              ("default", "max", "default", "max", "default value {a} is greater than max value {b}"))
    for low, high, where, shown, message in checks:
        for name, (amount, text) in bounds[low].items():
            if name in bounds[high] and amount > bounds[high][name][0]:
                errs.append(invalid_go(f"{path}.{where}[{name}]", bounds[shown][name][1],
                                       message.format(a=text, b=bounds[high][name][1])))
    for name, value in as_dict(item.get("maxLimitRequestRatio")).items():
        ratio = _parsed({name: value}).get(name)
        if ratio is not None and ratio[0] < 1:
            errs.append(invalid_go(f"{path}.maxLimitRequestRatio[{name}]", ratio[1], f"ratio {ratio[1]} is less "
                                                                                     "than 1"))
    return errs


def _parsed(quantities: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    parsed = {}
    for name, value in quantities.items():
        try:
            parsed[name] = (parse_quantity(value), canonical(value))
        except QuantityError:
            continue
    return parsed


def replication_controller(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs = nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = as_dict(spec.get("selector"))
    if not selector:
        errs.append(required("spec.selector"))
    errs += nonnegative("spec.replicas", spec.get("replicas"))
    template = spec.get("template")
    if not isinstance(template, dict):
        return errs + [required("spec.template")]
    labels = as_dict(template.get("metadata")).get("labels")
    if selector and not selector_matches({"matchLabels": selector}, labels):
        errs.append(invalid_go("spec.template.metadata.labels", go_string_map(labels),
                               "`selector` does not match template `labels`"))
    errs += pod_template(template, "spec.template")
    template_spec = as_dict(template.get("spec"))
    if template_spec.get("restartPolicy") != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", template_spec.get("restartPolicy") or "",
                                  ["Always"]))
    if template_spec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden("spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in "
                                                                          "ReplicationController is not Supported"))
    return errs


def pod_template_object(obj: dict[str, Any]) -> list[FieldError]:
    return pod_template(as_dict(obj.get("template")), "template")



def binding(obj: dict[str, Any]) -> list[FieldError]:
    """A Binding (what the scheduler posts to `pods/<name>/binding`) targets a Node by name."""
    target = as_dict(obj.get("target"))
    errs: list[FieldError] = []
    if target.get("kind") and target["kind"] != "Node":
        errs.append(not_supported("target.kind", target["kind"], ["Node", "<empty>"]))
    if not target.get("name"):
        errs.append(required("target.name"))
    return errs

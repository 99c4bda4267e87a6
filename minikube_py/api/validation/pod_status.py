"""What a write to `pods/<name>/status` may change: kube's `ValidatePodStatusUpdate`.

A status write cannot change a Pod's spec: the registry copies the live object's spec into the new object
before validating it, as kube's status strategy does (`newPod.Spec = oldPod.Spec`). So, unlike `pod_update`,
this rule neither validates the spec nor compares it with the old one: that work would be wasted on the
kubelet's status patches, the most frequent write in a cluster, and a Pod stored with a spec that today's rules
reject can still report its status. What kube checks instead (metadata is checked by the caller with
`validate_object_meta_update`, as on every update):

* the annotations every Pod update must leave alone (`pod_annotation_updates`);
* custom pod condition types are qualified names (kube reports them under `metadata.conditions`, sic);
* a changed, non-empty `status.nominatedNodeName` is a valid node name;
* a container that has terminated for good stays terminated: unless the Pod's `restartPolicy` is `Always`, a
  terminated container may not go back to waiting or running, except one that failed under `OnFailure` and a
  sidecar (an init container with `restartPolicy: Always`). Ephemeral containers are never restarted. Indexes
  in the errors are those of the old statuses;
* `status.podIPs` and `status.hostIPs` hold valid IP addresses, at most one of each IP family and no
  duplicates, and `hostIPs[0]` is `hostIP`.

`podIPs` is read the way kube's v1 conversion reads it: a set `podIP` wins over a `podIPs` list that does not
start with it. So a bad `podIP` is reported as `status.podIPs[0]`, and a `podIP` that differs from `podIPs[0]`
is not an error.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, forbidden
from minikube_py.api.validation.messages import (
    as_dict,
    as_int,
    as_list,
    dict_items,
    duplicate_go,
    go_struct,
    invalid_go,
    invalid_value,
)
from minikube_py.api.validation.pod import pod_annotation_updates

_SYSTEM_CONDITIONS = ("PodScheduled", "Ready", "Initialized")
_STAYS_TERMINATED = "may not be transitioned to non-terminated state"


def pod_status_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Everything wrong with a status write that turns `old` into `new` (whose spec is `old`'s)."""
    status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
    old_spec = as_dict(old.get("spec"))
    policy = old_spec.get("restartPolicy")
    sidecars = frozenset(c.get("name") for c in dict_items(old_spec.get("initContainers"))
                         if c.get("restartPolicy") == "Always")
    errs = pod_annotation_updates(new, old)
    errs += _custom_conditions(status.get("conditions"))
    errs += _nominated_node_name(status, old_status)
    errs += _stays_terminated(status, old_status, "containerStatuses", policy)
    errs += _stays_terminated(status, old_status, "initContainerStatuses", policy, sidecars)
    errs += _stays_terminated(status, old_status, "ephemeralContainerStatuses", "Never")
    return errs + _pod_ips(status) + _host_ips(status)


def _custom_conditions(conditions: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, condition in enumerate(as_list(conditions)):
        kind = str(as_dict(condition).get("type") or "")
        if kind not in _SYSTEM_CONDITIONS:
            errs += [invalid_value(f"metadata.conditions[{i}].Type", kind, m) for m in names.is_qualified_name(kind)]
    return errs


def _nominated_node_name(status: dict[str, Any], old_status: dict[str, Any]) -> list[FieldError]:
    node = status.get("nominatedNodeName")
    if not node or node == old_status.get("nominatedNodeName"):
        return []
    return [invalid_value("status.nominatedNodeName", node, m) for m in names.is_dns1123_subdomain(str(node))]


def _stays_terminated(status: dict[str, Any], old_status: dict[str, Any], key: str, policy: Any,
                      restartable: frozenset[Any] = frozenset()) -> list[FieldError]:
    """kube's container state transition rule for one list of container statuses."""
    if policy == "Always":
        return []
    not_terminated = [s.get("name") for s in dict_items(status.get(key)) if _terminated(s) is None]
    errs: list[FieldError] = []
    for i, previous in enumerate(as_list(old_status.get(key))):
        terminated = _terminated(previous)
        if terminated is None or previous.get("name") in restartable:
            continue
        if policy == "OnFailure" and as_int(terminated.get("exitCode")) != 0:
            continue
        errs += [forbidden(f"status.{key}[{i}].state", _STAYS_TERMINATED)
                 for name in not_terminated if name == previous.get("name")]
    return errs


def _terminated(container_status: Any) -> dict[str, Any] | None:
    terminated = as_dict(as_dict(container_status).get("state")).get("terminated")
    return terminated if isinstance(terminated, dict) else None


def _pod_ips(status: dict[str, Any]) -> list[FieldError]:
    ips = [str(entry.get("ip") or "") for entry in dict_items(status.get("podIPs"))]
    pod_ip = status.get("podIP")
    if pod_ip and (not ips or ips[0] != pod_ip):  # v1 conversion: podIP is authoritative
        ips = [str(pod_ip)]
    errs = _valid_ips(ips, "status.podIPs")
    if len(ips) > 1:
        errs += _one_per_family(ips, "status.podIPs", "core.PodIP")
        errs += _no_duplicates(ips, "status.podIPs", "core.PodIP")
    return errs


def _host_ips(status: dict[str, Any]) -> list[FieldError]:
    ips = [str(entry.get("ip") or "") for entry in dict_items(status.get("hostIPs"))]
    if not ips:
        return []
    errs: list[FieldError] = []
    if (status.get("hostIP") or "") != ips[0]:
        errs.append(invalid_value("status.hostIPs[0].ip", ips[0], "must be equal to `hostIP`"))
    errs += _valid_ips(ips, "status.hostIPs")
    if len(ips) > 1:
        errs += _no_duplicates(ips, "status.hostIPs", "core.HostIP")
        errs += _one_per_family(ips, "status.hostIPs", "core.HostIP")
    return errs


def _valid_ips(ips: list[str], path: str) -> list[FieldError]:
    return [invalid_value(f"{path}[{i}]", ip, m) for i, ip in enumerate(ips) for m in names.is_valid_ip(ip)]


def _one_per_family(ips: list[str], path: str, type_name: str) -> list[FieldError]:
    """A list of two or more IPs is dual-stack: exactly one IPv4 and one IPv6 address."""
    parsed = [names.parse_ip(ip) for ip in ips]
    errs: list[FieldError] = []
    unparsed = [i for i, ip in enumerate(parsed) if ip is None]
    if unparsed:  # kube's dual-stack check fails on the first address it cannot parse
        first = unparsed[0]
        errs.append(FieldError("InternalError", path, "Internal error: failed to check for dual stack with "
                                                      f"error:invalid IP[{first}]: {ips[first]}"))
    if unparsed or len(ips) > 2 or {ip.version for ip in parsed if ip} != {4, 6}:
        shown = ", ".join(go_struct(type_name, {"IP": ip}) for ip in ips)
        errs.append(invalid_go(path, f"[]{type_name}{{{shown}}}", "may specify no more than one IP for each IP "
                                                                  "family"))
    return errs


def _no_duplicates(ips: list[str], path: str, type_name: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, ip in enumerate(ips):
        if ip in seen:
            errs.append(duplicate_go(f"{path}[{i}]", go_struct(type_name, {"IP": ip})))
        seen.add(ip)
    return errs

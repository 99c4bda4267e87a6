"""What the Endpoints and the EndpointSlice controllers share (kube's `endpointslice/util` package).

Both controllers turn "a Service with a selector" plus "the pods it selects" into addresses a proxy can send
traffic to; they only differ in the object they write. What they agree on lives here:

* which pods a Service selects (`selects`: a nil or empty `spec.selector` selects nothing; such Services get
  their endpoints from someone else), and the reverse, which Services a pod change concerns
  (`services_for_pod`, `services_to_update`: both the Services matching the old labels and the new ones),
  which `ServicePodHandler`, the pod informer's handler in both controllers, enqueues;
* a pod's state as an endpoint: ready (`podcontrol.is_ready`), terminating (a deletionTimestamp),
  `should_pod_be_in_endpoints` (not finished, has an IP), `pod_ips`, and `should_set_hostname`
  (`spec.hostname` is published only when the pod's `spec.subdomain` names this Service);
* `find_port`: a Service port's `targetPort` resolved for one pod; a name is looked up among the pod's
  container ports with the same protocol, and a pod without that name has no endpoint for that port;
* `TriggerTimeTracker`: the `endpoints.kubernetes.io/last-change-trigger-time` annotation, the earliest
  moment of the changes (pod became ready/unready, Service created) a write publishes, so the latency from
  a pod becoming ready to the proxies seeing it can be measured;
* `go_hash`: kube orders Endpoints subsets and ports by the MD5 of the Go debug dump (go-spew's `%#v`) of
  the API structs. `go_dump` renders our JSON dicts exactly the way go-spew renders the Go values (field
  names, `(type)` prefixes, `<nil>` for absent pointers and slices), so the order matches a real cluster.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api.timestamps import parse_time, time_string
from minikube_py.client.listers import Lister
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.controllers.podcontrol import is_ready

TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS_LABEL = "service.kubernetes.io/headless"
ZONE_LABEL = "topology.kubernetes.io/zone"


# Services and the pods they select -----------------------------------------------------------------------

def selects(service: dict[str, Any], pod: dict[str, Any]) -> bool:
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return False
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(key) == value for key, value in selector.items())


def services_for_pod(services: Lister, pod: dict[str, Any]) -> set[str]:
    """The keys of the Services in the pod's namespace whose selector matches it."""
    return {meta_namespace_key(service) for service in services.list(pod["metadata"]["namespace"])
            if selects(service, pod)}


def services_to_update(services: Lister, old: dict[str, Any], new: dict[str, Any]) -> set[str]:
    """The Services a pod update may change the endpoints of (none for a resync or an irrelevant change)."""
    if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
        return set()
    endpoint_changed = (old["metadata"].get("deletionTimestamp") != new["metadata"].get("deletionTimestamp")
                        or is_ready(old) != is_ready(new) or pod_ips(old) != pod_ips(new))
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    labels_changed = (old["metadata"].get("labels") != new["metadata"].get("labels")
                      or old_spec.get("hostname") != new_spec.get("hostname")
                      or old_spec.get("subdomain") != new_spec.get("subdomain"))
    if not endpoint_changed and not labels_changed:
        return set()
    current = services_for_pod(services, new)
    if not labels_changed:
        return current
    previous = services_for_pod(services, old)
    # Only membership changed: just the Services the pod joined or left need a sync.
    return current | previous if endpoint_changed else current ^ previous


class ServicePodHandler:
    """The pod event handler of both controllers: a pod added, changed or deleted enqueues the key of every
    Service whose endpoints it may change."""

    def __init__(self, services: Lister, queue: RateLimitingQueue) -> None:
        self.services = services
        self.queue = queue

    def on_add(self, pod: dict[str, Any], *_: Any) -> None:
        for key in services_for_pod(self.services, pod):
            self.queue.add(key)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for key in services_to_update(self.services, old, new):
            self.queue.add(key)

    def on_delete(self, pod: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        self.on_add(pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod)


def headless(service: dict[str, Any]) -> bool:
    """No cluster IP (`None` or empty): the Service's endpoints are labelled `service.kubernetes.io/headless`."""
    return (service.get("spec") or {}).get("clusterIP") in (None, "", "None")


# a pod as an endpoint ------------------------------------------------------------------------------------

def terminating(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def pod_ips(pod: dict[str, Any]) -> list[str]:
    status = pod.get("status") or {}
    ips = [entry.get("ip", "") for entry in status.get("podIPs") or []]
    return ips or ([status["podIP"]] if status.get("podIP") else [])


def is_ipv6(ip: str) -> bool:
    """As Go's `net.ParseIP(ip).To4() == nil`: an IPv4-mapped IPv6 address counts as IPv4."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None


def should_pod_be_in_endpoints(pod: dict[str, Any], include_terminating: bool) -> bool:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    if not pod_ips(pod):
        return False
    return include_terminating or not terminating(pod)


def should_set_hostname(pod: dict[str, Any], service: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    return (bool(spec.get("hostname")) and spec.get("subdomain") == service["metadata"]["name"]
            and pod["metadata"].get("namespace") == service["metadata"].get("namespace"))


def find_port(pod: dict[str, Any], service_port: dict[str, Any]) -> int | None:
    """The pod's port for `service_port.targetPort`: a number as is, a name from the pod's containers."""
    target = service_port.get("targetPort", service_port.get("port"))
    if not isinstance(target, str):
        return int(target) if target is not None else None
    protocol = service_port.get("protocol") or "TCP"
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def target_ref(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta["name"], "uid": meta.get("uid", "")}


# last-change-trigger-time --------------------------------------------------------------------------------

@dataclass
class _ServiceState:
    service_time: str
    pod_times: dict[str, str] = field(default_factory=dict)


class TriggerTimeTracker:
    """Remembers, per Service, the trigger times it has already published.

    `compute(service, pods)` is called on every sync (even one that writes nothing, so the state stays
    current) and answers the earliest trigger time not yet published: a pod's Ready condition that moved
    since the last sync, or the Service's creation; for a Service seen for the first time, its creation
    time. None means nothing new, and the annotation is removed.
    """

    def __init__(self) -> None:
        self._states: dict[str, _ServiceState] = {}

    def compute(self, service: dict[str, Any], pods: Iterable[dict[str, Any]]) -> str | None:
        key = meta_namespace_key(service)
        created = service["metadata"].get("creationTimestamp") or ""
        state = self._states.get(key)
        pod_times = {pod["metadata"]["name"]: when for pod in pods if (when := _ready_transition(pod))}
        self._states[key] = _ServiceState(created, pod_times)
        if state is None:
            return _canonical(created) if created else None
        changed = [when for name, when in pod_times.items() if _after(when, state.pod_times.get(name))]
        if _after(created, state.service_time):
            changed.append(created)
        return _canonical(min(changed, key=_instant)) if changed else None

    def delete(self, service_key: str) -> None:
        self._states.pop(service_key, None)


def _ready_transition(pod: dict[str, Any]) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("lastTransitionTime") or "")
    return ""


def _instant(stamp: str) -> float:
    return parse_time(stamp).timestamp()


def _after(stamp: str, previous: str | None) -> bool:
    return bool(stamp) and (not previous or _instant(stamp) > _instant(previous))


def _canonical(stamp: str) -> str:
    return time_string(parse_time(stamp))


# kube's ordering hash ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ptr:
    elem: GoType


@dataclass(frozen=True)
class Slice:
    elem: GoType


@dataclass(frozen=True)
class Struct:
    name: str  # as Go's reflect prints it: "v1.EndpointPort"
    fields: tuple[tuple[str, str, GoType], ...]  # (Go field name, JSON key, type) in declaration order


GoType = str | Ptr | Slice | Struct  # a str is a scalar type's name: "string", "int32", "v1.Protocol"

OBJECT_REFERENCE = Struct("v1.ObjectReference", (
    ("Kind", "kind", "string"), ("Namespace", "namespace", "string"), ("Name", "name", "string"),
    ("UID", "uid", "types.UID"), ("APIVersion", "apiVersion", "string"),
    ("ResourceVersion", "resourceVersion", "string"), ("FieldPath", "fieldPath", "string")))
ENDPOINT_ADDRESS = Struct("v1.EndpointAddress", (
    ("IP", "ip", "string"), ("Hostname", "hostname", "string"), ("NodeName", "nodeName", Ptr("string")),
    ("TargetRef", "targetRef", Ptr(OBJECT_REFERENCE))))
ENDPOINT_PORT = Struct("v1.EndpointPort", (
    ("Name", "name", "string"), ("Port", "port", "int32"), ("Protocol", "protocol", "v1.Protocol"),
    ("AppProtocol", "appProtocol", Ptr("string"))))
ENDPOINT_SUBSET = Struct("v1.EndpointSubset", (
    ("Addresses", "addresses", Slice(ENDPOINT_ADDRESS)),
    ("NotReadyAddresses", "notReadyAddresses", Slice(ENDPOINT_ADDRESS)), ("Ports", "ports", Slice(ENDPOINT_PORT))))
SLICE_PORT = Struct("v1.EndpointPort", (  # discovery/v1's EndpointPort: every field a pointer
    ("Name", "name", Ptr("string")), ("Protocol", "protocol", Ptr("v1.Protocol")), ("Port", "port", Ptr("int32")),
    ("AppProtocol", "appProtocol", Ptr("string"))))


def go_hash(value: Any, go_type: GoType) -> str:
    """MD5 (hex) of `value` dumped as kube's DeepHashObject dumps the Go value."""
    return hashlib.md5(go_dump(value, go_type).encode()).hexdigest()


def go_dump(value: Any, go_type: GoType, typed: bool = True) -> str:
    """go-spew's `%#v`: struct fields and top-level values carry `(type)`; slice elements and pointees don't."""
    if isinstance(go_type, Ptr):
        if value is None:
            return f"({type_name(go_type)})<nil>" if typed else "<nil>"
        return (f"({type_name(go_type)})" if typed else "<*>") + go_dump(value, go_type.elem, typed=False)
    prefix = f"({type_name(go_type)})" if typed else ""
    if isinstance(go_type, Slice):
        if value is None:
            return prefix + "<nil>"
        return prefix + "[" + " ".join(go_dump(item, go_type.elem, typed=False) for item in value) + "]"
    if isinstance(go_type, Struct):
        value = value or {}
        return prefix + "{" + " ".join(f"{name}:{go_dump(value.get(key), kind)}"
                                       for name, key, kind in go_type.fields) + "}"
    return prefix + _scalar(value, go_type)


def type_name(go_type: GoType) -> str:
    if isinstance(go_type, Ptr):
        return "*" + type_name(go_type.elem)
    if isinstance(go_type, Slice):
        return "[]" + type_name(go_type.elem)
    return go_type.name if isinstance(go_type, Struct) else go_type


def _scalar(value: Any, go_type: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "0" if go_type.startswith("int") else ""
    return str(value)


def port_map_key(ports: Iterable[Mapping[str, Any]]) -> str:
    """A key equal for equal sets of EndpointSlice ports (kube's `PortMapKey`)."""
    return go_dump(sorted(ports, key=lambda port: go_hash(port, SLICE_PORT)), Slice(SLICE_PORT))

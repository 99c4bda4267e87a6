"""What the EndpointSlice controller should write for one Service: a plan of slices to create, update, delete.

`reconcile(service, pods, existing, nodes, max_endpoints)` is pure (no I/O): it compares the endpoints the
selected pods should have with the slices that exist (those labelled with the Service's name and managed by
this controller) and returns a `Plan`. Kube's reconciler works the same way, and the steps are its:

1. Slices of an address type the Service no longer has (its `spec.ipFamilies`) are deleted; each remaining
   address type (IPv4, IPv6) is reconciled on its own.
2. Desired endpoints: every selected pod that is not finished and has an IP gives one endpoint with its IPs
   of that family, `conditions` (`serving`: the pod is Ready; `terminating`: it is being deleted; `ready`:
   serving and not terminating, or always with `publishNotReadyAddresses`), `targetRef`, `nodeName`, the
   node's `topology.kubernetes.io/zone` as `zone`, and `hostname` when the pod's subdomain is the Service.
   A pod whose node is unknown is skipped (and reported, so the Service is retried) unless not-ready
   addresses are published anyway. Pods are grouped by their resolved ports (a named `targetPort` can
   resolve to different numbers on different pods): each distinct port mapping gets its own slices.
3. Per port mapping, with as little churn as possible: endpoints are identified by their addresses, hostname
   and pod (`endpoint_hash`), so a pod that only changed readiness or zone is updated in place. Existing
   slices keep the endpoints still wanted (updated if any changed or went away, deleted if none is left,
   relabelled if the Service's labels changed); new endpoints first fill the slices already being updated
   (fullest first), then the one unchanged slice they fit best, and only then go to new slices, at most
   `max_endpoints` each.
4. A Service with nothing to publish still gets one empty placeholder slice (no ports, no endpoints), kept
   as it is rather than deleted and recreated.
5. A create paired with a delete becomes an update of the slice that was to be deleted (`_reuse_deleted`),
   so a slice's name survives e.g. a port change.

New slices: generateName `<service>-`, owned by the Service (controllerRef), labelled with the Service's labels
plus `kubernetes.io/service-name`, `endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io` and, for a Service without a cluster IP, `service.kubernetes.io/headless`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from minikube_py.kcm.controllers import endpointutil as util
from minikube_py.kcm.controllers.podcontrol import controller_ref, is_ready

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
RESERVED_LABELS = (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, util.HEADLESS_LABEL)

Slice = dict[str, Any]
Endpoint = dict[str, Any]
EndpointKey = tuple[tuple[str, ...], str, str, str]


@dataclass
class Plan:
    create: list[Slice] = field(default_factory=list)
    update: list[Slice] = field(default_factory=list)
    delete: list[Slice] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # pods skipped for now: the Service must be retried


def reconcile(service: dict[str, Any], pods: list[dict[str, Any]], existing: list[Slice],
              nodes: Mapping[str, dict[str, Any]], max_endpoints: int) -> Plan:
    plan = Plan()
    address_types = service_address_types(service)
    for address_type in address_types:
        of_type = [s for s in existing if s.get("addressType") == address_type]
        create, update, delete = _reconcile_address_type(plan, service, pods, of_type, address_type, nodes,
                                                         max_endpoints)
        plan.create += create
        plan.update += update
        plan.delete += delete
    plan.delete += [s for s in existing if s.get("addressType") not in address_types]
    return plan


def service_address_types(service: dict[str, Any]) -> list[str]:
    spec = service.get("spec") or {}
    families = [f for f in spec.get("ipFamilies") or [] if f in ("IPv4", "IPv6")]
    if families:
        return families
    if not util.headless(service):
        return ["IPv6" if util.is_ipv6(spec["clusterIP"]) else "IPv4"]
    return ["IPv4", "IPv6"]  # a headless Service from before IP families were defaulted


def _reconcile_address_type(plan: Plan, service: dict[str, Any], pods: list[dict[str, Any]], existing: list[Slice],
                            address_type: str, nodes: Mapping[str, dict[str, Any]],
                            max_endpoints: int) -> tuple[list[Slice], list[Slice], list[Slice]]:
    delete: list[Slice] = [s for s in existing if not owned_by(s, service)]
    existing_by_ports: dict[str, list[Slice]] = {}
    for s in existing:
        if owned_by(s, service):
            existing_by_ports.setdefault(util.port_map_key(s.get("ports") or []), []).append(s)
    desired, desired_ports = _desired_endpoints(plan, service, pods, address_type, nodes)
    create: list[Slice] = []
    update: list[Slice] = []
    for key, wanted in desired.items():
        c, u, d = _reconcile_port_mapping(service, existing_by_ports.get(key, []), wanted,
                                          desired_ports[key], address_type, max_endpoints)
        create, update, delete = create + c, update + u, delete + d
    for key, slices in existing_by_ports.items():
        if key not in desired:
            delete += slices
    if len(existing) == len(delete) and not create:
        placeholder = new_slice(service, [], address_type)
        if len(delete) == 1 and _same_placeholder(delete[0], placeholder):
            delete = []  # the placeholder we would recreate is already there
        else:
            create.append(placeholder)
    return _reuse_deleted(service, create, update, delete)


def _desired_endpoints(plan: Plan, service: dict[str, Any], pods: list[dict[str, Any]], address_type: str,
                       nodes: Mapping[str, dict[str, Any]]
                       ) -> tuple[dict[str, dict[EndpointKey, Endpoint]], dict[str, list[dict[str, Any]]]]:
    """The endpoints the pods should have, by port mapping, and the ports of each mapping."""
    desired: dict[str, dict[EndpointKey, Endpoint]] = {}
    desired_ports: dict[str, list[dict[str, Any]]] = {}
    publish_all = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    for pod in pods:
        if not util.should_pod_be_in_endpoints(pod, include_terminating=True):
            continue
        ports = endpoint_ports(service, pod)
        key = util.port_map_key(ports)
        wanted = desired.setdefault(key, {})
        desired_ports.setdefault(key, ports)
        node_name = (pod.get("spec") or {}).get("nodeName", "")
        node = nodes.get(node_name)
        if node is None and not publish_all:
            plan.errors.append(f"skipping Pod {pod['metadata']['name']} for Service "
                               f"{service['metadata']['namespace']}/{service['metadata']['name']}: "
                               f"Node {node_name} Not Found")
            continue
        endpoint = pod_to_endpoint(pod, node, service, address_type)
        if endpoint["addresses"]:
            wanted[endpoint_hash(endpoint)] = endpoint
    return desired, desired_ports


def _reconcile_port_mapping(service: dict[str, Any], existing: list[Slice], wanted: dict[EndpointKey, Endpoint],
                            ports: list[dict[str, Any]], address_type: str,
                            max_endpoints: int) -> tuple[list[Slice], list[Slice], list[Slice]]:
    by_name, unchanged, to_update, to_delete = _keep_wanted(service, existing, wanted)
    remaining = list(wanted.values())
    # 2. fill the slices that are written anyway, fullest first
    for name in sorted(to_update, key=lambda n: -len(by_name[n]["endpoints"])):
        room = max_endpoints - len(by_name[name]["endpoints"])
        if room > 0:
            by_name[name]["endpoints"] += remaining[:room]
            remaining = remaining[room:]
    # 3. the rest: into the unchanged slice they fit best, else into new slices
    create: list[Slice] = []
    while remaining:
        target = None
        if len(remaining) < max_endpoints and unchanged:
            target = _slice_to_fill([by_name[n] for n in unchanged], len(remaining), max_endpoints)
        if target is None:
            target = new_slice(service, ports, address_type)
        else:
            target = copy.deepcopy(target)
            target["endpoints"] = target.get("endpoints") or []
            by_name[target["metadata"]["name"]] = target
        room = max_endpoints - len(target["endpoints"])
        target["endpoints"] += remaining[:room]
        remaining = remaining[room:]
        name = target["metadata"].get("name")
        if name:
            unchanged.remove(name)
            to_update.append(name)
        else:
            create.append(target)
    return create, [by_name[n] for n in to_update], [by_name[n] for n in to_delete]


def _keep_wanted(service: dict[str, Any], existing: list[Slice], wanted: dict[EndpointKey, Endpoint]
                 ) -> tuple[dict[str, Slice], list[str], list[str], list[str]]:
    """Step 1: each existing slice keeps the endpoints still wanted (taken out of `wanted`), updated in place.

    Returns the slices by name (copies for those to update) and the names unchanged, to update, to delete.
    """
    by_name = {s["metadata"]["name"]: s for s in existing}
    unchanged: list[str] = []
    to_update: list[str] = []
    to_delete: list[str] = []
    for existing_slice in existing:
        name = existing_slice["metadata"]["name"]
        kept, changed = [], False
        for endpoint in existing_slice.get("endpoints") or []:
            got = wanted.pop(endpoint_hash(endpoint), None)
            if got is not None:
                kept.append(got)
                changed = changed or not equal_beyond_hash(got, endpoint)
        labels, labels_changed = slice_labels(existing_slice, service)
        if not kept and existing_slice.get("endpoints"):
            to_delete.append(name)
        elif changed or len(kept) != len(existing_slice.get("endpoints") or []) or labels_changed:
            by_name[name] = {**copy.deepcopy(existing_slice), "endpoints": kept}
            by_name[name]["metadata"]["labels"] = labels
            to_update.append(name)
        else:
            unchanged.append(name)
    return by_name, unchanged, to_update, to_delete


def _slice_to_fill(slices: list[Slice], count: int, max_endpoints: int) -> Slice | None:
    """The slice closest to full once `count` endpoints are added to it, if any has the room."""
    best, best_gap = None, max_endpoints
    for s in slices:
        gap = max_endpoints - (count + len(s.get("endpoints") or []))
        if 0 <= gap < best_gap:
            best, best_gap = s, gap
            if gap == 0:
                break
    return best


def _reuse_deleted(service: dict[str, Any], create: list[Slice], update: list[Slice],
                   delete: list[Slice]) -> tuple[list[Slice], list[Slice], list[Slice]]:
    """Turn create + delete pairs into updates of the slices that would be deleted."""
    create, delete = list(create), list(delete)
    index = 0
    while index < len(delete) and create:
        doomed = delete[index]
        if doomed.get("addressType") == create[-1].get("addressType") and owned_by(doomed, service):
            replacement = create.pop()
            replacement["metadata"]["name"] = doomed["metadata"]["name"]
            update.append(replacement)
            del delete[index]
        else:
            index += 1
    return create, update, delete


# endpoints and slices --------------------------------------------------------------------------------------

def endpoint_ports(service: dict[str, Any], pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The Service's ports as resolved for `pod`, in kube's order; a port the pod cannot resolve is left out."""
    ports = []
    for service_port in (service.get("spec") or {}).get("ports") or []:
        number = util.find_port(pod, service_port)
        if number is None:
            continue
        port = {"name": service_port.get("name") or "", "port": number,
                "protocol": service_port.get("protocol") or "TCP"}
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return sorted(ports, key=lambda port: util.go_hash(port, util.SLICE_PORT))


def pod_to_endpoint(pod: dict[str, Any], node: dict[str, Any] | None, service: dict[str, Any],
                    address_type: str) -> Endpoint:
    serving, terminating = is_ready(pod), util.terminating(pod)
    publish_all = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoint: Endpoint = {
        "addresses": [ip for ip in util.pod_ips(pod) if util.is_ipv6(ip) == (address_type == "IPv6")],
        "conditions": {"ready": publish_all or (serving and not terminating), "serving": serving,
                       "terminating": terminating},
        "targetRef": util.target_ref(pod)}
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        endpoint["nodeName"] = node_name
    zone = ((node or {}).get("metadata", {}).get("labels") or {}).get(util.ZONE_LABEL)
    if zone:
        endpoint["zone"] = zone
    if util.should_set_hostname(pod, service):
        endpoint["hostname"] = pod["spec"]["hostname"]
    return endpoint


def endpoint_hash(endpoint: Endpoint) -> EndpointKey:
    """What identifies an endpoint across syncs: its addresses, hostname and pod (not its conditions)."""
    ref = endpoint.get("targetRef") or {}
    return (tuple(sorted(endpoint.get("addresses") or [])), endpoint.get("hostname") or "",
            ref.get("namespace", ""), ref.get("name", ""))


def equal_beyond_hash(a: Endpoint, b: Endpoint) -> bool:
    """Whether two endpoints with the same hash also agree on everything this controller sets."""
    conditions_a, conditions_b = a.get("conditions") or {}, b.get("conditions") or {}
    return (a.get("nodeName") == b.get("nodeName") and a.get("zone") == b.get("zone")
            and all(conditions_a.get(c) == conditions_b.get(c) for c in ("ready", "serving", "terminating"))
            and _without_version(a.get("targetRef")) == _without_version(b.get("targetRef")))


def _without_version(ref: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if ref is None else {k: v for k, v in ref.items() if k != "resourceVersion"}


def new_slice(service: dict[str, Any], ports: list[dict[str, Any]], address_type: str) -> Slice:
    meta = service["metadata"]
    owner = {"apiVersion": "v1", "kind": "Service", **service}
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": f"{meta['name']}-", "namespace": meta["namespace"],
                         "ownerReferences": [controller_ref(owner)], "labels": slice_labels({}, service)[0]},
            "addressType": address_type, "endpoints": [], "ports": copy.deepcopy(ports)}


def slice_labels(existing: Slice, service: dict[str, Any]) -> tuple[dict[str, str], bool]:
    """The labels a slice of `service` should have, and whether `existing`'s differ (reserved ones aside)."""
    def own(labels: dict[str, str] | None) -> dict[str, str]:
        return {k: v for k, v in (labels or {}).items() if k not in RESERVED_LABELS}

    labels = own(service["metadata"].get("labels"))
    changed = own((existing.get("metadata") or {}).get("labels")) != labels
    if util.headless(service):
        labels[util.HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = service["metadata"]["name"]
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels, changed


def owned_by(endpoint_slice: Slice, service: dict[str, Any]) -> bool:
    return any(ref.get("uid") == service["metadata"].get("uid") and ref.get("kind") == "Service"
               and ref.get("apiVersion") == "v1" for ref in endpoint_slice["metadata"].get("ownerReferences") or [])


def _same_placeholder(existing: Slice, placeholder: Slice) -> bool:
    return (existing["metadata"].get("namespace") == placeholder["metadata"]["namespace"]
            and (existing["metadata"].get("labels") or {}) == placeholder["metadata"]["labels"]
            and existing.get("addressType") == placeholder["addressType"]
            and not existing.get("endpoints") and not existing.get("ports"))

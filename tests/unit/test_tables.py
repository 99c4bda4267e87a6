"""Server-side Tables: columns and cells per kind, as kube-apiserver 1.32 prints them for kubectl."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api.kinds import RESOURCES, Resource, default_registry
from minikube_py.api.printers.format import human_duration
from minikube_py.api.tables import build_table, column_definitions, row_cells

NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
REGISTRY = default_registry()


# --- builders -------------------------------------------------------------------------------------------


def case(sentence: str, *values: Any) -> Any:
    """One table row of a parametrized test, named by the sentence it proves."""
    return pytest.param(*values, id=sentence)


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource(kind: str, group: str = "", version: str = "v1") -> Resource:
    found = REGISTRY.by_kind(group, version, kind)
    assert found is not None, kind
    return found


def obj(name: str = "x", created: str | None = None, **fields: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "creationTimestamp": created or ago(minutes=5)}
    metadata.update(fields.pop("metadata", {}))
    return {"metadata": metadata, **fields}


def cells(kind: str, item: dict[str, Any], group: str = "", version: str = "v1") -> list[Any]:
    return row_cells(resource(kind, group, version), item, NOW)


def running(ready: bool = True, restarts: int = 0, last_finished: str | None = None) -> dict[str, Any]:
    return _status({"running": {"startedAt": ago(minutes=4)}}, ready, restarts, last_finished)


def waiting(reason: str, restarts: int = 0, last_finished: str | None = None) -> dict[str, Any]:
    return _status({"waiting": {"reason": reason}}, False, restarts, last_finished)


def terminated(reason: str = "", exit_code: int = 0, signal: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code, **({"reason": reason} if reason else {})}
    if signal:
        state["signal"] = signal
    return _status({"terminated": state}, False, 0, None)


def _status(state: dict[str, Any], ready: bool, restarts: int, last_finished: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {"name": "c", "state": state, "ready": ready, "restartCount": restarts}
    if last_finished:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": last_finished}}
    return status


def pod(*, containers: int = 1, statuses: tuple[dict[str, Any], ...] = (), phase: str = "Running",
        init: tuple[dict[str, Any], ...] = (), init_statuses: tuple[dict[str, Any], ...] = (),
        conditions: tuple[tuple[str, str], ...] = (), deleting: bool = False,
        **status: Any) -> dict[str, Any]:
    metadata = {"deletionTimestamp": ago(seconds=1)} if deleting else {}
    spec = {"containers": [{"name": f"c{i}", "image": "nginx"} for i in range(containers)],
            "initContainers": list(init)}
    pod_status = {"phase": phase, "containerStatuses": list(statuses),
                  "initContainerStatuses": list(init_statuses),
                  "conditions": [{"type": t, "status": s} for t, s in conditions], **status}
    return obj("web-1", metadata=metadata, spec=spec, status=pod_status)


def init_container(name: str = "init", sidecar: bool = False) -> dict[str, Any]:
    return {"name": name, "image": "busybox", **({"restartPolicy": "Always"} if sidecar else {})}


def named(status: dict[str, Any], name: str, **extra: Any) -> dict[str, Any]:
    return {**status, "name": name, **extra}


# --- ages -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("elapsed", "shown"), [
    case("a time two seconds in the future is invalid", timedelta(seconds=-2), "<invalid>"),
    case("a second of clock skew reads as now", timedelta(seconds=-1), "0s"),
    case("no time at all is 0s", timedelta(0), "0s"),
    case("seconds are truncated", timedelta(seconds=59.9), "59s"),
    case("under two minutes shows seconds", timedelta(seconds=119), "119s"),
    case("two minutes drop zero seconds", timedelta(seconds=120), "2m"),
    case("under ten minutes shows minutes and seconds", timedelta(seconds=125), "2m5s"),
    case("from ten minutes seconds are dropped", timedelta(minutes=10, seconds=30), "10m"),
    case("under three hours shows minutes", timedelta(minutes=179), "179m"),
    case("three hours drop zero minutes", timedelta(hours=3), "3h"),
    case("under eight hours shows hours and minutes", timedelta(hours=5, minutes=30), "5h30m"),
    case("from eight hours minutes are dropped", timedelta(hours=8, minutes=30), "8h"),
    case("under two days shows hours", timedelta(hours=47), "47h"),
    case("under eight days shows days and hours", timedelta(days=2, hours=5), "2d5h"),
    case("whole days drop zero hours", timedelta(days=3), "3d"),
    case("from eight days hours are dropped", timedelta(days=10, hours=5), "10d"),
    case("under two years shows days", timedelta(days=729), "729d"),
    case("under eight years shows years and days", timedelta(days=760), "2y30d"),
    case("from eight years only years are shown", timedelta(days=365 * 9), "9y"),
])
def test_human_duration(elapsed: timedelta, shown: str) -> None:
    assert human_duration(elapsed) == shown


def test_an_object_without_creation_time_has_unknown_age() -> None:
    assert cells("ConfigMap", {"metadata": {"name": "cm"}}) == ["cm", 0, "<unknown>"]


# --- pods -----------------------------------------------------------------------------------------------

READY_POD = (("Ready", "True"), ("Initialized", "True"))
GATED = obj("web-1", spec={"containers": [{"name": "c"}]}, status={
    "phase": "Pending",
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]})


@pytest.mark.parametrize(("item", "ready", "status", "restarts"), [
    case("a running ready pod reads Running",
         pod(statuses=(running(),), conditions=READY_POD), "1/1", "Running", "0"),
    case("a pod without statuses reads its phase", pod(phase="Pending"), "0/1", "Pending", "0"),
    case("a container being created reads ContainerCreating",
         pod(phase="Pending", statuses=(waiting("ContainerCreating"),)), "0/1", "ContainerCreating", "0"),
    case("a crashing container reads CrashLoopBackOff with the age of its last restart",
         pod(statuses=(waiting("CrashLoopBackOff", restarts=4, last_finished=ago(minutes=5)),)),
         "0/1", "CrashLoopBackOff", "4 (5m ago)"),
    case("restarts without a last termination time show no age",
         pod(statuses=(running(restarts=2),)), "1/1", "Running", "2"),
    case("a finished pod reads Completed",
         pod(phase="Succeeded", statuses=(terminated("Completed"),)), "0/1", "Completed", "0"),
    case("a container that exited without a reason reads its exit code",
         pod(phase="Failed", statuses=(terminated(exit_code=2),)), "0/1", "ExitCode:2", "0"),
    case("a container killed by a signal reads the signal",
         pod(phase="Failed", statuses=(terminated(exit_code=137, signal=9),)), "0/1", "Signal:9", "0"),
    case("the first container's reason wins",
         pod(containers=2, statuses=(waiting("ErrImagePull"), waiting("CrashLoopBackOff"))),
         "0/2", "ErrImagePull", "0"),
    case("a completed container beside a running one in a ready pod reads Running",
         pod(containers=2, statuses=(terminated("Completed"), running()), conditions=READY_POD),
         "1/2", "Running", "0"),
    case("a completed container beside a running one in an unready pod reads NotReady",
         pod(containers=2, statuses=(terminated("Completed"), running())), "1/2", "NotReady", "0"),
    case("an evicted pod reads Evicted", pod(phase="Failed", reason="Evicted"), "0/1", "Evicted", "0"),
    case("a pod on a lost node reads NodeLost",
         pod(reason="NodeLost", statuses=(running(),)), "1/1", "NodeLost", "0"),
    case("a pod on a lost node being deleted reads Unknown",
         pod(reason="NodeLost", statuses=(running(),), deleting=True), "1/1", "Unknown", "0"),
    case("a pod being deleted reads Terminating",
         pod(statuses=(running(),), deleting=True), "1/1", "Terminating", "0"),
    case("a finished pod being deleted keeps its status",
         pod(phase="Succeeded", statuses=(terminated("Completed"),), deleting=True), "0/1", "Completed", "0"),
    case("a pod held by scheduling gates reads SchedulingGated", GATED, "0/1", "SchedulingGated", "0"),
])
def test_pod_ready_status_and_restarts(item: dict[str, Any], ready: str, status: str, restarts: str) -> None:
    assert cells("Pod", item)[1:4] == [ready, status, restarts]


TWO_INITS = (init_container("a"), init_container("b"))


def initializing(*init_statuses: dict[str, Any]) -> dict[str, Any]:
    return pod(phase="Pending", init=TWO_INITS, init_statuses=init_statuses)


@pytest.mark.parametrize(("item", "ready", "status", "restarts"), [
    case("a running init container reads Init:<index>/<count>",
         initializing(terminated(), running()), "0/1", "Init:1/2", "0"),
    case("an init container waiting on PodInitializing reads Init:<index>/<count>",
         initializing(waiting("PodInitializing")), "0/1", "Init:0/2", "0"),
    case("an init container waiting for a reason reads Init:<reason>",
         initializing(waiting("ErrImagePull")), "0/1", "Init:ErrImagePull", "0"),
    case("a failed init container reads Init:<reason>",
         initializing(terminated("Error", exit_code=1)), "0/1", "Init:Error", "0"),
    case("a failed init container without a reason reads its exit code",
         initializing(terminated(exit_code=3)), "0/1", "Init:ExitCode:3", "0"),
    case("init container restarts count while initializing",
         initializing(waiting("CrashLoopBackOff", restarts=3, last_finished=ago(seconds=30))),
         "0/1", "Init:CrashLoopBackOff", "3 (30s ago)"),
    case("a started sidecar counts as a container and its restarts add up",
         pod(init=(init_container("proxy", sidecar=True),),
             init_statuses=(named(running(restarts=1), "proxy", started=True),),
             statuses=(running(restarts=2),), conditions=READY_POD),
         "2/2", "Running", "3"),
    case("finished init containers leave the app containers' status",
         pod(init=TWO_INITS, init_statuses=(terminated(), terminated()), statuses=(running(restarts=1),),
             conditions=READY_POD),
         "1/1", "Running", "1"),
])
def test_pod_status_during_initialization(item: dict[str, Any], ready: str, status: str,
                                          restarts: str) -> None:
    assert cells("Pod", item)[1:4] == [ready, status, restarts]


def test_an_unscheduled_pod_shows_placeholders_in_wide_columns() -> None:
    assert cells("Pod", pod(phase="Pending")) == [
        "web-1", "0/1", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"]


def test_a_scheduled_pod_shows_ip_node_nominated_node_and_readiness_gates() -> None:
    item = pod(statuses=(running(),), podIPs=[{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
               nominatedNodeName="node-2", conditions=(("Ready", "True"), ("example.com/lb", "True")))
    item["spec"].update(nodeName="node-1", readinessGates=[{"conditionType": "example.com/lb"},
                                                           {"conditionType": "example.com/dns"}])
    assert cells("Pod", item)[5:] == ["10.0.0.5", "node-1", "node-2", "1/2"]


def test_pod_columns_are_kubes_with_wide_ones_at_priority_one() -> None:
    columns = [(c["name"], c["type"], c["priority"]) for c in column_definitions(resource("Pod"))]
    assert columns == [
        ("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0), ("Restarts", "string", 0),
        ("Age", "string", 0), ("IP", "string", 1), ("Node", "string", 1), ("Nominated Node", "string", 1),
        ("Readiness Gates", "string", 1)]


def completed(reason: str, message: str) -> list[dict[str, str]]:
    return [{"type": "Completed", "status": "True", "reason": reason, "message": message}]


@pytest.mark.parametrize(("phase", "conditions"), [
    case("a succeeded pod's row carries the Completed condition",
         "Succeeded", completed("Succeeded", "The pod has completed successfully.")),
    case("a failed pod's row carries the Completed condition",
         "Failed", completed("Failed", "The pod failed.")),
    case("a running pod's row carries no condition", "Running", None),
])
def test_pod_row_conditions(phase: str, conditions: list[dict[str, str]] | None) -> None:
    row = build_table(resource("Pod"), [pod(phase=phase)], list_rv="1", now=NOW)["rows"][0]
    assert row.get("conditions") == conditions


# --- services and endpoints ------------------------------------------------------------------------------

HTTP = {"port": 80, "protocol": "TCP"}


def service(service_type: str = "ClusterIP", ports: tuple[dict[str, Any], ...] = (HTTP,),
            ingress: tuple[dict[str, str], ...] = (), **spec: Any) -> dict[str, Any]:
    spec = {"type": service_type, "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
            "ports": list(ports), **spec}
    return obj("web", spec=spec, status={"loadBalancer": {"ingress": list(ingress)}})


@pytest.mark.parametrize(("item", "expected"), [
    case("a ClusterIP service has no external IP", service(selector={"app": "web", "tier": "fe"}),
         ["web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP", "5m", "app=web,tier=fe"]),
    case("a ClusterIP service shows its external IPs", service(externalIPs=["1.2.3.4"]),
         ["web", "ClusterIP", "10.96.0.10", "1.2.3.4", "80/TCP", "5m", "<none>"]),
    case("node ports show after the service port",
         service("NodePort", ports=({**HTTP, "nodePort": 30080}, {"port": 53, "protocol": "UDP"})),
         ["web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "5m", "<none>"]),
    case("a load balancer not yet provisioned is pending", service("LoadBalancer"),
         ["web", "LoadBalancer", "10.96.0.10", "<pending>", "80/TCP", "5m", "<none>"]),
    case("a load balancer shows its unique sorted addresses",
         service("LoadBalancer",
                 ingress=({"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}, {"ip": "5.6.7.8"})),
         ["web", "LoadBalancer", "10.96.0.10", "5.6.7.8,lb.example.com", "80/TCP", "5m", "<none>"]),
    case("a load balancer lists its addresses before the external IPs",
         service("LoadBalancer", ingress=({"ip": "5.6.7.8"},), externalIPs=["1.2.3.4"]),
         ["web", "LoadBalancer", "10.96.0.10", "5.6.7.8,1.2.3.4", "80/TCP", "5m", "<none>"]),
    case("an ExternalName service shows its DNS name and no cluster IP or ports",
         obj("db", spec={"type": "ExternalName", "externalName": "db.example.com"}),
         ["db", "ExternalName", "<none>", "db.example.com", "<none>", "5m", "<none>"]),
    case("a headless service shows None as its cluster IP", service(clusterIP="None", clusterIPs=["None"]),
         ["web", "ClusterIP", "None", "<none>", "80/TCP", "5m", "<none>"]),
])
def test_service_cells(item: dict[str, Any], expected: list[Any]) -> None:
    assert cells("Service", item) == expected


def subset(*ips: str, ports: tuple[int, ...] = (80,)) -> dict[str, Any]:
    return {"addresses": [{"ip": ip} for ip in ips], "ports": [{"port": port} for port in ports]}


@pytest.mark.parametrize(("subsets", "shown"), [
    case("endpoints without subsets show none", [], "<none>"),
    case("addresses pair with the port", [subset("10.0.0.1", "10.0.0.2")], "10.0.0.1:80,10.0.0.2:80"),
    case("past three endpoints the rest are counted",
         [subset("10.0.0.1", "10.0.0.2", ports=(80, 443)), subset("10.0.0.3")],
         "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more..."),
    case("a headless subset without ports shows bare IPs", [subset("10.0.0.1", ports=())], "10.0.0.1"),
    case("IPv6 addresses are bracketed", [subset("fd00::1")], "[fd00::1]:80"),
])
def test_endpoints_cells(subsets: list[dict[str, Any]], shown: str) -> None:
    assert cells("Endpoints", obj("web", subsets=subsets)) == ["web", shown, "5m"]


@pytest.mark.parametrize(("ports", "endpoints", "expected"), [
    case("an empty slice shows unset ports and endpoints", [], [], ["<unset>", "<unset>"]),
    case("ports show their number, else their name, else any",
         [{"port": 80}, {"name": "dns"}, {}], [{"addresses": ["10.0.0.1"]}], ["80,dns,*", "10.0.0.1"]),
    case("past three the rest are counted",
         [{"port": p} for p in (1, 2, 3, 4)], [{"addresses": [f"10.0.0.{i}"]} for i in range(5)],
         ["1,2,3 + 1 more...", "10.0.0.0,10.0.0.1,10.0.0.2 + 2 more..."]),
])
def test_endpoint_slice_cells(ports: list[Any], endpoints: list[Any], expected: list[str]) -> None:
    item = obj("web-abc", addressType="IPv4", ports=ports, endpoints=endpoints)
    assert cells("EndpointSlice", item, "discovery.k8s.io") == ["web-abc", "IPv4", *expected, "5m"]


# --- nodes ----------------------------------------------------------------------------------------------


def node(ready: str | None = "True", unschedulable: bool = False, labels: dict[str, str] | None = None,
         **info: str) -> dict[str, Any]:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready:
        conditions.append({"type": "Ready", "status": ready})
    addresses = [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "172.18.0.2"}]
    status = {"conditions": conditions, "nodeInfo": {"kubeletVersion": "v1.32.4", **info},
              "addresses": addresses}
    return obj("n1", metadata={"labels": labels or {}}, spec={"unschedulable": unschedulable}, status=status)


@pytest.mark.parametrize(("item", "status"), [
    case("a node with a true Ready condition is Ready", node(), "Ready"),
    case("a node with a false Ready condition is NotReady", node("False"), "NotReady"),
    case("a node whose kubelet stopped posting is NotReady", node("Unknown"), "NotReady"),
    case("a node without a Ready condition is Unknown", node(None), "Unknown"),
    case("a cordoned node says SchedulingDisabled", node(unschedulable=True), "Ready,SchedulingDisabled"),
])
def test_node_status(item: dict[str, Any], status: str) -> None:
    assert cells("Node", item)[1] == status


@pytest.mark.parametrize(("labels", "roles"), [
    case("a node without role labels has none", {}, "<none>"),
    case("role labels give sorted roles",
         {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""},
         "control-plane,worker"),
    case("the legacy role label counts and an empty role suffix does not",
         {"kubernetes.io/role": "infra", "node-role.kubernetes.io/": ""}, "infra"),
])
def test_node_roles(labels: dict[str, str], roles: str) -> None:
    assert cells("Node", node(labels=labels))[2] == roles


def test_node_wide_cells_show_addresses_and_system_info() -> None:
    item = node(osImage="Debian GNU/Linux 12", containerRuntimeVersion="containerd://1.7.24")
    assert cells("Node", item) == ["n1", "Ready", "<none>", "5m", "v1.32.4", "172.18.0.2", "<none>",
                                   "Debian GNU/Linux 12", "<unknown>", "containerd://1.7.24"]


# --- other core kinds -----------------------------------------------------------------------------------

QUOTA = {"hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "2Gi", "limits.cpu": "4"},
         "used": {"pods": "3", "requests.cpu": "500m", "limits.cpu": "1"}}
TWO_CONTAINERS = {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]}
RC_SPEC = {"replicas": 3, "selector": {"app": "web"},
           "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}}


@pytest.mark.parametrize(("kind", "item", "expected"), [
    case("a namespace shows its phase",
         "Namespace", obj("dev", status={"phase": "Terminating"}), ["dev", "Terminating", "5m"]),
    case("a config map counts data and binary data keys",
         "ConfigMap", obj("cm", data={"a": "1", "b": "2"}, binaryData={"c": "AA=="}), ["cm", 3, "5m"]),
    case("a secret shows its type and key count",
         "Secret", obj("s", type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""}),
         ["s", "kubernetes.io/tls", 2, "5m"]),
    case("a service account counts its secrets",
         "ServiceAccount", obj("default", secrets=[{"name": "t"}]), ["default", 1, "5m"]),
    case("a resource quota splits sorted usage into requests and limits",
         "ResourceQuota", obj("q", status=QUOTA),
         ["q", "pods: 3/10, requests.cpu: 500m/2", "limits.cpu: 1/4, limits.memory: 0/2Gi", "5m"]),
    case("a pod template lists containers, images and labels",
         "PodTemplate", obj("t", template={"metadata": {"labels": {"app": "web"}}, "spec": TWO_CONTAINERS}),
         ["t", "a,b", "nginx,redis", "app=web"]),
    case("a replication controller shows counts as integers",
         "ReplicationController", obj("rc", spec=RC_SPEC, status={"replicas": 3, "readyReplicas": 2}),
         ["rc", 3, 3, 2, "5m", "web", "nginx", "app=web"]),
    case("a limit range has no printer and shows its creation time",
         "LimitRange", obj("limits", created="2026-11-21T11:00:00Z"), ["limits", "2026-11-21T11:00:00Z"]),
])
def test_core_cells(kind: str, item: dict[str, Any], expected: list[Any]) -> None:
    assert cells(kind, item) == expected


def volume(phase: str = "Bound", **spec: Any) -> dict[str, Any]:
    spec = {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "standard", **spec}
    return obj("pv1", spec=spec, status={"phase": phase})


@pytest.mark.parametrize(("item", "expected"), [
    case("a bound volume shows its claim and abbreviated access modes in order",
         volume(claimRef={"namespace": "default", "name": "data"}, volumeMode="Filesystem"),
         ["pv1", "10Gi", "RWO,RWX", "Retain", "Bound", "default/data", "standard", "<unset>", "", "5m",
          "Filesystem"]),
    case("an available volume has no claim", volume("Available"),
         ["pv1", "10Gi", "RWO,RWX", "Retain", "Available", "", "standard", "<unset>", "", "5m", "<unset>"]),
])
def test_persistent_volume_cells(item: dict[str, Any], expected: list[Any]) -> None:
    assert cells("PersistentVolume", item) == expected


PENDING_CLAIM = obj("data", status={"phase": "Pending"},
                    spec={"storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}})
DELETED_CLAIM = obj(
    "data",
    metadata={"annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"},
              "deletionTimestamp": ago(seconds=3)},
    spec={"volumeName": "pv1", "storageClassName": "standard", "volumeMode": "Block"},
    status={"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]})


@pytest.mark.parametrize(("item", "expected"), [
    case("a pending claim shows no capacity", PENDING_CLAIM,
         ["data", "Pending", "", "", "", "standard", "<unset>", "5m", "<unset>"]),
    case("a bound claim being deleted shows Terminating and its legacy storage class", DELETED_CLAIM,
         ["data", "Terminating", "pv1", "10Gi", "RWO", "legacy", "<unset>", "5m", "Block"]),
])
def test_persistent_volume_claim_cells(item: dict[str, Any], expected: list[Any]) -> None:
    assert cells("PersistentVolumeClaim", item) == expected


# --- events ---------------------------------------------------------------------------------------------


def test_a_core_event_shows_when_what_and_who() -> None:
    item = obj("web-1.abc", type="Warning", reason="BackOff", message=" Back-off restarting \n", count=6,
               involvedObject={"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{web}"},
               source={"component": "kubelet", "host": "node-1"},
               firstTimestamp=ago(days=3), lastTimestamp=ago(days=2))
    assert cells("Event", item) == ["2d", "Warning", "BackOff", "pod/web-1", "spec.containers{web}",
                                    "kubelet, node-1", "Back-off restarting", "3d", 6, "web-1.abc"]


def test_a_new_style_core_event_falls_back_to_event_time_and_its_series() -> None:
    item = obj("e", type="Normal", reason="Scheduled", involvedObject={"kind": "Node"},
               eventTime=(NOW - timedelta(minutes=8)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
               series={"count": 4, "lastObservedTime": ago(seconds=30)},
               reportingComponent="default-scheduler")
    assert cells("Event", item) == [
        "30s", "Normal", "Scheduled", "node", "", "default-scheduler", "", "8m", 4, "e"]


def test_a_singleton_event_without_timestamps_counts_once() -> None:
    assert cells("Event", obj("e")) == [
        "<unknown>", "", "", "", "", "", "", "<unknown>", 1, "e"]


def test_an_events_k8s_io_event_prints_like_its_core_form() -> None:
    item = obj("web-1.abc", type="Normal", reason="Pulled", note="Pulled image",
               regarding={"kind": "Pod", "name": "web-1"}, reportingController="kubelet",
               reportingInstance="node-1", deprecatedCount=2, deprecatedFirstTimestamp=ago(hours=1),
               deprecatedLastTimestamp=ago(minutes=1))
    assert cells("Event", item, "events.k8s.io") == [
        "60s", "Normal", "Pulled", "pod/web-1", "", "kubelet, node-1", "Pulled image", "60m", 2, "web-1.abc"]


def test_event_columns_put_the_name_last_and_wide() -> None:
    columns = [(c["name"], c["priority"]) for c in column_definitions(resource("Event"))]
    assert columns == [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
                       ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]
    assert column_definitions(resource("Event", "events.k8s.io")) == column_definitions(resource("Event"))


# --- apps -----------------------------------------------------------------------------------------------

TEMPLATE = {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"},
                                    {"name": "log", "image": "busybox"}]}}
IMAGES = ["web,log", "nginx:1.27,busybox"]
SELECTOR = {"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]},
                                 {"key": "legacy", "operator": "DoesNotExist"}]}
MALFORMED = {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "In"}]}
DAEMON_SET_STATUS = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                     "updatedNumberScheduled": 3, "numberAvailable": 2}
DAEMON_SET_SPEC = {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"spec": {**TEMPLATE["spec"], "nodeSelector": {"os": "linux"}}}}
OWNED = {"ownerReferences": [
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}]}


@pytest.mark.parametrize(("kind", "item", "expected"), [
    case("a deployment shows ready over desired and a selector sorted by key",
         "Deployment", obj("web", spec={"replicas": 3, "selector": SELECTOR, "template": TEMPLATE},
                           status={"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}),
         ["web", "2/3", 3, 2, "5m", *IMAGES, "app=web,!legacy,tier in (be,fe)"]),
    case("a deployment defaults to one replica and prints an empty selector as nothing",
         "Deployment", obj("web", spec={"selector": {}, "template": TEMPLATE}),
         ["web", "0/1", 0, 0, "5m", *IMAGES, ""]),
    case("a deployment with a malformed selector",
         "Deployment", obj("web", spec={"selector": MALFORMED}),
         ["web", "0/1", 0, 0, "5m", "", "", "<invalid>"]),
    case("a replica set scaled to zero with an empty selector",
         "ReplicaSet", obj("web-5d", spec={"replicas": 0, "selector": {}, "template": TEMPLATE}),
         ["web-5d", 0, 0, 0, "5m", *IMAGES, "<none>"]),
    case("a replica set with a malformed selector",
         "ReplicaSet", obj("web-5d", spec={"selector": MALFORMED}),
         ["web-5d", 1, 0, 0, "5m", "", "", "<error>"]),
    case("a stateful set shows ready over desired",
         "StatefulSet", obj("db", spec={"replicas": 3, "template": TEMPLATE}, status={"readyReplicas": 1}),
         ["db", "1/3", "5m", *IMAGES]),
    case("a daemon set shows its counts and node selector",
         "DaemonSet", obj("agent", spec=DAEMON_SET_SPEC, status=DAEMON_SET_STATUS),
         ["agent", 3, 3, 2, 3, 2, "os=linux", "5m", *IMAGES, "app=agent"]),
    case("a controller revision names its controller with its group",
         "ControllerRevision", obj("db-7c", metadata=OWNED, revision=2),
         ["db-7c", "statefulset.apps/db", 2, "5m"]),
    case("a controller revision without a controller",
         "ControllerRevision", obj("r", revision=1), ["r", "<none>", 1, "5m"]),
])
def test_apps_cells(kind: str, item: dict[str, Any], expected: list[Any]) -> None:
    assert cells(kind, item, "apps") == expected


# --- batch ----------------------------------------------------------------------------------------------


def job(conditions: tuple[str, ...] = (), deleting: bool = False, **spec: Any) -> dict[str, Any]:
    metadata = {"deletionTimestamp": ago(seconds=1)} if deleting else {}
    status = {"succeeded": 1, "startTime": ago(minutes=3),
              "conditions": [{"type": t, "status": "True"} for t in conditions]}
    return obj("pi", metadata=metadata, spec={"template": TEMPLATE, **spec}, status=status)


@pytest.mark.parametrize(("item", "status"), [
    case("a job without conditions is Running", job(), "Running"),
    case("a complete job is Complete", job(("Complete",)), "Complete"),
    case("a failed job is Failed", job(("FailureTarget", "Failed")), "Failed"),
    case("deletion outranks suspension", job(("Suspended",), deleting=True), "Terminating"),
    case("a suspended job is Suspended", job(("Suspended",)), "Suspended"),
    case("a job about to fail is FailureTarget", job(("FailureTarget",)), "FailureTarget"),
])
def test_job_status(item: dict[str, Any], status: str) -> None:
    assert cells("Job", item, "batch")[1] == status


@pytest.mark.parametrize(("spec", "completions"), [
    case("a job with completions counts against them", {"completions": 5}, "1/5"),
    case("a parallel work queue job counts against one of its pods", {"parallelism": 3}, "1/1 of 3"),
    case("a single work queue job counts against one", {"parallelism": 1}, "1/1"),
])
def test_job_completions(spec: dict[str, Any], completions: str) -> None:
    assert cells("Job", job(**spec), "batch")[2] == completions


def test_job_duration_runs_to_completion_or_now() -> None:
    unfinished = job()
    finished = job(("Complete",))
    finished["status"]["completionTime"] = ago(minutes=1)
    never_started = obj("pi", spec={"completions": 1})
    durations = [cells("Job", item, "batch")[3] for item in (unfinished, finished, never_started)]
    assert durations == ["3m", "2m", ""]


def test_job_wide_cells_show_containers_and_selector() -> None:
    item = job(selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
    assert cells("Job", item, "batch")[4:] == ["5m", *IMAGES, "batch.kubernetes.io/controller-uid=u1"]


@pytest.mark.parametrize(("spec", "status", "expected"), [
    case("a cron job that never ran", {"schedule": "*/5 * * * *", "suspend": False}, {},
         ["*/5 * * * *", "<none>", "False", 0, "<none>"]),
    case("a suspended cron job with an active job",
         {"schedule": "0 3 * * *", "timeZone": "Europe/Paris", "suspend": True},
         {"active": [{"name": "j1"}], "lastScheduleTime": ago(hours=9)},
         ["0 3 * * *", "Europe/Paris", "True", 1, "9h"]),
    case("a cron job without suspend shows it unset", {"schedule": "@hourly"}, {},
         ["@hourly", "<none>", "<unset>", 0, "<none>"]),
])
def test_cron_job_cells(spec: dict[str, Any], status: dict[str, Any], expected: list[Any]) -> None:
    item = obj("backup", spec={**spec, "jobTemplate": {"spec": {"template": TEMPLATE}}}, status=status)
    assert cells("CronJob", item, "batch") == ["backup", *expected, "5m", *IMAGES, "<none>"]


# --- autoscaling ----------------------------------------------------------------------------------------


def utilization(name: str, value: int | None) -> dict[str, Any]:
    target = {"type": "Utilization", **({"averageUtilization": value} if value is not None else {})}
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def measured(metric_type: str, **current: Any) -> dict[str, Any]:
    field = metric_type[0].lower() + metric_type[1:]
    return {"type": metric_type, field: {"current": current}}


def hpa(metrics: list[dict[str, Any]], current: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10, "metrics": metrics}
    return obj("web", spec=spec, status={"currentReplicas": 2, "currentMetrics": current or []})


AVERAGE_MEMORY = {"type": "Resource", "resource": {"name": "memory", "target": {"averageValue": "200Mi"}}}
THREE_METRICS = [{"type": "Pods", "pods": {"target": {"averageValue": "1k"}}},
                 {"type": "External", "external": {"target": {"averageValue": "30"}}},
                 {"type": "Object", "object": {"target": {"value": "10"}}}]


@pytest.mark.parametrize(("item", "targets"), [
    case("an autoscaler without metrics has no targets", hpa([]), "<none>"),
    case("an unmeasured utilization is unknown", hpa([utilization("cpu", 80)]), "cpu: <unknown>/80%"),
    case("a measured utilization shows against its target",
         hpa([utilization("cpu", 80)], [measured("Resource", averageUtilization=42, averageValue="84m")]),
         "cpu: 42%/80%"),
    case("a utilization target without a percentage is auto",
         hpa([utilization("memory", None)]), "memory: <unknown>/<auto>"),
    case("an average value target shows the average value",
         hpa([AVERAGE_MEMORY], [measured("Resource", averageValue="100Mi")]), "memory: 100Mi/200Mi"),
    case("past two metrics the rest are counted",
         hpa(THREE_METRICS, [measured("Pods", averageValue="1500")]),
         "1500/1k, <unknown>/30 (avg) + 1 more..."),
])
def test_horizontal_pod_autoscaler_targets(item: dict[str, Any], targets: str) -> None:
    assert cells("HorizontalPodAutoscaler", item, "autoscaling", "v2") == [
        "web", "Deployment/web", targets, "<unset>", 10, 2, "5m"]


def test_an_autoscaling_v1_autoscaler_prints_its_cpu_target_like_v2() -> None:
    item = obj("web", spec={"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1,
                            "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
               status={"currentReplicas": 1, "currentCPUUtilizationPercentage": 12})
    assert cells("HorizontalPodAutoscaler", item, "autoscaling", "v1") == [
        "web", "Deployment/web", "cpu: 12%/50%", "1", 5, 1, "5m"]


# --- networking, policy, scheduling, coordination, rbac, apiextensions ---------------------------------

NETWORKING = "networking.k8s.io"


@pytest.mark.parametrize(("spec", "status", "expected"), [
    case("an ingress without hosts matches any", {"rules": [{"http": {}}]}, {}, ["<none>", "*", "", "80"]),
    case("an ingress with TLS serves 443 too",
         {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example"]}],
          "rules": [{"host": "a.example"}, {"host": "b.example"}]},
         {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}},
         ["nginx", "a.example,b.example", "5.6.7.8", "80, 443"]),
    case("past three hosts the remaining rules are counted",
         {"rules": [{}, {"host": "a"}, {"host": "b"}, {"host": "c"}, {"host": "d"}]}, {},
         ["<none>", "a,b,c + 2 more...", "", "80"]),
])
def test_ingress_cells(spec: dict[str, Any], status: dict[str, Any], expected: list[str]) -> None:
    item = obj("web", spec=spec, status=status)
    assert cells("Ingress", item, NETWORKING) == ["web", *expected, "5m"]


RBAC = "rbac.authorization.k8s.io"
SUBJECTS = [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
            {"kind": "User", "name": "bob"}, {"kind": "ServiceAccount", "namespace": "ci", "name": "runner"}]


@pytest.mark.parametrize(("kind", "group", "item", "expected"), [
    case("a network policy selecting every pod shows none",
         "NetworkPolicy", NETWORKING, obj("deny", spec={"podSelector": {}}), ["deny", "<none>", "5m"]),
    case("a network policy shows its pod selector",
         "NetworkPolicy", NETWORKING, obj("db", spec={"podSelector": {"matchLabels": {"app": "db"}}}),
         ["db", "app=db", "5m"]),
    case("a disruption budget shows the bound it sets",
         "PodDisruptionBudget", "policy",
         obj("pdb", spec={"minAvailable": "50%"}, status={"disruptionsAllowed": 1}),
         ["pdb", "50%", "N/A", 1, "5m"]),
    case("a disruption budget with an integer bound",
         "PodDisruptionBudget", "policy", obj("pdb", spec={"maxUnavailable": 1}),
         ["pdb", "N/A", "1", 0, "5m"]),
    case("a priority class sends its value and default as typed",
         "PriorityClass", "scheduling.k8s.io",
         obj("high", value=1000, globalDefault=True, preemptionPolicy="Never"),
         ["high", 1000, True, "5m", "Never"]),
    case("a priority class without a policy",
         "PriorityClass", "scheduling.k8s.io", obj("low", value=-5), ["low", -5, False, "5m", ""]),
    case("a held lease shows its holder",
         "Lease", "coordination.k8s.io", obj("kube-scheduler", spec={"holderIdentity": "host_1"}),
         ["kube-scheduler", "host_1", "5m"]),
    case("an unheld lease shows an empty holder",
         "Lease", "coordination.k8s.io", obj("free", spec={}), ["free", "", "5m"]),
    case("a role binding lists subjects by kind",
         "RoleBinding", RBAC, obj("rb", roleRef={"kind": "ClusterRole", "name": "view"}, subjects=SUBJECTS),
         ["rb", "ClusterRole/view", "5m", "alice, bob", "devs", "ci/runner"]),
    case("a cluster role binding without subjects",
         "ClusterRoleBinding", RBAC, obj("crb", roleRef={"kind": "ClusterRole", "name": "admin"}),
         ["crb", "ClusterRole/admin", "5m", "", "", ""]),
    case("a role has no printer and shows its creation time",
         "Role", RBAC, obj("r", created="2026-11-21T09:30:00Z"), ["r", "2026-11-21T09:30:00Z"]),
    case("a custom resource definition shows its creation time in RFC 3339",
         "CustomResourceDefinition", "apiextensions.k8s.io",
         obj("crontabs.stable.example.com", created="2026-11-21T09:30:00.5+00:00"),
         ["crontabs.stable.example.com", "2026-11-21T09:30:00Z"]),
])
def test_other_group_cells(kind: str, group: str, item: dict[str, Any], expected: list[Any]) -> None:
    assert cells(kind, item, group) == expected


def test_kinds_without_printers_declare_name_and_created_at() -> None:
    columns = column_definitions(resource("ClusterRole", RBAC))
    assert [(c["name"], c["type"], c["format"], c["priority"]) for c in columns] == [
        ("Name", "string", "name", 0), ("Created At", "date", "", 0)]


@pytest.mark.parametrize("res", [case(f"{r.plural}.{r.group or 'core'}/{r.version}", r) for r in RESOURCES])
def test_every_kind_fills_one_cell_per_column(res: Resource) -> None:
    columns = column_definitions(res)
    assert len(row_cells(res, obj("x"), NOW)) == len(columns)
    assert columns[[c["name"] for c in columns].index("Name")]["format"] == "name"
    for column in columns:
        assert set(column) == {"name", "type", "format", "description", "priority"}
        assert column["description"]


# --- whole Tables ---------------------------------------------------------------------------------------


def partial(item: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": item["metadata"]}


def test_a_list_table_carries_list_metadata_columns_and_partial_object_metadata() -> None:
    item = pod(statuses=(running(),), conditions=READY_POD)
    table = build_table(resource("Pod"), [item], list_rv="1008", continue_token="tok", remaining=3, now=NOW)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "1008", "continue": "tok", "remainingItemCount": 3}
    assert [c["name"] for c in table["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]
    assert table["rows"] == [{
        "cells": ["web-1", "1/1", "Running", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
        "object": partial(item)}]


CONFIG_MAP = obj("cm", data={"k": "v"})


@pytest.mark.parametrize(("include_object", "embedded"), [
    case("includeObject=Metadata embeds partial object metadata", "Metadata", partial(CONFIG_MAP)),
    case("an empty includeObject means Metadata", "", partial(CONFIG_MAP)),
    case("includeObject=Object embeds the whole object with its type meta",
         "Object", {"kind": "ConfigMap", "apiVersion": "v1", **CONFIG_MAP}),
    case("includeObject=None embeds nothing", "None", None),
])
def test_include_object_policies(include_object: Any, embedded: dict[str, Any] | None) -> None:
    table = build_table(resource("ConfigMap"), [CONFIG_MAP], list_rv="7", include_object=include_object,
                        now=NOW)
    assert table["rows"][0].get("object") == embedded


def test_an_unknown_include_object_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="includeObject"):
        build_table(resource("Pod"), [], list_rv=None,
                    include_object="All", now=NOW)  # type: ignore[arg-type]


def test_a_watch_event_table_after_the_first_omits_columns_and_unset_list_metadata() -> None:
    table = build_table(resource("Pod"), [pod()], list_rv="1010", now=NOW, with_columns=False)
    assert table["columnDefinitions"] == [] and table["metadata"] == {"resourceVersion": "1010"}
    assert len(table["rows"]) == 1


def test_an_empty_list_still_declares_its_columns() -> None:
    table = build_table(resource("Deployment", "apps"), [], list_rv=None, now=NOW)
    assert table["metadata"] == {} and table["rows"] == [] and len(table["columnDefinitions"]) == 8

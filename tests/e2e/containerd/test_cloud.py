"""The cloud-controller-manager end to end: `mkpy up` runs `mkpy ccm` with the `local` cloud, whose VMs are the
cluster's two containerd nodes and whose load balancers are TCP proxies on 127.x.y.N addresses of this host.

Everything is real: kubectl creates the objects, the CCM initializes the nodes and gives LoadBalancer Services
an EXTERNAL-IP, the real `curl` goes through that address to busybox httpd pods, and `mkpy cloud instance
stop|terminate` shuts a node's VM down (its kubelet and containerd stop) for the node-lifecycle controllers to
notice. The module has a cluster of its own (it terminates a node), and its tests build on each other in file
order: reading first, then load balancers, then the CCM killed and stopped, then the worker's VM stopped and
terminated, then the mistakes left to make, and last a look at the CCM's log and the audit log for any request
its ClusterRole did not allow.

The KCM runs with `--node-monitor-grace-period=20s` (kube: 50 s), so a silent node goes NotReady in about
25 s (grace + the 5 s monitor period). That cannot flap: the kubelet renews its node Lease every 10 s (a
quarter of its 40 s duration, no flag), so a live node is never more than ~10 s behind, half the grace.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from minikube_py.kubelet.runtime.containerd import available
from tests.e2e.conftest import (
    KubeCluster,
    Mkpy,
    Result,
    apply_object,
    namespace_manifest,
    rollout_status,
    run,
    unique,
    wait_until,
)

pytestmark = pytest.mark.e2e

CLUSTER = "cloud"  # also the name of its first node
WORKER = "cloud-m02"  # the node whose VM is stopped, started and terminated
GHOST = "cloud-ghost"  # a Node made by hand, with no VM of the cloud behind it
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown"
FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
NODE_DOWN_TIMEOUT = 60  # seconds: grace 20 s + monitor period 5 s + the CCM's 5 s pass, with slack
CCM_LEASE_TIMEOUT = 40  # seconds: a killed CCM keeps its Lease (15 s) until it expires; the next one waits
CCM_START_TIMEOUT = 10  # seconds from `mkpy up` restarting the CCM to its load balancers serving again
CCM_USER = "system:cloud-controller-manager"
WEB_SCRIPT = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"


# the cluster ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cloud(mkpy: Mkpy) -> Iterator[KubeCluster]:
    can_run, why = available()
    assert can_run, f"these tests need containerd: {why}"
    try:
        yield mkpy.up(CLUSTER, "--nodes", "2", "--no-switch-context",
                      "--extra-config", "kcm.node-monitor-grace-period=20s")
    finally:
        mkpy.delete(CLUSTER)


@pytest.fixture(scope="module")
def cloud_ns(cloud: KubeCluster) -> str:
    name = unique("cloud")
    cloud.apply_manifest(namespace_manifest(name))
    return name


@pytest.fixture(scope="module")
def web(cloud: KubeCluster, cloud_ns: str) -> str:
    """The Deployment `web` in `cloud_ns`: busybox httpd pods answering with their own name, spread over the
    nodes (DoNotSchedule, max skew 1), so each node runs one of the first two."""
    labels = {"app": "web"}
    container = {"name": "httpd", "image": "busybox", "command": ["sh", "-c", WEB_SCRIPT],
                 "ports": [{"containerPort": 8080}],
                 "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}
    spread = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchLabels": labels}}
    apply_object(cloud, cloud_ns, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": labels},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"terminationGracePeriodSeconds": 1, "topologySpreadConstraints": [spread],
                     "containers": [container]}}}})
    rollout_status(cloud, "deployment/web", cloud_ns)
    return "web"


# helpers ----------------------------------------------------------------------------------------------


def curl(cluster: KubeCluster, address: str) -> Result:
    """The real curl: GET http://ADDRESS:80/ (exit code 7 when nothing listens there)."""
    return run(["curl", "-sS", "--max-time", "10", f"http://{address}:80/"], env=cluster.env, check=False,
               timeout=20)


def refused(cluster: KubeCluster, address: str) -> bool:
    return curl(cluster, address).returncode == 7


def answered_by(cluster: KubeCluster, address: str, wanted: set[str], timeout: float = 30) -> set[str]:
    """Curl ADDRESS until every pod named in `wanted` has answered (round-robin gets there in a few tries);
    the names of all the pods that answered."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while not wanted <= seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"curl http://{address}/ reached {sorted(seen)} in {timeout:.0f}s, "
                                 f"not all of {sorted(wanted)}")
        answer = curl(cluster, address)
        if answer.returncode == 0:
            seen.add(answer.stdout.strip())
    return seen


def ready_pods(cluster: KubeCluster, ns: str) -> dict[str, dict[str, Any]]:
    """The web pods that are Ready and not being deleted, by name."""
    found = cluster.kubectl_json("get", "pods", "-n", ns, "-l", "app=web")["items"]
    return {p["metadata"]["name"]: p for p in found
            if not p["metadata"].get("deletionTimestamp")
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])}


def expose(cluster: KubeCluster, ns: str, service: str) -> None:
    """`kubectl expose deployment web --type=LoadBalancer`, as the lab does."""
    cluster.kubectl("expose", "deployment", "web", "-n", ns, f"--name={service}", "--type=LoadBalancer",
                    "--port=80", "--target-port=8080")


def ingress(cluster: KubeCluster, ns: str, service: str) -> list[dict[str, Any]]:
    svc = cluster.kubectl_json("get", "svc", service, "-n", ns)
    return list(((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [])


def finalizers(cluster: KubeCluster, ns: str, service: str) -> list[str]:
    return list(cluster.kubectl_json("get", "svc", service, "-n", ns)["metadata"].get("finalizers") or [])


def external_ip_column(cluster: KubeCluster, ns: str, service: str) -> str:
    """EXTERNAL-IP of `kubectl get svc` (NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE)."""
    return cluster.kubectl("get", "svc", service, "-n", ns, "--no-headers").stdout.split()[3]


def wait_external_ip(cluster: KubeCluster, ns: str, service: str, timeout: float = 30) -> str:
    """The EXTERNAL-IP `kubectl get svc` shows once it is no longer <pending>, checked against the status."""
    shown = wait_until(lambda: (ip := external_ip_column(cluster, ns, service)) != "<pending>" and ip,
                       f"an EXTERNAL-IP for service {service}", timeout=timeout)
    assert [entry["ip"] for entry in ingress(cluster, ns, service)] == [shown]
    return str(shown)


def cloud_table(cluster: KubeCluster, what: str) -> list[dict[str, str]]:
    """`mkpy cloud instances|lbs|routes` as rows of {column: cell} (no cell holds a space)."""
    lines = cluster.mkpy("cloud", what, "--name", cluster.name).stdout.splitlines()
    if lines[0].startswith("no "):  # 'no load balancers in the cloud of cluster "cloud"'
        return []
    header = lines[0].split()
    return [dict(zip(header, line.split(), strict=True)) for line in lines[1:]]


def instance_state(cluster: KubeCluster, name: str) -> str:
    return next(row["STATE"] for row in cloud_table(cluster, "instances") if row["NAME"] == name)


def load_balancer_network(cluster: KubeCluster) -> ipaddress.IPv4Network:
    config = yaml.safe_load((cluster.dir / "cloud" / "cloud-config.yaml").read_text())
    return ipaddress.IPv4Network(config["loadBalancerCIDR"])


def logged_at(log: str, message: str) -> datetime:
    """When a component first logged `message` (its lines start with the local time, as Python's logging
    writes it: `2024-05-01 12:00:00,123 I ...`)."""
    line = next(line for line in log.splitlines() if message in line)
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")


def events(cluster: KubeCluster, ns: str, kind: str, name: str, reason: str | None = None) -> list[dict[str, Any]]:
    """Events about one object (a Node's are in "default"), those with `reason` if given."""
    found = cluster.kubectl_json("get", "events", "-n", ns, "--field-selector",
                                 f"involvedObject.kind={kind},involvedObject.name={name}")["items"]
    return [e for e in found if reason is None or e["reason"] == reason]


def reasons(cluster: KubeCluster, ns: str, kind: str, name: str) -> set[str]:
    return {e["reason"] for e in events(cluster, ns, kind, name)}


def node(cluster: KubeCluster, name: str) -> dict[str, Any]:
    """The Node, or {} when there is none."""
    found = cluster.kubectl("get", "node", name, "-o", "json", "--ignore-not-found").stdout
    return yaml.safe_load(found) if found.strip() else {}


def condition(node_obj: dict[str, Any], kind: str) -> dict[str, Any]:
    conditions = (node_obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), {})


def ready(node_obj: dict[str, Any]) -> str:
    return str(condition(node_obj, "Ready").get("status", "Unknown"))


def route_created(node_obj: dict[str, Any]) -> bool:
    network = condition(node_obj, "NetworkUnavailable")
    return (network.get("status"), network.get("reason")) == ("False", "RouteCreated")


def taints(node_obj: dict[str, Any]) -> dict[str, str]:
    """The node's taints, key → effect."""
    return {t["key"]: t["effect"] for t in (node_obj.get("spec") or {}).get("taints") or []}


# 1. nodes initialized ---------------------------------------------------------------------------------


def test_nodes_are_initialized_from_the_cloud(cloud: KubeCluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in cloud.kubectl_json("get", "nodes")["items"]}
    assert sorted(nodes) == [CLUSTER, WORKER]
    for name, found in nodes.items():
        labels = found["metadata"]["labels"]
        assert found["spec"]["providerID"] == f"local://{CLUSTER}/{name}"
        assert labels["node.kubernetes.io/instance-type"] == "local.standard"
        assert labels["beta.kubernetes.io/instance-type"] == "local.standard"
        assert labels["topology.kubernetes.io/region"] == "local"
        assert labels["failure-domain.beta.kubernetes.io/region"] == "local"
        assert labels["failure-domain.beta.kubernetes.io/zone"] == labels["topology.kubernetes.io/zone"]
        assert UNINITIALIZED not in taints(found)
        assert {"type": "Hostname", "address": name} in found["status"]["addresses"]
        assert "Synced" in reasons(cloud, "default", "Node", name)
    zones = {name: found["metadata"]["labels"]["topology.kubernetes.io/zone"] for name, found in nodes.items()}
    assert sorted(zones.values()) == ["local-a", "local-b"]  # VMs fill the zones in turn
    # the route controller's pass may come a moment after `mkpy up` returned
    wait_until(lambda: all(route_created(node(cloud, name)) for name in nodes),
               "NetworkUnavailable=False (RouteCreated) on both nodes")

    instances = cloud_table(cloud, "instances")
    assert [(r["NAME"], r["PROVIDER-ID"], r["TYPE"], r["ZONE"], r["REGION"], r["STATE"]) for r in instances] == [
        (name, f"local://{CLUSTER}/{name}", "local.standard", zones[name], "local", "running")
        for name in sorted(nodes)]
    routes = cloud_table(cloud, "routes")
    assert sorted((r["NODE"], r["CIDR"]) for r in routes) == sorted(
        (name, found["spec"]["podCIDR"]) for name, found in nodes.items())


# 2. load balancers ------------------------------------------------------------------------------------


def test_load_balancer_carries_traffic_follows_scaling_and_is_released(cloud: KubeCluster, cloud_ns: str,
                                                                       web: str) -> None:
    network = load_balancer_network(cloud)
    expose(cloud, cloud_ns, "web")
    address = wait_external_ip(cloud, cloud_ns, "web")
    assert ipaddress.IPv4Address(address) in network
    first = ready_pods(cloud, cloud_ns)
    assert {p["spec"]["nodeName"] for p in first.values()} == {CLUSTER, WORKER}  # the spread constraint
    assert answered_by(cloud, address, set(first)) == set(first)  # both nodes' pods, through one address
    assert FINALIZER in finalizers(cloud, cloud_ns, "web")
    assert {"EnsuringLoadBalancer", "EnsuredLoadBalancer"} <= reasons(cloud, cloud_ns, "Service", "web")
    [record] = cloud_table(cloud, "lbs")
    assert (record["SERVICE"], record["ADDRESS"], record["PORTS"]) == (f"{cloud_ns}/web", address, "80/TCP")
    assert set(record["BACKENDS"].split(",")) == {f"{p['status']['podIP']}:8080" for p in first.values()}

    # scaling: the endpoints change, and so do the proxy's backends, with the same load balancer
    cloud.kubectl("scale", "deployment/web", "-n", cloud_ns, "--replicas=3")
    rollout_status(cloud, "deployment/web", cloud_ns)
    third = wait_until(lambda: len(now := ready_pods(cloud, cloud_ns)) == 3 and now, "3 ready web pods")
    backends = {f"{p['status']['podIP']}:8080" for p in third.values()}
    wait_until(lambda: set(cloud_table(cloud, "lbs")[0]["BACKENDS"].split(",")) == backends,
               "the 3 pods as the backends in `mkpy cloud lbs`")
    answered_by(cloud, address, set(third) - set(first))
    assert cloud_table(cloud, "lbs")[0]["ADDRESS"] == address

    # a second Service asking for an address (a free one: the cloud hands addresses out from the bottom of
    # its network); deleting the Service releases it
    wanted = str(network[200])
    apply_object(cloud, cloud_ns, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "pinned"},
        "spec": {"type": "LoadBalancer", "loadBalancerIP": wanted, "selector": {"app": "web"},
                 "ports": [{"port": 80, "targetPort": 8080}]}})
    assert wait_external_ip(cloud, cloud_ns, "pinned") == wanted
    assert curl(cloud, wanted).stdout.strip() in third
    assert sorted(r["ADDRESS"] for r in cloud_table(cloud, "lbs")) == sorted([address, wanted])
    cloud.kubectl("delete", "svc", "pinned", "-n", cloud_ns, "--wait=true")  # waits for the finalizer
    assert refused(cloud, wanted)
    assert [r["SERVICE"] for r in cloud_table(cloud, "lbs")] == [f"{cloud_ns}/web"]
    assert {"DeletingLoadBalancer", "DeletedLoadBalancer"} <= reasons(cloud, cloud_ns, "Service", "pinned")

    # LoadBalancer → ClusterIP: the load balancer goes, then the finalizer and the ingress
    cloud.kubectl("patch", "svc", "web", "-n", cloud_ns, "-p", '{"spec":{"type":"ClusterIP"}}')
    wait_until(lambda: FINALIZER not in finalizers(cloud, cloud_ns, "web") and not ingress(cloud, cloud_ns, "web"),
               "the finalizer and the ingress gone from service web")
    assert cloud_table(cloud, "lbs") == []
    assert refused(cloud, address)
    assert {"DeletingLoadBalancer", "DeletedLoadBalancer"} <= reasons(cloud, cloud_ns, "Service", "web")
    assert external_ip_column(cloud, cloud_ns, "web") == "<none>"


# 3. the CCM killed ------------------------------------------------------------------------------------


def test_a_killed_ccm_adopts_its_load_balancers_when_it_comes_back(cloud: KubeCluster, cloud_ns: str,
                                                                   web: str) -> None:
    expose(cloud, cloud_ns, "front")  # it stays for the tests below
    address = wait_external_ip(cloud, cloud_ns, "front")
    answered_by(cloud, address, set(ready_pods(cloud, cloud_ns)))
    [before] = cloud_table(cloud, "lbs")

    os.kill(int((cloud.dir / "run" / "ccm.pid").read_text()), signal.SIGKILL)
    # the listeners lived in the CCM's process: nothing answers while it is down
    wait_until(lambda: refused(cloud, address), "the load balancer's address to refuse connections")
    cloud.mkpy("up", "--name", CLUSTER, "--no-switch-context")
    # the new CCM serves the recorded load balancer as soon as it starts, while it still waits for the dead
    # one's Lease to expire (15 s) before it leads; then it adopts it without closing the listener
    wait_until(lambda: curl(cloud, address).returncode == 0, "the same address to answer again",
               timeout=CCM_START_TIMEOUT)
    answered_at = datetime.now()
    log = cloud.dir / "logs" / "ccm.log"
    wait_until(lambda: "adopted 1 load balancer(s)" in log.read_text().rsplit("starting ccm:", 1)[1],
               "the restarted CCM's log to say it adopted the load balancer", timeout=CCM_LEASE_TIMEOUT)
    restarted = log.read_text().rsplit("starting ccm:", 1)[1]
    assert "serving 1 recorded load balancer(s) before leading" in restarted
    assert answered_at < logged_at(restarted, "initialized cloud provider local"), "traffic was back before it led"
    assert cloud_table(cloud, "lbs") == [before]  # the same record: name, address, ports, backends
    assert [entry["ip"] for entry in ingress(cloud, cloud_ns, "front")] == [address]
    answered_by(cloud, address, set(ready_pods(cloud, cloud_ns)))


# 4. the CCM stopped: the chicken-and-egg case ---------------------------------------------------------


def ghost_node() -> dict[str, Any]:
    """A Node as a kubelet with --cloud-provider=external registers it: tainted, Ready, no providerID."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    offers = {"cpu": "2", "memory": "2Gi", "pods": "110"}
    ready_now = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": GHOST, "labels": {"kubernetes.io/hostname": GHOST, "kubernetes.io/os": "linux"}},
            "spec": {"taints": [{"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"}]},
            "status": {"capacity": offers, "allocatable": offers, "conditions": [ready_now]}}


def test_without_the_ccm_services_stay_pending_and_new_nodes_tainted(cloud: KubeCluster, cloud_ns: str,
                                                                      web: str) -> None:
    front = ingress(cloud, cloud_ns, "front")[0]["ip"]
    cloud.mkpy("up", "--name", CLUSTER, "--no-switch-context", "--without", "ccm")
    assert refused(cloud, front)  # the local cloud's load balancers live in the CCM's process
    expose(cloud, cloud_ns, "late")
    cloud.kubectl("create", "-f", "-", input=yaml.safe_dump(ghost_node()))
    try:
        apply_object(cloud, cloud_ns, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-ghost"},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": GHOST},
                     "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}})
        failed = wait_until(lambda: events(cloud, cloud_ns, "Pod", "on-ghost", "FailedScheduling"),
                            "the pod's FailedScheduling event")
        assert f"untolerated taint {{{UNINITIALIZED}: true}}" in failed[0]["message"]
        time.sleep(5)  # a running CCM would have served "late" within this time, several times over
        assert external_ip_column(cloud, cloud_ns, "late") == "<pending>"
        assert ingress(cloud, cloud_ns, "late") == [] and FINALIZER not in finalizers(cloud, cloud_ns, "late")
        assert cloud.kubectl_json("get", "pod", "on-ghost", "-n", cloud_ns)["status"]["phase"] == "Pending"
        assert UNINITIALIZED in taints(node(cloud, GHOST))

        cloud.mkpy("up", "--name", CLUSTER, "--no-switch-context")  # the CCM is back (it had left its Lease)
        late = wait_external_ip(cloud, cloud_ns, "late")
        assert late != front
        answered_by(cloud, late, set(ready_pods(cloud, cloud_ns)))
        assert curl(cloud, front).returncode == 0
        # The hand-made Node has no VM in the cloud, so the cloud-node controller cannot initialize it: it
        # reports FailedToInitializeNode and keeps the taint (no providerID, no zone) while it retries.
        failure = wait_until(lambda: events(cloud, "default", "Node", GHOST, "FailedToInitializeNode"),
                             "the event FailedToInitializeNode")
        assert f"failed to get instance metadata for node {GHOST}" in failure[0]["message"]
        ghost = node(cloud, GHOST)
        assert UNINITIALIZED in taints(ghost) and not ghost["spec"].get("providerID")
        assert "topology.kubernetes.io/zone" not in ghost["metadata"]["labels"]
        # Nothing renews its Lease: after the KCM's grace period it is NotReady, and the cloud-node-lifecycle
        # controller, told by the cloud that no such instance exists, deletes it.
        wait_until(lambda: not node(cloud, GHOST), "the Node without a VM deleted", timeout=NODE_DOWN_TIMEOUT)
        assert "DeletingNode" in reasons(cloud, "default", "Node", GHOST)
    finally:
        cloud.kubectl("delete", "node", GHOST, "--ignore-not-found")
        cloud.kubectl("delete", "pod", "on-ghost", "-n", cloud_ns, "--ignore-not-found", "--wait=false")
        cloud.kubectl("delete", "svc", "late", "-n", cloud_ns, "--ignore-not-found")


# 5. a VM stopped and started --------------------------------------------------------------------------


def test_a_stopped_instance_gets_the_shutdown_taint_until_it_is_started(cloud: KubeCluster, cloud_ns: str,
                                                                        web: str) -> None:
    front = ingress(cloud, cloud_ns, "front")[0]["ip"]
    on_first = {name for name, p in ready_pods(cloud, cloud_ns).items() if p["spec"]["nodeName"] == CLUSTER}
    cloud.mkpy("cloud", "instance", "stop", WORKER, "--name", CLUSTER)
    assert instance_state(cloud, WORKER) == "stopped"
    wait_until(lambda: ready(node(cloud, WORKER)) != "True", f"{WORKER} NotReady", timeout=NODE_DOWN_TIMEOUT)
    wait_until(lambda: SHUTDOWN in taints(node(cloud, WORKER)), "the shutdown taint", timeout=20)
    assert taints(node(cloud, WORKER))[SHUTDOWN] == "NoSchedule"
    # the load balancer's health check leaves the stopped node's pod out: only the other node's pods answer
    answers = [curl(cloud, front).stdout.strip() for _ in range(4)]
    assert set(answers) <= on_first, answers

    cloud.mkpy("cloud", "instance", "start", WORKER, "--name", CLUSTER)
    assert instance_state(cloud, WORKER) == "running"
    wait_until(lambda: ready(found := node(cloud, WORKER)) == "True" and SHUTDOWN not in taints(found),
               f"{WORKER} Ready again, without the shutdown taint", timeout=NODE_DOWN_TIMEOUT)


# 6. a VM terminated -----------------------------------------------------------------------------------


def test_a_terminated_instance_s_node_is_deleted_and_its_pods_move(cloud: KubeCluster, cloud_ns: str,
                                                                   web: str) -> None:
    # the worker's kubelet, started again, runs its pod again
    wait_until(lambda: len(ready_pods(cloud, cloud_ns)) == 3, "3 ready web pods", timeout=60)
    on_worker = {name for name, p in ready_pods(cloud, cloud_ns).items() if p["spec"]["nodeName"] == WORKER}
    assert on_worker, "the spread constraint put a web pod on the worker"
    cloud.mkpy("cloud", "instance", "terminate", WORKER, "--name", CLUSTER)
    assert instance_state(cloud, WORKER) == "terminated"
    wait_until(lambda: ready(node(cloud, WORKER)) != "True", f"{WORKER} NotReady", timeout=NODE_DOWN_TIMEOUT)
    wait_until(lambda: not node(cloud, WORKER), f"node {WORKER} deleted", timeout=30)
    deleting = {e["message"] for e in events(cloud, "default", "Node", WORKER, "DeletingNode")}
    assert deleting == {f"Deleting node {WORKER} because it does not exist in the cloud provider"}
    # the pod GC deletes the pods of a node gone for 40 s; their ReplicaSet makes new ones on the other node
    moved = wait_until(lambda: len(now := ready_pods(cloud, cloud_ns)) == 3 and not on_worker & set(now) and now,
                       "3 ready web pods, none of them the worker's", timeout=120)
    assert {p["spec"]["nodeName"] for p in moved.values()} == {CLUSTER}
    assert [n["metadata"]["name"] for n in cloud.kubectl_json("get", "nodes")["items"]] == [CLUSTER]
    assert answered_by(cloud, ingress(cloud, cloud_ns, "front")[0]["ip"], set(moved)) == set(moved)


# 7. mistakes ------------------------------------------------------------------------------------------


def one_line_error(result: Result) -> str:
    assert result.returncode != 0, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.describe()
    return lines[0]


def test_mistakes_are_one_line_errors(cloud: KubeCluster, tmp_path: Path) -> None:
    started = cloud.mkpy("cloud", "instance", "start", WORKER, "--name", CLUSTER, check=False)
    assert one_line_error(started) == f"Error: cannot start instance {WORKER}: it is terminated"
    unknown = one_line_error(cloud.mkpy("ccm", "--cloud-provider", "nope", check=False))
    assert "'nope'" in unknown and "available: local, fake" in unknown
    bad = tmp_path / "cloud-config.yaml"
    bad.write_text("clusterName: [cloud\nstateFile: /nowhere\n")
    config = cloud.mkpy("ccm", "--cloud-provider", "local", "--cloud-config", str(bad), check=False)
    assert one_line_error(config).startswith("Error: cloud config is not YAML: ")


# 8. RBAC: the CCM's role was enough -------------------------------------------------------------------


def test_the_ccm_was_never_forbidden_anything(cloud: KubeCluster) -> None:
    """Everything above ran as system:cloud-controller-manager with only its ClusterRole: no request of the
    CCM was refused, by the apiserver's audit log (every request, at Metadata level), and nothing in its own
    log says Forbidden."""
    logs = cloud.dir / "logs"
    codes: dict[int, list[str]] = {}
    with (logs / "audit.log").open(encoding="utf-8") as audit:
        for line in audit:
            if CCM_USER in line and '"responseStatus"' in line:
                event = json.loads(line)
                if event["user"].get("username") == CCM_USER:
                    code = event["responseStatus"].get("code", 0)
                    codes.setdefault(code, []).append(f"{event['verb']} {event['requestURI']}")
    assert codes.get(200), "the audit log holds the CCM's requests"
    assert codes.get(403, []) == []
    # the message of each line, after "<time> <level> <logger>]": a timestamp's milliseconds may read 403,
    # and so may a duration in a message ("after 403.991µs")
    forbidden = [line for line in (logs / "ccm.log").read_text().splitlines()
                 if re.search(r"forbidden|\b403\b(?![.\d]|[µm]?s\b)", line.split("] ", 1)[-1], re.IGNORECASE)]
    assert forbidden == []

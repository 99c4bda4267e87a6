"""Workloads end to end with the real kubectl against the controllers of `mkpy kcm`: Jobs and CronJobs,
Endpoints and EndpointSlices, deleting a Deployment with each cascade, deleting a namespace, and a node whose
kubelet stops (the node lifecycle and taint-eviction controllers).

The shared cluster with two simulated nodes runs the pods (`nodes_cluster`, tests/e2e/conftest.py). Their
fake runtime runs no processes: a container "exits" when its pod's annotations say so
(`fake.cri.mkpy.dev/run-seconds.<container>` and `exit-code.<container>`), which is how a Job's pods finish
here; without them a container runs forever. Rollouts and `--cascade` on ConfigMaps have their own modules
(test_rollout.py, test_statefulset_rollout.py, test_daemonset_rollout.py, test_cascade.py, test_drain.py).

The CronJob `tick` (schedule `* * * * *`) is created when the module starts and checked by its last test,
so waiting up to a minute for its first scheduled Job overlaps with the other tests.

The stopped-kubelet test needs a node monitor grace period shorter than 50 s, which `mkpy up` does not offer:
it runs its own control plane (tests/harness.py) with `mkpy kcm --node-monitor-grace-period=15s` (a live
kubelet renews its Lease every 10 s) and two simulated nodes (tests/kubelet/nodes.py).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import (
    KubeCluster,
    Mkpy,
    configmap_manifest,
    deployment_manifest,
    documents,
    namespace_manifest,
    service_manifest,
    unique,
    wait_until,
)
from tests.harness import ChildProcess, ControlPlane
from tests.kubelet.nodes import FakeNode

FAKE = "fake.cri.mkpy.dev/"
JOB_TIMEOUT = 45.0
CRON_TIMEOUT = 80.0  # the first minute boundary after the module started, plus the job's run
GRACE = 15  # --node-monitor-grace-period of the stopped-kubelet test: above the kubelets' 10 s Lease renewals


@pytest.fixture(scope="module")
def ns(nodes_cluster: KubeCluster) -> str:
    name = unique("work")
    nodes_cluster.apply_manifest(namespace_manifest(name))
    return name


@pytest.fixture(scope="module")
def tick(nodes_cluster: KubeCluster, ns: str) -> float:
    """The CronJob `tick`, every minute; returns when it was created (time.monotonic())."""
    nodes_cluster.apply_manifest(yaml.safe_dump({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": job_spec(run_seconds=1)}}}), ns)
    return time.monotonic()


def job_spec(run_seconds: float = 1, exit_code: int = 0, **spec: Any) -> dict[str, Any]:
    """A Job's spec whose one container `main` exits with `exit_code` after `run_seconds` on the fake runtime."""
    annotations = {f"{FAKE}run-seconds.main": str(run_seconds), f"{FAKE}exit-code.main": str(exit_code)}
    return {**spec, "template": {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "echo done"]}]}}}


def job(name: str, **spec: Any) -> str:
    return yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                           "spec": job_spec(**spec)})


def table_row(cluster: KubeCluster, ns: str, *args: str) -> list[str]:
    """The one row of `kubectl get ARGS --no-headers`, split into columns."""
    (row,) = cluster.kubectl("get", *args, "-n", ns, "--no-headers").stdout.splitlines()
    return row.split()


def wait_condition(cluster: KubeCluster, ns: str, what: str, condition: str) -> None:
    cluster.kubectl("wait", "-n", ns, f"--for=condition={condition}", what, f"--timeout={JOB_TIMEOUT:.0f}s",
                    timeout=JOB_TIMEOUT + 10)


def pods_of(cluster: KubeCluster, ns: str, selector: str) -> list[dict[str, Any]]:
    return list(cluster.kubectl_json("get", "pods", "-n", ns, "-l", selector)["items"])


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def seconds(timestamp: str) -> float:
    return time.mktime(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))


# Jobs and CronJobs ------------------------------------------------------------------------------------


def test_a_job_runs_its_pods_to_completion(nodes_cluster: KubeCluster, ns: str, tick: float) -> None:
    cluster = nodes_cluster
    cluster.apply_manifest(job("count", completions=3, parallelism=2), ns)
    wait_condition(cluster, ns, "job/count", "complete")

    name, status, completions, duration, _age = table_row(cluster, ns, "job", "count")
    assert (name, status, completions) == ("count", "Complete", "3/3")
    assert re.fullmatch(r"\d+s", duration), duration
    header = cluster.kubectl("get", "jobs", "-n", ns).stdout.splitlines()[0].split()
    assert header == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]

    found = cluster.kubectl_json("get", "job", "count", "-n", ns)
    assert found["status"]["succeeded"] == 3 and not found["status"].get("active")
    assert {"SuccessCriteriaMet", "Complete"} <= set(conditions(found))
    assert found["status"]["completionTime"] >= found["status"]["startTime"]
    pods = pods_of(cluster, ns, "batch.kubernetes.io/job-name=count")
    assert len(pods) == 3 and {p["status"]["phase"] for p in pods} == {"Succeeded"}
    assert all(not p["metadata"].get("finalizers") for p in pods)  # batch.kubernetes.io/job-tracking removed
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods} == {found["metadata"]["uid"]}


def test_a_job_whose_pods_keep_failing_fails_at_its_backoff_limit(nodes_cluster: KubeCluster, ns: str) -> None:
    cluster = nodes_cluster
    cluster.apply_manifest(job("fail", exit_code=1, run_seconds=0.2, backoffLimit=1), ns)
    wait_condition(cluster, ns, "job/fail", "failed")

    assert table_row(cluster, ns, "job", "fail")[:3] == ["fail", "Failed", "0/1"]
    found = cluster.kubectl_json("get", "job", "fail", "-n", ns)
    failed = conditions(found)["Failed"]
    assert (failed["reason"], failed["message"]) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert found["status"]["failed"] == 2 and not found["status"].get("succeeded")
    pods = pods_of(cluster, ns, "batch.kubernetes.io/job-name=fail")
    assert len(pods) == 2 and {p["status"]["phase"] for p in pods} == {"Failed"}
    reasons = cluster.kubectl("get", "events", "-n", ns, "--field-selector=involvedObject.name=fail").stdout
    assert "BackoffLimitExceeded" in reasons


def test_create_job_from_a_cron_job(nodes_cluster: KubeCluster, ns: str, tick: float) -> None:
    cluster = nodes_cluster
    created = cluster.kubectl("create", "job", "by-hand", "--from=cronjob/tick", "-n", ns).stdout
    assert "job.batch/by-hand created" in created
    wait_condition(cluster, ns, "job/by-hand", "complete")
    found = cluster.kubectl_json("get", "job", "by-hand", "-n", ns)
    assert found["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    cron = cluster.kubectl_json("get", "cronjob", "tick", "-n", ns)
    (owner,) = found["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("CronJob", "tick", cron["metadata"]["uid"])
    assert table_row(cluster, ns, "job", "by-hand")[1:3] == ["Complete", "1/1"]


# Services ---------------------------------------------------------------------------------------------


def test_endpoints_and_slices_list_the_ready_pods_a_service_selects(nodes_cluster: KubeCluster, ns: str) -> None:
    cluster = nodes_cluster
    never_ready = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "ep-unready", "labels": {"app": "ep"},
                                "annotations": {f"{FAKE}exec-exit-code.app": "1"}},
                   "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                       "name": "app", "image": "nginx:1.27",
                       "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}]}}
    cluster.apply_manifest(documents(deployment_manifest("ep", replicas=2), yaml.safe_dump(never_ready),
                                     service_manifest("ep", {"app": "ep"})), ns)

    def ips(ready: bool) -> set[str]:
        pods = pods_of(cluster, ns, "app=ep")
        return {p["status"]["podIP"] for p in pods if p["status"].get("podIP")
                and (conditions(p).get("Ready", {}).get("status") == "True") == ready}

    ready_ips = wait_until(lambda: len(ips(True)) == 2 and ips(True), "two ready pods", timeout=30)
    unready_ips = wait_until(lambda: ips(False), "the unready pod with an IP")

    def endpoints() -> dict[str, Any] | None:
        subsets = cluster.kubectl_json("get", "endpoints", "ep", "-n", ns).get("subsets") or []
        if len(subsets) != 1:
            return None
        subset = subsets[0]
        got = ({a["ip"] for a in subset.get("addresses") or []}, {a["ip"] for a in subset.get("notReadyAddresses") or []})
        return subset if got == (ready_ips, unready_ips) else None

    subset = wait_until(endpoints, "the Endpoints listing 2 ready and 1 unready address")
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert all(a["targetRef"]["kind"] == "Pod" for a in subset["addresses"])
    _, shown, _ = table_row(cluster, ns, "endpoints", "ep")
    assert set(shown.split(",")) == {f"{ip}:8080" for ip in ready_ips}

    def slice_() -> dict[str, Any] | None:
        slices = cluster.kubectl_json("get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=ep")["items"]
        if len(slices) != 1:
            return None
        readiness = {e["addresses"][0]: e["conditions"]["ready"] for e in slices[0].get("endpoints") or []}
        return slices[0] if readiness == dict.fromkeys(ready_ips, True) | dict.fromkeys(unready_ips, False) else None

    found = wait_until(slice_, "the EndpointSlice with all three pods, one not ready")
    assert found["addressType"] == "IPv4" and found["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    assert found["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    name, address_type, ports, shown_slice, _ = table_row(cluster, ns, "endpointslices", found["metadata"]["name"])
    assert (address_type, ports) == ("IPv4", "8080")
    assert set(shown_slice.split(",")) == ready_ips | unready_ips

    cluster.kubectl("scale", "deployment/ep", "--replicas=1", "-n", ns)
    wait_until(lambda: (e := cluster.kubectl_json("get", "endpoints", "ep", "-n", ns)["subsets"])
               and len(e[0].get("addresses") or []) == 1, "the Endpoints down to one ready address")


# deleting ---------------------------------------------------------------------------------------------


def web(cluster: KubeCluster, ns: str, replicas: int = 2) -> dict[str, Any]:
    """deployment/web rolled out; returns its ReplicaSet."""
    cluster.apply_manifest(deployment_manifest("web", replicas=replicas), ns)
    cluster.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=40s", timeout=50)
    (rs,) = cluster.kubectl_json("get", "rs", "-n", ns, "-l", "app=web")["items"]
    return dict(rs)


def test_deleting_a_deployment_with_orphan_cascade_keeps_its_replica_set_and_pods(nodes_cluster: KubeCluster) -> None:
    cluster = nodes_cluster
    ns = unique("orphan")
    cluster.apply_manifest(namespace_manifest(ns))
    rs = web(cluster, ns)
    pods_before = {p["metadata"]["uid"] for p in pods_of(cluster, ns, "app=web")}

    cluster.kubectl("delete", "deployment", "web", "-n", ns, "--cascade=orphan", "--timeout=30s")
    (left,) = cluster.kubectl_json("get", "rs", "-n", ns)["items"]
    assert left["metadata"]["uid"] == rs["metadata"]["uid"] and not left["metadata"].get("ownerReferences")
    pods = pods_of(cluster, ns, "app=web")
    assert {p["metadata"]["uid"] for p in pods} == pods_before  # the pods still belong to the ReplicaSet
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"] for p in pods)

    # the same Deployment again adopts the orphaned ReplicaSet (same template hash) instead of making pods
    adopted = web(cluster, ns)
    assert adopted["metadata"]["uid"] == rs["metadata"]["uid"]
    owner = cluster.kubectl_json("get", "deployment", "web", "-n", ns)["metadata"]["uid"]
    assert [o["uid"] for o in adopted["metadata"]["ownerReferences"]] == [owner]
    assert {p["metadata"]["uid"] for p in pods_of(cluster, ns, "app=web")} == pods_before


def test_deleting_a_deployment_in_the_foreground_waits_for_its_pods(nodes_cluster: KubeCluster) -> None:
    cluster = nodes_cluster
    ns = unique("fg")
    cluster.apply_manifest(namespace_manifest(ns))
    web(cluster, ns)
    deleted = cluster.kubectl("delete", "deployment", "web", "-n", ns, "--cascade=foreground", "--timeout=50s",
                              timeout=60)
    assert 'deployment.apps "web" deleted' in deleted.stdout
    # kubectl returned once the Deployment was gone, which the foreground deletion allows only after its
    # ReplicaSet, which waited for its pods (blockOwnerDeletion)
    assert cluster.kubectl_json("get", "rs,pods", "-n", ns)["items"] == []


def test_deleting_a_namespace_removes_everything_in_it(nodes_cluster: KubeCluster) -> None:
    cluster = nodes_cluster
    ns = unique("gone")
    cluster.apply_manifest(namespace_manifest(ns))
    cluster.apply_manifest(documents(configmap_manifest("settings", {"a": "1"}), configmap_manifest("more"),
                                     service_manifest("web", {"app": "web"})), ns)
    web(cluster, ns)

    cluster.kubectl("delete", "namespace", ns, "--wait=false")
    shown = cluster.kubectl("get", "namespace", ns, "--no-headers", check=False)
    assert shown.stdout.split()[1:2] == ["Terminating"] or "NotFound" in shown.stderr, shown.describe()
    wait_until(lambda: "NotFound" in cluster.kubectl("get", "namespace", ns, check=False).stderr,
               "the namespace gone", timeout=60, interval=0.5)
    kinds = "deployments,replicasets,pods,configmaps,services,endpoints,endpointslices,serviceaccounts,events"
    assert cluster.kubectl_json("get", kinds, "-n", ns)["items"] == []


# a stopped kubelet ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fast_node_monitor(mkpy: Mkpy) -> Iterator[tuple[KubeCluster, FakeNode]]:
    """A control plane whose controller manager gives up on a silent node after 15 s, and two simulated nodes;
    the test stops the first. (With every node silent the controller would blame its own network and taint
    nothing: kube's "master disruption mode".)"""
    cp = ControlPlane(controllers="").start()
    nodes: list[FakeNode] = []
    try:
        kubeconfig = cp.component_kubeconfig("controller-manager", user="system:kube-controller-manager")
        cp.kcm = ChildProcess([sys.executable, "-m", "minikube_py.cli.main", "kcm", f"--kubeconfig={kubeconfig}",
                               "--controllers=*", f"--root-ca-file={cp.ca_file}", "--leader-elect=false",
                               "--secure-port=0", "--node-monitor-period=1s",
                               f"--node-monitor-grace-period={GRACE}s"], cp.workdir / "kcm.log")
        nodes.append(FakeNode(cp, "sim-stop", "10.244.1.0/24"))
        nodes.append(FakeNode(cp, "sim-alive", "10.244.2.0/24"))
        with cp.client() as client:
            for node in nodes:
                node.wait_ready(client)
        yield KubeCluster("stopped-kubelet", cp.kubeconfig, mkpy), nodes[0]
    finally:
        for node in nodes:
            node.stop()
        cp.stop()


def test_a_stopped_kubelets_pods_are_evicted_after_their_toleration(
        fast_node_monitor: tuple[KubeCluster, FakeNode]) -> None:
    cluster, node = fast_node_monitor
    assert node.kubelet is not None
    ns = unique("stop")
    cluster.apply_manifest(namespace_manifest(ns))
    wait_until(lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", ns, check=False).returncode == 0,
               "the default ServiceAccount")

    def pod(name: str, tolerations: list[dict[str, Any]]) -> str:
        return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                               "spec": {"nodeName": node.name, "tolerations": tolerations,
                                        "terminationGracePeriodSeconds": 1,
                                        "containers": [{"name": "app", "image": "busybox",
                                                        "imagePullPolicy": "IfNotPresent"}]}})

    brief = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
              "tolerationSeconds": 5}]
    cluster.apply_manifest(documents(pod("brief", brief), pod("patient", [])), ns)

    def pods() -> dict[str, dict[str, Any]]:
        return {p["metadata"]["name"]: p for p in cluster.kubectl_json("get", "pods", "-n", ns)["items"]}

    wait_until(lambda: all(conditions(p).get("Ready", {}).get("status") == "True" for p in pods().values()),
               "both pods running and ready")
    patient_tolerations = pods()["patient"]["spec"]["tolerations"]  # from DefaultTolerationSeconds
    assert {(t["key"], t["tolerationSeconds"]) for t in patient_tolerations} == {
        ("node.kubernetes.io/not-ready", 300), ("node.kubernetes.io/unreachable", 300)}

    os.kill(node.kubelet.process.pid, signal.SIGSTOP)  # stopped, not gone: its connections stay open
    stopped = time.monotonic()
    try:
        def unreachable() -> dict[str, Any] | None:
            found = cluster.kubectl_json("get", "node", node.name)
            taints = {(t["key"], t["effect"]) for t in found["spec"].get("taints") or []}
            ready = conditions(found)["Ready"]
            return found if ready["status"] == "Unknown" and ("node.kubernetes.io/unreachable", "NoExecute") in taints \
                else None

        found = wait_until(unreachable, "the node Unknown and tainted unreachable", timeout=GRACE + 15, interval=0.2)
        ready = conditions(found)["Ready"]
        assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
        assert ("node.kubernetes.io/unreachable", "NoSchedule") in {
            (t["key"], t["effect"]) for t in found["spec"]["taints"]}
        shown = cluster.kubectl("get", "node", node.name, "--no-headers").stdout.split()
        assert shown[1] == "NotReady"
        wait_until(lambda: all(conditions(p)["Ready"]["status"] == "False" for p in pods().values()),
                   "the pods marked not ready")

        evicted = wait_until(lambda: pods()["brief"]["metadata"].get("deletionTimestamp") and pods()["brief"],
                             "the pod tolerating 5 s to be deleted", timeout=20, interval=0.2)
        assert time.monotonic() - stopped >= 5
        tainted_at = next(t["timeAdded"] for t in found["spec"]["taints"] if t["effect"] == "NoExecute")
        disruption = conditions(evicted)["DisruptionTarget"]
        assert disruption["reason"] == "DeletionByTaintManager"
        assert seconds(disruption["lastTransitionTime"]) - seconds(tainted_at) >= 5  # tolerated for 5 s
        assert not pods()["patient"]["metadata"].get("deletionTimestamp")  # 300 s to go
        wait_until(lambda: f"Marking for deletion Pod {ns}/brief" in cluster.kubectl(
            "get", "events", "-n", ns, "--field-selector=reason=TaintManagerEviction").stdout, "the eviction's event")
    finally:
        os.kill(node.kubelet.process.pid, signal.SIGCONT)

    # back: the kubelet reports Ready again at its next status tick (1 s here), although its own last report
    # said Ready already and nothing else changed (the pods' image was there from the start: no new entry in the
    # Node's images); the taints go, the evicted pod's deletion is finished, the patient pod stays.
    resumed = time.monotonic()
    wait_until(lambda: conditions(cluster.kubectl_json("get", "node", node.name))["Ready"]["status"] == "True",
               "the node Ready again", timeout=10, interval=0.2)
    assert time.monotonic() - resumed < 10  # not the minute of the periodic report
    wait_until(lambda: not cluster.kubectl_json("get", "node", node.name)["spec"].get("taints"), "the taints gone")
    wait_until(lambda: set(pods()) == {"patient"}, "the evicted pod gone")
    wait_until(lambda: conditions(pods()["patient"])["Ready"]["status"] == "True", "the patient pod ready again")


# the CronJob's own schedule (last: it needs up to a minute after the module started) ----------------


def test_a_cron_job_creates_a_job_at_the_next_minute(nodes_cluster: KubeCluster, ns: str, tick: float) -> None:
    cluster = nodes_cluster

    def scheduled() -> list[dict[str, Any]]:
        jobs = cluster.kubectl_json("get", "jobs", "-n", ns)["items"]
        return sorted((j for j in jobs if re.fullmatch(r"tick-\d+", j["metadata"]["name"])),
                      key=lambda j: int(j["metadata"]["name"].split("-")[1]))

    first = wait_until(scheduled, "the CronJob's first Job", timeout=max(5.0, CRON_TIMEOUT - (time.monotonic() - tick)),
                       interval=0.5)[0]
    cluster.kubectl("patch", "cronjob", "tick", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')
    minute = int(first["metadata"]["name"].split("-")[1])  # named after its scheduled time, in minutes
    timestamp = first["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    assert timestamp == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(minute * 60))
    (owner,) = first["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner.get("controller")) == ("CronJob", "tick", True)
    wait_condition(cluster, ns, f"job/{first['metadata']['name']}", "complete")

    def recorded() -> dict[str, Any] | None:
        status = cluster.kubectl_json("get", "cronjob", "tick", "-n", ns).get("status") or {}
        return status if status.get("lastSuccessfulTime") and not status.get("active") else None

    status = wait_until(recorded, "the CronJob recording its Jobs' success", timeout=JOB_TIMEOUT)
    latest = scheduled()[-1]["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    assert status["lastScheduleTime"] == latest
    rows = cluster.kubectl("get", "cronjob", "tick", "-n", ns).stdout.splitlines()
    assert rows[0].split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    columns = rows[1].split()  # the schedule's five fields split too
    assert columns[:9] == ["tick", "*", "*", "*", "*", "*", "<none>", "True", "0"]
    assert re.fullmatch(r"\d+s", columns[9]), columns

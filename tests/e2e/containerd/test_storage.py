"""Storage as a user of a minikube or kind cluster meets it, on real containerd nodes with the real kubectl.

`mkpy up` makes the default StorageClass `standard` (provisioner `kubernetes.io/host-path`) and runs the
controller manager's host-path provisioner under the cluster directory's `storage/`. So a StatefulSet's
volumeClaimTemplates become claims, the binder provisions a volume `pvc-<claim uid>` (a directory) for each
and binds it, the scheduler places the pods once their claims are bound, and each kubelet mounts its pod's
directory into the busybox container: what one pod writes there, the pod that replaces it reads. A claim a
pod uses is kept (pvc-protection) until the pod is gone; a claim deleted takes its volume and directory
with it (reclaimPolicy Delete). Bad input leaves claims and pods Pending, with the binder's and the
scheduler's reasons in `kubectl describe`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KubeCluster, rollout_status, wait_until
from tests.e2e.containerd.pods import run_pod, wait_running

pytestmark = pytest.mark.e2e

MOUNT = "/data"


def stateful_set(name: str, replicas: int) -> str:
    """A StatefulSet of busybox pods, each mounting its own 10Mi claim `data-NAME-N` (no class: the default)."""
    labels = {"app": name}
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 3600"],
                 "volumeMounts": [{"name": "data", "mountPath": MOUNT}]}
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels},
                     "spec": {"terminationGracePeriodSeconds": 1, "containers": [container]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Mi"}}}}]}})


def claim(name: str, storage_class: str | None = None) -> str:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return yaml.safe_dump({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                           "spec": spec})


def run_pod_with_claim(cluster: KubeCluster, ns: str, name: str, claim_name: str) -> None:
    run_pod(cluster, ns, name, "sleep 3600", terminationGracePeriodSeconds=1,
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
            container={"volumeMounts": [{"name": "data", "mountPath": MOUNT}]})


def claims(cluster: KubeCluster, ns: str) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in cluster.kubectl_json("get", "pvc", "-n", ns)["items"]}


def volume_names(cluster: KubeCluster) -> set[str]:
    return {v["metadata"]["name"] for v in cluster.kubectl_json("get", "pv")["items"]}


def pod_uid(cluster: KubeCluster, ns: str, name: str) -> str:
    """The pod's uid; "" while there is no such pod."""
    return cluster.kubectl("get", "pod", name, "-n", ns, "-o", "jsonpath={.metadata.uid}", check=False).stdout


def exec_sh(cluster: KubeCluster, ns: str, pod: str, script: str) -> str:
    return cluster.kubectl("exec", pod, "-n", ns, "--", "sh", "-c", script).stdout


def wait_described(cluster: KubeCluster, kind: str, ns: str, name: str, text: str) -> str:
    """`kubectl describe KIND NAME`, once it shows `text` (an event's message, say)."""
    def described() -> str | None:
        out = cluster.kubectl("describe", kind, name, "-n", ns).stdout
        return out if text in out else None
    return str(wait_until(described, f"`kubectl describe {kind} {name}` showing {text!r}", timeout=20))


def test_the_default_class_is_standard_on_the_host_path_provisioner(nodes_cluster: KubeCluster) -> None:
    rows = [line.split() for line in nodes_cluster.kubectl("get", "storageclass").stdout.splitlines()]
    assert rows[0] == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    assert [row[:6] for row in rows[1:]] == [
        ["standard", "(default)", "kubernetes.io/host-path", "Delete", "Immediate", "false"]]


def test_a_stateful_set_keeps_its_data_on_provisioned_volumes_until_its_claims_are_deleted(
        nodes_cluster: KubeCluster, ns: str) -> None:
    cluster, storage = nodes_cluster, nodes_cluster.dir / "storage"
    cluster.apply_manifest(stateful_set("db", replicas=2), ns)
    rollout_status(cluster, "statefulset/db", ns, timeout=60)

    made = claims(cluster, ns)
    assert sorted(made) == ["data-db-0", "data-db-1"]
    volumes = {}
    for name, found in made.items():
        assert (found["status"]["phase"], found["spec"]["storageClassName"]) == ("Bound", "standard"), name
        assert found["spec"]["volumeName"] == f"pvc-{found['metadata']['uid']}", name
        volume = cluster.kubectl_json("get", "pv", found["spec"]["volumeName"])
        assert volume["spec"]["hostPath"]["path"] == str(storage / volume["metadata"]["name"])
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
        volumes[name] = Path(volume["spec"]["hostPath"]["path"])
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", "app=db")["items"]
    assert sorted((p["metadata"]["name"], p["status"]["phase"]) for p in pods) == [
        ("db-0", "Running"), ("db-1", "Running")]

    exec_sh(cluster, ns, "db-0", f"echo kept > {MOUNT}/greeting")
    assert (volumes["data-db-0"] / "greeting").read_text() == "kept\n"
    first_uid = pod_uid(cluster, ns, "db-0")
    cluster.kubectl("delete", "pod", "db-0", "-n", ns)
    wait_until(lambda: pod_uid(cluster, ns, "db-0") not in ("", first_uid), "the StatefulSet making db-0 again")
    wait_running(cluster, ns, "db-0")
    assert exec_sh(cluster, ns, "db-0", f"cat {MOUNT}/greeting") == "kept\n"

    cluster.kubectl("delete", "statefulset", "db", "-n", ns)
    cluster.kubectl("delete", "pvc", "data-db-0", "data-db-1", "-n", ns, "--timeout=30s")
    wait_until(lambda: not volume_names(cluster) & {v.name for v in volumes.values()}, "the volumes deleted")
    assert not any(path.exists() for path in volumes.values()), list(storage.iterdir())


def test_a_claim_in_use_stays_terminating_until_its_pod_is_gone(nodes_cluster: KubeCluster, ns: str) -> None:
    cluster = nodes_cluster
    cluster.apply_manifest(claim("data"), ns)
    run_pod_with_claim(cluster, ns, "user", "data")
    wait_running(cluster, ns, "user")
    volume = claims(cluster, ns)["data"]["spec"]["volumeName"]

    cluster.kubectl("delete", "pvc", "data", "-n", ns, "--wait=false")
    exec_sh(cluster, ns, "user", f"echo still > {MOUNT}/written")  # the pod keeps using its volume
    row = cluster.kubectl("get", "pvc", "data", "-n", ns, "--no-headers").stdout.split()
    assert row[:3] == ["data", "Terminating", volume]
    kept = claims(cluster, ns)["data"]["metadata"]
    assert kept["finalizers"] == ["kubernetes.io/pvc-protection"] and kept["deletionTimestamp"]

    cluster.kubectl("delete", "pod", "user", "-n", ns)
    cluster.kubectl("wait", "--for=delete", "pvc/data", "-n", ns, "--timeout=30s", timeout=40)
    wait_until(lambda: volume not in volume_names(cluster), f"volume {volume} deleted")


def test_a_claim_of_a_class_that_does_not_exist_stays_pending(nodes_cluster: KubeCluster, ns: str) -> None:
    nodes_cluster.apply_manifest(claim("fast", storage_class="nope"), ns)
    described = wait_described(nodes_cluster, "pvc", ns, "fast", 'storageclass.storage.k8s.io "nope" not found')
    assert "ProvisioningFailed" in described and "persistentvolume-controller" in described
    found = claims(nodes_cluster, ns)["fast"]
    assert found["status"]["phase"] == "Pending" and not found["spec"].get("volumeName")


def test_a_pod_using_a_missing_claim_stays_pending(nodes_cluster: KubeCluster, ns: str) -> None:
    run_pod_with_claim(nodes_cluster, ns, "lost", "x")
    described = wait_described(nodes_cluster, "pod", ns, "lost", 'persistentvolumeclaim "x" not found')
    assert "FailedScheduling" in described and "default-scheduler" in described
    pod = nodes_cluster.kubectl_json("get", "pod", "lost", "-n", ns)
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")

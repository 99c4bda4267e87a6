"""`kubectl rollout status|history|undo statefulset/web` against the StatefulSet controller of `mkpy kcm`.

The shared cluster's simulated nodes run the pods (the fake CRI runtime: they are Running and Ready as soon as they start).
kubectl reads the rollout from the set's status (readyReplicas, updatedReplicas, the partition), the history
from the ControllerRevisions the set controls, and undoes by patching the set with an old revision's data.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import (
    KubeCluster,
    apply_object,
    namespace_manifest,
    rollout_status,
    unique,
    wait_until,
)


def stateful_set(image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "annotations": {"kubernetes.io/change-cause": f"run {image}"}},
            "spec": {"replicas": 3, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"terminationGracePeriodSeconds": 1,
                                           "containers": [{"name": "app", "image": image,
                                                           "command": ["sleep", "3600"]}]}}}}


def pod_images(cluster: KubeCluster, namespace: str) -> dict[str, str]:
    pods = cluster.kubectl_json("get", "pods", "-n", namespace)["items"]
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in pods
            if not p["metadata"].get("deletionTimestamp")}


def test_rollout_status_history_and_undo(nodes_cluster: KubeCluster) -> None:
    cluster = nodes_cluster
    namespace = unique("sts")
    cluster.apply_manifest(namespace_manifest(namespace))
    apply_object(cluster, namespace, stateful_set("busybox:1.36"))
    assert "partitioned roll out complete: 3 new pods have been updated..." in rollout_status(cluster, "statefulset/web", namespace)
    assert pod_images(cluster, namespace) == dict.fromkeys(["web-0", "web-1", "web-2"], "busybox:1.36")

    apply_object(cluster, namespace, stateful_set("busybox:1.37"))
    assert "partitioned roll out complete: 3 new pods have been updated..." in rollout_status(cluster, "statefulset/web", namespace)
    wait_until(lambda: set(pod_images(cluster, namespace).values()) == {"busybox:1.37"}, "every pod updated")
    status = cluster.kubectl_json("get", "statefulset", "web", "-n", namespace)["status"]
    assert status["currentRevision"] == status["updateRevision"] and status["updatedReplicas"] == 3

    history = cluster.kubectl("rollout", "history", "statefulset/web", "-n", namespace).stdout
    rows = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
    assert rows == [["1", "run busybox:1.36"], ["2", "run busybox:1.37"]]
    first = cluster.kubectl("rollout", "history", "statefulset/web", "-n", namespace, "--revision=1").stdout
    assert "busybox:1.36" in first and "busybox:1.37" not in first

    undone = cluster.kubectl("rollout", "undo", "statefulset/web", "-n", namespace).stdout
    assert "statefulset.apps/web rolled back" in undone
    assert "partitioned roll out complete: 3 new pods have been updated..." in rollout_status(cluster, "statefulset/web", namespace)
    wait_until(lambda: set(pod_images(cluster, namespace).values()) == {"busybox:1.36"}, "every pod rolled back")
    revisions = cluster.kubectl_json("get", "controllerrevisions", "-n", namespace)["items"]
    assert sorted(r["revision"] for r in revisions) == [2, 3]  # revision 1 came back as 3, not as a copy

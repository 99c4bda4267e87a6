"""`kubectl rollout status|history|undo daemonset/agent` against the DaemonSet controller of `mkpy kcm`.

Two simulated nodes run the pods (the fake CRI runtime: Running and Ready as soon as they start); the default
scheduler binds each daemon pod to the node its node affinity names. kubectl reads the rollout from the
status (updatedNumberScheduled and numberAvailable against desiredNumberScheduled), the history from the
ControllerRevisions the DaemonSet controls, and undoes by patching the DaemonSet with an old revision's data.
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


def daemon_set(image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "annotations": {"kubernetes.io/change-cause": f"run {image}"}},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"terminationGracePeriodSeconds": 1,
                                           "containers": [{"name": "agent", "image": image,
                                                           "command": ["sleep", "3600"]}]}}}}


def images_by_node(cluster: KubeCluster, namespace: str) -> dict[str, str]:
    pods = cluster.kubectl_json("get", "pods", "-n", namespace)["items"]
    return {p["spec"].get("nodeName", ""): p["spec"]["containers"][0]["image"] for p in pods
            if not p["metadata"].get("deletionTimestamp")}


def test_rollout_status_history_and_undo(nodes_cluster: KubeCluster) -> None:
    cluster = nodes_cluster
    namespace = unique("ds")
    cluster.apply_manifest(namespace_manifest(namespace))
    nodes = sorted(n["metadata"]["name"] for n in cluster.kubectl_json("get", "nodes")["items"])
    done = 'daemon set "agent" successfully rolled out'

    apply_object(cluster, namespace, daemon_set("busybox:1.36"))
    assert done in rollout_status(cluster, "daemonset/agent", namespace)
    assert images_by_node(cluster, namespace) == dict.fromkeys(nodes, "busybox:1.36")  # one pod per node, bound

    apply_object(cluster, namespace, daemon_set("busybox:1.37"))
    assert done in rollout_status(cluster, "daemonset/agent", namespace)
    wait_until(lambda: images_by_node(cluster, namespace) == dict.fromkeys(nodes, "busybox:1.37"),
               "every node running the new pod")
    status = cluster.kubectl_json("get", "daemonset", "agent", "-n", namespace)["status"]
    assert (status["desiredNumberScheduled"], status["updatedNumberScheduled"], status["numberAvailable"]) == (2, 2, 2)

    history = cluster.kubectl("rollout", "history", "daemonset/agent", "-n", namespace).stdout
    rows = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
    assert rows == [["1", "run busybox:1.36"], ["2", "run busybox:1.37"]]
    first = cluster.kubectl("rollout", "history", "daemonset/agent", "-n", namespace, "--revision=1").stdout
    assert "busybox:1.36" in first and "busybox:1.37" not in first

    undone = cluster.kubectl("rollout", "undo", "daemonset/agent", "-n", namespace).stdout
    assert "daemonset.apps/agent rolled back" in undone
    assert done in rollout_status(cluster, "daemonset/agent", namespace)
    wait_until(lambda: images_by_node(cluster, namespace) == dict.fromkeys(nodes, "busybox:1.36"),
               "every node running the rolled-back pod")
    revisions = cluster.kubectl_json("get", "controllerrevisions", "-n", namespace)["items"]
    assert sorted(r["revision"] for r in revisions) == [2, 3]  # revision 1 came back as 3, not as a copy

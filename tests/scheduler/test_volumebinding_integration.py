"""VolumeBinding against a real apiserver and the session's `mkpy scheduler` process: a pod waits for its claim
to exist and to be bound, is retried as soon as the claim changes, and lands on the node its volume's node
affinity names. No KCM runs here, so the test plays the PV controller: it creates the volume and binds the
claim to it the way the controller does (`spec.volumeName` plus `pv.kubernetes.io/bind-completed`).
"""

from __future__ import annotations

import httpx
import pytest

from tests.scheduler.cluster import Cluster, eventually, node, pod, unique

pytestmark = pytest.mark.usefixtures("default_scheduler")


def claim(name: str) -> dict[str, object]:
    # storageClassName "" keeps any default class away: the claim binds Immediately, to a volume made here
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "storageClassName": "",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def volume_on(name: str, node_name: str, namespace: str, claim_name: str) -> dict[str, object]:
    affinity = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "hostPath": {"path": f"/tmp/{name}"},
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": claim_name},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [affinity]}]}},
        },
    }


def wait_for_message(cluster: Cluster, pod_name: str, text: str) -> str:
    def message() -> str:
        condition = cluster.scheduled_condition(pod_name) or {}
        return condition.get("message", "") if text in condition.get("message", "") else ""

    return eventually(message, message=f"pod {pod_name}'s PodScheduled message to say {text!r}")


def test_a_pod_waits_for_its_claim_to_be_bound_then_goes_where_its_volume_is(
    api: httpx.Client, cluster: Cluster
) -> None:
    near, far = unique("near"), unique("far")
    cluster.add_node(node(far, cpu="8"))  # the roomier node, which the pod would prefer without its volume
    cluster.add_node(node(near, cpu="2"))
    claims = f"/api/v1/namespaces/{cluster.namespace}/persistentvolumeclaims"
    cluster.create_pod(pod("web", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]))

    assert 'persistentvolumeclaim "data" not found' in cluster.wait_unschedulable("web")
    r = api.post(claims, json=claim("data"))
    assert r.status_code == 201, r.text
    wait_for_message(cluster, "web", "pod has unbound immediate PersistentVolumeClaims")
    assert not cluster.node_of("web")

    volume_name = unique("pv")
    r = api.post("/api/v1/persistentvolumes", json=volume_on(volume_name, near, cluster.namespace, "data"))
    assert r.status_code == 201, r.text
    try:
        bound = api.get(f"{claims}/data").json()
        bound["spec"]["volumeName"] = volume_name
        bound["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
        r = api.put(f"{claims}/data", json=bound)
        assert r.status_code == 200, r.text
        assert cluster.wait_bound("web") == near
    finally:
        api.delete(f"/api/v1/persistentvolumes/{volume_name}")

"""`kubectl scale` on a custom resource whose CRD keeps the replica count at paths of its own choosing.

kubectl finds the `scale` subresource through discovery and talks `autoscaling/v1 Scale` to it: a merge
patch for a plain `kubectl scale`, a read then an update with `--current-replicas`. The apiserver maps the
Scale onto the CRD's `specReplicasPath`, `statusReplicasPath` and `labelSelectorPath`.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.conftest import KubeCluster


def crd_manifest(group: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"dbclusters.{group}"},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "dbclusters", "singular": "dbcluster", "kind": "DBCluster"},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.nodes",
                                                         "statusReplicasPath": ".status.readyNodes",
                                                         "labelSelectorPath": ".status.selector"}},
            }],
        },
    })


def cluster_manifest(group: str, name: str, **spec: object) -> str:
    return yaml.safe_dump({"apiVersion": f"{group}/v1", "kind": "DBCluster", "metadata": {"name": name},
                           "spec": {"engine": "pg", **spec}})


@pytest.fixture()
def group(cluster: KubeCluster, namespace: str) -> str:
    """The group of an established `dbclusters` CRD, private to the test."""
    name = f"{namespace}.example.com"
    cluster.apply_manifest(crd_manifest(name))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/dbclusters.{name}", "--timeout=15s")
    return name


def test_kubectl_scale_writes_the_spec_replicas_path(cluster: KubeCluster, namespace: str, group: str) -> None:
    cluster.apply_manifest(cluster_manifest(group, "main", nodes=1, replicas=9), namespace)
    out = cluster.kubectl("scale", f"dbclusters.{group}", "main", "-n", namespace, "--replicas=3").stdout
    assert out.strip() == f"dbcluster.{group}/main scaled"
    assert cluster.kubectl_json("get", f"dbclusters.{group}", "main", "-n", namespace)["spec"] == {
        "engine": "pg", "nodes": 3, "replicas": 9}


def test_kubectl_scale_sets_a_count_the_resource_did_not_have(cluster: KubeCluster, namespace: str,
                                                              group: str) -> None:
    cluster.apply_manifest(cluster_manifest(group, "fresh"), namespace)
    cluster.kubectl("scale", f"dbcluster.{group}/fresh", "-n", namespace, "--replicas=2")
    assert cluster.kubectl_json("get", f"dbclusters.{group}", "fresh", "-n", namespace)["spec"] == {
        "engine": "pg", "nodes": 2}


def test_kubectl_scale_with_a_precondition_reads_the_scale(cluster: KubeCluster, namespace: str,
                                                           group: str) -> None:
    cluster.apply_manifest(cluster_manifest(group, "main", nodes=1), namespace)
    cluster.kubectl("patch", f"dbclusters.{group}", "main", "-n", namespace, "--subresource=status",
                    "--type=merge", "-p", '{"status":{"readyNodes":1,"selector":"app=db"}}')
    scale_url = f"/apis/{group}/v1/namespaces/{namespace}/dbclusters/main/scale"
    scale = json.loads(cluster.kubectl("get", "--raw", scale_url).stdout)
    assert (scale["kind"], scale["spec"], scale["status"]) == (
        "Scale", {"replicas": 1}, {"replicas": 1, "selector": "app=db"})
    refused = cluster.kubectl("scale", f"dbclusters.{group}", "main", "-n", namespace, "--current-replicas=4",
                              "--replicas=2", expect_failure=True)
    assert "Expected replicas to be 4, was 1" in refused.output
    cluster.kubectl("scale", f"dbclusters.{group}", "main", "-n", namespace, "--current-replicas=1",
                    "--replicas=2")
    scale = json.loads(cluster.kubectl("get", "--raw", scale_url).stdout)
    assert (scale["spec"], scale["status"]) == ({"replicas": 2}, {"replicas": 1, "selector": "app=db"})

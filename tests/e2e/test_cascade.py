"""Cascading deletion with the real kubectl: `kubectl delete --cascade=background|foreground|orphan` on an
owner whose dependents name it in their ownerReferences, carried out by the garbage collector that
`mkpy up` runs in the controller manager.

ConfigMaps own ConfigMaps here: any object may own any other, and these need no other controller.
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.e2e.conftest import KubeCluster, configmap_manifest, documents, wait_until

FIRST_WAIT = 60.0  # the collector may still be starting its monitors when the first test runs


def owned(cluster: KubeCluster, namespace: str, owner: str, *names: str) -> None:
    """Create the ConfigMap `owner` and, owned by it (blocking its foreground deletion), `names`."""
    cluster.apply_manifest(configmap_manifest(owner), namespace)
    uid = cluster.kubectl_json("get", "configmap", owner, "-n", namespace)["metadata"]["uid"]
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid, "blockOwnerDeletion": True}
    cluster.apply_manifest(documents(*(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "ownerReferences": [reference]}})
        for name in names)), namespace)


def configmaps(cluster: KubeCluster, namespace: str) -> dict[str, Any]:
    items = cluster.kubectl_json("get", "configmaps", "-n", namespace)["items"]
    return {item["metadata"]["name"]: item for item in items if item["metadata"]["name"] != "kube-root-ca.crt"}


def test_deleting_an_owner_in_the_background_deletes_its_dependents_afterwards(
        cluster: KubeCluster, namespace: str) -> None:
    owned(cluster, namespace, "owner", "dep-a", "dep-b")
    cluster.kubectl("delete", "configmap", "owner", "-n", namespace, "--cascade=background")
    wait_until(lambda: configmaps(cluster, namespace) == {}, "the dependents to be garbage collected",
               timeout=FIRST_WAIT)


def test_deleting_an_owner_in_the_foreground_deletes_its_dependents_first(
        cluster: KubeCluster, namespace: str) -> None:
    owned(cluster, namespace, "owner", "dep-a", "dep-b")
    # kubectl waits until the owner is gone, which the apiserver allows only after its dependents are
    result = cluster.kubectl("delete", "configmap", "owner", "-n", namespace, "--cascade=foreground",
                             "--timeout=50s")
    assert 'configmap "owner" deleted' in result.stdout
    assert configmaps(cluster, namespace) == {}


def test_a_foreground_deletion_waits_for_a_dependent_that_cannot_go_yet(cluster: KubeCluster, namespace: str) -> None:
    owned(cluster, namespace, "owner", "held")
    cluster.kubectl("patch", "configmap", "held", "-n", namespace, "--type=merge",
                    "-p", '{"metadata":{"finalizers":["example.com/hold"]}}')
    cluster.kubectl("delete", "configmap", "owner", "-n", namespace, "--cascade=foreground", "--wait=false")
    wait_until(lambda: configmaps(cluster, namespace)["held"]["metadata"].get("deletionTimestamp"),
               "the held dependent to be deleted", timeout=FIRST_WAIT)
    owner = configmaps(cluster, namespace)["owner"]["metadata"]
    assert owner["deletionTimestamp"] and owner["finalizers"] == ["foregroundDeletion"]
    cluster.kubectl("patch", "configmap", "held", "-n", namespace, "--type=merge",
                    "-p", '{"metadata":{"finalizers":null}}')
    wait_until(lambda: configmaps(cluster, namespace) == {}, "the owner to go once its dependent is gone")


def test_deleting_an_owner_with_orphan_cascade_keeps_its_dependents_without_the_reference(
        cluster: KubeCluster, namespace: str) -> None:
    owned(cluster, namespace, "owner", "dep-a", "dep-b")
    cluster.kubectl("delete", "configmap", "owner", "-n", namespace, "--cascade=orphan", "--timeout=50s")
    left = configmaps(cluster, namespace)
    assert sorted(left) == ["dep-a", "dep-b"]
    assert all(not item["metadata"].get("ownerReferences") for item in left.values())

"""The controller manager killed with SIGKILL in the middle of a rollout, then started again by `mkpy up`.

A killed `mkpy kcm` loses everything it held in memory: informer caches, work queues, the expectations of
the ReplicaSet controller (creates and deletes it has asked for but not yet seen), and its leader Lease is
not released, so the new process waits for it to expire before it runs any controller. Nothing of that may
show in the result: the new process rebuilds its view from the apiserver and finishes the rollout with
exactly the wanted pods, all of the new template, owned as they should be.

`minReadySeconds` slows the rollout down (each new pod counts as available only after 2 s), so that the kill
lands while some pods are new and some are old. Three simulated nodes run the pods.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import CommandFailed, KubeCluster, Mkpy, namespace_manifest, unique, wait_until

REPLICAS = 50
ROLLOUT_TIMEOUT = 180  # seconds: generous, the rollout is slow when the whole suite shares two cores


@pytest.fixture(scope="module")
def three_nodes(mkpy: Mkpy) -> Iterator[KubeCluster]:
    name = unique("kcmkill")
    try:
        yield mkpy.up(name, "--nodes", "0", "--simulated-nodes", "3", "--no-switch-context")
    finally:
        mkpy.delete(name)


def deployment(image: str) -> dict[str, Any]:
    labels = {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": REPLICAS, "minReadySeconds": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 1,
                                           "containers": [{"name": "app", "image": image}]}}}}


def rollout_status(cluster: KubeCluster, namespace: str) -> str:
    try:
        return cluster.kubectl("rollout", "status", "deployment/web", "-n", namespace,
                               f"--timeout={ROLLOUT_TIMEOUT}s", timeout=ROLLOUT_TIMEOUT + 10).stdout
    except CommandFailed as failure:
        raise CommandFailed(f"{failure}\n{diagnosis(cluster, namespace)}") from None


def diagnosis(cluster: KubeCluster, namespace: str) -> str:
    """What a stuck rollout leaves behind: pods, nodes, recent events and the ends of the components' logs."""
    parts = [cluster.kubectl(*args, check=False).output for args in (
        ("get", "pods", "-n", namespace, "-o", "wide"), ("get", "nodes", "-o", "wide"),
        ("get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name} {.spec.taints}{'\\n'}{end}"),
        ("get", "events", "-A", "--sort-by=.lastTimestamp"))]
    for log in sorted((cluster.dir / "logs").glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()[-40:]
        parts.append(f"--- {log.name} (last lines) ---\n" + "\n".join(lines))
    return "\n".join(parts)


def kcm_pid(cluster: KubeCluster) -> int:
    """The pid `mkpy up` recorded for the controller manager (run/kcm.pid in the cluster's directory)."""
    return int((cluster.dir / "run" / "kcm.pid").read_text())


def replica_sets(cluster: KubeCluster, namespace: str) -> list[dict[str, Any]]:
    return list(cluster.kubectl_json("get", "rs", "-n", namespace)["items"])


def pods(cluster: KubeCluster, namespace: str) -> list[dict[str, Any]]:
    return list(cluster.kubectl_json("get", "pods", "-n", namespace)["items"])


def template_hash(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["labels"]["pod-template-hash"])


def test_a_rollout_survives_the_controller_manager_killed_in_its_middle(three_nodes: KubeCluster) -> None:
    cluster = three_nodes
    namespace = unique("kill")
    cluster.apply_manifest(namespace_manifest(namespace))
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(deployment("nginx:1.27")))
    assert "successfully rolled out" in rollout_status(cluster, namespace)
    (first,) = replica_sets(cluster, namespace)

    cluster.kubectl("set", "image", "-n", namespace, "deployment/web", "app=nginx:1.28")

    def partly_rolled_out() -> dict[str, int] | None:
        sizes = {template_hash(rs): rs["status"].get("replicas", 0) for rs in replica_sets(cluster, namespace)}
        new = sum(size for rs_hash, size in sizes.items() if rs_hash != template_hash(first))
        old = sizes.get(template_hash(first), 0)
        return sizes if 0 < new < REPLICAS and old > 0 else None

    sizes = wait_until(partly_rolled_out, "some new pods and some old ones", timeout=30, interval=0.02)
    killed = kcm_pid(cluster)
    os.kill(killed, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{killed}") or "Z" in _state(killed), "the kcm gone")

    cluster.mkpy("up", "--name", cluster.name, "--no-switch-context")  # starts what is missing: the kcm
    assert kcm_pid(cluster) != killed
    assert "successfully rolled out" in rollout_status(cluster, namespace), f"killed at {sizes}"

    deploy = cluster.kubectl_json("get", "deployment", "web", "-n", namespace)
    current = [rs for rs in replica_sets(cluster, namespace) if rs["spec"]["replicas"] > 0]
    assert len(current) == 1, [(rs["metadata"]["name"], rs["spec"]["replicas"]) for rs in current]
    new_hash = template_hash(current[0])
    assert new_hash != template_hash(first) and current[0]["spec"]["replicas"] == REPLICAS
    assert len(replica_sets(cluster, namespace)) == 2  # the old one kept at 0 for history, no third one
    for rs in replica_sets(cluster, namespace):
        owners = rs["metadata"].get("ownerReferences") or []
        assert [(o["kind"], o["uid"], o.get("controller")) for o in owners] == [
            ("Deployment", deploy["metadata"]["uid"], True)], rs["metadata"]

    def settled() -> list[dict[str, Any]] | None:  # the old pods' deletions finished by the kubelets
        found = pods(cluster, namespace)
        return found if len(found) == REPLICAS else None

    final = wait_until(settled, f"exactly {REPLICAS} pods", timeout=30, interval=0.5)
    assert {template_hash(pod) for pod in final} == {new_hash}
    assert all(pod["status"].get("phase") == "Running" for pod in final)
    for pod in final:
        owners = pod["metadata"].get("ownerReferences") or []
        assert [(o["kind"], o["uid"]) for o in owners] == [("ReplicaSet", current[0]["metadata"]["uid"])], pod
    status = deploy["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (REPLICAS,) * 3


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"

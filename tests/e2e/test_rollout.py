"""Rollouts driven by the real kubectl: `create deployment`, `set image`, `rollout status|history|undo|
restart|pause|resume`, `scale`, `get rs` and `describe deployment`, against a cluster whose simulated nodes
run the pods (the fake runtime makes them Running and Ready within a second), so every rollout completes.

The steps build on each other in one namespace (revision numbers depend on what came before), so they run
as one ordered story in one namespace of the shared cluster with simulated nodes.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.e2e.conftest import KubeCluster, namespace_manifest, unique, wait_until

ROLLOUT_TIMEOUT = "40s"


@pytest.fixture(scope="module")
def ns(nodes_cluster: KubeCluster) -> str:
    name = unique("roll")
    nodes_cluster.apply_manifest(namespace_manifest(name))
    return name


class Rollout:
    """kubectl against deployment/web in one namespace."""

    def __init__(self, cluster: KubeCluster, namespace: str) -> None:
        self.cluster, self.ns = cluster, namespace

    def kubectl(self, *args: str) -> str:
        return self.cluster.kubectl("-n", self.ns, *args).stdout

    def status(self) -> str:
        return self.kubectl("rollout", "status", "deployment/web", f"--timeout={ROLLOUT_TIMEOUT}")

    def history(self) -> dict[str, str]:
        """REVISION → CHANGE-CAUSE."""
        rows = self.kubectl("rollout", "history", "deployment/web").splitlines()
        header = next(i for i, row in enumerate(rows) if row.startswith("REVISION"))
        return {row.split(None, 1)[0]: row.split(None, 1)[1].strip() for row in rows[header + 1:] if row.strip()}

    def deployment(self) -> Any:
        return self.cluster.kubectl_json("-n", self.ns, "get", "deployment", "web")

    def image(self) -> str:
        return str(self.deployment()["spec"]["template"]["spec"]["containers"][0]["image"])

    def replica_sets(self) -> list[Any]:
        return list(self.cluster.kubectl_json("-n", self.ns, "get", "rs", "-l", "app=web")["items"])


@pytest.fixture(scope="module")
def web(nodes_cluster: KubeCluster, ns: str) -> Rollout:
    rollout = Rollout(nodes_cluster, ns)
    rollout.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
    return rollout


def test_a_new_deployment_rolls_out_through_a_replica_set_named_by_its_template_hash(web: Rollout) -> None:
    assert 'deployment "web" successfully rolled out' in web.status()
    rows = web.kubectl("get", "rs", "--no-headers").splitlines()
    assert len(rows) == 1
    name, desired, current, ready = rows[0].split()[:4]
    (rs,) = web.replica_sets()
    assert name == f"web-{rs['metadata']['labels']['pod-template-hash']}"
    assert (desired, current, ready) == ("3", "3", "3")
    assert web.kubectl("get", "deployment", "web", "--no-headers").split()[1:4] == ["3/3", "3", "3"]


def test_set_image_rolls_out_a_second_revision_with_its_change_cause(web: Rollout) -> None:
    web.kubectl("set", "image", "deployment/web", "nginx=nginx:1.28")
    web.kubectl("annotate", "deployment/web", "kubernetes.io/change-cause=upgrade to 1.28")
    assert "successfully rolled out" in web.status()
    assert web.history() == {"1": "<none>", "2": "upgrade to 1.28"}
    assert "nginx:1.28" in web.kubectl("rollout", "history", "deployment/web", "--revision=2")
    sizes = sorted(rs["spec"]["replicas"] for rs in web.replica_sets())
    assert sizes == [0, 3]


def test_undo_goes_back_to_the_previous_revision_and_renumbers_it(web: Rollout) -> None:
    assert "rolled back" in web.kubectl("rollout", "undo", "deployment/web")
    assert "successfully rolled out" in web.status()
    assert web.image() == "nginx:1.27"
    assert set(web.history()) == {"2", "3"}  # revision 1 came back as 3
    assert len(web.replica_sets()) == 2
    web.kubectl("rollout", "undo", "deployment/web", "--to-revision=2")
    assert "successfully rolled out" in web.status()
    assert web.image() == "nginx:1.28"
    assert web.history() == {"3": "<none>", "4": "upgrade to 1.28"}


def test_restart_rolls_out_fresh_pods(web: Rollout) -> None:
    before = {rs["metadata"]["name"] for rs in web.replica_sets()}
    assert "restarted" in web.kubectl("rollout", "restart", "deployment/web")
    assert "successfully rolled out" in web.status()
    new = [rs for rs in web.replica_sets() if rs["metadata"]["name"] not in before]
    assert len(new) == 1 and new[0]["spec"]["replicas"] == 3
    assert "kubectl.kubernetes.io/restartedAt" in new[0]["spec"]["template"]["metadata"]["annotations"]


def test_a_paused_deployment_waits_for_resume(web: Rollout) -> None:
    web.kubectl("rollout", "pause", "deployment/web")
    web.kubectl("set", "image", "deployment/web", "nginx=nginx:1.29")
    wait_until(lambda: _progressing_reason(web) == "DeploymentPaused", "the DeploymentPaused condition")
    assert all(rs["spec"]["template"]["spec"]["containers"][0]["image"] != "nginx:1.29" for rs in web.replica_sets())
    web.kubectl("rollout", "resume", "deployment/web")
    assert "successfully rolled out" in web.status()
    assert any(rs["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.29" for rs in web.replica_sets())


def test_scale_and_describe(web: Rollout) -> None:
    web.kubectl("scale", "deployment/web", "--replicas=5")
    assert "successfully rolled out" in web.status()
    wait_until(lambda: web.deployment()["status"].get("availableReplicas") == 5, "5 available replicas")
    description = web.kubectl("describe", "deployment", "web")
    new_rs = next(rs["metadata"]["name"] for rs in web.replica_sets() if rs["spec"]["replicas"] == 5)
    assert re.search(rf"NewReplicaSet:\s+{new_rs} \(5/5 replicas created\)", description), description
    assert re.search(r"OldReplicaSets:\s+web-\w+ \(0/0 replicas created\), web-", description), description
    assert re.search(r"Available\s+True\s+MinimumReplicasAvailable", description), description
    assert re.search(r"Progressing\s+True\s+NewReplicaSetAvailable", description), description
    # The scale-up's own event may be missing: this module's rollouts have spent the deployment controller's
    # event budget for `web` (client-go's spam filter: 25 at once, then one per 5 minutes), as on a real cluster.
    assert re.search(r"Normal\s+ScalingReplicaSet\s+.*deployment-controller\s+.*Scaled (up|down) replica set web-",
                     description), description


def _progressing_reason(web: Rollout) -> str | None:
    conditions = web.deployment()["status"].get("conditions") or []
    return next((c["reason"] for c in conditions if c["type"] == "Progressing"), None)

"""The horizontal pod autoscaler on real containerd nodes (the two-node cluster of conftest.py), the whole loop:
busybox shells spinning in real containers → the kubelets' stats Summary → the apiserver's metrics.k8s.io
PodMetrics → the KCM's horizontal-pod-autoscaler → the Deployment's `/scale` → more (or fewer) pods.

Everything a user would type goes through the real kubectl (`kubectl autoscale`, `kubectl patch`, `kubectl get
hpa`). The autoscaler looks at each HPA every 15 s and trusts a new pod's CPU sample only once it covers a
whole metrics window after the pod turned Ready, so each step takes a few syncs: the waits are generous, and a
wait that fails shows `kubectl describe hpa burn`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KubeCluster, rollout_status, wait_until

pytestmark = pytest.mark.e2e

SCALE_TIMEOUT = 120  # seconds for one rescale; it usually takes two or three 15 s syncs
TARGET = 50  # percent of the 50m CPU request
BUSY = 100  # percent, at least: a shell spinning at its 100m limit shows 200% of its 50m request
UP_EVENT = re.compile(r"New size: ([23]); reason: cpu resource utilization \(percentage of request\) above target")
DOWN_EVENT = "New size: 1; reason: All metrics below target"


def burn_deployment() -> str:
    labels = {"app": "burn"}
    container = {"name": "burn", "image": "busybox", "command": ["sh", "-c", "while :; do :; done"],
                 "resources": {"requests": {"cpu": "50m"}, "limits": {"cpu": "100m"}}}
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "burn", "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              # sh as pid 1 ignores SIGTERM: a short grace period ends replaced pods soon
                              "spec": {"terminationGracePeriodSeconds": 2, "containers": [container]}}}})


@pytest.fixture()
def burn_ns(nodes_cluster: KubeCluster, ns: str) -> Iterator[str]:
    """The test's namespace, deleted afterwards (with its spinning pods) whatever the outcome."""
    yield ns
    nodes_cluster.kubectl("delete", "namespace", ns, "--timeout=60s", timeout=70)


def wait_for_hpa(cluster: KubeCluster, ns: str, condition: Callable[[dict[str, Any]], bool],
                 what: str) -> dict[str, Any]:
    """The HPA `burn` once `condition` holds for it; failing that, an error showing `kubectl describe hpa`."""
    def check() -> dict[str, Any] | None:
        hpa = cluster.kubectl_json("get", "hpa", "burn", "-n", ns)
        return hpa if condition(hpa) else None
    try:
        return dict(wait_until(check, what, timeout=SCALE_TIMEOUT, interval=2))
    except AssertionError as err:
        described = cluster.kubectl("describe", "hpa", "burn", "-n", ns, check=False).output
        pods = cluster.kubectl("get", "pods", "-n", ns, "-o", "wide", check=False).output
        raise AssertionError(f"{err}\n$ kubectl describe hpa burn\n{described}\n$ kubectl get pods\n{pods}") from None


def replicas(hpa: dict[str, Any]) -> tuple[int, int]:
    """(currentReplicas, desiredReplicas) of the HPA's status."""
    status = hpa.get("status") or {}
    return status.get("currentReplicas", 0), status.get("desiredReplicas", 0)


def rescales(cluster: KubeCluster, ns: str) -> list[str]:
    """The messages of the HPA's SuccessfulRescale events, oldest first."""
    events = cluster.kubectl_json("get", "events", "-n", ns, "--field-selector",
                                  "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale")["items"]
    events.sort(key=lambda event: event.get("lastTimestamp") or event.get("eventTime") or "")
    return [event["message"] for event in events]


def wait_for_last_rescale(cluster: KubeCluster, ns: str, message: str) -> None:
    """Wait for `message` to be the latest SuccessfulRescale event: the recorder posts events on its own, so
    one may arrive after the status written in the same sync."""
    seen: list[str] = []

    def latest() -> bool:
        seen[:] = rescales(cluster, ns)
        return seen[-1:] == [message]

    try:
        wait_until(latest, f"the event {message!r}")
    except AssertionError as err:
        raise AssertionError(f"{err}; the SuccessfulRescale events: {seen}") from None


def test_cpu_load_scales_a_deployment_up_and_idling_scales_it_down(nodes_cluster: KubeCluster,
                                                                    burn_ns: str) -> None:
    ns = burn_ns
    nodes_cluster.apply_manifest(burn_deployment(), ns)
    rollout_status(nodes_cluster, "deployment/burn", ns)
    created = nodes_cluster.kubectl("autoscale", "deployment", "burn", "-n", ns, f"--cpu-percent={TARGET}",
                                    "--min=1", "--max=3").stdout
    assert "horizontalpodautoscaler.autoscaling/burn autoscaled" in created

    # up: one pod at 200% of its request wants four, the maximum is three
    hpa = wait_for_hpa(nodes_cluster, ns, lambda hpa: replicas(hpa) == (3, 3), "the HPA to scale burn to 3")
    assert nodes_cluster.kubectl_json("get", "deployment", "burn", "-n", ns)["spec"]["replicas"] == 3
    cpu = hpa["status"]["currentMetrics"][0]
    assert cpu["type"] == "Resource" and cpu["resource"]["name"] == "cpu"
    assert cpu["resource"]["current"]["averageUtilization"] >= BUSY, hpa["status"]
    ups = [UP_EVENT.fullmatch(message) for message in rescales(nodes_cluster, ns)]
    assert ups and all(ups), rescales(nodes_cluster, ns)  # a busier machine may stop at 2 on the way
    assert ups[-1] is not None and ups[-1].group(1) == "3"
    row = nodes_cluster.kubectl("get", "hpa", "burn", "-n", ns, "--no-headers").stdout
    shown = re.search(rf"cpu: (\d+)%/{TARGET}%", row)
    assert shown is not None and int(shown.group(1)) >= BUSY, row
    assert row.split()[:2] == ["burn", "Deployment/burn"] and row.split()[-4:-1] == ["1", "3", "3"], row

    # down: no scale-down stabilization, and pods that only sleep
    nodes_cluster.kubectl("patch", "hpa", "burn", "-n", ns, "--type=merge",
                          "-p", '{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":0}}}}')
    nodes_cluster.kubectl("patch", "deployment", "burn", "-n", ns,
                          "-p", '{"spec":{"template":{"spec":{"containers":[{"name":"burn",'
                                '"command":["sleep","3600"]}]}}}}')
    hpa = wait_for_hpa(nodes_cluster, ns, lambda hpa: replicas(hpa)[1] == 1, "the HPA to scale burn back to 1")
    assert nodes_cluster.kubectl_json("get", "deployment", "burn", "-n", ns)["spec"]["replicas"] == 1
    # the apiserver filled in the rest of the behavior: at most 100% fewer pods per 15 s
    assert hpa["spec"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert hpa["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] < TARGET, hpa["status"]
    wait_for_last_rescale(nodes_cluster, ns, DOWN_EVENT)

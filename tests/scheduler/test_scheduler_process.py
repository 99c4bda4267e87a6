"""`mkpy scheduler` as a process: configuration it refuses, out-of-tree plugins, a plugin that raises, and
leader election between two schedulers. Every scheduler here serves its own profile name, so the session's
default scheduler never takes these pods.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.harness import ControlPlane
from tests.scheduler.cluster import Cluster, SchedulerProcess, eventually, node, pod, unique


def config(scheduler_name: str, **profile: Any) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": scheduler_name, **profile}]}


@pytest.mark.parametrize("bad, message", [
    ({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
      "profiles": [{"schedulerName": "x", "plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}]},
     "NoSuchPlugin"),
    ({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
      "profiles": [{"schedulerName": "x", "plugins": {"score": {"enabled": [{"name": "no.such.module:Plugin"}]}}}]},
     "no.such.module"),
    ({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
      "percentageOfNodesToScore": 150}, "percentageOfNodesToScore"),
    ({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
      "profiles": [{"schedulerName": "x", "pluginConfig": [
          {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Cheapest"}}}]}]},
     "profiles[0].pluginConfig[0].args.scoringStrategy.type"),
])
def test_an_invalid_configuration_is_a_one_line_error_naming_the_field(control_plane: ControlPlane, tmp_path,
                                                                      bad: dict[str, Any], message: str) -> None:
    import yaml

    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(bad))
    result = subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "scheduler",
                             f"--kubeconfig={control_plane.kubeconfig}", f"--config={config_file}",
                             "--secure-port=0"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_an_out_of_tree_score_plugin_steers_pods(control_plane: ControlPlane, cluster: Cluster) -> None:
    name = unique("custom")
    plugins = {"score": {"enabled": [{"name": "tests.scheduler.sample_plugins:PreferLabel", "weight": 50}]}}
    process = SchedulerProcess(control_plane, config=config(name, plugins=plugins)).wait_ready()
    try:
        plain, preferred = unique("plain"), unique("preferred")
        cluster.add_node(node(plain, cpu="16"))
        cluster.add_node(node(preferred, cpu="2", labels={"preferred": "true"}))
        cluster.create_pod(pod("steered", schedulerName=name))
        assert cluster.wait_bound("steered") == preferred
    finally:
        process.stop()


def test_a_plugin_that_raises_fails_only_that_pod_and_the_scheduler_keeps_running(
        control_plane: ControlPlane, cluster: Cluster) -> None:
    name = unique("fragile")
    plugins = {"filter": {"enabled": [{"name": "tests.scheduler.sample_plugins:Exploding"}]}}
    process = SchedulerProcess(control_plane, config=config(name, plugins=plugins)).wait_ready()
    try:
        cluster.add_node(node(unique("n")))
        cluster.create_pod(pod("bomb", schedulerName=name, labels={"explode": "true"}))
        message = cluster.wait_unschedulable("bomb")
        assert "boom" in message
        assert cluster.scheduled_condition("bomb")["reason"] == "SchedulerError"
        cluster.create_pod(pod("fine", schedulerName=name))
        cluster.wait_bound("fine")
        # retried with backoff: more than one FailedScheduling attempt is recorded
        eventually(lambda: _attempts(cluster, "bomb") >= 2, timeout=30, message="a retry of the failing pod")
        assert process.process.poll() is None
    finally:
        process.stop()


def test_a_pod_whose_node_is_deleted_while_it_binds_leaves_the_scheduler_working(
        control_plane: ControlPlane, cluster: Cluster) -> None:
    name = unique("slow")
    plugins = {"preBind": {"enabled": [{"name": "tests.scheduler.sample_plugins:SlowBind"}]}}
    process = SchedulerProcess(control_plane, config=config(name, plugins=plugins)).wait_ready()
    try:
        doomed = unique("doomed")
        cluster.add_node(node(doomed))
        cluster.create_pod(pod("binding", schedulerName=name, labels={"slow-bind": "true"}))
        time.sleep(0.5)  # the pod is now held in PreBind for two seconds, assumed on the node
        cluster.api.delete(f"/api/v1/nodes/{doomed}")
        cluster.nodes.remove(doomed)
        # kube's apiserver binds to a node that no longer exists too (the pod GC cleans up later)
        assert cluster.wait_bound("binding") == doomed
        survivor = unique("survivor")
        cluster.add_node(node(survivor))
        cluster.create_pod(pod("next", schedulerName=name))
        assert cluster.wait_bound("next") == survivor
        assert process.process.poll() is None
    finally:
        process.stop()


def _attempts(cluster: Cluster, name: str) -> int:
    events = cluster.events(name, "FailedScheduling")
    return sum((e.get("series") or {}).get("count", 1) for e in events)


def test_leadership_passes_to_the_standby_when_the_leader_dies(control_plane: ControlPlane,
                                                               cluster: Cluster) -> None:
    # system:kube-scheduler may only touch the Lease named kube-scheduler (kube's bootstrap role), so that is
    # the one; the session's default scheduler runs without leader election.
    name, lease = unique("ha"), "kube-scheduler"
    flags = ("--leader-elect=true", "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
             "--leader-elect-retry-period=500ms")
    first = SchedulerProcess(control_plane, *flags, config=config(name), name="first").wait_ready()
    holder = eventually(lambda: _holder(cluster, lease), message="a lease holder")
    assert holder == f"{socket.gethostname()}_{first.process.pid}"
    second = SchedulerProcess(control_plane, *flags, config=config(name), name="second")
    try:
        cluster.add_node(node(unique("n")))
        first.stop(kill=True)  # no chance to release: the standby must wait for the lease to expire
        eventually(lambda: _holder(cluster, lease) == f"{socket.gethostname()}_{second.process.pid}", timeout=20,
                   message="the standby to take the lease")
        second.wait_ready()
        cluster.create_pod(pod("after-failover", schedulerName=name))
        cluster.wait_bound("after-failover")
        transitions = cluster.api.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}"
                                      ).json()["spec"].get("leaseTransitions", 0)
        assert transitions >= 1
    finally:
        first.stop()
        second.stop()
    assert os.path.exists(second.log_file)


def _holder(cluster: Cluster, lease: str) -> str:
    r = cluster.api.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}")
    return r.json()["spec"].get("holderIdentity", "") if r.status_code == 200 else ""

"""The scheduler against a real apiserver: nodes as API objects, pods created through the API, one
`mkpy scheduler` process (with --explain) for the whole module, authenticated as system:kube-scheduler.

Each test reads what a user would: `spec.nodeName`, the PodScheduled condition, Scheduled and
FailedScheduling events, and the explain annotations.
"""

from __future__ import annotations

import json

import pytest

from tests.scheduler.cluster import Cluster, SchedulerProcess, eventually, node, pod, unique

pytestmark = pytest.mark.usefixtures("default_scheduler")


def test_a_pod_goes_to_the_node_with_room_and_gets_a_scheduled_event(cluster: Cluster) -> None:
    small, big = unique("small"), unique("big")
    cluster.add_node(node(small, cpu="2"))
    cluster.add_node(node(big, cpu="8"))
    cluster.create_pod(pod("web", cpu="3"))
    assert cluster.wait_bound("web") == big
    condition = cluster.scheduled_condition("web")
    assert condition is not None and condition["status"] == "True"
    note = eventually(lambda: cluster.events("web", "Scheduled"), message="a Scheduled event")[0]["note"]
    assert note == f"Successfully assigned {cluster.namespace}/web to {big}"


def test_a_pod_too_big_for_every_node_is_unschedulable_until_a_node_with_room_arrives(cluster: Cluster) -> None:
    cluster.add_node(node(unique("a"), cpu="2"))
    cluster.add_node(node(unique("b"), cpu="2"))
    cluster.create_pod(pod("huge", cpu="3"))
    message = cluster.wait_unschedulable("huge")
    assert message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert "preemption:" in message
    event = eventually(lambda: cluster.events("huge", "FailedScheduling"), message="a FailedScheduling event")[0]
    assert event["type"] == "Warning" and event["note"] == message
    roomy = unique("roomy")
    cluster.add_node(node(roomy, cpu="4"))
    assert cluster.wait_bound("huge") == roomy


def test_a_taint_keeps_pods_away_unless_they_tolerate_it(cluster: Cluster) -> None:
    tainted = unique("gpu")
    cluster.add_node(node(tainted, taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    cluster.create_pod(pod("plain"))
    message = cluster.wait_unschedulable("plain")
    assert "1 node(s) had untolerated taint {dedicated: gpu}" in message
    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    cluster.create_pod(pod("tolerant", tolerations=[toleration]))
    assert cluster.wait_bound("tolerant") == tainted


def test_node_selector_and_required_node_affinity_pick_the_labelled_node(cluster: Cluster) -> None:
    east, west = unique("east"), unique("west")
    cluster.add_node(node(east, labels={"topology.kubernetes.io/zone": "east"}))
    cluster.add_node(node(west, labels={"topology.kubernetes.io/zone": "west"}))
    cluster.create_pod(pod("by-selector", nodeSelector={"topology.kubernetes.io/zone": "west"}))
    term = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["east"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    cluster.create_pod(pod("by-affinity", affinity=affinity))
    assert cluster.wait_bound("by-selector") == west
    assert cluster.wait_bound("by-affinity") == east


def test_pods_spread_evenly_across_zones(cluster: Cluster) -> None:
    zones = {}
    for zone in ("z1", "z2", "z3"):
        name = unique(zone)
        zones[name] = zone
        cluster.add_node(node(name, labels={"topology.kubernetes.io/zone": zone}))
    constraint = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"app": "spread"}}}
    for i in range(6):
        cluster.create_pod(pod(f"spread-{i}", labels={"app": "spread"}, topologySpreadConstraints=[constraint]))
    placed = [zones[cluster.wait_bound(f"spread-{i}")] for i in range(6)]
    assert sorted(placed.count(zone) for zone in ("z1", "z2", "z3")) == [2, 2, 2]


def test_required_anti_affinity_allows_one_pod_per_node(cluster: Cluster) -> None:
    for _ in range(3):
        cluster.add_node(node(unique("host")))
    term = {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    for i in range(3):
        cluster.create_pod(pod(f"solo-{i}", labels={"app": "solo"}, affinity=affinity))
    hosts = {cluster.wait_bound(f"solo-{i}") for i in range(3)}
    assert len(hosts) == 3
    cluster.create_pod(pod("solo-3", labels={"app": "solo"}, affinity=affinity))
    message = cluster.wait_unschedulable("solo-3")
    assert "3 node(s) didn't match pod anti-affinity rules" in message


def test_a_high_priority_pod_preempts_a_low_priority_one(cluster: Cluster) -> None:
    high = unique("high")
    r = cluster.api.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                         json={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": high}, "value": 1000})
    assert r.status_code == 201, r.text
    only = unique("only")
    cluster.add_node(node(only, cpu="2"))
    cluster.create_pod(pod("low", cpu="1500m"))
    assert cluster.wait_bound("low") == only
    cluster.create_pod(pod("important", cpu="1500m", priorityClassName=high))
    # The victim is deleted gracefully; with no kubelet to finish the job, the test plays the kubelet.
    victim = eventually(lambda: (cluster.get_pod("low") or {}).get("metadata", {}).get("deletionTimestamp") and
                        cluster.get_pod("low"), message="the victim to be terminating")
    assert {"type": "DisruptionTarget", "reason": "PreemptionByScheduler"}.items() <= next(
        c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget").items()
    nominated = eventually(lambda: (cluster.get_pod("important") or {}).get("status", {}).get("nominatedNodeName"),
                           message="the preemptor to be nominated")
    assert nominated == only
    cluster.api.delete(f"/api/v1/namespaces/{cluster.namespace}/pods/low", params={"gracePeriodSeconds": 0})
    assert cluster.wait_bound("important") == only
    preempted = eventually(lambda: cluster.events("low", "Preempted"), message="a Preempted event")
    assert "Preempted by pod" in preempted[0]["note"]


def test_a_gated_pod_waits_until_its_scheduling_gates_are_removed(cluster: Cluster) -> None:
    cluster.add_node(node(unique("n")))
    cluster.create_pod(pod("gated", schedulingGates=[{"name": "example.com/wait"}]))
    cluster.create_pod(pod("ungated"))
    cluster.wait_bound("ungated")
    assert cluster.node_of("gated") == ""
    r = cluster.api.patch(f"/api/v1/namespaces/{cluster.namespace}/pods/gated",
                          json={"spec": {"schedulingGates": None}},
                          headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    cluster.wait_bound("gated")


def test_a_pod_for_a_scheduler_that_does_not_exist_is_left_alone(cluster: Cluster) -> None:
    cluster.add_node(node(unique("n")))
    cluster.create_pod(pod("other", schedulerName="no-such-scheduler"))
    cluster.create_pod(pod("ours"))
    cluster.wait_bound("ours")
    assert cluster.node_of("other") == ""
    assert cluster.scheduled_condition("other") is None
    assert cluster.events("other", "FailedScheduling") == []


def test_nodes_with_malformed_taints_or_resources_are_skipped_with_a_message(cluster: Cluster) -> None:
    broken_taints = unique("bad-taint")
    body = node(broken_taints)
    body["spec"]["taints"] = [{"key": "x", "effect": "NoSchedule"}, {"effect": "NoSchedule"}]
    r = cluster.api.post("/api/v1/nodes", json=body)
    if r.status_code == 201:  # the apiserver may refuse it outright; if it does not, the scheduler copes
        cluster.nodes.append(broken_taints)
    good = unique("good")
    cluster.add_node(node(good, cpu="1"))
    cluster.create_pod(pod("fits", cpu="500m"))
    assert cluster.wait_bound("fits") == good


def test_explain_mode_records_every_plugins_verdict_on_the_pod(cluster: Cluster) -> None:
    fits, full = unique("fits"), unique("full")
    cluster.add_node(node(fits, cpu="4"))
    cluster.add_node(node(full, cpu="1"))
    cluster.create_pod(pod("explained", cpu="2"))
    assert cluster.wait_bound("explained") == fits
    annotations = eventually(lambda: (cluster.get_pod("explained") or {})["metadata"].get("annotations"),
                             message="explain annotations")
    filters = json.loads(annotations["explain.scheduler.mkpy.dev/filter"])
    assert filters[fits]["NodeResourcesFit"] == "passed"
    assert filters[full]["NodeResourcesFit"] == "Insufficient cpu"
    result = json.loads(annotations["explain.scheduler.mkpy.dev/result"])
    assert result["selectedNode"] == fits


def test_the_scheduler_keeps_working_when_a_bound_pods_node_is_deleted(cluster: Cluster) -> None:
    doomed, other = unique("doomed"), unique("other")
    cluster.add_node(node(doomed, cpu="8"))
    cluster.create_pod(pod("first", cpu="1"))
    assert cluster.wait_bound("first") == doomed
    cluster.api.delete(f"/api/v1/nodes/{doomed}")
    cluster.nodes.remove(doomed)
    cluster.add_node(node(other, cpu="2"))
    cluster.create_pod(pod("second", cpu="1"))
    assert cluster.wait_bound("second") == other


def test_two_profiles_schedule_the_pods_that_name_them(control_plane, cluster: Cluster) -> None:  # noqa: ANN001
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "packer",
                            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                                "type": "MostAllocated",
                                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}]},
                           {"schedulerName": "spreader"}]}
    process = SchedulerProcess(control_plane, config=config, name="profiles").wait_ready()
    try:
        busy, idle = unique("busy"), unique("idle")
        cluster.add_node(node(busy, cpu="4"))
        cluster.add_node(node(idle, cpu="4"))
        cluster.create_pod(pod("anchor", cpu="2", nodeName=busy))
        cluster.create_pod(pod("packed", cpu="1", schedulerName="packer"))
        cluster.create_pod(pod("spread", cpu="1", schedulerName="spreader"))
        assert cluster.wait_bound("packed") == busy
        assert cluster.wait_bound("spread") == idle
    finally:
        process.stop()

"""Conversion between served and stored versions: events.k8s.io ↔ core Events, autoscaling v1 ↔ v2 HPAs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikube_py.api.conversion import from_storage, to_storage
from minikube_py.api.conversion.autoscaling import (
    BEHAVIOR_ANNOTATION,
    CONDITIONS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    METRICS_ANNOTATION,
)
from minikube_py.api.kinds import Resource, default_registry

REGISTRY = default_registry()
Obj = dict[str, Any]


def res(group: str, version: str, plural: str) -> Resource:
    resource = REGISTRY.lookup(group, version, plural)
    assert resource is not None
    return resource


NEW_EVENTS = res("events.k8s.io", "v1", "events")
CORE_EVENTS = res("", "v1", "events")
HPA_V1 = res("autoscaling", "v1", "horizontalpodautoscalers")
HPA_V2 = res("autoscaling", "v2", "horizontalpodautoscalers")


def test_a_stored_version_converts_to_itself() -> None:
    obj = {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "e"}}
    assert to_storage(CORE_EVENTS, obj) is obj and from_storage(HPA_V2, obj) is obj


def new_event() -> Obj:
    return {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": {"name": "web.1", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "kubelet",
            "reportingInstance": "node-1", "action": "Pulling", "reason": "Pulling",
            "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}, "note": "Pulling image",
            "type": "Normal", "deprecatedSource": {"component": "kubelet"}, "deprecatedCount": 2,
            "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z", "deprecatedLastTimestamp": "2024-01-01T00:00:05Z"}


@pytest.mark.parametrize("new_field, core_field", [
    ("regarding", "involvedObject"), ("note", "message"), ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"), ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"), ("eventTime", "eventTime"), ("action", "action"), ("reason", "reason"),
    ("type", "type"),
], ids=lambda v: v)
def test_an_events_api_field_is_stored_under_its_core_name(new_field: str, core_field: str) -> None:
    event = new_event()
    assert to_storage(NEW_EVENTS, event)[core_field] == event[new_field]


def test_a_stored_event_reads_back_unchanged() -> None:
    event = new_event()
    assert from_storage(NEW_EVENTS, to_storage(NEW_EVENTS, event)) == event


def test_a_legacy_event_shows_the_new_api_zero_values() -> None:
    core = {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "e"}, "message": "hi"}
    assert from_storage(NEW_EVENTS, core) == {
        "kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": {"name": "e"}, "eventTime": None,
        "regarding": {}, "note": "hi", "deprecatedSource": {}, "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None}


def test_conversion_leaves_its_argument_alone() -> None:
    event = new_event()
    before = copy.deepcopy(event)
    to_storage(NEW_EVENTS, event)["involvedObject"]["name"] = "changed"
    assert event == before


_text = st.text(alphabet="abcxyz-./ ", max_size=12)
_stamp = st.one_of(st.none(), st.just("2024-01-01T00:00:00Z"))
events = st.fixed_dictionaries({
    "kind": st.just("Event"), "apiVersion": st.just("events.k8s.io/v1"),
    "metadata": st.fixed_dictionaries({"name": _text}),
}, optional={
    "eventTime": _stamp, "reportingController": _text, "reportingInstance": _text, "action": _text,
    "reason": _text, "note": _text, "type": st.sampled_from(["Normal", "Warning"]),
    "regarding": st.fixed_dictionaries({"kind": _text, "name": _text}),
    "related": st.fixed_dictionaries({"kind": _text}), "deprecatedSource": st.fixed_dictionaries({}, optional={
        "component": _text, "host": _text}),
    "deprecatedFirstTimestamp": _stamp, "deprecatedLastTimestamp": _stamp,
    "deprecatedCount": st.integers(0, 5), "series": st.fixed_dictionaries({"count": st.integers(2, 9)}),
})


@settings(max_examples=200)
@given(events)
def test_events_round_trip_through_storage(event: Obj) -> None:
    stored = to_storage(NEW_EVENTS, event)
    served = from_storage(NEW_EVENTS, stored)
    # Once through, an event is in Go's shape and stays exactly the same on every further trip.
    assert to_storage(NEW_EVENTS, served) == stored
    assert from_storage(NEW_EVENTS, to_storage(NEW_EVENTS, served)) == served
    for key, value in event.items():
        if value not in (None, "", 0, {}):
            assert served[key] == value


def hpa_v1(**spec: Any) -> Obj:
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                     "minReplicas": 1, "maxReplicas": 5, **spec}}


def cpu(utilization: int) -> Obj:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": utilization}}}


def test_a_v1_cpu_target_becomes_a_v2_resource_metric() -> None:
    stored = to_storage(HPA_V1, hpa_v1(targetCPUUtilizationPercentage=50))
    assert stored["apiVersion"] == "autoscaling/v2" and stored["spec"]["metrics"] == [cpu(50)]


def test_a_v1_autoscaler_without_target_gets_80_percent_cpu() -> None:
    assert to_storage(HPA_V1, hpa_v1())["spec"]["metrics"] == [cpu(80)]


def hpa_v2(**spec: Any) -> Obj:
    obj = hpa_v1(**spec)
    obj["apiVersion"] = "autoscaling/v2"
    return obj


MEMORY = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                        "averageValue": "500Mi"}}}
PODS = {"type": "Pods", "pods": {"metric": {"name": "requests_per_second"}, "target": {
    "type": "AverageValue", "averageValue": "1k"}}}
BEHAVIOR = {"scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max", "policies": [
    {"type": "Percent", "value": 100, "periodSeconds": 15}]}}


def test_v2_only_metrics_travel_in_kubes_annotation() -> None:
    served = from_storage(HPA_V1, hpa_v2(metrics=[cpu(60), MEMORY, PODS]))
    assert served["spec"]["targetCPUUtilizationPercentage"] == 60
    assert json.loads(served["metadata"]["annotations"][METRICS_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}},
        {"type": "Pods", "pods": {"metricName": "requests_per_second", "targetAverageValue": "1k"}}]


def test_behavior_travels_with_go_field_names() -> None:
    served = from_storage(HPA_V1, hpa_v2(metrics=[cpu(60)], behavior=BEHAVIOR))
    assert served["metadata"]["annotations"][BEHAVIOR_ANNOTATION] == (
        '{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":300,"SelectPolicy":"Max","Policies":'
        '[{"Type":"Percent","Value":100,"PeriodSeconds":15}]}}')


def test_status_metrics_and_conditions_travel_in_annotations() -> None:
    stored = hpa_v2(metrics=[cpu(60)])
    stored["status"] = {"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "100m",
                                                                     "averageUtilization": 40}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]}
    served = from_storage(HPA_V1, stored)
    assert served["status"] == {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 40}
    annotations = served["metadata"]["annotations"]
    assert json.loads(annotations[CURRENT_METRICS_ANNOTATION]) == [{"type": "Resource", "resource": {
        "name": "cpu", "currentAverageUtilization": 40, "currentAverageValue": "100m"}}]
    assert json.loads(annotations[CONDITIONS_ANNOTATION]) == [
        {"type": "AbleToScale", "status": "True", "lastTransitionTime": None, "reason": "ReadyForNewScale"}]
    assert to_storage(HPA_V1, served)["status"]["conditions"] == [
        {"type": "AbleToScale", "status": "True", "lastTransitionTime": None, "reason": "ReadyForNewScale"}]


def test_round_trip_annotations_never_reach_storage() -> None:
    served = from_storage(HPA_V1, hpa_v2(metrics=[cpu(60), MEMORY], behavior=BEHAVIOR))
    served["metadata"]["annotations"]["team"] = "web"
    assert to_storage(HPA_V1, served)["metadata"]["annotations"] == {"team": "web"}


def test_a_v1_edit_keeps_the_v2_only_fields() -> None:
    stored = hpa_v2(metrics=[cpu(60), MEMORY, PODS], behavior=BEHAVIOR)
    served = from_storage(HPA_V1, stored)
    served["spec"]["maxReplicas"] = 9
    again = to_storage(HPA_V1, served)
    assert again["spec"]["behavior"] == BEHAVIOR and again["spec"]["maxReplicas"] == 9
    # kube lists the annotation's metrics first and the CPU target last.
    assert again["spec"]["metrics"] == [MEMORY, PODS, cpu(60)]


_quantity = st.sampled_from(["1", "250m", "1k", "500Mi"])
_metric_name = st.sampled_from(["qps", "queue_depth"])
_selector = st.one_of(st.none(), st.just({"matchLabels": {"app": "web"}}))


def _with_selector(name: str, selector: Obj | None) -> Obj:
    return {"name": name, **({"selector": selector} if selector else {})}


metrics = st.one_of(
    st.builds(cpu, st.integers(1, 100)),
    st.builds(lambda q: {"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "AverageValue", "averageValue": q}}}, _quantity),
    st.builds(lambda n, s, q: {"type": "Pods", "pods": {"metric": _with_selector(n, s), "target": {
        "type": "AverageValue", "averageValue": q}}}, _metric_name, _selector, _quantity),
    st.builds(lambda n, q: {"type": "Object", "object": {"describedObject": {
        "kind": "Ingress", "name": "main", "apiVersion": "networking.k8s.io/v1"}, "target": {
        "type": "Value", "value": q}, "metric": {"name": n}}}, _metric_name, _quantity),
    st.builds(lambda n, s, q: {"type": "External", "external": {"metric": _with_selector(n, s), "target": {
        "type": "AverageValue", "averageValue": q}}}, _metric_name, _selector, _quantity),
    st.builds(lambda c, u: {"type": "ContainerResource", "containerResource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": u}, "container": c}}, st.sampled_from(["app", "sidecar"]),
              st.integers(1, 100)),
)


@settings(max_examples=200)
@given(st.lists(metrics, min_size=1, max_size=4), st.one_of(st.none(), st.just(BEHAVIOR)))
def test_v2_specs_survive_a_trip_through_v1(metric_list: list[Obj], behavior: Obj | None) -> None:
    stored = hpa_v2(metrics=metric_list, **({"behavior": behavior} if behavior else {}))
    stored["status"] = {"desiredReplicas": 0}
    again = to_storage(HPA_V1, from_storage(HPA_V1, stored))
    cpu_targets = [m for m in metric_list if m == cpu(m.get("resource", {}).get("target", {}).get(
        "averageUtilization", -1))]
    others = [m for m in metric_list if m not in cpu_targets]
    # Every metric survives; only the CPU utilization target moves to the end, as in kube.
    assert again["spec"]["metrics"][:len(others)] == others
    assert sorted(map(json.dumps, again["spec"]["metrics"])) == sorted(map(json.dumps, others + cpu_targets[:1]))
    assert again["spec"].get("behavior") == behavior
    assert again["metadata"] == stored["metadata"]

"""The horizontal pod autoscaler: the replica calculation, stabilization and rate policies, the controller's
sync with a recording client and a fake clock (no sleeps), and once against a real apiserver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.client.clock import FakeClock
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.podautoscaler import HorizontalController
from minikube_py.kcm.controllers.podautoscaler.metrics import PodMetric, go_duration_seconds
from minikube_py.kcm.controllers.podautoscaler.replicas import CalculationError, Calculator
from minikube_py.kcm.controllers.podautoscaler.stabilization import Stabilizer
from tests.kcm.fakes import cache, context
from tests.kcm.running import running, wait_for

NS = "default"
KEY = "default/web"
NOW = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
LONG_AGO = time_string(NOW - timedelta(hours=1))


def pod(name: str, cpu_request: str | None = "100m", phase: str = "Running", ready: bool = True,
        started: str = LONG_AGO, ready_since: str = LONG_AGO, deleting: bool = False) -> dict[str, Any]:
    resources_ = {"requests": {"cpu": cpu_request}} if cpu_request else {}
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = LONG_AGO
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "resources": resources_}]},
            "status": {"phase": phase, "startTime": started,
                       "conditions": [{"type": "Ready", "status": str(ready), "lastTransitionTime": ready_since}]}}


def sample(milli: int, at: datetime = NOW, window: float = 30.0) -> PodMetric:
    return PodMetric(milli, at, window)


# the replica calculator -----------------------------------------------------------------------------------

CALC = Calculator(tolerance=0.1, cpu_initialization_period=300, initial_readiness_delay=30)


@pytest.mark.parametrize(("usages", "target", "current", "expected", "utilization"), [
    ([100, 100], 50, 2, 4, 100),          # twice the target: twice the pods
    ([20, 20, 20, 20, 20], 50, 5, 2, 20),  # ceil(0.4 × 5)
    ([52, 54], 50, 2, 2, 53),             # within the tolerance: no change
    ([60, 60, 60], 50, 3, 4, 60),         # ceil(1.2 × 3)
])
def test_the_replicas_are_proportional_to_the_usage_ratio(usages: list[int], target: int, current: int,
                                                          expected: int, utilization: int) -> None:
    pods = [pod(f"p{i}") for i in range(len(usages))]
    metrics = {f"p{i}": sample(usage) for i, usage in enumerate(usages)}
    replicas, got_utilization, raw = CALC.resource_replicas(current, target, "cpu", pods, metrics, NOW)
    assert (replicas, got_utilization) == (expected, utilization)
    assert raw == sum(usages) // len(usages)


def test_missing_pods_count_as_fully_used_on_a_scale_down() -> None:
    pods = [pod("a"), pod("b"), pod("c"), pod("d")]
    metrics = {"a": sample(10), "b": sample(10)}  # 10% each; c and d have no sample
    replicas, _, _ = CALC.resource_replicas(4, 50, "cpu", pods, metrics, NOW)
    # without c and d: ceil(0.2 × 2) = 1; with them at 100%: (10+10+100+100)/400 = 55% → ratio 1.1 → no change
    assert replicas == 4


def test_missing_pods_count_as_idle_on_a_scale_up_and_may_cancel_it() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    metrics = {"a": sample(60), "b": sample(60)}  # 60% of a 50% target: 3 pods if c is left out
    assert CALC.resource_replicas(2, 50, "cpu", pods[:2], metrics, NOW)[0] == 3
    # with c at 0: 120/300 = 40%, below the target: scaling up is not justified, nothing changes
    assert CALC.resource_replicas(3, 50, "cpu", pods, metrics, NOW)[0] == 3
    metrics = {"a": sample(200), "b": sample(200)}  # 400/300 = 133%: ratio 2.66 over 3 pods
    assert CALC.resource_replicas(3, 50, "cpu", pods, metrics, NOW)[0] == 8


def test_unready_pods_count_as_idle_on_a_scale_up_only() -> None:
    pods = [pod("a"), pod("b", phase="Pending"), pod("c", ready=False, ready_since=LONG_AGO)]
    up = CALC.resource_replicas(3, 50, "cpu", pods, {"a": sample(100), "c": sample(100)}, NOW)[0]
    assert CALC.resource_replicas(1, 50, "cpu", pods[:1], {"a": sample(100)}, NOW)[0] == 2
    assert up == 3  # a alone says 2×; with b and c (never Ready since it started) at 0: 33%, no scale-up
    down = CALC.resource_replicas(3, 50, "cpu", [pod("a"), pod("b", phase="Pending")], {"a": sample(10)}, NOW)[0]
    assert down == 1  # a scale-down ignores the pending pod


def test_a_sample_taken_before_a_window_of_readiness_is_not_trusted_while_warming_up() -> None:
    just_started = time_string(NOW - timedelta(seconds=60))
    ready_at = NOW - timedelta(seconds=20)
    warming = pod("w", started=just_started, ready_since=time_string(ready_at))
    ready, unready, _, _ = CALC.group_pods([warming], {"w": sample(100, at=NOW, window=30)}, "cpu", NOW)
    assert (ready, unready) == (0, {"w"})
    ready, unready, _, _ = CALC.group_pods([warming], {"w": sample(100, at=NOW, window=15)}, "cpu", NOW)
    assert (ready, unready) == (1, set())
    # memory samples are always trusted
    assert CALC.group_pods([warming], {"w": sample(100, window=30)}, "memory", NOW)[0] == 1


def test_deleted_and_failed_pods_are_ignored() -> None:
    pods = [pod("a"), pod("b", deleting=True), pod("c", phase="Failed")]
    metrics = {"a": sample(100), "b": sample(1000), "c": sample(1000)}
    assert CALC.resource_replicas(1, 100, "cpu", pods, metrics, NOW)[:2] == (1, 100)


@pytest.mark.parametrize(("pods", "metrics", "message"), [
    ([], {}, "no pods returned by selector while calculating replica count"),
    ([pod("a", phase="Pending")], {"a": sample(1)}, "did not receive metrics for targeted pods (pods might be unready)"),
    ([pod("a", cpu_request=None)], {"a": sample(1)}, "missing request for cpu in container c of Pod a"),
])
def test_what_cannot_be_calculated_says_why(pods: list[dict[str, Any]], metrics: dict[str, PodMetric],
                                            message: str) -> None:
    with pytest.raises(CalculationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CALC.resource_replicas(1, 50, "cpu", pods, metrics, NOW)


def test_an_average_value_target_divides_the_mean_usage() -> None:
    pods = [pod("a"), pod("b")]
    replicas, usage = CALC.plain_replicas(2, 100_000, "memory", pods, {"a": sample(300_000), "b": sample(100_000)},
                                          NOW)
    assert (replicas, usage) == (4, 200_000)


def test_go_durations_are_read_as_seconds() -> None:
    assert [go_duration_seconds(t) for t in ("30s", "1m0.5s", "250ms", "0s")] == [30, 60.5, 0.25, 0]


# stabilization and rate policies --------------------------------------------------------------------------

def stabilizer() -> tuple[Stabilizer, FakeClock]:
    clock = FakeClock()
    return Stabilizer(clock, downscale_stabilization=300), clock


def test_a_scale_down_waits_for_the_stabilization_window() -> None:
    stab, clock = stabilizer()
    stab.record_initial(KEY, 10)
    decision = stab.normalize(KEY, None, 10, 3, 1, 20)
    assert (decision.replicas, decision.stabilized[0]) == (10, "ScaleDownStabilized")
    clock.advance(200)
    assert stab.normalize(KEY, None, 10, 4, 1, 20).replicas == 10
    clock.advance(101)  # the first recommendation (10) and the initial one are now older than 300 s
    decision = stab.normalize(KEY, None, 10, 3, 1, 20)
    assert (decision.replicas, decision.stabilized[0]) == (4, "ScaleDownStabilized")  # 4 is 201 s old
    clock.advance(300)
    assert stab.normalize(KEY, None, 4, 3, 1, 20).replicas == 3


@pytest.mark.parametrize(("current", "desired", "low", "high", "replicas", "limited", "reason"), [
    (2, 20, 1, 50, 4, True, "ScaleUpLimit"),        # at most max(2 × 2, 4)
    (10, 30, 1, 50, 20, True, "ScaleUpLimit"),
    (10, 30, 1, 15, 15, True, "TooManyReplicas"),
    (3, 0, 2, 10, 2, True, "TooFewReplicas"),
    (3, 5, 1, 10, 5, False, "DesiredWithinRange"),
])
def test_without_behavior_the_count_is_bounded(current: int, desired: int, low: int, high: int, replicas: int,
                                               limited: bool, reason: str) -> None:
    stab, _ = stabilizer()
    decision = stab.normalize(KEY, None, current, desired, low, high)
    assert (decision.replicas, decision.limited, decision.limit[0]) == (replicas, limited, reason)


DEFAULT_BEHAVIOR = {  # what the apiserver fills in for `behavior: {}`
    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                             {"type": "Percent", "value": 100, "periodSeconds": 15}]},
    "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
}


def test_scale_up_policies_limit_each_period_counting_earlier_scale_events() -> None:
    stab, clock = stabilizer()
    decision = stab.normalize(KEY, DEFAULT_BEHAVIOR, 1, 20, 1, 50)
    assert (decision.replicas, decision.limit[0]) == (5, "ScaleUpLimit")  # max(1 + 4 pods, 1 × 200%)
    stab.record_scale(KEY, DEFAULT_BEHAVIOR, 1, 5)
    clock.advance(5)
    assert stab.normalize(KEY, DEFAULT_BEHAVIOR, 5, 20, 1, 50).replicas == 5  # the period started at 1
    clock.advance(11)
    assert stab.normalize(KEY, DEFAULT_BEHAVIOR, 5, 20, 1, 50).replicas == 10  # a new period: 5 × 200%


def test_the_min_select_policy_takes_the_smallest_change_and_disabled_none() -> None:
    behavior = {**DEFAULT_BEHAVIOR, "scaleUp": {**DEFAULT_BEHAVIOR["scaleUp"], "selectPolicy": "Min"}}
    stab, _ = stabilizer()
    assert stab.normalize(KEY, behavior, 10, 40, 1, 50).replicas == 14  # min(10 + 4, 20)
    down = {**DEFAULT_BEHAVIOR, "scaleDown": {"selectPolicy": "Disabled", "policies": []}}
    decision = stab.normalize("default/other", down, 10, 2, 1, 50)
    assert (decision.replicas, decision.limit[0]) == (10, "ScaleDownLimit")


def test_a_behavior_without_a_scale_down_window_uses_the_controllers_and_stabilizes_both_ways() -> None:
    stab, clock = stabilizer()
    behavior = {**DEFAULT_BEHAVIOR, "scaleUp": {**DEFAULT_BEHAVIOR["scaleUp"], "stabilizationWindowSeconds": 60}}
    stab.record_initial(KEY, 5)
    clock.advance(1)
    decision = stab.normalize(KEY, behavior, 5, 2, 1, 50)
    assert (decision.replicas, decision.stabilized[0]) == (5, "ScaleDownStabilized")
    clock.advance(1)
    decision = stab.normalize(KEY, behavior, 5, 9, 1, 50)  # 2 was recommended 1 s ago: no scale-up yet
    assert (decision.replicas, decision.stabilized[0]) == (5, "ScaleUpStabilized")


# the controller's sync ------------------------------------------------------------------------------------

class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.seen.append((type, reason, message))


def hpa(min_replicas: int = 1, max_replicas: int = 10, metrics: list[dict[str, Any]] | None = None,
        kind: str = "Deployment") -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": NS, "uid": "hpa-uid", "resourceVersion": "3"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": "web"},
                     "minReplicas": min_replicas, "maxReplicas": max_replicas,
                     "metrics": metrics if metrics is not None else [
                         {"type": "Resource", "resource": {"name": "cpu",
                                                            "target": {"type": "Utilization",
                                                                       "averageUtilization": 50}}}]},
            "status": {"desiredReplicas": 0}}


def controller(autoscaler: dict[str, Any], replicas: int = 2, selector: str = "app=web",
               usages: dict[str, str] | None = None, pods: tuple[dict[str, Any], ...] = ()
               ) -> tuple[HorizontalController, Any, Events, FakeClock]:
    ctx, client, clock = context(ControllerSettings(hpa_sync_period=15))
    events = Events()
    ctx.recorder = events  # type: ignore[assignment]
    cache(ctx, resources.HORIZONTAL_POD_AUTOSCALERS, autoscaler)
    cache(ctx, resources.PODS, *pods)
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
             "metadata": {"name": "web", "namespace": NS, "resourceVersion": "9"},
             "spec": {"replicas": replicas}, "status": {"replicas": replicas, "selector": selector}}
    stamp = time_string(clock.wall())

    async def get_path(url: str) -> dict[str, Any]:
        if url == "/apis/apps/v1/namespaces/default/deployments/web/scale":
            return scale
        raise errors.NotFound({"code": 404, "reason": "NotFound", "message": 'deployments.apps "web" not found'})

    async def list_(resource: Any, namespace: str | None = None, **options: Any) -> dict[str, Any]:
        assert resource.group == "metrics.k8s.io" and options["label_selector"] == selector
        items = [{"metadata": {"name": name, "namespace": NS}, "timestamp": stamp, "window": "30s",
                  "containers": [{"name": "c", "usage": {"cpu": cpu, "memory": "10Mi"}}]}
                 for name, cpu in (usages or {}).items()]
        return {"items": items}

    client.get_path = get_path
    client.list = list_
    return HorizontalController(ctx), client, events, clock


def running_pods(count: int) -> tuple[dict[str, Any], ...]:
    return tuple(pod(f"p{i}", started="2023-12-31T00:00:00Z", ready_since="2023-12-31T00:00:00Z")
                 for i in range(count))


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def written_status(client: Any) -> dict[str, Any]:
    (update,) = [a for a in client.writes("update") if a.resource == "horizontalpodautoscalers/status"]
    return update.body["status"]


async def test_high_cpu_use_scales_the_target_up_with_kubes_event_and_status() -> None:
    hc, client, events, clock = controller(hpa(), replicas=2, usages={"p0": "100m", "p1": "100m"},
                                           pods=running_pods(2))
    await hc.sync(KEY)
    (scale_update,) = [a for a in client.writes("update") if a.resource == "deployments/scale"]
    assert scale_update.body["spec"]["replicas"] == 4
    assert ("Normal", "SuccessfulRescale",
            "New size: 4; reason: cpu resource utilization (percentage of request) above target") in events.seen
    status = written_status(client)
    assert (status["currentReplicas"], status["desiredReplicas"]) == (2, 4)
    assert status["lastScaleTime"] == time_string(clock.wall())
    assert status["currentMetrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "current": {"averageUtilization": 100, "averageValue": "100m"}}}]
    assert conditions(status) == {
        "AbleToScale": ("True", "SucceededRescale", "the HPA controller was able to update the target scale to 4"),
        "ScalingActive": ("True", "ValidMetricFound", "the HPA was able to successfully calculate a replica count "
                                                      "from cpu resource utilization (percentage of request)"),
        "ScalingLimited": ("False", "DesiredWithinRange", "the desired count is within the acceptable range")}


async def test_the_autoscaler_is_looked_at_again_one_sync_period_later() -> None:
    hc, _, _, clock = controller(hpa(), usages={"p0": "50m", "p1": "50m"}, pods=running_pods(2))
    await hc.sync(KEY)
    assert hc.queue._ready_at[KEY] == clock.now() + 15
    hc.queue.shut_down()


async def test_a_new_autoscaler_does_not_scale_down_at_once() -> None:
    hc, client, events, _ = controller(hpa(), replicas=4, usages={f"p{i}": "10m" for i in range(4)},
                                       pods=running_pods(4))
    await hc.sync(KEY)
    assert not [a for a in client.writes("update") if a.resource == "deployments/scale"]
    status = written_status(client)
    assert status["desiredReplicas"] == 4
    assert conditions(status)["AbleToScale"][1] == "ScaleDownStabilized"
    assert not events.seen


async def test_without_metrics_nothing_is_scaled_and_the_condition_says_why() -> None:
    hc, client, events, _ = controller(hpa(), usages={}, pods=running_pods(2))
    await hc.sync(KEY)
    assert not [a for a in client.writes("update") if a.resource == "deployments/scale"]
    cause = ("failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from "
             "resource metrics API")
    assert ("Warning", "FailedGetResourceMetric", cause) in events.seen
    assert ("Warning", "FailedComputeMetricsReplicas", "invalid metrics (1 invalid out of 1), first error is: "
            f"failed to get cpu resource metric value: {cause}") in events.seen
    status = written_status(client)
    assert conditions(status)["ScalingActive"] == ("False", "FailedGetResourceMetric",
                                                    f"the HPA was unable to compute the replica count: {cause}")
    assert status["currentMetrics"] == [{"type": ""}] and status["currentReplicas"] == 2


async def test_a_missing_target_cannot_be_scaled() -> None:
    hc, client, events, _ = controller(hpa(kind="StatefulSet"))
    await hc.sync(KEY)
    assert ("Warning", "FailedGetScale", 'deployments.apps "web" not found') in events.seen
    assert conditions(written_status(client))["AbleToScale"] == (
        "False", "FailedGetScale",
        "the HPA controller was unable to get the target's current scale: deployments.apps \"web\" not found")


async def test_an_unknown_target_kind_says_no_matches() -> None:
    autoscaler = hpa()
    autoscaler["spec"]["scaleTargetRef"] = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "web"}
    hc, client, events, _ = controller(autoscaler)

    async def get_path(url: str) -> dict[str, Any]:
        return {"groups": []} if url == "/apis" else {"resources": []}

    client.get_path = get_path
    await hc.sync(KEY)
    assert events.seen == [("Warning", "FailedGetScale", 'no matches for kind "Widget" in group "example.com"')]


async def test_a_target_scaled_to_zero_disables_autoscaling() -> None:
    hc, client, events, _ = controller(hpa(), replicas=0)
    await hc.sync(KEY)
    assert conditions(written_status(client))["ScalingActive"] == (
        "False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
    assert not events.seen


async def test_a_target_above_the_maximum_is_brought_down_to_it() -> None:
    hc, client, events, _ = controller(hpa(max_replicas=3), replicas=7)
    await hc.sync(KEY)
    (scale_update,) = [a for a in client.writes("update") if a.resource == "deployments/scale"]
    assert scale_update.body["spec"]["replicas"] == 3
    assert ("Normal", "SuccessfulRescale",
            "New size: 3; reason: Current number of replicas above Spec.MaxReplicas") in events.seen


async def test_a_target_without_a_selector_is_refused() -> None:
    hc, client, events, _ = controller(hpa(), selector="")
    await hc.sync(KEY)
    assert ("Warning", "SelectorRequired", "selector is required") in events.seen
    assert conditions(written_status(client))["ScalingActive"] == (
        "False", "InvalidSelector", "the HPA target's scale is missing a selector")


async def test_custom_metrics_are_reported_as_unavailable() -> None:
    metric = {"type": "Pods", "pods": {"metric": {"name": "requests"},
                                       "target": {"type": "AverageValue", "averageValue": "10"}}}
    hc, client, events, _ = controller(hpa(metrics=[metric]))
    await hc.sync(KEY)
    reason, message = conditions(written_status(client))["ScalingActive"][1:]
    assert reason == "FailedGetPodsMetric"
    assert message.startswith("the HPA was unable to compute the replica count: unable to get metric requests")
    assert events.seen[0][1] == "FailedGetPodsMetric"


async def test_a_failed_rescale_is_reported() -> None:
    hc, client, events, _ = controller(hpa(), usages={"p0": "100m", "p1": "100m"}, pods=running_pods(2))
    client.failures[("update", "deployments/scale")] = errors.Forbidden({"code": 403, "message": "no"})
    await hc.sync(KEY)
    assert ("Warning", "FailedRescale", "New size: 4; reason: cpu resource utilization (percentage of request) "
                                        "above target; error: no") in events.seen
    status = written_status(client)
    assert conditions(status)["AbleToScale"] == ("False", "FailedUpdateScale",
                                                 "the HPA controller was unable to update the target scale: no")
    assert "lastScaleTime" not in status


async def test_a_deleted_autoscaler_is_forgotten() -> None:
    hc, client, _, _ = controller(hpa())
    hc.stabilizer.record_initial("default/gone", 3)
    await hc.sync("default/gone")
    assert client.writes() == [] and "default/gone" not in hc.stabilizer._history


# against a real apiserver ---------------------------------------------------------------------------------

async def test_a_deployment_below_the_minimum_is_scaled_up(control_plane: Any, api: Any, namespace: str) -> None:
    api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json={
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}).raise_for_status()
    hpas = f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers"
    api.post(hpas, json={"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2, "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 50}}}]}}).raise_for_status()

    async with running(control_plane, HorizontalController, settings=ControllerSettings(hpa_sync_period=0.2)):
        await wait_for(lambda: api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
                       .json()["spec"]["replicas"] == 2, 10, "the deployment scaled to minReplicas")
        status = await wait_for(lambda: (s := api.get(f"{hpas}/web").json()["status"]).get("lastScaleTime") and s,
                                10, "the autoscaler's status")
        assert status["desiredReplicas"] == 2
        # the next look measures: no pods run, so the metrics API has nothing to say
        status = await wait_for(lambda: (s := api.get(f"{hpas}/web").json()["status"])
                                and any(c["type"] == "ScalingActive" for c in s.get("conditions", [])) and s,
                                10, "the metrics to be asked for")
    active = next(c for c in status["conditions"] if c["type"] == "ScalingActive")
    assert (active["status"], active["reason"]) == ("False", "FailedGetResourceMetric")
    events = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
    assert any(e["reason"] == "SuccessfulRescale" and e["message"] == "New size: 2; reason: Current number of "
               "replicas below Spec.MinReplicas" for e in events)

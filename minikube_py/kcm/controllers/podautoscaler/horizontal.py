"""The horizontal pod autoscaler controller: sizes a workload by its pods' resource use.

Every `hpa_sync_period` seconds (15 s) each HorizontalPodAutoscaler (autoscaling/v2) is reconciled. There
is no watch-driven work: handlers put a new or changed autoscaler on the queue with that same delay (kube's
fixed-interval rate limiter), and every sync puts its key back, so each autoscaler is looked at once a
period, events or not.

`sync(key)`:
1. the target's `Scale` through `scaleTargetRef` (apiVersion/kind/name → resource → `/scale`, any kind with
   a scale subresource); failing that: event and condition AbleToScale=False `FailedGetScale`;
2. with `spec.replicas` 0 (and minReplicas not 0) autoscaling is off (ScalingActive=False `ScalingDisabled`);
   outside [minReplicas, maxReplicas] the count is brought inside first;
3. otherwise each metric proposes a count (replicas.py from PodMetrics, metrics.py; pods chosen by the
   Scale's `status.selector`) and the largest wins; metrics that fail are reported (ScalingActive=False with
   `FailedGetResourceMetric` and kube's message) and, when all fail or the working ones would scale down,
   nothing is changed;
4. the wish is stabilized and rate-limited (stabilization.py), giving AbleToScale's and ScalingLimited's
   reasons; a different count is written to `/scale` with the event `SuccessfulRescale` "New size: N;
   reason: cpu resource utilization (percentage of request) above target" (or "All metrics below target");
5. the status (currentReplicas, desiredReplicas, currentMetrics, lastScaleTime when it rescaled,
   conditions) is written through `horizontalpodautoscalers/status` when it changed.

Only resource metrics (`Resource`, `ContainerResource`: cpu, memory) can be measured: mkpy serves
metrics.k8s.io but no custom or external metrics API, so `Pods`, `Object` and `External` metrics fail with
kube's reasons (`FailedGetPodsMetric`, ...) and the message saying why.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Hashable
from fractions import Fraction
from typing import Any

from minikube_py.api import quantity
from minikube_py.api.errors import APIError
from minikube_py.api.selectors import LabelSelector
from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown, meta_namespace_key
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.podautoscaler.metrics import MetricsError, milli_value, resource_metrics
from minikube_py.kcm.controllers.podautoscaler.replicas import CalculationError, Calculator
from minikube_py.kcm.controllers.podautoscaler.stabilization import Stabilizer
from minikube_py.kcm.controllers.scaleclient import NoKindMatchError, ScaleClient

API_VERSION, KIND = "autoscaling/v2", "HorizontalPodAutoscaler"
ABLE_TO_SCALE, SCALING_ACTIVE, SCALING_LIMITED = "AbleToScale", "ScalingActive", "ScalingLimited"
UNMEASURABLE = {"Pods": "FailedGetPodsMetric", "Object": "FailedGetObjectMetric",
                "External": "FailedGetExternalMetric"}

log = logging.getLogger(__name__)


class MetricError(Exception):
    """One metric could not give a replica count; `condition` is the (reason, message) kube reports."""

    def __init__(self, message: str, reason: str, condition_message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.condition_message = condition_message


class FixedIntervalRateLimiter:
    """Every item waits the same interval (kube's FixedItemIntervalRateLimiter): the HPA resync."""

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def when(self, item: Hashable) -> float:
        return self.interval

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class HorizontalController:
    name = "horizontal-pod-autoscaler-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        settings = ctx.settings
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.autoscalers = ctx.informers.informer_for(resources.HORIZONTAL_POD_AUTOSCALERS)
        self.pods = ctx.informers.informer_for(resources.PODS)
        self.queue = RateLimitingQueue(FixedIntervalRateLimiter(settings.hpa_sync_period),
                                       name="horizontalpodautoscaler", clock=ctx.clock)
        self.scales = ScaleClient(ctx.client)
        self.calculator = Calculator(settings.hpa_tolerance, settings.hpa_cpu_initialization_period,
                                     settings.hpa_initial_readiness_delay)
        self.stabilizer = Stabilizer(ctx.clock, settings.hpa_downscale_stabilization)
        self.selectors: dict[str, LabelSelector] = {}  # autoscaler key -> its target's pod selector, last seen
        self.autoscalers.add_event_handler(FuncHandler(on_add=self._enqueue,
                                                       on_update=lambda old, new: self._enqueue(new),
                                                       on_delete=self._deleted))

    async def run(self, workers: int = 5) -> None:
        await asyncio.gather(self.autoscalers.wait_for_cache_sync(), self.pods.wait_for_cache_sync())
        try:
            await run_workers(self.queue, self.sync, workers, name="horizontalpodautoscaler", logger=log)
        finally:
            self.queue.shut_down()

    def _enqueue(self, hpa: dict[str, Any], *_: Any) -> None:
        self.queue.add_rate_limited(meta_namespace_key(hpa))

    def _deleted(self, hpa: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(hpa)
        self.selectors.pop(key, None)
        self.stabilizer.forget(key)

    # sync ------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.autoscalers.indexer.get_by_key(key)
        if cached is None:
            self.stabilizer.forget(key)
            self.selectors.pop(key, None)
            return
        self.queue.add_rate_limited(key)  # the next look, one period from now, whatever happens here
        hpa = copy.deepcopy(cached)
        hpa.setdefault("apiVersion", API_VERSION)
        hpa.setdefault("kind", KIND)
        await self.reconcile(hpa, key)

    async def reconcile(self, hpa: dict[str, Any], key: str) -> None:
        original = copy.deepcopy(hpa.get("status") or {})
        status = hpa.setdefault("status", {})
        spec = hpa.get("spec") or {}
        namespace = hpa["metadata"]["namespace"]
        try:
            resource, scale = await self._scale_of(spec.get("scaleTargetRef") or {}, namespace)
        except (NoKindMatchError, errors.APIStatusError, ValueError) as err:
            self.recorder.event(hpa, "Warning", "FailedGetScale", str(err))
            self._condition(status, ABLE_TO_SCALE, "False", "FailedGetScale",
                            f"the HPA controller was unable to get the target's current scale: {err}")
            await self._write_status(hpa, original)
            return
        self._condition(status, ABLE_TO_SCALE, "True", "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        self.stabilizer.record_initial(key, current)
        min_replicas = int(spec.get("minReplicas", 1))
        max_replicas = int(spec.get("maxReplicas", 0))
        metric_statuses: list[dict[str, Any]] = []
        reason = ""
        rescale = True
        if current == 0 and min_replicas != 0:
            desired, rescale = 0, False
            self._condition(status, SCALING_ACTIVE, "False", "ScalingDisabled",
                            "scaling is disabled since the replica count of the target is zero")
        elif current > max_replicas:
            desired, reason = max_replicas, "Current number of replicas above Spec.MaxReplicas"
        elif current < min_replicas:
            desired, reason = min_replicas, "Current number of replicas below Spec.MinReplicas"
        else:
            proposal, metric, metric_statuses, error = await self.replicas_for_metrics(hpa, scale)
            if proposal == -1:
                self._set_counts(status, current, status.get("desiredReplicas", 0), metric_statuses)
                await self._write_status(hpa, original)
                self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", str(error))
                return
            reason = f"{metric} above target" if proposal > current else "All metrics below target"
            decision = self.stabilizer.normalize(key, spec.get("behavior"), current, proposal, min_replicas,
                                                 max_replicas)
            self._condition(status, ABLE_TO_SCALE, "True", *decision.stabilized)
            self._condition(status, SCALING_LIMITED, "True" if decision.limited else "False", *decision.limit)
            desired = decision.replicas
            rescale = desired != current
        if rescale and not await self._rescale(hpa, resource, scale, current, desired, reason, metric_statuses,
                                               original):
            return
        self._set_counts(status, current, desired if rescale else current, metric_statuses)
        if rescale:
            status["lastScaleTime"] = time_string(self.clock.wall())
        await self._write_status(hpa, original)

    async def _scale_of(self, ref: dict[str, Any], namespace: str) -> tuple[Any, dict[str, Any]]:
        """The target's resource and Scale, trying each version serving its kind (the first error wins)."""
        api_version = str(ref.get("apiVersion") or "")
        if api_version.count("/") > 1:
            raise ValueError(f"unexpected GroupVersion string: {api_version}")
        group = api_version.rpartition("/")[0]
        first: errors.APIStatusError | None = None
        for resource in await self.scales.resources_for(group, str(ref.get("kind") or "")):
            try:
                return resource, await self.scales.get(resource, namespace, str(ref.get("name") or ""))
            except errors.APIStatusError as err:
                first = first or err
        assert first is not None
        raise first

    async def _rescale(self, hpa: dict[str, Any], resource: Any, scale: dict[str, Any], current: int, desired: int,
                       reason: str, metric_statuses: list[dict[str, Any]], original: dict[str, Any]) -> bool:
        status = hpa["status"]
        updated = copy.deepcopy(scale)
        updated.setdefault("spec", {})["replicas"] = desired
        try:
            await self.scales.update(resource, hpa["metadata"]["namespace"], updated)
        except errors.APIStatusError as err:
            self.recorder.event(hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {err}")
            self._condition(status, ABLE_TO_SCALE, "False", "FailedUpdateScale",
                            f"the HPA controller was unable to update the target scale: {err}")
            self._set_counts(status, current, status.get("desiredReplicas", 0), metric_statuses)
            await self._write_status(hpa, original)
            return False
        self._condition(status, ABLE_TO_SCALE, "True", "SucceededRescale",
                        f"the HPA controller was able to update the target scale to {desired}")
        self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
        self.stabilizer.record_scale(meta_namespace_key(hpa), (hpa.get("spec") or {}).get("behavior"), current,
                                     desired)
        return True

    # metrics ---------------------------------------------------------------------------------------------

    async def replicas_for_metrics(self, hpa: dict[str, Any],
                                   scale: dict[str, Any]) -> tuple[int, str, list[dict[str, Any]], Exception | None]:
        """(the largest proposal or -1, its metric's name, each metric's status, the first error)."""
        status = hpa["status"]
        specs = (hpa.get("spec") or {}).get("metrics") or []
        selector = self._selector(hpa, str((scale.get("status") or {}).get("selector") or ""))
        if isinstance(selector, Exception):
            return -1, "", [], selector
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        statuses: list[dict[str, Any]] = []
        replicas, metric, failures, first = 0, "", 0, None
        for spec in specs:
            try:
                proposal, name, metric_status = await self.replicas_for_metric(hpa, spec, current, selector)
            except MetricError as err:
                statuses.append({"type": ""})
                if first is None:
                    first = err
                failures += 1
                continue
            statuses.append(metric_status)
            if replicas == 0 or proposal > replicas:
                replicas, metric = proposal, name
        if first is not None:
            error = Exception(f"invalid metrics ({failures} invalid out of {len(specs)}), first error is: {first}")
            if failures >= len(specs) or replicas < current:
                self._condition(status, SCALING_ACTIVE, "False", first.reason, first.condition_message)
                return -1, "", statuses, error
        self._condition(status, SCALING_ACTIVE, "True", "ValidMetricFound",
                        f"the HPA was able to successfully calculate a replica count from {metric}")
        return replicas, metric, statuses, first

    def _selector(self, hpa: dict[str, Any], text: str) -> LabelSelector | Exception:
        """The target's pod selector; an error (with event and condition) when it is missing, invalid or
        shared with another autoscaler."""
        status, key = hpa["status"], meta_namespace_key(hpa)
        if not text:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            self._condition(status, SCALING_ACTIVE, "False", "InvalidSelector",
                            "the HPA target's scale is missing a selector")
            return Exception("selector is required")
        try:
            selector = LabelSelector.parse(text)
        except APIError as err:
            message = f"couldn't convert selector into a corresponding internal selector object: {err.message}"
            self.recorder.event(hpa, "Warning", "InvalidSelector", message)
            self._condition(status, SCALING_ACTIVE, "False", "InvalidSelector", message)
            return Exception(message)
        self.selectors[key] = selector
        pods = self.pods.lister().list(hpa["metadata"]["namespace"], selector)
        sharing = sorted(other for other, theirs in self.selectors.items()
                         if other.split("/")[0] == hpa["metadata"]["namespace"]
                         and any(theirs.matches(p["metadata"].get("labels")) for p in pods))
        if len(sharing) > 1:
            message = f"pods by selector {text} are controlled by multiple HPAs: {sharing}"
            self.recorder.event(hpa, "Warning", "AmbiguousSelector", message)
            self._condition(status, SCALING_ACTIVE, "False", "AmbiguousSelector", message)
            return Exception(message)
        return selector

    async def replicas_for_metric(self, hpa: dict[str, Any], spec: dict[str, Any], current: int,
                                  selector: LabelSelector) -> tuple[int, str, dict[str, Any]]:
        kind = spec.get("type")
        if kind in ("Resource", "ContainerResource"):
            source = spec.get("resource" if kind == "Resource" else "containerResource") or {}
            try:
                return await self._resource_metric(hpa, kind, source, current, selector)
            except (MetricsError, CalculationError) as err:
                what = "resource" if kind == "Resource" else "container"
                subject = source.get("name") if kind == "Resource" else source.get("container")
                raise self._unable(hpa, f"FailedGet{kind}Metric", str(err),
                                   f"failed to get {subject} {what} metric value: {err}") from None
        if kind in UNMEASURABLE:
            name = ((spec.get(kind[0].lower() + kind[1:]) or {}).get("metric") or {}).get("name", "")
            why = f"unable to get metric {name}: no {kind.lower()} metrics API is served by this cluster"
            raise self._unable(hpa, UNMEASURABLE[kind], why, f"failed to get {kind.lower()} metric value: {why}")
        why = f'unknown metric source type "{kind}"'
        raise self._unable(hpa, "InvalidMetricSourceType", why, why)

    async def _resource_metric(self, hpa: dict[str, Any], kind: str, source: dict[str, Any], current: int,
                               selector: LabelSelector) -> tuple[int, str, dict[str, Any]]:
        name, container = str(source.get("name") or ""), str(source.get("container") or "")
        target = source.get("target") or {}
        namespace = hpa["metadata"]["namespace"]
        pods = self.pods.lister().list(namespace, selector)
        now = self.clock.wall()
        field = "resource" if kind == "Resource" else "containerResource"
        identity = {"name": name, **({"container": container} if container else {})}
        if target.get("averageValue") is not None:
            try:
                metrics = await resource_metrics(self.client, name, namespace, selector, container)
                replicas, usage = self.calculator.plain_replicas(current, milli_value(target["averageValue"]), name, pods,
                                                                 metrics, now)
            except (MetricsError, CalculationError) as err:
                raise CalculationError(f"failed to get {name} usage: {_unable_to_get(name, err)}") from None
            value = {"averageValue": _quantity(usage)}
            return replicas, f"{name} resource", {"type": kind, field: {**identity, "current": value}}
        if target.get("averageUtilization") is None:
            raise CalculationError("invalid resource metric source: neither an average utilization target nor an "
                                   "average value (usage) target was set")
        try:
            metrics = await resource_metrics(self.client, name, namespace, selector, container)
            replicas, utilization, raw = self.calculator.resource_replicas(
                current, int(target["averageUtilization"]), name, pods, metrics, now, container)
        except (MetricsError, CalculationError) as err:
            raise CalculationError(f"failed to get {name} utilization: {_unable_to_get(name, err)}") from None
        label = f"{name} {'container ' if kind == 'ContainerResource' else ''}resource utilization (percentage of request)"
        value = {"averageUtilization": utilization, "averageValue": _quantity(raw)}
        return replicas, label, {"type": kind, field: {**identity, "current": value}}

    def _unable(self, hpa: dict[str, Any], reason: str, cause: str, message: str) -> MetricError:
        """kube's getUnableComputeReplicaCountCondition: an event now, the condition if all metrics fail."""
        self.recorder.event(hpa, "Warning", reason, cause)
        return MetricError(message, reason, f"the HPA was unable to compute the replica count: {cause}")

    # status ----------------------------------------------------------------------------------------------

    def _condition(self, status: dict[str, Any], kind: str, value: str, reason: str, message: str) -> None:
        conditions = status.setdefault("conditions", [])
        found = next((c for c in conditions if c.get("type") == kind), None)
        if found is None:
            found = {"type": kind}
            conditions.append(found)
        if found.get("status") != value:
            found["lastTransitionTime"] = time_string(self.clock.wall())
        found.update(status=value, reason=reason, message=message)

    @staticmethod
    def _set_counts(status: dict[str, Any], current: int, desired: int, metrics: list[dict[str, Any]]) -> None:
        status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        if metrics:
            status["currentMetrics"] = metrics
        else:
            status.pop("currentMetrics", None)
        if not current:
            del status["currentReplicas"]  # omitempty, as kube serializes it

    async def _write_status(self, hpa: dict[str, Any], original: dict[str, Any]) -> None:
        if hpa["status"] == original:
            return
        try:
            await self.client.update(resources.HORIZONTAL_POD_AUTOSCALERS, hpa, hpa["metadata"]["namespace"],
                                     subresource="status")
        except errors.APIStatusError as err:
            self.recorder.event(hpa, "Warning", "FailedUpdateStatus", str(err))
            log.warning("failed to update status for %s: %s", hpa["metadata"]["name"], err)


def _unable_to_get(resource: str, err: Exception) -> str:
    """The calculator's errors as they are, the metrics API's prefixed as kube's replica calculator does."""
    return f"unable to get metrics for resource {resource}: {err}" if isinstance(err, MetricsError) else str(err)


def _quantity(milli: int) -> str:
    """A milli-value as kube prints `NewMilliQuantity(v, DecimalSI)`."""
    return quantity.render(Fraction(milli, 1000))

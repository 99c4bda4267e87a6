"""The replica calculator: how many pods would bring a resource metric back to its target.

The rule is proportional: desired = ceil(current pods × usage / target), where usage / target is the *usage
ratio*. A ratio within the tolerance of 1.0 (0.1: 0.9 to 1.1) changes nothing, so small noise never scales.
Utilization targets are percentages of the pods' requests (summed over containers, so a container without a
request for the resource is an error); average-value targets are plain milli-units per pod.

Pods do not all count alike (kube's `groupPods`):
* pods being deleted, and Failed pods, are ignored;
* Pending pods, and for CPU pods not yet ready or still warming up (within the CPU initialization period of
  their start, a sample taken before one metric window after turning Ready; later, a pod that has never been
  Ready since its initial readiness delay), are *unready*: their samples are not trusted;
* pods the metrics API has no sample for are *missing*.
The ratio is first computed from the ready pods with samples. If the answer would scale up and there are
unready pods, or there are missing pods, it is computed again conservatively: missing pods are taken to use
100% of their request (or the target, if above 100%) on a scale-down and 0 on a scale-up, unready pods 0 on
a scale-up. If that second ratio is within the tolerance or points the other way, nothing changes.

Usage rules: the functions are pure; `pods` are the pods the target's selector picks, `metrics` pod name →
`PodMetric`, `now` the wall clock. Errors are `CalculationError`s with kube's messages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from minikube_py.api.timestamps import parse_time
from minikube_py.api.validation.quantity import QuantityError
from minikube_py.kcm.controllers.podautoscaler.metrics import PodMetric, milli_value


class CalculationError(Exception):
    """No replica count could be computed; the message is kube's."""


@dataclass(frozen=True)
class Calculator:
    tolerance: float = 0.1
    cpu_initialization_period: float = 300.0
    initial_readiness_delay: float = 30.0

    def resource_replicas(self, current: int, target_utilization: int, resource: str, pods: list[dict[str, Any]],
                          metrics: dict[str, PodMetric], now: datetime, container: str = "") -> tuple[int, int, int]:
        """(replicas, utilization %, average raw value) for a utilization target."""
        if not pods:
            raise CalculationError("no pods returned by selector while calculating replica count")
        ready, unready, missing, ignored = self.group_pods(pods, metrics, resource, now)
        usable = {name: m.value for name, m in metrics.items() if name not in ignored | unready}
        if not usable:
            raise CalculationError("did not receive metrics for targeted pods (pods might be unready)")
        requests = pod_requests(pods, resource, container)
        ratio, utilization, raw = utilization_ratio(usable, requests, target_utilization)
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if abs(1.0 - ratio) <= self.tolerance:
                return current, utilization, raw
            return math.ceil(ratio * ready), utilization, raw
        if missing and ratio != 1.0:
            fallback = max(100, target_utilization)
            for name in missing:
                usable[name] = requests[name] * fallback // 100 if ratio < 1.0 else 0
        if scale_up_with_unready:
            usable.update(dict.fromkeys(unready, 0))
        new_ratio, _, _ = utilization_ratio(usable, requests, target_utilization)
        return self._rebalanced(current, ratio, new_ratio, len(usable)), utilization, raw

    def plain_replicas(self, current: int, target_value: int, resource: str, pods: list[dict[str, Any]],
                       metrics: dict[str, PodMetric], now: datetime) -> tuple[int, int]:
        """(replicas, average value) for an average-value target (milli-units per pod)."""
        if not pods:
            raise CalculationError("no pods returned by selector while calculating replica count")
        ready, unready, missing, ignored = self.group_pods(pods, metrics, resource, now)
        usable = {name: m.value for name, m in metrics.items() if name not in ignored | unready}
        if not usable:
            raise CalculationError("did not receive metrics for targeted pods (pods might be unready)")
        ratio, usage = usage_ratio(usable, target_value)
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if abs(1.0 - ratio) <= self.tolerance:
                return current, usage
            return math.ceil(ratio * ready), usage
        if missing and ratio != 1.0:
            usable.update(dict.fromkeys(missing, target_value if ratio < 1.0 else 0))
        if scale_up_with_unready:
            usable.update(dict.fromkeys(unready, 0))
        new_ratio, _ = usage_ratio(usable, target_value)
        return self._rebalanced(current, ratio, new_ratio, len(usable)), usage

    def _rebalanced(self, current: int, ratio: float, new_ratio: float, counted: int) -> int:
        """The second, conservative answer: none if it is small or turns the direction around."""
        if abs(1.0 - new_ratio) <= self.tolerance or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
            return current
        replicas = math.ceil(new_ratio * counted)
        if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
            return current
        return replicas

    def group_pods(self, pods: list[dict[str, Any]], metrics: dict[str, PodMetric], resource: str,
                   now: datetime) -> tuple[int, set[str], set[str], set[str]]:
        """(ready count, unready names, missing names, ignored names)."""
        ready, unready, missing, ignored = 0, set(), set(), set()
        for pod in pods:
            name = pod["metadata"]["name"]
            phase = (pod.get("status") or {}).get("phase")
            if pod["metadata"].get("deletionTimestamp") or phase == "Failed":
                ignored.add(name)
            elif phase == "Pending":
                unready.add(name)
            elif name not in metrics:
                missing.add(name)
            elif resource == "cpu" and self._cpu_unready(pod, metrics[name], now):
                unready.add(name)
            else:
                ready += 1
        return ready, unready, missing, ignored

    def _cpu_unready(self, pod: dict[str, Any], metric: PodMetric, now: datetime) -> bool:
        status = pod.get("status") or {}
        condition = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
        if condition is None or not status.get("startTime"):
            return True
        started = parse_time(status["startTime"])
        transition = parse_time(condition["lastTransitionTime"]) if condition.get("lastTransitionTime") else started
        if started + timedelta(seconds=self.cpu_initialization_period) > now:
            # warming up: trust a sample only once a whole window of it was taken while Ready
            return condition.get("status") == "False" or metric.timestamp < transition + timedelta(seconds=metric.window)
        # later: distrust only a pod that has not been Ready since its first readiness settled
        return condition.get("status") == "False" and started + timedelta(seconds=self.initial_readiness_delay) > transition


def pod_requests(pods: list[dict[str, Any]], resource: str, container: str = "") -> dict[str, int]:
    """Pod name -> its containers' summed request of `resource` in milli-units (sidecar init containers
    included; only `container` when named); a container without one is an error, as kube's."""
    requests = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or [])
        containers += [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
        total = 0
        for entry in containers:
            if container and entry.get("name") != container:
                continue
            value = ((entry.get("resources") or {}).get("requests") or {}).get(resource)
            if value is None:
                raise CalculationError(f"missing request for {resource} in container {entry.get('name')} of Pod "
                                       f"{pod['metadata']['name']}")
            try:
                total += milli_value(value)
            except QuantityError as err:
                raise CalculationError(str(err)) from None
        requests[pod["metadata"]["name"]] = total
    return requests


def utilization_ratio(values: dict[str, int], requests: dict[str, int], target: int) -> tuple[float, int, int]:
    """(usage ratio, utilization % of requests, average raw value) over the pods with both numbers."""
    counted = [(value, requests[name]) for name, value in values.items() if name in requests]
    requested = sum(request for _, request in counted)
    if requested == 0:
        raise CalculationError("no metrics returned matched known pods")
    used = sum(value for value, _ in counted)
    utilization = used * 100 // requested
    return utilization / target, utilization, used // len(counted)


def usage_ratio(values: dict[str, int], target: int) -> tuple[float, int]:
    usage = sum(values.values()) // len(values)
    return usage / target, usage

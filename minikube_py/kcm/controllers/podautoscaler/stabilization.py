"""From the metrics' wish to the replica count actually asked for: stabilization windows and scaling rates.

The replica calculator says what the metrics want *now*; following it blindly makes the target flap. Each
autoscaler's recent recommendations and scale events are kept in memory (they are lost when the controller
restarts, as in kube), and the wish is damped:

Without `spec.behavior` (kube's original rules):
* scale-down stabilization: the highest recommendation of the last `downscale_stabilization` seconds (300)
  wins, so a brief dip never removes pods (condition AbleToScale reason `ScaleDownStabilized`);
* bounds: at least minReplicas (`TooFewReplicas`), at most maxReplicas (`TooManyReplicas`) and never more
  than max(2 × current, 4) in one step (`ScaleUpLimit`); ScalingLimited is True when a bound applied.

With `spec.behavior` (autoscaling/v2; the apiserver fills in the defaults: scale-up by 4 pods or 100% per
15 s whichever is more, scale-down by 100% per 15 s, windows 0 s up and the controller's 300 s down):
* stabilization per direction: the recommendation is kept between the lowest recommendation of the
  scale-up window and the highest of the scale-down window (`ScaleUpStabilized` / `ScaleDownStabilized`);
* rate policies: each policy (`Pods`: N pods, `Percent`: N% of the count at the start of the period) allows
  a change per `periodSeconds`, counting the scale events already made in that period; `selectPolicy` picks
  the policy allowing the most change (`Max`, the default), the least (`Min`), or forbids the direction
  (`Disabled`). Limits give `ScaleUpLimit` / `ScaleDownLimit`, min/max bounds as above.

Usage rules: one `Stabilizer` per controller, keyed by the autoscaler's `namespace/name`; times come from the
controller's clock (monotonic seconds); `forget(key)` when the autoscaler is deleted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from minikube_py.client.clock import Clock

SCALE_UP_LIMIT_FACTOR, SCALE_UP_LIMIT_MINIMUM = 2, 4
WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
READY = ("ReadyForNewScale", "recommended size matches current size")
UP_STABILIZED = ("ScaleUpStabilized",
                 "recent recommendations were lower than current one, applying the lowest recent recommendation")
DOWN_STABILIZED = ("ScaleDownStabilized",
                   "recent recommendations were higher than current one, applying the highest recent recommendation")


@dataclass
class Decision:
    """The replica count to ask for, and why (the AbleToScale and ScalingLimited conditions' reasons)."""

    replicas: int
    stabilized: tuple[str, str]  # AbleToScale (True) reason and message
    limited: bool  # ScalingLimited status
    limit: tuple[str, str]  # ScalingLimited reason and message


@dataclass
class _History:
    recommendations: list[tuple[float, int]] = field(default_factory=list)  # (when, replicas)
    scale_ups: list[tuple[float, int]] = field(default_factory=list)  # (when, pods added)
    scale_downs: list[tuple[float, int]] = field(default_factory=list)  # (when, pods removed)


class Stabilizer:
    def __init__(self, clock: Clock, downscale_stabilization: float = 300.0) -> None:
        self.clock = clock
        self.downscale_stabilization = downscale_stabilization
        self._history: dict[str, _History] = {}

    def forget(self, key: str) -> None:
        self._history.pop(key, None)

    def record_initial(self, key: str, current: int) -> None:
        """The first sync remembers the current count as a recommendation (a new controller never scales
        down at once)."""
        if key not in self._history:
            self._history[key] = _History([(self.clock.now(), current)])

    def normalize(self, key: str, behavior: dict[str, Any] | None, current: int, desired: int,
                  min_replicas: int, max_replicas: int) -> Decision:
        if behavior is None:
            stabilized = self._stabilize_down(key, desired)
            reason = DOWN_STABILIZED if stabilized != desired else READY
            replicas, limit = _bounded(current, stabilized, min_replicas, max_replicas)
            return Decision(replicas, reason, replicas != stabilized, limit)
        up, down = _rules(behavior.get("scaleUp"), 0.0), _rules(behavior.get("scaleDown"), self.downscale_stabilization)
        stabilized, reason = self._stabilize_both(key, current, desired, up, down)
        replicas, limit = self._rate_limited(key, current, stabilized, min_replicas, max_replicas, up, down)
        return Decision(replicas, reason if stabilized != desired else READY, replicas != stabilized, limit)

    def record_scale(self, key: str, behavior: dict[str, Any] | None, previous: int, new: int) -> None:
        """Remember a scale event, for the rate policies (only with a behavior, as kube)."""
        if behavior is None or new == previous:
            return
        history = self._history.setdefault(key, _History())
        up = new > previous
        rules = _rules(behavior.get("scaleUp" if up else "scaleDown"), 0.0)
        longest = max((int(p.get("periodSeconds", 0)) for p in rules["policies"]), default=0)
        now = self.clock.now()
        events = history.scale_ups if up else history.scale_downs
        events[:] = [event for event in events if event[0] >= now - longest]  # outdated ones are dropped
        events.append((now, abs(new - previous)))

    # without behavior ---------------------------------------------------------------------------------

    def _stabilize_down(self, key: str, desired: int) -> int:
        now = self.clock.now()
        history = self._history.setdefault(key, _History())
        cutoff = now - self.downscale_stabilization
        recent = [(when, replicas) for when, replicas in history.recommendations if when >= cutoff]
        highest = max([desired, *(replicas for _, replicas in recent)])
        history.recommendations = [*recent, (now, desired)]
        return highest

    # with behavior --------------------------------------------------------------------------------------

    def _stabilize_both(self, key: str, current: int, desired: int, up: dict[str, Any],
                        down: dict[str, Any]) -> tuple[int, tuple[str, str]]:
        now = self.clock.now()
        history = self._history.setdefault(key, _History())
        up_cutoff, down_cutoff = now - up["stabilizationWindowSeconds"], now - down["stabilizationWindowSeconds"]
        lowest_up, highest_down = desired, desired
        for when, replicas in history.recommendations:
            if when > up_cutoff:
                lowest_up = min(lowest_up, replicas)
            if when > down_cutoff:
                highest_down = max(highest_down, replicas)
        recommendation = min(max(current, lowest_up), highest_down)
        oldest_kept = min(up_cutoff, down_cutoff)
        history.recommendations = [r for r in history.recommendations if r[0] >= oldest_kept] + [(now, desired)]
        return recommendation, UP_STABILIZED if desired >= current else DOWN_STABILIZED

    def _rate_limited(self, key: str, current: int, desired: int, min_replicas: int, max_replicas: int,
                      up: dict[str, Any], down: dict[str, Any]) -> tuple[int, tuple[str, str]]:
        history = self._history.setdefault(key, _History())
        if desired > current:
            limit = max(self._scale_limit(current, history, up, up=True), current)
            highest, reason = (limit, UP_LIMIT) if max_replicas > limit else (max_replicas, TOO_MANY)
            if desired > highest:
                return highest, reason
        elif desired < current:
            limit = min(self._scale_limit(current, history, down, up=False), current)
            lowest, reason = (limit, DOWN_LIMIT) if min_replicas < limit else (min_replicas, TOO_FEW)
            if desired < lowest:
                return lowest, reason
        return desired, WITHIN_RANGE

    def _period_start(self, current: int, history: _History, period: float) -> int:
        """The replica count at the start of the last `period` seconds, from the scale events since."""
        cutoff = self.clock.now() - period
        added = sum(change for when, change in history.scale_ups if when > cutoff)
        removed = sum(change for when, change in history.scale_downs if when > cutoff)
        return current - added + removed

    def _scale_limit(self, current: int, history: _History, rules: dict[str, Any], up: bool) -> int:
        """The furthest the policies let the replicas move from `current` in one direction (kube's
        calculateScaleUpLimitWithScalingRules and its scale-down twin): each policy allows `value` pods or
        percent more (less) than the count at the start of its period; `selectPolicy: Max` takes the policy
        allowing the biggest change, `Min` the smallest."""
        if rules["selectPolicy"] == "Disabled":
            return current
        proposals = []
        for policy in rules["policies"]:
            start = self._period_start(current, history, float(policy.get("periodSeconds", 0)))
            value = int(policy.get("value", 0))
            if policy.get("type") == "Pods":
                proposals.append(start + value if up else start - value)
            else:
                proposals.append(math.ceil(start * (1 + value / 100)) if up else int(start * (1 - value / 100)))
        if not proposals:
            return current
        biggest_change = max if up else min
        smallest_change = min if up else max
        return (smallest_change if rules["selectPolicy"] == "Min" else biggest_change)(proposals)


def _bounded(current: int, desired: int, min_replicas: int, max_replicas: int) -> tuple[int, tuple[str, str]]:
    """kube's convertDesiredReplicasWithRules: min/max, and at most max(2 × current, 4) in one step."""
    up_limit = max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM)
    highest, reason = (up_limit, UP_LIMIT) if max_replicas > up_limit else (max_replicas, TOO_MANY)
    if desired < min_replicas:
        return min_replicas, TOO_FEW
    if desired > highest:
        return highest, reason
    return desired, WITHIN_RANGE


def _rules(rules: dict[str, Any] | None, default_window: float) -> dict[str, Any]:
    """Scaling rules with the defaults the apiserver normally filled in already."""
    rules = dict(rules or {})
    if rules.get("stabilizationWindowSeconds") is None:
        rules["stabilizationWindowSeconds"] = default_window
    rules.setdefault("selectPolicy", "Max")
    rules.setdefault("policies", [])
    return rules

"""The resource scoring strategies, as pure functions of integers (kube's `noderesources` scorers).

Each strategy turns, for one node, the lists `requested` (what the node's pods plus the incoming pod ask for)
and `allocatable` (what the node offers), one entry per configured resource, into a score in [0, 100]:

* LeastAllocated (the default, spreads pods): per resource `(allocatable - requested) * 100 / allocatable`,
  0 when over-committed; the weighted average over resources.
* MostAllocated (bin packing): per resource `requested * 100 / allocatable`, requested capped at allocatable;
  the weighted average.
* RequestedToCapacityRatio: per resource the utilisation `requested * 100 / allocatable` (100 when
  over-committed) mapped through a broken-line `shape` of (utilization, score) points, scores given in
  [0, 10] and scaled by 10; the weighted average over resources with a positive score, rounded.
* BalancedAllocation: `(1 - std) * 100` where std is the standard deviation of the per-resource fractions
  `requested / allocatable` (each capped at 1).

A resource whose allocatable is 0 is left out (the node does not have it). Arithmetic follows Go's int64:
divisions truncate toward zero, and only RequestedToCapacityRatio's average is rounded (half away from zero).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from minikube_py.scheduler.framework.interface import MAX_NODE_SCORE

MAX_CUSTOM_PRIORITY_SCORE = 10  # the scale of RequestedToCapacityRatio's shape scores
MAX_UTILIZATION = 100

Scorer = Callable[[Sequence[int], Sequence[int]], int]  # (requested, allocatable) -> score


def _go_div(a: int, b: int) -> int:
    """Go's integer division, truncating toward zero (Python's // floors)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Pods without requests count with defaults, so requested can exceed capacity.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _weighted_average(resource_score: Callable[[int, int], int], weights: Sequence[int]) -> Scorer:
    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for i, weight in enumerate(weights):
            if allocatable[i] == 0:
                continue
            total += resource_score(requested[i], allocatable[i]) * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    return score


def least_allocated(weights: Sequence[int]) -> Scorer:
    return _weighted_average(least_requested_score, weights)


def most_allocated(weights: Sequence[int]) -> Scorer:
    return _weighted_average(most_requested_score, weights)


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """The piecewise-linear function through `shape`'s (x, y) points, flat before the first and after the
    last; `shape` is sorted by x with no repeats."""
    def value(x: int) -> int:
        for i, (x1, y1) in enumerate(shape):
            if x <= x1:
                if i == 0:
                    return y1
                x0, y0 = shape[i - 1]
                return y0 + _go_div((y1 - y0) * (x - x0), x1 - x0)
        return shape[-1][1]

    return value


def requested_to_capacity_ratio(weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> Scorer:
    """`shape` is the configured (utilization, score) points, scores in [0, MAX_CUSTOM_PRIORITY_SCORE]."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    function = broken_linear([(utilization, score * scale) for utilization, score in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return function(MAX_UTILIZATION)
        return function(requested * MAX_UTILIZATION // capacity)

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for i, weight in enumerate(weights):
            if allocatable[i] == 0:
                continue
            resource = resource_score(requested[i], allocatable[i])
            if resource > 0:
                total += resource * weight
                weight_sum += weight
        return math.floor(total / weight_sum + 0.5) if weight_sum else 0

    return score


def balanced_allocation(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    fractions = [min(r / a, 1.0) for r, a in zip(requested, allocatable, strict=True) if a != 0]
    if len(fractions) == 2:  # the usual cpu and memory: the std of two values is half their distance
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)

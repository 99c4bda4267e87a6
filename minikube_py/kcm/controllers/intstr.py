"""Int-or-percent values: a count of pods given either as a number or as a percentage of a total (kube's
`intstr.IntOrString` and `GetScaledValueFromIntOrPercent`).

A Deployment's and a DaemonSet's `maxSurge` / `maxUnavailable` and a PodDisruptionBudget's `minAvailable` /
`maxUnavailable` are written `3` or `"25%"`. `scaled_value(value, total, round_up)` turns one into a count:
a number is taken as it is, `"N%"` is N percent of `total`, rounded up or down as the caller's rule wants
(a Deployment rounds surge up and unavailability down; a DaemonSet and a budget round both up). So "25%" of
10 pods is 3 rounded up and 2 rounded down. A missing value counts as 0.

Usage rules: a string that is not `<integer>%` raises ValueError with kube's message; the apiserver's
validation refuses such values in the workloads, so only a budget's controller has to report it.
"""

from __future__ import annotations

import re

_PERCENT = re.compile(r"^([+-]?[0-9]+)%$")


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    match = _PERCENT.match(value)
    if match is None:
        raise ValueError(f'invalid value for IntOrString: invalid value "{value}"')
    numerator = int(match.group(1)) * total
    return -(-numerator // 100) if round_up else numerator // 100

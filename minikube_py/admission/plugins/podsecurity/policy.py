"""Evaluating a pod against a Pod Security level: which checks run, in which order, and the verdict's words.

`evaluate(level_version, metadata, spec)` runs the level's checks (`checks.py`) on a pod's metadata and spec
and returns a `Result`. The privileged level runs none; baseline runs the baseline checks; restricted runs
the restricted checks and the baseline checks no restricted check replaces. The order is kube's: baseline
check ids sorted, then restricted check ids sorted, so messages list violations as kube's do:

    violates PodSecurity "restricted:latest": privileged (container "c" must ...), runAsNonRoot != true (...)

`Result.detail()` is that list with details (for refusals and warnings); `Result.reason()` is the reasons
alone (for the per-pod warnings when a namespace's enforce level is raised).
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import CHECKS, Check, Obj, Violation
from .levels import BASELINE, PRIVILEGED, RESTRICTED, LevelVersion


def _ordered(level: str) -> tuple[Check, ...]:
    baseline = sorted((c for c in CHECKS if c.level == BASELINE), key=lambda c: c.id)
    restricted = sorted((c for c in CHECKS if c.level == RESTRICTED), key=lambda c: c.id)
    if level == BASELINE:
        return tuple(baseline)
    replaced = {c.overrides for c in restricted}
    return tuple(c for c in baseline if c.id not in replaced) + tuple(restricted)


LEVEL_CHECKS = {PRIVILEGED: (), BASELINE: _ordered(BASELINE), RESTRICTED: _ordered(RESTRICTED)}


@dataclass(frozen=True)
class Result:
    violations: tuple[Violation, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.violations

    def reason(self) -> str:
        return ", ".join(v.reason for v in self.violations)

    def detail(self) -> str:
        return ", ".join(f"{v.reason} ({v.detail})" if v.detail else v.reason for v in self.violations)


def evaluate(level_version: LevelVersion, metadata: Obj, spec: Obj) -> Result:
    """Run the level's checks on a pod (every version is evaluated with the latest checks)."""
    found = (check.run(metadata, spec) for check in LEVEL_CHECKS[level_version.level])
    return Result(tuple(v for v in found if v is not None))

"""Pod Security levels and the namespace labels that choose them (kube's pod-security-admission `api`).

A namespace picks, for each of the three modes, a level (`privileged`, `baseline`, `restricted`) and the
version of that level's checks, through six labels:

    pod-security.kubernetes.io/enforce: restricted        # refuse violating pods
    pod-security.kubernetes.io/enforce-version: v1.32     # "latest" (default) or "v1.<minor>"
    pod-security.kubernetes.io/audit: baseline            # annotate the audit event
    pod-security.kubernetes.io/warn: restricted           # answer with a Warning header

`policy_for(labels)` resolves them to a `Policy`, starting from the defaults kube-apiserver uses without an
AdmissionConfiguration (privileged:latest for every mode) and returning the label errors alongside. As in
kube, a bad label never leaves a mode unset: a bad enforce level fails closed (restricted), a bad audit or
warn level fails open (privileged), and a bad version means latest. An explicit enforce level stricter than
the warn level also raises warn to it, unless a warn label says otherwise.

mkpy implements one version of the checks (kube 1.32's): a version label is parsed, validated and shown in
messages (`restricted:v1.30`), but every version is evaluated with the latest checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ....api import errors

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)  # from least to most strict
LATEST = "latest"

PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")

_VERSION = re.compile(r"^v1\.(0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class LevelVersion:
    """One mode's choice: a level and the version of its checks (`restricted:latest`)."""

    level: str = PRIVILEGED
    version: str = LATEST

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = LevelVersion()
    audit: LevelVersion = LevelVersion()
    warn: LevelVersion = LevelVersion()

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level


DEFAULT_POLICY = Policy()


def stricter(a: str, b: str) -> bool:
    """Whether level `a` is stricter than level `b`."""
    return LEVELS.index(a) > LEVELS.index(b)


def policy_for(labels: dict[str, str] | None,
               defaults: Policy = DEFAULT_POLICY) -> tuple[Policy, list[errors.FieldError]]:
    """The policy a namespace's labels choose, and one FieldError per bad label value (always a usable
    policy, even with errors)."""
    labels = labels or {}
    found: list[errors.FieldError] = []
    modes = {}
    for mode in MODES:
        current: LevelVersion = getattr(defaults, mode)
        level = _level(labels, mode, current.level, found)
        version = _version(labels, mode, current.version, found)
        modes[mode] = LevelVersion(level, version)
    policy = Policy(**modes)
    enforce_chosen = labels.get(PREFIX + "enforce") in LEVELS  # a bad value (restricted) does not count
    if enforce_chosen and PREFIX + "warn" not in labels and stricter(policy.enforce.level, policy.warn.level):
        version = policy.warn.version if PREFIX + "warn-version" in labels else policy.enforce.version
        policy = replace(policy, warn=LevelVersion(policy.enforce.level, version))
    return policy, found


def _level(labels: dict[str, str], mode: str, default: str, found: list[errors.FieldError]) -> str:
    key = PREFIX + mode
    if key not in labels:
        return default
    value = labels[key]
    if value in LEVELS:
        return value
    found.append(errors.invalid(_path(key), value, "must be one of " + ", ".join(LEVELS)))
    return RESTRICTED if mode == "enforce" else PRIVILEGED


def _version(labels: dict[str, str], mode: str, default: str, found: list[errors.FieldError]) -> str:
    key = f"{PREFIX}{mode}-version"
    if key not in labels:
        return default
    value = labels[key]
    if value == LATEST or _VERSION.match(value):
        return value
    found.append(errors.invalid(_path(key), value, 'must be "latest" or "v1.x"'))
    return LATEST


def _path(label: str) -> str:
    return f"metadata.labels[{label}]"

"""The audit policy: which requests are logged, at which level (kube's `audit.k8s.io/v1` Policy).

`Policy.decide(attributes)` tries the rules in order against a request's authorization attributes and the
first whose every given field matches decides the level and the stages to leave out; no match means None
(nothing is logged). Rules match on `users`, `userGroups`, `verbs`, `resources` (`{group, resources:
[pods, pods/log, "*/status"], resourceNames}`), `namespaces` ("" is cluster-scoped) and `nonResourceURLs`
(a trailing `*` matches any suffix). `apiserver/audit.py` writes the events.

Usage rules: `load_policy` raises `PolicyError`, whose one-line message names the file and the problem;
`mkpy apiserver` loads the policy before starting, so a bad file never starts a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..api import errors
from ..auth.authorizer import Attributes

API_VERSION = "audit.k8s.io/v1"
LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")


class PolicyError(ValueError):
    """The audit policy cannot be used; the message names the file and the problem."""


# the policy ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupResources:
    """One `resources` entry of a rule: a group, its resources (`pods`, `pods/log`, `*/status`, `pods/*`)
    and optionally the object names."""

    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()

    def matches(self, attributes: Attributes) -> bool:
        if attributes.api_group != self.group:
            return False
        if not self.resources:
            return True
        if self.resource_names and attributes.name not in self.resource_names:
            return False
        resource, subresource = attributes.resource, attributes.subresource
        combined = f"{resource}/{subresource}" if subresource else resource
        return any(spec in (combined, "*") or (subresource and spec == f"*/{subresource}")
                   or spec == f"{resource}/*" for spec in self.resources)


@dataclass(frozen=True)
class Rule:
    """A policy rule: every field given must match; the first matching rule decides the level."""

    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool | None = None

    def matches(self, attributes: Attributes) -> bool:
        user = attributes.user
        if self.users and user.username not in self.users:
            return False
        if self.user_groups and not any(group in self.user_groups for group in user.groups):
            return False
        if self.verbs and attributes.verb not in self.verbs:
            return False
        if self.namespaces or self.resources:
            return attributes.resource_request and self._matches_resource(attributes)
        if self.non_resource_urls:
            return not attributes.resource_request and any(_path_matches(attributes.path, spec)
                                                           for spec in self.non_resource_urls)
        return True

    def _matches_resource(self, attributes: Attributes) -> bool:
        # cluster-scoped requests have the namespace "", which a rule may list
        if self.namespaces and attributes.namespace not in self.namespaces:
            return False
        return not self.resources or any(entry.matches(attributes) for entry in self.resources)


def _path_matches(path: str, spec: str) -> bool:
    return spec in ("*", path) or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


@dataclass(frozen=True)
class Decision:
    """What the policy says about one request."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def at_least(self, level: str) -> bool:
        return LEVELS.index(self.level) >= LEVELS.index(level)


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...]
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def evaluate(self, attributes: Attributes) -> Decision:
        for rule in self.rules:
            if rule.matches(attributes):
                omit = rule.omit_managed_fields
                return Decision(rule.level, self.omit_stages | rule.omit_stages,
                                self.omit_managed_fields if omit is None else omit)
        return Decision("None", self.omit_stages, self.omit_managed_fields)


def load_policy(path: str | Path) -> Policy:
    """Read and check a Policy file; raises PolicyError naming `path`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PolicyError(f'failed to read audit policy file "{path}": {err}') from err
    try:
        return parse_policy(text)
    except PolicyError as err:
        raise PolicyError(f'invalid audit policy file "{path}": {err}') from None


def parse_policy(text: str) -> Policy:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise PolicyError(f"cannot parse YAML: {' '.join(str(err).split())}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "Policy" or doc.get("apiVersion") != API_VERSION:
        raise PolicyError(f'expected kind "Policy" of apiVersion "{API_VERSION}"')
    rules = doc.get("rules")
    if not isinstance(rules, list) or not rules:
        raise PolicyError("a policy needs at least one rule")
    return Policy(rules=tuple(_rule(rule, f"rules[{i}]") for i, rule in enumerate(rules)),
                  omit_stages=_stages(doc.get("omitStages"), "omitStages"),
                  omit_managed_fields=_flag(doc.get("omitManagedFields"), "omitManagedFields") or False)


def _rule(rule: Any, path: str) -> Rule:
    if not isinstance(rule, dict):
        raise PolicyError(f"{path}: must be an object")
    level = rule.get("level")
    if level not in LEVELS:
        raise PolicyError(errors.not_supported(f"{path}.level", level, list(LEVELS)).describe())
    resources = tuple(_group_resources(entry, f"{path}.resources[{j}]")
                      for j, entry in enumerate(_strings_or_objects(rule.get("resources"), f"{path}.resources")))
    urls = _strings(rule.get("nonResourceURLs"), f"{path}.nonResourceURLs")
    if urls and (resources or rule.get("namespaces")):
        raise PolicyError(f"{path}: rules can only apply to either non-resource URLs or resources")
    for k, url in enumerate(urls):
        if url != "*" and (not url.startswith("/") or "*" in url[:-1]):
            raise PolicyError(errors.invalid(f"{path}.nonResourceURLs[{k}]", url,
                                             "must start with '/' and may only end in '*'").describe())
    return Rule(level=level, users=_strings(rule.get("users"), f"{path}.users"),
                user_groups=_strings(rule.get("userGroups"), f"{path}.userGroups"),
                verbs=_strings(rule.get("verbs"), f"{path}.verbs"), resources=resources,
                namespaces=_strings(rule.get("namespaces"), f"{path}.namespaces"), non_resource_urls=urls,
                omit_stages=_stages(rule.get("omitStages"), f"{path}.omitStages"),
                omit_managed_fields=_flag(rule.get("omitManagedFields"), f"{path}.omitManagedFields"))


def _group_resources(entry: Any, path: str) -> GroupResources:
    if not isinstance(entry, dict):
        raise PolicyError(f"{path}: must be an object with group, resources and resourceNames")
    group = entry.get("group") or ""
    if not isinstance(group, str):
        raise PolicyError(errors.invalid(f"{path}.group", group, "must be a string").describe())
    resources = _strings(entry.get("resources"), f"{path}.resources")
    names = _strings(entry.get("resourceNames"), f"{path}.resourceNames")
    if names and not resources:
        raise PolicyError(errors.invalid(f"{path}.resourceNames", names,
                                         "using resourceNames requires at least one resource").describe())
    return GroupResources(group, resources, names)


def _strings_or_objects(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PolicyError(f"{path}: must be a list")
    return value


def _strings(value: Any, path: str) -> tuple[str, ...]:
    items = _strings_or_objects(value, path)
    if not all(isinstance(item, str) for item in items):
        raise PolicyError(f"{path}: must be a list of strings")
    return tuple(items)


def _stages(value: Any, path: str) -> frozenset[str]:
    stages = _strings(value, path)
    for k, stage in enumerate(stages):
        if stage not in STAGES:
            raise PolicyError(errors.not_supported(f"{path}[{k}]", stage, list(STAGES)).describe())
    return frozenset(stages)


def _flag(value: Any, path: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise PolicyError(errors.invalid(path, value, "must be true or false").describe())
    return value


DEFAULT_POLICY = """\
# mkpy's default audit policy: who did what, without request or response bodies.
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]   # one event per request (two for watches) instead of two
rules:
- level: None                   # health probes arrive many times a second
  nonResourceURLs: [/healthz*, /livez*, /readyz*]
- level: Metadata
"""


def ensure_default_policy(path: Path) -> Path:
    """Write `DEFAULT_POLICY` to `path` unless it exists (a student's edits survive `mkpy up`)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DEFAULT_POLICY, encoding="utf-8")
    return path

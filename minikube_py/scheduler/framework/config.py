"""The scheduler's configuration file: a `KubeSchedulerConfiguration` (`kubescheduler.config.k8s.io/v1`)
decoded strictly, defaulted and validated as kube-scheduler does, into `SchedulerConfiguration`/`Profile`.

Where it sits: `mkpy scheduler --config FILE` calls `load_file` once at start; the scheduler builds one
`runtime.Framework` per `Profile` (pods pick a profile by `spec.schedulerName`). Without a file,
`default_configuration()` gives what kube runs with an empty config.

What defaulting does (kube's v1 defaults, minus DRA and every volume plugin but VolumeBinding):
* no profiles → one; a single profile without `schedulerName` is `default-scheduler`.
* every profile starts from the default `multiPoint` set (`DEFAULT_PLUGINS`); each point's `enabled` and
  `disabled` lists are merged over the defaults like kube: `disabled: [{name: "*"}]` drops every default of
  that point, and a default plugin named again under `enabled` keeps its place with the new settings.
* `multiPoint` plugins are expanded to each extension point their class implements. The classes are looked
  up in the registry (`registry.serves`: the class defines the point's method) before any plugin is built,
  so a wrong plugin name or point is a config error and `Profile.plugins` shows the final lists. Plugins
  enabled explicitly at a point come first there, in their own order, then the other multiPoint plugins.
* Score weights: the score point's own weight wins over multiPoint's; no weight (or 0) means 1, as in kube.
* `pluginConfig` args are merged over kube's default args (`DEFAULT_PLUGIN_ARGS`; nested objects merged, a
  missing, null or empty-list value takes the default); `apiVersion`/`kind` inside args are dropped.

Usage rules: every error is a `ConfigError` with one line naming the field as kube does
(`profiles[0].plugins.score.enabled[1].name: Invalid value: "Foo": plugin "Foo" does not exist`); several
validation errors are joined as `[first, second]`. Plugin args are checked by the plugins themselves when the
framework builds them (`runtime.Framework` raises `ConfigError` at `profiles[i].pluginConfig[j].args…`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from minikube_py.api import errors as field_errors
from minikube_py.api.gofmt import go_duration
from minikube_py.scheduler.framework import registry as plugin_registry
from minikube_py.scheduler.framework.interface import EXTENSION_POINTS, MAX_NODE_SCORE, MAX_TOTAL_SCORE
from minikube_py.scheduler.framework.registry import POINT_TYPES, Registry, serves

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
MULTI_POINT = "multiPoint"

DEFAULT_PLUGINS: list[tuple[str, int | None]] = [  # (name, score weight), the order kube 1.32 runs them in
    ("SchedulingGates", None), ("PrioritySort", None), ("NodeUnschedulable", None), ("NodeName", None),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", None), ("NodeResourcesFit", 1),
    ("VolumeBinding", None), ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", None),
]
_DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
DEFAULT_PLUGIN_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinity": {"hardPodAffinityWeight": 1},
    "NodeResourcesBalancedAllocation": {"resources": _DEFAULT_RESOURCES},
    "NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated", "resources": _DEFAULT_RESOURCES}},
    "PodTopologySpread": {"defaultingType": "System"},
}

_TOP_FIELDS = frozenset({
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "healthzBindAddress",
    "metricsBindAddress", "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive"})
_LEADER_FIELDS = frozenset({"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
                            "resourceName", "resourceNamespace"})
_CLIENT_FIELDS = frozenset({"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"})
_PROFILE_FIELDS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
_POINTS = (MULTI_POINT, *EXTENSION_POINTS)
_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", list: "a list",
               dict: "an object"}
_GO_DURATION = re.compile(r"[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}


class ConfigError(ValueError):
    """The configuration is unusable; the message is one line naming the offending field."""


@dataclass
class PluginRef:
    """One entry of an `enabled`/`disabled` list (kube's config `Plugin`)."""

    name: str
    weight: int | None = None


@dataclass
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


@dataclass
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0  # seconds
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass
class ClientConnection:
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100


@dataclass
class Profile:
    """One scheduler profile, fully defaulted: what `runtime.Framework` builds plugins from."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    plugins: dict[str, list[str]] = field(default_factory=dict)  # extension point → plugin names, run order
    weights: dict[str, int] = field(default_factory=dict)  # score plugin → weight
    plugin_config: dict[str, dict[str, Any]] = field(default_factory=dict)  # plugin → args (user's first)
    percentage_of_nodes_to_score: int | None = None  # None: the configuration's value
    plugin_sets: dict[str, PluginSet] = field(default_factory=dict)  # the merged config form, per point
    index: int = 0  # position in `profiles`, for error paths


@dataclass
class SchedulerConfiguration:
    profiles: list[Profile]
    registry: Registry  # the in-tree plugins plus the out-of-tree ones the file named
    percentage_of_nodes_to_score: int | None = None  # None or 0: adaptive
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16  # accepted for compatibility; mkpy runs plugins on one event loop
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)

    def profile(self, scheduler_name: str) -> Profile | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)


@dataclass
class _UserProfile:
    """A profile as written in the file, out-of-tree names already resolved to registry names."""

    path: str
    scheduler_name: str | None = None
    percentage: int | None = None
    plugin_sets: dict[str, PluginSet] = field(default_factory=dict)
    plugin_config: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


# --- entry points -------------------------------------------------------------------------------------------


def load(text: str, registry: Registry | None = None) -> SchedulerConfiguration:
    """Decode, default and validate a KubeSchedulerConfiguration document."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"malformed YAML: {_yaml_problem(error)}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"the configuration must be a {KIND} object (apiVersion: {API_VERSION})")
    registry = registry.copy() if registry is not None else plugin_registry.in_tree_registry()
    return _from_document(document, registry)


def load_file(path: str | Path, registry: Registry | None = None) -> SchedulerConfiguration:
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"reading scheduler configuration {path}: {error}") from None
    return load(text, registry)


def default_configuration(registry: Registry | None = None) -> SchedulerConfiguration:
    """What kube-scheduler runs with when given no configuration file."""
    return load(f"apiVersion: {API_VERSION}\nkind: {KIND}\n", registry)


def _from_document(document: dict[str, Any], registry: Registry) -> SchedulerConfiguration:
    _check_type_meta(document)
    _strict(document, "", _TOP_FIELDS)
    if _field(document, "extenders", "", list):
        _raise_if([field_errors.forbidden("extenders", "scheduler extenders are not supported")])
    config = SchedulerConfiguration(
        profiles=[], registry=registry,
        percentage_of_nodes_to_score=_field(document, "percentageOfNodesToScore", "", int),
        pod_initial_backoff_seconds=_field(document, "podInitialBackoffSeconds", "", int, 1),
        pod_max_backoff_seconds=_field(document, "podMaxBackoffSeconds", "", int, 10),
        parallelism=_field(document, "parallelism", "", int, 16),
        leader_election=_decode_leader_election(_field(document, "leaderElection", "", dict, {})),
        client_connection=_decode_client_connection(_field(document, "clientConnection", "", dict, {})))
    raw_profiles = _field(document, "profiles", "", list, [])
    users = [_decode_profile(raw, f"profiles[{i}]", registry) for i, raw in enumerate(raw_profiles)]
    users = users or [_UserProfile("profiles[0]")]
    if len(users) == 1 and users[0].scheduler_name is None:
        users[0].scheduler_name = DEFAULT_SCHEDULER_NAME
    _raise_if(_validate_top(config) + [e for user in users for e in _validate_user_profile(user, registry)])
    config.profiles = [_default_profile(i, user, registry) for i, user in enumerate(users)]
    _raise_if([e for profile in config.profiles for e in _validate_profile(profile)]
              + _validate_profiles(config.profiles))
    return config


# --- decoding -----------------------------------------------------------------------------------------------


def _check_type_meta(document: Mapping[str, Any]) -> None:
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if not api_version:
        _raise_if([field_errors.required("apiVersion", f'must be "{API_VERSION}"')])
    if not kind:
        _raise_if([field_errors.required("kind", f'must be "{KIND}"')])
    if api_version != API_VERSION or kind != KIND:
        raise ConfigError(f'no kind "{kind}" is registered for version "{api_version}" '
                          f"(mkpy reads {KIND} in {API_VERSION})")


def _decode_leader_election(raw: dict[str, Any]) -> LeaderElection:
    _strict(raw, "leaderElection", _LEADER_FIELDS)
    path, default = "leaderElection", LeaderElection()
    return LeaderElection(
        leader_elect=_field(raw, "leaderElect", path, bool, default.leader_elect),
        lease_duration=_duration(raw, "leaseDuration", path, default.lease_duration),
        renew_deadline=_duration(raw, "renewDeadline", path, default.renew_deadline),
        retry_period=_duration(raw, "retryPeriod", path, default.retry_period),
        resource_lock=_field(raw, "resourceLock", path, str, "") or default.resource_lock,
        resource_name=_field(raw, "resourceName", path, str, "") or default.resource_name,
        resource_namespace=_field(raw, "resourceNamespace", path, str, "") or default.resource_namespace)


def _decode_client_connection(raw: dict[str, Any]) -> ClientConnection:
    _strict(raw, "clientConnection", _CLIENT_FIELDS)
    path = "clientConnection"
    return ClientConnection(kubeconfig=_field(raw, "kubeconfig", path, str, ""),
                            qps=_field(raw, "qps", path, float, 0.0) or 50.0,
                            burst=_field(raw, "burst", path, int, 0) or 100)


def _decode_profile(raw: Any, path: str, registry: Registry) -> _UserProfile:
    raw = _object(raw, path)
    _strict(raw, path, _PROFILE_FIELDS)
    user = _UserProfile(path, _field(raw, "schedulerName", path, str),
                        _field(raw, "percentageOfNodesToScore", path, int))
    plugins = _field(raw, "plugins", path, dict, {})
    _strict(plugins, f"{path}.plugins", frozenset(_POINTS))
    for point in _POINTS:
        if point in plugins:
            user.plugin_sets[point] = _decode_plugin_set(plugins[point], f"{path}.plugins.{point}", registry)
    for j, entry in enumerate(_field(raw, "pluginConfig", path, list, [])):
        user.plugin_config.append(_decode_plugin_config(entry, f"{path}.pluginConfig[{j}]", registry))
    return user


def _decode_plugin_set(raw: Any, path: str, registry: Registry) -> PluginSet:
    raw = _object(raw, path)
    _strict(raw, path, frozenset({"enabled", "disabled"}))
    plugin_set = PluginSet()
    for i, entry in enumerate(_field(raw, "enabled", path, list, [])):
        plugin_set.enabled.append(_decode_plugin(entry, f"{path}.enabled[{i}]", registry))
    for i, entry in enumerate(_field(raw, "disabled", path, list, [])):
        plugin_set.disabled.append(_decode_plugin(entry, f"{path}.disabled[{i}]", registry).name)
    return plugin_set


def _decode_plugin(raw: Any, path: str, registry: Registry) -> PluginRef:
    raw = _object(raw, path)
    _strict(raw, path, frozenset({"name", "weight"}))
    name = _field(raw, "name", path, str, "")
    if not name:
        _raise_if([field_errors.required(f"{path}.name")])
    return PluginRef(_resolve(name, f"{path}.name", registry), _field(raw, "weight", path, int))


def _decode_plugin_config(raw: Any, path: str, registry: Registry) -> tuple[str, dict[str, Any]]:
    raw = _object(raw, path)
    _strict(raw, path, frozenset({"name", "args"}))
    name = _field(raw, "name", path, str, "")
    if not name:
        _raise_if([field_errors.required(f"{path}.name")])
    name = _resolve(name, f"{path}.name", registry)
    args = dict(_field(raw, "args", path, dict, {}))
    args.pop("apiVersion", None)
    kind = args.pop("kind", None)
    if kind is not None and kind != f"{name}Args":
        _raise_if([field_errors.invalid(f"{path}.args.kind", kind, f'must be "{name}Args"')])
    return name, args


def _resolve(name: str, path: str, registry: Registry) -> str:
    """The registry name for `name`, importing and registering an out-of-tree `module:Class` reference."""
    if not plugin_registry.is_out_of_tree_reference(name):
        return name
    try:
        cls = plugin_registry.load_out_of_tree(name)
        registry.register(cls.name, cls)  # type: ignore[attr-defined]  # checked by load_out_of_tree
    except ValueError as error:
        _raise_if([field_errors.invalid(path, name, str(error))])
    return cls.name  # type: ignore[attr-defined,no-any-return]


def _strict(obj: Mapping[str, Any], path: str, known: frozenset[str]) -> None:
    for key in obj:
        if key not in known:
            raise ConfigError(f'strict decoding error: unknown field "{_join(path, str(key))}"')


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _raise_if([field_errors.invalid(path, value, "must be an object")])
    return value


def _field(obj: Mapping[str, Any], key: str, path: str, kind: type, default: Any = None) -> Any:
    """`obj[key]` checked to be of `kind` (an int is a float, a bool no int); `default` when absent."""
    value = obj.get(key)
    if value is None:
        return default
    numeric = kind in (int, float) and isinstance(value, int | float) and not isinstance(value, bool)
    if not (numeric if kind in (int, float) else isinstance(value, kind)) or (kind is int and value % 1):
        _raise_if([field_errors.invalid(_join(path, key), value, f"must be {_KIND_NAMES[kind]}")])
    return float(value) if kind is float else int(value) if kind is int else value


def _duration(obj: Mapping[str, Any], key: str, path: str, default: float) -> float:
    text = _field(obj, key, path, str)
    if text is None:
        return default
    if text != "0" and not _GO_DURATION.fullmatch(text):
        _raise_if([field_errors.invalid(_join(path, key), text,
                                               f'time: invalid duration "{text}"')])
    sign = -1.0 if text.startswith("-") else 1.0
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)", text)
    return sign * sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _yaml_problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else problem


# --- defaulting ---------------------------------------------------------------------------------------------


def _default_profile(index: int, user: _UserProfile, registry: Registry) -> Profile:
    defaults = {MULTI_POINT: PluginSet([PluginRef(name, weight) for name, weight in DEFAULT_PLUGINS])}
    sets = {point: _merge_set(defaults.get(point, PluginSet()), user.plugin_sets.get(point))
            for point in _POINTS}
    plugins = {point: _expand(point, sets, registry) for point in EXTENSION_POINTS}
    weights: dict[str, int] = {}
    for ref in sets["score"].enabled + sets[MULTI_POINT].enabled:
        if ref.name in plugins["score"] and ref.name not in weights:
            weights[ref.name] = ref.weight or 1
    plugin_config = {name: _merge_args(DEFAULT_PLUGIN_ARGS.get(name, {}), args)
                     for name, args in user.plugin_config}
    for name in dict.fromkeys(ref.name for plugin_set in sets.values() for ref in plugin_set.enabled):
        if name in DEFAULT_PLUGIN_ARGS and name not in plugin_config:
            plugin_config[name] = copy.deepcopy(DEFAULT_PLUGIN_ARGS[name])
    return Profile(scheduler_name=user.scheduler_name or "", plugins=plugins, weights=weights,
                   plugin_config=plugin_config, percentage_of_nodes_to_score=user.percentage,
                   plugin_sets=sets, index=index)


def _merge_set(default: PluginSet, custom: PluginSet | None) -> PluginSet:
    """kube's mergePluginSet: drop disabled defaults, re-configure defaults in place, append the rest."""
    if custom is None:
        return PluginSet(list(default.enabled), list(default.disabled))
    disabled = set(custom.disabled) | set(default.disabled)
    custom_by_name = {ref.name: ref for ref in custom.enabled}
    enabled = [] if "*" in disabled else [custom_by_name.get(ref.name, ref) for ref in default.enabled
                                          if ref.name not in disabled]
    replaced = {ref.name for ref in enabled}
    enabled += [ref for ref in custom.enabled if ref.name not in replaced]
    return PluginSet(enabled, custom.disabled + default.disabled)


def _expand(point: str, sets: Mapping[str, PluginSet], registry: Registry) -> list[str]:
    """The plugins run at `point`: explicit ones overriding multiPoint, multiPoint ones, other explicit."""
    explicit = list(dict.fromkeys(ref.name for ref in sets[point].enabled))
    disabled = set(sets[point].disabled)
    if "*" in disabled:
        return explicit
    overrides, multi = [], []
    for ref in sets[MULTI_POINT].enabled:
        cls = registry.get(ref.name)
        if cls is None or not serves(cls, point) or ref.name in disabled or ref.name in multi:
            continue
        (overrides if ref.name in explicit else multi).append(ref.name)
    return ([n for n in explicit if n in overrides] + multi + [n for n in explicit if n not in overrides])


def _merge_args(default: Mapping[str, Any], custom: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(default))
    for key, value in custom.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_args(merged[key], value)
        elif value is not None and not (value == [] and key in merged):
            merged[key] = copy.deepcopy(value)
    return merged


# --- validation ---------------------------------------------------------------------------------------------


def _raise_if(errors: list[field_errors.FieldError]) -> None:
    if len(errors) == 1:
        raise ConfigError(errors[0].describe())
    if errors:
        raise ConfigError("[" + ", ".join(error.describe() for error in errors) + "]")


def _validate_top(config: SchedulerConfiguration) -> list[field_errors.FieldError]:
    errors = _validate_percentage("percentageOfNodesToScore", config.percentage_of_nodes_to_score)
    if config.parallelism <= 0:
        errors.append(field_errors.invalid("parallelism", config.parallelism,
                                           "should be an integer value greater than zero"))
    if config.pod_initial_backoff_seconds <= 0:
        errors.append(field_errors.invalid("podInitialBackoffSeconds", config.pod_initial_backoff_seconds,
                                           "must be greater than 0"))
    if config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds:
        errors.append(field_errors.invalid("podMaxBackoffSeconds", config.pod_max_backoff_seconds,
                                           "must be greater than or equal to PodInitialBackoffSeconds"))
    return errors + _validate_leader_election(config.leader_election)


def _validate_leader_election(election: LeaderElection) -> list[field_errors.FieldError]:
    if not election.leader_elect:
        return []
    errors = []
    durations = {"leaseDuration": election.lease_duration, "renewDeadline": election.renew_deadline,
                 "retryPeriod": election.retry_period}
    for key, seconds in durations.items():
        if seconds <= 0:
            errors.append(field_errors.invalid(f"leaderElection.{key}", go_duration(seconds),
                                               "must be greater than zero"))
    if election.lease_duration <= election.renew_deadline:
        errors.append(field_errors.invalid("leaderElection.leaseDuration",
                                           go_duration(election.lease_duration),
                                           "LeaseDuration must be greater than RenewDeadline"))
    if election.resource_lock != "leases":
        errors.append(field_errors.invalid("leaderElection.resourceLock", election.resource_lock,
                                           'resourceLock value must be "leases"'))
    return errors


def _validate_percentage(path: str, percentage: int | None) -> list[field_errors.FieldError]:
    if percentage is not None and not 0 <= percentage <= 100:
        return [field_errors.invalid(path, percentage, "not in valid range [0-100]")]
    return []


def _validate_user_profile(user: _UserProfile, registry: Registry) -> list[field_errors.FieldError]:
    """What can be checked on the profile as written: names, points, duplicates."""
    errors = [] if user.scheduler_name else [field_errors.required(f"{user.path}.schedulerName")]
    errors += _validate_percentage(f"{user.path}.percentageOfNodesToScore", user.percentage)
    for point, plugin_set in user.plugin_sets.items():
        seen: set[str] = set()
        for i, ref in enumerate(plugin_set.enabled):
            path = f"{user.path}.plugins.{point}.enabled[{i}]"
            errors += _validate_enabled(ref.name, point, path, registry)
            if ref.name in seen:
                errors.append(field_errors.duplicate(path, ref.name))
            seen.add(ref.name)
    configured: set[str] = set()
    for j, (name, _) in enumerate(user.plugin_config):
        if name in configured:
            errors.append(field_errors.duplicate(f"{user.path}.pluginConfig[{j}]", name))
        elif name not in registry:
            errors.append(field_errors.invalid(f"{user.path}.pluginConfig[{j}].name", name,
                                               f'plugin "{name}" does not exist'))
        configured.add(name)
    return errors


def _validate_enabled(name: str, point: str, path: str, registry: Registry) -> list[field_errors.FieldError]:
    cls = registry.get(name)
    if cls is None:
        return [field_errors.invalid(f"{path}.name", name, f'plugin "{name}" does not exist')]
    if point != MULTI_POINT and not serves(cls, point):
        return [field_errors.invalid(f"{path}.name", name,
                                     f'plugin "{name}" does not extend {POINT_TYPES[point]} plugin')]
    return []


def _validate_profile(profile: Profile) -> list[field_errors.FieldError]:
    """What needs the merged and expanded profile: the mandatory points and the score weights."""
    path = f"profiles[{profile.index}]"
    errors: list[field_errors.FieldError] = []
    queue_sort = profile.plugins["queueSort"]
    if len(queue_sort) != 1:
        errors.append(field_errors.invalid(
            f"{path}.plugins.queueSort", len(queue_sort), "only one queue sort plugin required for profile "
            f'with scheduler name "{profile.scheduler_name}", but got {len(queue_sort)}'))
    if not profile.plugins["bind"]:
        errors.append(field_errors.required(f"{path}.plugins.bind", "at least one bind plugin is needed for "
                                            f'profile with scheduler name "{profile.scheduler_name}"'))
    total = 0
    for name in profile.plugins["score"]:
        total += profile.weights[name] * MAX_NODE_SCORE
        if total > MAX_TOTAL_SCORE:
            errors.append(field_errors.invalid(f"{path}.plugins.score", name,
                                               "total score of Score plugins could overflow"))
            break
    return errors


def _validate_profiles(profiles: list[Profile]) -> list[field_errors.FieldError]:
    errors = []
    seen: dict[str, int] = {}
    for profile in profiles:
        if profile.scheduler_name in seen:
            errors.append(field_errors.duplicate(f"profiles[{profile.index}].schedulerName",
                                                 profile.scheduler_name))
        seen.setdefault(profile.scheduler_name, profile.index)
    first = profiles[0]
    for profile in profiles[1:]:
        path = f"profiles[{profile.index}]"
        queue_sort = profile.plugins["queueSort"]
        if queue_sort != first.plugins["queueSort"]:
            errors.append(field_errors.invalid(f"{path}.plugins.queueSort", ", ".join(queue_sort),
                                               "must be the same for all profiles"))
        elif any(profile.plugin_config.get(n) != first.plugin_config.get(n) for n in queue_sort):
            errors.append(field_errors.invalid(f"{path}.pluginConfig", queue_sort[0],
                                               "queueSort must be the same for all profiles"))
    return errors

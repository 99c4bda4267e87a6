"""The plugin registry: which plugin class a name in the configuration means (kube's `NewInTreeRegistry`).

`IN_TREE` is an explicit dict from registry name to plugin class, built from explicit imports (no
import-time self-registration). `framework/config.py` resolves every plugin name of a
`KubeSchedulerConfiguration` through a `Registry` and `framework/runtime.py` instantiates the classes.

Out-of-tree plugins (a student's plugin) need no code change: name the class as `module.path:ClassName`
wherever a plugin name may appear under `plugins:` (any `enabled` list, multiPoint included) or as a
`pluginConfig[].name`, e.g.

    profiles:
    - schedulerName: default-scheduler
      plugins:
        score:
          enabled:
          - name: mylab.plugins:ZoneScore
            weight: 3
      pluginConfig:
      - name: ZoneScore            # the class's `name` attribute (the module path works too)
        args: {zone: a}

The class is imported when the configuration is loaded and registered under its `name` attribute, which is
then its name everywhere else (plugin lists, weights, `Status.plugin`, events); the kube config shape stays
valid. Which extension points a class serves is read from the class itself (`extension_points_of`): a class
serves a point when it defines that point's primary method (`filter`, `score`, `reserve`, …).

Usage rules: a `Registry` refuses a second class under a taken name (registering the same class again is a
no-op, so one out-of-tree plugin may be named in several profiles). Copy `IN_TREE` into a `Registry` per
configuration (`in_tree_registry()`); never add to `IN_TREE` itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from minikube_py.scheduler.plugins.defaultbinder import DefaultBinder
from minikube_py.scheduler.plugins.defaultpreemption import DefaultPreemption
from minikube_py.scheduler.plugins.imagelocality import ImageLocality
from minikube_py.scheduler.plugins.interpodaffinity import InterPodAffinity
from minikube_py.scheduler.plugins.nodeaffinity import NodeAffinity
from minikube_py.scheduler.plugins.nodename import NodeName
from minikube_py.scheduler.plugins.nodeports import NodePorts
from minikube_py.scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from minikube_py.scheduler.plugins.noderesources.fit import Fit
from minikube_py.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from minikube_py.scheduler.plugins.podtopologyspread import PodTopologySpread
from minikube_py.scheduler.plugins.queuesort import PrioritySort
from minikube_py.scheduler.plugins.schedulinggates import SchedulingGates
from minikube_py.scheduler.plugins.tainttoleration import TaintToleration
from minikube_py.scheduler.plugins.volumebinding import VolumeBinding

# The method that makes a class a plugin of each extension point (the Protocols in interface.py; their
# secondary methods such as `score_extensions` or `unreserve` are optional).
POINT_METHODS: dict[str, str] = {
    "preEnqueue": "pre_enqueue", "queueSort": "less", "preFilter": "pre_filter", "filter": "filter",
    "postFilter": "post_filter", "preScore": "pre_score", "score": "score", "reserve": "reserve",
    "permit": "permit", "preBind": "pre_bind", "bind": "bind", "postBind": "post_bind",
}

# The Protocol type names kube prints in its messages ("plugin \"X\" does not extend ScorePlugin plugin").
POINT_TYPES: dict[str, str] = {point: point[0].upper() + point[1:] + "Plugin" for point in POINT_METHODS}

IN_TREE: dict[str, type] = {
    "SchedulingGates": SchedulingGates,
    "PrioritySort": PrioritySort,
    "NodeUnschedulable": NodeUnschedulable,
    "NodeName": NodeName,
    "TaintToleration": TaintToleration,
    "NodeAffinity": NodeAffinity,
    "NodePorts": NodePorts,
    "NodeResourcesFit": Fit,
    "VolumeBinding": VolumeBinding,
    "PodTopologySpread": PodTopologySpread,
    "InterPodAffinity": InterPodAffinity,
    "DefaultPreemption": DefaultPreemption,
    "NodeResourcesBalancedAllocation": BalancedAllocation,
    "ImageLocality": ImageLocality,
    "DefaultBinder": DefaultBinder,
}


class Registry:
    """Plugin classes by name; refuses a second, different class under a taken name."""

    def __init__(self, plugins: Mapping[str, type] | None = None) -> None:
        self._plugins: dict[str, type] = {}
        for name, cls in (plugins or {}).items():
            self.register(name, cls)

    def register(self, name: str, cls: type) -> None:
        existing = self._plugins.get(name)
        if existing is not None and existing is not cls:
            raise ValueError(f"a plugin named {name!r} already exists ({_qualified(existing)})")
        self._plugins[name] = cls

    def get(self, name: str) -> type | None:
        return self._plugins.get(name)

    def __getitem__(self, name: str) -> type:
        return self._plugins[name]

    def __contains__(self, name: object) -> bool:
        return name in self._plugins

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)

    def copy(self) -> Registry:
        return Registry(self._plugins)


def in_tree_registry() -> Registry:
    """A fresh registry holding the in-tree plugins, for one configuration to extend."""
    return Registry(IN_TREE)


def is_out_of_tree_reference(name: str) -> bool:
    return ":" in name


def load_out_of_tree(reference: str) -> type:
    """Import the class named by `module.path:ClassName`; ValueError with a one-line reason when it can't."""
    module_name, _, class_name = reference.partition(":")
    if not module_name or not class_name:
        raise ValueError(f"{reference!r} is not of the form module.path:ClassName")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any import-time failure of the student's module is reported, not raised
        raise ValueError(f"cannot import module {module_name!r}: {type(error).__name__}: {error}") from error
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise ValueError(f"module {module_name!r} has no class {class_name!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"class {reference!r} has no `name` attribute (a non-empty str)")
    if not extension_points_of(cls):
        raise ValueError(f"class {reference!r} implements no extension point (no `filter`, `score`, …)")
    return cls


def serves(cls: type, point: str) -> bool:
    """Whether plugin class `cls` implements extension point `point` (a key of POINT_METHODS)."""
    return callable(getattr(cls, POINT_METHODS[point], None))


def extension_points_of(cls: type) -> list[str]:
    return [point for point in POINT_METHODS if serves(cls, point)]


def _qualified(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"

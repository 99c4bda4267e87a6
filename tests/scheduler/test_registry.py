"""The plugin registry: in-tree names, duplicates refused, out-of-tree `module:Class` loading, and the real
default profile built end to end from the in-tree plugins."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from minikube_py.scheduler.framework import config, registry
from minikube_py.scheduler.framework.interface import Code, CycleState
from minikube_py.scheduler.framework.registry import IN_TREE, Registry, extension_points_of, load_out_of_tree
from minikube_py.scheduler.framework.runtime import Framework
from minikube_py.scheduler.snapshot import Snapshot
from tests.scheduler.test_config import DEFAULT_POINTS


class Labs:
    """An out-of-tree plugin as a lab would write it."""

    name = "Labs"

    def __init__(self, args: Any, handle: Any) -> None:
        self.args = args

    def filter(self, state: Any, pod: Any, node_info: Any) -> None:
        return None


class NoHooks:
    name = "NoHooks"


class NotCallable:
    name = "NotCallable"
    filter = "not a method"


@pytest.fixture
def student_module() -> Iterator[str]:
    """A module importable as `student_plugins` holding a few plugin classes."""
    module = types.ModuleType("student_plugins")
    module.Labs = Labs  # type: ignore[attr-defined]
    module.NoHooks = NoHooks  # type: ignore[attr-defined]
    module.NotCallable = NotCallable  # type: ignore[attr-defined]
    module.helper = len  # type: ignore[attr-defined]
    sys.modules["student_plugins"] = module
    yield "student_plugins"
    del sys.modules["student_plugins"]


def test_every_in_tree_plugin_is_registered_under_its_own_name() -> None:
    assert [getattr(cls, "name", None) for cls in IN_TREE.values()] == list(IN_TREE)


def test_every_default_plugin_is_in_tree_and_serves_at_least_kubes_extension_points() -> None:
    assert [name for name, _ in config.DEFAULT_PLUGINS] == list(DEFAULT_POINTS)
    for name, points in DEFAULT_POINTS.items():
        assert set(points) <= set(extension_points_of(IN_TREE[name])), name


def test_a_registry_refuses_a_second_class_under_a_taken_name() -> None:
    plugins = Registry({"Labs": Labs})
    plugins.register("Labs", Labs)  # the same class again is fine
    taken = r"^a plugin named 'Labs' already exists \(tests.scheduler.test_registry:Labs\)$"
    with pytest.raises(ValueError, match=taken):
        plugins.register("Labs", NoHooks)
    assert plugins["Labs"] is Labs and len(plugins) == 1


def test_copies_and_in_tree_registries_are_independent() -> None:
    fresh = registry.in_tree_registry()
    fresh.register("Labs", Labs)
    assert "Labs" in fresh and "Labs" not in registry.in_tree_registry() and "Labs" not in IN_TREE
    copy = fresh.copy()
    copy.register("NoHooks", NoHooks)
    assert "NoHooks" not in fresh and list(copy)[-2:] == ["Labs", "NoHooks"]


def test_an_out_of_tree_class_is_loaded_by_module_and_class_name(student_module: str) -> None:
    assert load_out_of_tree(f"{student_module}:Labs") is Labs


@pytest.mark.parametrize(("reference", "message"), [
    (":Labs", r"^':Labs' is not of the form module.path:ClassName$"),
    ("student_plugins:", r"is not of the form module.path:ClassName$"),
    ("nowhere.at.all:Labs", r"^cannot import module 'nowhere.at.all': ModuleNotFoundError: "),
    ("student_plugins:Missing", r"^module 'student_plugins' has no class 'Missing'$"),
    ("student_plugins:helper", r"^module 'student_plugins' has no class 'helper'$"),
    ("student_plugins:NoHooks", r"implements no extension point"),
    ("student_plugins:NotCallable", r"implements no extension point"),
], ids=["a reference without a module", "a reference without a class", "a module that cannot be imported",
        "a class the module lacks", "an attribute that is not a class", "a class without any hook",
        "a hook name bound to something that is not a method"])
def test_bad_out_of_tree_references_are_refused_with_a_reason(student_module: str, reference: str,
                                                              message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_out_of_tree(reference)


class Listers:
    """Informer factory stand-in: every lister lists nothing."""

    def lister(self, resource: Any) -> Any:
        return types.SimpleNamespace(list=lambda namespace=None, selector=None: [])


def node(name: str, unschedulable: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}


def test_the_default_profile_runs_end_to_end_with_the_in_tree_plugins() -> None:
    configuration = config.default_configuration()
    snapshot = Snapshot.of([], [node("open"), node("cordoned", unschedulable=True)])
    fw = Framework(configuration.profiles[0], configuration.registry, snapshot=snapshot, informers=Listers())
    pod = {"metadata": {"name": "web", "namespace": "default", "uid": "u1"},
           "spec": {"containers": [{"name": "c", "image": "nginx",
                                    "resources": {"requests": {"cpu": "100m"}}}]}}
    state = CycleState()
    _, status, _ = fw.run_pre_filter_plugins(state, pod, snapshot.list())
    assert status.is_success()
    verdicts = {info.name: fw.run_filter_plugins(state, pod, info) for info in snapshot.list()}
    assert verdicts["open"].is_success()
    assert (verdicts["cordoned"].code, verdicts["cordoned"].plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                                         "NodeUnschedulable")
    assert fw.run_pre_score_plugins(state, pod, [snapshot.get("open")]).is_success()
    scores, status = fw.run_score_plugins(state, pod, [snapshot.get("open")])
    assert status.is_success() and scores[0].name == "open" and scores[0].total_score > 0

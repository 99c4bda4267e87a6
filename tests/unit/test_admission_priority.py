"""Priority admission: priority from the class, the global default, refusing forged priorities, and only one
default class."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.admission.interface import CREATE, UPDATE
from minikube_py.admission.plugins.priority import Priority
from minikube_py.api.errors import APIError
from tests.unit.test_admission_namespacelifecycle import FakeState, attributes


def priority_class(name: str, value: int, *, default: bool = False, policy: str = "PreemptLowerPriority") -> Any:
    return "scheduling.k8s.io", "priorityclasses", {"metadata": {"name": name}, "value": value,
                                                    "globalDefault": default, "preemptionPolicy": policy}


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web"}, "spec": {"containers": [], **spec}}


async def admit(state: FakeState, obj: dict[str, Any]) -> dict[str, Any]:
    await Priority(state, class_wait=0).admit(attributes(CREATE, "pods", obj))
    return obj["spec"]


async def test_the_named_class_gives_priority_and_preemption_policy() -> None:
    spec = await admit(FakeState(priority_class("high", 1000, policy="Never")), pod(priorityClassName="high"))
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")


async def test_without_a_class_the_global_default_applies() -> None:
    state = FakeState(priority_class("low", 10, default=True), priority_class("lower", 5, default=True))
    spec = await admit(state, pod())
    assert (spec["priorityClassName"], spec["priority"]) == ("lower", 5)  # the lowest default wins a race


async def test_without_any_default_priority_is_zero() -> None:
    spec = await admit(FakeState(), pod())
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in spec


async def test_an_unknown_class_is_forbidden() -> None:
    with pytest.raises(APIError) as err:
        await admit(FakeState(), pod(priorityClassName="gold"))
    assert err.value.code == 403
    assert err.value.message == 'pods "web" is forbidden: no PriorityClass with name gold was found'


async def test_a_pod_may_not_set_a_different_priority_itself() -> None:
    with pytest.raises(APIError) as err:
        await admit(FakeState(priority_class("high", 1000)), pod(priorityClassName="high", priority=7))
    assert err.value.message == ('pods "web" is forbidden: the integer value of priority (7) must not be provided '
                                 "in pod spec; priority admission controller computed 1000 from the given "
                                 "PriorityClass name")
    spec = await admit(FakeState(priority_class("high", 1000)), pod(priorityClassName="high", priority=1000))
    assert spec["priority"] == 1000


async def test_an_update_keeps_the_priority_set_at_create() -> None:
    new, old = pod(), pod(priority=1000, preemptionPolicy="Never")
    await Priority(FakeState()).admit(attributes(UPDATE, "pods", new, name="web", old=old))
    assert (new["spec"]["priority"], new["spec"]["preemptionPolicy"]) == (1000, "Never")


async def test_only_one_class_may_be_the_global_default() -> None:
    plugin = Priority(FakeState(priority_class("first", 1, default=True)))
    second = priority_class("second", 2, default=True)[2]
    with pytest.raises(APIError) as err:
        await plugin.validate(attributes(CREATE, "priorityclasses", second, group="scheduling.k8s.io", namespace=""))
    assert err.value.message == ('priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass first is '
                                 "already marked as default. Only one default can exist")
    first = priority_class("first", 3, default=True)[2]
    await plugin.validate(attributes(UPDATE, "priorityclasses", first, group="scheduling.k8s.io", namespace="",
                                     name="first"))

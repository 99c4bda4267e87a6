"""DefaultTolerationSeconds: five minutes' toleration of not-ready and unreachable nodes, unless given."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.admission.interface import CREATE
from minikube_py.admission.plugins.defaulttolerationseconds import DefaultTolerationSeconds
from tests.unit.test_admission_namespacelifecycle import attributes

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}


async def tolerations(given: list[dict[str, Any]] | None, plugin: DefaultTolerationSeconds | None = None) -> Any:
    pod: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"containers": []}}
    if given is not None:
        pod["spec"]["tolerations"] = given
    await (plugin or DefaultTolerationSeconds()).admit(attributes(CREATE, "pods", pod))
    return pod["spec"].get("tolerations")


async def test_both_tolerations_are_added() -> None:
    assert await tolerations(None) == [NOT_READY, UNREACHABLE]


@pytest.mark.parametrize("given, added", [
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}], [UNREACHABLE]),
    ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}], [NOT_READY]),
    ([{"operator": "Exists"}], []),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
     [NOT_READY, UNREACHABLE]),
])
async def test_a_pod_already_tolerating_a_taint_keeps_its_own(given: list[dict[str, Any]],
                                                              added: list[dict[str, Any]]) -> None:
    assert await tolerations(given) == given + added


async def test_the_seconds_are_configurable() -> None:
    result = await tolerations(None, DefaultTolerationSeconds(not_ready_seconds=30, unreachable_seconds=60))
    assert [t["tolerationSeconds"] for t in result] == [30, 60]


async def test_other_resources_are_ignored() -> None:
    cm: dict[str, Any] = {"metadata": {"name": "c"}}
    await DefaultTolerationSeconds().admit(attributes(CREATE, "configmaps", cm))
    assert cm == {"metadata": {"name": "c"}}

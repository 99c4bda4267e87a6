"""NamespaceLifecycle, with the builders the other admission plugin tests share: `FakeState` (the
`ClusterState` protocol over a dict) and `attributes(...)`."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from minikube_py.admission.interface import CREATE, DELETE, UPDATE, Attributes
from minikube_py.admission.plugins.namespacelifecycle import NamespaceLifecycle
from minikube_py.api.errors import APIError
from minikube_py.auth.authn import UserInfo

Key = tuple[str, str, str, str]


class FakeState:
    """`ClusterState` over a dict: objects by (group, resource, namespace, name); `update` records writes."""

    def __init__(self, *objects: tuple[str, str, dict[str, Any]]) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self.updates: list[tuple[Key, str]] = []
        for group, resource, obj in objects:
            self.add(group, resource, obj)

    def add(self, group: str, resource: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(group, resource, meta.get("namespace", ""), meta["name"])] = obj

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.objects.get((group, resource, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return [copy.deepcopy(obj) for (g, r, ns, _), obj in sorted(self.objects.items())
                if (g, r) == (group, resource) and (not namespace or ns == namespace)]

    async def update(self, group: str, resource: str, namespace: str, name: str,
                     mutate: Callable[[dict[str, Any]], dict[str, Any]], subresource: str = "") -> dict[str, Any]:
        key = (group, resource, namespace, name)
        self.objects[key] = mutate(copy.deepcopy(self.objects[key]))
        self.updates.append((key, subresource))
        return self.objects[key]


def attributes(operation: str, resource: str, obj: dict[str, Any] | None = None, *, namespace: str = "ns",
               name: str = "", group: str = "", subresource: str = "", old: dict[str, Any] | None = None,
               dry_run: bool = False) -> Attributes:
    return Attributes(operation=operation, group=group, version="v1", resource=resource,
                      kind=(group, "v1", resource.title()), user=UserInfo("alice"), namespace=namespace,
                      name=name, subresource=subresource, object=obj, old_object=old, dry_run=dry_run)


def namespace(name: str, phase: str = "Active") -> tuple[str, str, dict[str, Any]]:
    return "", "namespaces", {"metadata": {"name": name}, "status": {"phase": phase}}


def configmap(name: str = "cm") -> dict[str, Any]:
    return {"metadata": {"name": name}}


@pytest.fixture()
def plugin() -> NamespaceLifecycle:
    return NamespaceLifecycle(FakeState(namespace("ns"), namespace("going", "Terminating")), missing_wait=0)


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
async def test_system_namespaces_may_not_be_deleted(plugin: NamespaceLifecycle, name: str) -> None:
    with pytest.raises(APIError) as err:
        await plugin.admit(attributes(DELETE, "namespaces", namespace="", name=name))
    assert err.value.code == 403
    assert err.value.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'


async def test_other_namespaces_may_be_deleted(plugin: NamespaceLifecycle) -> None:
    await plugin.admit(attributes(DELETE, "namespaces", namespace="", name="ns"))


async def test_a_create_in_a_missing_namespace_is_not_found(plugin: NamespaceLifecycle) -> None:
    with pytest.raises(APIError) as err:
        await plugin.admit(attributes(CREATE, "configmaps", configmap(), namespace="gone"))
    assert err.value.code == 404 and err.value.message == 'namespaces "gone" not found'


async def test_an_update_in_a_missing_namespace_is_not_found(plugin: NamespaceLifecycle) -> None:
    with pytest.raises(APIError) as err:
        await plugin.admit(attributes(UPDATE, "configmaps", configmap(), namespace="gone", name="cm"))
    assert err.value.code == 404


async def test_a_create_in_a_terminating_namespace_is_forbidden_with_its_cause(plugin: NamespaceLifecycle) -> None:
    with pytest.raises(APIError) as err:
        await plugin.admit(attributes(CREATE, "configmaps", configmap("late"), namespace="going"))
    assert err.value.code == 403
    assert err.value.message == ('configmaps "late" is forbidden: unable to create new content in namespace going '
                                 "because it is being terminated")
    assert err.value.details["causes"] == [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                            "message": "namespace going is being terminated"}]


async def test_updates_and_deletes_in_a_terminating_namespace_pass(plugin: NamespaceLifecycle) -> None:
    await plugin.admit(attributes(UPDATE, "configmaps", configmap(), namespace="going", name="cm"))
    await plugin.admit(attributes(DELETE, "configmaps", None, namespace="going", name="cm"))


async def test_cluster_scoped_objects_and_active_namespaces_pass(plugin: NamespaceLifecycle) -> None:
    await plugin.admit(attributes(CREATE, "nodes", {"metadata": {"name": "n1"}}, namespace=""))
    await plugin.admit(attributes(CREATE, "configmaps", configmap(), namespace="ns"))

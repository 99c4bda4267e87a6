"""The controller registry: duplicates refused, and `--controllers` read as kube reads it."""

from __future__ import annotations

import pytest

from minikube_py.client.controllermanager import ControllerDescriptor, ControllerRegistry, RegistryError
from minikube_py.kcm.app import registry


def descriptor(name: str, *aliases: str, off: bool = False, cloud: bool = False) -> ControllerDescriptor:
    return ControllerDescriptor(name, name, build=lambda ctx: None,  # type: ignore[arg-type,return-value]
                                aliases=aliases, disabled_by_default=off, cloud=cloud)


REGISTRY = ControllerRegistry([descriptor("replicaset-controller", "replicaset"),
                               descriptor("pod-garbage-collector-controller", "podgc"),
                               descriptor("bootstrap-signer-controller", "bootstrapsigner", off=True),
                               descriptor("service-lb-controller", "service", cloud=True)])


@pytest.mark.parametrize(("spec", "expected"), [
    (["*"], ["replicaset-controller", "pod-garbage-collector-controller"]),
    (["*", "-podgc"], ["replicaset-controller"]),
    (["-podgc", "*"], ["replicaset-controller"]),
    (["*", "bootstrapsigner"], ["replicaset-controller", "pod-garbage-collector-controller",
                                "bootstrap-signer-controller"]),
    (["replicaset"], ["replicaset-controller"]),
    (["replicaset-controller", "-replicaset"], []),
    ([], []),
], ids=["star-means-on-by-default", "minus-turns-one-off", "order-does-not-matter",
        "a-name-adds-one-off-by-default", "an-alias-names-a-controller", "minus-wins", "nothing"])
def test_controllers_flag(spec: list[str], expected: list[str]) -> None:
    assert [d.name for d in REGISTRY.enabled(spec)] == expected


def test_cloud_controllers_run_only_without_an_external_cloud_provider() -> None:
    assert "service-lb-controller" not in [d.name for d in REGISTRY.enabled(["*"], external_cloud=True)]
    assert "service-lb-controller" in [d.name for d in REGISTRY.enabled(["*"], external_cloud=False)]


@pytest.mark.parametrize("spec", [["nope"], ["*", "-nope"]])
def test_an_unknown_controller_is_an_error_naming_it(spec: list[str]) -> None:
    with pytest.raises(RegistryError, match='"nope" is not in the list of known controllers'):
        REGISTRY.enabled(spec)


@pytest.mark.parametrize("duplicate", [descriptor("replicaset-controller"), descriptor("other", "podgc"),
                                       descriptor("replicaset")], ids=["name", "alias", "name-of-an-alias"])
def test_a_second_descriptor_with_a_taken_name_is_refused(duplicate: ControllerDescriptor) -> None:
    with pytest.raises(RegistryError, match="registered twice"):
        ControllerRegistry([*REGISTRY, duplicate])


def test_every_built_in_controller_acts_as_an_account_rbac_knows() -> None:
    from minikube_py.auth.rbac.controller_roles import CONTROLLER_ROLES

    for d in registry():
        assert d.service_account in CONTROLLER_ROLES, d.name


@pytest.mark.parametrize(("controller", "component"), [
    ("deployment-controller", "deployment-controller"),
    ("replicaset-controller", "replicaset-controller"),
    ("daemonset-controller", "daemonset-controller"),  # acts as kube-system:daemon-set-controller
    ("endpointslice-controller", "endpoint-slice-controller"),
    ("garbage-collector-controller", "garbage-collector-controller"),
    ("disruption-controller", "controllermanager"),
    ("node-ipam-controller", "cidrAllocator"),
    ("node-lifecycle-controller", "node-controller"),
    ("taint-eviction-controller", "taint-eviction-controller"),
    ("persistentvolume-binder-controller", "persistentvolume-controller"),
])
def test_events_carry_the_source_component_kubes_controller_records(controller: str, component: str) -> None:
    assert registry().get(controller).event_component == component

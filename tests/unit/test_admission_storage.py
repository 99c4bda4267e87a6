"""The storage admission plugins: DefaultStorageClass gives class-less claims the default class, and
StorageObjectInUseProtection puts the protection finalizers on new claims and volumes."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.admission import chain
from minikube_py.admission.interface import CREATE, DELETE, UPDATE
from minikube_py.admission.plugins.defaultstorageclass import DefaultStorageClass
from minikube_py.admission.plugins.storageobjectinuseprotection import StorageObjectInUseProtection
from tests.unit.test_admission_namespacelifecycle import FakeState, attributes

DEFAULT = {"storageclass.kubernetes.io/is-default-class": "true"}
BETA_CLAIM_CLASS = "volume.beta.kubernetes.io/storage-class"


def case(sentence: str, *values: Any) -> Any:
    return pytest.param(*values, id=sentence)


def storage_class(name: str, created: str = "2026-11-21T10:00:00Z", **annotations: str) -> Any:
    return (
        "storage.k8s.io",
        "storageclasses",
        {
            "metadata": {"name": name, "creationTimestamp": created, "annotations": annotations},
            "provisioner": "kubernetes.io/host-path",
        },
    )


def claim(metadata: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "data", **(metadata or {})},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec},
    }


STANDARD = storage_class("standard", **DEFAULT)
SLOW = storage_class("slow")


# DefaultStorageClass -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classes", "given", "storage_class_name"),
    [
        case("a claim without a class gets the default class", [STANDARD, SLOW], claim(), "standard"),
        case("a null class reads as none given", [STANDARD], claim(storageClassName=None), "standard"),
        case("a claim naming a class keeps it", [STANDARD, SLOW], claim(storageClassName="slow"), "slow"),
        case('an explicit "" asks for no class and stays', [STANDARD], claim(storageClassName=""), ""),
        case("without a default class the claim is unchanged", [SLOW], claim(), None),
        case("without any class the claim is unchanged", [], claim(), None),
        case(
            "of several defaults the newest wins",
            [STANDARD, storage_class("fast", "2026-11-21T11:00:00Z", **DEFAULT)],
            claim(),
            "fast",
        ),
    ],
)
async def test_default_storage_class(
    classes: list[Any], given: dict[str, Any], storage_class_name: str | None
) -> None:
    await DefaultStorageClass(FakeState(*classes)).admit(attributes(CREATE, "persistentvolumeclaims", given))
    assert given["spec"].get("storageClassName", None) == storage_class_name


async def test_a_claim_with_the_legacy_class_annotation_is_left_alone() -> None:
    given = claim({"annotations": {BETA_CLAIM_CLASS: "slow"}})
    await DefaultStorageClass(FakeState(STANDARD)).admit(attributes(CREATE, "persistentvolumeclaims", given))
    assert "storageClassName" not in given["spec"]


async def test_a_claim_without_a_spec_still_gets_the_default() -> None:
    given: dict[str, Any] = {"metadata": {"name": "data"}}
    await DefaultStorageClass(FakeState(STANDARD)).admit(attributes(CREATE, "persistentvolumeclaims", given))
    assert given["spec"] == {"storageClassName": "standard"}


@pytest.mark.parametrize(
    ("resource", "group", "subresource"),
    [
        case("other kinds are not claims", "pods", "", ""),
        case("a claim-named resource of another group", "persistentvolumeclaims", "example.com", ""),
        case("writes to the status subresource", "persistentvolumeclaims", "", "status"),
    ],
)
async def test_default_storage_class_touches_only_claims(resource: str, group: str, subresource: str) -> None:
    given = claim()
    await DefaultStorageClass(FakeState(STANDARD)).admit(
        attributes(CREATE, resource, given, group=group, subresource=subresource)
    )
    assert "storageClassName" not in given["spec"]


def test_default_storage_class_runs_on_create_only() -> None:
    plugin = DefaultStorageClass(FakeState())
    assert [plugin.handles(op) for op in (CREATE, UPDATE, DELETE)] == [True, False, False]


# StorageObjectInUseProtection --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "metadata", "finalizers"),
    [
        case("a new claim is protected", "persistentvolumeclaims", {}, ["kubernetes.io/pvc-protection"]),
        case("a new volume is protected", "persistentvolumes", {}, ["kubernetes.io/pv-protection"]),
        case(
            "other finalizers are kept, the protection goes last",
            "persistentvolumeclaims",
            {"finalizers": ["example.com/backup"]},
            ["example.com/backup", "kubernetes.io/pvc-protection"],
        ),
        case(
            "a finalizer already there is not added twice",
            "persistentvolumes",
            {"finalizers": ["kubernetes.io/pv-protection"]},
            ["kubernetes.io/pv-protection"],
        ),
        case(
            "null finalizers read as none",
            "persistentvolumeclaims",
            {"finalizers": None},
            ["kubernetes.io/pvc-protection"],
        ),
    ],
)
async def test_protection_finalizers(resource: str, metadata: dict[str, Any], finalizers: list[str]) -> None:
    obj = {"metadata": {"name": "data", **metadata}}
    await StorageObjectInUseProtection().admit(attributes(CREATE, resource, obj))
    assert obj["metadata"]["finalizers"] == finalizers


@pytest.mark.parametrize(
    ("resource", "group", "subresource"),
    [
        case("pods get no storage finalizer", "pods", "", ""),
        case("a volume-named resource of another group", "persistentvolumes", "example.com", ""),
        case("writes to a claim's status subresource", "persistentvolumeclaims", "", "status"),
    ],
)
async def test_protection_touches_only_claims_and_volumes(
    resource: str, group: str, subresource: str
) -> None:
    obj: dict[str, Any] = {"metadata": {"name": "data"}}
    await StorageObjectInUseProtection().admit(
        attributes(CREATE, resource, obj, group=group, subresource=subresource)
    )
    assert "finalizers" not in obj["metadata"]


def test_protection_runs_on_create_only() -> None:
    """An update may remove the finalizer: that is how the protection controllers let objects go."""
    plugin = StorageObjectInUseProtection()
    assert [plugin.handles(op) for op in (CREATE, UPDATE, DELETE)] == [True, False, False]


# the chain ---------------------------------------------------------------------------------------------


def test_both_plugins_are_on_by_default_in_kubes_order() -> None:
    names = chain.enabled_plugins([], [])
    assert (
        names.index("DefaultTolerationSeconds")
        < names.index("DefaultStorageClass")
        < names.index("StorageObjectInUseProtection")
        < names.index("MutatingAdmissionWebhook")
    )
    assert "StorageObjectInUseProtection" not in chain.enabled_plugins([], ["StorageObjectInUseProtection"])

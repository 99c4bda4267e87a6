"""The storage admission plugins: DefaultStorageClass gives class-less claims the default class,
StorageObjectInUseProtection puts the protection finalizers on new claims and volumes, and
PersistentVolumeClaimResize lets a claim grow only through an expandable class. Also the claim update
validation that runs before it: what may change in a claim's spec, and how far it may shrink."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.admission import chain
from minikube_py.admission.interface import CREATE, DELETE, UPDATE
from minikube_py.admission.plugins.defaultstorageclass import DefaultStorageClass
from minikube_py.admission.plugins.persistentvolumeclaimresize import PersistentVolumeClaimResize
from minikube_py.admission.plugins.storageobjectinuseprotection import StorageObjectInUseProtection
from minikube_py.api.errors import APIError
from minikube_py.api.validation.volumes import claim_update
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


# PersistentVolumeClaimResize ---------------------------------------------------------------------------

NOT_EXPANDABLE = (
    'persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be resized and the '
    "storageclass that provisions the pvc must support resize"
)
NOT_BOUND = 'persistentvolumeclaims "data" is forbidden: Only bound persistent volume claims can be expanded'
EXPANDABLE = (
    "storage.k8s.io",
    "storageclasses",
    {"metadata": {"name": "fast"}, "allowVolumeExpansion": True},
)
FIXED = ("storage.k8s.io", "storageclasses", {"metadata": {"name": "fixed"}, "allowVolumeExpansion": False})
SILENT = ("storage.k8s.io", "storageclasses", {"metadata": {"name": "silent"}})


def bound_claim(
    size: str = "1Gi", phase: str = "Bound", annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A claim of class `fast` (unless `spec` says otherwise) that asks for `size`, in `phase`."""
    given = claim({"annotations": annotations or {}}, **{"storageClassName": "fast", **spec})
    given["spec"]["resources"]["requests"]["storage"] = size
    given["status"] = (
        {"phase": phase, "capacity": {"storage": "1Gi"}} if phase == "Bound" else {"phase": phase}
    )
    return given


@pytest.mark.parametrize(
    ("old", "new", "refusal"),
    [
        case("a bound claim of an expandable class may grow", bound_claim(), bound_claim("2Gi"), None),
        case(
            "the legacy annotation's class counts as the claim's class",
            bound_claim(storageClassName=None, annotations={BETA_CLAIM_CLASS: "fast"}),
            bound_claim("2Gi", storageClassName=None, annotations={BETA_CLAIM_CLASS: "fast"}),
            None,
        ),
        case(
            "a class that does not allow expansion refuses it",
            bound_claim(storageClassName="fixed"),
            bound_claim("2Gi", storageClassName="fixed"),
            NOT_EXPANDABLE,
        ),
        case(
            "a class silent about expansion refuses it",
            bound_claim(storageClassName="silent"),
            bound_claim("2Gi", storageClassName="silent"),
            NOT_EXPANDABLE,
        ),
        case(
            "a class that does not exist refuses it",
            bound_claim(storageClassName="gone"),
            bound_claim("2Gi", storageClassName="gone"),
            NOT_EXPANDABLE,
        ),
        case(
            "a claim without a class may not grow",
            bound_claim(storageClassName=""),
            bound_claim("2Gi", storageClassName=""),
            NOT_EXPANDABLE,
        ),
        case(
            "a claim whose class changes in the same update may not grow",
            bound_claim(storageClassName="fixed"),
            bound_claim("2Gi"),
            NOT_EXPANDABLE,
        ),
        case("a pending claim may not grow", bound_claim(phase="Pending"), bound_claim("2Gi"), NOT_BOUND),
        case(
            "the old claim's phase decides, not the new one's",
            bound_claim(phase="Lost"),
            bound_claim("2Gi", phase="Bound"),
            NOT_BOUND,
        ),
        case(
            "a claim that had no size and now has one grows",
            {**bound_claim(), "spec": {"storageClassName": "fixed"}},
            bound_claim(storageClassName="fixed"),
            NOT_EXPANDABLE,
        ),
    ],
)
async def test_claim_resize(old: dict[str, Any], new: dict[str, Any], refusal: str | None) -> None:
    plugin = PersistentVolumeClaimResize(FakeState(EXPANDABLE, FIXED, SILENT))
    request = attributes(UPDATE, "persistentvolumeclaims", new, name="data", old=old)
    if refusal is None:
        await plugin.validate(request)
        return
    with pytest.raises(APIError) as refused:
        await plugin.validate(request)
    assert (refused.value.code, refused.value.message) == (403, refusal)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        case(
            "a label change on a pending claim of a fixed class",
            bound_claim(phase="Pending", storageClassName="fixed"),
            {
                **bound_claim(phase="Pending", storageClassName="fixed"),
                "metadata": {"name": "data", "labels": {"a": "b"}},
            },
        ),
        case(
            "the same size written in other units",
            bound_claim(storageClassName="fixed"),
            bound_claim("1024Mi", storageClassName="fixed"),
        ),
        case(
            "a shrink, which validation alone judges",
            bound_claim("2Gi", storageClassName="fixed"),
            bound_claim("1536Mi", storageClassName="fixed"),
        ),
        case(
            "a request that is not a quantity, which validation has refused already",
            bound_claim(storageClassName="fixed"),
            bound_claim("lots", storageClassName="fixed"),
        ),
    ],
)
async def test_updates_that_do_not_grow_the_claim_pass(old: dict[str, Any], new: dict[str, Any]) -> None:
    before = copy.deepcopy(new)
    plugin = PersistentVolumeClaimResize(FakeState(FIXED))
    await plugin.validate(attributes(UPDATE, "persistentvolumeclaims", new, name="data", old=old))
    assert new == before


@pytest.mark.parametrize(
    ("resource", "group", "subresource"),
    [
        case("other kinds are not claims", "configmaps", "", ""),
        case("a claim-named resource of another group", "persistentvolumeclaims", "example.com", ""),
        case("writes to the status subresource", "persistentvolumeclaims", "", "status"),
    ],
)
async def test_resize_checks_only_claims(resource: str, group: str, subresource: str) -> None:
    request = attributes(
        UPDATE,
        resource,
        bound_claim("2Gi", storageClassName="fixed"),
        name="data",
        group=group,
        subresource=subresource,
        old=bound_claim(storageClassName="fixed"),
    )
    await PersistentVolumeClaimResize(FakeState(FIXED)).validate(request)


def test_resize_runs_on_update_only() -> None:
    plugin = PersistentVolumeClaimResize(FakeState())
    assert [plugin.handles(op) for op in (CREATE, UPDATE, DELETE)] == [False, True, False]


def test_resize_is_on_by_default_after_the_other_storage_plugins() -> None:
    names = chain.enabled_plugins([], [])
    assert (
        names.index("StorageObjectInUseProtection")
        < names.index("PersistentVolumeClaimResize")
        < names.index("MutatingAdmissionWebhook")
    )
    assert "PersistentVolumeClaimResize" not in chain.enabled_plugins([], ["PersistentVolumeClaimResize"])


# claim update validation, which runs before the plugin -------------------------------------------------

SPEC_IS_IMMUTABLE = (
    "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
    "for bound claims"
)
BELOW_CAPACITY = "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
ANNOTATION_IS_IMMUTABLE = (
    'metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: "slow": field is immutable'
)


def changed(
    old: dict[str, Any], *, size: str | None = None, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    new = copy.deepcopy(old)
    new["spec"].update(spec)
    if size is not None:
        new["spec"]["resources"]["requests"]["storage"] = size
    if annotations is not None:
        new["metadata"]["annotations"] = annotations
    return new


def at_capacity(capacity: str, **fields: Any) -> dict[str, Any]:
    """A bound claim whose request is 2Gi and whose volume really has `capacity`."""
    old = bound_claim("2Gi", **fields)
    old["status"]["capacity"]["storage"] = capacity
    return old


LEGACY = bound_claim(phase="Pending", storageClassName=None, annotations={BETA_CLAIM_CLASS: "fast"})
CLASSLESS = bound_claim(phase="Pending", storageClassName=None)


@pytest.mark.parametrize(
    ("old", "new", "errors"),
    [
        case("a bound claim may grow", bound_claim(), changed(bound_claim(), size="2Gi"), []),
        case(
            "a bound claim may shrink back towards a capacity it never reached",
            at_capacity("1Gi"),
            changed(at_capacity("1Gi"), size="1536Mi"),
            [],
        ),
        case(
            "a bound claim may not shrink to its capacity",
            at_capacity("1Gi"),
            changed(at_capacity("1Gi"), size="1Gi"),
            [BELOW_CAPACITY],
        ),
        case(
            "a bound claim may not shrink below its capacity",
            at_capacity("2Gi"),
            changed(at_capacity("2Gi"), size="1Gi"),
            [BELOW_CAPACITY],
        ),
        case(
            "a pending claim may not change its size",
            bound_claim(phase="Pending"),
            changed(bound_claim(phase="Pending"), size="2Gi"),
            [SPEC_IS_IMMUTABLE],
        ),
        case(
            "a bound claim may not change its access modes",
            bound_claim(),
            changed(bound_claim(), accessModes=["ReadWriteMany"]),
            [SPEC_IS_IMMUTABLE],
        ),
        case(
            "a bound claim may not change its class",
            bound_claim(),
            changed(bound_claim(), storageClassName="slow"),
            [SPEC_IS_IMMUTABLE],
        ),
        case(
            "a bound claim may change its attributes class",
            bound_claim(volumeAttributesClassName="gold"),
            changed(bound_claim(volumeAttributesClassName="gold"), volumeAttributesClassName="silver"),
            [],
        ),
        case(
            "a bound claim may not drop its attributes class",
            bound_claim(volumeAttributesClassName="gold"),
            changed(bound_claim(volumeAttributesClassName="gold"), volumeAttributesClassName=None),
            [SPEC_IS_IMMUTABLE],
        ),
        case(
            "the volume name may be set once",
            bound_claim(phase="Pending"),
            changed(bound_claim(phase="Pending"), volumeName="pv-1"),
            [],
        ),
        case(
            "the volume name may not change once set",
            bound_claim(volumeName="pv-1"),
            changed(bound_claim(volumeName="pv-1"), volumeName="pv-2"),
            [SPEC_IS_IMMUTABLE],
        ),
        case(
            "a class may be named where none was", CLASSLESS, changed(CLASSLESS, storageClassName="slow"), []
        ),
        case(
            "the legacy annotation's class may move into the spec",
            LEGACY,
            changed(LEGACY, storageClassName="fast", annotations={}),
            [],
        ),
        case(
            "a class other than the legacy annotation's may not be named",
            LEGACY,
            changed(LEGACY, storageClassName="slow"),
            [SPEC_IS_IMMUTABLE],
        ),
        case(
            "the legacy annotation may not change",
            LEGACY,
            changed(LEGACY, annotations={BETA_CLAIM_CLASS: "slow"}),
            [ANNOTATION_IS_IMMUTABLE],
        ),
        case(
            "the legacy annotation may not be added later",
            bound_claim(),
            changed(bound_claim(), annotations={BETA_CLAIM_CLASS: "slow"}),
            [ANNOTATION_IS_IMMUTABLE],
        ),
        case(
            "the volume mode may not change",
            bound_claim(),
            changed(bound_claim(), volumeMode="Block"),
            [SPEC_IS_IMMUTABLE, 'volumeMode: Invalid value: "Block": field is immutable'],
        ),
    ],
)
def test_claim_update_validation(old: dict[str, Any], new: dict[str, Any], errors: list[str]) -> None:
    found = [error.describe() for error in claim_update(new, old)]
    # The immutable-spec message goes on with a diff of the spec: compare its first line.
    assert [message.split("\n")[0] for message in found] == errors

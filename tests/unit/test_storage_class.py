"""StorageClasses without a server: defaults, which class is the default one, the Table row, and kube's
validation messages for new classes and for updates."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from minikube_py.api.defaults import apply_defaults
from minikube_py.api.defaults.storage import default_class, is_default_class
from minikube_py.api.kinds import default_registry
from minikube_py.api.tables import column_definitions, row_cells
from minikube_py.api.validation import validate_create, validate_update

STORAGE_CLASSES = default_registry().lookup("storage.k8s.io", "v1", "storageclasses")
assert STORAGE_CLASSES is not None
NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
DEFAULT = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT = "storageclass.beta.kubernetes.io/is-default-class"
Obj = dict[str, Any]


def case(sentence: str, *values: Any) -> Any:
    return pytest.param(*values, id=sentence)


def storage_class(
    name: str = "standard",
    *,
    annotations: dict[str, str] | None = None,
    created: str = "2026-11-21T11:55:00Z",
    **fields: Any,
) -> Obj:
    metadata: Obj = {"name": name, "creationTimestamp": created}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata,
        "provisioner": "kubernetes.io/host-path",
        **fields,
    }


def defaulted(obj: Obj) -> Obj:
    apply_defaults(STORAGE_CLASSES, obj)
    return obj


def messages(obj: Obj) -> list[str]:
    return [e.describe() for e in validate_create(STORAGE_CLASSES, defaulted(obj))]


def update_messages(change: Callable[[Obj], Any], old: Obj | None = None) -> list[str]:
    old = defaulted(old or storage_class(parameters={"type": "ssd"}))
    new = copy.deepcopy(old)
    change(new)
    return [e.describe() for e in validate_update(STORAGE_CLASSES, defaulted(new), old)]


# defaults ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        case(
            "a class without policies deletes its volumes and binds at once",
            {},
            {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
        ),
        case(
            "given policies are kept",
            {"reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"},
            {"reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"},
        ),
        case(
            "null reads as unset",
            {"reclaimPolicy": None, "volumeBindingMode": None},
            {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
        ),
        case(
            "an explicit empty string is a value, left for validation to refuse",
            {"reclaimPolicy": "", "volumeBindingMode": ""},
            {"reclaimPolicy": "", "volumeBindingMode": ""},
        ),
    ],
)
def test_storage_class_defaults(given: Obj, expected: Obj) -> None:
    obj = defaulted(storage_class(**given))
    assert {key: obj[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("annotations", "is_default"),
    [
        case("the GA annotation marks the default", {DEFAULT: "true"}, True),
        case("the beta annotation still does", {BETA_DEFAULT: "true"}, True),
        case("only the exact string true counts", {DEFAULT: "True"}, False),
        case("false is not default", {DEFAULT: "false", BETA_DEFAULT: "yes"}, False),
        case("no annotations", None, False),
    ],
)
def test_is_default_class(annotations: dict[str, str] | None, is_default: bool) -> None:
    assert is_default_class(storage_class(annotations=annotations)) is is_default


@pytest.mark.parametrize(
    ("classes", "chosen"),
    [
        case("no class at all", [], None),
        case("no class marked default", [storage_class("a"), storage_class("b")], None),
        case(
            "the only default", [storage_class("a"), storage_class("b", annotations={DEFAULT: "true"})], "b"
        ),
        case(
            "the newest of several defaults",
            [
                storage_class("old", annotations={DEFAULT: "true"}, created="2026-11-21T10:00:00Z"),
                storage_class("new", annotations={BETA_DEFAULT: "true"}, created="2026-11-21T11:00:00Z"),
                storage_class("newest-not-default", created="2026-11-21T11:30:00Z"),
            ],
            "new",
        ),
        case(
            "the first name among defaults created the same second",
            [
                storage_class("zeta", annotations={DEFAULT: "true"}),
                storage_class("alpha", annotations={DEFAULT: "true"}),
            ],
            "alpha",
        ),
        case(
            "a class without a readable creation time is the oldest",
            [
                storage_class("broken", annotations={DEFAULT: "true"}, created="yesterday"),
                storage_class("dated", annotations={DEFAULT: "true"}),
            ],
            "dated",
        ),
    ],
)
def test_default_class(classes: list[Obj], chosen: str | None) -> None:
    found = default_class(classes)
    assert (found["metadata"]["name"] if found else None) == chosen


# the Table ---------------------------------------------------------------------------------------------


def test_storage_class_columns_are_kubes() -> None:
    columns = column_definitions(STORAGE_CLASSES)
    assert [(c["name"], c["type"], c["priority"]) for c in columns] == [
        ("Name", "string", 0),
        ("Provisioner", "string", 0),
        ("ReclaimPolicy", "string", 0),
        ("VolumeBindingMode", "string", 0),
        ("AllowVolumeExpansion", "string", 0),
        ("Age", "string", 0),
    ]


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        case(
            "the default class says so after its name",
            defaulted(storage_class(annotations={DEFAULT: "true"})),
            ["standard (default)", "kubernetes.io/host-path", "Delete", "Immediate", False, "5m"],
        ),
        case(
            "a class marked with the beta annotation is a default too",
            storage_class(
                "fast",
                annotations={BETA_DEFAULT: "true"},
                reclaimPolicy="Retain",
                volumeBindingMode="WaitForFirstConsumer",
                allowVolumeExpansion=True,
            ),
            ["fast (default)", "kubernetes.io/host-path", "Retain", "WaitForFirstConsumer", True, "5m"],
        ),
        case(
            "unset fields print as what they default to",
            storage_class("plain", annotations={DEFAULT: "false"}),
            ["plain", "kubernetes.io/host-path", "Delete", "Immediate", False, "5m"],
        ),
    ],
)
def test_storage_class_cells(item: Obj, expected: list[Any]) -> None:
    assert row_cells(STORAGE_CLASSES, item, NOW) == expected


# validation of new classes -----------------------------------------------------------------------------

QUALIFIED = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def topology(*expressions: Obj) -> Obj:
    return {"matchLabelExpressions": list(expressions)}


ZONE_A = {"key": "topology.kubernetes.io/zone", "values": ["a"]}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        case("a class with a provisioner is valid", storage_class(parameters={"type": "ssd"}), []),
        case("a class needs a provisioner", storage_class(provisioner=""), ["provisioner: Required value"]),
        case(
            "the provisioner is a qualified name, shown in lower case",
            storage_class(provisioner="Example.COM/Host Path"),
            [f'provisioner: Invalid value: "example.com/host path": {QUALIFIED}'],
        ),
        case(
            "the name is a DNS subdomain",
            storage_class("Fast_SSD"),
            [
                'metadata.name: Invalid value: "Fast_SSD": a lowercase RFC 1123 subdomain must consist of lower case '
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                "'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
        ),
        case(
            "a parameter needs a key",
            storage_class(parameters={"": "x"}),
            ['parameters: Invalid value: "": field can not be empty.'],
        ),
        case(
            "at most 512 parameters",
            storage_class(parameters={f"k{i}": "v" for i in range(513)}),
            ["parameters: Too long: may not be more than 512 bytes"],
        ),
        case(
            "parameters of exactly 256 KiB are valid", storage_class(parameters={"blob": "x" * 262_140}), []
        ),
        case(
            "parameters hold at most 256 KiB",
            storage_class(parameters={"blob": "x" * 262_141}),
            ["parameters: Too long: may not be more than 262144 bytes"],
        ),
        case(
            "Recycle is no reclaim policy for provisioned volumes",
            storage_class(reclaimPolicy="Recycle"),
            ['reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'],
        ),
        case(
            "an unknown binding mode",
            storage_class(volumeBindingMode="Later"),
            [
                'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"'
            ],
        ),
        case(
            "an empty binding mode",
            storage_class(volumeBindingMode=""),
            [
                'volumeBindingMode: Unsupported value: "": supported values: "Immediate", "WaitForFirstConsumer"'
            ],
        ),
        case(
            "allowed topologies of distinct terms are valid",
            storage_class(allowedTopologies=[topology(ZONE_A), topology({**ZONE_A, "values": ["b", "c"]})]),
            [],
        ),
        case(
            "a topology requirement needs values",
            storage_class(allowedTopologies=[topology({"key": "topology.kubernetes.io/zone"})]),
            ["allowedTopologies[0].matchLabelExpressions[0].values: Required value"],
        ),
        case(
            "a topology value may not repeat",
            storage_class(allowedTopologies=[topology({**ZONE_A, "values": ["a", "b", "a"]})]),
            ['allowedTopologies[0].matchLabelExpressions[0].values[2]: Duplicate value: "a"'],
        ),
        case(
            "a topology key is a label name",
            storage_class(allowedTopologies=[topology({"key": "-zone", "values": ["a"]})]),
            [f'allowedTopologies[0].matchLabelExpressions[0].key: Invalid value: "-zone": {QUALIFIED}'],
        ),
        case(
            "a topology key may not repeat in a term",
            storage_class(allowedTopologies=[topology(ZONE_A, {**ZONE_A, "values": ["b"]})]),
            [
                'allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value: "topology.kubernetes.io/zone"'
            ],
        ),
        case(
            "a term may not repeat an earlier one",
            storage_class(allowedTopologies=[topology(ZONE_A), topology(ZONE_A)]),
            ['allowedTopologies[1].matchLabelExpressions: Duplicate value: ""'],
        ),
        case(
            "an empty term counts as a repeat, as in kube",
            storage_class(allowedTopologies=[topology()]),
            ['allowedTopologies[0].matchLabelExpressions: Duplicate value: ""'],
        ),
    ],
)
def test_storage_class_create(obj: Obj, expected: list[str]) -> None:
    assert messages(obj) == expected


# validation of updates ---------------------------------------------------------------------------------


def _set(**fields: Any) -> Callable[[Obj], Any]:
    return lambda obj: obj.update(fields)


def _mark_default(obj: Obj) -> None:
    obj["metadata"]["annotations"] = {DEFAULT: "true"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        case("marking the class default is allowed", _mark_default, []),
        case(
            "volume expansion and mount options may change",
            _set(allowVolumeExpansion=True, mountOptions=["ro"]),
            [],
        ),
        case(
            "the provisioner is fixed",
            _set(provisioner="example.com/nfs"),
            ["provisioner: Forbidden: updates to provisioner are forbidden."],
        ),
        case(
            "the parameters are fixed",
            _set(parameters={"type": "hdd"}),
            ["parameters: Forbidden: updates to parameters are forbidden."],
        ),
        case(
            "removing the parameters changes them",
            lambda obj: obj.pop("parameters"),
            ["parameters: Forbidden: updates to parameters are forbidden."],
        ),
        case(
            "the reclaim policy is fixed",
            _set(reclaimPolicy="Retain"),
            ["reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden."],
        ),
        case(
            "the binding mode is fixed",
            _set(volumeBindingMode="WaitForFirstConsumer"),
            ['volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable'],
        ),
        case(
            "an update is also checked as a new class",
            _set(reclaimPolicy="Recycle"),
            [
                'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"',
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
            ],
        ),
    ],
)
def test_storage_class_update(change: Callable[[Obj], Any], expected: list[str]) -> None:
    assert update_messages(change) == expected


def test_empty_and_missing_parameters_are_the_same() -> None:
    assert update_messages(_set(parameters={}), old=storage_class()) == []

"""storage.k8s.io/v1 StorageClasses and the storage admission plugins, against a real apiserver and kubectl.

StorageClasses are cluster-scoped and the DefaultStorageClass plugin reads all of them, so these tests run
on a control plane of their own (no controller manager: nothing here needs one, and without the KCM's
pvc-protection controller a deleted claim shows what its finalizer does). Each test that marks a class
default removes it again.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.harness import ControlPlane

STORAGE = "/apis/storage.k8s.io/v1/storageclasses"
CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
VOLUMES = "/api/v1/persistentvolumes"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
DEFAULT = "storageclass.kubernetes.io/is-default-class"


@pytest.fixture(scope="module")
def storage_plane() -> Iterator[ControlPlane]:
    cp = ControlPlane(controllers="").start()
    yield cp
    cp.stop()


@pytest.fixture()
def api(storage_plane: ControlPlane) -> Iterator[httpx.Client]:
    with storage_plane.client() as client:
        yield client


class Kubectl:
    def __init__(self, control_plane: ControlPlane, cache: Path) -> None:
        self.argv = ["kubectl", f"--kubeconfig={control_plane.kubeconfig}", f"--cache-dir={cache}"]

    def __call__(
        self, *args: str, input: str | None = None, ok: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*self.argv, *args], input=input, capture_output=True, text=True, timeout=30)
        assert (done.returncode == 0) is ok, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
        return done


@pytest.fixture()
def kubectl(storage_plane: ControlPlane, tmp_path: Path) -> Kubectl:
    if shutil.which("kubectl") is None:
        pytest.skip("needs the real kubectl on PATH")
    return Kubectl(storage_plane, tmp_path / "kube-cache")


def storage_class(name: str, *, default: bool = False, **fields: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if default:
        metadata["annotations"] = {DEFAULT: "true"}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata,
        "provisioner": "kubernetes.io/host-path",
        **fields,
    }


def create_class(api: httpx.Client, obj: dict[str, Any]) -> dict[str, Any]:
    """Create a class and return once the apiserver's cache, which admission reads, holds it: a list without
    resourceVersion is a consistent read, answered only when the cache has caught up with etcd."""
    created = api.post(STORAGE, json=obj)
    assert created.status_code == 201, created.text
    assert api.get(STORAGE).status_code == 200
    return created.json()


def delete_class(api: httpx.Client, name: str) -> None:
    assert api.delete(f"{STORAGE}/{name}").status_code == 200
    assert api.get(STORAGE).status_code == 200


def claim(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec},
    }


def create_claim(api: httpx.Client, name: str, **spec: Any) -> dict[str, Any]:
    created = api.post(CLAIMS, json=claim(name, **spec))
    assert created.status_code == 201, created.text
    return created.json()


# discovery and OpenAPI ---------------------------------------------------------------------------------


def test_discovery_serves_storage_classes(api: httpx.Client, kubectl: Kubectl) -> None:
    [resource] = [r for r in api.get("/apis/storage.k8s.io/v1").json()["resources"] if "/" not in r["name"]]
    assert (resource["name"], resource["kind"], resource["namespaced"], resource["shortNames"]) == (
        "storageclasses",
        "StorageClass",
        False,
        ["sc"],
    )
    assert "storage.k8s.io/v1" in kubectl("api-versions").stdout.split()
    listed = kubectl("api-resources", "--api-group=storage.k8s.io", "--no-headers").stdout.split()
    assert listed == ["storageclasses", "sc", "storage.k8s.io/v1", "false", "StorageClass"]


def test_kubectl_explain_reads_the_storage_class_schema(kubectl: Kubectl) -> None:
    explained = kubectl("explain", "storageclass").stdout
    assert "GROUP:      storage.k8s.io" in explained and "KIND:       StorageClass" in explained
    assert "provisioner\t<string> -required-" in explained
    assert "reclaimPolicy controls the reclaimPolicy" in kubectl("explain", "sc.reclaimPolicy").stdout


# create, defaults, Table -------------------------------------------------------------------------------


def test_kubectl_create_gets_defaults_and_get_sc_marks_the_default(
    api: httpx.Client, kubectl: Kubectl
) -> None:
    manifest = yaml.safe_dump(storage_class("standard", default=True))
    assert (
        kubectl("create", "-f", "-", input=manifest).stdout
        == "storageclass.storage.k8s.io/standard created\n"
    )
    try:
        stored = api.get(f"{STORAGE}/standard").json()
        assert (stored["reclaimPolicy"], stored["volumeBindingMode"]) == ("Delete", "Immediate")
        header, row = kubectl("get", "sc").stdout.splitlines()
        assert header.split() == [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE",
        ]
        assert row.split()[:6] == [
            "standard",
            "(default)",
            "kubernetes.io/host-path",
            "Delete",
            "Immediate",
            "false",
        ]
    finally:
        delete_class(api, "standard")


def test_the_table_has_kubes_cells(api: httpx.Client) -> None:
    create_class(
        api,
        storage_class(
            "retained",
            reclaimPolicy="Retain",
            volumeBindingMode="WaitForFirstConsumer",
            allowVolumeExpansion=True,
        ),
    )
    try:
        table = api.get(f"{STORAGE}/retained", headers={"Accept": TABLE}).json()
        assert table["rows"][0]["cells"][:5] == [
            "retained",
            "kubernetes.io/host-path",
            "Retain",
            "WaitForFirstConsumer",
            True,
        ]
    finally:
        delete_class(api, "retained")


# validation --------------------------------------------------------------------------------------------


def test_a_class_without_provisioner_is_invalid(api: httpx.Client, kubectl: Kubectl) -> None:
    bad = storage_class("bad")
    del bad["provisioner"]
    status = api.post(STORAGE, json=bad)
    assert status.status_code == 422
    assert (
        status.json()["message"]
        == 'StorageClass.storage.k8s.io "bad" is invalid: provisioner: Required value'
    )
    refused = kubectl("create", "-f", "-", input=yaml.safe_dump(bad), ok=False)
    assert 'The StorageClass "bad" is invalid: provisioner: Required value' in refused.stderr


def test_how_a_class_provisions_never_changes(api: httpx.Client) -> None:
    create_class(api, storage_class("fixed", parameters={"type": "ssd"}))
    try:
        stored = api.get(f"{STORAGE}/fixed").json()
        changed = {
            **stored,
            "provisioner": "example.com/nfs",
            "parameters": {"type": "hdd"},
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        status = api.put(f"{STORAGE}/fixed", json=changed)
        assert status.status_code == 422
        assert status.json()["message"] == (
            'StorageClass.storage.k8s.io "fixed" is invalid: [parameters: Forbidden: updates to parameters are '
            "forbidden., provisioner: Forbidden: updates to provisioner are forbidden., reclaimPolicy: Forbidden: "
            'updates to reclaimPolicy are forbidden., volumeBindingMode: Invalid value: "WaitForFirstConsumer": '
            "field is immutable]"
        )
        patched = api.patch(
            f"{STORAGE}/fixed",
            json={"allowVolumeExpansion": True},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 200 and patched.json()["allowVolumeExpansion"] is True
    finally:
        delete_class(api, "fixed")


# DefaultStorageClass -----------------------------------------------------------------------------------


def test_claims_without_a_class_get_the_default_one(api: httpx.Client) -> None:
    create_class(api, storage_class("slow"))
    create_class(api, storage_class("standard", default=True))
    try:
        assert create_claim(api, "plain")["spec"]["storageClassName"] == "standard"
        assert create_claim(api, "chosen", storageClassName="slow")["spec"]["storageClassName"] == "slow"
        assert create_claim(api, "classless", storageClassName="")["spec"]["storageClassName"] == ""
    finally:
        delete_class(api, "standard")
    assert "storageClassName" not in create_claim(api, "no-default")["spec"]
    delete_class(api, "slow")


# StorageObjectInUseProtection --------------------------------------------------------------------------


def test_new_claims_and_volumes_are_protected_until_their_finalizer_goes(api: httpx.Client) -> None:
    created = create_claim(api, "guarded", storageClassName="")
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "guarded"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/guarded"},
        },
    }
    made = api.post(VOLUMES, json=volume)
    assert made.status_code == 201 and made.json()["metadata"]["finalizers"] == [
        "kubernetes.io/pv-protection"
    ]

    # Without the KCM's protection controllers nothing lifts the finalizers: a delete only marks the objects.
    for path in (f"{CLAIMS}/guarded", f"{VOLUMES}/guarded"):
        assert api.delete(path).status_code == 200
        assert api.get(path).json()["metadata"]["deletionTimestamp"]
        released = api.patch(
            path,
            json={"metadata": {"finalizers": None}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert released.status_code == 200, released.text
        assert api.get(path).status_code == 404


# PersistentVolumeClaimResize ---------------------------------------------------------------------------


def bind(api: httpx.Client, name: str) -> None:
    """Mark a claim Bound with 1Gi, as the PV controller would (there is no KCM here), through its status."""
    bound = api.patch(
        f"{CLAIMS}/{name}/status",
        json={"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert bound.status_code == 200, bound.text


def test_kubectl_patch_grows_a_claim_only_through_an_expandable_class(
    api: httpx.Client, kubectl: Kubectl
) -> None:
    create_class(api, storage_class("expandable", allowVolumeExpansion=True))
    create_class(api, storage_class("fixed-size"))
    try:
        for name, class_name in (("grows", "expandable"), ("stays", "fixed-size")):
            create_claim(api, name, storageClassName=class_name)
            bind(api, name)
        to_2gi = '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'

        assert (
            kubectl("patch", "pvc", "grows", "-p", to_2gi).stdout == "persistentvolumeclaim/grows patched\n"
        )
        grown = api.get(f"{CLAIMS}/grows").json()
        assert grown["spec"]["resources"]["requests"]["storage"] == "2Gi"
        # mkpy has no expand controller to grow the volume: the capacity stays.
        assert grown["status"]["capacity"]["storage"] == "1Gi"

        refused = kubectl("patch", "pvc", "stays", "-p", to_2gi, ok=False)
        assert refused.stderr == (
            'Error from server (Forbidden): persistentvolumeclaims "stays" is forbidden: only dynamically '
            "provisioned pvc can be resized and the storageclass that provisions the pvc must support resize\n"
        )

        shrunk = kubectl("patch", "pvc", "grows", "-p", to_2gi.replace("2Gi", "1Gi"), ok=False)
        assert shrunk.stderr == (
            'The PersistentVolumeClaim "grows" is invalid: spec.resources.requests.storage: Forbidden: field can '
            "not be less than status.capacity\n"
        )
    finally:
        delete_class(api, "expandable")
        delete_class(api, "fixed-size")

"""The persistent-volume binder against hand-filled caches and a recording client (tests/kcm/fakes.py).

Matching is a pure function and tested as a table; the syncs are driven one key at a time and judged by the
writes they send, the events they record and, for the host-path provisioner, the directories under a
temporary provisioner directory.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.client.controller import process_next_work_item
from minikube_py.client.resources import STORAGE_CLASSES
from minikube_py.client.store import Indexer
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.volume.binder import (
    BindingError,
    PersistentVolumeController,
)
from minikube_py.kcm.controllers.volume.localcache import LocalCache
from minikube_py.kcm.controllers.volume.matching import find_best_match
from minikube_py.kcm.controllers.volume.provisioning import ProvisioningError
from tests.kcm.fakes import FakeRecorder, RecordingClient, cache, context

PVS, PVCS = resources.PERSISTENT_VOLUMES, resources.PERSISTENT_VOLUME_CLAIMS
RWO, ROX, RWX = "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"
HOST_PATH = "kubernetes.io/host-path"
CLAIM_UID = "0f1e2d3c"


def volume(
    name: str = "pv1",
    size: str = "1Gi",
    modes: tuple[str, ...] = (RWO,),
    storage_class: str = "",
    phase: str = "Available",
    claim_ref: dict[str, Any] | None = None,
    policy: str = "Retain",
    **extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "5"}
    meta.update(
        {
            key: extra.pop(key)
            for key in ("labels", "annotations", "finalizers", "deletionTimestamp")
            if key in extra
        }
    )
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "persistentVolumeReclaimPolicy": policy,
        "storageClassName": storage_class,
        "hostPath": {"path": "/data/pv1"},
        **extra,
    }
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def claim(
    name: str = "data",
    size: str = "1Gi",
    modes: tuple[str, ...] = (RWO,),
    storage_class: str | None = "",
    uid: str = CLAIM_UID,
    volume_name: str = "",
    annotations: dict[str, str] | None = None,
    phase: str = "Pending",
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "7"}
    if annotations:
        meta["annotations"] = dict(annotations)
    body: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec}
    if storage_class is not None:
        body["storageClassName"] = storage_class
    if volume_name:
        body["volumeName"] = volume_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": body,
        "status": {"phase": phase},
    }


def ref(name: str = "data", uid: str = CLAIM_UID) -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": name,
        "uid": uid,
        "apiVersion": "v1",
    }


def storage_class(
    name: str = "standard",
    provisioner: str = HOST_PATH,
    policy: str = "Delete",
    binding_mode: str | None = "Immediate",
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "creationTimestamp": "2024-01-01T00:00:00Z", **extra.pop("metadata", {})},
        "provisioner": provisioner,
        "reclaimPolicy": policy,
        **extra,
    }
    if binding_mode is not None:
        body["volumeBindingMode"] = binding_mode
    return body


def pod(name: str, claim_name: str = "data", node: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {
            "nodeName": node,
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}],
        },
        "status": {"phase": "Pending"},
    }


def binder(
    *,
    volumes: tuple[dict[str, Any], ...] = (),
    claims: tuple[dict[str, Any], ...] = (),
    classes: tuple[dict[str, Any], ...] = (),
    pods: tuple[dict[str, Any], ...] = (),
    settings: ControllerSettings | None = None,
) -> tuple[PersistentVolumeController, RecordingClient, FakeRecorder]:
    ctx, client, _ = context(settings)
    recorder = FakeRecorder()
    ctx.recorder = recorder  # type: ignore[assignment]
    controller = PersistentVolumeController(ctx)
    for resource, objects in (
        (PVS, volumes),
        (PVCS, claims),
        (STORAGE_CLASSES, classes),
        (resources.PODS, pods),
    ):
        cache(ctx, resource, *objects)
        for obj in objects:
            client.put(resource, obj)
    return controller, client, recorder


def hostpath_settings(directory: Path, enabled: bool = True) -> ControllerSettings:
    return ControllerSettings(enable_hostpath_provisioner=enabled, hostpath_provisioner_dir=str(directory))


def writes(client: RecordingClient) -> list[tuple[str, str, str]]:
    return [(a.verb, a.resource, a.name) for a in client.writes()]


# matching -------------------------------------------------------------------------------------------------

MATCHING = [
    (
        "the smallest volume that fits is chosen",
        claim(size="1Gi"),
        [volume("big", "10Gi"), volume("small", "2Gi"), volume("tiny", "512Mi")],
        "small",
    ),
    ("a claim asking for more than any volume gets none", claim(size="20Gi"), [volume("a", "10Gi")], None),
    (
        "a volume without a requested access mode is skipped",
        claim(modes=(RWX,)),
        [volume("a", modes=(RWO,))],
        None,
    ),
    (
        "a volume offering more modes than asked may serve",
        claim(modes=(RWO,)),
        [volume("a", modes=(RWO, RWX))],
        "a",
    ),
    (
        "volumes with fewer access modes are searched before smaller ones",
        claim(modes=(RWO,)),
        [volume("exact", "5Gi", modes=(RWO,)), volume("more", "1Gi", modes=(RWO, ROX))],
        "exact",
    ),
    (
        "a volume of another class is skipped",
        claim(storage_class="fast"),
        [volume("a", storage_class="slow")],
        None,
    ),
    (
        "a class in the beta annotation counts",
        claim(storage_class=None, annotations={"volume.beta.kubernetes.io/storage-class": "slow"}),
        [volume("a", storage_class="slow")],
        "a",
    ),
    ("a block claim does not take a filesystem volume", claim(volumeMode="Block"), [volume("a")], None),
    (
        "the claim's selector must match the volume's labels",
        claim(selector={"matchLabels": {"tier": "gold"}}),
        [volume("plain"), volume("gold", "5Gi", labels={"tier": "gold"})],
        "gold",
    ),
    ("a released volume is not available", claim(), [volume("a", phase="Released")], None),
    (
        "a volume pre-bound to another claim is skipped",
        claim(),
        [volume("a", claim_ref=ref("other", ""))],
        None,
    ),
    (
        "a volume being deleted is skipped",
        claim(),
        [volume("a", deletionTimestamp="2024-01-01T00:00:00Z")],
        None,
    ),
    (
        "a volume pre-bound to the claim wins whatever its phase or size",
        claim(),
        [volume("small", "1Gi"), volume("mine", "9Gi", phase="Bound", claim_ref=ref())],
        "mine",
    ),
    (
        "a pre-bound volume too small for the claim is not taken",
        claim(size="2Gi"),
        [volume("mine", "1Gi", claim_ref=ref())],
        None,
    ),
]


@pytest.mark.parametrize(
    ("wanted", "volumes", "expected"), [case[1:] for case in MATCHING], ids=[case[0] for case in MATCHING]
)
def test_find_best_match(wanted: dict[str, Any], volumes: list[dict[str, Any]], expected: str | None) -> None:
    match = find_best_match(wanted, volumes)
    assert (match["metadata"]["name"] if match else None) == expected


def test_a_delayed_claim_only_takes_a_pre_bound_volume() -> None:
    assert find_best_match(claim(), [volume("free")], delay_binding=True) is None
    assert (
        find_best_match(claim(), [volume("mine", claim_ref=ref())], delay_binding=True)["metadata"]["name"]
        == "mine"
    )


# binding --------------------------------------------------------------------------------------------------


async def test_a_pending_claim_is_bound_to_the_volume_that_fits_in_four_writes() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1", "2Gi"),), claims=(claim(size="1Gi"),))
    await ctrl.sync_claim("default/data")
    assert writes(client) == [
        ("update", "persistentvolumes", "pv1"),
        ("update", "persistentvolumes/status", "pv1"),
        ("update", "persistentvolumeclaims", "data"),
        ("update", "persistentvolumeclaims/status", "data"),
    ]
    saved_volume, volume_status, saved_claim, claim_status = (a.body for a in client.writes())
    assert saved_volume["spec"]["claimRef"] == {**ref(), "resourceVersion": "7"}
    assert saved_volume["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    assert volume_status["status"]["phase"] == "Bound"
    assert saved_claim["spec"]["volumeName"] == "pv1"
    assert saved_claim["metadata"]["annotations"] == {
        "pv.kubernetes.io/bound-by-controller": "yes",
        "pv.kubernetes.io/bind-completed": "yes",
    }
    assert claim_status["status"] == {"phase": "Bound", "accessModes": [RWO], "capacity": {"storage": "2Gi"}}


async def test_the_binding_writes_are_remembered_so_the_next_sync_does_not_bind_again() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1"),), claims=(claim(), claim("other", uid="other-uid")))
    await ctrl.sync_claim("default/data")
    client.actions.clear()
    await ctrl.sync_claim("default/other")  # the informer still shows pv1 Available and unclaimed
    assert ("update", "persistentvolumes", "pv1") not in writes(client)


async def test_a_user_pre_bound_volume_is_bound_without_the_controller_annotation() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1", claim_ref=ref(uid="")),), claims=(claim(),))
    await ctrl.sync_claim("default/data")
    saved_volume = client.writes()[0].body
    assert saved_volume["spec"]["claimRef"]["uid"] == CLAIM_UID
    assert "annotations" not in saved_volume["metadata"]


@pytest.mark.parametrize(
    ("wanted", "volumes"),
    [
        (claim(size="20Gi"), (volume("pv1", "10Gi"),)),
        (claim(modes=(RWX,)), (volume("pv1", modes=(RWO,)),)),
    ],
    ids=["a claim asking for more than any volume", "a claim whose access mode no volume offers"],
)
async def test_a_claim_without_class_that_nothing_fits_stays_pending(
    wanted: dict[str, Any], volumes: tuple[dict[str, Any], ...]
) -> None:
    ctrl, client, recorder = binder(volumes=volumes, claims=(wanted,))
    await ctrl.sync_claim("default/data")
    assert writes(client) == []  # already Pending, nothing to change
    assert recorder.events == [
        (
            "Normal",
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
        )
    ]


async def test_a_claim_without_any_class_gets_the_default_class() -> None:
    default = storage_class(
        "standard", metadata={"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}
    )
    ctrl, client, _ = binder(claims=(claim(storage_class=None),), classes=(default, storage_class("other")))
    await ctrl.sync_claim("default/data")
    assert writes(client) == [("update", "persistentvolumeclaims", "data")]
    assert client.writes()[0].body["spec"]["storageClassName"] == "standard"


async def test_a_claim_asking_for_no_class_keeps_asking_for_none() -> None:
    default = storage_class(
        "standard", metadata={"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}
    )
    ctrl, client, recorder = binder(claims=(claim(storage_class=""),), classes=(default,))
    await ctrl.sync_claim("default/data")
    assert writes(client) == [] and recorder.reasons() == ["FailedBinding"]


@pytest.mark.parametrize(
    ("pods", "event"),
    [
        ((), ("WaitForFirstConsumer", "waiting for first consumer to be created before binding")),
        ((pod("web-0"),), ("WaitForPodScheduled", "waiting for pod web-0 to be scheduled")),
        (
            (pod("web-0"), pod("web-1"), pod("web-2", node="n1")),
            ("WaitForPodScheduled", "waiting for pods web-0,web-1 to be scheduled"),
        ),
    ],
    ids=["without a pod", "with one unscheduled pod", "with two unscheduled pods"],
)
async def test_a_wait_for_first_consumer_claim_stays_pending(
    pods: tuple[dict[str, Any], ...], event: tuple[str, str]
) -> None:
    ctrl, client, recorder = binder(
        volumes=(volume("pv1", storage_class="local"),),
        claims=(claim(storage_class="local"),),
        classes=(storage_class("local", binding_mode="WaitForFirstConsumer"),),
        pods=pods,
    )
    await ctrl.sync_claim("default/data")
    assert writes(client) == []
    assert recorder.events == [("Normal", *event)]


async def test_a_class_without_a_binding_mode_fails_the_sync() -> None:
    ctrl, _, _ = binder(
        claims=(claim(storage_class="odd"),), classes=(storage_class("odd", binding_mode=None),)
    )
    with pytest.raises(BindingError, match='VolumeBindingMode not set for StorageClass "odd"'):
        await ctrl.sync_claim("default/data")


@pytest.mark.parametrize(
    ("named", "event"),
    [
        (
            volume("pv1", "512Mi"),
            ("Warning", "VolumeMismatch", 'Cannot bind to requested volume "pv1": requested PV is too small'),
        ),
        (
            volume("pv1", modes=(ROX,)),
            ("Warning", "VolumeMismatch", 'Cannot bind to requested volume "pv1": incompatible accessMode'),
        ),
        (
            volume("pv1", storage_class="gold"),
            (
                "Warning",
                "VolumeMismatch",
                'Cannot bind to requested volume "pv1": storageClassName does not match',
            ),
        ),
        (
            volume("pv1", phase="Bound", claim_ref=ref("other", "other-uid")),
            ("Warning", "FailedBinding", 'volume "pv1" already bound to a different claim.'),
        ),
    ],
    ids=["too small", "without the access mode", "of another class", "bound to another claim"],
)
async def test_a_claim_naming_a_volume_that_cannot_serve_it_stays_pending(
    named: dict[str, Any], event: tuple[str, str, str]
) -> None:
    ctrl, client, recorder = binder(volumes=(named,), claims=(claim(volume_name="pv1"),))
    await ctrl.sync_claim("default/data")
    assert writes(client) == [] and recorder.events == [event]


async def test_a_claim_naming_a_missing_volume_waits_for_it() -> None:
    ctrl, client, recorder = binder(claims=(claim(volume_name="later", phase=""),))
    await ctrl.sync_claim("default/data")
    assert writes(client) == [("update", "persistentvolumeclaims/status", "data")]
    assert client.writes()[0].body["status"] == {"phase": "Pending"} and recorder.events == []


@pytest.mark.parametrize(
    ("volumes", "reason", "message"),
    [
        ((), "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"),
        (
            (volume("pv1", phase="Bound", claim_ref=ref("other", "other-uid")),),
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        ),
    ],
    ids=["whose volume is gone", "whose volume points at another claim"],
)
async def test_a_bound_claim_becomes_lost(
    volumes: tuple[dict[str, Any], ...], reason: str, message: str
) -> None:
    bound = claim(
        volume_name="pv1",
        phase="Bound",
        annotations={"pv.kubernetes.io/bind-completed": "yes"},
    )
    bound["status"].update(accessModes=[RWO], capacity={"storage": "1Gi"})
    ctrl, client, recorder = binder(volumes=volumes, claims=(bound,))
    await ctrl.sync_claim("default/data")
    assert writes(client) == [("update", "persistentvolumeclaims/status", "data")]
    assert client.writes()[0].body["status"] == {"phase": "Lost"}
    assert recorder.events == [("Warning", reason, message)]


async def test_a_write_conflict_requeues_the_claim_and_the_retry_finishes_the_binding() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1"),), claims=(claim(),))
    client.failures[("update", "persistentvolumes")] = errors.Conflict(
        {"code": 409, "reason": "Conflict", "message": "the object has been modified"}
    )
    ctrl.claim_queue.add("default/data")
    log = logging.getLogger("test")
    await process_next_work_item(ctrl.claim_queue, ctrl.sync_claim, name="claims", max_retries=None, log=log)
    assert ctrl.claim_queue.num_requeues("default/data") == 1
    del client.failures[("update", "persistentvolumes")]
    await ctrl.sync_claim("default/data")
    assert writes(client)[-1] == ("update", "persistentvolumeclaims/status", "data")


# provisioning ---------------------------------------------------------------------------------------------


async def test_a_host_path_class_provisions_a_directory_and_a_volume_for_the_claim(tmp_path: Path) -> None:
    ctrl, client, recorder = binder(
        claims=(claim(storage_class="standard", size="3Gi"),),
        classes=(storage_class("standard", policy="Delete"),),
        settings=hostpath_settings(tmp_path),
    )
    await ctrl.sync_claim("default/data")
    assert writes(client) == [
        ("update", "persistentvolumeclaims", "data"),
        ("create", "persistentvolumes", f"pvc-{CLAIM_UID}"),
    ]
    annotated, created = client.writes()[0].body, client.writes()[1].body
    assert annotated["metadata"]["annotations"] == {
        "volume.beta.kubernetes.io/storage-provisioner": HOST_PATH,
        "volume.kubernetes.io/storage-provisioner": HOST_PATH,
    }
    directory = tmp_path / f"pvc-{CLAIM_UID}"
    assert directory.is_dir() and (directory.stat().st_mode & 0o777) == 0o777
    assert created["metadata"]["annotations"] == {
        "kubernetes.io/createdby": "hostpath-dynamic-provisioner",
        "pv.kubernetes.io/bound-by-controller": "yes",
        "pv.kubernetes.io/provisioned-by": HOST_PATH,
    }
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pv-controller"]
    assert created["spec"] == {
        "persistentVolumeReclaimPolicy": "Delete",
        "accessModes": [RWO],
        "capacity": {"storage": "3Gi"},
        "storageClassName": "standard",
        "hostPath": {"path": str(directory), "type": "DirectoryOrCreate"},
        "claimRef": {**ref(), "resourceVersion": "7"},
    }
    assert recorder.events == [
        (
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume pvc-{CLAIM_UID} using {HOST_PATH}",
        )
    ]


async def test_the_new_volume_is_bound_by_the_next_sync_of_the_claim(tmp_path: Path) -> None:
    ctrl, client, _ = binder(
        claims=(claim(storage_class="standard"),),
        classes=(storage_class(),),
        settings=hostpath_settings(tmp_path),
    )
    await ctrl.sync_claim("default/data")
    client.actions.clear()
    await ctrl.sync_claim("default/data")
    assert ("update", "persistentvolumeclaims", "data") in writes(client)
    assert client.writes()[-1].body["status"]["phase"] == "Bound"


async def test_a_retained_class_provisions_a_volume_without_the_deletion_finalizer(tmp_path: Path) -> None:
    ctrl, client, _ = binder(
        claims=(claim(storage_class="keep"),),
        classes=(storage_class("keep", policy="Retain"),),
        settings=hostpath_settings(tmp_path),
    )
    await ctrl.sync_claim("default/data")
    created = client.writes("create")[0].body
    assert (
        created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        and "finalizers" not in created["metadata"]
    )


async def test_a_volume_provisioned_before_is_not_made_twice(tmp_path: Path) -> None:
    ctrl, client, _ = binder(
        claims=(claim(storage_class="standard"),),
        classes=(storage_class(),),
        settings=hostpath_settings(tmp_path),
    )
    client.put(PVS, volume(f"pvc-{CLAIM_UID}"))  # the apiserver has it; the cache not yet
    await ctrl.sync_claim("default/data")
    assert client.writes("create") == []


async def test_an_unwritable_provisioner_directory_fails_and_the_retry_provisions(tmp_path: Path) -> None:
    blocked = tmp_path / "storage"
    blocked.write_text("a file where the directory should be")
    ctrl, client, recorder = binder(
        claims=(claim(storage_class="standard"),),
        classes=(storage_class(),),
        settings=hostpath_settings(blocked),
    )
    with pytest.raises(ProvisioningError):
        await ctrl.sync_claim("default/data")
    assert client.writes("create") == []
    assert recorder.events == [
        (
            "Warning",
            "ProvisioningFailed",
            f'Failed to provision volume with StorageClass "standard": mkdir '
            f"{blocked}/pvc-{CLAIM_UID}: not a directory",
        )
    ]
    blocked.unlink()
    await ctrl.sync_claim("default/data")
    assert [a.name for a in client.writes("create")] == [f"pvc-{CLAIM_UID}"]


@pytest.mark.parametrize(
    ("wanted", "klass", "enabled", "message"),
    [
        (
            claim(storage_class="standard"),
            storage_class(),
            False,
            'Failed to create provisioner: Provisioning in volume plugin "kubernetes.io/host-path" is disabled',
        ),
        (
            claim(storage_class="standard"),
            storage_class(mountOptions=["ro", "noatime"]),
            True,
            'Mount options are not supported by the provisioner but StorageClass "standard" has mount options [ro noatime]',
        ),
        (
            claim(storage_class="standard", volumeMode="Block"),
            storage_class(),
            True,
            'Failed to provision volume with StorageClass "standard": kubernetes.io/host-path does not support block '
            "volume provisioning",
        ),
        (
            claim(storage_class="standard", dataSource={"kind": "PersistentVolumeClaim", "name": "src"}),
            storage_class(),
            True,
            'plugin "kubernetes.io/host-path" is not a CSI plugin. Only CSI plugin can provision a claim with a '
            "datasource",
        ),
    ],
    ids=[
        "with provisioning disabled",
        "for a class with mount options",
        "for a block claim",
        "from a data source",
    ],
)
async def test_the_host_path_plugin_refuses(
    tmp_path: Path, wanted: dict[str, Any], klass: dict[str, Any], enabled: bool, message: str
) -> None:
    ctrl, client, recorder = binder(
        claims=(wanted,), classes=(klass,), settings=hostpath_settings(tmp_path, enabled)
    )
    with pytest.raises(ProvisioningError):
        await ctrl.sync_claim("default/data")
    assert client.writes("create") == [] and list(tmp_path.iterdir()) == []
    assert recorder.events == [("Warning", "ProvisioningFailed", message)]


@pytest.mark.parametrize(
    ("classes", "message"),
    [
        ((), 'storageclass.storage.k8s.io "standard" not found'),
        (
            (storage_class(provisioner="kubernetes.io/gce-pd"),),
            "no volume plugin matched name: kubernetes.io/gce-pd",
        ),
    ],
    ids=["a class that does not exist", "an in-tree plugin mkpy does not have"],
)
async def test_a_claim_nothing_can_provision_gets_provisioning_failed(
    classes: tuple[dict[str, Any], ...], message: str
) -> None:
    ctrl, client, recorder = binder(claims=(claim(storage_class="standard"),), classes=classes)
    await ctrl.sync_claim("default/data")
    assert writes(client) == [] and recorder.events == [("Warning", "ProvisioningFailed", message)]


async def test_a_class_of_an_external_provisioner_annotates_the_claim_and_waits() -> None:
    ctrl, client, recorder = binder(
        claims=(claim(storage_class="nfs"),), classes=(storage_class("nfs", provisioner="example.com/nfs"),)
    )
    await ctrl.sync_claim("default/data")
    assert writes(client) == [("update", "persistentvolumeclaims", "data")]
    assert client.writes()[0].body["metadata"]["annotations"] == {
        "volume.beta.kubernetes.io/storage-provisioner": "example.com/nfs",
        "volume.kubernetes.io/storage-provisioner": "example.com/nfs",
    }
    assert recorder.events == [
        (
            "Normal",
            "ExternalProvisioning",
            "Waiting for a volume to be created either by the external provisioner "
            "'example.com/nfs' or manually by the system administrator. If volume creation is "
            "delayed, please verify that the provisioner is running and correctly registered.",
        )
    ]


# volumes --------------------------------------------------------------------------------------------------


async def test_an_unclaimed_volume_becomes_available() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1", phase="Pending"),))
    await ctrl.sync_volume("pv1")
    assert writes(client) == [("update", "persistentvolumes/status", "pv1")]
    assert client.writes()[0].body["status"] == {"phase": "Available"}


async def test_a_retained_volume_whose_claim_is_gone_is_released_and_kept(tmp_path: Path) -> None:
    data = tmp_path / "pvc-x"
    data.mkdir()
    kept = volume("pv1", phase="Bound", claim_ref=ref(), policy="Retain", hostPath={"path": str(data)})
    ctrl, client, _ = binder(volumes=(kept,), settings=hostpath_settings(tmp_path))
    await ctrl.sync_volume("pv1")
    assert writes(client) == [("update", "persistentvolumes/status", "pv1")]
    assert client.writes()[0].body["status"]["phase"] == "Released" and data.is_dir()


def provisioned(directory: Path, **extra: Any) -> dict[str, Any]:
    return volume(
        "pv1",
        phase="Bound",
        claim_ref=ref(),
        policy="Delete",
        hostPath={"path": str(directory)},
        annotations={"pv.kubernetes.io/provisioned-by": HOST_PATH},
        finalizers=["kubernetes.io/pv-protection", "kubernetes.io/pv-controller"],
        **extra,
    )


async def test_a_deleted_volume_whose_claim_is_gone_loses_its_directory_then_its_object(
    tmp_path: Path,
) -> None:
    data = tmp_path / "pvc-x"
    (data / "sub").mkdir(parents=True)
    ctrl, client, _ = binder(volumes=(provisioned(data),), settings=hostpath_settings(tmp_path))
    await ctrl.sync_volume("pv1")
    assert not data.exists()
    assert writes(client) == [
        ("update", "persistentvolumes/status", "pv1"),
        ("update", "persistentvolumes", "pv1"),
        ("delete", "persistentvolumes", "pv1"),
    ]
    assert client.writes()[1].body["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]


async def test_a_volume_that_is_gone_once_its_directory_is_removed_again_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sync after the one that deleted the volume: the PV is still terminating when it is read, and the
    # PV protection controller lets it go while this sync removes the directory a second time.
    data = tmp_path / "pvc-x"
    terminating = provisioned(data)
    terminating["metadata"].update(
        finalizers=["kubernetes.io/pv-protection"], deletionTimestamp="2024-01-01T00:00:00Z"
    )
    terminating["status"]["phase"] = "Released"
    ctrl, client, recorder = binder(volumes=(terminating,), settings=hostpath_settings(tmp_path))
    remove_directory = ctrl.reclaimer.plugin.delete

    async def remove_while_the_volume_goes(pv: dict[str, Any]) -> None:
        await remove_directory(pv)
        del client.objects[("persistentvolumes", "", "pv1")]

    monkeypatch.setattr(ctrl.reclaimer.plugin, "delete", remove_while_the_volume_goes)
    await ctrl.sync_volume("pv1")
    assert writes(client) == [("delete", "persistentvolumes", "pv1")]
    assert recorder.events == []


@pytest.mark.parametrize(
    "where",
    ["outside", "dir", "escape", "symlink"],
    ids=[
        "a path outside the provisioner dir",
        "the provisioner dir itself",
        "a path escaping it with ..",
        "a symlink inside it pointing outside",
    ],
)
async def test_a_host_path_outside_the_provisioner_dir_is_never_removed(tmp_path: Path, where: str) -> None:
    storage, outside = tmp_path / "storage", tmp_path / "precious"
    (outside / "keep").mkdir(parents=True)
    storage.mkdir()
    (storage / "link").symlink_to(outside)
    path = {
        "outside": str(outside),
        "dir": str(storage),
        "escape": f"{storage}/../precious",
        "symlink": str(storage / "link"),
    }[where]
    ctrl, client, recorder = binder(
        volumes=(
            provisioned(
                Path(path),
            ),
        ),
        settings=hostpath_settings(storage),
    )
    with pytest.raises(Exception, match="host_path deleter only supports"):
        await ctrl.sync_volume("pv1")
    assert (outside / "keep").is_dir() and storage.is_dir()
    assert client.writes("delete") == []
    assert client.writes()[-1].body["status"] == {
        "phase": "Failed",
        "message": f"host_path deleter only supports {storage}/.+ but received provided {path}",
    }
    assert recorder.reasons() == ["VolumeFailedDelete"]


async def test_a_volume_without_a_deleter_is_failed() -> None:
    nfs = volume(
        "pv1",
        phase="Released",
        claim_ref=ref(),
        policy="Delete",
        hostPath=None,
        nfs={"server": "nas", "path": "/x"},
    )
    del nfs["spec"]["hostPath"]
    ctrl, client, recorder = binder(volumes=(nfs,))
    with pytest.raises(Exception, match="no deletable volume plugin matched"):
        await ctrl.sync_volume("pv1")
    assert recorder.events == [
        (
            "Warning",
            "VolumeFailedDelete",
            'error getting deleter volume plugin for volume "pv1": no deletable volume plugin matched',
        )
    ]


@pytest.mark.parametrize(
    ("policy", "annotations", "event"),
    [
        ("Recycle", {}, ("Warning", "VolumeFailedRecycle", "No recycler plugin found for the volume!")),
        (
            "Sometimes",
            {},
            (
                "Warning",
                "VolumeUnknownReclaimPolicy",
                "Volume has unrecognized PersistentVolumeReclaimPolicy",
            ),
        ),
        ("Delete", {"pv.kubernetes.io/provisioned-by": "example.com/nfs"}, None),
    ],
    ids=["Recycle, which mkpy cannot", "an unknown policy", "Delete by an external provisioner"],
)
async def test_other_reclaim_policies(
    policy: str, annotations: dict[str, str], event: tuple[str, str, str] | None
) -> None:
    released = volume("pv1", phase="Released", claim_ref=ref(), policy=policy, annotations=annotations)
    ctrl, client, recorder = binder(volumes=(released,))
    await ctrl.sync_volume("pv1")
    assert client.writes("delete") == []
    assert recorder.events == ([event] if event else [])


async def test_a_claim_the_cache_has_not_seen_yet_keeps_its_volume_bound() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1", phase="Bound", claim_ref=ref()),))
    client.put(PVCS, claim(volume_name="pv1", phase="Bound"))
    await ctrl.sync_volume("pv1")
    assert writes(client) == []


async def test_a_new_claim_of_the_same_name_does_not_keep_the_old_ones_volume(tmp_path: Path) -> None:
    ctrl, client, _ = binder(
        volumes=(volume("pv1", phase="Bound", claim_ref=ref()),), claims=(claim(uid="new-uid"),)
    )
    await ctrl.sync_volume("pv1")
    assert client.writes()[0].body["status"]["phase"] == "Released"


async def test_a_volume_whose_claim_points_back_is_bound() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1", claim_ref=ref()),), claims=(claim(volume_name="pv1"),))
    await ctrl.sync_volume("pv1")
    assert client.writes()[0].body["status"]["phase"] == "Bound"


async def test_a_volume_bound_to_a_claim_that_took_another_is_unbound() -> None:
    mine = volume(
        "pv1", phase="Bound", claim_ref=ref(), annotations={"pv.kubernetes.io/bound-by-controller": "yes"}
    )
    ctrl, client, _ = binder(volumes=(mine,), claims=(claim(volume_name="pv2"),))
    await ctrl.sync_volume("pv1")
    unbound, status = client.writes()[0].body, client.writes()[1].body
    assert "claimRef" not in unbound["spec"] and unbound["metadata"]["annotations"] == {}
    assert status["status"]["phase"] == "Available"


async def test_a_just_provisioned_volume_sends_its_claim_to_be_bound() -> None:
    ctrl, client, _ = binder(volumes=(volume("pv1", phase="Bound", claim_ref=ref()),), claims=(claim(),))
    await ctrl.sync_volume("pv1")
    assert writes(client) == [] and len(ctrl.claim_queue) == 1


@pytest.mark.parametrize(
    ("policy", "finalizers", "expected"),
    [
        ("Delete", [], ["kubernetes.io/pv-controller"]),
        ("Retain", ["kubernetes.io/pv-controller"], []),
    ],
    ids=["Delete gains it", "Retain loses it"],
)
async def test_the_in_tree_deletion_finalizer_follows_the_policy(
    policy: str, finalizers: list[str], expected: list[str]
) -> None:
    mine = volume(
        "pv1",
        claim_ref=ref(),
        phase="Bound",
        policy=policy,
        finalizers=finalizers,
        annotations={"pv.kubernetes.io/provisioned-by": HOST_PATH},
    )
    ctrl, client, _ = binder(volumes=(mine,), claims=(claim(volume_name="pv1", phase="Bound"),))
    await ctrl.sync_volume("pv1")
    assert client.writes()[0].body["metadata"]["finalizers"] == expected


# triggers -------------------------------------------------------------------------------------------------


async def test_every_claim_and_volume_is_synced_again_each_sync_period() -> None:
    ctrl, _, _ = binder(
        volumes=(volume("pv1"),),
        claims=(claim(),),
        settings=ControllerSettings(pv_claim_binder_sync_period=15.0),
    )
    clock = ctrl.clock
    task = asyncio.create_task(ctrl._resync())
    try:
        await asyncio.sleep(0)
        clock.advance(14.9)  # type: ignore[attr-defined]
        await asyncio.sleep(0)
        assert (len(ctrl.volume_queue), len(ctrl.claim_queue)) == (0, 0)
        clock.advance(0.2)  # type: ignore[attr-defined]
        await asyncio.sleep(0)
        assert (len(ctrl.volume_queue), len(ctrl.claim_queue)) == (1, 1)
    finally:
        task.cancel()


def test_a_deleted_claim_sends_its_volume_and_a_deleted_volume_its_claim() -> None:
    ctrl, _, _ = binder()
    ctrl._claim_deleted(claim(volume_name="pv1"))
    ctrl._volume_deleted(volume("pv2", claim_ref=ref("other")))
    assert (len(ctrl.volume_queue), len(ctrl.claim_queue)) == (1, 1)


def test_the_local_cache_prefers_its_own_newer_write_until_the_informer_passes_it() -> None:
    indexer = Indexer()
    indexer.add(volume("pv1"))
    local = LocalCache(indexer)
    written = volume("pv1", phase="Bound")
    written["metadata"]["resourceVersion"] = "9"
    local.remember(written)
    assert local.get("pv1")["status"]["phase"] == "Bound" and len(local.list()) == 1
    newer = volume("pv1", phase="Released")
    newer["metadata"]["resourceVersion"] = "12"
    indexer.update(newer)
    assert local.get("pv1")["status"]["phase"] == "Released"

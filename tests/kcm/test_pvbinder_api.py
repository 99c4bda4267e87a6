"""The volume controllers against a real apiserver, in this process (tests/kcm/running.py).

The binder provisions host-path volumes under the test's temporary directory, binds them, and once the claims
are deleted (which the PVC protection controller lets happen, no pod using them) releases them: the Delete
class's volume loses its directory and its object, the Retain class's stays Released with its data. A
hand-made volume is bound to the claim it fits, and a claim too big for it stays Pending. The classes get
names of their own and are never the default, so other tests' claims are not affected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.resources import STORAGE_CLASSES
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.volume import (
    PersistentVolumeController,
    PVCProtectionController,
    PVProtectionController,
)
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for

PVS, PVCS = resources.PERSISTENT_VOLUMES, resources.PERSISTENT_VOLUME_CLAIMS
CONTROLLERS = (PersistentVolumeController, PVCProtectionController, PVProtectionController)


def storage_class(name: str, policy: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/host-path",
        "reclaimPolicy": policy,
        "volumeBindingMode": "Immediate",
    }


def claim(name: str, storage_class: str, size: str = "1Mi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        },
    }


async def phase(client: RESTClient, resource: Any, name: str, namespace: str | None = None) -> str | None:
    try:
        return (await client.get(resource, name, namespace)).get("status", {}).get("phase")
    except errors.NotFound:
        return None


async def reasons(client: RESTClient, namespace: str, name: str) -> list[str]:
    events = (await client.list(resources.CORE_EVENTS, namespace))["items"]
    return [e["reason"] for e in events if e["involvedObject"]["name"] == name]


async def test_provisioned_volumes_follow_their_claims_and_reclaim_policy(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    suffix = namespace[2:]
    classes = {"gone": (f"delete-{suffix}", "Delete"), "kept": (f"retain-{suffix}", "Retain")}
    settings = ControllerSettings(
        enable_hostpath_provisioner=True,
        hostpath_provisioner_dir=str(tmp_path),
        pv_claim_binder_sync_period=1.0,
    )
    async with running(control_plane, *CONTROLLERS, settings=settings) as client:
        volumes = {}
        for claim_name, (class_name, policy) in classes.items():
            await client.create(STORAGE_CLASSES, storage_class(class_name, policy))
            created = await client.create(PVCS, claim(claim_name, class_name), namespace)
            volumes[claim_name] = f"pvc-{created['metadata']['uid']}"
        for claim_name, volume in volumes.items():
            await wait_for(lambda c=claim_name: _bound(client, namespace, c), 20, f"claim {claim_name} Bound")
            assert await phase(client, PVS, volume) == "Bound"
            assert (tmp_path / volume).is_dir()
            assert "ProvisioningSucceeded" in await reasons(client, namespace, claim_name)

        for claim_name in volumes:
            await client.delete(PVCS, claim_name, namespace)
        await wait_for(lambda: _gone(client, volumes["gone"]), 20, "the Delete volume removed")
        assert not (tmp_path / volumes["gone"]).exists()
        await wait_for(
            lambda: _phase_is(client, volumes["kept"], "Released"), 20, "the Retain volume Released"
        )
        assert (tmp_path / volumes["kept"]).is_dir()

        await client.delete(PVS, volumes["kept"])  # not Bound: PV protection lets it go
        await wait_for(lambda: _gone(client, volumes["kept"]), 20, "the retained volume deleted by hand")
        assert (tmp_path / volumes["kept"]).is_dir()  # Retain: the data outlives its PV
        for class_name, _ in classes.values():
            await client.delete(STORAGE_CLASSES, class_name)


async def test_a_hand_made_volume_is_bound_to_the_claim_it_fits(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    manual, volume = f"manual-{namespace[2:]}", f"pv-{namespace[2:]}"
    settings = ControllerSettings(pv_claim_binder_sync_period=1.0)
    async with running(control_plane, *CONTROLLERS, settings=settings) as client:
        await client.create(
            PVS,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": volume},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": manual,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "hostPath": {"path": str(tmp_path)},
                },
            },
        )
        await client.create(PVCS, claim("big", manual, "5Gi"), namespace)
        await client.create(PVCS, claim("fits", manual, "500Mi"), namespace)
        await wait_for(lambda: _bound(client, namespace, "fits"), 20, "claim fits Bound")
        bound = await client.get(PVCS, "fits", namespace)
        assert bound["spec"]["volumeName"] == volume and bound["status"]["capacity"] == {"storage": "1Gi"}
        await wait_for(
            lambda: _has_event(client, namespace, "big", "ProvisioningFailed"), 20, "ProvisioningFailed"
        )
        assert await phase(client, PVCS, "big", namespace) == "Pending"

        await client.delete(PVCS, "fits", namespace)
        await wait_for(lambda: _phase_is(client, volume, "Released"), 20, "the volume Released")
        await client.delete(PVS, volume)
        await wait_for(lambda: _gone(client, volume), 20, "the volume deleted")
        assert tmp_path.is_dir()  # Retain, and a hand-made path: never removed


async def _bound(client: RESTClient, namespace: str, name: str) -> bool:
    return await phase(client, PVCS, name, namespace) == "Bound"


async def _gone(client: RESTClient, name: str) -> bool:
    return await phase(client, PVS, name) is None


async def _phase_is(client: RESTClient, name: str, wanted: str) -> bool:
    return await phase(client, PVS, name) == wanted


async def _has_event(client: RESTClient, namespace: str, name: str, reason: str) -> bool:
    return reason in await reasons(client, namespace, name)

"""The PVC and PV protection controllers against hand-filled caches and a recording client.

A claim being deleted keeps `kubernetes.io/pvc-protection` while a scheduled pod uses it (found in the cache
or, failing that, by a live list); a volume being deleted keeps `kubernetes.io/pv-protection` while it is
Bound. Both put the finalizer back on a live object that lacks it.
"""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.client import errors, resources
from minikube_py.kcm.controllers.volume.pvcprotection import PVCProtectionController
from minikube_py.kcm.controllers.volume.pvprotection import PVProtectionController
from tests.kcm.fakes import Action, RecordingClient, cache, context

PVC_FINALIZER, PV_FINALIZER = "kubernetes.io/pvc-protection", "kubernetes.io/pv-protection"
DELETED = "2024-01-01T00:00:00Z"


class ListingClient(RecordingClient):
    """The recording client with the live pod list the PVC protection controller falls back to."""

    async def list(self, resource: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        self.actions.append(Action("list", resource.plural, namespace or "", ""))
        return {
            "items": [
                obj
                for (plural, ns, _), obj in self.objects.items()
                if plural == resource.plural and ns == (namespace or ns)
            ]
        }


def claim(deleting: bool = True, finalizers: tuple[str, ...] = (PVC_FINALIZER,)) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "data",
        "namespace": "default",
        "uid": "claim-uid",
        "finalizers": list(finalizers),
    }
    if deleting:
        meta["deletionTimestamp"] = DELETED
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": {}}


def pod(
    name: str = "web-0",
    node: str = "n1",
    phase: str = "Running",
    claim_name: str = "data",
    ephemeral: bool = False,
    **meta: Any,
) -> dict[str, Any]:
    volume: dict[str, Any] = {"name": "v"}
    if ephemeral:
        volume["ephemeral"] = {"volumeClaimTemplate": {"spec": {}}}
    else:
        volume["persistentVolumeClaim"] = {"claimName": claim_name}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name, **meta},
        "spec": {"nodeName": node, "volumes": [volume]},
        "status": {"phase": phase},
    }


def ephemeral_claim(owner: str) -> dict[str, Any]:
    made = claim()
    made["metadata"]["name"] = "web-0-v"
    made["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "web-0", "uid": owner, "controller": True}]
    return made


def pvc_protection(
    claims: tuple[dict[str, Any], ...],
    cached_pods: tuple[dict[str, Any], ...] = (),
    live_pods: tuple[dict[str, Any], ...] = (),
) -> tuple[PVCProtectionController, ListingClient]:
    ctx, _, _ = context()
    client = ListingClient()
    ctx.client = client  # type: ignore[assignment]
    controller = PVCProtectionController(ctx)
    cache(ctx, resources.PERSISTENT_VOLUME_CLAIMS, *claims)
    cache(ctx, resources.PODS, *cached_pods)
    for obj in (*cached_pods, *live_pods):
        client.put(resources.PODS, obj)
    return controller, client


def finalizers_written(client: RecordingClient) -> list[list[str]]:
    return [a.body["metadata"]["finalizers"] for a in client.writes("update")]


@pytest.mark.parametrize(
    ("cached_pods", "live_pods", "kept"),
    [
        ((), (), False),
        ((pod(),), (), True),
        ((), (pod(),), True),
        ((pod(node=""),), (), False),
        ((pod(phase="Succeeded"),), (), True),
        ((pod(claim_name="other"),), (), False),
    ],
    ids=[
        "used by no pod",
        "used by a scheduled pod in the cache",
        "used by a pod only a live list shows",
        "named only by an unscheduled pod",
        "used by a finished pod that still exists",
        "next to a pod using another claim",
    ],
)
async def test_a_claim_being_deleted_keeps_its_finalizer_while_a_pod_uses_it(
    cached_pods: tuple[dict[str, Any], ...], live_pods: tuple[dict[str, Any], ...], kept: bool
) -> None:
    controller, client = pvc_protection((claim(),), cached_pods, live_pods)
    await controller.sync("default/data")
    assert finalizers_written(client) == ([] if kept else [[]])


@pytest.mark.parametrize(
    ("owner", "meta", "kept"),
    [
        ("web-0", {}, True),
        ("web-0", {"deletionTimestamp": DELETED, "deletionGracePeriodSeconds": 0}, False),
        ("someone-else", {}, False),
    ],
    ids=["the pod that owns it", "a pod shut down", "a pod that does not own the claim of that name"],
)
async def test_an_ephemeral_claim_is_held_by_its_running_pod(
    owner: str, meta: dict[str, Any], kept: bool
) -> None:
    controller, client = pvc_protection((ephemeral_claim(owner),), (pod(ephemeral=True, **meta),))
    await controller.sync("default/web-0-v")
    assert finalizers_written(client) == ([] if kept else [[]])


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (claim(deleting=False, finalizers=()), [[PVC_FINALIZER]]),
        (claim(deleting=False), []),
        (claim(deleting=True, finalizers=("example.com/other",)), []),
    ],
    ids=[
        "a live claim without the finalizer gets it",
        "a live claim with it is left alone",
        "a deleting claim without it is left alone",
    ],
)
async def test_the_finalizer_is_kept_on_live_claims(
    stored: dict[str, Any], expected: list[list[str]]
) -> None:
    controller, client = pvc_protection((stored,))
    await controller.sync("default/data")
    assert finalizers_written(client) == expected


async def test_a_conflict_removing_the_finalizer_fails_the_sync_for_a_retry() -> None:
    controller, client = pvc_protection((claim(),))
    client.failures[("update", "persistentvolumeclaims")] = errors.Conflict(
        {"code": 409, "reason": "Conflict"}
    )
    with pytest.raises(errors.Conflict):
        await controller.sync("default/data")


@pytest.mark.parametrize(
    ("old", "new", "deleted", "queued"),
    [
        (None, pod(), True, 1),
        (pod(), pod(phase="Succeeded"), False, 1),
        (pod(), pod(), False, 0),
        (pod(), pod(node=""), False, 1),
        (pod(), {**pod(claim_name="other"), "metadata": {**pod()["metadata"], "uid": "new-uid"}}, False, 1),
    ],
    ids=[
        "a deleted pod",
        "a pod that finished",
        "a running scheduled pod",
        "an unscheduled pod",
        "a pod replaced under the same name",
    ],
)
def test_pod_changes_that_may_free_a_claim_enqueue_it(
    old: dict[str, Any] | None, new: dict[str, Any], deleted: bool, queued: int
) -> None:
    controller, _ = pvc_protection(())
    controller._pod_changed(old, new, deleted=deleted)
    assert len(controller.queue) == queued


def test_only_claims_that_need_the_controller_are_enqueued() -> None:
    controller, _ = pvc_protection(())
    controller._claim_changed(claim(deleting=False))
    assert len(controller.queue) == 0
    controller._claim_changed(claim(deleting=True))
    assert len(controller.queue) == 1


def volume(
    phase: str, deleting: bool = True, finalizers: tuple[str, ...] = (PV_FINALIZER,)
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "pv1", "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = DELETED
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": {},
        "status": {"phase": phase},
    }


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (volume("Bound"), []),
        (volume("Released"), [[]]),
        (volume("Available"), [[]]),
        (volume("Bound", deleting=False, finalizers=()), [[PV_FINALIZER]]),
    ],
    ids=[
        "a bound volume being deleted is kept",
        "a released volume being deleted goes",
        "an available volume being deleted goes",
        "a live volume without the finalizer gets it",
    ],
)
async def test_pv_protection(stored: dict[str, Any], expected: list[list[str]]) -> None:
    ctx, client, _ = context()
    controller = PVProtectionController(ctx)
    cache(ctx, resources.PERSISTENT_VOLUMES, stored)
    await controller.sync("pv1")
    assert finalizers_written(client) == expected


async def test_a_volume_gone_from_the_cache_needs_nothing() -> None:
    ctx, client, _ = context()
    controller = PVProtectionController(ctx)
    cache(ctx, resources.PERSISTENT_VOLUMES)
    await controller.sync("pv1")
    assert client.actions == []

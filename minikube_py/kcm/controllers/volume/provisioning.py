"""Dynamic provisioning: a volume made for a claim that no existing volume fits (kube's `provisionClaim`).

The binder calls `provision(claim)` for a pending claim with a class. What happens depends on the class's
`provisioner`:

* `kubernetes.io/host-path`, the one in-tree plugin mkpy has (hostpath.py): the claim is annotated
  `volume.kubernetes.io/storage-provisioner` (and the beta twin), the directory is made, and a PV named
  `pvc-<claim uid>` is created already pointing at the claim (`claimRef`, phase Bound, annotations
  `pv.kubernetes.io/provisioned-by` and `pv.kubernetes.io/bound-by-controller`, the class's reclaim policy
  and, with Delete, the finalizer `kubernetes.io/pv-controller` that keeps the PV until its directory is
  gone). The binder's next sync of the claim finds that PV pre-bound and binds the claim to it. Event
  `ProvisioningSucceeded` "Successfully provisioned volume pvc-… using kubernetes.io/host-path".
* another `kubernetes.io/...` name: no such plugin here, Warning `ProvisioningFailed` "no volume plugin
  matched name: …"; the same when the class does not exist.
* anything else belongs to an external provisioner: the claim is annotated with its name and gets the
  event `ExternalProvisioning`, then waits for someone (a CSI provisioner, an admin) to make a volume.

A plugin failure (provisioning disabled by `--enable-hostpath-provisioner=false`, a directory that cannot be
made, a class with mountOptions, a claim with a dataSource) is the Warning `ProvisioningFailed` with kube's
message and an error, so the worker retries the claim with backoff. The PV name depends only on the claim,
so a retry after a half-done attempt never makes a second volume.

Usage rules: called from the claim worker only (one claim at a time).
"""

from __future__ import annotations

import logging
from typing import Any

from minikube_py.api.storage import storage_class_name
from minikube_py.client import errors, resources
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.rest import RESTClient
from minikube_py.client.store import Indexer
from minikube_py.kcm.controllers.volume.binding import BOUND, VolumeWrites, claim_reference
from minikube_py.kcm.controllers.volume.hostpath import PLUGIN_NAME, HostPathError, HostPathPlugin
from minikube_py.kcm.controllers.volume.localcache import LocalCache
from minikube_py.kcm.controllers.volume.matching import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    claim_key,
)
from minikube_py.kcm.controllers.volume.protection import with_finalizer

log = logging.getLogger(__name__)
IN_TREE_PREFIX = "kubernetes.io/"
PV_DELETION_IN_TREE_FINALIZER = "kubernetes.io/pv-controller"  # the PV stays until its storage is deleted
WARNING, NORMAL = "Warning", "Normal"


class ProvisioningError(Exception):
    """The plugin could not provision the claim; the event has been recorded, the claim is retried."""


class ClaimProvisioner:
    def __init__(
        self,
        client: RESTClient,
        recorder: CoreEventRecorder,
        writes: VolumeWrites,
        classes: Indexer,
        volumes: LocalCache,
        plugin: HostPathPlugin,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.writes = writes
        self.classes = classes
        self.volumes = volumes
        self.plugin = plugin

    async def provision(self, claim: dict[str, Any]) -> None:
        name = storage_class_name(claim)
        storage_class = self.classes.get_by_key(name)
        if storage_class is None:
            self._failed(claim, f'storageclass.storage.k8s.io "{name}" not found')
            return
        provisioner = str(storage_class.get("provisioner", ""))
        if provisioner == PLUGIN_NAME:
            await self._provision_in_tree(claim, storage_class)
        elif provisioner.startswith(IN_TREE_PREFIX):
            self._failed(claim, f"no volume plugin matched name: {provisioner}")
        else:
            await self._provision_externally(claim, provisioner)

    async def _provision_externally(self, claim: dict[str, Any], provisioner: str) -> None:
        try:
            claim = await self.writes.set_claim_provisioner(claim, provisioner)
        except errors.APIStatusError as error:
            self._failed(claim, f"Error saving claim: {error}")
            raise
        self.recorder.event(
            claim,
            NORMAL,
            "ExternalProvisioning",
            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
            "or manually by the system administrator. If volume creation is delayed, please verify "
            "that the provisioner is running and correctly registered.",
        )

    async def _provision_in_tree(self, claim: dict[str, Any], storage_class: dict[str, Any]) -> None:
        if (claim.get("spec") or {}).get("dataSource"):
            raise self._refused(
                claim,
                f'plugin "{PLUGIN_NAME}" is not a CSI plugin. Only CSI plugin can provision '
                "a claim with a datasource",
            )
        claim = await self.writes.set_claim_provisioner(claim, PLUGIN_NAME)
        pv_name = f"pvc-{claim['metadata']['uid']}"
        if await self._exists(pv_name):
            return  # an earlier attempt got this far; the binder binds it
        self._check_plugin(claim, storage_class)
        reclaim_policy = str(storage_class.get("reclaimPolicy") or "Delete")
        try:
            volume = await self.plugin.provision(pv_name, claim, reclaim_policy)
        except HostPathError as error:
            raise self._refused(
                claim,
                f"Failed to provision volume with StorageClass "
                f'"{storage_class["metadata"]["name"]}": {error}',
            ) from error
        await self._create(claim, _bound_to(volume, claim, reclaim_policy))
        self.recorder.event(
            claim,
            NORMAL,
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {pv_name} using {PLUGIN_NAME}",
        )

    def _check_plugin(self, claim: dict[str, Any], storage_class: dict[str, Any]) -> None:
        mount_options = storage_class.get("mountOptions") or []
        if mount_options:
            self._failed(
                claim,
                "Mount options are not supported by the provisioner but StorageClass "
                f'"{storage_class["metadata"]["name"]}" has mount options [{" ".join(mount_options)}]',
            )
            raise ProvisioningError(f'provisioner "{PLUGIN_NAME}" doesn\'t support mount options')
        if not self.plugin.provisioning_enabled:
            raise self._refused(
                claim,
                f'Failed to create provisioner: Provisioning in volume plugin "{PLUGIN_NAME}" is disabled',
            )

    async def _exists(self, pv_name: str) -> bool:
        try:
            await self.client.get(resources.PERSISTENT_VOLUMES, pv_name)
        except errors.NotFound:
            return False
        return True

    async def _create(self, claim: dict[str, Any], volume: dict[str, Any]) -> None:
        """Save the PV; if that fails, remove the directory again so no storage is left without its PV."""
        try:
            self.volumes.remember(await self.client.create(resources.PERSISTENT_VOLUMES, volume))
        except errors.AlreadyExists:
            log.info(
                "volume %s for claim %s already exists, reusing it",
                volume["metadata"]["name"],
                claim_key(claim),
            )
        except errors.APIStatusError as error:
            self._failed(
                claim,
                f"Error creating provisioned PV object for claim {claim_key(claim)}: {error}. "
                "Deleting the volume.",
            )
            try:
                await self.plugin.delete(volume)
            except HostPathError as cleanup:
                self.recorder.event(
                    claim,
                    WARNING,
                    "ProvisioningCleanupFailed",
                    f"Error cleaning provisioned volume for claim {claim_key(claim)}: {cleanup}. "
                    "Please delete manually.",
                )
            raise

    def _failed(self, claim: dict[str, Any], message: str) -> None:
        log.info("provisioning claim %s failed: %s", claim_key(claim), message)
        self.recorder.event(claim, WARNING, "ProvisioningFailed", message)

    def _refused(self, claim: dict[str, Any], message: str) -> ProvisioningError:
        self._failed(claim, message)
        return ProvisioningError(message)


def _bound_to(volume: dict[str, Any], claim: dict[str, Any], reclaim_policy: str) -> dict[str, Any]:
    """The provisioned PV as the binder saves it: already pointing at its claim, in the claim's class."""
    annotations = volume["metadata"].setdefault("annotations", {})
    annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    annotations[ANN_DYNAMICALLY_PROVISIONED] = PLUGIN_NAME
    volume["spec"]["claimRef"] = claim_reference(claim)
    volume["spec"]["storageClassName"] = storage_class_name(claim)
    volume["status"] = {"phase": BOUND}
    if reclaim_policy == "Delete":
        volume = with_finalizer(volume, PV_DELETION_IN_TREE_FINALIZER, True)
    return volume

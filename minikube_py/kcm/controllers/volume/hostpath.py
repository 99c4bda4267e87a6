"""The in-tree host-path provisioner and deleter (kube's `pkg/volume/hostpath`, `--enable-hostpath-provisioner`).

A StorageClass with `provisioner: kubernetes.io/host-path` gets its volumes as directories on this machine,
which is only meaningful when every node shares it (a single machine, as `mkpy up` is): the kubelet mounts
the PV's `hostPath` into the pod. For a claim the binder asks `provision(pv_name, claim, reclaim_policy)`:

    <--hostpath-provisioner-dir>/pvc-<claim uid>/      made here, mode 0777
    PersistentVolume pvc-<claim uid>: hostPath {path: that directory, type: DirectoryOrCreate},
        capacity = the claim's request, accessModes = the claim's (ReadWriteOnce if it names none),
        annotation kubernetes.io/createdby: hostpath-dynamic-provisioner

(kube puts its volumes under the fixed `/tmp/hostpath_pv/<random uuid>`; mkpy names the directory after the
volume so it is easy to find, and makes it writable by any user, as minikube's provisioner does, so a pod
running as non-root can use its claim). Block volumes cannot be provisioned.

`delete(volume)` removes a released volume's directory. Like kube's deleter (which refuses anything outside
`/tmp/`), it refuses every path that does not resolve to below the provisioner's directory, so a hand-made
hostPath PV pointing at `/home` or `/` is never touched, whatever its reclaim policy says.

Usage rules: the filesystem work runs in a thread (a big directory takes a while to remove); every failure
is a `HostPathError` whose message (worded as Go's os package words it) the binder puts in its event.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Any

PLUGIN_NAME = "kubernetes.io/host-path"
CREATED_BY_ANNOTATION = "kubernetes.io/createdby"
CREATED_BY = "hostpath-dynamic-provisioner"
DEFAULT_ACCESS_MODES = ["ReadWriteOnce"]  # the plugin's own modes, for a claim that names none
DIRECTORY_MODE = 0o777


class HostPathError(Exception):
    """A volume the plugin cannot provision or delete."""


class HostPathPlugin:
    def __init__(self, directory: str, provisioning_enabled: bool) -> None:
        self.directory = directory
        self.provisioning_enabled = provisioning_enabled

    async def provision(self, pv_name: str, claim: dict[str, Any], reclaim_policy: str) -> dict[str, Any]:
        """Make the volume's directory and return its PersistentVolume (to be bound and created by the caller)."""
        spec = claim.get("spec") or {}
        if spec.get("volumeMode") == "Block":
            raise HostPathError(f"{PLUGIN_NAME} does not support block volume provisioning")
        path = os.path.join(self.directory, pv_name)
        try:
            await asyncio.to_thread(_make_directory, path)
        except OSError as error:
            raise HostPathError(_go_error("mkdir", path, error)) from error
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {CREATED_BY_ANNOTATION: CREATED_BY}},
            "spec": {
                "persistentVolumeReclaimPolicy": reclaim_policy,
                "accessModes": list(spec.get("accessModes") or DEFAULT_ACCESS_MODES),
                "capacity": {"storage": storage},
                "hostPath": {"path": path, "type": "DirectoryOrCreate"},
            },
        }

    async def delete(self, volume: dict[str, Any]) -> None:
        """Remove the volume's directory (gone already is fine); refuses paths outside the provisioner's dir."""
        source = (volume.get("spec") or {}).get("hostPath")
        if not source:
            raise HostPathError("spec.PersistentVolumeSource.HostPath is nil")
        path = str(source.get("path", ""))
        if not self.owns(path):
            raise HostPathError(
                f"host_path deleter only supports {self.directory}/.+ but received provided {path}"
            )
        try:
            await asyncio.to_thread(_remove_directory, path)
        except OSError as error:
            raise HostPathError(_go_error("unlinkat", path, error)) from error

    def owns(self, path: str) -> bool:
        """Whether `path` resolves to something strictly below the provisioner's directory."""
        base = os.path.realpath(self.directory)
        target = os.path.realpath(path)
        return target != base and os.path.commonpath([base, target]) == base


def _make_directory(path: str) -> None:
    os.makedirs(path, exist_ok=True)
    os.chmod(path, DIRECTORY_MODE)  # makedirs' mode is cut by the umask


def _remove_directory(path: str) -> None:
    if os.path.lexists(path):
        shutil.rmtree(path)


def _go_error(operation: str, path: str, error: OSError) -> str:
    """An OSError as Go's os package words it ("mkdir /x/pvc-1: not a directory"), as kube's events show it."""
    return f"{operation} {error.filename or path}: {(error.strerror or str(error)).lower()}"

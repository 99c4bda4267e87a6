"""A pod's volumes on the node's disk (kube's volume manager and its in-tree plugins, much simplified).

Each volume becomes a directory under the pod's own, as in kube:

    <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>/
    <root>/pods/<uid>/volumes/kubernetes.io~configmap/<name>/     (files written by atomicwriter.py)
    <root>/pods/<uid>/volumes/kubernetes.io~secret/<name>/
    <root>/pods/<uid>/volumes/kubernetes.io~downward-api/<name>/
    <root>/pods/<uid>/volumes/kubernetes.io~projected/<name>/
    hostPath volumes are the host path itself (after the `type` check).
    persistentVolumeClaim volumes are the path of the PersistentVolume bound to the claim (claims.py finds it
    the first time; later syncs reuse it until the pod goes, as kube's populator processes a pod once):
    a `hostPath` PV as a hostPath volume, a `local` PV its directory.

`VolumeManager.set_up(pod)` (re)writes every volume and returns {volume name: host path}; it runs on every
sync of the pod, so ConfigMap, Secret and downward-API changes reach running containers, and projected
service-account tokens are renewed (a new TokenRequest once 80% of the token's life has passed).
`read_only(uid, name)` says whether a volume must be mounted read-only whatever the container's
volumeMount says (a claim volume with `readOnly: true`). `tear_down(uid)` removes the pod's directory.

Usage rules: a volume that cannot be set up raises `VolumeError` with kube's message
(`MountVolume.SetUp failed for volume "config" : configmap "app" not found`, or for claims not usable yet
`Unable to attach or mount volumes: ... error processing PVC default/data: PVC is not bound`); the pod's
containers wait and the pod worker tries again.
"""

from __future__ import annotations

import shutil
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minikube_py.kubelet import atomicwriter, claims
from minikube_py.kubelet.envvars import ObjectGetter, field_value, object_bytes, resource_value

DEFAULT_MODE = 0o644
# (namespace, service account, audiences, expiration seconds, pod name, pod uid) -> (token, expires at epoch s)
TokenRequester = Callable[[str, str, list[str], int, str, str], Awaitable[tuple[str, float]]]


class VolumeError(Exception):
    """A volume cannot be set up yet; the message is the FailedMount event's."""


@dataclass(frozen=True)
class _ClaimedVolume:
    pv: dict[str, Any]
    read_only: bool


@dataclass
class _Token:
    token: str
    issued: float
    expires: float

    def due(self, now: float) -> bool:
        return now >= self.issued + 0.8 * (self.expires - self.issued)


class VolumeManager:
    def __init__(
        self,
        pods_dir: Path,
        objects: ObjectGetter,
        request_token: TokenRequester,
        node_allocatable: Callable[[], dict[str, str]],
        client: claims.ObjectReader | None = None,
    ) -> None:
        self._pods_dir = pods_dir
        self._objects = objects
        self._request_token = request_token
        self._node_allocatable = node_allocatable
        self._client = client  # reads claims and their volumes; None: a kubelet without an API server
        self._tokens: dict[tuple[str, str], _Token] = {}  # (pod uid, volume/path) -> the token written
        self._claimed: dict[str, dict[str, _ClaimedVolume]] = {}  # pod uid -> volume name -> its bound PV
        # pod uid -> volume directory -> the files last written there: a pod's every sync sets its volumes up
        # again, and reading the files back to find nothing changed cost more than the rest of the sync
        self._written: dict[str, dict[Path, dict[str, tuple[bytes, int]]]] = {}

    def pod_dir(self, uid: str) -> Path:
        return self._pods_dir / uid

    async def set_up(self, pod: dict[str, Any]) -> dict[str, Path]:
        paths: dict[str, Path] = {}
        unprocessed: dict[str, str] = {}  # claim volumes not usable yet -> why
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            name = volume.get("name", "")
            if "persistentVolumeClaim" in volume:
                try:
                    paths[name] = await self._set_up_claimed(pod, volume)
                except claims.ClaimError as error:
                    unprocessed[name] = str(error)
                continue
            try:
                paths[name] = await self._set_up_one(pod, volume)
            except (VolumeError, atomicwriter.AtomicWriteError, OSError) as error:
                raise VolumeError(f'MountVolume.SetUp failed for volume "{name}" : {error}') from None
        if unprocessed:
            raise VolumeError(claims.unprocessed_message(unprocessed))
        return paths

    def read_only(self, uid: str, volume_name: str) -> bool:
        claimed = self._claimed.get(uid, {}).get(volume_name)
        return claimed is not None and claimed.read_only

    def tear_down(self, uid: str) -> None:
        shutil.rmtree(self.pod_dir(uid), ignore_errors=True)
        self._claimed.pop(uid, None)
        self._written.pop(uid, None)
        for key in [key for key in self._tokens if key[0] == uid]:
            del self._tokens[key]

    async def _set_up_claimed(self, pod: dict[str, Any], volume: dict[str, Any]) -> Path:
        """The host path of the PV bound to the volume's claim; errors name the PV, as kube's do."""
        metadata, source = pod["metadata"], volume["persistentVolumeClaim"]
        claimed = self._claimed.get(metadata["uid"], {}).get(volume["name"])
        if claimed is None:
            pv = await claims.bound_volume(
                self._client, metadata.get("namespace", "default"), source.get("claimName", "")
            )
            claimed = _ClaimedVolume(pv, bool(source.get("readOnly")))
            self._claimed.setdefault(metadata["uid"], {})[volume["name"]] = claimed
        spec, pv_name = claimed.pv["spec"], claimed.pv["metadata"]["name"]
        if "local" in spec:
            try:
                return local_path(spec["local"])
            except VolumeError as error:
                raise VolumeError(
                    f'MountVolume.NewMounter initialization failed for volume "{pv_name}" : {error}'
                ) from None
        try:
            return host_path(spec["hostPath"])
        except (VolumeError, OSError) as error:
            raise VolumeError(f'MountVolume.SetUp failed for volume "{pv_name}" : {error}') from None

    async def _set_up_one(self, pod: dict[str, Any], volume: dict[str, Any]) -> Path:
        uid = pod["metadata"]["uid"]
        base = self.pod_dir(uid) / "volumes"
        name = volume["name"]
        if "emptyDir" in volume:
            path = base / "kubernetes.io~empty-dir" / name
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)
            return path
        if "hostPath" in volume:
            return host_path(volume["hostPath"])
        if "configMap" in volume:
            files = await self._object_files(pod, "configmaps", volume["configMap"], "name")
            return self._write(uid, base / "kubernetes.io~configmap" / name, files)
        if "secret" in volume:
            files = await self._object_files(pod, "secrets", volume["secret"], "secretName")
            return self._write(uid, base / "kubernetes.io~secret" / name, files)
        if "downwardAPI" in volume:
            return self._write(
                uid, base / "kubernetes.io~downward-api" / name, self._downward_files(pod, volume["downwardAPI"])
            )
        if "projected" in volume:
            files = await self._projected_files(pod, name, volume["projected"])
            return self._write(uid, base / "kubernetes.io~projected" / name, files)
        kind = next((key for key in volume if key != "name"), "unknown")
        raise VolumeError(f"volume type {kind} is not supported by this kubelet")

    def _write(self, uid: str, directory: Path, files: dict[str, tuple[bytes, int]]) -> Path:
        written = self._written.setdefault(uid, {})
        if written.get(directory) != files:
            atomicwriter.write(directory, files)
            written[directory] = files
        return directory

    async def _object_files(
        self,
        pod: dict[str, Any],
        kind: str,
        source: dict[str, Any],
        name_field: str,
        default_mode: int | None = None,
    ) -> dict[str, tuple[bytes, int]]:
        namespace = pod["metadata"].get("namespace", "default")
        name = source.get(name_field, "")
        mode = source.get("defaultMode", default_mode if default_mode is not None else DEFAULT_MODE)
        obj = await self._objects(kind, namespace, name)
        label = "configmap" if kind == "configmaps" else "secret"
        if obj is None:
            if source.get("optional"):
                return {}
            raise VolumeError(f'{label} "{name}" not found')
        data = object_bytes(obj)
        items = source.get("items")
        if not items:
            return {key: (value, mode) for key, value in data.items()}
        files = {}
        for item in items:
            key = item.get("key", "")
            if key not in data:
                if source.get("optional"):
                    continue
                raise VolumeError(
                    f"configmap references non-existent config key: {key}"
                    if label == "configmap"
                    else f"references non-existent secret key: {key}"
                )
            files[item.get("path", key)] = (data[key], item.get("mode", mode))
        return files

    def _downward_files(
        self, pod: dict[str, Any], source: dict[str, Any], default_mode: int | None = None
    ) -> dict[str, tuple[bytes, int]]:
        mode = source.get("defaultMode", default_mode if default_mode is not None else DEFAULT_MODE)
        files = {}
        containers = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        for item in source.get("items") or []:
            if "fieldRef" in item:
                value = field_value(pod, item["fieldRef"].get("fieldPath", ""))
            else:
                ref = item.get("resourceFieldRef") or {}
                value = resource_value(
                    containers.get(ref.get("containerName"), {}), ref, self._node_allocatable()
                )
            files[item.get("path", "")] = (value.encode(), item.get("mode", mode))
        return files

    async def _projected_files(
        self, pod: dict[str, Any], volume_name: str, projected: dict[str, Any]
    ) -> dict[str, tuple[bytes, int]]:
        mode = projected.get("defaultMode", DEFAULT_MODE)
        files: dict[str, tuple[bytes, int]] = {}
        for source in projected.get("sources") or []:
            if "configMap" in source:
                files |= await self._object_files(pod, "configmaps", source["configMap"], "name", mode)
            elif "secret" in source:
                files |= await self._object_files(pod, "secrets", source["secret"], "name", mode)
            elif "downwardAPI" in source:
                files |= self._downward_files(pod, source["downwardAPI"], mode)
            elif "serviceAccountToken" in source:
                token = await self._token(pod, volume_name, source["serviceAccountToken"])
                files[source["serviceAccountToken"].get("path", "token")] = (token.encode(), mode)
        return files

    async def _token(self, pod: dict[str, Any], volume_name: str, source: dict[str, Any]) -> str:
        metadata = pod["metadata"]
        key = (metadata["uid"], f"{volume_name}/{source.get('path', 'token')}")
        now = time.time()
        cached = self._tokens.get(key)
        if cached is None or cached.due(now):
            audiences = [source["audience"]] if source.get("audience") else []
            account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
            token, expires = await self._request_token(
                metadata.get("namespace", "default"),
                account,
                audiences,
                int(source.get("expirationSeconds", 3600)),
                metadata["name"],
                metadata["uid"],
            )
            cached = self._tokens[key] = _Token(token, now, expires)
        return cached.token


def host_path(source: dict[str, Any]) -> Path:
    """A hostPath volume's path after its `type` check (creating it for the *OrCreate types)."""
    path = Path(source.get("path", ""))
    kind = source.get("type", "")
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True, mode=0o755)
    elif kind == "FileOrCreate":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o644, exist_ok=True)
    checks = {
        "Directory": (stat.S_ISDIR, "a directory"),
        "DirectoryOrCreate": (stat.S_ISDIR, "a directory"),
        "File": (stat.S_ISREG, "a file"),
        "FileOrCreate": (stat.S_ISREG, "a file"),
        "Socket": (stat.S_ISSOCK, "a socket file"),
        "CharDevice": (stat.S_ISCHR, "a character device"),
        "BlockDevice": (stat.S_ISBLK, "a block device"),
    }
    if kind in checks:
        test, what = checks[kind]
        try:
            mode = path.stat().st_mode
        except OSError:
            raise VolumeError(f"hostPath type check failed: {path} is not {what}") from None
        if not test(mode):
            raise VolumeError(f"hostPath type check failed: {path} is not {what}")
    return path


def local_path(source: dict[str, Any]) -> Path:
    """A `local` PersistentVolume's directory, which must exist (kube's local plugin never creates it)."""
    path = Path(source.get("path", ""))
    try:
        mode = path.stat().st_mode
    except OSError:
        raise VolumeError(f'path "{path}" does not exist') from None
    if stat.S_ISBLK(mode):
        raise VolumeError(
            f'path "{path}" is a block device: this kubelet mounts local volumes that are directories'
        )
    if not stat.S_ISDIR(mode):
        raise VolumeError("only directory and block device are supported")
    return path

"""persistentVolumeClaim volumes on the kubelet (volumes.py, claims.py).

Three levels: the volume manager over an in-memory apiserver (every refusal and its message, the hostPath
and local sources, what is read when); the runtime manager over the fake runtime (the FailedMount path and
the mount a container gets); and a real control plane, where the node's own identity reads its pods'
claims through the Node authorizer and a simulated node runs a pod on a claim.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from minikube_py.client import errors
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.resources import Resource
from minikube_py.client.rest import RESTClient
from minikube_py.kubelet import runtimestate
from minikube_py.kubelet.claims import ClaimError, bound_volume
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.fake import FakeRuntime, serve
from minikube_py.kubelet.kuberuntime import RuntimeManager
from minikube_py.kubelet.volumes import VolumeError, VolumeManager
from tests.harness import ControlPlane
from tests.kubelet.nodes import FakeNode, eventually

UID = "uid-app"
CLAIM_UID = "uid-claim"
UNABLE = "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: "


# -- builders ---------------------------------------------------------------------------------------------


def claim(
    name: str = "data", phase: str = "Bound", volume_name: str = "pv-data", **metadata: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "uid": CLAIM_UID, **metadata},
        "spec": {"volumeName": volume_name, "accessModes": ["ReadWriteOnce"]},
        "status": {"phase": phase},
    }


def pv(name: str = "pv-data", claim_uid: str | None = CLAIM_UID, **source: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], **source}
    if claim_uid is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": "default",
            "name": "data",
            "uid": claim_uid,
        }
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def claim_volume(name: str = "data", claim_name: str = "data", read_only: bool = False) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name, "readOnly": read_only}}


def app_pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app", "namespace": "default", "uid": UID},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "imagePullPolicy": "IfNotPresent",
                    "volumeMounts": [{"name": v["name"], "mountPath": f"/{v['name']}"} for v in volumes],
                }
            ],
            "volumes": list(volumes),
        },
    }


class APIObjects:
    """The claims and volumes an apiserver holds, read as the kubelet's client reads them."""

    def __init__(self, *objects: dict[str, Any], failure: Exception | None = None) -> None:
        plurals = {"PersistentVolumeClaim": "persistentvolumeclaims", "PersistentVolume": "persistentvolumes"}
        self.objects = {(plurals[o["kind"]], o["metadata"]["name"]): o for o in objects}
        self.failure = failure
        self.reads: list[tuple[str, str]] = []

    def put(self, obj: dict[str, Any]) -> None:
        plural = "persistentvolumeclaims" if obj["kind"] == "PersistentVolumeClaim" else "persistentvolumes"
        self.objects[(plural, obj["metadata"]["name"])] = obj

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.reads.append((resource.plural, name))
        if self.failure is not None:
            raise self.failure
        found = self.objects.get((resource.plural, name))
        if found is None:
            raise errors.new_not_found(resource.plural, name)
        return found


class Refuses:
    """A client that fails the test if anything is read through it."""

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        raise AssertionError(f"read {resource.plural}/{name}")


async def no_object(kind: str, namespace: str, name: str) -> None:
    return None


async def no_token(*args: Any) -> tuple[str, float]:
    raise AssertionError("no service account token volume here")


def volume_manager(root: Path, client: Any) -> VolumeManager:
    return VolumeManager(root / "pods", no_object, no_token, lambda: {}, client)


# -- the volume manager -----------------------------------------------------------------------------------

FORBIDDEN = errors.Forbidden(
    {
        "kind": "Status",
        "code": 403,
        "reason": "Forbidden",
        "message": 'persistentvolumeclaims "data" is forbidden: User "system:node:n1" cannot get resource '
        '"persistentvolumeclaims" in API group "" in the namespace "default": no relationship found between '
        "node 'n1' and this object",
    }
)


@pytest.mark.parametrize(
    "objects, failure, why",
    [
        (
            [],
            None,
            'error processing PVC default/data: failed to fetch PVC from API server: persistentvolumeclaims "data" '
            "not found",
        ),
        (
            [],
            FORBIDDEN,
            f"error processing PVC default/data: failed to fetch PVC from API server: {FORBIDDEN.message}",
        ),
        (
            [],
            errors.ConnectError("connection refused"),
            "error processing PVC default/data: failed to fetch PVC from API server: connection refused",
        ),
        (
            [claim(phase="Pending", volume_name="")],
            None,
            "error processing PVC default/data: PVC is not bound",
        ),
        ([claim(phase="Pending")], None, "error processing PVC default/data: PVC is not bound"),
        (
            [claim(volume_name="")],
            None,
            "error processing PVC default/data: PVC has empty pvc.Spec.VolumeName",
        ),
        (
            [claim(deletionTimestamp="2025-01-01T00:00:00Z", finalizers=[])],
            None,
            "error processing PVC default/data: PVC is being deleted",
        ),
        (
            [claim()],
            None,
            'error processing PVC default/data: failed to fetch PV pv-data from API server: persistentvolumes "pv-data" '
            "not found",
        ),
        (
            [claim(), pv(claim_uid=None, hostPath={"path": "/tmp"})],
            None,
            "error processing PVC default/data: found PV object pv-data but it has a nil pv.Spec.ClaimRef indicating "
            "it is not yet bound to the claim",
        ),
        (
            [claim(), pv(claim_uid="uid-other", hostPath={"path": "/tmp"})],
            None,
            "error processing PVC default/data: found PV object pv-data but its pv.Spec.ClaimRef.UID uid-other does "
            "not point to claim.UID uid-claim",
        ),
        (
            [claim(), pv(nfs={"server": "nfs.example", "path": "/exports"})],
            None,
            'failed to get Plugin from volumeSpec for volume "pv-data" err=no volume plugin matched: this kubelet '
            "mounts hostPath and local persistent volumes, not nfs",
        ),
        (
            [claim(), pv(csi={"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"})],
            None,
            'failed to get Plugin from volumeSpec for volume "pv-data" err=no volume plugin matched: this kubelet '
            "mounts hostPath and local persistent volumes, not csi",
        ),
    ],
    ids=[
        "a missing claim is not found",
        "a claim the node authorizer refuses is not fetched",
        "an apiserver out of reach fetches no claim",
        "a pending claim is not bound",
        "a pending claim naming a volume is still not bound",
        "a bound claim without a volume name is refused",
        "a claim being deleted without its protection finalizer is refused",
        "a claim whose volume is missing is refused",
        "a volume without a claimRef is not yet bound to the claim",
        "a volume bound to another claim is refused",
        "an nfs volume has no plugin on this kubelet",
        "a csi volume has no plugin on this kubelet",
    ],
)
async def test_a_claim_that_cannot_be_used_fails_the_mount_with_kubes_message(
    tmp_path: Path, objects: list[dict[str, Any]], failure: Exception | None, why: str
) -> None:
    volumes = volume_manager(tmp_path, APIObjects(*objects, failure=failure))
    with pytest.raises(VolumeError) as raised:
        await volumes.set_up(app_pod(claim_volume()))
    assert str(raised.value) == UNABLE + why


async def test_a_kubelet_without_an_api_client_cannot_fetch_claims(tmp_path: Path) -> None:
    volumes = volume_manager(tmp_path, None)
    with pytest.raises(VolumeError) as raised:
        await volumes.set_up(app_pod(claim_volume()))
    assert str(raised.value) == (
        UNABLE
        + "error processing PVC default/data: failed to fetch PVC from API server: this kubelet has no "
        "API client"
    )


@pytest.mark.parametrize(
    "source, prepare, message",
    [
        (
            {"hostPath": {"path": "{dir}/missing", "type": "Directory"}},
            None,
            'MountVolume.SetUp failed for volume "pv-data" : hostPath type check failed: {dir}/missing is not a '
            "directory",
        ),
        (
            {"hostPath": {"path": "{dir}/file", "type": "Directory"}},
            "file",
            'MountVolume.SetUp failed for volume "pv-data" : hostPath type check failed: {dir}/file is not a '
            "directory",
        ),
        (
            {"local": {"path": "{dir}/missing"}},
            None,
            'MountVolume.NewMounter initialization failed for volume "pv-data" : path "{dir}/missing" does not exist',
        ),
        (
            {"local": {"path": "{dir}/file"}},
            "file",
            'MountVolume.NewMounter initialization failed for volume "pv-data" : only directory and block device '
            "are supported",
        ),
    ],
    ids=[
        "a hostPath volume of type Directory that does not exist",
        "a hostPath volume of type Directory that is a file",
        "a local volume whose path does not exist",
        "a local volume whose path is a file",
    ],
)
async def test_a_volume_whose_path_is_wrong_fails_the_mount_naming_the_volume(
    tmp_path: Path, source: dict[str, Any], prepare: str | None, message: str
) -> None:
    if prepare == "file":
        (tmp_path / "file").write_text("")
    kind, fields = next(iter(source.items()))
    source = {kind: {**fields, "path": fields["path"].format(dir=tmp_path)}}
    volumes = volume_manager(tmp_path, APIObjects(claim(), pv(**source)))
    with pytest.raises(VolumeError) as raised:
        await volumes.set_up(app_pod(claim_volume()))
    assert str(raised.value) == message.format(dir=tmp_path)


@pytest.mark.parametrize(
    "source, prepare",
    [
        ({"hostPath": {"path": "data", "type": "DirectoryOrCreate"}}, None),
        ({"hostPath": {"path": "data", "type": "Directory"}}, "dir"),
        ({"hostPath": {"path": "data"}}, "dir"),
        ({"local": {"path": "data"}}, "dir"),
    ],
    ids=[
        "a hostPath volume of type DirectoryOrCreate gets its directory made",
        "a hostPath volume of type Directory that exists",
        "a hostPath volume without a type",
        "a local volume whose directory exists",
    ],
)
async def test_a_bound_claim_mounts_the_path_of_its_volume(
    tmp_path: Path, source: dict[str, Any], prepare: str | None
) -> None:
    path = tmp_path / "data"
    if prepare == "dir":
        path.mkdir()
    kind, fields = next(iter(source.items()))
    volumes = volume_manager(tmp_path, APIObjects(claim(), pv(**{kind: {**fields, "path": str(path)}})))
    paths = await volumes.set_up(app_pod(claim_volume()))
    assert paths == {"data": path}
    assert path.is_dir()


async def test_a_claim_being_deleted_but_still_protected_is_mounted(tmp_path: Path) -> None:
    protected = claim(deletionTimestamp="2025-01-01T00:00:00Z", finalizers=["kubernetes.io/pvc-protection"])
    volumes = volume_manager(tmp_path, APIObjects(protected, pv(hostPath={"path": str(tmp_path)})))
    assert await volumes.set_up(app_pod(claim_volume())) == {"data": tmp_path}


@pytest.mark.parametrize(
    "volume, read_only",
    [
        (claim_volume(read_only=True), True),
        (claim_volume(read_only=False), False),
        ({"name": "data", "persistentVolumeClaim": {"claimName": "data"}}, False),
    ],
    ids=[
        "a claim volume marked readOnly",
        "a claim volume marked writable",
        "a claim volume that says nothing",
    ],
)
async def test_a_claim_volume_is_read_only_when_the_pod_says_so(
    tmp_path: Path, volume: dict[str, Any], read_only: bool
) -> None:
    volumes = volume_manager(tmp_path, APIObjects(claim(), pv(hostPath={"path": str(tmp_path)})))
    await volumes.set_up(app_pod(volume, {"name": "scratch", "emptyDir": {}}))
    assert volumes.read_only(UID, "data") is read_only
    assert volumes.read_only(UID, "scratch") is False


async def test_a_claim_is_read_once_per_pod_and_again_after_the_pod_is_torn_down(tmp_path: Path) -> None:
    api = APIObjects(claim(), pv(hostPath={"path": str(tmp_path)}))
    volumes = volume_manager(tmp_path, api)
    for _ in range(3):
        await volumes.set_up(app_pod(claim_volume()))
    assert api.reads == [("persistentvolumeclaims", "data"), ("persistentvolumes", "pv-data")]
    volumes.tear_down(UID)
    assert volumes.read_only(UID, "data") is False
    await volumes.set_up(app_pod(claim_volume()))
    assert len(api.reads) == 4


async def test_a_claim_not_bound_yet_is_read_again_on_the_next_sync_and_mounts_once_bound(
    tmp_path: Path,
) -> None:
    api = APIObjects(claim(phase="Pending"), pv(hostPath={"path": str(tmp_path)}))
    volumes = volume_manager(tmp_path, api)
    with pytest.raises(VolumeError):
        await volumes.set_up(app_pod(claim_volume()))
    api.put(claim())
    assert await volumes.set_up(app_pod(claim_volume())) == {"data": tmp_path}


async def test_every_claim_that_cannot_be_used_is_named_and_the_other_volumes_are_still_set_up(
    tmp_path: Path,
) -> None:
    volumes = volume_manager(tmp_path, APIObjects(claim(name="logs", phase="Pending")))
    pod = app_pod(claim_volume("logs", "logs"), {"name": "scratch", "emptyDir": {}}, claim_volume())
    with pytest.raises(VolumeError) as raised:
        await volumes.set_up(pod)
    assert str(raised.value) == (
        "Unable to attach or mount volumes: unmounted volumes=[data logs], unattached volumes=[], failed to "
        "process volumes=[data logs]: error processing PVC default/data: failed to fetch PVC from API server: "
        'persistentvolumeclaims "data" not found; error processing PVC default/logs: PVC is not bound'
    )
    assert (tmp_path / "pods" / UID / "volumes" / "kubernetes.io~empty-dir" / "scratch").is_dir()


async def test_a_pod_without_claim_volumes_reads_nothing_from_the_api(tmp_path: Path) -> None:
    volumes = volume_manager(tmp_path, Refuses())
    pod = app_pod({"name": "scratch", "emptyDir": {}}, {"name": "host", "hostPath": {"path": str(tmp_path)}})
    assert set(await volumes.set_up(pod)) == {"scratch", "host"}


# -- the runtime manager: the FailedMount path and the mount a container gets ---------------------------------


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(
        self, pod: dict[str, Any], type: str, reason: str, message: str, container: str | None = None
    ) -> None:
        self.events.append((type, reason, message))


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[RuntimeClient]:
    server = await serve(os.path.join(tmp_path, "cri.sock"), FakeRuntime(node_name="sim-1"))
    client = RuntimeClient(server.endpoint, timeout=10)
    yield client
    await client.close()
    await server.stop()


@pytest.mark.parametrize(
    "read_only", [False, True], ids=["a writable claim volume", "a readOnly claim volume"]
)
async def test_a_pod_waits_with_failed_mount_until_its_claim_is_bound_then_mounts_its_volume(
    runtime: RuntimeClient, tmp_path: Path, read_only: bool
) -> None:
    path = tmp_path / "pv"
    api = APIObjects(claim(phase="Pending"), pv(hostPath={"path": str(path), "type": "DirectoryOrCreate"}))
    config = KubeletConfig(node_name="sim-1", root_dir=tmp_path / "kubelet")
    recorder = Recorder()
    volumes = VolumeManager(config.pods_dir, no_object, no_token, lambda: {}, api)
    manager = RuntimeManager(
        runtime, config, volumes, no_object, recorder, lambda: {"cpu": "2", "memory": "1Gi"}
    )
    pod = app_pod(claim_volume(read_only=read_only))

    result = await manager.sync_pod(pod, await runtimestate.pod_state(runtime, UID))
    assert result.waiting == {"main": ("ContainerCreating", "")}
    assert result.retry_in == 2.0
    assert recorder.events == [
        ("Warning", "FailedMount", UNABLE + "error processing PVC default/data: PVC is not bound")
    ]
    assert (await runtimestate.pod_state(runtime, UID)).sandbox is None

    api.put(claim())
    await manager.sync_pod(pod, await runtimestate.pod_state(runtime, UID))
    containers = (await runtimestate.pod_state(runtime, UID)).containers
    assert [c.name for c in containers] == ["main"]
    mounts = (await runtime.container_status(containers[0].id)).status.mounts
    data = next(m for m in mounts if m.container_path == "/data")
    assert (data.host_path, data.readonly) == (str(path), read_only)
    assert path.is_dir()


# -- a real control plane -------------------------------------------------------------------------------------


def create(api: httpx.Client, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    response = api.post(path, json=obj)
    assert response.status_code == 201, response.text
    return response.json()


def make_claim(api: httpx.Client, namespace: str, name: str, volume_name: str) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "",
            "volumeName": volume_name,
        },
    }
    return create(api, f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", body)


def make_volume(api: httpx.Client, name: str, claim: dict[str, Any], path: Path) -> dict[str, Any]:
    meta = claim["metadata"]
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
        },
    }
    return create(api, "/api/v1/persistentvolumes", body)


def mark_bound(api: httpx.Client, namespace: str, name: str) -> None:
    response = api.patch(
        f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}/status",
        json={"status": {"phase": "Bound"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text


def claim_pod(name: str, node: str, claim_name: str = "data", read_only: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "main", "image": "busybox", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
            ],
            "volumes": [claim_volume(claim_name=claim_name, read_only=read_only)],
        },
    }


async def resolved_as_node(
    cp: ControlPlane, node: str, namespace: str, claim_name: str
) -> dict[str, Any] | str:
    """What `bound_volume` gives the node: the volume, or the ClaimError's message once the Node authorizer's
    graph (which follows the watch cache) has seen the pods created just before."""
    kubeconfig = cp.component_kubeconfig(
        f"kubelet-{node}", user=f"system:node:{node}", groups=("system:nodes",)
    )
    async with RESTClient(load_kubeconfig(kubeconfig)) as client:
        deadline = time.monotonic() + 10
        while True:
            try:
                return await bound_volume(client, namespace, claim_name)
            except ClaimError as error:
                if "no relationship found" not in str(error) or time.monotonic() > deadline:
                    return str(error)
            await asyncio.sleep(0.1)


async def test_a_node_reads_the_claims_of_its_pods_and_their_volumes_and_no_others(
    control_plane: ControlPlane, api: httpx.Client, namespace: str, tmp_path: Path
) -> None:
    for name in ("mine", "theirs"):
        made = make_claim(api, namespace, name, f"pv-{name}-{namespace}")
        make_volume(api, f"pv-{name}-{namespace}", made, tmp_path / name)
        mark_bound(api, namespace, name)
    create(api, f"/api/v1/namespaces/{namespace}/pods", claim_pod("app", "pvc-node-1", "mine"))
    create(api, f"/api/v1/namespaces/{namespace}/pods", claim_pod("other", "pvc-node-2", "theirs"))

    volume = await resolved_as_node(control_plane, "pvc-node-1", namespace, "mine")
    assert isinstance(volume, dict), volume
    assert volume["spec"]["hostPath"]["path"] == str(tmp_path / "mine")
    refused = await resolved_as_node(control_plane, "pvc-node-1", namespace, "theirs")
    assert refused == (
        f"error processing PVC {namespace}/theirs: failed to fetch PVC from API server: persistentvolumeclaims "
        f'"theirs" is forbidden: User "system:node:pvc-node-1" cannot get resource "persistentvolumeclaims" in API '
        f'group "" in the namespace "{namespace}": no relationship found between node \'pvc-node-1\' and this object'
    )


def events(api: httpx.Client, namespace: str, name: str) -> list[dict[str, Any]]:
    response = api.get(
        f"/api/v1/namespaces/{namespace}/events", params={"fieldSelector": f"involvedObject.name={name}"}
    )
    return response.json()["items"]


def pod_phase(api: httpx.Client, namespace: str, name: str) -> str:
    return api.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()["status"].get("phase", "")


def test_a_pod_on_a_simulated_node_runs_once_its_claim_is_bound_and_its_data_outlives_it(
    api: httpx.Client, namespace: str, fake_node: FakeNode, tmp_path: Path
) -> None:
    path = tmp_path / "volume"
    made = make_claim(api, namespace, "data", f"pv-data-{namespace}")
    make_volume(api, f"pv-data-{namespace}", made, path)
    create(api, f"/api/v1/namespaces/{namespace}/pods", claim_pod("app", fake_node.name))

    def failed_mount() -> str:
        messages = [e["message"] for e in events(api, namespace, "app") if e["reason"] == "FailedMount"]
        return messages[0] if messages else ""

    message = eventually(failed_mount, 15, message="a FailedMount event")
    assert message == UNABLE + f"error processing PVC {namespace}/data: PVC is not bound"
    assert pod_phase(api, namespace, "app") == "Pending"

    mark_bound(api, namespace, "data")
    eventually(lambda: pod_phase(api, namespace, "app") == "Running", 15, message="the pod Running")
    assert path.is_dir()
    (path / "kept").write_text("data")
    api.delete(f"/api/v1/namespaces/{namespace}/pods/app")
    eventually(
        lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/app").status_code == 404,
        15,
        message="the pod deleted",
    )
    assert (path / "kept").read_text() == "data"

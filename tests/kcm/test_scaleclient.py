"""The scale client (kind → resource → `/scale`) against a recording client, the autoscaler resizing a custom
resource through it, and the same once against a real apiserver with a CRD that has a scale subresource."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from minikube_py.client import errors, resources
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.podautoscaler import HorizontalController
from minikube_py.kcm.controllers.scaleclient import NoKindMatchError, ScaleClient
from tests.harness import ControlPlane
from tests.kcm.fakes import FakeRecorder, RecordingClient, cache, context
from tests.kcm.running import running, wait_for

NS = "default"
GROUP = "db.example.com"
SCALE_PATH = f"/apis/{GROUP}/v1/namespaces/{NS}/dbclusters/main/scale"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def discovery(client: RecordingClient, *, with_crd: bool = True, scale_kind: str = "Scale") -> None:
    """What the apiserver's discovery says: the core group, and `db.example.com/v1` serving `dbclusters` with
    its status and scale subresources (when the CRD is installed)."""
    client.paths["/api/v1"] = {
        "resources": [{"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["get", "list"]}]
    }
    groups = (
        [
            {
                "name": GROUP,
                "versions": [{"groupVersion": f"{GROUP}/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": f"{GROUP}/v1", "version": "v1"},
            }
        ]
        if with_crd
        else []
    )
    client.paths["/apis"] = {"groups": groups}
    client.paths[f"/apis/{GROUP}/v1"] = {
        "resources": [
            {
                "name": "dbclusters",
                "kind": "DBCluster",
                "namespaced": True,
                "verbs": ["get", "list", "update"],
            },
            {
                "name": "dbclusters/status",
                "kind": "DBCluster",
                "namespaced": True,
                "verbs": ["get", "update"],
            },
            {
                "name": "dbclusters/scale",
                "kind": scale_kind,
                "group": "autoscaling",
                "version": "v1",
                "namespaced": True,
                "verbs": ["get", "patch", "update"],
            },
        ]
    }


def scale(replicas: int, selector: str = "app=db") -> dict[str, Any]:
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": "main", "namespace": NS, "resourceVersion": "7"},
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas, "selector": selector},
    }


def reads(client: RecordingClient) -> list[str]:
    return [a.resource for a in client.actions if a.verb == "get"]


# the kind → resource mapping ------------------------------------------------------------------------------


async def test_a_built_in_kind_is_mapped_without_asking_the_apiserver() -> None:
    client = RecordingClient()
    scales = ScaleClient(client)  # type: ignore[arg-type]
    assert await scales.resource_for("apps/v1", "Deployment") == resources.DEPLOYMENTS
    assert await scales.resources_for("apps", "StatefulSet") == [resources.STATEFUL_SETS]
    assert client.actions == []


async def test_a_custom_kind_is_mapped_through_discovery_once() -> None:
    client = RecordingClient()
    discovery(client)
    scales = ScaleClient(client)  # type: ignore[arg-type]
    found = await scales.resource_for(f"{GROUP}/v1", "DBCluster")
    assert (found.group, found.version, found.plural, found.namespaced) == (GROUP, "v1", "dbclusters", True)
    assert await scales.resources_for(GROUP, "DBCluster") == [found]
    assert sorted(reads(client)) == ["/api/v1", "/apis", f"/apis/{GROUP}/v1"]  # read once, then remembered


async def test_a_kind_installed_after_the_first_discovery_is_found_by_reading_it_again() -> None:
    client = RecordingClient()
    discovery(client, with_crd=False)
    scales = ScaleClient(client)  # type: ignore[arg-type]
    with pytest.raises(NoKindMatchError):
        await scales.resource_for(f"{GROUP}/v1", "DBCluster")
    discovery(client)  # the CRD is established now
    assert (await scales.resource_for(f"{GROUP}/v1", "DBCluster")).plural == "dbclusters"


@pytest.mark.parametrize(
    ("lookup", "message"),
    [
        pytest.param(
            lambda s: s.resource_for(f"{GROUP}/v1", "Widget"),
            f'no matches for kind "Widget" in version "{GROUP}/v1"',
            id="by version, kube's message",
        ),
        pytest.param(
            lambda s: s.resource_for(f"{GROUP}/v2", "DBCluster"),
            f'no matches for kind "DBCluster" in version "{GROUP}/v2"',
            id="a version that is not served",
        ),
        pytest.param(
            lambda s: s.resources_for(GROUP, "Widget"),
            f'no matches for kind "Widget" in group "{GROUP}"',
            id="by group, kube's message",
        ),
    ],
)
async def test_an_unknown_kind_is_kubes_no_matches_error(lookup: Any, message: str) -> None:
    client = RecordingClient()
    discovery(client)
    with pytest.raises(NoKindMatchError) as raised:
        await lookup(ScaleClient(client))  # type: ignore[arg-type]
    assert str(raised.value) == message


# reading and writing a Scale ----------------------------------------------------------------------------------


async def test_the_scale_is_read_and_written_through_the_subresource() -> None:
    client = RecordingClient()
    discovery(client)
    client.paths[SCALE_PATH] = scale(1)
    scales = ScaleClient(client)  # type: ignore[arg-type]
    resource = await scales.resource_for(f"{GROUP}/v1", "DBCluster")
    current = await scales.get(resource, NS, "main")
    assert current["spec"] == {"replicas": 1} and reads(client)[-1] == SCALE_PATH
    await scales.update(resource, NS, {**current, "spec": {"replicas": 3}})
    (written,) = client.writes("update")
    assert (written.resource, written.namespace, written.name) == ("dbclusters/scale", NS, "main")
    assert written.body["kind"] == "Scale" and written.body["spec"] == {"replicas": 3}


@pytest.mark.parametrize(
    ("scale_kind", "implements"),
    [
        pytest.param("Scale", True, id="a scale subresource speaking Scale is one"),
        pytest.param("DBCluster", False, id="a subresource of that name speaking another kind is not"),
    ],
)
async def test_implements_scale_reads_the_group_versions_discovery(scale_kind: str, implements: bool) -> None:
    client = RecordingClient()
    discovery(client, scale_kind=scale_kind)
    scales = ScaleClient(client)  # type: ignore[arg-type]
    resource = await scales.resource_for(f"{GROUP}/v1", "DBCluster")
    assert await scales.implements_scale(resource) is implements


async def test_a_missing_object_is_the_apiservers_not_found() -> None:
    client = RecordingClient()
    discovery(client)
    scales = ScaleClient(client)  # type: ignore[arg-type]
    with pytest.raises(errors.NotFound):
        await scales.get(await scales.resource_for(f"{GROUP}/v1", "DBCluster"), NS, "main")


# the autoscaler resizing a custom resource ----------------------------------------------------------------


def autoscaler(min_replicas: int, max_replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "db", "namespace": NS, "uid": "hpa-uid", "resourceVersion": "3"},
        "spec": {
            "scaleTargetRef": {"apiVersion": f"{GROUP}/v1", "kind": "DBCluster", "name": "main"},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
        "status": {"desiredReplicas": 0},
    }


@pytest.mark.parametrize(
    ("current", "bounds", "wanted", "reason"),
    [
        pytest.param(
            1, (2, 5), 2, "Current number of replicas below Spec.MinReplicas", id="brought up to the minimum"
        ),
        pytest.param(
            9,
            (1, 5),
            5,
            "Current number of replicas above Spec.MaxReplicas",
            id="brought down to the maximum",
        ),
    ],
)
async def test_the_autoscaler_resizes_a_custom_resource_through_its_scale(
    current: int, bounds: tuple[int, int], wanted: int, reason: str
) -> None:
    ctx, client, _ = context(ControllerSettings(hpa_sync_period=15))
    recorder = FakeRecorder()
    ctx.recorder = recorder  # type: ignore[assignment]
    discovery(client)
    client.paths[SCALE_PATH] = scale(current)
    cache(ctx, resources.HORIZONTAL_POD_AUTOSCALERS, autoscaler(*bounds))
    hc = HorizontalController(ctx)
    await hc.sync(f"{NS}/db")
    (written,) = [a for a in client.writes("update") if a.resource == "dbclusters/scale"]
    assert written.body["spec"]["replicas"] == wanted
    assert ("Normal", "SuccessfulRescale", f"New size: {wanted}; reason: {reason}") in recorder.events
    status = next(
        a.body["status"] for a in client.writes("update") if a.resource == "horizontalpodautoscalers/status"
    )
    assert (status["currentReplicas"], status["desiredReplicas"]) == (current, wanted)
    hc.queue.shut_down()


# against a real apiserver --------------------------------------------------------------------------------------


def crd(group: str) -> dict[str, Any]:
    """The CRD of tests/e2e/test_crd_scale.py: the count at `.spec.nodes`, the selector in the status."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"dbclusters.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "dbclusters", "singular": "dbcluster", "kind": "DBCluster"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.nodes",
                            "statusReplicasPath": ".status.readyNodes",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                }
            ],
        },
    }


async def test_an_autoscaler_scales_a_custom_resource_through_the_apiserver(
    control_plane: ControlPlane, api: httpx.Client, namespace: str
) -> None:
    group = f"hpa{uuid.uuid4().hex[:6]}.example.com"
    clusters = f"/apis/{group}/v1/namespaces/{namespace}/dbclusters"
    assert api.post(CRDS, json=crd(group)).status_code == 201
    try:
        await wait_for(lambda: api.get(clusters).status_code == 200, 15, "the CRD to be served")
        r = api.post(
            clusters,
            json={
                "apiVersion": f"{group}/v1",
                "kind": "DBCluster",
                "metadata": {"name": "main"},
                "spec": {"engine": "pg", "nodes": 1},
            },
        )
        assert r.status_code == 201, r.text
        hpa = autoscaler(2, 5)
        hpa["metadata"] = {"name": "db"}
        hpa["spec"]["scaleTargetRef"]["apiVersion"] = f"{group}/v1"
        r = api.post(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers", json=hpa)
        assert r.status_code == 201, r.text
        async with running(
            control_plane, HorizontalController, settings=ControllerSettings(hpa_sync_period=0.2)
        ):
            await wait_for(
                lambda: api.get(f"{clusters}/main").json()["spec"].get("nodes") == 2,
                15,
                "the custom resource scaled to minReplicas",
            )
        assert api.get(f"{clusters}/main").json()["spec"] == {"engine": "pg", "nodes": 2}
        events = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
        assert any(e["reason"] == "SuccessfulRescale" and e["involvedObject"]["name"] == "db" for e in events)
    finally:
        api.delete(f"{CRDS}/dbclusters.{group}")

"""The StatefulSet controller against a real apiserver, in this process (tests/kcm/running.py).

There is no kubelet here: the test plays it, marking pods Running and Ready through `pods/status`, so it
decides when each pod is healthy and can watch the controller wait for it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.statefulset import StatefulSetController
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for


def stateful_set(replicas: int, image: str = "nginx:1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}, **spec}}


async def pod_names(client: RESTClient, namespace: str) -> list[str]:
    pods = (await client.list(resources.PODS, namespace))["items"]
    return sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp"))


async def make_ready(client: RESTClient, namespace: str, name: str) -> None:
    """What a kubelet reports once the pod's containers run and pass their readiness probe."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}
    await client.patch(resources.PODS, name, {"status": status}, namespace, subresource="status")


async def get_set(client: RESTClient, namespace: str) -> dict[str, Any]:
    return await client.get(resources.STATEFUL_SETS, "web", namespace)


async def roll_through(client: RESTClient, namespace: str, names: list[str], revision: str) -> None:
    """Play the kubelet for `names` in order: wait for each pod at `revision`, then make it ready."""
    for name in names:
        async def at_revision(name: str = name) -> bool:
            try:
                pod = await client.get(resources.PODS, name, namespace)
            except errors.NotFound:
                return False
            return (not pod["metadata"].get("deletionTimestamp")
                    and pod["metadata"]["labels"].get("controller-revision-hash") == revision)
        await wait_for(at_revision, 10, f"pod {name} at revision {revision}")
        await make_ready(client, namespace, name)


async def test_pods_are_made_in_order_and_rolled_from_the_highest_ordinal(control_plane: ControlPlane,
                                                                           namespace: str) -> None:
    async with running(control_plane, StatefulSetController) as client:
        await client.create(resources.STATEFUL_SETS, stateful_set(3), namespace)
        await wait_for(lambda: pod_names(client, namespace), 10, "pod web-0")
        assert await pod_names(client, namespace) == ["web-0"]  # web-1 waits for web-0 to be ready

        async def update_revision() -> str:  # the status is written after the pods of the same sync
            return ((await get_set(client, namespace)).get("status") or {}).get("updateRevision", "")
        first = await wait_for(update_revision, 10, "status.updateRevision")
        await roll_through(client, namespace, ["web-0", "web-1", "web-2"], first)

        async def all_ready() -> bool:
            status = (await get_set(client, namespace)).get("status") or {}
            return status.get("readyReplicas") == 3 and status.get("currentReplicas") == 3
        await wait_for(all_ready, 10, "3 ready replicas")
        pod = await client.get(resources.PODS, "web-1", namespace)
        assert pod["spec"]["hostname"] == "web-1" and pod["spec"]["subdomain"] == "web"
        assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"

        sts = await get_set(client, namespace)
        sts["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
        await client.update(resources.STATEFUL_SETS, sts, namespace)

        async def new_revision() -> str | None:
            status = (await get_set(client, namespace)).get("status") or {}
            return status["updateRevision"] if status.get("updateRevision") != first else None
        second = await wait_for(new_revision, 10, "an update revision")
        await roll_through(client, namespace, ["web-2", "web-1", "web-0"], second)

        async def rolled_out() -> dict[str, Any] | None:
            status = (await get_set(client, namespace)).get("status") or {}
            done = status.get("currentRevision") == second and status.get("updatedReplicas") == 3
            return status if done and status.get("readyReplicas") == 3 else None
        status = await wait_for(rolled_out, 10, "the rollout to complete")
        assert status["observedGeneration"] == 2 and status["collisionCount"] == 0

        history = (await client.list(resources.CONTROLLER_REVISIONS, namespace))["items"]
        assert sorted((r["metadata"]["name"], r["revision"]) for r in history) == sorted([(first, 1), (second, 2)])
        events = (await client.list(resources.CORE_EVENTS, namespace))["items"]
        messages = {e["message"] for e in events if e["involvedObject"]["kind"] == "StatefulSet"}
        assert "create Pod web-0 in StatefulSet web successful" in messages
        assert "delete Pod web-2 in StatefulSet web successful" in messages


async def test_claims_are_made_from_templates_and_owned_by_the_set_when_deleted_means_delete(
        control_plane: ControlPlane, namespace: str) -> None:
    spec = {"volumeClaimTemplates": [{"metadata": {"name": "data"},
                                      "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}}],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}
    async with running(control_plane, StatefulSetController) as client:
        created = await client.create(resources.STATEFUL_SETS, stateful_set(1, **spec), namespace)

        async def owned_claim() -> dict[str, Any] | None:
            try:
                claim = await client.get(resources.PERSISTENT_VOLUME_CLAIMS, "data-web-0", namespace)
            except errors.NotFound:
                return None
            return claim if claim["metadata"].get("ownerReferences") else None
        claim = await wait_for(owned_claim, 10, "claim data-web-0 owned by the set")
        assert claim["metadata"]["labels"] == {"app": "web"}
        [ref] = claim["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"], ref["controller"]) == ("StatefulSet", created["metadata"]["uid"], True)
        pod = await client.get(resources.PODS, "web-0", namespace)
        assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}} in pod["spec"]["volumes"]


async def test_a_pod_the_apiserver_refuses_is_reported_and_retried_with_backoff(control_plane: ControlPlane,
                                                                                namespace: str) -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "no-pods"},
             "spec": {"hard": {"pods": "0"}}}
    async with running(control_plane, StatefulSetController) as client:
        await client.create(resources.RESOURCE_QUOTAS, quota, namespace)
        await client.create(resources.STATEFUL_SETS, stateful_set(1), namespace)

        async def failed_create() -> dict[str, Any] | None:
            events = (await client.list(resources.CORE_EVENTS, namespace))["items"]
            return next((e for e in events if e["reason"] == "FailedCreate"), None)
        event = await wait_for(failed_create, 10, "a FailedCreate event")
        assert event["type"] == "Warning"
        assert event["message"].startswith('create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden')
        await asyncio.sleep(2)
        repeated = await failed_create()
        assert repeated is not None and repeated["count"] < 20  # backing off, not a hot loop
        assert await pod_names(client, namespace) == []

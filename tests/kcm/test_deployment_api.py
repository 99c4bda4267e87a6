"""The Deployment controller against a real apiserver, with the ReplicaSet controller making the pods and
this test acting as the kubelet: it marks every pod Running and Ready (there is no node), so rollouts
complete. The checks are what `kubectl rollout status`, `rollout history` and `rollout undo` rely on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors
from minikube_py.client.resources import CORE_EVENTS, DEPLOYMENTS, PODS, REPLICA_SETS
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.deployment import DeploymentController
from minikube_py.kcm.controllers.replicaset import ReplicaSetController
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for

REVISION = "deployment.kubernetes.io/revision"


def deployment(image: str, strategy: dict[str, Any] | None = None, replicas: int = 3) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {"kubernetes.io/change-cause": f"image {image}"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "strategy": strategy or {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


@contextlib.asynccontextmanager
async def kubelet(client: RESTClient, namespace: str) -> AsyncIterator[None]:
    """Mark every pod of `namespace` Running and Ready, as a kubelet would once its containers start."""
    async def work() -> None:
        while True:
            for pod in (await client.list(PODS, namespace))["items"]:
                if (pod.get("status") or {}).get("phase") != "Running" and not pod["metadata"].get("deletionTimestamp"):
                    ready = {"type": "Ready", "status": "True", "lastTransitionTime": time_string()}
                    with contextlib.suppress(errors.NotFound, errors.Conflict):
                        await client.patch(PODS, pod["metadata"]["name"],
                                           {"status": {"phase": "Running", "conditions": [ready]}}, namespace,
                                           subresource="status")
            await asyncio.sleep(0.1)

    task = asyncio.create_task(work())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def rolled_out(d: dict[str, Any]) -> bool:
    """`kubectl rollout status`'s test for a finished rollout."""
    spec, status = d["spec"], d.get("status") or {}
    return (d["metadata"]["generation"] <= status.get("observedGeneration", 0)
            and status.get("updatedReplicas", 0) >= spec["replicas"]
            and status.get("replicas", 0) <= status.get("updatedReplicas", 0)
            and status.get("availableReplicas", 0) >= status.get("updatedReplicas", 0))


async def wait_rolled_out(client: RESTClient, namespace: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        d = await client.get(DEPLOYMENTS, "web", namespace)
        return d if rolled_out(d) else None
    return await wait_for(check, 20, "the rollout to finish")


async def replica_sets(client: RESTClient, namespace: str) -> dict[str, dict[str, Any]]:
    """The Deployment's ReplicaSets by image."""
    items = (await client.list(REPLICA_SETS, namespace, label_selector="app=web"))["items"]
    return {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs for rs in items}


async def set_image(client: RESTClient, namespace: str, image: str) -> None:
    patch = {"metadata": {"annotations": {"kubernetes.io/change-cause": f"image {image}"}},
             "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}
    await client.patch(DEPLOYMENTS, "web", patch, namespace, patch_type="strategic")


async def test_a_rolling_update_rolls_out_rolls_back_and_scales(control_plane: ControlPlane, namespace: str) -> None:
    async with running(control_plane, DeploymentController, ReplicaSetController) as client, \
            kubelet(client, namespace):
        await client.create(DEPLOYMENTS, deployment("nginx:1"), namespace)
        d = await wait_rolled_out(client, namespace)
        first = (await replica_sets(client, namespace))["nginx:1"]
        assert first["metadata"]["name"] == f"web-{first['metadata']['labels']['pod-template-hash']}"
        assert d["metadata"]["annotations"][REVISION] == "1"
        conditions = {c["type"]: c["reason"] for c in d["status"]["conditions"]}
        assert conditions == {"Available": "MinimumReplicasAvailable", "Progressing": "NewReplicaSetAvailable"}
        await asyncio.sleep(1)  # a finished rollout is left alone: no write that would wake it again
        assert (await client.get(DEPLOYMENTS, "web", namespace))["metadata"]["resourceVersion"] == \
            d["metadata"]["resourceVersion"]

        await set_image(client, namespace, "nginx:2")
        d = await wait_rolled_out(client, namespace)
        rss = await replica_sets(client, namespace)
        assert rss["nginx:1"]["spec"]["replicas"] == 0 and rss["nginx:2"]["spec"]["replicas"] == 3
        assert rss["nginx:2"]["metadata"]["annotations"]["kubernetes.io/change-cause"] == "image nginx:2"
        assert d["metadata"]["annotations"][REVISION] == "2"

        await set_image(client, namespace, "nginx:1")  # what `kubectl rollout undo` does
        await wait_for(lambda: _revision_of(client, namespace, "nginx:1", "3"), 20, "nginx:1 to become revision 3")
        await wait_rolled_out(client, namespace)
        rss = await replica_sets(client, namespace)
        assert len(rss) == 2  # the old ReplicaSet came back: no third one
        assert rss["nginx:1"]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"

        await client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, namespace, subresource="scale")
        await wait_for(lambda: _available(client, namespace, 5), 20, "5 available replicas")
        scaled = [e["message"] for e in (await client.list(CORE_EVENTS, namespace))["items"]
                  if e["reason"] == "ScalingReplicaSet"]
        name = rss["nginx:1"]["metadata"]["name"]
        # from the tenth distinct ScalingReplicaSet message on, they are "(combined from similar events): ...",
        # as client-go's recorder does; how many steps the rollouts took before decides which this one is
        assert any(message.endswith(f"Scaled up replica set {name} from 3 to 5") for message in scaled)
        assert f"Scaled up replica set {first['metadata']['name']} from 0 to 3" in scaled


async def test_recreate_replaces_every_pod_only_after_the_old_ones_are_gone(control_plane: ControlPlane,
                                                                           namespace: str) -> None:
    async with running(control_plane, DeploymentController, ReplicaSetController) as client, \
            kubelet(client, namespace):
        await client.create(DEPLOYMENTS, deployment("nginx:1", {"type": "Recreate"}, replicas=2), namespace)
        await wait_rolled_out(client, namespace)
        seen_together = False

        async def watch_pods() -> None:
            nonlocal seen_together
            while True:
                images = {p["spec"]["containers"][0]["image"] for p in (await client.list(PODS, namespace))["items"]}
                seen_together = seen_together or images == {"nginx:1", "nginx:2"}
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch_pods())
        try:
            await set_image(client, namespace, "nginx:2")
            d = await wait_rolled_out(client, namespace)
        finally:
            watcher.cancel()
        assert d["metadata"]["annotations"][REVISION] == "2"
        assert not seen_together, "old and new pods ran at the same time"


async def _revision_of(client: RESTClient, namespace: str, image: str, revision: str) -> bool:
    rs = (await replica_sets(client, namespace)).get(image)
    return rs is not None and rs["metadata"].get("annotations", {}).get(REVISION) == revision


async def _available(client: RESTClient, namespace: str, count: int) -> bool:
    d = await client.get(DEPLOYMENTS, "web", namespace)
    return bool((d.get("status") or {}).get("availableReplicas") == count and rolled_out(d))


async def test_a_replica_set_the_apiserver_refuses_is_reported_without_spinning(control_plane: ControlPlane,
                                                                               namespace: str) -> None:
    long_name = "w" * 250  # a valid Deployment name, but `<name>-<hash>` is too long for its ReplicaSet
    body = deployment("nginx:1")
    body["metadata"]["name"] = long_name
    async with running(control_plane, DeploymentController, ReplicaSetController) as client:
        await client.create(DEPLOYMENTS, body, namespace)

        async def failed() -> dict[str, Any] | None:
            d = await client.get(DEPLOYMENTS, long_name, namespace)
            reasons = {c["reason"] for c in (d.get("status") or {}).get("conditions") or []}
            return d if "ReplicaSetCreateError" in reasons else None

        d = await wait_for(failed, 10, "the ReplicaSetCreateError condition")
        await asyncio.sleep(1.5)  # retried with backoff meanwhile, but the status is not rewritten
        assert (await client.get(DEPLOYMENTS, long_name, namespace))["metadata"]["resourceVersion"] == \
            d["metadata"]["resourceVersion"]
        warnings = [e for e in (await client.list(CORE_EVENTS, namespace))["items"]
                    if e["reason"] == "ReplicaSetCreateError"]
        assert warnings and warnings[0]["type"] == "Warning"
        assert warnings[0]["message"].startswith(f'Failed to create new replica set "{long_name}-')

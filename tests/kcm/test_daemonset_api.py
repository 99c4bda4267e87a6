"""The DaemonSet controller against a real apiserver: daemon pods follow the nodes that fit, a template change
rolls out and an undo (the revision's data sent back as a patch, as `kubectl rollout undo` does) rolls back.

There is no scheduler or kubelet here: the test plays the kubelet by marking pods Ready. Pods stay unbound,
which is enough, since the controller knows a pod's node from the node affinity it pinned it with (and an
unbound pod is deleted at once, without a kubelet to finish it). Nodes are cluster-wide, so the DaemonSet
selects only this test's nodes by a label.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from minikube_py.client import resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.daemonset import DaemonSetController
from minikube_py.kcm.controllers.daemonset.placement import REVISION_HASH_LABEL, target_node
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for


def daemon_set(namespace: str, image: str = "agent:1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"nodeSelector": {"daemon-test": namespace},
                                           "containers": [{"name": "agent", "image": image}]}}}}


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


@contextlib.contextmanager
def nodes(api: httpx.Client, *specs: dict[str, Any]) -> Any:
    for spec in specs:
        assert api.post("/api/v1/nodes", json=spec).status_code == 201
    try:
        yield
    finally:
        for spec in specs:
            api.delete(f"/api/v1/nodes/{spec['metadata']['name']}")


@contextlib.asynccontextmanager
async def kubelet(client: RESTClient, namespace: str) -> AsyncIterator[None]:
    """Mark every daemon pod Running and Ready soon after it appears."""
    async def loop() -> None:
        while True:
            for pod in (await client.list(resources.PODS, namespace))["items"]:
                if (pod.get("status") or {}).get("phase") != "Running" and not pod["metadata"].get("deletionTimestamp"):
                    status = {"phase": "Running", "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
                    with contextlib.suppress(Exception):  # deleted meanwhile
                        await client.patch(resources.PODS, pod["metadata"]["name"], {"status": status}, namespace,
                                           subresource="status")
            await asyncio.sleep(0.1)
    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def daemon_pods(client: RESTClient, namespace: str) -> dict[str, dict[str, Any]]:
    """The live daemon pods by the node they are for."""
    pods = (await client.list(resources.PODS, namespace))["items"]
    return {target_node(p): p for p in pods if not p["metadata"].get("deletionTimestamp")}


async def test_daemon_pods_follow_the_nodes_and_a_new_template_rolls_out_and_back(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    a, b, c = (f"{namespace}-{n}" for n in "abc")
    fits = {"daemon-test": namespace}
    with nodes(api, node(a, fits), node(b, fits), node(c, {})):
        async with running(control_plane, DaemonSetController) as client, kubelet(client, namespace):
            await client.create(resources.DAEMON_SETS, daemon_set(namespace), namespace)

            async def status_is(**expected: int) -> bool:
                live = await client.get(resources.DAEMON_SETS, "agent", namespace)
                status = live.get("status") or {}
                return status.get("observedGeneration") == live["metadata"]["generation"] and all(
                    status.get(k, 0) == v for k, v in expected.items())

            await wait_for(lambda: status_is(desiredNumberScheduled=2, numberAvailable=2, updatedNumberScheduled=2),
                           message="a daemon pod available on each of the two fitting nodes")
            pods = await daemon_pods(client, namespace)
            assert sorted(pods) == sorted([a, b])
            first_hash = pods[a]["metadata"]["labels"][REVISION_HASH_LABEL]
            history = (await client.list(resources.CONTROLLER_REVISIONS, namespace))["items"]
            assert [(r["metadata"]["name"], r["revision"]) for r in history] == [(f"agent-{first_hash}", 1)]
            settled = (await client.get(resources.DAEMON_SETS, "agent", namespace))["metadata"]["resourceVersion"]
            await asyncio.sleep(1)
            assert (await client.get(resources.DAEMON_SETS, "agent", namespace))["metadata"]["resourceVersion"] \
                == settled, "the controller keeps writing a DaemonSet that is at rest"

            await client.patch(resources.NODES, c, {"metadata": {"labels": fits}})
            await wait_for(lambda: status_is(desiredNumberScheduled=3, numberAvailable=3),
                           message="a pod on the node that started to fit")
            await client.patch(resources.NODES, a, {"spec": {"taints": [{"key": "evict", "effect": "NoExecute"}]}})
            await wait_for(lambda: status_is(desiredNumberScheduled=2, numberAvailable=2, numberMisscheduled=0),
                           message="the pod on the NoExecute-tainted node to go")
            assert sorted(await daemon_pods(client, namespace)) == sorted([b, c])

            new_image = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}}
            await client.patch(resources.DAEMON_SETS, "agent", new_image, namespace, patch_type="strategic")
            await wait_for(lambda: status_is(updatedNumberScheduled=2, numberAvailable=2),
                           message="the new template rolled out")
            pods = await daemon_pods(client, namespace)
            assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {"agent:2"}

            first = await client.get(resources.CONTROLLER_REVISIONS, f"agent-{first_hash}", namespace)
            await client.patch(resources.DAEMON_SETS, "agent", first["data"], namespace, patch_type="strategic")

            async def rolled_back() -> bool:
                revision = await client.get(resources.CONTROLLER_REVISIONS, f"agent-{first_hash}", namespace)
                pods = await daemon_pods(client, namespace)
                return revision["revision"] == 3 and len(pods) == 2 and all(
                    p["metadata"]["labels"][REVISION_HASH_LABEL] == first_hash for p in pods.values())
            await wait_for(rolled_back, message="the undo to revision 1 (renumbered 3) rolled out")
            assert len((await client.list(resources.CONTROLLER_REVISIONS, namespace))["items"]) == 2

    events = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
    reasons = {e["reason"] for e in events if e["involvedObject"]["name"] == "agent"}
    assert {"SuccessfulCreate", "SuccessfulDelete"} <= reasons


async def test_pods_the_apiserver_refuses_give_a_warning_and_are_retried_with_backoff(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    label = {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    assert api.patch(f"/api/v1/namespaces/{namespace}", json=label,
                     headers={"Content-Type": "application/merge-patch+json"}).status_code == 200
    name = f"{namespace}-a"
    with nodes(api, node(name, {"daemon-test": namespace})):
        async with running(control_plane, DaemonSetController) as client:
            await client.create(resources.DAEMON_SETS, daemon_set(namespace), namespace)

            async def failed_creates() -> list[dict[str, Any]]:
                items = (await client.list(resources.CORE_EVENTS, namespace))["items"]
                return [e for e in items if e["reason"] == "FailedCreate"]
            warnings = await wait_for(failed_creates, message="a FailedCreate event")
            assert warnings[0]["type"] == "Warning"
            assert 'violates PodSecurity "restricted:latest"' in warnings[0]["message"]
            await asyncio.sleep(2)
            attempts = sum(e.get("count", 1) for e in await failed_creates())
            assert attempts < 20, f"{attempts} attempts in about 2 s: the controller is not backing off"
            assert (await client.list(resources.PODS, namespace))["items"] == []

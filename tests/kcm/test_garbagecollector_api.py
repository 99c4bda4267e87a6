"""The garbage collector against a real apiserver: cascading deletes in the background, in the foreground
and with orphaning, cluster-scoped owners, owners that never existed, custom resources whose CRD appears
after the collector started, and the invalid cluster-scoped dependent of a namespaced owner. The collector
runs in this process with a one-second discovery period (kube's is 30 s)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from minikube_py.kcm.context import ControllerContext
from minikube_py.kcm.controllers.garbagecollector import GarbageCollector
from tests.harness import ControlPlane
from tests.kcm.running import running, wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def collector(ctx: ControllerContext) -> GarbageCollector:
    return GarbageCollector(ctx, discovery_period=1.0)


def owner_ref(owner: dict[str, Any], block: bool | None = None) -> dict[str, Any]:
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"]}
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


def configmap(name: str, *owners: dict[str, Any], finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "ownerReferences": list(owners)}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def create(api: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(path, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def delete(api: httpx.Client, path: str, policy: str | None = None) -> None:
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy} if policy else None
    response = api.request("DELETE", path, json=body)
    assert response.status_code in (200, 202), response.text


async def test_background_deletion_collects_dependents_whose_owners_are_all_gone(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = create(api, cms, configmap("owner"))
    keeper = create(api, cms, configmap("keeper"))
    node = create(api, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                         "metadata": {"name": f"gc-owner-{namespace}"}})
    create(api, cms, configmap("dependent", owner_ref(owner)))
    create(api, cms, configmap("two-owners", owner_ref(owner), owner_ref(keeper)))
    create(api, cms, configmap("never-owned", {**owner_ref(owner), "name": "ghost", "uid": str(uuid.uuid4())}))
    create(api, cms, configmap("of-a-node", owner_ref(node)))

    async with running(control_plane, collector):
        await wait_for(lambda: api.get(f"{cms}/never-owned").status_code == 404, 15,
                       "the dependent of an owner that never existed to be collected")
        assert api.get(f"{cms}/dependent").status_code == 200  # its owner lives
        delete(api, f"{cms}/owner")
        delete(api, f"/api/v1/nodes/{node['metadata']['name']}")
        await wait_for(lambda: api.get(f"{cms}/dependent").status_code == 404, 15, "the dependent to be collected")
        await wait_for(lambda: api.get(f"{cms}/of-a-node").status_code == 404, 15,
                       "the dependent of a cluster-scoped owner to be collected")
        await wait_for(lambda: len(api.get(f"{cms}/two-owners").json()["metadata"]["ownerReferences"]) == 1, 15,
                       "the reference to the deleted owner to be removed")
    survivor = api.get(f"{cms}/two-owners").json()
    assert survivor["metadata"]["ownerReferences"] == [owner_ref(keeper)]


async def test_foreground_deletion_keeps_the_owner_until_its_blocking_dependents_are_gone(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = create(api, cms, configmap("owner"))
    create(api, cms, configmap("held", owner_ref(owner, block=True), finalizers=("example.com/hold",)))
    child = create(api, cms, configmap("child", owner_ref(owner, block=True)))
    create(api, cms, configmap("grandchild", owner_ref(child, block=True)))

    async with running(control_plane, collector):
        delete(api, f"{cms}/owner", "Foreground")
        await wait_for(lambda: api.get(f"{cms}/grandchild").status_code == 404, 15,
                       "the grandchild to be deleted first (its parent is deleted in the foreground too)")
        await wait_for(lambda: api.get(f"{cms}/child").status_code == 404, 15, "the child to be deleted")
        await wait_for(lambda: api.get(f"{cms}/held").json()["metadata"].get("deletionTimestamp"), 15,
                       "the held dependent to be deleted")
        waiting = api.get(f"{cms}/owner").json()["metadata"]
        assert waiting["deletionTimestamp"] and waiting["finalizers"] == ["foregroundDeletion"]
        assert api.patch(f"{cms}/held", json={"metadata": {"finalizers": None}},
                         headers={"Content-Type": "application/merge-patch+json"}).status_code == 200
        await wait_for(lambda: api.get(f"{cms}/owner").status_code == 404, 15,
                       "the owner to go once nothing blocks it")


async def test_orphaning_detaches_the_dependents_and_then_lets_the_owner_go(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = create(api, cms, configmap("owner"))
    for name in ("a", "b"):
        create(api, cms, configmap(name, owner_ref(owner, block=True)))

    async with running(control_plane, collector):
        delete(api, f"{cms}/owner", "Orphan")
        await wait_for(lambda: api.get(f"{cms}/owner").status_code == 404, 15, "the orphaned owner to go")
    for name in ("a", "b"):
        assert api.get(f"{cms}/{name}").json()["metadata"].get("ownerReferences") in (None, [])


async def test_custom_resources_served_after_the_start_are_monitored_and_collected(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    group = f"gc{uuid.uuid4().hex[:6]}.example.com"
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    widgets = f"/apis/{group}/v1/namespaces/{namespace}/widgets"
    keeper = create(api, cms, configmap("keeper"))
    async with running(control_plane, collector):
        create(api, CRDS, {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
        try:
            await wait_for(lambda: api.get(widgets).status_code == 200, 15, "the CRD to be served")
            widget = create(api, widgets, {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}})
            create(api, cms, configmap("of-a-widget", owner_ref(widget)))
            gone = {**owner_ref(keeper), "name": "gone", "uid": str(uuid.uuid4())}
            create(api, widgets, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                  "metadata": {"name": "owned", "ownerReferences": [owner_ref(keeper), gone]}})
            await wait_for(lambda: len(api.get(f"{widgets}/owned").json()["metadata"]["ownerReferences"]) == 1,
                           15, "the widget's dangling reference to be removed (by a merge patch)")
            delete(api, f"{widgets}/w")
            await wait_for(lambda: api.get(f"{cms}/of-a-widget").status_code == 404, 15,
                           "the dependent of the deleted widget to be collected")
        finally:
            api.delete(f"{CRDS}/widgets.{group}")


async def test_a_cluster_scoped_dependent_of_a_namespaced_owner_is_reported_and_kept(
        control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    owner = create(api, f"/api/v1/namespaces/{namespace}/configmaps", configmap("owner"))
    name = f"gc-invalid-{namespace}"
    create(api, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                  "metadata": {"name": name, "ownerReferences": [owner_ref(owner)]}})

    def warning() -> dict[str, Any] | None:
        events = api.get("/api/v1/namespaces/default/events",
                         params={"fieldSelector": f"involvedObject.name={name}"}).json()["items"]
        return next((e for e in events if e["reason"] == "OwnerRefInvalidNamespace"), None)

    try:
        async with running(control_plane, collector):
            event = await wait_for(warning, 15, "the OwnerRefInvalidNamespace event")
        assert event["type"] == "Warning"
        assert event["message"] == (f"ownerRef [v1/ConfigMap, namespace: , name: owner, uid: "
                                    f"{owner['metadata']['uid']}] does not exist in namespace \"\"")
        assert api.get(f"/api/v1/nodes/{name}").status_code == 200
    finally:
        api.delete(f"/api/v1/nodes/{name}")

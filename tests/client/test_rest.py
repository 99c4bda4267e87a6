"""The REST client against a real apiserver: CRUD, patches, subresources, typed errors, paging and watch."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minikube_py.api.kinds import Resource
from minikube_py.auth import pki
from minikube_py.client import errors
from minikube_py.client.kubeconfig import ClientConfig, load_kubeconfig
from minikube_py.client.resources import CONFIGMAPS, NAMESPACES, NODES, PODS, SERVICE_ACCOUNTS
from minikube_py.client.rest import RESTClient, WatchEvent
from minikube_py.store.etcd import EtcdStorage
from tests.harness import ControlPlane


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}},
            "data": data}


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


@pytest.fixture()
async def client(control_plane: ControlPlane) -> AsyncIterator[RESTClient]:
    async with RESTClient(load_kubeconfig(control_plane.kubeconfig)) as rest:
        yield rest


def identity(control_plane: ControlPlane, user: str, **overrides: Any) -> ClientConfig:
    """A config for a client certificate of `user` (no groups, so RBAC grants it nothing)."""
    pki_dir = control_plane.workdir / "pki"
    pair = pki.ensure_client_cert(pki_dir, pki.ensure_ca(pki_dir), user, user=user)
    return ClientConfig(control_plane.url, ca_file=str(control_plane.ca_file), cert_file=str(pair.cert_path),
                        key_file=str(pair.key_path), **overrides)


async def compact_etcd(control_plane: ControlPlane) -> None:
    storage = await EtcdStorage.connect([control_plane.etcd.endpoint])
    try:
        await storage.compact(await storage.current_revision())
    finally:
        await storage.close()


async def test_create_get_list_update_delete(client: RESTClient, namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap("a", {"app": "x"}, k="1"), namespace)
    await client.create(CONFIGMAPS, configmap("b", k="2"), namespace)
    assert created["metadata"]["namespace"] == namespace and created["metadata"]["uid"]
    assert (await client.get(CONFIGMAPS, "a", namespace))["data"] == {"k": "1"}
    listed = await client.list(CONFIGMAPS, namespace, label_selector="app=x")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a"] and listed["kind"] == "ConfigMapList"
    created["data"] = {"k": "changed"}
    updated = await client.update(CONFIGMAPS, created)
    assert updated["data"] == {"k": "changed"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    await client.delete(CONFIGMAPS, "a", namespace)
    with pytest.raises(errors.NotFound, match='configmaps "a" not found') as caught:
        await client.get(CONFIGMAPS, "a", namespace)
    assert (caught.value.code, caught.value.reason, caught.value.details["name"]) == (404, "NotFound", "a")


async def test_cluster_scoped_resources_need_no_namespace(client: RESTClient, namespace: str) -> None:
    got = await client.get(NAMESPACES, namespace)
    assert got["metadata"]["name"] == namespace and got["kind"] == "Namespace"
    node = await client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n-{namespace}"}})
    assert "namespace" not in node["metadata"]
    await client.delete(NODES, node["metadata"]["name"])


@pytest.mark.parametrize(("patch_type", "body", "expected"), [
    ("merge", {"data": {"b": "2", "a": None}}, {"b": "2"}),
    ("strategic", {"data": {"b": "2"}}, {"a": "1", "b": "2"}),
    ("json", [{"op": "replace", "path": "/data/a", "value": "9"}], {"a": "9"}),
    ("apply", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}, "data": {"c": "3"}},
     {"a": "1", "c": "3"}),
], ids=["a merge patch removes keys set to null", "a strategic merge patch merges maps",
        "a JSON patch replaces a value", "server-side apply adds the applier's fields"])
async def test_patch_types(client: RESTClient, namespace: str, patch_type: str, body: Any,
                           expected: dict[str, str]) -> None:
    await client.create(CONFIGMAPS, configmap("p", a="1"), namespace)
    patched = await client.patch(CONFIGMAPS, "p", body, namespace, patch_type=patch_type, field_manager="tester",
                                 force=patch_type == "apply")
    assert patched["data"] == expected


async def test_binding_is_created_through_the_pods_binding_subresource(client: RESTClient, namespace: str) -> None:
    await client.create(PODS, pod("web"), namespace)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    await client.create(PODS, binding, namespace, name="web", subresource="binding")
    assert (await client.get(PODS, "web", namespace))["spec"]["nodeName"] == "node-1"
    with pytest.raises(errors.Conflict):
        await client.create(PODS, binding, namespace, name="web", subresource="binding")


async def test_status_subresource_update_and_dry_run(client: RESTClient, namespace: str) -> None:
    created = await client.create(PODS, pod("s"), namespace)
    created["status"] = {"phase": "Running"}
    assert (await client.update(PODS, created, subresource="status"))["status"]["phase"] == "Running"
    await client.create(CONFIGMAPS, configmap("dry"), namespace, dry_run=True)
    with pytest.raises(errors.NotFound):
        await client.get(CONFIGMAPS, "dry", namespace)


async def test_server_errors_map_to_typed_exceptions(client: RESTClient, namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap("c", v="1"), namespace)
    with pytest.raises(errors.AlreadyExists) as exists:
        await client.create(CONFIGMAPS, configmap("c"), namespace)
    assert exists.value.code == 409 and not isinstance(exists.value, errors.Conflict)
    await client.patch(CONFIGMAPS, "c", {"data": {"v": "2"}}, namespace)
    with pytest.raises(errors.Conflict, match="the object has been modified"):
        await client.update(CONFIGMAPS, created)
    with pytest.raises(errors.Invalid) as invalid:
        await client.create(CONFIGMAPS, configmap("Not_A_Name"), namespace)
    assert invalid.value.code == 422 and invalid.value.details["causes"]
    with pytest.raises(errors.BadRequest):
        await client.list(CONFIGMAPS, namespace, label_selector="a in (")
    with pytest.raises(errors.NotFound, match="could not find the requested resource"):
        await client.list(Resource("example.com", "v1", "Widget", "widgets"), namespace)


async def test_a_user_without_permissions_gets_forbidden(control_plane: ControlPlane, namespace: str) -> None:
    async with RESTClient(identity(control_plane, "nobody")) as rest:
        with pytest.raises(errors.Forbidden, match='User "nobody" cannot list resource "configmaps"') as caught:
            await rest.list(CONFIGMAPS, namespace)
        assert caught.value.code == 403 and caught.value.reason == "Forbidden"


async def test_an_unknown_token_is_unauthorized(control_plane: ControlPlane) -> None:
    config = ClientConfig(control_plane.url, ca_file=str(control_plane.ca_file), token="not-a-token")
    async with RESTClient(config) as rest:
        with pytest.raises(errors.Unauthorized) as caught:
            await rest.get(NAMESPACES, "default")
        assert caught.value.code == 401


async def test_a_token_file_authenticates_as_its_service_account(client: RESTClient, control_plane: ControlPlane,
                                                                 namespace: str, tmp_path: Any) -> None:
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}
    sa = SERVICE_ACCOUNTS
    await client.create(sa, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}, namespace)
    token = (await client.create(sa, request, namespace, name="robot", subresource="token"))["status"]["token"]
    (tmp_path / "token").write_text(token)
    config = ClientConfig(control_plane.url, ca_file=str(control_plane.ca_file), token_file=str(tmp_path / "token"))
    async with RESTClient(config) as rest:
        with pytest.raises(errors.Forbidden, match=f"system:serviceaccount:{namespace}:robot"):
            await rest.list(CONFIGMAPS, namespace)


async def test_the_user_agent_names_the_default_field_manager(control_plane: ControlPlane, namespace: str) -> None:
    config = dataclasses.replace(load_kubeconfig(control_plane.kubeconfig), user_agent="mkpy-test/v0.1.0")
    async with RESTClient(config) as rest:
        created = await rest.create(CONFIGMAPS, configmap("ua"), namespace)
    assert created["metadata"]["managedFields"][0]["manager"] == "mkpy-test"


async def test_paging_follows_continue_tokens(client: RESTClient, namespace: str) -> None:
    for i in range(5):
        await client.create(CONFIGMAPS, configmap(f"page-{i}", {"paged": "yes"}), namespace)
    names, token, pages = [], "", 0
    while True:
        page = await client.list(CONFIGMAPS, namespace, label_selector="paged=yes", limit=2, continue_=token)
        names += [item["metadata"]["name"] for item in page["items"]]
        pages += 1
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"page-{i}" for i in range(5)] and pages == 3


async def test_qps_throttles_requests(control_plane: ControlPlane) -> None:
    config = dataclasses.replace(load_kubeconfig(control_plane.kubeconfig), qps=10.0, burst=1)
    async with RESTClient(config) as rest:
        started = time.monotonic()
        await asyncio.gather(*(rest.get(NAMESPACES, "default") for _ in range(4)))
    assert time.monotonic() - started >= 0.3  # the burst of one, then one every 0.1 s


async def test_watch_streams_changes_after_a_resource_version(client: RESTClient, namespace: str) -> None:
    rv = (await client.list(CONFIGMAPS, namespace))["metadata"]["resourceVersion"]
    events: list[WatchEvent] = []

    async def watch() -> None:
        async for event in client.watch(CONFIGMAPS, namespace, resource_version=rv, label_selector="w=1",
                                        timeout_seconds=30):
            if event.type != "BOOKMARK":
                events.append(event)
            if len(events) == 3:
                return

    watcher = asyncio.create_task(watch())
    await client.create(CONFIGMAPS, configmap("w", {"w": "1"}), namespace)
    await client.patch(CONFIGMAPS, "w", {"data": {"x": "y"}}, namespace)
    await client.delete(CONFIGMAPS, "w", namespace)
    await asyncio.wait_for(watcher, 10)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    assert events[1].object["data"] == {"x": "y"}


async def test_watch_ends_cleanly_when_the_server_closes_it(client: RESTClient, namespace: str) -> None:
    started = time.monotonic()
    events = [event async for event in client.watch(CONFIGMAPS, namespace, resource_version="",
                                                    label_selector="none=here", timeout_seconds=1)]
    assert all(event.type == "BOOKMARK" for event in events) and time.monotonic() - started < 10


async def test_an_idle_watch_gets_bookmarks_with_a_resource_version(client: RESTClient, namespace: str) -> None:
    rv = (await client.list(CONFIGMAPS, namespace))["metadata"]["resourceVersion"]
    async with contextlib.aclosing(client.watch(CONFIGMAPS, namespace, resource_version=rv, label_selector="idle=1",
                                                timeout_seconds=20)) as events:
        event = await asyncio.wait_for(anext(events), 15)  # etcd reports progress every 5 s
    assert event.type == "BOOKMARK" and int(event.object["metadata"]["resourceVersion"]) >= int(rv)


async def test_watch_from_a_compacted_resource_version_raises_gone(client: RESTClient, control_plane: ControlPlane,
                                                                   namespace: str) -> None:
    await client.create(CONFIGMAPS, configmap("old"), namespace)
    await client.create(CONFIGMAPS, configmap("new"), namespace)
    await compact_etcd(control_plane)
    with pytest.raises(errors.Gone) as caught:
        async for _ in client.watch(CONFIGMAPS, namespace, resource_version="1", timeout_seconds=5):
            pass
    assert caught.value.code == 410 and isinstance(caught.value, errors.Expired)


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: c.patch(CONFIGMAPS, "x", {}, "default", patch_type="yaml"), "unknown patch type 'yaml'"),
    (lambda c: c.get(CONFIGMAPS, "x"), "configmaps are namespaced: a namespace is required"),
    (lambda c: c.update(CONFIGMAPS, {"metadata": {}}, "default"), "the object has no metadata.name"),
], ids=["an unknown patch type", "a namespaced get without a namespace", "an update of an object without a name"])
async def test_bad_calls_fail_before_reaching_the_server(client: RESTClient, call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await call(client)


async def test_an_unreachable_server_raises_a_transport_error(control_plane: ControlPlane) -> None:
    config = dataclasses.replace(load_kubeconfig(control_plane.kubeconfig), server="https://127.0.0.1:1")
    async with RESTClient(config) as rest:
        with pytest.raises(errors.ConnectError):
            await rest.get(NAMESPACES, "default")


@pytest.mark.parametrize(("code", "body", "cls", "message"), [
    (409, b'{"kind":"Status","code":409,"reason":"AlreadyExists","message":"x exists"}', errors.AlreadyExists,
     "x exists"),
    (410, b'{"kind":"Status","code":410,"reason":"Expired","message":"too old"}', errors.Expired, "too old"),
    (503, b"", errors.ServiceUnavailable, "currently unable to handle the request"),
    (502, b"<html>bad gateway</html>", errors.APIStatusError, "status 502 (<html>bad gateway</html>)"),
    (504, b'{"kind":"Status","code":504,"reason":"Timeout","message":"slow"}', errors.ServerTimeout, "slow"),
    (404, b"not json", errors.NotFound, "could not find the requested resource"),
], ids=["a 409 AlreadyExists is not a Conflict", "410 Expired is a kind of Gone",
        "an empty 503 gets the code's message", "an unknown code with an HTML body keeps the body's text",
        "a 504 Timeout is a ServerTimeout", "a 404 that is not a Status still is NotFound"])
def test_responses_become_typed_errors(code: int, body: bytes, cls: type[errors.APIStatusError],
                                       message: str) -> None:
    err = errors.from_response(code, body)
    assert type(err) is cls and err.code == code and message in str(err)

"""Events expire (`--event-ttl`), through either API that serves them, and other objects do not: an
apiserver of its own with a 2-second TTL, on its own etcd."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from aetcd import rpc

from minikube_py.store.etcd import grpc_target
from tests.harness import ControlPlane

EXPIRY_DEADLINE = 15  # seconds an Event with a 2 s TTL may take to go, generously
EVENTS = "/api/v1/namespaces/default/events"
NEW_EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


@pytest.fixture(scope="module")
def short_lived() -> Iterator[ControlPlane]:
    cp = ControlPlane(extra_args=("--event-ttl=2s",), controllers="").start()
    try:
        yield cp
    finally:
        cp.stop()


def lease_of(cp: ControlPlane, key: str) -> int:
    """The etcd lease `key` is attached to (0: none), read straight from etcd."""
    async def read() -> int:
        async with grpc.aio.insecure_channel(await grpc_target(cp.etcd_endpoints)) as channel:
            response = await rpc.KVStub(channel).Range(rpc.RangeRequest(key=key.encode()))
        assert response.kvs, f"{key} is not in etcd"
        return int(response.kvs[0].lease)

    return asyncio.run(read())


def core_event(name: str) -> dict:
    return {"metadata": {"name": name}, "reason": "Tested", "message": "expires", "type": "Normal",
            "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "settings"}}


def new_event(name: str) -> dict:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "tests.mkpy.io/ttl",
            "reportingInstance": "test", "action": "Testing", "reason": "Tested", "type": "Normal",
            "regarding": {"kind": "ConfigMap", "namespace": "default", "name": "settings"}}


def deleted_names(api: httpx.Client, resource_version: str, expected: set[str]) -> set[str]:
    """The names a watch of the default namespace's events sees DELETED, until all `expected` are seen or
    the deadline ends the stream."""
    seen: set[str] = set()
    params = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": str(EXPIRY_DEADLINE)}
    with api.stream("GET", EVENTS, params=params, timeout=EXPIRY_DEADLINE + 10) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            event = json.loads(line)
            if event["type"] == "DELETED":
                seen.add(event["object"]["metadata"]["name"])
            if seen >= expected:
                break
    return seen


def test_events_of_both_apis_expire_and_watchers_see_them_deleted(short_lived: ControlPlane) -> None:
    with short_lived.client() as api:
        r = api.post(EVENTS, json=core_event("core"))
        assert r.status_code == 201, r.text
        start = r.json()["metadata"]["resourceVersion"]
        r = api.patch(f"{EVENTS}/core", json={"message": "patched"},  # an update is attached to a lease too
                      headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text
        r = api.post(NEW_EVENTS, json=new_event("new"))
        assert r.status_code == 201, r.text
        assert api.get(f"{EVENTS}/core").status_code == 200
        assert api.get(f"{NEW_EVENTS}/new").status_code == 200

        assert deleted_names(api, start, {"core", "new"}) == {"core", "new"}
        assert api.get(f"{EVENTS}/core").status_code == 404
        assert api.get(f"{NEW_EVENTS}/new").status_code == 404


def test_an_event_is_on_a_lease_and_a_configmap_is_not(short_lived: ControlPlane) -> None:
    with short_lived.client() as api:
        r = api.post(EVENTS, json=core_event("leased"))
        assert r.status_code == 201, r.text
        assert lease_of(short_lived, "/registry/events/default/leased") != 0
        r = api.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "kept"}})
        assert r.status_code == 201, r.text
        assert lease_of(short_lived, "/registry/configmaps/default/kept") == 0
        deadline = time.monotonic() + EXPIRY_DEADLINE
        while api.get(f"{EVENTS}/leased").status_code != 404:
            assert time.monotonic() < deadline, "the event never expired"
            time.sleep(0.2)
        assert api.get("/api/v1/namespaces/default/configmaps/kept").status_code == 200

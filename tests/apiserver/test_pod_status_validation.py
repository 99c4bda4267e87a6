"""Writes to pods/<name>/status through the real apiserver: kube's ValidatePodStatusUpdate, not the whole
Pod update validation."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson

from minikube_py.store.etcd import EtcdStorage
from tests.harness import ControlPlane

T = "2025-01-01T00:00:00Z"
MERGE = {"Content-Type": "application/merge-patch+json"}


def pods_url(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


def create_pod(api: httpx.Client, ns: str, name: str, restart_policy: str = "Always") -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": restart_policy, "containers": [{"name": "app", "image": "nginx:1.27"}]}}
    r = api.post(pods_url(ns), json=body)
    assert r.status_code == 201, r.text
    return r.json()


def patch_status(api: httpx.Client, ns: str, name: str, status: dict[str, Any]) -> httpx.Response:
    return api.patch(f"{pods_url(ns, name)}/status", content=orjson.dumps({"status": status}), headers=MERGE)


def app_status(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "app", "image": "nginx:1.27", "imageID": "", "ready": False, "restartCount": 0,
             "state": state}]


def assert_invalid(r: httpx.Response, name: str, causes: list[tuple[str, str]]) -> None:
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["reason"] == "Invalid"
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == causes
    shown = ", ".join(f"{field}: {message}" for field, message in causes)
    assert body["message"] == f'Pod "{name}" is invalid: ' + (f"[{shown}]" if len(causes) > 1 else shown)


def test_a_terminated_container_of_a_never_pod_may_not_run_again(api: httpx.Client, namespace: str) -> None:
    create_pod(api, namespace, "once", "Never")
    done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": T, "finishedAt": T}}
    assert patch_status(api, namespace, "once", {"containerStatuses": app_status(done)}).status_code == 200
    r = patch_status(api, namespace, "once", {"containerStatuses": app_status({"running": {"startedAt": T}})})
    assert_invalid(r, "once", [("status.containerStatuses[0].state",
                                "Forbidden: may not be transitioned to non-terminated state")])


def test_bad_pod_ips_and_nominated_node_are_refused(api: httpx.Client, namespace: str) -> None:
    create_pod(api, namespace, "ips")
    r = patch_status(api, namespace, "ips", {"podIP": "10.0.0.300", "nominatedNodeName": "Node_1"})
    assert r.status_code == 422, r.text
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["status.nominatedNodeName", "status.podIPs[0]"]
    r = patch_status(api, namespace, "ips", {"podIP": "10.0.0.3", "podIPs": [{"ip": "10.0.0.3"}, {"ip": "10.0.0.3"}]})
    assert_invalid(r, "ips", [
        ("status.podIPs", 'Invalid value: []core.PodIP{core.PodIP{IP:"10.0.0.3"}, core.PodIP{IP:"10.0.0.3"}}: '
                          "may specify no more than one IP for each IP family"),
        ("status.podIPs[1]", 'Duplicate value: core.PodIP{IP:"10.0.0.3"}')])


def test_a_kubelet_status_report_is_stored_and_leaves_the_spec_alone(api: httpx.Client, namespace: str) -> None:
    created = create_pod(api, namespace, "kubelet")
    status = {"phase": "Running", "hostIP": "192.168.1.10", "hostIPs": [{"ip": "192.168.1.10"}],
              "podIP": "10.244.1.7", "podIPs": [{"ip": "10.244.1.7"}], "startTime": T,
              "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": T}
                             for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")],
              "containerStatuses": app_status({"running": {"startedAt": T}})}
    r = api.patch(f"{pods_url(namespace, 'kubelet')}/status", headers=MERGE,
                  content=orjson.dumps({"spec": {"activeDeadlineSeconds": 5}, "status": status}))
    assert r.status_code == 200, r.text
    stored = api.get(pods_url(namespace, "kubelet")).json()
    assert stored["spec"] == created["spec"]
    assert stored["status"]["podIP"] == "10.244.1.7" and stored["status"]["phase"] == "Running"


def test_a_status_write_does_not_revalidate_a_stored_spec(api: httpx.Client, namespace: str,
                                                          control_plane: ControlPlane) -> None:
    """A Pod stored before a spec rule existed (here: an image with whitespace) still reports its status."""
    create_pod(api, namespace, "legacy")
    store_with_image(control_plane, f"/registry/pods/{namespace}/legacy", " nginx:1.27")
    r = patch_status(api, namespace, "legacy", {"containerStatuses": app_status({"running": {"startedAt": T}})})
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["containers"][0]["image"] == " nginx:1.27"
    spec_write = api.patch(pods_url(namespace, "legacy"), headers=MERGE,
                           content=orjson.dumps({"metadata": {"labels": {"a": "b"}}}))
    assert spec_write.status_code == 422 and "spec.containers[0].image" in spec_write.text


def store_with_image(cp: ControlPlane, key: str, image: str) -> None:
    """Rewrite the stored Pod behind the apiserver's back, as an older apiserver could have stored it."""
    async def rewrite() -> None:
        storage = await EtcdStorage.connect(cp.etcd_endpoints)
        try:
            kv = await storage.get(key)
            assert kv is not None, key
            pod = orjson.loads(kv.value)
            pod["spec"]["containers"][0]["image"] = image
            await storage.update(key, orjson.dumps(pod), expected_revision=kv.mod_revision)
        finally:
            await storage.close()

    asyncio.run(rewrite())

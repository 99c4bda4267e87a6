"""The pod lifecycle on a simulated node: a real apiserver, `mkpy kubelet` and `mkpy fake-cri` processes.

The fake runtime's containers run without processes; pod annotations script them
(`fake.cri.mkpy.dev/exit-code.<container>`, `run-seconds`, `start-error`), so every path of the kubelet's
sync loop (exits, restarts, back-off, init containers, image and config errors, deletion) is exercised as
it would be on containerd.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx

from tests.kubelet.nodes import FakeNode, eventually

FAKE = "fake.cri.mkpy.dev/"


def make_pod(name: str, node: str = "sim-1", containers: list[dict[str, Any]] | None = None,
             annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "containers": containers or [{"name": "main", "image": "busybox"}], **spec}}


def create(api: httpx.Client, namespace: str, pod: dict[str, Any]) -> dict[str, Any]:
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod)
    assert response.status_code == 201, response.text
    return response.json()


def get(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    response = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_phase(api: httpx.Client, namespace: str, name: str, phase: str, timeout: float = 15) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pod = get(api, namespace, name)
        return pod if pod["status"].get("phase") == phase else None
    return eventually(check, timeout, message=f"pod {name} to be {phase}")


def container_status(pod: dict[str, Any], name: str = "main", init: bool = False) -> dict[str, Any]:
    key = "initContainerStatuses" if init else "containerStatuses"
    return next(s for s in pod["status"].get(key) or [] if s["name"] == name)


def wait_waiting(api: httpx.Client, namespace: str, name: str, reason: str, timeout: float = 15,
                 container: str = "main") -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pod = get(api, namespace, name)
        statuses = pod["status"].get("containerStatuses") or []
        status = next((s for s in statuses if s["name"] == container), None)
        waiting = (status or {}).get("state", {}).get("waiting") or {}
        return waiting if waiting.get("reason") == reason else None
    return eventually(check, timeout, message=f"container {container} of {name} waiting with {reason}")


def events(api: httpx.Client, namespace: str, name: str) -> list[dict[str, Any]]:
    response = api.get(f"/api/v1/namespaces/{namespace}/events",
                       params={"fieldSelector": f"involvedObject.name={name}"})
    return response.json()["items"]


def test_node_registers_with_capacity_conditions_and_a_lease(api: httpx.Client, fake_node: FakeNode) -> None:
    node = api.get(f"/api/v1/nodes/{fake_node.name}").json()
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == fake_node.name
    assert labels["kubernetes.io/os"] == "linux"
    assert "podCIDR" not in node["spec"]  # node-ipam's to write (not running here); the kubelet only reads it
    status = node["status"]
    assert set(status["capacity"]) >= {"cpu", "memory", "pods", "ephemeral-storage"}
    assert status["capacity"]["pods"] == "110"
    assert [c["type"] for c in status["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert status["nodeInfo"]["containerRuntimeVersion"].startswith("fake://")
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.32")
    assert {"type": "Hostname", "address": fake_node.name} in status["addresses"]
    assert any("docker.io/library/busybox:latest" in image["names"] for image in status["images"])
    lease_url = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{fake_node.name}"
    # the heartbeat writes the Lease on its own schedule, which need not come before the Ready status
    lease = eventually(lambda: (got := api.get(lease_url)).status_code == 200 and got.json(), 10,
                       message="the node's Lease")
    assert lease["spec"]["holderIdentity"] == fake_node.name
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    # The heartbeat: the Lease is renewed every quarter of its duration (10 s). The Node's status is
    # reported only on a change or every minute (nodestatus' own tests show that part).
    first_renewal = lease["spec"]["renewTime"]
    eventually(lambda: api.get(lease_url).json()["spec"]["renewTime"] != first_renewal, 15, interval=0.5,
               message="a renewal of the node's Lease")


def test_running_pod_reports_ips_conditions_and_events(api: httpx.Client, namespace: str,
                                                       fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("web"))
    pod = wait_phase(api, namespace, "web", "Running")
    status = pod["status"]
    assert status["podIP"].startswith("10.244.1.")
    assert status["hostIP"] == "127.0.0.1"
    assert status["qosClass"] == "BestEffort"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"PodScheduled": "True", "PodReadyToStartContainers": "True", "Initialized": "True",
                          "ContainersReady": "True", "Ready": "True"}
    main = container_status(pod)
    assert main["ready"] and main["started"] and main["restartCount"] == 0
    assert main["containerID"].startswith("fake://")
    assert "running" in main["state"]
    reasons = eventually(lambda: {e["reason"] for e in events(api, namespace, "web")} >= {"Pulled", "Created", "Started"}
                         and {e["reason"] for e in events(api, namespace, "web")}, message="kubelet events")
    assert "Started" in reasons
    started = next(e for e in events(api, namespace, "web") if e["reason"] == "Started")
    assert started["source"] == {"component": "kubelet", "host": fake_node.name}
    assert started["involvedObject"]["fieldPath"] == "spec.containers{main}"


def test_exit_codes_decide_the_phase(api: httpx.Client, namespace: str, fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("ok", restartPolicy="Never", annotations={f"{FAKE}exit-code.main": "0"}))
    create(api, namespace, make_pod("bad", restartPolicy="Never", annotations={f"{FAKE}exit-code.main": "3"}))
    create(api, namespace, make_pod("once", restartPolicy="OnFailure", annotations={f"{FAKE}exit-code.main": "0"}))
    ok = wait_phase(api, namespace, "ok", "Succeeded")
    terminated = container_status(ok)["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    ready = {c["type"]: c for c in ok["status"]["conditions"]}["Ready"]
    assert ready["status"] == "False" and ready["reason"] == "PodCompleted"
    bad = wait_phase(api, namespace, "bad", "Failed")
    terminated = container_status(bad)["state"]["terminated"]
    assert terminated["exitCode"] == 3 and terminated["reason"] == "Error"
    once = wait_phase(api, namespace, "once", "Succeeded")
    assert container_status(once)["restartCount"] == 0


def watch_steps(api: httpx.Client, namespace: str, pod: dict[str, Any], until: str,
                timeout: float = 20) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """What a watch on `pod` (from its creation) sees container main go through, up to the state `until`, as
    `kubectl get pods -w` shows it: (the state's reason, or Running, and the restart count), repeats dropped.
    Also the pod as the watch last saw it."""
    steps: list[tuple[str, int]] = []
    params = {"watch": "true", "fieldSelector": f"metadata.name={pod['metadata']['name']}",
              "resourceVersion": pod["metadata"]["resourceVersion"], "timeoutSeconds": str(int(timeout))}
    with api.stream("GET", f"/api/v1/namespaces/{namespace}/pods", params=params, timeout=timeout + 5) as response:
        for line in response.iter_lines():
            seen = json.loads(line)["object"]
            statuses = seen["status"].get("containerStatuses") or []
            if not statuses:
                continue
            (kind, state), = statuses[0]["state"].items()
            current = (state.get("reason", kind.capitalize()), statuses[0]["restartCount"])
            if not steps or steps[-1] != current:
                steps.append(current)
            if current[0] == until:
                return steps, seen
    raise AssertionError(f"container main never reached {until} within {timeout} s; it went {steps}")


def test_crashing_container_restarts_with_crash_loop_back_off(api: httpx.Client, namespace: str,
                                                              fake_node: FakeNode) -> None:
    created = create(api, namespace, make_pod("crash", annotations={f"{FAKE}exit-code.main": "1",
                                                                    f"{FAKE}run-seconds.main": "0.5"}))
    # Each exit shows as Error first; the first restart is at once, the second waits 10 s of CrashLoopBackOff.
    steps, pod = watch_steps(api, namespace, created, "CrashLoopBackOff")
    assert steps == [("ContainerCreating", 0), ("Running", 0), ("Error", 0), ("Running", 1), ("Error", 1),
                     ("CrashLoopBackOff", 1)]
    main = container_status(pod)
    assert main["state"]["waiting"]["message"].startswith("back-off 10s restarting failed container=main pod=crash_")
    assert main["restartCount"] == 1
    assert main["lastState"]["terminated"]["exitCode"] == 1
    assert pod["status"]["phase"] == "Running"
    began = time.monotonic()
    eventually(lambda: container_status(get(api, namespace, "crash"))["restartCount"] >= 2, 20,
               message="the restart after the back-off")
    assert time.monotonic() - began > 5  # it waited for the back-off rather than restarting at once
    assert any(e["reason"] == "BackOff" for e in events(api, namespace, "crash"))


def test_init_containers_run_in_order_before_the_app(api: httpx.Client, namespace: str,
                                                     fake_node: FakeNode) -> None:
    pod = make_pod("init", annotations={f"{FAKE}exit-code.first": "0", f"{FAKE}run-seconds.first": "0.5",
                                        f"{FAKE}exit-code.second": "0", f"{FAKE}run-seconds.second": "0.5"},
                   initContainers=[{"name": "first", "image": "busybox"}, {"name": "second", "image": "busybox"}])
    create(api, namespace, pod)
    seen = eventually(lambda: _init_progress(get(api, namespace, "init")), 10, message="the first init running")
    assert seen == "first"
    running = wait_phase(api, namespace, "init", "Running")
    first = container_status(running, "first", init=True)["state"]["terminated"]
    second = container_status(running, "second", init=True)["state"]["terminated"]
    app = container_status(running)["state"]["running"]
    assert first["finishedAt"] <= second["startedAt"] and second["finishedAt"] <= app["startedAt"]


def _init_progress(pod: dict[str, Any]) -> str | None:
    for status in pod["status"].get("initContainerStatuses") or []:
        if "running" in status["state"]:
            assert all("waiting" in s["state"] for s in pod["status"]["containerStatuses"])
            return str(status["name"])
    return None


def test_failed_init_container_fails_a_never_restart_pod(api: httpx.Client, namespace: str,
                                                         fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("init-fail", restartPolicy="Never",
                                    annotations={f"{FAKE}exit-code.setup": "2"},
                                    initContainers=[{"name": "setup", "image": "busybox"}]))
    pod = wait_phase(api, namespace, "init-fail", "Failed")
    assert container_status(pod, "setup", init=True)["state"]["terminated"]["exitCode"] == 2
    assert "running" not in container_status(pod)["state"]


def test_missing_image_is_err_image_pull_then_image_pull_back_off(api: httpx.Client, namespace: str,
                                                                  fake_node: FakeNode) -> None:
    image = "registry.example.invalid/team/app:1.0"
    create(api, namespace, make_pod("noimage", containers=[{"name": "main", "image": image}]))
    # ErrImagePull shows until the next sync (at once: the status update itself triggers one), then
    # ImagePullBackOff for 10 s before the next attempt, then ErrImagePull again, 20 s of back-off, ...
    waiting = wait_waiting(api, namespace, "noimage", "ImagePullBackOff")
    assert waiting["message"] == f'Back-off pulling image "{image}"'
    failed = [e["message"] for e in events(api, namespace, "noimage") if e["reason"] == "Failed"]
    assert any(f'Failed to pull image "{image}"' in message and "mkpy image load" in message for message in failed)
    assert "Error: ErrImagePull" in failed
    assert get(api, namespace, "noimage")["status"]["phase"] == "Pending"


def test_image_never_pulled_with_policy_never(api: httpx.Client, namespace: str, fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("never", containers=[{"name": "main", "image": "example.com/app:2",
                                                          "imagePullPolicy": "Never"}]))
    waiting = wait_waiting(api, namespace, "never", "ErrImageNeverPull")
    assert waiting["message"] == 'Container image "example.com/app:2" is not present with pull policy of Never'


def test_missing_config_map_key_is_create_container_config_error(api: httpx.Client, namespace: str,
                                                                 fake_node: FakeNode) -> None:
    container = {"name": "main", "image": "busybox",
                 "env": [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}]}
    create(api, namespace, make_pod("cfg", containers=[container]))
    waiting = wait_waiting(api, namespace, "cfg", "CreateContainerConfigError")
    assert waiting["message"] == 'configmap "settings" not found'
    api.post(f"/api/v1/namespaces/{namespace}/configmaps",
             json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"x": "1"}})
    eventually(lambda: (w := _waiting(get(api, namespace, "cfg"))) and "couldn't find key mode" in w.get("message", ""),
               15, message="the missing key named")
    assert _waiting(get(api, namespace, "cfg"))["message"] == f"couldn't find key mode in ConfigMap {namespace}/settings"
    api.patch(f"/api/v1/namespaces/{namespace}/configmaps/settings", json={"data": {"mode": "fast"}},
              headers={"Content-Type": "application/merge-patch+json"})
    wait_phase(api, namespace, "cfg", "Running")


def _waiting(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = pod["status"].get("containerStatuses") or []
    return (statuses[0]["state"].get("waiting") or {}) if statuses else {}


def test_start_failure_is_run_container_error(api: httpx.Client, namespace: str, fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("nostart", restartPolicy="Never",
                                    annotations={f"{FAKE}start-error.main": 'exec: "nosuchcmd": executable file '
                                                                            "not found in $PATH"}))
    def failed() -> bool:
        pod = get(api, namespace, "nostart")
        return any(e["reason"] == "Failed" and "nosuchcmd" in e["message"] for e in events(api, namespace, "nostart")) \
            and pod["status"]["phase"] in ("Pending", "Failed")
    eventually(failed, 15, message="the start failure reported")


def test_graceful_delete_stops_containers_and_removes_the_pod(api: httpx.Client, namespace: str,
                                                              fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("gone"))
    wait_phase(api, namespace, "gone", "Running")
    response = api.delete(f"/api/v1/namespaces/{namespace}/pods/gone")
    assert response.status_code == 200
    assert response.json()["metadata"]["deletionTimestamp"]
    eventually(lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/gone").status_code == 404, 15,
               message="the kubelet to delete the pod for good")
    reasons = [e["reason"] for e in events(api, namespace, "gone")]
    assert "Killing" in reasons


def test_config_map_and_secret_volumes_are_written_and_updated_live(api: httpx.Client, namespace: str,
                                                                    fake_node: FakeNode) -> None:
    api.post(f"/api/v1/namespaces/{namespace}/configmaps",
             json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"greeting": "hello"}})
    api.post(f"/api/v1/namespaces/{namespace}/secrets",
             json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                   "data": {"password": base64.b64encode(b"s3cret").decode()}})
    volumes = [{"name": "config", "configMap": {"name": "app"}}, {"name": "creds", "secret": {"secretName": "creds"}},
               {"name": "info", "downwardAPI": {"items": [{"path": "labels",
                                                            "fieldRef": {"fieldPath": "metadata.labels"}}]}},
               {"name": "scratch", "emptyDir": {}}]
    pod = make_pod("vols", volumes=volumes)
    pod["metadata"]["labels"] = {"app": "vols"}
    uid = create(api, namespace, pod)["metadata"]["uid"]
    wait_phase(api, namespace, "vols", "Running")
    base = fake_node.dir / "kubelet" / "pods" / uid / "volumes"
    assert (base / "kubernetes.io~configmap" / "config" / "greeting").read_text() == "hello"
    assert (base / "kubernetes.io~secret" / "creds" / "password").read_bytes() == b"s3cret"
    assert (base / "kubernetes.io~downward-api" / "info" / "labels").read_text() == 'app="vols"'
    assert (base / "kubernetes.io~empty-dir" / "scratch").is_dir()
    api.patch(f"/api/v1/namespaces/{namespace}/configmaps/app", json={"data": {"greeting": "bonjour"}},
              headers={"Content-Type": "application/merge-patch+json"})
    eventually(lambda: (base / "kubernetes.io~configmap" / "config" / "greeting").read_text() == "bonjour", 20,
               message="the configMap change in the volume")
    api.delete(f"/api/v1/namespaces/{namespace}/pods/vols")
    eventually(lambda: not (fake_node.dir / "kubelet" / "pods" / uid).exists(), 15,
               message="the pod's volumes removed")


def test_a_restarted_kubelet_adopts_running_pods_without_restarting_them(api: httpx.Client, namespace: str,
                                                                        fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("steady"))
    before = container_status(wait_phase(api, namespace, "steady", "Running"))
    assert fake_node.kubelet is not None
    fake_node.kubelet.stop()
    fake_node.start_kubelet()
    fake_node.wait_ready(api)
    create(api, namespace, make_pod("after"))  # the restarted kubelet is syncing pods again
    wait_phase(api, namespace, "after", "Running")
    after = container_status(get(api, namespace, "steady"))
    assert after["containerID"] == before["containerID"]
    assert after["restartCount"] == 0 and "running" in after["state"]


def test_a_kubelet_killed_mid_startup_finishes_the_pod_once_back(api: httpx.Client, namespace: str,
                                                                 fake_node: FakeNode) -> None:
    assert fake_node.kubelet is not None
    create(api, namespace, make_pod("interrupted", initContainers=[{"name": "setup", "image": "busybox"}],
                                    annotations={f"{FAKE}exit-code.setup": "0", f"{FAKE}run-seconds.setup": "1"}))
    eventually(lambda: _init_progress(get(api, namespace, "interrupted")) == "setup", 10,
               message="the init container running")
    fake_node.kubelet.stop(kill=True)
    fake_node.start_kubelet()
    pod = wait_phase(api, namespace, "interrupted", "Running", timeout=20)
    assert container_status(pod, "setup", init=True)["restartCount"] == 0
    assert container_status(pod)["restartCount"] == 0


def test_a_runtime_that_goes_away_makes_the_node_not_ready_until_it_is_back(api: httpx.Client, namespace: str,
                                                                            fake_node: FakeNode) -> None:
    create(api, namespace, make_pod("survivor"))
    before = container_status(wait_phase(api, namespace, "survivor", "Running"))["containerID"]

    def ready_condition() -> dict[str, Any]:
        node = api.get(f"/api/v1/nodes/{fake_node.name}").json()
        return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")

    fake_node.runtime.stop()
    try:
        down = eventually(lambda: (c := ready_condition())["status"] == "False" and c, 15,
                          message="the node NotReady")
        assert down["reason"] == "KubeletNotReady" and "container runtime is down" in down["message"]
    finally:
        fake_node.start_runtime()
    eventually(lambda: ready_condition()["status"] == "True", 15, message="the node Ready again")
    def node_event_reasons() -> set[str]:
        events = api.get("/api/v1/namespaces/default/events",
                         params={"fieldSelector": f"involvedObject.name={fake_node.name}"}).json()["items"]
        return {e["reason"] for e in events}
    eventually(lambda: {"Starting", "NodeHasSufficientMemory", "NodeNotReady", "NodeReady"} <= node_event_reasons(),
               10, message="the node's events")
    # The fake runtime forgot its containers (it keeps no state on disk); the pod is not lost: it runs again,
    # in a new container.
    def rerun() -> bool:
        status = container_status(get(api, namespace, "survivor"))
        return status.get("containerID") != before and "running" in status["state"]  # none while it waits
    eventually(rerun, 15, message="the pod running again in the restarted runtime")

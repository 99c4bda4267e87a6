"""`mkpy kcm` as a process against a real control plane: controllers acting as their own ServiceAccounts,
flags it refuses, and leader election between two controller managers."""

from __future__ import annotations

import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.harness import ChildProcess, ControlPlane, free_port

WAIT = 20.0
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"


def eventually(check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class KCM(ChildProcess):
    def __init__(self, cp: ControlPlane, *flags: str) -> None:
        kubeconfig = cp.component_kubeconfig("controller-manager", "system:kube-controller-manager")
        self.port = free_port()
        super().__init__([sys.executable, "-m", "minikube_py.cli.main", "kcm", f"--kubeconfig={kubeconfig}",
                          "--bind-address=127.0.0.1", f"--secure-port={self.port}", *flags],
                         cp.workdir / f"kcm-{self.port}.log")

    def healthy(self) -> bool:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/healthz", context=context, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False


def replica_set(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def pods_of(api: httpx.Client, namespace: str, app: str) -> list[dict[str, Any]]:
    r = api.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"app={app}"})
    return [p for p in r.json()["items"] if not p["metadata"].get("deletionTimestamp")]


@pytest.fixture()
def kcm(control_plane: ControlPlane) -> Any:
    """A controller manager for one test (two at once would both act: leader election is off)."""
    process = KCM(control_plane, "--leader-elect=false")
    try:
        eventually(process.healthy, "/healthz of the controller manager")
        yield process
    finally:
        process.stop()


def test_a_replica_set_gets_its_pods_written_by_its_own_service_account(kcm: KCM, api: httpx.Client,
                                                                        namespace: str) -> None:
    r = api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", json=replica_set("web", 3))
    assert r.status_code == 201, r.text
    pods = eventually(lambda: len(pods_of(api, namespace, "web")) == 3 and pods_of(api, namespace, "web"),
                      "3 pods")
    managers = {entry["manager"] for p in pods for entry in p["metadata"].get("managedFields") or []}
    assert managers == {"kube-controller-manager"}
    events = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
    created = [e for e in events if e["reason"] == "SuccessfulCreate"]
    assert created and created[0]["source"]["component"] == "replicaset-controller"
    account = api.get("/api/v1/namespaces/kube-system/serviceaccounts/replicaset-controller")
    assert account.status_code == 200
    r = api.patch(f"/apis/apps/v1/namespaces/{namespace}/replicasets/web/scale",
                  json={"spec": {"replicas": 1}}, headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    eventually(lambda: len(pods_of(api, namespace, "web")) == 1, "the scale-down to 1 pod")
    status = eventually(lambda: (s := api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets/web")
                                 .json()["status"]).get("replicas") == 1 and s, "status.replicas 1")
    assert status["observedGeneration"] == 2


@pytest.mark.parametrize("flags, message", [
    (("--controllers=*,-nosuch",), '"nosuch" is not in the list of known controllers'),
    (("--leader-elect-lease-duration=1s", "--leader-elect-renew-deadline=5s"), "leader election"),
])
def test_bad_flags_are_a_one_line_error(control_plane: ControlPlane, flags: tuple[str, ...], message: str) -> None:
    kubeconfig = control_plane.component_kubeconfig("controller-manager", "system:kube-controller-manager")
    result = subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "kcm", f"--kubeconfig={kubeconfig}",
                             "--secure-port=0", *flags], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_only_the_leader_acts_and_the_other_takes_over_when_it_dies(control_plane: ControlPlane, api: httpx.Client,
                                                                    namespace: str) -> None:
    timings = ("--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
               "--leader-elect-retry-period=0.5s", "--controllers=replicaset")
    first = KCM(control_plane, *timings)
    eventually(lambda: api.get(LEASE).json().get("spec", {}).get("holderIdentity", "").endswith(
        f"_{first.process.pid}"), "the first controller manager to lead")
    second = KCM(control_plane, *timings)
    try:
        eventually(second.healthy, "the second controller manager's /healthz")
        r = api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", json=replica_set("before", 2))
        assert r.status_code == 201, r.text
        eventually(lambda: len(pods_of(api, namespace, "before")) == 2, "the leader creating pods")
        # the standby waits for the Lease and runs no controller: the pods are the leader's alone
        assert "attempting to acquire leader lease" in second.log()
        assert "successfully acquired lease" not in second.log()
        assert "started replicaset-controller" not in second.log()
        assert "started replicaset-controller" in first.log()
        assert api.get(LEASE).json()["spec"]["holderIdentity"].endswith(f"_{first.process.pid}")
        first.stop(kill=True)  # SIGKILL: no release of the Lease, the other must wait it out
        killed_at = time.monotonic()
        eventually(lambda: api.get(LEASE).json()["spec"]["holderIdentity"].endswith(f"_{second.process.pid}"),
                   "the second controller manager to take over")
        assert time.monotonic() - killed_at < 3 + 2 * 0.5 * 2.2 + 2  # lease duration + two jittered tries + slack
        r = api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", json=replica_set("after", 2))
        assert r.status_code == 201, r.text
        eventually(lambda: len(pods_of(api, namespace, "after")) == 2, "the new leader creating pods")
        assert "started replicaset-controller" in second.log()
    finally:
        first.stop()
        second.stop()

"""The apiserver with etcd the way operators run it: several members, and history compacted periodically."""

from __future__ import annotations

import time

from minikube_py.store.etcd_server import EtcdCluster
from tests.apiserver.test_rest import configmap
from tests.harness import ControlPlane


def test_apiserver_keeps_serving_when_an_etcd_member_dies() -> None:
    cp = ControlPlane(etcd=EtcdCluster(3)).start()
    try:
        with cp.client() as api:
            api.post("/api/v1/namespaces/default/configmaps", json=configmap("before"))
            follower = next(m for m in cp.etcd.members if not m.is_leader())
            follower.kill()
            for i in range(5):
                r = api.post("/api/v1/namespaces/default/configmaps", json=configmap(f"after-{i}"))
                assert r.status_code == 201, r.text
            items = api.get("/api/v1/namespaces/default/configmaps").json()["items"]
            assert {i["metadata"]["name"] for i in items} >= {"before", "after-0", "after-4"}
    finally:
        cp.stop()


def test_periodic_compaction_expires_old_resource_versions() -> None:
    cp = ControlPlane(extra_args=("--etcd-compaction-interval=1s",)).start()
    try:
        with cp.client() as api:
            url = "/api/v1/namespaces/default/configmaps"
            api.post(url, json=configmap("old"))
            old_rv = api.get(url).json()["metadata"]["resourceVersion"]
            deadline = time.monotonic() + 15
            status = 200
            while status != 410 and time.monotonic() < deadline:
                api.post(url, json={"metadata": {"generateName": "tick-"}})
                status = api.get(url, params={"resourceVersion": old_rv, "resourceVersionMatch": "Exact"}).status_code
                time.sleep(0.2)
            assert status == 410, "history at the old revision was never compacted"
    finally:
        cp.stop()

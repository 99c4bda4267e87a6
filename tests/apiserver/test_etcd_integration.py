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


def test_concurrent_service_creates_never_share_an_address() -> None:
    from concurrent.futures import ThreadPoolExecutor

    cp = ControlPlane(extra_args=("--service-cluster-ip-range=10.0.0.0/28",
                                  "--service-node-port-range=30000-30009")).start()
    try:
        def create(i: int) -> dict:
            with cp.client() as api:
                svc = {"metadata": {"name": f"s{i}"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
                r = api.post("/api/v1/namespaces/default/services", json=svc)
                assert r.status_code in (201, 422), r.text
                return r.json()

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(create, range(16)))
        created = [r for r in results if r.get("kind") == "Service"]
        ips = [s["spec"]["clusterIP"] for s in created]
        ports = [s["spec"]["ports"][0]["nodePort"] for s in created]
        assert len(created) == 10  # ten node ports in the range; the IP range has room for thirteen
        assert len(set(ips)) == len(ips) and "10.0.0.1" not in ips
        assert len(set(ports)) == len(ports) and all(30000 <= p <= 30009 for p in ports)
        with cp.client() as api:  # the losers left nothing claimed: after deleting one, one more fits
            api.delete(f"/api/v1/namespaces/default/services/{created[0]['metadata']['name']}")
            again = create(99)
            assert again.get("kind") == "Service"
    finally:
        cp.stop()

"""Benchmark 1: Pod creates through the apiserver ÷ raw etcd create-if-absent transactions. Target ≥ 0.5.

What is measured: creates per second, closed loop, 16 concurrent clients (see common.run_load), each
creating a new ~1.5 KB JSON Pod after the previous one was acknowledged:

* apiserver: `POST /api/v1/namespaces/bench-api/pods` over HTTPS with the admin client certificate, on
  keep-alive connections. Each create is authenticated, decoded, defaulted, validated, checked against the
  namespace cache, encoded and written with one etcd transaction, and answered with the created object.
* baseline, "etcd txn": the same etcd, through the same client the apiserver uses (`EtcdStorage.create`: a
  `Txn(create_revision == 0 → put)` on one gRPC channel shared by the process's coroutines, as in the
  apiserver), with the value the apiserver stores for such a Pod (read back from etcd, so the sizes match
  byte for byte) under keys of the same length.
* for the analysis, not the target, "route + etcd create": bench/baseline_server.py, a bare Starlette
  route served like the apiserver that stores each request body with the same `EtcdStorage.create` and
  echoes it: the ceiling for any server on this stack that makes one etcd write per create.

All sides run in the same client processes and event loop style, against the same etcd, in alternating
rounds, so machine noise hits them alike; figures are medians. etcd is the tests' etcd (fast elections,
--unsafe-no-fsync): the baseline is as fast as etcd gets here, which makes the ratio a strict one. Server
CPU shares and CPU time per create are printed to show who the bottleneck was.

    python -m bench.bench_create [--seconds 3] [--rounds 4] [--concurrency 16] [--processes 1]
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bench import baseline_server
from bench.common import (
    Op,
    Side,
    admin_tls,
    compare,
    control_plane,
    create_namespace,
    create_pod,
    parse_load,
    pod_creates,
    server_pids,
    verdict,
)
from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.etcd_server import free_port

NAMESPACE = "bench-api"
RAW_PREFIX = "/registry/pods/bench-raw/"  # as long as the apiserver's "/registry/pods/bench-api/"
ROUTE_KEY = "/registry/pods/bench-bare/route"
TARGET = 0.5


@asynccontextmanager
async def etcd_creates(endpoint: str, value: bytes) -> AsyncIterator[Op]:
    storage = await EtcdStorage.connect([endpoint])
    try:
        yield lambda name: storage.create(RAW_PREFIX + name, value)
    finally:
        await storage.close()


def main() -> None:
    load, rounds = parse_load(__doc__, seconds=3.0)
    with control_plane() as cp:
        tls = admin_tls(cp)
        create_namespace(cp, NAMESPACE)
        body, value = create_pod(cp, NAMESPACE, "sample")
        port = free_port()
        route = baseline_server.start(port, (cp.serving.cert_path, cp.serving.key_path, cp.ca_file),
                                      cp.workdir / "route.log", "--etcd", cp.etcd.endpoint, "--etcd-key", ROUTE_KEY)
        try:
            print(f"bench_create: {load.concurrency} concurrent clients in {load.processes} process(es), "
                  f"{rounds} rounds of {load.seconds:g} s; request body {len(body)} B, stored value "
                  f"{len(value)} B", flush=True)
            sides = [Side("etcd txn", etcd_creates, (cp.etcd.endpoint, value)),
                     Side("route + etcd create", pod_creates, (f"https://127.0.0.1:{port}", tls, NAMESPACE)),
                     Side("apiserver", pod_creates, (cp.url, tls, NAMESPACE))]
            rates = compare(load, rounds, sides, {**server_pids(cp), "route+etcd": route.pid}, "create")
        finally:
            baseline_server.stop(route)
    print(f"  route + etcd create / etcd txn = {rates['route + etcd create'] / rates['etcd txn']:.2f} "
          f"(HTTP + the etcd client in a server, no apiserver logic)")
    verdict("create: apiserver / raw etcd txn", rates["apiserver"] / rates["etcd txn"], TARGET, at_least=True)


if __name__ == "__main__":
    main()

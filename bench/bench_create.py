"""Benchmark 1: Pod creates through the apiserver ÷ raw etcd create-if-absent transactions. Target ≥ 0.5.

What is measured: creates per second, closed loop, 16 concurrent clients (see common.run_load), each
creating a new ~1.5 KB JSON Pod after the previous one was acknowledged:

* apiserver: `POST /api/v1/namespaces/bench-api/pods` over HTTPS with the admin client certificate, on
  keep-alive connections. Each create is authenticated, decoded, defaulted, validated, checked against the
  namespace cache, encoded and written with one etcd transaction, and answered with the created object.
* baseline: the same etcd, through the same client the apiserver uses (`EtcdStorage.create`: a
  `Txn(create_revision == 0 → put)` on one gRPC channel shared by the process's coroutines, as in the
  apiserver), with the same value the apiserver stores for such a Pod (read back from etcd, so the sizes
  match byte for byte) under keys of the same length.

Both sides run in the same client processes and event loop style, against the same etcd, in alternating
rounds, so machine noise hits both alike; the figure is the ratio of the medians. etcd is the tests' etcd
(fast elections, --unsafe-no-fsync): the baseline is as fast as etcd gets here, which makes the ratio a
strict one. Server CPU shares are printed per round to show who the bottleneck was.

    python -m bench.bench_create [--seconds 4] [--rounds 3] [--concurrency 16] [--processes 1]
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson

from bench.common import (
    Measurement,
    Op,
    TLSFiles,
    admin_tls,
    connection_pool,
    control_plane,
    cpu_note,
    create_namespace,
    create_pod,
    median,
    parse_load,
    pod_body,
    run_load,
    server_pids,
    verdict,
)
from minikube_py.store.etcd import EtcdStorage

NAMESPACE = "bench-api"
RAW_PREFIX = "/registry/pods/bench-raw/"  # as long as the apiserver's "/registry/pods/bench-api/"
TARGET = 0.5
NAME_MARK = "@NAME@"


@asynccontextmanager
async def apiserver_creates(url: str, tls: TLSFiles) -> AsyncIterator[Op]:
    head, tail = orjson.dumps(pod_body(NAME_MARK)).split(NAME_MARK.encode())
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    async with connection_pool(url, tls) as pool:
        async def create(name: str) -> None:
            await pool.request("POST", path, head + name.encode() + tail, expect=201)

        yield create


@asynccontextmanager
async def etcd_creates(endpoint: str, value: bytes) -> AsyncIterator[Op]:
    storage = await EtcdStorage.connect([endpoint])
    try:
        yield lambda name: storage.create(RAW_PREFIX + name, value)
    finally:
        await storage.close()


def show(label: str, measurement: Measurement) -> None:
    print(f"  {label:<22} {measurement.rate:>8,.0f} creates/s   ({cpu_note(measurement.cpu)})", flush=True)


def main() -> None:
    load, rounds = parse_load(__doc__)
    with control_plane() as cp:
        tls = admin_tls(cp)
        create_namespace(cp, NAMESPACE)
        body, value = create_pod(cp, NAMESPACE, "sample")
        pids = server_pids(cp)
        print(f"bench_create: {load.concurrency} concurrent clients in {load.processes} process(es), "
              f"{rounds} rounds of {load.seconds:g} s; request body {len(body)} B, stored value "
              f"{len(value)} B", flush=True)
        raw, api = [], []
        for n in range(rounds):
            raw.append(run_load(load, f"r{n}e", etcd_creates, cp.etcd.endpoint, value, pids=pids))
            show(f"round {n + 1} etcd txn", raw[-1])
            api.append(run_load(load, f"r{n}a", apiserver_creates, cp.url, tls, pids=pids))
            show(f"round {n + 1} apiserver", api[-1])
    raw_rate, api_rate = median([m.rate for m in raw]), median([m.rate for m in api])
    print(f"  median: etcd txn {raw_rate:,.0f} creates/s, apiserver {api_rate:,.0f} creates/s")
    verdict("create: apiserver / raw etcd txn", api_rate / raw_rate, TARGET, at_least=True)


if __name__ == "__main__":
    main()

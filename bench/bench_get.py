"""Benchmark 2: single-Pod GET through the apiserver ÷ a bare Starlette route returning the same bytes.
Target ≥ 0.6.

What is measured: GETs per second, closed loop, 16 concurrent clients on keep-alive HTTPS connections with
the admin client certificate (see common.run_load), all reading the same Pod:

* apiserver: `GET /api/v1/namespaces/bench-get/pods/web`: authentication, routing, a linearizable etcd
  read, decoding the stored JSON, adding the resourceVersion, encoding the answer.
* baseline: bench/baseline_server.py, a separate uvicorn process serving one Starlette route that returns
  the apiserver's response bytes for that Pod, through the apiserver's own `uvicorn_config` (same
  certificate, same client-certificate verification, same protocol class, uvloop, keep-alive). So both
  servers do the same HTTP and TLS work and send the same bytes; the ratio is the cost of being an
  apiserver.

Both run side by side and are measured in alternating rounds with the same client; the figure is the ratio
of the medians. The CPU share of each server is printed to show that the server, not the client, was the
bottleneck, and the CPU time per request of each server is a second, noise-robust view of the same ratio.

    python -m bench.bench_get [--seconds 4] [--rounds 3] [--concurrency 16] [--processes 1]
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bench import baseline_server
from bench.common import (
    Measurement,
    Op,
    TLSFiles,
    admin_client,
    admin_tls,
    connection_pool,
    control_plane,
    cpu_note,
    create_namespace,
    create_pod,
    median,
    parse_load,
    run_load,
    server_pids,
    verdict,
)
from minikube_py.store.etcd_server import free_port
from tests.harness import ControlPlane

NAMESPACE = "bench-get"
POD_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods/web"
TARGET = 0.6


@asynccontextmanager
async def gets(url: str, tls: TLSFiles) -> AsyncIterator[Op]:
    async with connection_pool(url, tls) as pool:
        async def get(_: str) -> None:
            await pool.request("GET", POD_PATH)

        yield get


def pod_bytes(cp: ControlPlane) -> bytes:
    """Create the Pod; the exact bytes the apiserver answers a GET of it with."""
    create_pod(cp, NAMESPACE, "web")
    with admin_client(cp) as client:
        response = client.get(POD_PATH)
        response.raise_for_status()
    return response.content


def show(label: str, measurement: Measurement, server: str) -> None:
    cost = measurement.cpu[server] / measurement.rate * 1e6
    print(f"  {label:<22} {measurement.rate:>8,.0f} GETs/s   {cost:5.0f} µs {server} CPU per GET   "
          f"({cpu_note(measurement.cpu)})", flush=True)


def main() -> None:
    load, rounds = parse_load(__doc__)
    with control_plane() as cp:
        tls = admin_tls(cp)
        create_namespace(cp, NAMESPACE)
        body_file = cp.workdir / "pod.json"
        body_file.write_bytes(pod_bytes(cp))
        port = free_port()
        bare = baseline_server.start(port, cp.serving.cert_path, cp.serving.key_path, cp.ca_file, body_file,
                                     cp.workdir / "baseline.log")
        try:
            pids = {**server_pids(cp), "baseline": bare.pid}
            print(f"bench_get: {load.concurrency} concurrent clients in {load.processes} process(es), "
                  f"{rounds} rounds of {load.seconds:g} s; response {body_file.stat().st_size} B",
                  flush=True)
            bare_runs, api_runs = [], []
            for n in range(rounds):
                bare_runs.append(run_load(load, f"r{n}b", gets, f"https://127.0.0.1:{port}", tls, pids=pids))
                show(f"round {n + 1} bare route", bare_runs[-1], "baseline")
                api_runs.append(run_load(load, f"r{n}a", gets, cp.url, tls, pids=pids))
                show(f"round {n + 1} apiserver", api_runs[-1], "apiserver")
        finally:
            baseline_server.stop(bare)
    bare_rate, api_rate = median([m.rate for m in bare_runs]), median([m.rate for m in api_runs])
    print(f"  median: bare route {bare_rate:,.0f} GETs/s, apiserver {api_rate:,.0f} GETs/s")
    verdict("get: apiserver / bare Starlette route", api_rate / bare_rate, TARGET, at_least=True)


if __name__ == "__main__":
    main()

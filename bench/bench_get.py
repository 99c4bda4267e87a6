"""Benchmark 2: single-Pod GET through the apiserver ÷ a bare Starlette route returning the same bytes.
Target ≥ 0.6.

What is measured: GETs per second, closed loop, 16 concurrent clients on keep-alive HTTPS connections with
the admin client certificate (see common.run_load), all reading the same Pod:

* apiserver: `GET /api/v1/namespaces/bench-get/pods/web`: authentication, routing, a linearizable etcd
  read, decoding the stored JSON, adding the resourceVersion, encoding the answer.
* baseline, "bare route": bench/baseline_server.py in a separate process, one Starlette route answering
  with the apiserver's own response bytes for that Pod, served through the apiserver's `uvicorn_config`
  (same certificate, same client-certificate verification, same protocol class, uvloop, keep-alive). Both
  servers do the same HTTP and TLS work and send the same bytes: the ratio is the cost of being an
  apiserver.
* for the analysis, not the target, "route + etcd get": the same bare server, but reading the Pod's key
  from etcd through `EtcdStorage` on every request and answering with the stored bytes: what any server
  pays that makes the etcd round trip the apiserver makes.

All run side by side and are measured in alternating rounds with the same client; figures are medians.
Each server's CPU share is printed to show that the server, not the client, was the bottleneck, and its CPU
time per GET is a second, noise-robust view of the same comparison.

    python -m bench.bench_get [--seconds 3] [--rounds 4] [--concurrency 16] [--processes 1]
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bench import baseline_server
from bench.common import (
    Op,
    Side,
    TLSFiles,
    admin_tls,
    compare,
    connection_pool,
    control_plane,
    create_namespace,
    create_pod,
    parse_load,
    server_pids,
    verdict,
)
from minikube_py.store.etcd_server import free_port
from tests.harness import ControlPlane

NAMESPACE = "bench-get"
POD_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods/web"
POD_KEY = f"/registry/pods/{NAMESPACE}/web"
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
    with cp.client() as client:
        response = client.get(POD_PATH)
        response.raise_for_status()
    return response.content


def main() -> None:
    load, rounds = parse_load(__doc__, seconds=3.0)
    with control_plane() as cp:
        tls = admin_tls(cp)
        create_namespace(cp, NAMESPACE)
        body_file = cp.workdir / "pod.json"
        body_file.write_bytes(pod_bytes(cp))
        serving = (cp.serving.cert_path, cp.serving.key_path, cp.ca_file)
        bare_port, etcd_port = free_port(), free_port()
        bare = baseline_server.start(bare_port, serving, cp.workdir / "bare.log", "--body", str(body_file))
        with_etcd = baseline_server.start(etcd_port, serving, cp.workdir / "bare-etcd.log",
                                          "--etcd", cp.etcd.endpoint, "--etcd-key", POD_KEY)
        try:
            print(f"bench_get: {load.concurrency} concurrent clients in {load.processes} process(es), "
                  f"{rounds} rounds of {load.seconds:g} s; response {body_file.stat().st_size} B", flush=True)
            sides = [Side("bare route", gets, (f"https://127.0.0.1:{bare_port}", tls)),
                     Side("route + etcd get", gets, (f"https://127.0.0.1:{etcd_port}", tls)),
                     Side("apiserver", gets, (cp.url, tls))]
            pids = {**server_pids(cp), "bare": bare.pid, "route+etcd": with_etcd.pid}
            rates = compare(load, rounds, sides, pids, "GET")
        finally:
            baseline_server.stop(bare)
            baseline_server.stop(with_etcd)
    print(f"  route + etcd get / bare route = {rates['route + etcd get'] / rates['bare route']:.2f} "
          f"(the etcd round trip alone)")
    verdict("get: apiserver / bare Starlette route", rates["apiserver"] / rates["bare route"], TARGET,
            at_least=True)


if __name__ == "__main__":
    main()

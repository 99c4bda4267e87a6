"""Benchmark 3: watch delivery p99 through the apiserver ÷ raw etcd watch delivery p99. Target ≤ 2.

What is measured: the time from a write being acknowledged to its event arriving at a watcher, for 10
watchers of the same Pods while a writer creates 100 Pods a second (paced, not in bursts), pooled over
every (write, watcher) pair:

* apiserver: 10 `GET /api/v1/namespaces/bench-watch/pods?watch=true&resourceVersion=N` streams over
  HTTPS, served by the apiserver's watch cache (one etcd watch for everything it stores; each change is
  decoded and encoded as a kube watch event once, then written to every stream); the client reads the
  chunked stream and parses each event's name.
* baseline: 10 raw etcd watches on the same key prefix: one gRPC Watch stream each on one shared grpc.aio
  channel, read in the event loop, the events' keys taken straight from the protobuf messages. That is the
  cheapest way this machine's Python gets an etcd event to a watcher, so the apiserver is compared with etcd
  itself, not with mkpy's storage layer (whose watches are read by threads, a trade made for one busy watch
  per apiserver, not for ten idle ones in one process).

Both sides get the very same writes, made straight to etcd through `EtcdStorage.create` on a connection of
their own (values are Pods as the apiserver stores them), and "acknowledged" is the moment that create
returns. So the writes cost the same on both sides and the difference is the delivery path alone (writing
through the apiserver instead would add its POST handling to the write, not to the watch). Watchers and
writer share one uvloop event loop on both sides; a warm-up write seen by every watcher precedes the
timed writes. Sides alternate in rounds; the samples of each side are pooled for its percentiles.

    python -m bench.bench_watch [--seconds 6] [--rounds 2] [--watchers 10] [--rate 100]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

import grpc
import orjson
import uvloop
from aetcd import rpc

from bench.common import (
    CpuMeter,
    HTTPSConnection,
    TLSFiles,
    admin_tls,
    control_plane,
    cpu_note,
    create_namespace,
    create_pod,
    percentile,
    server_pids,
    verdict,
)
from minikube_py.store.etcd import EtcdStorage, grpc_target, prefix_end
from tests.harness import ControlPlane

NAMESPACE = "bench-watch"
PREFIX = f"/registry/pods/{NAMESPACE}/"
TARGET = 2.0
DRAIN_TIMEOUT = 10.0  # seconds to wait, after the last write, for every watcher to see every event

Watch = Callable[[int], AbstractAsyncContextManager[AsyncIterator[str]]]  # from revision → names seen


def etcd_watch(stub: rpc.WatchStub) -> Watch:
    @asynccontextmanager
    async def watch(revision: int) -> AsyncIterator[AsyncIterator[str]]:
        call = stub.Watch()
        key = PREFIX.encode()
        create = rpc.WatchCreateRequest(key=key, range_end=prefix_end(key), start_revision=revision + 1)
        await call.write(rpc.WatchRequest(create_request=create))

        async def names() -> AsyncIterator[str]:
            while (response := await call.read()) is not grpc.aio.EOF:
                for event in response.events:
                    if event.type == rpc.Event.PUT:
                        yield event.kv.key.decode().rsplit("/", 1)[1]

        try:
            yield names()
        finally:
            call.cancel()

    return watch


def apiserver_watch(url: str, tls: TLSFiles) -> Watch:
    context = tls.context()

    @asynccontextmanager
    async def watch(revision: int) -> AsyncIterator[AsyncIterator[str]]:
        connection = await HTTPSConnection.open(url, context)
        path = f"/api/v1/namespaces/{NAMESPACE}/pods?watch=true&resourceVersion={revision}"
        try:
            yield (orjson.loads(line)["object"]["metadata"]["name"] async for line in connection.lines(path))
        finally:
            connection.close()

    return watch


async def receive(names: AsyncIterator[str], seen: dict[str, float]) -> None:
    async for name in names:
        seen[name] = time.perf_counter()


async def write_paced(storage: EtcdStorage, values: dict[str, bytes], rate: float) -> dict[str, float]:
    """Create each Pod at its slot (`rate` a second); when each create was acknowledged."""
    acked = {}
    began = time.perf_counter()
    for i, (name, value) in enumerate(values.items()):
        await asyncio.sleep(max(0.0, began + i / rate - time.perf_counter()))
        await storage.create(PREFIX + name, value)
        acked[name] = time.perf_counter()
    return acked


async def until_seen(seen: list[dict[str, float]], names: list[str], receivers: list[asyncio.Task[None]]) -> None:
    """Wait until every watcher has seen every name; a receiver that stopped early raises its error."""
    async with asyncio.timeout(DRAIN_TIMEOUT):
        while not all(name in each for each in seen for name in names):
            for receiver in receivers:
                if receiver.done():
                    receiver.result()
                    raise RuntimeError("a watch stream ended early")
            await asyncio.sleep(0.01)


async def delivery(watch: Watch, writer: EtcdStorage, values: dict[str, bytes], *, watchers: int,
                   rate: float) -> list[float]:
    """Every (write, watcher) latency from ack to arrival, in seconds."""
    warmup, *timed = values
    seen: list[dict[str, float]] = [{} for _ in range(watchers)]
    revision = await writer.current_revision()
    async with AsyncExitStack() as stack:
        streams = [await stack.enter_async_context(watch(revision)) for _ in range(watchers)]
        tasks = [asyncio.create_task(receive(stream, into)) for stream, into in zip(streams, seen, strict=True)]
        try:
            await writer.create(PREFIX + warmup, values[warmup])
            await until_seen(seen, [warmup], tasks)
            acked = await write_paced(writer, {name: values[name] for name in timed}, rate)
            await until_seen(seen, timed, tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return [each[name] - acked[name] for each in seen for name in timed]


def pod_values(stored: bytes, names: list[str]) -> dict[str, bytes]:
    """The stored form of a Pod, renamed once per write."""
    template = orjson.loads(stored)
    values = {}
    for name in names:
        template["metadata"]["name"] = name
        values[name] = orjson.dumps(template)
    return values


def summary(label: str, latencies: list[float]) -> str:
    ms = [x * 1000 for x in latencies]
    return (f"  {label:<17} p50 {percentile(ms, 50):5.2f} ms   p99 {percentile(ms, 99):5.2f} ms   "
            f"max {max(ms):6.2f} ms   ({len(ms)} deliveries)")


async def run(cp: ControlPlane, stored: bytes, args: argparse.Namespace) -> None:
    count = int(args.seconds * args.rate) + 1
    writer = await EtcdStorage.connect([cp.etcd.endpoint])
    channel = grpc.aio.insecure_channel(await grpc_target([cp.etcd.endpoint]))
    sides = {"etcd": etcd_watch(rpc.WatchStub(channel)), "apiserver": apiserver_watch(cp.url, admin_tls(cp))}
    pooled: dict[str, list[float]] = {side: [] for side in sides}
    pids = server_pids(cp)
    try:
        for n in range(args.rounds):
            for side, watch in sides.items():
                values = pod_values(stored, [f"r{n}-{side}-{i}" for i in range(count)])
                meter = CpuMeter(pids)
                latencies = await delivery(watch, writer, values, watchers=args.watchers, rate=args.rate)
                note = cpu_note(meter.shares(), len(latencies) / args.seconds, "event")
                print(f"{summary(f'round {n + 1} {side}', latencies)}   {note}", flush=True)
                pooled[side] += latencies
    finally:
        await writer.close()
        await channel.close()
    for side, latencies in pooled.items():
        print(summary(f"all {side}", latencies))
    ratio = percentile(pooled["apiserver"], 99) / percentile(pooled["etcd"], 99)
    verdict("watch: apiserver p99 / raw etcd watch p99", ratio, TARGET, at_least=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=6.0, help="length of each measurement")
    parser.add_argument("--rounds", type=int, default=2, help="measurements of each side, alternating")
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--rate", type=float, default=100.0, help="writes per second")
    args = parser.parse_args()
    with control_plane() as cp:
        create_namespace(cp, NAMESPACE)
        _, stored = create_pod(cp, NAMESPACE, "sample")
        print(f"bench_watch: {args.watchers} watchers, {args.rate:g} writes/s of {len(stored)} B Pods, "
              f"{args.rounds} rounds of {args.seconds:g} s per side", flush=True)
        uvloop.run(run(cp, stored, args))


if __name__ == "__main__":
    main()

"""The etcd backend of the storage interface: every apiserver read, write and watch becomes an etcd v3 RPC.

Where it sits: the apiserver's registry calls `Storage` methods; this module turns them into etcd's KV and
Watch RPCs over one gRPC channel, using the generated stubs and messages that `aetcd` ships (`aetcd.rpc`).
aetcd's high-level `Client` is not used: it dials exactly one `host:port`, its ranges take no
limit/revision, its watches drop progress notifications and share one stream per client.

How each operation maps onto etcd (the same mapping kube-apiserver uses):
* get / list / count: `Range`, linearizable; a list page pins `revision` and starts at `start_key`.
* create: `Txn(create_revision(key) == 0 → put)`; update and delete: `Txn(mod_revision(key) == expected → op,
  else range(key))`, so a conflict returns the current value in the same round trip. With no expected
  revision the compare is `create_revision(key) > 0`, so that the key must still exist.
* create / update with a `ttl`: the put carries a lease from `leases.LeaseManager`, so etcd deletes the key
  when the lease ends (how Events expire).
* watch: one gRPC `Watch` stream per watch, created with `prev_kv` and `progress_notify`, read by a thread
  of its own over a second, synchronous channel (`WatchStream` says why and how); an empty response is a
  progress notification, surfaced as a PROGRESS event (the apiserver's BOOKMARK).

Usage rules:
* `await EtcdStorage.connect(["http://10.0.0.1:2379", ...])`: several endpoints are members of one cluster;
  gRPC balances requests over them round-robin and stops using a member that goes away.
* Reads are retried while etcd is unreachable, up to `timeout`; writes are not (a write whose reply was lost
  may have been applied, and a blind retry would turn a successful create into KeyExistsError), they raise
  UnavailableError instead. A broken watch stream is re-created from the next revision it has not delivered.
* Always leave a watch through its `async with` block: leaving it closes the stream, which is what cancels
  the watch on the server; merely abandoning the iterator would leave it running there.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import grpc
import grpc.experimental
from aetcd import rpc

from .errors import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    StoreError,
    UnavailableError,
)
from .interface import KeyValue, ListResult, WatchEvent
from .leases import LeaseManager

DEFAULT_TIMEOUT = 10.0  # seconds a request (or the re-creation of a broken watch) may take
MAX_RECEIVE_MESSAGE_BYTES = 64 * 1024 * 1024  # gRPC's default 4 MiB breaks lists of a few thousand objects
RETRY_BACKOFF_FIRST = 0.05
RETRY_BACKOFF_MAX = 1.0

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", MAX_RECEIVE_MESSAGE_BYTES),
    ("grpc.lb_policy_name", "round_robin"),
    # gRPC's reconnect backoff grows to 2 minutes; cap it so a restarted etcd is used again within a second.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
    # Keepalive pings notice a member that hangs without closing its connections; etcd refuses pings
    # more often than every 5 s.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
]

WATCH_METHOD = "/etcdserverpb.Watch/Watch"
_SINGLE_THREADED = (grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)
_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
_ANY_KEY = b"\0"  # a Range needs some key even when only the response header's revision is wanted

Response = TypeVar("Response")


class EtcdStorage:
    """`Storage` on an etcd cluster. Create with `await EtcdStorage.connect(endpoints)`; `close()` when done."""

    def __init__(self, channel: grpc.aio.Channel, *, target: str, endpoints: list[str], timeout: float) -> None:
        self._channel = channel
        self._kv = rpc.KVStub(channel)
        self._watch = rpc.WatchStub(channel)
        # watch streams are read by threads (see WatchStream), over a synchronous channel of their own
        self._watch_channel = grpc.insecure_channel(target, options=[*CHANNEL_OPTIONS, _SINGLE_THREADED])
        self._watch_call = self._watch_channel.unary_stream(
            WATCH_METHOD, request_serializer=rpc.WatchRequest.SerializeToString,
            response_deserializer=rpc.WatchResponse.FromString)
        self._leases = LeaseManager(rpc.LeaseStub(channel), timeout=timeout)
        self._endpoints = endpoints
        self._timeout = timeout

    @classmethod
    async def connect(cls, endpoints: list[str], *, timeout: float = DEFAULT_TIMEOUT) -> EtcdStorage:
        """Open a channel to the cluster and check that it answers; UnavailableError if none does in time."""
        if not endpoints:
            raise ValueError("no etcd endpoints")
        target = await grpc_target(endpoints)
        channel = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
        storage = cls(channel, target=target, endpoints=list(endpoints), timeout=timeout)
        try:
            await storage.current_revision()
        except BaseException:
            await channel.close()
            raise
        return storage

    async def get(self, key: str) -> KeyValue | None:
        response = await self._range(rpc.RangeRequest(key=key.encode()))
        return _key_value(response.kvs[0]) if response.kvs else None

    async def list(self, prefix: str, *, limit: int = 0, start_key: str | None = None,
                   revision: int = 0) -> ListResult:
        """Keys starting with `prefix` (taken literally: pass a trailing "/" to list a directory)."""
        request = rpc.RangeRequest(key=(start_key or prefix).encode(), range_end=prefix_end(prefix.encode()),
                                   limit=limit, revision=revision)
        response = await self._range(request)
        items = [_key_value(kv) for kv in response.kvs]
        # `count` counts every key from start_key to the end of the prefix, returned or not.
        remaining = response.count - len(items) if response.more else 0
        return ListResult(items, revision or response.header.revision, response.more, remaining)

    async def count(self, prefix: str) -> int:
        key = prefix.encode()
        response = await self._range(rpc.RangeRequest(key=key, range_end=prefix_end(key), count_only=True))
        return int(response.count)

    async def current_revision(self) -> int:
        response = await self._range(rpc.RangeRequest(key=_ANY_KEY, count_only=True))
        return int(response.header.revision)

    async def create(self, key: str, value: bytes, *, ttl: int = 0) -> int:
        name = key.encode()
        absent = rpc.Compare(key=name, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0)
        put = _put(name, value, await self._lease(ttl))
        response = await self._txn(rpc.TxnRequest(compare=[absent], success=[put]))
        if not response.succeeded:
            raise KeyExistsError(key)
        return int(response.header.revision)

    async def update(self, key: str, value: bytes, *, expected_revision: int | None, ttl: int = 0) -> int:
        put = _put(key.encode(), value, await self._lease(ttl))
        response = await self._guarded(key, expected_revision, put)
        return int(response.header.revision)

    async def delete(self, key: str, *, expected_revision: int | None = None) -> KeyValue:
        op = rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key.encode(), prev_kv=True))
        response = await self._guarded(key, expected_revision, op)
        deleted = response.responses[0].response_delete_range.prev_kvs[0]
        return KeyValue(key, deleted.value, deleted.create_revision, response.header.revision)

    @contextlib.asynccontextmanager
    async def watch(self, prefix: str, *, start_revision: int, prev_kv: bool = True) -> AsyncIterator[WatchStream]:
        """Watch `prefix` from `start_revision` (inclusive; 0 = from now).

        The iterator raises CompactedError if `start_revision` (or, after a broken stream, the next revision
        it had not delivered) was compacted, and UnavailableError if etcd stays unreachable for `timeout`.
        """
        key = prefix.encode()
        range_end = prefix_end(key) if prefix.endswith("/") else b""
        stream = WatchStream(self._watch_call, key, range_end, start_revision, self._endpoints, self._timeout,
                             prev_kv=prev_kv)
        try:
            await stream.open()
            yield stream
        finally:
            stream.close()

    async def compact(self, revision: int) -> None:
        try:
            await self._kv.Compact(rpc.CompactionRequest(revision=revision), timeout=self._timeout,
                                   wait_for_ready=True)
        except grpc.aio.AioRpcError as err:
            raise await self._store_error(err, revision) from err

    async def close(self) -> None:
        await self._channel.close()
        self._watch_channel.close()

    async def _lease(self, ttl: int) -> int:
        """The lease a write with `ttl` attaches its key to; 0 (none) when `ttl` is 0."""
        if not ttl:
            return 0
        try:
            return await self._leases.get_lease(ttl)
        except grpc.aio.AioRpcError as err:
            raise grpc_error(err, self._endpoints) from err

    async def _range(self, request: rpc.RangeRequest) -> rpc.RangeResponse:
        try:
            return await retry_while_unreachable(
                lambda remaining: self._kv.Range(request, timeout=remaining, wait_for_ready=True),
                self._timeout)
        except grpc.aio.AioRpcError as err:
            raise await self._store_error(err, request.revision) from err

    async def _txn(self, request: rpc.TxnRequest) -> rpc.TxnResponse:
        try:
            # wait_for_ready holds the request until a member is connected, which is safe: it is not sent yet.
            return await self._kv.Txn(request, timeout=self._timeout, wait_for_ready=True)
        except grpc.aio.AioRpcError as err:
            raise await self._store_error(err) from err

    async def _guarded(self, key: str, expected_revision: int | None, op: rpc.RequestOp) -> rpc.TxnResponse:
        """Run `op` if `key` is at `expected_revision` (None: if it exists); else raise with the current value."""
        name = key.encode()
        current = rpc.RequestOp(request_range=rpc.RangeRequest(key=name))
        request = rpc.TxnRequest(compare=[_precondition(name, expected_revision)], success=[op],
                                 failure=[current])
        response = await self._txn(request)
        if response.succeeded:
            return response
        found = response.responses[0].response_range.kvs
        if not found:
            raise KeyNotFoundError(key)
        raise ConflictError(key, _key_value(found[0]))

    async def _store_error(self, err: grpc.aio.AioRpcError, revision: int = 0) -> StoreError:
        details = err.details() or ""
        if err.code() == grpc.StatusCode.OUT_OF_RANGE and "compacted" in details:
            return CompactedError(revision, await self._compacted_revision())
        if err.code() == grpc.StatusCode.OUT_OF_RANGE and "future revision" in details:
            return FutureRevisionError(revision)
        return grpc_error(err, self._endpoints)

    async def _compacted_revision(self) -> int:
        """etcd's compacted revision, or 0 if it cannot be learned now.

        Only a watch reports it (a Range at a compacted revision does not say where history starts): a watch
        from revision 1 is answered with `compact_revision` within etcd's 100 ms sync period.
        """
        call = self._watch.Watch(timeout=self._timeout, wait_for_ready=True)
        try:
            await call.write(_watch_request(_ANY_KEY, b"", 1))
            while (response := await call.read()) is not grpc.aio.EOF:
                if response.compact_revision or response.events:
                    return int(response.compact_revision)
        except grpc.aio.AioRpcError:
            pass
        finally:
            call.cancel()
        return 0


class WatchStream:
    """One etcd watch on its own gRPC stream, read by a thread of its own and iterated as WatchEvents.

    Why a thread: through grpc.aio each response costs the event loop a turn, and a busy apiserver's loop
    turns slowly; its one watch for every cache then fell up to ten seconds behind etcd while pods were
    created at a few hundred a second (kube's etcd client reads in goroutines of its own). The thread reads
    responses as fast as etcd sends them and queues their events; the iterator hands out every event already
    queued without suspending, so one loop turn applies all that arrived since the last one.

    The thread itself waits on the stream's gRPC completion queue. etcd's Watch is a bidirectional stream,
    but mkpy only ever sends the request that creates the watch, and etcd keeps a watch whose client has
    closed its sending side; so the call is made as a server-streaming one, on a channel with gRPC's
    single-threaded option. A streaming call of the synchronous API is otherwise read through the channel's
    own spin thread, which hands each response over to the reader: one thread hop more per event, a
    quarter of a millisecond of watch latency under load (docs/benchmarks.md, session 17).

    It remembers the next revision it has not delivered, so that a broken stream (a member died, etcd
    restarted) is re-created from there on any reachable member without losing or repeating events. A
    failure the thread cannot recover from is queued after the events, for the iterator to raise.
    """

    def __init__(self, watch_call: grpc.UnaryStreamMultiCallable, key: bytes, range_end: bytes,
                 start_revision: int, endpoints: list[str], timeout: float, *, prev_kv: bool = True) -> None:
        self._watch_call = watch_call  # on a synchronous channel: the thread blocks on it, the loop never does
        self._key = key
        self._range_end = range_end
        self._prev_kv = prev_kv
        self._next_revision = start_revision
        self._endpoints = endpoints
        self._timeout = timeout
        self._loop = asyncio.get_running_loop()
        self._lock = threading.Lock()  # guards the three fields below, shared with the thread
        self._queued: deque[WatchEvent | StoreError] = deque()
        self._waiting = False  # the iterator waits on `_arrived` and must be woken
        self._call: grpc.Future | None = None  # the stream being read, which close() cancels
        self._arrived = asyncio.Event()
        self._created: asyncio.Future[None] = self._loop.create_future()
        self._closed = threading.Event()

    async def open(self) -> None:
        """Create the watch on the server, retrying while etcd is unreachable, for up to `timeout`."""
        threading.Thread(target=self._read, name=f"etcd watch {self._key!r}", daemon=True).start()
        try:
            await self._created
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the stream; etcd cancels the stream's watch when the stream ends."""
        self._closed.set()
        self._arrived.set()  # an iterator waiting in another task ends
        with self._lock:
            call = self._call
        if call is not None:
            call.cancel()

    def __aiter__(self) -> WatchStream:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            with self._lock:
                if self._queued:
                    item = self._queued.popleft()
                    if isinstance(item, StoreError):
                        raise item
                    return item
                if self._closed.is_set():
                    raise StopAsyncIteration  # the watch's `async with` block was left
                self._waiting = True
                self._arrived.clear()
            await self._arrived.wait()

    # -- the reading thread ----------------------------------------------------------------------------

    def _read(self) -> None:
        """Read streams until closed: re-create a broken one while etcd becomes reachable again within
        `timeout` (counted from the break), queue what cannot be recovered from."""
        deadline = time.monotonic() + self._timeout
        while not self._closed.is_set():
            try:
                created = self._stream(deadline)
            except StoreError as error:
                self._finish(error)
                return
            except grpc.RpcError as error:
                if self._closed.is_set():
                    return
                if error.code() not in _UNREACHABLE or time.monotonic() >= deadline:  # type: ignore[attr-defined]
                    self._finish(grpc_error(error, self._endpoints))  # type: ignore[arg-type]
                    return
                created = False
            if created:  # it broke after etcd had created it: a new timeout from now
                deadline = time.monotonic() + self._timeout
            elif time.monotonic() >= deadline:
                self._finish(UnavailableError(f"etcd ended the watch on {self._key!r} before creating it"))
                return
            else:
                time.sleep(RETRY_BACKOFF_FIRST)

    def _stream(self, deadline: float) -> bool:
        """Create one stream and read it until it ends or breaks; whether etcd had created the watch. Waiting
        for a reachable member to create it stops at `deadline`."""
        request = _watch_request(self._key, self._range_end, self._next_revision, prev_kv=self._prev_kv)
        call = self._watch_call(request, wait_for_ready=True)
        with self._lock:
            self._call = call
        if self._closed.is_set():
            call.cancel()
        give_up = threading.Timer(max(deadline - time.monotonic(), 0.0), call.cancel)
        give_up.daemon = True
        give_up.start()
        created = False
        try:
            for response in call:
                events = self._events(response)
                if response.created and not created:
                    created = True
                    give_up.cancel()
                    if self._next_revision == 0:
                        self._next_revision = response.header.revision + 1
                    self._loop.call_soon_threadsafe(_settle, self._created, None)
                if events:
                    self._queue(events)
        except grpc.RpcError as error:
            code = error.code()  # type: ignore[attr-defined]
            if not created and not self._closed.is_set() and code == grpc.StatusCode.CANCELLED:
                raise UnavailableError(f"etcd at {', '.join(self._endpoints)} unavailable: timed out") from None
            if not created or code not in _UNREACHABLE:
                raise
        finally:
            give_up.cancel()
        return created

    def _queue(self, items: list[WatchEvent | StoreError]) -> None:
        with self._lock:
            self._queued.extend(items)
            wake, self._waiting = self._waiting, False
        if wake:
            self._loop.call_soon_threadsafe(self._arrived.set)

    def _finish(self, error: StoreError) -> None:
        """Fail open() if it still waits, else queue the error for the iterator."""
        if not self._created.done():
            self._loop.call_soon_threadsafe(_settle, self._created, error)
        self._queue([error])

    def _events(self, response: rpc.WatchResponse) -> list[WatchEvent | StoreError]:
        if response.compact_revision:
            raise CompactedError(self._next_revision, response.compact_revision)
        if response.canceled:
            raise StoreError(f"etcd canceled the watch on {self._key!r}: {response.cancel_reason}")
        if response.created:
            return []
        if not response.events:
            return self._progress(response.header.revision)
        events: list[WatchEvent | StoreError] = [_watch_event(event) for event in response.events]
        self._next_revision = events[-1].revision + 1  # type: ignore[union-attr]
        return events

    def _progress(self, revision: int) -> list[WatchEvent | StoreError]:
        # After a re-created stream, a member that lags behind may report a revision older than events
        # already delivered; a bookmark must never go backwards.
        if revision < self._next_revision - 1:
            return []
        self._next_revision = revision + 1
        return [WatchEvent("PROGRESS", revision)]


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


async def grpc_target(endpoints: list[str]) -> str:
    """gRPC's name for a set of etcd members, e.g. `ipv4:10.0.0.1:2379,10.0.0.2:2379`.

    Host names are resolved now, because a gRPC target lists several members only as IP addresses.
    """
    addresses = [await _resolve(endpoint) for endpoint in endpoints]
    families = {family for family, _ in addresses}
    if len(families) > 1:
        raise ValueError(f"etcd endpoints mix IPv4 and IPv6 addresses: {endpoints}")
    scheme = "ipv4" if families == {socket.AF_INET} else "ipv6"
    return f"{scheme}:" + ",".join(address for _, address in addresses)


async def _resolve(endpoint: str) -> tuple[int, str]:
    url = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if url.scheme != "http" or not url.hostname:
        raise ValueError(f"unsupported etcd endpoint {endpoint!r}: expected http://host:port (no TLS yet)")
    port = url.port or 2379
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(url.hostname, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise UnavailableError(f"cannot resolve etcd endpoint {endpoint}: {err}") from err
    # Prefer IPv4: "localhost" resolves to both families and a target cannot mix them.
    family, _, _, _, sockaddr = min(infos, key=lambda info: info[0] != socket.AF_INET)
    host = sockaddr[0] if family == socket.AF_INET else f"[{sockaddr[0]}]"
    return family, f"{host}:{port}"


async def retry_while_unreachable(attempt: Callable[[float], Awaitable[Response]], timeout: float) -> Response:
    """Run `attempt(remaining_seconds)` until it succeeds or fails otherwise than by etcd being unreachable.

    Only for idempotent calls. The last error is raised once `timeout` is spent.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    backoff = RETRY_BACKOFF_FIRST
    while True:
        try:
            return await attempt(max(deadline - loop.time(), 0.0))
        except (grpc.aio.AioRpcError, TimeoutError) as err:
            unreachable = isinstance(err, TimeoutError) or err.code() in _UNREACHABLE
            if not unreachable or loop.time() + backoff >= deadline:
                raise
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, RETRY_BACKOFF_MAX)


def grpc_error(err: grpc.aio.AioRpcError | TimeoutError, endpoints: list[str]) -> StoreError:
    """The StoreError for a failed RPC that carries no etcd-specific meaning."""
    if isinstance(err, TimeoutError) or err.code() in _UNREACHABLE:
        details = "timed out" if isinstance(err, TimeoutError) else err.details()
        return UnavailableError(f"etcd at {', '.join(endpoints)} unavailable: {details}")
    return StoreError(f"etcd: {err.details()} ({err.code().name})")


def prefix_end(prefix: bytes) -> bytes:
    """The `range_end` that makes a Range or Watch cover every key starting with `prefix`."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\0"  # etcd's spelling of "to the end of the keyspace"
    return stripped[:-1] + bytes([stripped[-1] + 1])


def _precondition(key: bytes, expected_revision: int | None) -> rpc.Compare:
    if expected_revision is None:
        # A key's create_revision is 0 exactly when it does not exist.
        return rpc.Compare(key=key, target=rpc.Compare.CREATE, result=rpc.Compare.GREATER, create_revision=0)
    return rpc.Compare(key=key, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=expected_revision)


def _put(key: bytes, value: bytes, lease: int) -> rpc.RequestOp:
    # a put without a lease (0) also takes the key off any lease an earlier write attached it to
    return rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value, lease=lease))


def _watch_request(key: bytes, range_end: bytes, start_revision: int, *, prev_kv: bool = True) -> rpc.WatchRequest:
    create = rpc.WatchCreateRequest(key=key, range_end=range_end, start_revision=start_revision, prev_kv=prev_kv,
                                    progress_notify=True)
    return rpc.WatchRequest(create_request=create)


def _key_value(kv: rpc.KeyValue) -> KeyValue:
    return KeyValue(kv.key.decode(), kv.value, kv.create_revision, kv.mod_revision)


def _watch_event(event: rpc.Event) -> WatchEvent:
    # no prev_kv when the watch did not ask for it, or when the previous version was compacted away
    prev = _key_value(event.prev_kv) if event.HasField("prev_kv") else None
    if event.type == rpc.Event.PUT:
        kv = _key_value(event.kv)
        return WatchEvent("PUT", kv.mod_revision, kv.key, kv=kv, prev=prev)
    # a DELETE's kv holds only the key and the delete's revision
    return WatchEvent("DELETE", event.kv.mod_revision, event.kv.key.decode(), prev=prev)

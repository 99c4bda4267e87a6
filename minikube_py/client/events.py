"""The event recorders: events.k8s.io/v1 and core/v1 Events, written in the background, repeats aggregated.

Components report what they did ("Scheduled", "FailedScheduling", "LeaderElection") through a recorder;
`kubectl get events` and `kubectl describe` show them. The flow, as in client-go:

    recorder.eventf(...)  ──(bounded buffer, never blocks)──▶  EventBroadcaster's sink task ──▶ apiserver

The sink's requests give way to the component's other requests (`rest.requests_in_background`): kube
components send events on a client of their own, so that a burst of events never delays a binding or a
pod status.

* `EventRecorder` (client-go `tools/events`) writes events.k8s.io/v1 Events named `<regarding>.<hex unix
  nanoseconds>`. An isomorphic event (same regarding, related, type, reason, action, reporting controller
  and instance; the note is not compared, as in kube) while the first is still cached becomes a series:
  the first repeat PATCHes `series: {count: 2, lastObservedTime}` at once, later repeats only count in
  memory and are written by the 30-minute heartbeat, by the 6-minute sweep that ends series idle for
  6 minutes (and forgets singletons that old), or at `shutdown()`.
* `CoreEventRecorder` (client-go `tools/record`) writes core/v1 Events with `source {component, host}`,
  `firstTimestamp`, `lastTimestamp` and `count`, through client-go's correlator:
  - similar events (same source, object, type and reason, different messages) are aggregated: from the
    10th distinct message within 10 minutes on, they become one event whose message is
    `(combined from similar events): <latest message>`;
  - an identical event (same source, object, type, reason and message, or the same aggregate; the last 4096
    kept) PATCHes the stored one's count, lastTimestamp and message instead of creating another;
  - a spam filter allows each source and object (and type) 25 writes at once, then one per 5 minutes; what
    it holds back is not written but still counted, so the next write carries the full count. A ReplicaSet
    creating 100 pods thus writes 25 times, not 100.

Usage rules: recording never blocks and never raises: a bad reference or type is logged and the event
dropped, a full buffer (1000) drops with a log line, a server refusal is logged and not retried, an
unreachable server is retried up to 12 times about 10 s apart. Objects must carry `kind` and `apiVersion`
(or pass an ObjectReference dict). Call `start_recording_to_sink()` on the event loop, `await shutdown()`
at exit.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from minikube_py.api.timestamps import micro_time_string, time_string
from minikube_py.client import errors, rest
from minikube_py.client.clock import Clock, RealClock
from minikube_py.client.resources import CORE_EVENTS, EVENTS
from minikube_py.client.rest import RESTClient

MAX_QUEUED_EVENTS = 1000
MAX_TRIES_PER_EVENT = 12
RETRY_SLEEP = 10.0
FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
MAX_NOTE_BYTES = 1024
CORE_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10  # distinct messages of similar events before they are combined
AGGREGATE_INTERVAL = 600.0  # seconds after which similar events start counting afresh
COMBINED_PREFIX = "(combined from similar events): "
SPAM_BURST = 25  # writes a source may make about one object at once ...
SPAM_RATE = 1 / 300  # ... and per second after that
EVENT_TYPES = ("Normal", "Warning")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

log = logging.getLogger(__name__)
Write = Callable[[], Awaitable[dict[str, Any] | None]]


def object_reference(obj: Any) -> dict[str, Any]:
    """An ObjectReference for an API object (which must carry kind and apiVersion) or a reference dict."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected an API object, got {type(obj).__name__}")
    meta = obj.get("metadata")
    if meta is None:
        source: dict[str, Any] = obj
    elif isinstance(meta, dict):
        source = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), **meta}
    else:
        raise ValueError("metadata is not an object")
    ref = {field: str(source[field]) for field in _REFERENCE_FIELDS if source.get(field)}
    missing = [field for field in ("kind", "apiVersion", "name") if field not in ref]
    if missing:
        raise ValueError(f"the object has no {', '.join(missing)}")
    return ref


@dataclass
class _Similar:
    messages: set[str]  # distinct messages of similar events seen (at most AGGREGATE_MAX_EVENTS)
    last_seen: float


@dataclass
class _TokenBucket:
    """The spam filter's bucket: SPAM_BURST tokens, refilled at SPAM_RATE a second."""

    tokens: float
    updated: float

    def take(self, now: float) -> bool:
        self.tokens = min(SPAM_BURST, self.tokens + (now - self.updated) * SPAM_RATE)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass
class _Series:
    event: dict[str, Any]
    last_seen: float  # clock.now() of the latest occurrence


class EventBroadcaster:
    """Owns the buffer, the sink task that writes events and the aggregation state of both recorders."""

    def __init__(self, client: RESTClient, clock: Clock | None = None, *, max_queued: int = MAX_QUEUED_EVENTS,
                 retry_sleep: float = RETRY_SLEEP) -> None:
        self.client = client
        self.clock = clock or RealClock()
        self.retry_sleep = retry_sleep
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(max_queued)
        self._series: dict[bytes, _Series] = {}
        self._core_log: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._similar: OrderedDict[str, _Similar] = OrderedDict()
        self._spam: OrderedDict[str, _TokenBucket] = OrderedDict()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._last_nanos = 0

    def new_recorder(self, reporting_controller: str, reporting_instance: str | None = None) -> EventRecorder:
        return EventRecorder(self, reporting_controller, reporting_instance)

    def new_core_recorder(self, component: str, host: str = "") -> CoreEventRecorder:
        return CoreEventRecorder(self, component, host)

    def start_recording_to_sink(self) -> None:
        if self._tasks:
            return
        self._tasks = [asyncio.create_task(self._sink(), name="events-sink"),
                       asyncio.create_task(self._every(FINISH_TIME, self._finish_series)),
                       asyncio.create_task(self._every(REFRESH_TIME, self._refresh_series))]

    async def shutdown(self, timeout: float = 5.0) -> None:
        """Write what is buffered (no retries now), then the pending series counts, and stop."""
        self._stopping = True
        if not self._tasks:
            return
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
        except TimeoutError:
            log.warning("shutting down with %d event(s) unwritten", self._queue.qsize())
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self._refresh_series()

    async def flush(self) -> None:
        """Wait until every event queued so far has been written or given up on (at once if not started)."""
        if self._tasks:
            await self._queue.join()

    def action(self, event: dict[str, Any]) -> None:
        """Queue an event for the sink; drop it (logged) when the buffer is full or we are shutting down."""
        if self._stopping:
            log.info("dropping event %s: the broadcaster is shut down", event["metadata"]["name"])
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            log.error("unable to record event: too many queued events, dropped event %s/%s (%s)",
                      event["metadata"]["namespace"], event["metadata"]["name"], event.get("reason"))

    def event_name(self, ref_name: str, wall: datetime) -> str:
        """`<name>.<hex unix nanoseconds>`, made unique within this process."""
        nanos = max((wall - _EPOCH) // timedelta(microseconds=1) * 1000, self._last_nanos + 1)
        self._last_nanos = nanos
        return f"{ref_name}.{nanos:x}"

    async def _sink(self) -> None:
        rest.requests_in_background()
        while True:
            event = await self._queue.get()
            try:
                if event["apiVersion"] == "v1":
                    await self._record_core(event)
                else:
                    await self._record_series(event)
            except Exception:  # the sink outlives any one bad event
                log.exception("failed to record event %s", event["metadata"]["name"])
            finally:
                self._queue.task_done()

    async def _every(self, period: float, job: Callable[[], Awaitable[None]]) -> None:
        rest.requests_in_background()
        while True:
            await self.clock.sleep(period)
            await job()

    # events.k8s.io/v1: series ----------------------------------------------------------------------------

    async def _record_series(self, event: dict[str, Any]) -> None:
        key = _series_key(event)
        cached = self._series.get(key)
        if cached is None:
            self._series[key] = _Series(event, self.clock.now())
            await self._attempt(lambda: self._write_series_event(copy.deepcopy(event)))
            return
        cached.last_seen = self.clock.now()
        observed = micro_time_string(self.clock.wall())
        if cached.event.get("series"):
            count = cached.event["series"]["count"] + 1
            cached.event["series"] = {"count": count, "lastObservedTime": observed}
            return
        cached.event["series"] = {"count": 2, "lastObservedTime": observed}
        snapshot = copy.deepcopy(cached.event)
        await self._attempt(lambda: self._write_series_event(snapshot))

    async def _write_series_event(self, event: dict[str, Any]) -> dict[str, Any]:
        meta = event["metadata"]
        if event.get("series"):
            try:
                return await self.client.patch(EVENTS, meta["name"], {"series": event["series"]},
                                               meta["namespace"], patch_type="strategic")
            except errors.NotFound:
                pass  # deleted meanwhile (events expire after an hour): create it again
        meta.pop("resourceVersion", None)
        return await self.client.create(EVENTS, event, meta["namespace"])

    async def _refresh_series(self) -> None:
        for entry in list(self._series.values()):
            if entry.event.get("series"):
                await self._write_once(entry)

    async def _finish_series(self) -> None:
        horizon = self.clock.now() - FINISH_TIME
        for key, entry in list(self._series.items()):
            if entry.last_seen >= horizon:
                continue
            if entry.event.get("series"):
                await self._write_once(entry)
            del self._series[key]

    async def _write_once(self, entry: _Series) -> None:
        snapshot = copy.deepcopy(entry.event)
        await self._attempt(lambda: self._write_series_event(snapshot), retry=False)

    # core/v1: the correlator's count -----------------------------------------------------------------------

    async def _record_core(self, event: dict[str, Any]) -> None:
        event, key = self._aggregate(event)
        last = self._core_log.get(key)
        if last is not None:
            event["metadata"]["name"] = last["name"]
            event["firstTimestamp"] = last["firstTimestamp"]
            event["count"] = last["count"] + 1
        self._remember_core(key, event)
        if not self._spam_allows(event):
            return
        recorded = await self._attempt(lambda: self._write_core_event(event))
        if recorded is not None:
            self._remember_core(key, recorded)

    async def _write_core_event(self, event: dict[str, Any]) -> dict[str, Any]:
        meta = event["metadata"]
        if event["count"] > 1:
            patch = {key: event[key] for key in ("count", "lastTimestamp", "message")}
            try:
                return await self.client.patch(CORE_EVENTS, meta["name"], patch, meta["namespace"],
                                               patch_type="strategic")
            except errors.NotFound:
                pass
        return await self.client.create(CORE_EVENTS, event, meta["namespace"])

    def _remember_core(self, key: str, event: dict[str, Any]) -> None:
        _remember(self._core_log, key, {"name": event["metadata"]["name"], "count": event.get("count") or 1,
                                        "firstTimestamp": event.get("firstTimestamp")})

    def _aggregate(self, event: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The event to record and its key in the count cache: the event itself, or, once similar events
        carried AGGREGATE_MAX_EVENTS distinct messages, the combined event that stands for all of them."""
        key = _similar_key(event)
        now = self.clock.now()
        similar = self._similar.get(key)
        if similar is None or now - similar.last_seen > AGGREGATE_INTERVAL:
            similar = _Similar(set(), now)
        similar.messages.add(event["message"])
        similar.last_seen = now
        _remember(self._similar, key, similar)
        if len(similar.messages) < AGGREGATE_MAX_EVENTS:
            return event, _core_key(event)
        similar.messages.pop()  # keep the set at the threshold
        wall = self.clock.wall()
        stamp = time_string(wall)
        ref = event["involvedObject"]
        combined = {**event, "metadata": {"name": self.event_name(ref["name"], wall),
                                          "namespace": event["metadata"]["namespace"]},
                    "message": COMBINED_PREFIX + event["message"], "count": 1, "firstTimestamp": stamp,
                    "lastTimestamp": stamp}
        return combined, key

    def _spam_allows(self, event: dict[str, Any]) -> bool:
        """Whether the spam filter lets this write through (each source-and-object has its own bucket)."""
        key = _spam_key(event)
        bucket = self._spam.get(key) or _TokenBucket(SPAM_BURST, self.clock.now())
        allowed = bucket.take(self.clock.now())
        _remember(self._spam, key, bucket)
        return allowed

    # writing, shared ---------------------------------------------------------------------------------------

    async def _attempt(self, write: Write, *, retry: bool = True) -> dict[str, Any] | None:
        """Write until it works, the server refuses, or MAX_TRIES_PER_EVENT transport failures."""
        for tries in range(1, MAX_TRIES_PER_EVENT + 1):
            try:
                return await write()
            except errors.APIStatusError as err:
                _log_refusal(err)
                return None
            except (errors.TransportError, ValueError) as err:
                if isinstance(err, ValueError) or not retry or self._stopping:
                    log.error("unable to write event (will not retry!): %s", err)
                    return None
                log.error("unable to write event (may retry after sleeping): %s", err)
            delay = self.retry_sleep * (random.random() if tries == 1 else 1 + random.random() * 0.25)
            await self.clock.sleep(delay)
        log.error("unable to write event (retry limit exceeded!)")
        return None


def _log_refusal(err: errors.APIStatusError) -> None:
    if isinstance(err, errors.AlreadyExists) or errors.is_namespace_terminating(err):
        log.info("server rejected event (will not retry!): %s", err)
    else:
        log.error("server rejected event (will not retry!): %s", err)


class EventRecorder:
    """Records events.k8s.io/v1 Events as `reporting_controller` (e.g. "default-scheduler")."""

    def __init__(self, broadcaster: EventBroadcaster, reporting_controller: str,
                 reporting_instance: str | None = None) -> None:
        self.broadcaster = broadcaster
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance or f"{reporting_controller}-{socket.gethostname()}"

    def eventf(self, regarding: Any, related: Any, type: str, reason: str, action: str, note: str,
               *args: Any) -> None:
        """Record an event about `regarding` (`note % args` when args are given). Never raises."""
        try:
            message = _format(note, args)
            ref = _reference_or_log(regarding, type, reason, message)
            if ref is None or not _valid_type(type):
                return
            self.broadcaster.action(self._make_event(ref, _related(related), type, reason, action, message))
        except Exception:  # recording must never break the caller
            log.exception("failed to record event %s %s", type, reason)

    def _make_event(self, ref: dict[str, Any], related: dict[str, Any] | None, type: str, reason: str,
                    action: str, message: str) -> dict[str, Any]:
        wall = self.broadcaster.clock.wall()
        event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                 "metadata": {"name": self.broadcaster.event_name(ref["name"], wall),
                              "namespace": ref.get("namespace") or "default"},
                 "eventTime": micro_time_string(wall), "reportingController": self.reporting_controller,
                 "reportingInstance": self.reporting_instance, "action": action, "reason": reason,
                 "regarding": ref, "note": _truncate(message), "type": type}
        if related is not None:
            event["related"] = related
        return event


class CoreEventRecorder:
    """Records core/v1 Events with `source: {component, host}`, counting identical repeats."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, host: str = "") -> None:
        self.broadcaster = broadcaster
        self.source = {"component": component, **({"host": host} if host else {})}

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.eventf(obj, type, reason, message)

    def eventf(self, obj: Any, type: str, reason: str, message: str, *args: Any) -> None:
        """Record an event about `obj` (`message % args` when args are given). Never raises."""
        try:
            text = _format(message, args)
            ref = _reference_or_log(obj, type, reason, text)
            if ref is None or not _valid_type(type):
                return
            self.broadcaster.action(self._make_event(ref, type, reason, text))
        except Exception:  # recording must never break the caller
            log.exception("failed to record event %s %s", type, reason)

    def _make_event(self, ref: dict[str, Any], type: str, reason: str, message: str) -> dict[str, Any]:
        wall = self.broadcaster.clock.wall()
        stamp = time_string(wall)
        return {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": self.broadcaster.event_name(ref["name"], wall),
                             "namespace": ref.get("namespace") or "default"},
                "involvedObject": ref, "reason": reason, "message": message, "type": type,
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "source": dict(self.source),
                "reportingComponent": self.source["component"],
                "reportingInstance": self.source.get("host", "")}


def _reference_or_log(obj: Any, type: str, reason: str, message: str) -> dict[str, Any] | None:
    try:
        return object_reference(obj)
    except ValueError as err:
        log.error("could not construct reference to %.200r due to: %s. Will not report event: %s %s %s",
                  obj, err, type, reason, message)
        return None


def _related(obj: Any) -> dict[str, Any] | None:
    if obj is None:
        return None
    try:
        return object_reference(obj)
    except ValueError as err:
        log.debug("could not construct reference to related object %.200r: %s", obj, err)
        return None


def _valid_type(type: str) -> bool:
    if type in EVENT_TYPES:
        return True
    log.error("unsupported event type: %r", type)
    return False


def _format(template: str, args: tuple[Any, ...]) -> str:
    if not args:
        return template
    try:
        return template % args
    except (TypeError, ValueError):
        return f"{template} (bad format arguments: {args!r})"


def _truncate(note: str) -> str:
    encoded = note.encode()
    if len(encoded) <= MAX_NOTE_BYTES:
        return note
    return encoded[:MAX_NOTE_BYTES].decode(errors="ignore")


def _series_key(event: dict[str, Any]) -> bytes:
    fields = ("type", "action", "reason", "reportingController", "reportingInstance", "regarding", "related")
    return orjson.dumps({field: event.get(field) for field in fields}, option=orjson.OPT_SORT_KEYS)


def _remember(cache: OrderedDict[str, Any], key: str, value: Any) -> None:
    """Put `value` in a least-recently-used cache of CORE_CACHE_ENTRIES."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > CORE_CACHE_ENTRIES:
        cache.popitem(last=False)


def _object_parts(event: dict[str, Any]) -> tuple[Any, ...]:
    source, ref = event["source"], event["involvedObject"]
    return (source.get("component"), source.get("host"), ref.get("kind"), ref.get("namespace"), ref.get("name"),
            ref.get("uid"), ref.get("apiVersion"), event["type"])


def _similar_key(event: dict[str, Any]) -> str:
    return "\0".join(str(part or "") for part in (*_object_parts(event), event["reason"]))


def _spam_key(event: dict[str, Any]) -> str:
    return "\0".join(str(part or "") for part in _object_parts(event))


def _core_key(event: dict[str, Any]) -> str:
    source, ref = event["source"], event["involvedObject"]
    parts = (source.get("component"), source.get("host"), ref.get("kind"), ref.get("namespace"),
             ref.get("name"), ref.get("fieldPath"), ref.get("uid"), ref.get("apiVersion"), event["type"],
             event["reason"], event["message"])
    return "\0".join(str(part or "") for part in parts)

"""The REST client: get, list, create, update, patch, delete and watch any resource over the apiserver's API.

Every component talks to the apiserver through one `RESTClient` (one aiohttp session, HTTP/1.1, a pool of
keep-alive connections) built from a `kubeconfig.ClientConfig`: TLS with the cluster's CA, the component's
client certificate or bearer token, and a User-Agent naming the component. Bodies are JSON (orjson). A
failed call raises the `errors` class the server's `metav1.Status` names (`NotFound`, `Conflict`, ...);
a network failure raises `errors.TransportError` (`errors.ConnectError` when no connection could be made),
so callers can tell "the server said no" from "the server could not be reached". (aiohttp rather than
httpx: measured here, httpx spent ~1 ms of client CPU on each small request, aiohttp ~0.2 ms; a hundred
simulated kubelets in one process are mostly requests.)

`watch` yields `WatchEvent(type, object)` from the server's newline-delimited JSON stream (`?watch=1`):
ADDED, MODIFIED, DELETED and, when allowed, BOOKMARK (an object carrying only a resourceVersion). An ERROR
event ends the watch with its Status raised (410 Expired → `errors.Expired`, a `Gone`: relist). The
generator returns when the server ends the stream, including when the connection drops mid-stream, as
client-go's stream watcher treats an unexpected EOF as a normal close; the reflector then watches again.

Usage rules:
* `async with RESTClient(config) as client:` (or `await client.close()`); one client per process is enough.
* Namespaced resources need a namespace for single-object calls (given, or the body's
  `metadata.namespace`); `list`/`watch` without one span all namespaces.
* Leave a watch early with `contextlib.aclosing(client.watch(...))` so its connection is released at once.
* `config.qps > 0` throttles every request (watches included) with a token bucket of `config.burst`.
* A task that calls `requests_in_background()` (an event sink) sends its requests only when no other request
  of the same client waits for a slot: what kube gets from sending events on a client of their own, so that
  events never hold up a component's other writes.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import contextvars
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import orjson

from minikube_py.api.kinds import Resource

from . import errors
from .kubeconfig import ClientConfig, ConfigError
from .resources import path

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML, so the body is sent as JSON
}
TOKEN_FILE_REFRESH = 60.0  # seconds between re-reads of a token file, as client-go does
# Requests (not watches) a client has on the wire at once by default; the rest wait their turn, one
# connection each: the single-threaded apiserver gains nothing from more.
MAX_IN_FLIGHT = 16
# How long an idle connection stays open (client-go's transport: 90 s). A shorter one would close a kubelet's
# connection between two Lease renewals (every 10 s) and pay a TLS handshake on both ends for each.
IDLE_CONNECTION_TIMEOUT = 90.0
WATCH_READ_SLACK = 30.0  # a watch with timeoutSeconds may stay silent this much longer before we give up
_background: contextvars.ContextVar[bool] = contextvars.ContextVar("mkpy_rest_background", default=False)


def requests_in_background() -> None:
    """From now on the calling task's requests (and those of tasks it starts) give way to every other request
    waiting for one of the client's slots."""
    _background.set(True)


class Slots:
    """At most `size` requests on the wire at once; the others wait, first come first served, except that a
    background request waits as long as any other does."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiting: tuple[deque[asyncio.Future[None]], deque[asyncio.Future[None]]] = (deque(), deque())

    @contextlib.asynccontextmanager
    async def held(self, background: bool = False) -> AsyncIterator[None]:
        await self._acquire(background)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, background: bool) -> None:
        foreground, behind = self._waiting
        if self._free > 0 and not foreground and not (background and behind):
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[background].append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot just as it was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):  # unless a release already dropped it
                    self._waiting[background].remove(waiter)
            raise

    def _release(self) -> None:
        for queue in self._waiting:
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)  # the slot goes straight to it
                    return
        self._free += 1


class WatchEvent(NamedTuple):
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    object: dict[str, Any]


class RESTClient:
    """An async client for the apiserver named by `config`."""

    def __init__(self, config: ClientConfig, *, timeout: float = 30.0, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        """`max_in_flight` bounds the requests (and so the connections) on the wire at once: fewer suit a
        process with many clients, such as a hundred simulated kubelets."""
        self.config = config
        self._timeout = timeout
        self._throttle = _TokenBucket(config.qps, config.burst) if config.qps > 0 else None
        # Requests wait for one of max_in_flight slots here, in O(1) queues, rather than in the
        # connection pool's queue (thousands of binds queued at once made a pool's queue the scheduler's main
        # cost). Watches hold a connection each for minutes, so they get a pool of their own and never take a
        # request's place. The sessions are made on first use, inside the event loop that uses them.
        self._slots = Slots(max_in_flight)
        self._max_in_flight = max_in_flight
        self._auth = _bearer_auth(config)
        self._server = config.server.rstrip("/")
        self._ssl = config.ssl_context()
        self._http: aiohttp.ClientSession | None = None
        self._watch_http: aiohttp.ClientSession | None = None

    def _session(self, watches: bool) -> aiohttp.ClientSession:
        session = self._watch_http if watches else self._http
        if session is None:
            connector = (aiohttp.TCPConnector(ssl=self._ssl, limit=0, force_close=True) if watches else
                         aiohttp.TCPConnector(ssl=self._ssl, limit=self._max_in_flight,
                                              keepalive_timeout=IDLE_CONNECTION_TIMEOUT))
            session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=self._timeout),
                headers={"User-Agent": self.config.user_agent, "Accept": "application/json"},
                skip_auto_headers=("Accept-Encoding",))
            if watches:
                self._watch_http = session
            else:
                self._http = session
        return session

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Content-Type": content_type} if content_type else {}
        if self._auth is not None:
            headers["Authorization"] = self._auth.header()
        return headers

    def set_bearer_token(self, token: str) -> None:
        """Send `token` from the next request on (a client made with a token, e.g. a controller's renewed
        ServiceAccount token)."""
        if self._auth is None:
            raise ValueError("this client authenticates without a bearer token")
        self._auth.token = token

    async def __aenter__(self) -> RESTClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for session in (self._http, self._watch_http):
            if session is not None:
                await session.close()
        self._http = self._watch_http = None

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return await self._request("GET", path(resource, _namespace(resource, namespace), name))

    async def get_path(self, url: str) -> dict[str, Any]:
        """GET a path that is not an object, such as a discovery document (`/apis/apps/v1`)."""
        return await self._request("GET", url)

    async def list(self, resource: Resource, namespace: str | None = None, *, label_selector: str = "",
                   field_selector: str = "", limit: int = 0, continue_: str = "",
                   resource_version: str = "") -> dict[str, Any]:
        """One List object (one page of it when `limit` is set: follow `metadata.continue`)."""
        params = {"labelSelector": label_selector, "fieldSelector": field_selector, "limit": limit or "",
                  "continue": continue_, "resourceVersion": resource_version}
        return await self._request("GET", path(resource, namespace or None), params=params)

    async def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None, *,
                     name: str | None = None, subresource: str | None = None, field_manager: str = "",
                     dry_run: bool = False) -> dict[str, Any]:
        """POST `body`; with `subresource`, to that subresource of object `name` (e.g. `pods/binding`)."""
        ns = _namespace(resource, namespace, body)
        if subresource:
            url = path(resource, ns, name or _name_of(body), subresource)
        else:
            url = path(resource, ns)
        return await self._request("POST", url, params=_write_params(field_manager, dry_run), body=body)

    async def update(self, resource: Resource, body: dict[str, Any], namespace: str | None = None, *,
                     subresource: str | None = None, field_manager: str = "",
                     dry_run: bool = False) -> dict[str, Any]:
        """PUT `body` (with its `metadata.resourceVersion`, the write fails with Conflict if it is stale)."""
        url = path(resource, _namespace(resource, namespace, body), _name_of(body), subresource)
        return await self._request("PUT", url, params=_write_params(field_manager, dry_run), body=body)

    async def patch(self, resource: Resource, name: str, body: dict[str, Any] | builtins.list[Any],
                    namespace: str | None = None, *, patch_type: str = "merge", subresource: str | None = None,
                    field_manager: str = "", force: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """PATCH with a JSON merge, strategic merge, JSON (RFC 6902) or server-side apply patch."""
        if patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"unknown patch type {patch_type!r}: use one of {', '.join(PATCH_CONTENT_TYPES)}")
        params = _write_params(field_manager, dry_run)
        if force:
            params["force"] = "true"
        url = path(resource, _namespace(resource, namespace), name, subresource)
        return await self._request("PATCH", url, params=params, body=body,
                                   content_type=PATCH_CONTENT_TYPES[patch_type])

    async def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
                     grace_period_seconds: int | None = None, preconditions: dict[str, str] | None = None,
                     propagation_policy: str | None = None) -> dict[str, Any]:
        """DELETE; returns the object as deleted (or still terminating), or a Success Status."""
        options: dict[str, Any] = {"gracePeriodSeconds": grace_period_seconds, "preconditions": preconditions,
                                   "propagationPolicy": propagation_policy}
        options = {key: value for key, value in options.items() if value is not None}
        body = {"kind": "DeleteOptions", "apiVersion": "v1", **options} if options else None
        return await self._request("DELETE", path(resource, _namespace(resource, namespace), name), body=body)

    async def delete_collection(self, resource: Resource, namespace: str | None = None, *,
                                label_selector: str = "", propagation_policy: str | None = None) -> dict[str, Any]:
        """DELETE every object of `resource` (in `namespace`) matching `label_selector`; returns the List of
        what was deleted or marked for deletion."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation_policy} \
            if propagation_policy else None
        return await self._request("DELETE", path(resource, namespace or None),
                                   params={"labelSelector": label_selector}, body=body)

    async def watch(self, resource: Resource, namespace: str | None = None, *, resource_version: str = "",
                    allow_bookmarks: bool = True, label_selector: str = "", field_selector: str = "",
                    timeout_seconds: int | None = None) -> AsyncGenerator[WatchEvent, None]:
        """The changes after `resource_version` ("" or "0": first the current objects as ADDED)."""
        params = _query({"watch": "1", "resourceVersion": resource_version, "labelSelector": label_selector,
                         "fieldSelector": field_selector, "timeoutSeconds": timeout_seconds or "",
                         "allowWatchBookmarks": "true" if allow_bookmarks else ""})
        read = None if timeout_seconds is None else timeout_seconds + WATCH_READ_SLACK
        await self._throttled()
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout, sock_read=read)
        url = self._server + path(resource, namespace or None)
        try:
            response = await self._session(watches=True).get(url, params=params, headers=self._headers(),
                                                             timeout=timeout)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise _transport_error("GET", url, error) from None
        async with response:
            if response.status != 200:
                raise errors.from_response(response.status, await _read(response))
            async for event in _decode_stream(response):
                yield event

    async def _request(self, method: str, url: str, *, params: dict[str, Any] | None = None,
                       body: Any = None, content_type: str = "application/json") -> dict[str, Any]:
        await self._throttled()
        content = None if body is None else orjson.dumps(body)
        headers = self._headers(content_type if content is not None else None)
        async with self._slots.held(_background.get()):
            try:
                async with self._session(watches=False).request(
                        method, self._server + url, params=_query(params or {}) or None, data=content,
                        headers=headers) as response:
                    status, payload = response.status, await response.read()
            except (aiohttp.ClientError, TimeoutError) as error:
                raise _transport_error(method, url, error) from None
        if not 200 <= status < 300:
            raise errors.from_response(status, payload)
        if not payload:
            return {}
        try:
            decoded: dict[str, Any] = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise ValueError(f"{method} {url}: the server's response is not JSON") from None
        return decoded

    async def _throttled(self) -> None:
        if self._throttle is not None:
            delay = self._throttle.reserve()
            if delay > 0:
                await asyncio.sleep(delay)


async def _decode_stream(response: aiohttp.ClientResponse) -> AsyncIterator[WatchEvent]:
    """Events from a watch response body, one JSON object per line, until the stream ends."""
    pending = b""
    try:
        async for chunk in response.content.iter_any():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield _decode_event(line)
    except (aiohttp.ClientError, TimeoutError):
        return  # the connection went away mid-stream: a normal end, the caller watches again


async def _read(response: aiohttp.ClientResponse) -> bytes:
    try:
        return await response.read()
    except (aiohttp.ClientError, TimeoutError):
        return b""


def _transport_error(method: str, url: str, error: BaseException) -> errors.TransportError:
    """The apiserver did not answer: `ConnectError` if no connection was made, else `TransportError`."""
    text = str(error) or type(error).__name__
    if isinstance(error, aiohttp.ClientConnectorError | aiohttp.ServerFingerprintMismatch):
        return errors.ConnectError(f"{method} {url}: cannot connect: {text}")
    if isinstance(error, TimeoutError):
        return errors.TransportError(f"{method} {url}: timed out")
    return errors.TransportError(f"{method} {url}: {text}")


def _decode_event(line: bytes) -> WatchEvent:
    try:
        event = orjson.loads(line)
        kind, obj = event["type"], event["object"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"watch stream: not an event: {line[:200]!r}") from None
    if kind == "ERROR":
        raise errors.from_status(obj if isinstance(obj, dict) else {"message": str(obj)})
    return WatchEvent(kind, obj)


def _namespace(resource: Resource, namespace: str | None, body: dict[str, Any] | None = None) -> str | None:
    if not resource.namespaced:
        return None
    namespace = namespace or ((body or {}).get("metadata") or {}).get("namespace")
    if not namespace:
        raise ValueError(f"{resource.plural} are namespaced: a namespace is required")
    return namespace


def _name_of(body: dict[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("the object has no metadata.name")
    return str(name)


def _write_params(field_manager: str, dry_run: bool) -> dict[str, Any]:
    return {"fieldManager": field_manager, "dryRun": "All" if dry_run else ""}


def _query(params: dict[str, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in params.items() if value not in ("", None)}


class _TokenBucket:
    """Allows `qps` requests a second with bursts of `burst`; a request over the rate waits its turn."""

    def __init__(self, qps: float, burst: int) -> None:
        self._qps, self._burst = qps, max(burst, 1)
        self._tokens, self._last = float(self._burst), time.monotonic()

    def reserve(self) -> float:
        """Take a token (possibly one not yet earned) and return how long to wait until it is."""
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps


class _BearerToken:
    """Makes `Authorization: Bearer …`; a token file is re-read every minute so rotated tokens are used."""

    def __init__(self, token: str | None, token_file: str | None) -> None:
        self.token, self._file, self._read_at = token or "", token_file, 0.0
        if token_file:
            self._reload()

    def header(self) -> str:
        if self._file and time.monotonic() - self._read_at > TOKEN_FILE_REFRESH:
            self._reload()
        return f"Bearer {self.token}"

    def _reload(self) -> None:
        assert self._file is not None
        try:
            self.token = Path(self._file).read_text().strip()
        except OSError as err:
            if not self.token:
                raise ConfigError(f"cannot read the token file {self._file}: {err.strerror}") from err
        self._read_at = time.monotonic()


def _bearer_auth(config: ClientConfig) -> _BearerToken | None:
    if not (config.token or config.token_file):
        return None
    return _BearerToken(config.token, config.token_file)

"""The local cloud's data plane: a TCP proxy that listens on one address:port and spreads connections over
backends, as a cloud's network load balancer does (a "TCP listener" with a "target pool" and health checks).

    proxy = TCPProxy("127.0.100.1", 80, health_check_interval=2.0)
    await proxy.start()                                   # ListenError when address:port cannot be bound
    proxy.set_backends([("10.244.0.5", 8080), ("10.244.1.7", 8080)])
    ...
    await proxy.close()                                   # stops listening and drops open connections

How a connection is carried. Each accepted client connection is paired with one backend connection and the
two are joined by a pair of `_Pipe` protocols: whatever one side receives is written to the other at once
(asyncio transports write straight to the socket when they can, so a byte is copied once per hop and no
task runs per chunk). Flow control is the transports' own: when one side's write buffer fills up, reading
from the other side pauses until it drains. A FIN from one side is passed on as a FIN to the other (a
half-close, so a client may finish sending and still read the answer); the pair is closed once both
directions have ended, or at once when either side breaks.

Which backend. Backends are taken round-robin among the healthy ones. If a backend refuses the connection
(or is unreachable) it is marked unhealthy at once (a passive check) and the next one is tried; one that does
not answer within `connect_timeout` is skipped without marking, since a busy server's full accept queue looks
the same. When every backend is unhealthy, all of them are tried ("fail open", as clouds' network load
balancers do: a wrong health verdict must not take the whole service down); when none answers, the client
connection is closed. An active check runs every `health_check_interval` seconds: a TCP connect to every
backend, with a timeout longer than Linux's 1 s SYN resend (a busy server dropping one SYN is not down);
success marks a backend healthy, `UNHEALTHY_THRESHOLD` failures in a row unhealthy. New backends count as
healthy until checks say otherwise, so a scale-up takes traffic at once.

Usage rules: create, use and close a proxy on one event loop; `set_backends` may be called at any time and
affects new connections only (open ones stay where they are, as with a real load balancer's connection
draining).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
from collections.abc import Iterable

from minikube_py.ccm.cloud.interface import CloudProviderError

log = logging.getLogger(__name__)

Backend = tuple[str, int]  # (ip, port)

CONNECT_TIMEOUT = 3.0  # seconds a backend has to accept a client's connection (Linux resends a lost SYN after 1 s)
HEALTH_CHECK_TIMEOUT = 2.5  # seconds a backend has to accept a health check's connection
UNHEALTHY_THRESHOLD = 2  # active checks failed in a row before a backend is taken out


class ListenError(CloudProviderError):
    """The proxy cannot listen on its address:port (in use, or not an address of this host)."""


class TCPProxy:
    """One listener forwarding TCP connections to a set of backends."""

    def __init__(self, address: str, port: int, *, health_check_interval: float,
                 connect_timeout: float = CONNECT_TIMEOUT, health_check_timeout: float = HEALTH_CHECK_TIMEOUT) -> None:
        self.address = address
        self.port = port
        self.health_check_interval = health_check_interval
        self.connect_timeout = connect_timeout
        self.health_check_timeout = health_check_timeout
        self._backends: list[Backend] = []
        self._unhealthy: set[Backend] = set()
        self._failed_checks: dict[Backend, int] = {}  # backend -> active checks failed in a row
        self._healthy: list[Backend] = []
        self._next = 0
        self._server: asyncio.Server | None = None
        self._health_task: asyncio.Task[None] | None = None
        self._pipes: set[_Pipe] = set()

    @property
    def backends(self) -> list[Backend]:
        return list(self._backends)

    @property
    def healthy(self) -> list[Backend]:
        return list(self._healthy)

    async def start(self) -> None:
        """Listen on address:port and start health checking; ListenError when the bind fails."""
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(lambda: _Pipe(self), self.address, self.port,
                                                    reuse_address=True, backlog=1024)
        except OSError as error:
            reason = os.strerror(error.errno) if error.errno else str(error)
            if error.errno == errno.EADDRNOTAVAIL:
                reason += " (not an address of this host)"
            raise ListenError(f"cannot listen on {self.address}:{self.port}: {reason.lower()}") from None
        self._health_task = asyncio.create_task(self._check_health_forever(),
                                                name=f"health-check-{self.address}:{self.port}")

    async def close(self) -> None:
        """Stop listening and health checking, and close every open connection."""
        if self._health_task is not None:
            self._health_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._health_task
            self._health_task = None
        if self._server is not None:
            self._server.close()
            for pipe in list(self._pipes):
                pipe.abort()
            await self._server.wait_closed()
            self._server = None

    def set_backends(self, backends: Iterable[Backend]) -> None:
        self._backends = list(dict.fromkeys(backends))
        self._unhealthy &= set(self._backends)
        self._failed_checks = {b: n for b, n in self._failed_checks.items() if b in self._backends}
        self._refresh()

    def mark(self, backend: Backend, healthy: bool) -> None:
        if healthy == (backend not in self._unhealthy) or backend not in self._backends:
            return
        log.info("load balancer %s:%d: backend %s:%d is %s", self.address, self.port, *backend,
                 "healthy" if healthy else "unhealthy")
        if healthy:
            self._unhealthy.discard(backend)
        else:
            self._unhealthy.add(backend)
        self._refresh()

    def candidates(self) -> list[Backend]:
        """The healthy backends in the order a new connection tries them: each connection starts one further."""
        healthy = self._healthy or self._backends  # fail open when no backend passes its checks
        if not healthy:
            return []
        first = self._next % len(healthy)
        self._next = first + 1
        return healthy[first:] + healthy[:first]

    async def check_health(self) -> None:
        """One round of active checks: connect to every backend, mark it by the outcome."""
        backends = list(self._backends)
        results = await asyncio.gather(*(self._reachable(backend) for backend in backends))
        for backend, reachable in zip(backends, results, strict=True):
            failed = 0 if reachable else self._failed_checks.get(backend, 0) + 1
            self._failed_checks[backend] = failed
            if reachable or failed >= UNHEALTHY_THRESHOLD:
                self.mark(backend, reachable)

    async def connect(self, pipe: _Pipe) -> None:
        """Pair a newly accepted client connection with a backend connection; close it when none answers."""
        loop = asyncio.get_running_loop()
        for backend in self.candidates():
            try:
                async with asyncio.timeout(self.connect_timeout):
                    transport, _ = await loop.create_connection(pipe.peer_protocol, *backend)
            except TimeoutError:
                continue  # maybe only overloaded (its accept queue full): the health check decides
            except OSError:
                self.mark(backend, False)  # refused or unreachable: down until a check finds it up
                continue
            pipe.start(transport)
            return
        pipe.transport.close()  # type: ignore[union-attr]

    def _refresh(self) -> None:
        self._healthy = [backend for backend in self._backends if backend not in self._unhealthy]

    async def _reachable(self, backend: Backend) -> bool:
        try:
            async with asyncio.timeout(self.health_check_timeout):
                _, writer = await asyncio.open_connection(*backend)
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    async def _check_health_forever(self) -> None:
        while True:
            await asyncio.sleep(self.health_check_interval)
            await self.check_health()


class _Pipe(asyncio.Protocol):
    """One side of a proxied connection; `peer` is the other side and `out` its transport, where our bytes go.
    The client side is made by the server, its backend side by `peer_protocol()` once a backend accepts."""

    def __init__(self, proxy: TCPProxy, peer: _Pipe | None = None) -> None:
        self.proxy = proxy
        self.peer = peer
        self.transport: asyncio.Transport | None = None
        self.out: asyncio.Transport | None = None
        self.eof = False
        self.early = b""  # the client's bytes that came before its backend connection (uvloop only)
        self.connecting: asyncio.Task[None] | None = None

    def peer_protocol(self) -> _Pipe:
        self.peer = _Pipe(self.proxy, self)
        self.peer.out = self.transport  # the backend may speak first: its bytes can flow from the start
        return self.peer

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.transport = transport  # (uvloop's transports are not asyncio.Transport instances)
        if self.peer is None:  # the client side: hold its bytes until a backend is connected
            transport.pause_reading()
            self.proxy._pipes.add(self)
            self.connecting = asyncio.get_running_loop().create_task(self.proxy.connect(self))

    def start(self, backend: asyncio.Transport) -> None:
        """The client side's backend connection is made: let the client's bytes flow (or drop the backend
        connection if the client is gone meanwhile)."""
        assert self.transport is not None
        self.out = backend
        if self.transport.is_closing():
            backend.close()
            return
        if self.early:
            backend.write(self.early)
        if self.eof:
            backend.write_eof()
        else:
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        out = self.out
        if out is None:  # uvloop starts reading right after connection_made, even when it paused reading
            self.early += data
            self.transport.pause_reading()  # type: ignore[union-attr]
            return
        out.write(data)

    def eof_received(self) -> bool:
        self.eof = True
        out = self.out
        if out is None:  # the client is done before its backend connection is made: start() passes it on
            return True
        if self.peer is not None and self.peer.eof:
            self.transport.close()  # type: ignore[union-attr]
            out.close()
        elif out.can_write_eof():
            out.write_eof()
        return True  # keep our transport open: the other direction may still carry data

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None and not self.peer.transport.is_closing():
            self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.proxy._pipes.discard(self)
        if self.out is not None:
            self.out.close()

    def abort(self) -> None:
        if self.connecting is not None:
            self.connecting.cancel()
        for transport in (self.transport, self.out):
            if transport is not None:
                transport.abort()

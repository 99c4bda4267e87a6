"""Passing a command or a forwarded port on to the next hop (apiserver → kubelet → runtime).

Upstream, the apiserver and the kubelet always speak SPDY/3.1 (`v4.channel.k8s.io` for commands,
`portforward.k8s.io` for ports), whatever the user's client spoke to them: SPDY can say "stdin is
finished" (FIN on the stdin stream), which v4 WebSocket cannot, and containerd 1.6 knows no v5. This is
what kube-apiserver does too since 1.30 (it translates kubectl's WebSocket to SPDY towards the kubelet).

    await proxy_command(channels, lambda: open_command(url, options, ssl_context))
    handler = PortForwardProxy(lambda: connect_spdy(url, [PORT_FORWARD], ssl_context=ctx))

When the next hop cannot be reached or refuses, the user gets a failure Status on the error channel
(commands) or the reason as text on the port's error stream (port-forward): the user's connection is
already upgraded by then.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections.abc import Awaitable, Callable

from . import channels, portforward
from .remotecommand import Channels, SpdyChannels, StreamOptions, bridge
from .session import SpdySession
from .upgrade import UpgradeError, connect_spdy

UPSTREAM_ERRORS = (UpgradeError, OSError, TimeoutError)


def describe(err: BaseException, address: str = "") -> str:
    """What to tell the user about a failed connection to `address` (host:port): a kubelet's Status message
    as is, anything else as kube's apiserver words it."""
    if isinstance(err, UpgradeError):
        try:
            status = json.loads(err.body)
        except ValueError:
            return str(err)
        if isinstance(status, dict) and status.get("kind") == "Status":
            return str(status.get("message", err))
        return str(err)
    return f"error dialing backend: {dial_error(err, address)}"


def dial_error(err: BaseException, address: str) -> str:
    """A failed dial as Go words it: `dial tcp 10.0.0.5:10250: connect: connection refused`."""
    if isinstance(err, TimeoutError):
        return f"dial tcp {address}: i/o timeout"
    if isinstance(err, OSError) and err.errno:
        return f"dial tcp {address}: connect: {os.strerror(err.errno).lower()}"
    return str(err)


async def open_command(url: str, options: StreamOptions, ssl_context: ssl.SSLContext | None = None,
                       headers: dict[str, str] | None = None) -> Channels:
    """The client side of a command at `url` (a kubelet's /exec/..., a runtime's streaming URL)."""
    session, _ = await connect_spdy(url, [channels.V4], ssl_context=ssl_context, headers=headers)
    return await SpdyChannels.open(session, options)


async def proxy_command(down: Channels, open_upstream: Callable[[], Awaitable[Channels]],
                        address: str = "") -> None:
    """Run the user's command (`down`) at the next hop (`address`, for messages); on failure tell the user
    why and hang up."""
    try:
        up = await open_upstream()
    except UPSTREAM_ERRORS as err:
        status = channels.failure_status(f"Internal error occurred: {describe(err, address)}")
        await down.send(channels.ERROR, channels.status_bytes(status))
        await down.close()
        return
    await bridge(down, up)


class PortForwardProxy:
    """A `portforward.Handler` that forwards every connection over one upstream session, opened with
    `connect` at the first connection (a runtime's URL can be used only once)."""

    def __init__(self, connect: Callable[[], Awaitable[tuple[SpdySession, str]]], address: str = "") -> None:
        self.connect = connect
        self.address = address
        self._client: portforward.PortForwardClient | None = None
        self._lock = asyncio.Lock()

    async def _upstream(self) -> portforward.PortForwardClient:
        async with self._lock:
            if self._client is None or self._client.session.closed.is_set():
                session, _ = await self.connect()
                self._client = portforward.PortForwardClient(session)
            return self._client

    async def __call__(self, port: int, data: portforward.Pipe, error: portforward.Pipe) -> None:
        try:
            client = await self._upstream()
            upstream_data, upstream_error = await client.open(port)
        except (*UPSTREAM_ERRORS, ConnectionError) as err:
            await error.write(describe(err, self.address).encode())
            return
        await portforward.relay(data, error, upstream_data, upstream_error)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

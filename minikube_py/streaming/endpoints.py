"""Serving exec, attach and port-forward requests over whichever protocol the client chose.

The same URL is reached three ways, and every server here (the apiserver, the kubelet, a runtime's
streaming server) accepts all of them:

* `GET` + `Upgrade: websocket`: exec/attach with subprotocol `v5.channel.k8s.io` (kubectl 1.32) or
  `v4.channel.k8s.io` (the Python client); port-forward with `SPDY/3.1+portforward.k8s.io` (kubectl 1.32:
  a SPDY session inside the WebSocket) or `v4.channel.k8s.io` (the Python client, `?ports=`);
* `POST` + `Upgrade: SPDY/3.1`: kubectl's fallback and what the apiserver and kubelets use upstream
  (`v4.channel.k8s.io` for commands, `portforward.k8s.io` for port-forward).

A server says what to do with a command as a `CommandSession(channels)` (run it, or `proxy.proxy_command`
it upstream) and with a forwarded connection as a `portforward.Handler`; these functions do the rest:

    async def exec_ws(websocket):   await serve_command_websocket(websocket, options, session)
    async def exec_spdy(request):   return command_spdy_response(options, session)
    async def pf_ws(websocket):     await serve_port_forward_websocket(websocket, handler, on_end)
    async def pf_spdy(request):     return port_forward_spdy_response(handler, on_end)

(`on_end`, optional, runs once the user's connection is over: a proxy closes its upstream session there.)

A WebSocket whose subprotocols we do not speak is refused (403) before it is accepted, so kubectl falls
back to SPDY.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.responses import Response
from starlette.websockets import WebSocket

from . import channels, portforward
from .remotecommand import Channels, SpdyChannels, StreamOptions, WebSocketChannels
from .session import SpdySession
from .transport import StarletteWebSocketStream
from .upgrade import SpdyUpgradeResponse

CommandSession = Callable[[Channels], Awaitable[None]]
Cleanup = Callable[[], Awaitable[None]]

COMMAND_WEBSOCKET_PROTOCOLS = [channels.V5, channels.V4]
PORT_FORWARD_WEBSOCKET_PROTOCOLS = [channels.SPDY_PORT_FORWARD, channels.V4]


async def serve_command_websocket(websocket: WebSocket, options: StreamOptions, session: CommandSession) -> None:
    protocol = channels.negotiate(websocket.scope.get("subprotocols", []), COMMAND_WEBSOCKET_PROTOCOLS)
    if protocol is None:
        await websocket.close(1002)  # before accept: uvicorn answers 403
        return
    await websocket.accept(subprotocol=protocol)
    await session(WebSocketChannels(websocket, protocol))


def command_spdy_response(options: StreamOptions, session: CommandSession) -> Response:
    async def serve(spdy: SpdySession, protocol: str) -> None:
        try:
            command = await SpdyChannels.accept(spdy, options)
        except (TimeoutError, ConnectionError):
            return
        await session(command)

    return SpdyUpgradeResponse([channels.V4], serve)


async def serve_port_forward_websocket(websocket: WebSocket, handler: portforward.Handler,
                                       on_end: Cleanup | None = None) -> None:
    """kubectl's SPDY tunnel, or the Python client's channels for the ports in `?ports=` (at least one;
    without valid ports the socket is refused). `on_end` runs when the user's connection is over."""
    try:
        await _serve_port_forward_websocket(websocket, handler)
    finally:
        if on_end is not None:
            await on_end()


async def _serve_port_forward_websocket(websocket: WebSocket, handler: portforward.Handler) -> None:
    protocol = channels.negotiate(websocket.scope.get("subprotocols", []), PORT_FORWARD_WEBSOCKET_PROTOCOLS)
    if protocol == channels.SPDY_PORT_FORWARD:
        await websocket.accept(subprotocol=protocol)
        session = SpdySession(StarletteWebSocketStream(websocket), client=False).start()
        await portforward.serve_spdy(session, handler)
        return
    try:
        ports = [portforward.parse_port(p) for p in websocket.query_params.get("ports", "").split(",")]
    except ValueError:
        ports = []
    if protocol is None or not ports:
        await websocket.close(1002)
        return
    await websocket.accept(subprotocol=protocol)
    await portforward.serve_websocket(websocket, ports, handler)


def port_forward_spdy_response(handler: portforward.Handler, on_end: Cleanup | None = None) -> Response:
    async def serve(spdy: SpdySession, protocol: str) -> None:
        try:
            await portforward.serve_spdy(spdy, handler)
        finally:
            if on_end is not None:
                await on_end()

    return SpdyUpgradeResponse([channels.PORT_FORWARD], serve)

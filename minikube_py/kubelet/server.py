"""The kubelet's HTTPS API (port 10250): logs, exec, attach, port-forward, pods, stats, health.

The apiserver reaches a node's containers only through here (`kubectl logs` → apiserver `pods/log` →
`/containerLogs/...`). Endpoints, as the real kubelet names them:

    GET  /healthz                                      "ok"
    GET  /pods                                         a v1 PodList of this node's pods
    GET  /stats/summary                                the stats Summary (kubectl top, metrics)
    GET  /containerLogs/{ns}/{pod}/{container}         ?follow&tailLines&sinceSeconds&sinceTime
                                                       &timestamps&previous&limitBytes → text/plain
    GET|POST /exec/{ns}/{pod}/{container}?command=..&stdin&stdout&stderr&tty    WebSocket | SPDY/3.1
    GET|POST /attach/{ns}/{pod}/{container}?stdin&stdout&stderr&tty             WebSocket | SPDY/3.1
    GET|POST /portForward/{ns}/{pod}[?port=..]                                  WebSocket | SPDY/3.1

For exec, attach and port-forward the kubelet asks the runtime over CRI for a single-use streaming URL
and bridges the caller's streams to it (`streaming.proxy`: SPDY towards the runtime). Every request is
authenticated and authorized first (`server_auth.py`). Errors are metav1.Status.

The server sees the rest of the kubelet only through `NodeBackend` (below); `serve` runs it on uvicorn
with TLS (the node's serving certificate; client certificates verified against the cluster CA).
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from ..client.rest import RESTClient
from ..streaming import channels, endpoints, proxy
from ..streaming.remotecommand import Channels, StreamOptions
from ..streaming.upgrade import connect_spdy
from ..streaming.uvicorn_protocols import StreamingHttpProtocol, StreamingWebSocketProtocol
from .cri import api_pb2 as cri
from .cri.errors import CRIError, CRINotFound
from .cri.logs import parse_timestamp, read_log
from .server_auth import KubeletAuth, status

# interface to the rest of the kubelet ---------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerRef:
    """A container of a pod on this node, as the server needs it."""

    container_id: str
    log_path: str
    running: bool
    previous_log_path: str | None = None  # the log of the previous instance, if it restarted


class StreamingRuntime(Protocol):
    """The CRI calls the server makes (`cri.client.RuntimeClient` has them)."""

    async def exec(self, request: cri.ExecRequest) -> str: ...
    async def attach(self, request: cri.AttachRequest) -> str: ...
    async def port_forward(self, pod_sandbox_id: str, ports: list[int]) -> str: ...


class NodeBackend(Protocol):
    runtime: StreamingRuntime

    def pods(self) -> list[dict[str, Any]]:
        """The pods bound to this node, as the kubelet last saw them (v1 Pod objects)."""
        ...

    def find_container(self, namespace: str, pod: str, container: str) -> ContainerRef:
        """Raises LookupError with a kube-like message (`pod "x" not found`, `container "c" in pod "x" is
        waiting to start: ContainerCreating`) when there is no such container."""
        ...

    def sandbox_id(self, namespace: str, pod: str) -> str:
        """The pod's sandbox; raises LookupError like find_container."""
        ...

    async def stats_summary(self) -> dict[str, Any]:
        """The stats Summary (`node`, `pods`) as /stats/summary serves it."""
        ...


# the app --------------------------------------------------------------------------------------------


class BadRequest(Exception):
    pass


def _error(code: int, reason: str, message: str) -> JSONResponse:
    return JSONResponse(status(code, reason, message), status_code=code)


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _positive(query: Any, name: str, minimum: int) -> int | None:
    value = query.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(f'{name}: invalid value "{value}"') from None
    if number < minimum:
        raise BadRequest(f"{name}: must be greater than {'or equal to ' if minimum == 0 else ''}0")
    return number


class KubeletServer:
    def __init__(self, backend: NodeBackend, node_name: str, api: RESTClient | None) -> None:
        """`api` asks the apiserver to authenticate tokens and authorize requests; None serves everyone
        (tests of the endpoints alone)."""
        self.backend = backend
        self.node_name = node_name
        self.api = api

    def app(self) -> Any:
        streaming = "/{namespace}/{pod}/{container}"
        routes = [
            Route("/healthz", self.healthz), Route("/pods", self.pods), Route("/stats/summary", self.stats),
            Route("/containerLogs" + streaming, self.container_logs),
            Route("/exec" + streaming, self.command_spdy, methods=["POST"]),
            WebSocketRoute("/exec" + streaming, self.command_websocket),
            Route("/attach" + streaming, self.command_spdy, methods=["POST"]),
            WebSocketRoute("/attach" + streaming, self.command_websocket),
            Route("/portForward/{namespace}/{pod}", self.port_forward_spdy, methods=["POST"]),
            WebSocketRoute("/portForward/{namespace}/{pod}", self.port_forward_websocket),
        ]
        app = Starlette(routes=routes)
        return KubeletAuth(app, self.node_name, self.api) if self.api is not None else app

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def pods(self, request: Request) -> Response:
        return JSONResponse({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": self.backend.pods()})

    async def stats(self, request: Request) -> Response:
        return JSONResponse(await self.backend.stats_summary())

    # logs -------------------------------------------------------------------------------------------

    async def container_logs(self, request: Request) -> Response:
        namespace, pod, name = (request.path_params[k] for k in ("namespace", "pod", "container"))
        query = request.query_params
        try:
            ref = self.backend.find_container(namespace, pod, name)
            options = self._log_options(query)
        except LookupError as err:
            return _error(404, "NotFound", err.args[0] if err.args else str(err))
        except BadRequest as err:
            return _error(400, "BadRequest", str(err))
        previous = _flag(query.get("previous"))
        path = ref.previous_log_path if previous else ref.log_path
        if previous and not path:
            return _error(400, "BadRequest", f'previous terminated container "{name}" in pod "{pod}" not found')
        if not path or not os.path.exists(path):
            return _error(400, "BadRequest", f'container "{name}" in pod "{pod}" is waiting to start')

        def stopped() -> bool:
            try:
                return previous or not self.backend.find_container(namespace, pod, name).running
            except LookupError:
                return True

        return StreamingResponse(read_log(path, stop_following=stopped, **options), media_type="text/plain")

    @staticmethod
    def _log_options(query: Any) -> dict[str, Any]:
        since_seconds, since_time = _positive(query, "sinceSeconds", 1), query.get("sinceTime")
        if since_seconds is not None and since_time:
            raise BadRequest("at most one of `sinceTime` or `sinceSeconds` may be specified")
        since = datetime.now(UTC) - timedelta(seconds=since_seconds) if since_seconds is not None else None
        if since_time:
            try:
                since = parse_timestamp(since_time)
            except ValueError:
                raise BadRequest(f'sinceTime: invalid value "{since_time}"') from None
        return {"tail_lines": _positive(query, "tailLines", 0), "since": since,
                "timestamps": _flag(query.get("timestamps")), "follow": _flag(query.get("follow")),
                "limit_bytes": _positive(query, "limitBytes", 1)}

    # exec and attach ----------------------------------------------------------------------------------

    async def _command_url(self, kind: str, params: dict[str, str], query: Any) -> tuple[str, StreamOptions]:
        """Ask the runtime for the streaming URL. Raises BadRequest, LookupError or CRIError."""
        try:
            options = StreamOptions.from_query(query)
        except ValueError as err:
            raise BadRequest(str(err)) from None
        namespace, pod, name = params["namespace"], params["pod"], params["container"]
        ref = self.backend.find_container(namespace, pod, name)
        if not ref.running:
            raise BadRequest(f'container "{name}" in pod "{pod}" is not running')
        flags = {"stdin": options.stdin, "stdout": options.stdout, "stderr": options.stderr, "tty": options.tty}
        if kind == "attach":
            return await self.backend.runtime.attach(cri.AttachRequest(container_id=ref.container_id,
                                                                       **flags)), options
        command = query.getlist("command")
        if not command:
            raise BadRequest("you must specify at least one command for the container")
        return await self.backend.runtime.exec(cri.ExecRequest(container_id=ref.container_id, cmd=command,
                                                               **flags)), options

    async def _runtime_call(self, call: Any) -> tuple[Any, Response | None]:
        """Run a CRI-calling coroutine; (result, None), or (None, the error response)."""
        try:
            return await call, None
        except BadRequest as err:
            return None, _error(400, "BadRequest", str(err))
        except (LookupError, CRINotFound) as err:
            return None, _error(404, "NotFound", str(err.args[0] if err.args else err))
        except CRIError as err:
            return None, _error(500, "InternalError", str(err))

    async def command_spdy(self, request: Request) -> Response:
        kind = request.url.path.split("/")[1]
        found, failed = await self._runtime_call(self._command_url(kind, request.path_params, request.query_params))
        if failed is not None:
            return failed
        url, options = found
        return endpoints.command_spdy_response(options, self._relay(url, options))

    async def command_websocket(self, websocket: WebSocket) -> None:
        kind = websocket.url.path.split("/")[1]
        found, failed = await self._runtime_call(self._command_url(kind, websocket.path_params,
                                                                   websocket.query_params))
        if failed is not None:
            await websocket.send_denial_response(failed)
            return
        url, options = found
        await endpoints.serve_command_websocket(websocket, options, self._relay(url, options))

    @staticmethod
    def _relay(url: str, options: StreamOptions) -> endpoints.CommandSession:
        async def session(down: Channels) -> None:
            await proxy.proxy_command(down, lambda: proxy.open_command(url, options), address=url)
        return session

    # port-forward -------------------------------------------------------------------------------------

    async def _port_forward_url(self, params: dict[str, str], ports: list[int]) -> str:
        sandbox = self.backend.sandbox_id(params["namespace"], params["pod"])
        return await self.backend.runtime.port_forward(sandbox, ports)

    async def port_forward_spdy(self, request: Request) -> Response:
        url, failed = await self._runtime_call(self._port_forward_url(request.path_params, []))
        if failed is not None:
            return failed
        relay = _port_forward_relay(url)
        return endpoints.port_forward_spdy_response(relay, relay.close)

    async def port_forward_websocket(self, websocket: WebSocket) -> None:
        try:
            ports = [int(p) for p in websocket.query_params.getlist("port")]
        except ValueError:
            ports = []
        url, failed = await self._runtime_call(self._port_forward_url(websocket.path_params, ports))
        if failed is not None:
            await websocket.send_denial_response(failed)
            return
        relay = _port_forward_relay(url)
        await endpoints.serve_port_forward_websocket(websocket, relay, relay.close)


def _port_forward_relay(url: str) -> proxy.PortForwardProxy:
    return proxy.PortForwardProxy(lambda: connect_spdy(url, [channels.PORT_FORWARD]), address=url)


def uvicorn_config(server: KubeletServer, *, host: str, port: int, cert_file: str, key_file: str,
                   client_ca_file: str) -> uvicorn.Config:
    """HTTPS with the node's serving certificate; client certificates are asked for and verified against
    the cluster CA (a bearer token is the other way in)."""
    return uvicorn.Config(server.app(), host=host, port=port, ssl_certfile=cert_file, ssl_keyfile=key_file,
                          ssl_ca_certs=client_ca_file, ssl_cert_reqs=ssl.CERT_OPTIONAL,
                          http=StreamingHttpProtocol, ws=StreamingWebSocketProtocol, lifespan="off",
                          access_log=False, log_level="warning", timeout_graceful_shutdown=1)

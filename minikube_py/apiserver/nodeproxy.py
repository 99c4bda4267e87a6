"""The subresources served by a pod's kubelet: pods/log, pods/exec, pods/attach, pods/portforward, nodes/proxy.

The apiserver has no container data; for these it finds the node and passes the request on to that node's
kubelet (kube's `ResourceLocation` + upgrade-aware proxy):

    pod.spec.nodeName → Node → address (status.addresses: InternalIP, else Hostname)
                             + port (status.daemonEndpoints.kubeletEndpoint.Port, default 10250)
    pods/log          GET  → https://<node>/containerLogs/{ns}/{pod}/{container}?...  streamed back as text
    pods/exec         GET (WebSocket) | POST (SPDY) → /exec/{ns}/{pod}/{container}?command=...
    pods/attach       likewise → /attach/{ns}/{pod}/{container}
    pods/portforward  GET (WebSocket: SPDY tunnel or v4 channels) | POST (SPDY) → /portForward/{ns}/{pod}
    nodes/proxy       /api/v1/nodes/{name}/proxy/{path} → https://<node>/{path}

The kubelet is called with `--kubelet-client-certificate`/`--kubelet-client-key` (user
kube-apiserver-kubelet-client, allowed by RBAC's system:kubelet-api-admin) and its certificate checked
against `--kubelet-certificate-authority` when given. Towards the kubelet, commands and ports always travel
over SPDY (`streaming.proxy`), whatever the user's client spoke.

Before any upgrade, the request is checked as kube does: the pod exists (404), the container is one of the
pod's (400 `container x is not valid for pod y`), the pod is bound (400 `pod x does not have a host
assigned`), a completed pod takes no exec/attach (400); then exec, attach and portforward go through
admission as a CONNECT, their query decoded into the options object admission sees (PodExecOptions,
PodAttachOptions, PodPortForwardOptions). Unlike kube, changes a mutating webhook makes to those options are
not passed on to the kubelet. Authorization already happened in the handler chain (`pods/exec` etc.); a
WebSocket exec/attach/portforward also needs `create`, as kube 1.32 requires for WebSocket upgrades (which
arrive as GETs). Failures once the user's connection is upgraded reach the user as a Status on the error
channel (commands) or text on the port's error stream.
"""

from __future__ import annotations

import dataclasses
import ssl
from typing import Any
from urllib.parse import quote, urlencode

import httpx
from starlette.datastructures import QueryParams
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from ..api import errors
from ..auth.authorizer import Decision
from ..streaming import channels, endpoints, proxy
from ..streaming.remotecommand import Channels, StreamOptions
from ..streaming.upgrade import connect_spdy
from . import responses
from .authorization import attributes_for, forbidden

DEFAULT_KUBELET_PORT = 10250
POD = "/api/v1/namespaces/{namespace}/pods/{name}"
LOG_PARAMS = ("follow", "previous", "sinceSeconds", "sinceTime", "timestamps", "tailLines", "limitBytes")
CONNECT_KINDS = {"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}


class NodeProxy:
    """The routes; `server` is the APIServer (stores, admission, authorizer, options)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._ssl: ssl.SSLContext | None = None

    def routes(self) -> list[BaseRoute]:
        return [
            Route(POD + "/log", self.log),
            Route(POD + "/exec", self.command_spdy, methods=["GET", "POST"]),
            WebSocketRoute(POD + "/exec", self.command_websocket),
            Route(POD + "/attach", self.command_spdy, methods=["GET", "POST"]),
            WebSocketRoute(POD + "/attach", self.command_websocket),
            Route(POD + "/portforward", self.port_forward_spdy, methods=["GET", "POST"]),
            WebSocketRoute(POD + "/portforward", self.port_forward_websocket),
            Route("/api/v1/nodes/{name}/proxy", self.node_proxy, methods=_METHODS),
            Route("/api/v1/nodes/{name}/proxy/{path:path}", self.node_proxy, methods=_METHODS),
        ]

    # finding the kubelet ----------------------------------------------------------------------------

    @property
    def ssl_context(self) -> ssl.SSLContext:
        """TLS towards kubelets: our client certificate; their certificate verified if we have a CA."""
        if self._ssl is None:
            options = self.server.options
            context = ssl.create_default_context(cafile=options.kubelet_certificate_authority or None)
            if not options.kubelet_certificate_authority:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            if options.kubelet_client_certificate:
                context.load_cert_chain(options.kubelet_client_certificate, options.kubelet_client_key)
            self._ssl = context
        return self._ssl

    def kubelet_client(self, timeout: httpx.Timeout) -> httpx.AsyncClient:
        """An HTTPS client for kubelets (the caller closes it); metrics.py scrapes stats with it too."""
        return httpx.AsyncClient(verify=self.ssl_context, timeout=timeout)

    async def kubelet_url(self, node_name: str) -> str:
        """https://host:port of the node's kubelet. Raises APIError (404 for a missing node)."""
        return kubelet_endpoint(await self.server.stores[("", "v1", "nodes")].get("", node_name))

    async def pod_location(self, conn: HTTPConnection, subresource: str) -> tuple[dict[str, Any], str, str]:
        """(pod, container, kubelet base URL) for a pod subresource request, checked as kube does.
        Raises APIError."""
        namespace, name = conn.path_params["namespace"], conn.path_params["name"]
        pod = await self.server.stores[("", "v1", "pods")].get(namespace, name)
        container = ""
        if subresource != "portforward":
            container = _container(pod, conn.query_params.get("container", ""))
        if subresource in ("exec", "attach") and pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            verb = "exec into" if subresource == "exec" else "attach"
            raise errors.bad_request(f"cannot {verb} a container in a completed pod; current phase is "
                                     f"{pod['status']['phase']}")
        node_name = pod.get("spec", {}).get("nodeName", "")
        if not node_name:
            raise errors.bad_request(f"pod {name} does not have a host assigned")
        if subresource in CONNECT_KINDS:
            await self._admit(conn, subresource, namespace, name)
        return pod, container, await self.kubelet_url(node_name)

    async def _admit(self, conn: HTTPConnection, subresource: str, namespace: str, name: str) -> None:
        """WebSocket create check, then admission as a CONNECT. Raises APIError."""
        user = conn.scope["user"]
        if conn.scope["type"] == "websocket":
            attributes = dataclasses.replace(attributes_for(conn.scope, user), verb="create")
            decision, reason = self.server.authorizer.authorize(attributes)
            if decision is not Decision.ALLOW:
                raise forbidden(attributes, reason)
        options = connect_options(subresource, conn.query_params)
        admission = self.server.handler.admitter.for_request(
            "CONNECT", self.server.stores[("", "v1", "pods")], user=user, namespace=namespace, name=name,
            subresource=subresource, kind=("", "v1", CONNECT_KINDS[subresource]))
        if admission is not None:
            await admission.mutate(options, None)
            await admission.validate(options, None)

    # pods/log ---------------------------------------------------------------------------------------

    async def log(self, request: Request) -> Response:
        try:
            pod, container, base = await self.pod_location(request, "log")
        except errors.APIError as err:
            return responses.error_response(err)
        query = {k: v for k, v in request.query_params.items() if k in LOG_PARAMS}
        url = f"{base}/containerLogs/{_path(pod, container)}" + (f"?{urlencode(query)}" if query else "")
        return await self._forward("GET", url, b"", {})

    async def _forward(self, method: str, url: str, body: bytes, headers: dict[str, str]) -> Response:
        """Send the request to the kubelet and stream its answer back (status, content type, body)."""
        client = self.kubelet_client(httpx.Timeout(30, read=None))
        try:
            upstream = await client.send(client.build_request(method, url, content=body, headers=headers),
                                         stream=True)
        except httpx.HTTPError as err:
            await client.aclose()
            message = f'{method.capitalize()} "{url}": {proxy.dial_error(_os_error(err), _address(url))}'
            return responses.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Failure", "message": message, "code": 500}, 500)

        async def body_chunks() -> Any:
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                await upstream.aclose()
                await client.aclose()

        kept = {k: v for k, v in upstream.headers.items() if k.lower() in ("content-type", "content-encoding")}
        return StreamingResponse(body_chunks(), status_code=upstream.status_code, headers=kept)

    # pods/exec, pods/attach -------------------------------------------------------------------------

    async def _command_target(self, conn: HTTPConnection) -> tuple[str, StreamOptions]:
        subresource = conn.url.path.rstrip("/").rsplit("/", 1)[1]
        try:
            options = StreamOptions.from_query(conn.query_params)
        except ValueError as err:
            raise errors.bad_request(str(err)) from None
        pod, container, base = await self.pod_location(conn, subresource)
        query = [("command", c) for c in conn.query_params.getlist("command")] if subresource == "exec" else []
        url = f"{base}/{subresource}/{_path(pod, container)}?{urlencode(query)}{'&' if query else ''}" \
              f"{options.query()}"
        return url, options

    def _relay(self, url: str, options: StreamOptions) -> endpoints.CommandSession:
        async def session(down: Channels) -> None:
            await proxy.proxy_command(down, lambda: proxy.open_command(url, options, self.ssl_context),
                                      address=_address(url))
        return session

    async def command_spdy(self, request: Request) -> Response:
        try:
            url, options = await self._command_target(request)
        except errors.APIError as err:
            return responses.error_response(err)
        return endpoints.command_spdy_response(options, self._relay(url, options))

    async def command_websocket(self, websocket: WebSocket) -> None:
        try:
            url, options = await self._command_target(websocket)
        except errors.APIError as err:
            await websocket.send_denial_response(responses.error_response(err))
            return
        await endpoints.serve_command_websocket(websocket, options, self._relay(url, options))

    # pods/portforward -------------------------------------------------------------------------------

    async def _port_forward_relay(self, conn: HTTPConnection) -> proxy.PortForwardProxy:
        pod, _, base = await self.pod_location(conn, "portforward")
        url = f"{base}/portForward/{_path(pod, '')}"
        return proxy.PortForwardProxy(
            lambda: connect_spdy(url, [channels.PORT_FORWARD], ssl_context=self.ssl_context), _address(url))

    async def port_forward_spdy(self, request: Request) -> Response:
        try:
            relay = await self._port_forward_relay(request)
        except errors.APIError as err:
            return responses.error_response(err)
        return endpoints.port_forward_spdy_response(relay, relay.close)

    async def port_forward_websocket(self, websocket: WebSocket) -> None:
        try:
            relay = await self._port_forward_relay(websocket)
        except errors.APIError as err:
            await websocket.send_denial_response(responses.error_response(err))
            return
        await endpoints.serve_port_forward_websocket(websocket, relay, relay.close)

    # nodes/proxy ------------------------------------------------------------------------------------

    async def node_proxy(self, request: Request) -> Response:
        try:
            base = await self.kubelet_url(request.path_params["name"])
        except errors.APIError as err:
            return responses.error_response(err)
        path = request.path_params.get("path", "")
        url = f"{base}/{path}" + (f"?{request.url.query}" if request.url.query else "")
        headers = {k: v for k, v in request.headers.items() if k in ("accept", "content-type")}
        return await self._forward(request.method, url, await request.body(), headers)


_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def kubelet_endpoint(node: dict[str, Any]) -> str:
    """https://host:port of a Node's kubelet. Raises APIError (400) when the Node has no address."""
    status = node.get("status", {})
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses", [])}
    host = addresses.get("InternalIP") or addresses.get("Hostname")
    if not host:
        raise errors.bad_request(f'no preferred addresses found; known addresses: {list(addresses.values())}')
    port = status.get("daemonEndpoints", {}).get("kubeletEndpoint", {}).get("Port") or DEFAULT_KUBELET_PORT
    return f"https://{host}:{port}"


def connect_options(subresource: str, query: QueryParams) -> dict[str, Any]:
    """The options of a CONNECT as kube decodes them from the query (PodExecOptions, PodAttachOptions,
    PodPortForwardOptions, v1): admission sees them as the request's object. Raises APIError (400) for a port
    that is not a number."""
    options: dict[str, Any] = {"kind": CONNECT_KINDS[subresource], "apiVersion": "v1"}
    if subresource == "portforward":
        ports = [_port(p) for value in query.getlist("ports") for p in value.split(",")]
        return options | ({"ports": ports} if ports else {})

    def first(key: str) -> str | None:  # a repeated parameter counts by its first value
        values = query.getlist(key)
        return values[0] if values else None

    for flag in ("stdin", "stdout", "stderr", "tty"):
        value = first(flag)
        if value is not None and value != "0" and value.lower() != "false":  # even "" is true, as in kube
            options[flag] = True
    container = first("container")
    if container:
        options["container"] = container
    if subresource == "exec":
        options["command"] = query.getlist("command") or None  # never omitted, as in kube's JSON
    return options


def _port(value: str) -> int:
    """A port of `?ports=`: an unsigned 16-bit number, in kube's words when it is not."""
    if not value.isascii() or not value.isdigit():
        raise errors.bad_request(f'cannot convert to []int32: strconv.ParseUint: parsing "{value}": invalid syntax')
    if int(value) > 65535:
        raise errors.bad_request(f'cannot convert to []int32: strconv.ParseUint: parsing "{value}": value out of '
                                 "range")
    return int(value)


def _container(pod: dict[str, Any], name: str) -> str:
    """The container a request means: the named one, which must be the pod's, or the only one."""
    spec = pod.get("spec", {})
    names = [c["name"] for key in ("containers", "initContainers", "ephemeralContainers")
             for c in spec.get(key, [])]
    pod_name = pod["metadata"]["name"]
    if not name:
        if len(spec.get("containers", [])) == 1:
            return str(spec["containers"][0]["name"])
        raise errors.bad_request(f"a container name must be specified for pod {pod_name}, choose one of: "
                                 f"[{' '.join(c['name'] for c in spec.get('containers', []))}]")
    if name not in names:
        raise errors.bad_request(f"container {name} is not valid for pod {pod_name}")
    return name


def _path(pod: dict[str, Any], container: str) -> str:
    meta = pod["metadata"]
    parts = [meta["namespace"], meta["name"]] + ([container] if container else [])
    return "/".join(quote(part, safe="") for part in parts)


def _address(url: str) -> str:
    return httpx.URL(url).netloc.decode()


def _os_error(err: BaseException) -> BaseException:
    """The OSError with an errno under an httpx error (connection refused, ...), for kube's wording; httpx
    wraps it in its own errors and, when it tried several addresses, in an exception group."""
    seen: list[BaseException] = [err]
    while seen:
        current = seen.pop()
        if isinstance(current, OSError) and current.errno:
            return current
        seen += [e for e in (current.__cause__, current.__context__) if e is not None]
        if isinstance(current, BaseExceptionGroup):
            seen += current.exceptions
    return err

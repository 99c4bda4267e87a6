"""Posting an AdmissionReview to a webhook over HTTPS, as kube-apiserver's webhook client does.

Where it sits: the dispatcher (`generic.py`) calls `WebhookClient.post(webhook, review)` and gets the decoded
answer back, or a `CallingWebhookError` whose text reads like kube's (`failed to call webhook: Post
"https://host/path?timeout=10s": context deadline exceeded`).

* Where: `clientConfig.url`, or `clientConfig.service` (`https://<name>.<namespace>.svc:<port><path>`).
  mkpy has no service proxy, so a service is resolved the way kube-apiserver does with
  `--enable-aggregator-routing`: to a ready address of the Service's Endpoints (an ExternalName service to its
  external name), read from the watch caches; the TLS server name stays `<name>.<namespace>.svc`.
* Trust: the PEM CA certificates of `clientConfig.caBundle`, else the system's roots.
* Time: `timeoutSeconds` bounds the whole call; the webhook is told through `?timeout=<n>s`, as kube tells it.

Usage rule: one client per apiserver; it keeps one connection pool per CA bundle, so repeated calls to a
webhook reuse their TLS connection.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ssl
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from ...interface import ClusterState
from .config import Webhook
from .review import CallingWebhookError

_MAX_POOLS = 32


@dataclass(frozen=True)
class Target:
    """Where to send a review: the URL kube would show, the address actually dialled and the TLS name."""

    url: str
    connect_url: str
    server_name: str = ""


class WebhookClient:
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._pools: dict[str, httpx.AsyncClient] = {}

    async def post(self, webhook: Webhook, review: dict[str, Any]) -> Any:
        """POST the review and return the decoded JSON answer; CallingWebhookError on any failure."""
        pool = await self._pool(str(webhook.client_config.get("caBundle") or ""))
        target = self._target(webhook)
        seconds = webhook.timeout_seconds
        extensions = {"sni_hostname": target.server_name} if target.server_name else None
        try:
            async with asyncio.timeout(seconds):
                response = await pool.post(target.connect_url, content=orjson.dumps(review), timeout=seconds,
                                           headers={"Content-Type": "application/json",
                                                    "Accept": "application/json, */*"},
                                           extensions=extensions)
        except (TimeoutError, httpx.TimeoutException):
            raise _failed(target, "context deadline exceeded") from None
        except httpx.HTTPError as err:
            raise _failed(target, _transport_error(target, err)) from None
        if not 200 <= response.status_code < 300:
            raise CallingWebhookError(f"failed to call webhook: {_http_error(response)}")
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as err:
            raise CallingWebhookError(f"failed to call webhook: couldn't get version/kind; json parse error: "
                                      f"{err}") from None

    async def _pool(self, ca_bundle: str) -> httpx.AsyncClient:
        pool = self._pools.get(ca_bundle)
        if pool is None:
            pool = httpx.AsyncClient(verify=_tls_context(ca_bundle), trust_env=False)
            if len(self._pools) >= _MAX_POOLS:
                await self._pools.pop(next(iter(self._pools))).aclose()
            self._pools[ca_bundle] = pool
        return pool

    def _target(self, webhook: Webhook) -> Target:
        timeout = f"timeout={webhook.timeout_seconds}s"
        config = webhook.client_config
        if config.get("url"):
            url = str(config["url"])
            shown = f"{url}{'&' if '?' in url else '?'}{timeout}"
            return Target(shown, shown)
        service = config.get("service") or {}
        name, namespace = str(service.get("name") or ""), str(service.get("namespace") or "")
        port, path = int(service.get("port") or 443), str(service.get("path") or "")
        host = f"{name}.{namespace}.svc"
        shown = f"https://{host}:{port}{path or '/'}?{timeout}"
        try:
            address = resolve_service(self.state, namespace, name, port)
        except CallingWebhookError as err:
            raise _failed(Target(shown, shown), str(err)) from None
        return Target(shown, f"https://{address}{path or '/'}?{timeout}", host)


def resolve_service(state: ClusterState, namespace: str, name: str, port: int) -> str:
    """`host:port` of a ready endpoint behind the service's `port` (kube's `ResolveEndpoint`)."""
    service = state.get("", "services", namespace, name)
    if service is None:
        raise CallingWebhookError(f'service "{name}" not found')
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return f"{spec.get('externalName')}:{port}"
    service_port = next((p for p in spec.get("ports") or () if p.get("port") == port), None)
    if service_port is None:
        raise CallingWebhookError(f'no service port {port} found for service "{name}"')
    endpoints = state.get("", "endpoints", namespace, name)
    if endpoints is None:
        raise CallingWebhookError(f'endpoints "{name}" not found')
    port_name = service_port.get("name") or ""
    for subset in endpoints.get("subsets") or ():
        for endpoint_port in subset.get("ports") or ():
            if (endpoint_port.get("name") or "") == port_name and subset.get("addresses"):
                ip = subset["addresses"][0].get("ip", "")
                return f"[{ip}]:{endpoint_port.get('port')}" if ":" in ip else f"{ip}:{endpoint_port.get('port')}"
    raise CallingWebhookError(f'no endpoints available for service "{name}"')


def _tls_context(ca_bundle: str) -> ssl.SSLContext:
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle, validate=True).decode()
        return ssl.create_default_context(cadata=pem)
    except (binascii.Error, ValueError, ssl.SSLError):
        # kube fails the call (not the configuration) when the bundle holds no certificate; so do we, with
        # an empty trust store that no server certificate can satisfy.
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _failed(target: Target, why: str) -> CallingWebhookError:
    return CallingWebhookError(f'failed to call webhook: Post "{target.url}": {why}')


def _transport_error(target: Target, err: httpx.HTTPError) -> str:
    """Go's words for the common transport failures, so messages read like kube's."""
    causes = _chain(err)
    text = " ".join(str(cause) for cause in causes) or type(err).__name__
    dialled = httpx.URL(target.connect_url)
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        return f"dial tcp {dialled.host}:{dialled.port}: connect: connection refused"
    if "CERTIFICATE_VERIFY_FAILED" in text:
        if "unable to get local issuer" in text or "self-signed" in text or "self signed" in text:
            return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        return f"tls: failed to verify certificate: {text}"
    return str(err) or type(err).__name__


def _chain(err: BaseException) -> list[BaseException]:
    """The error and what caused it (httpx wraps the socket's error in its own)."""
    chain: list[BaseException] = []
    cause: BaseException | None = err
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


def _http_error(response: httpx.Response) -> str:
    """What client-go says about an answer that is not 2xx (a `metav1.Status` body speaks for itself)."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message"):
        return str(body["message"])
    code = response.status_code
    if code >= 500:
        text = response.text.strip()
        return f'an error on the server ("{text}") has prevented the request from succeeding'
    if code == 404:
        return "the server could not find the requested resource"
    return f"the server responded with the status code {code} but did not return more information"

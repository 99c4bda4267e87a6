"""Assembling and running one kubelet (kube's `cmd/kubelet/app`): `mkpy kubelet` ends here.

    kubeconfig ─► RESTClient ─► Kubelet (kubelet.py): Node + Lease, pods informer, PLEG, pod workers
    --container-runtime-endpoint ─► RuntimeClient (CRI over gRPC: containerd, or the fake runtime)
    events ─► core/v1 Events from source component "kubelet", host <node>
    --port ─► the kubelet API (server.py): logs, exec, attach, port-forward, /pods, /stats/summary
    --healthz-port ─► /healthz

Usage rules: the kubeconfig is read before anything starts, so a mistake is a one-line error
(`KubeletSetupError`); an unreachable runtime or apiserver is waited for, not fatal, as in kube.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

import uvicorn

from minikube_py.client.events import EventBroadcaster
from minikube_py.client.healthz import HealthServer, HealthServerError
from minikube_py.client.kubeconfig import ConfigError as KubeconfigError
from minikube_py.client.kubeconfig import load_kubeconfig, user_agent
from minikube_py.client.rest import RESTClient
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.kubelet import Kubelet

log = logging.getLogger("mkpy.kubelet")


class KubeletSetupError(Exception):
    """The kubelet cannot start: a bad kubeconfig, a port in use."""


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside the kubelet's event loop: the kubelet, not uvicorn, handles SIGTERM and SIGINT."""

    def capture_signals(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


def _api_server(config: KubeletConfig, kubelet: Kubelet, client: RESTClient) -> uvicorn.Server | None:
    """The kubelet API on --address:--port with the node's serving certificate (None when --port is 0 or
    there is no certificate to serve with)."""
    if not config.port or not config.tls_cert_file:
        return None
    from minikube_py.kubelet.server import KubeletServer, uvicorn_config

    server = KubeletServer(kubelet, config.node_name, client)
    return _EmbeddedServer(uvicorn_config(server, host=config.address, port=config.port,
                                         cert_file=config.tls_cert_file, key_file=config.tls_private_key_file,
                                         client_ca_file=config.client_ca_file))


# A kubelet talks to the apiserver over one HTTP/2 connection in kube, its pod workers, status manager and
# event sink each sending when they need to; ours has up to this many HTTP/1.1 requests (and connections) on
# the wire at once, its events only when nothing else waits (client/rest.py). One at a time made every token
# and status of a node's pods queue behind each other, at hundreds of milliseconds each on an apiserver busy
# with a hundred simulated nodes; many more cost the apiserver a TLS handshake per connection, and memory.
API_REQUESTS_IN_FLIGHT = 4


async def run(config: KubeletConfig, runtime: RuntimeClient | None = None) -> None:
    """Run the kubelet until cancelled; `runtime` (closed on the way out) replaces a client dialing
    --container-runtime-endpoint."""
    try:
        client_config = load_kubeconfig(config.kubeconfig or None)
    except KubeconfigError as error:
        raise KubeletSetupError(str(error)) from None
    client_config = dataclasses.replace(client_config, user_agent=user_agent("kubelet"))
    config.pods_dir.mkdir(parents=True, exist_ok=True)
    config.pod_logs_dir.mkdir(parents=True, exist_ok=True)
    health = HealthServer("127.0.0.1", config.healthz_port)
    async with RESTClient(client_config, max_in_flight=API_REQUESTS_IN_FLIGHT) as client:
        runtime = runtime or RuntimeClient(config.container_runtime_endpoint)
        broadcaster = EventBroadcaster(client)
        kubelet = Kubelet(config, client, runtime, broadcaster.new_core_recorder("kubelet", config.node_name))
        if config.healthz_port:
            try:
                await health.start()
            except HealthServerError as error:
                raise KubeletSetupError(str(error)) from None
        broadcaster.start_recording_to_sink()
        api_server = _api_server(config, kubelet, client)
        serving = asyncio.create_task(api_server.serve()) if api_server is not None else None
        try:
            await kubelet.run()
        finally:
            if api_server is not None and serving is not None:
                api_server.should_exit = True
                with contextlib.suppress(Exception):
                    await serving
            await health.stop()
            with contextlib.suppress(Exception):
                await broadcaster.shutdown()
            await runtime.close()

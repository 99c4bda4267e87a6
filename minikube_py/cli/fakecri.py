"""`mkpy fake-cri`: run one fake container runtime (kubelet/cri/fake) in the foreground.

    mkpy fake-cri --listen /tmp/sim-1/cri.sock --pod-cidr 10.244.1.0/24 --node-name sim-1
    mkpy crictl --runtime-endpoint unix:///tmp/sim-1/cri.sock pods

A lab uses it to meet the CRI without containerd: point a kubelet (or `mkpy crictl`) at the socket and
watch pods "run" with no processes. `mkpy up` hosts its simulated nodes' runtimes inside its own processes
instead (`serve()`), so this command is for running one by hand.

Without `--pod-cidr` the runtime starts as containerd does on a fresh node: its network is not ready (no pod
can start) until the kubelet passes on its Node's pod CIDR with UpdateRuntimeConfig. `--pod-cidr` gives it a
network from the start, for use without a kubelet.

Usage rules: bad flags and a socket path in use are a one-line error and exit status 1; the runtime serves
until SIGTERM or SIGINT and then removes its socket. Its state lives in memory only.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys

import click

from minikube_py.kubelet.cri.fake.runtime import FakeRuntime
from minikube_py.kubelet.cri.fake.server import serve


@click.command("fake-cri", context_settings={"show_default": True})
@click.option("--listen", "socket_path", required=True, type=click.Path(dir_okay=False),
              help="Unix socket to serve CRI on (the kubelet's --container-runtime-endpoint).")
@click.option("--pod-cidr", default="",
              help="Range the pod IPs are taken from. [default: the first CIDR the kubelet passes on]")
@click.option("--node-name", default=socket.gethostname, show_default="the host name",
              help="The simulated node this runtime belongs to (shown by `crictl info`).")
@click.option("--v", "verbosity", type=click.IntRange(0, 10), default=2,
              help="Log verbosity (4+ logs every failed call).")
def fake_cri(socket_path: str, pod_cidr: str, node_name: str, verbosity: int) -> None:
    """Serve a fake CRI runtime (containers without processes) until interrupted."""
    try:
        runtime = FakeRuntime(pod_cidr=pod_cidr, node_name=node_name)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--pod-cidr") from None
    logging.basicConfig(level=logging.DEBUG if verbosity >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    try:
        asyncio.run(_serve_until_signalled(socket_path, runtime))
    except (OSError, ValueError) as error:
        raise click.ClickException(str(error)) from None


async def _serve_until_signalled(socket_path: str, runtime: FakeRuntime) -> None:
    server = await serve(socket_path, runtime)
    pod_cidr = runtime.pod_ips.network if runtime.pod_ips else "from the kubelet, not yet known"
    logging.getLogger("mkpy.fake-cri").info("fake CRI runtime of node %s serving on %s (pod CIDR %s)",
                                            runtime.node_name, server.endpoint, pod_cidr)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await stopping.wait()
    finally:
        await server.stop(grace=1.0)

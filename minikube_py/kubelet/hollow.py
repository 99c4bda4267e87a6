"""Many simulated nodes in one process (kubemark's "hollow nodes"): for each, a fake CRI runtime serving on
its own socket and a kubelet talking to it over CRI as a separate `mkpy fake-cri` and `mkpy kubelet` pair
would, but sharing one Python process and one event loop. The kubelets call their runtimes in-process
(`cri/fake/inprocess.py`: the same servicers and messages, without gRPC's cost); the sockets serve
`mkpy crictl`.

    await run_hollow_nodes([HollowNode(config, socket), ...])

Each kubelet keeps its own identity (kubeconfig), Node, Lease, pods informer and pod workers; each runtime its
own pods and IP range, which it learns as containerd does: the controller manager allocates the Node's
spec.podCIDR and the kubelet passes it on (UpdateRuntimeConfig); until then the node is not Ready. What they
share is only the interpreter, so a hundred nodes cost a few tens of MiB rather than two hundred processes.
They serve no kubelet API (`--port 0`): logs and exec of simulated pods are refused, as there are no
processes behind them.

The node list is a JSON file (`mkpy hollow-nodes --config FILE`), written by `mkpy up --simulated-nodes`:

    {"nodes": [{"name": "...", "kubeconfig": "...", "socket": "...", "root_dir": "...",
                "cloud_provider": "external"}]}          # cloud_provider optional, as the kubelet's flag
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minikube_py.kubelet import app
from minikube_py.kubelet.config import KubeletConfig
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.fake import FakeRuntime, serve
from minikube_py.kubelet.cri.fake.inprocess import direct_stubs

log = logging.getLogger("mkpy.hollow")
# Seconds between runtime relists (a real kubelet's PLEG: 1 s). Simulated containers change only when a pod
# annotation scripts an exit, so a slower relist costs little fidelity and keeps 100 idle nodes cheap.
RELIST_PERIOD = 5.0


class HollowConfigError(ValueError):
    """The node list cannot be read; the message names the file and the problem."""


@dataclass(frozen=True)
class HollowNode:
    config: KubeletConfig
    socket: str


def load(path: Path) -> list[HollowNode]:
    try:
        raw: Any = json.loads(path.read_text())
        nodes = []
        for entry in raw["nodes"]:
            config = KubeletConfig(node_name=entry["name"], kubeconfig=entry["kubeconfig"],
                                   container_runtime_endpoint=f"unix://{entry['socket']}",
                                   root_dir=Path(entry["root_dir"]), node_ip="127.0.0.1", port=0, healthz_port=0,
                                   relist_period=RELIST_PERIOD, cloud_provider=entry.get("cloud_provider", ""))
            nodes.append(HollowNode(config, entry["socket"]))
        return nodes
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HollowConfigError(f"{path}: {error}") from None


async def run_hollow_nodes(nodes: list[HollowNode]) -> None:
    """Serve every node's runtime, then run every kubelet, until cancelled."""
    servers = []
    try:
        for node in nodes:
            runtime = FakeRuntime(pod_cidr="", node_name=node.config.node_name)  # until the kubelet passes it on
            servers.append(await serve(node.socket, runtime))
        log.info("%d simulated nodes: runtimes serving; starting their kubelets", len(nodes))
        async with asyncio.TaskGroup() as group:
            for node, server in zip(nodes, servers, strict=True):
                runtime = RuntimeClient(node.socket, stubs=direct_stubs(server.runtime))
                group.create_task(app.run(node.config, runtime), name=f"kubelet-{node.config.node_name}")
    finally:
        for server in servers:
            await server.stop()

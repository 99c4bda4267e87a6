"""Many simulated nodes in one process (`mkpy hollow-nodes`), against a real apiserver."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from tests.harness import ChildProcess, ControlPlane
from tests.kubelet.nodes import REPO, eventually


def test_hollow_nodes_register_get_their_pod_cidr_from_their_node_and_run_pods(control_plane: ControlPlane,
                                                                             api: httpx.Client, namespace: str) -> None:
    base = control_plane.workdir / "hollow"
    base.mkdir(exist_ok=True)
    names = [f"hollow-{i}" for i in range(3)]
    entries = [{"name": name, "socket": str(base / f"{name}.sock"), "root_dir": str(base / name),
                "kubeconfig": str(control_plane.component_kubeconfig(f"kubelet-{name}", user=f"system:node:{name}",
                                                                     groups=("system:nodes",)))}
               for name in names]
    config = base / "nodes.json"
    config.write_text(json.dumps({"nodes": entries}))
    process = ChildProcess([sys.executable, "-m", "minikube_py.cli.main", "hollow-nodes", f"--config={config}"],
                       base / "hollow.log")

    def ready_conditions() -> dict[str, dict[str, str]]:
        assert process.process.poll() is None, process.log()[-3000:]
        found = {}
        for name in names:
            node = api.get(f"/api/v1/nodes/{name}")
            if node.status_code == 200:
                conditions = node.json()["status"].get("conditions") or []
                found[name] = next(c for c in conditions if c["type"] == "Ready")
        return found

    try:
        # no node-ipam in this control plane: registered, the nodes wait for their pod CIDR
        waiting = eventually(lambda: len(found := ready_conditions()) == len(names) and found, 30,
                             message="three hollow nodes registered")
        for condition in waiting.values():
            assert (condition["status"], condition["reason"], condition["message"]) == (
                "False", "KubeletNotReady", "container runtime network not ready: NetworkReady=false "
                "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized")
        # a pod bound meanwhile waits for the network, as kube's kubelet makes it wait
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ghost"},
               "spec": {"nodeName": "hollow-2", "containers": [{"name": "main", "image": "nginx:1.27"}]}}
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod).status_code == 201

        def network_events() -> list[str]:
            events = api.get(f"/api/v1/namespaces/{namespace}/events",
                             params={"fieldSelector": "involvedObject.name=ghost,reason=NetworkNotReady"}).json()
            return [event["message"] for event in events["items"]]
        [message] = eventually(network_events, 20, message="a NetworkNotReady event")
        assert message == ("network is not ready: container runtime network not ready: NetworkReady=false "
                           "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not "
                           "initialized")
        assert api.get(f"/api/v1/namespaces/{namespace}/pods/ghost").json()["status"]["phase"] == "Pending"
        for i, name in enumerate(names):  # what node-ipam would write
            patched = api.patch(f"/api/v1/nodes/{name}", json={"spec": {"podCIDR": f"10.250.{i}.0/24",
                                                                        "podCIDRs": [f"10.250.{i}.0/24"]}},
                                headers={"Content-Type": "application/merge-patch+json"})
            assert patched.status_code == 200, patched.text
        eventually(lambda: all(c["status"] == "True" for c in ready_conditions().values()), 30,
                   message="three hollow nodes Ready")
        running = eventually(lambda: (p := api.get(f"/api/v1/namespaces/{namespace}/pods/ghost").json())["status"]
                             .get("phase") == "Running" and p, 20, message="the pod running on a hollow node")
        assert running["status"]["podIP"].startswith("10.250.2.")
    finally:
        process.stop()
        for name in names:
            api.delete(f"/api/v1/nodes/{name}")


def test_a_bad_node_list_is_a_one_line_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "nodes.json"
    config.write_text('{"nodes": [{"name": "x"}]}')
    result = subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "hollow-nodes", f"--config={config}"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: ") and str(config) in result.stderr and "Traceback" not in result.stderr

"""Many simulated nodes in one process (`mkpy hollow-nodes`), against a real apiserver."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from tests.harness import ChildProcess, ControlPlane
from tests.kubelet.nodes import REPO, eventually


def test_hollow_nodes_register_and_run_pods(control_plane: ControlPlane, api: httpx.Client, namespace: str) -> None:
    base = control_plane.workdir / "hollow"
    base.mkdir(exist_ok=True)
    names = [f"hollow-{i}" for i in range(3)]
    entries = [{"name": name, "socket": str(base / f"{name}.sock"), "pod_cidr": f"10.250.{i}.0/24",
                "root_dir": str(base / name),
                "kubeconfig": str(control_plane.component_kubeconfig(f"kubelet-{name}", user=f"system:node:{name}",
                                                                     groups=("system:nodes",)))}
               for i, name in enumerate(names)]
    config = base / "nodes.json"
    config.write_text(json.dumps({"nodes": entries}))
    process = ChildProcess([sys.executable, "-m", "minikube_py.cli.main", "hollow-nodes", f"--config={config}"],
                       base / "hollow.log")
    try:
        def all_ready() -> bool:
            assert process.process.poll() is None, process.log()[-3000:]
            ready = 0
            for name in names:
                node = api.get(f"/api/v1/nodes/{name}")
                if node.status_code == 200 and any(c["type"] == "Ready" and c["status"] == "True"
                                                   for c in node.json()["status"].get("conditions") or []):
                    ready += 1
            return ready == len(names)
        eventually(all_ready, 30, message="three hollow nodes Ready")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ghost"},
               "spec": {"nodeName": "hollow-2", "containers": [{"name": "main", "image": "nginx:1.27"}]}}
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod).status_code == 201
        running = eventually(lambda: (p := api.get(f"/api/v1/namespaces/{namespace}/pods/ghost").json())["status"]
                             .get("phase") == "Running" and p, 20, message="the pod running on a hollow node")
        assert running["status"]["podIP"].startswith("10.250.2.")
    finally:
        process.stop()


def test_a_bad_node_list_is_a_one_line_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "nodes.json"
    config.write_text('{"nodes": [{"name": "x"}]}')
    result = subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "hollow-nodes", f"--config={config}"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: ") and str(config) in result.stderr and "Traceback" not in result.stderr

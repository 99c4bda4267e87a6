"""`mkpy ccm` as a process: an out-of-tree provider found through its package's entry point, the CCM acting as
`system:cloud-controller-manager` with nothing but its ClusterRole, a killed CCM whose load balancers are back
as soon as it is, and the flags and configs it refuses."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from minikube_py.ccm.cloud import registry
from tests.ccm.running import wait_for
from tests.ccm.test_local_loadbalancer import HOST, answer, endpoints, pod_server, put_endpoints
from tests.harness import ChildProcess, ControlPlane, free_port
from tests.kcm.test_kcm_process import eventually

UNINITIALIZED = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}

PLUGIN = '''
"""A cloud of one kind of VM, packaged apart from mkpy: what a student's first provider looks like."""

from minikube_py.ccm.cloud.interface import InstanceMetadata


class TinyInstances:
    async def instance_exists(self, node):
        return True

    async def instance_shutdown(self, node):
        return False

    async def instance_metadata(self, node):
        name = node["metadata"]["name"]
        return InstanceMetadata(provider_id=f"tiny://{name}", instance_type="tiny.vm", zone="tiny-zone",
                                region="tiny-region", additional_labels={"example.com/plugin": "tiny"})


class TinyCloud:
    async def initialize(self, client_builder, stop):
        pass

    def load_balancer(self):
        return None

    def instances(self):
        return None

    def instances_v2(self):
        return TinyInstances()

    def zones(self):
        return None

    def clusters(self):
        return None

    def routes(self):
        return None

    def provider_name(self):
        return "tiny"

    def has_cluster_id(self):
        return True


def new_provider(config):
    if config is not None and "broken" in config:
        raise ValueError("this tiny cloud cannot read its config")
    return TinyCloud()
'''


@pytest.fixture()
def plugin_path(tmp_path: Path) -> Path:
    """A package "tinycloud" installed only as a directory on the path, with its dist-info declaring the entry
    point `tiny` in the group minikube_py.cloud_providers (what `pip install` of a provider writes)."""
    (tmp_path / "tinycloud").mkdir()
    (tmp_path / "tinycloud" / "__init__.py").write_text(PLUGIN)
    info = tmp_path / "tinycloud-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinycloud\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\ntiny = tinycloud:new_provider\n")
    return tmp_path


def mkpy_ccm(*flags: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = f"{pythonpath}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "ccm", *flags], env=env,
                          capture_output=True, text=True, timeout=30)


def test_the_entry_point_of_an_installed_package_names_a_provider(plugin_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(plugin_path))
    assert registry.available() == ["local", "fake", "tiny"]
    assert registry.get_cloud_provider("tiny").provider_name() == "tiny"


def test_an_out_of_tree_provider_initializes_nodes_with_only_the_ccm_role(control_plane: ControlPlane,
                                                                           api: httpx.Client,
                                                                           plugin_path: Path) -> None:
    kubeconfig = control_plane.component_kubeconfig("cloud-controller-manager", "system:cloud-controller-manager")
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "tiny-node-1"},
            "spec": {"taints": [UNINITIALIZED]}}
    assert api.post("/api/v1/nodes", json=node).status_code == 201
    env_path = f"{plugin_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    ccm = ChildProcess([sys.executable, "-m", "minikube_py.cli.main", "ccm", f"--kubeconfig={kubeconfig}",
                        "--cloud-provider=tiny", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                        "--leader-elect=false", "--controllers=cloud-node"],
                       control_plane.workdir / "ccm-tiny.log", env={**os.environ, "PYTHONPATH": env_path})
    try:
        def initialized() -> dict[str, Any] | None:
            got = api.get("/api/v1/nodes/tiny-node-1").json()
            return got if not (got.get("spec") or {}).get("taints") and got["spec"].get("providerID") else None

        got = eventually(initialized, "the tiny cloud to initialize the node")
        assert got["spec"]["providerID"] == "tiny://tiny-node-1"
        labels = got["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == labels["beta.kubernetes.io/instance-type"] == "tiny.vm"
        assert labels["topology.kubernetes.io/zone"] == "tiny-zone"
        assert labels["topology.kubernetes.io/region"] == "tiny-region"
        assert labels["example.com/plugin"] == "tiny"
        assert "initialized cloud provider tiny" in ccm.log()
    finally:
        ccm.stop()
        api.delete("/api/v1/nodes/tiny-node-1")


LEASE_DURATION = 8.0  # seconds (kube: 15): the killed CCM's Lease outlives it by this much
RESTART_MARGIN = 4.0  # seconds from a restart to traffic: starting Python and binding, on a busy machine


def local_ccm(control_plane: ControlPlane, config: Path, log_name: str) -> ChildProcess:
    """`mkpy ccm` with the local cloud and only the service controller, as system:cloud-controller-manager,
    with leader election on and a short Lease."""
    kubeconfig = control_plane.component_kubeconfig("cloud-controller-manager", "system:cloud-controller-manager")
    return ChildProcess([sys.executable, "-m", "minikube_py.cli.main", "ccm", f"--kubeconfig={kubeconfig}",
                         "--cloud-provider=local", f"--cloud-config={config}", "--cluster-name=test",
                         "--controllers=service-lb-controller", "--bind-address=127.0.0.1",
                         f"--secure-port={free_port()}", f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
                         "--leader-elect-renew-deadline=5s", "--leader-elect-retry-period=1s"],
                        control_plane.workdir / log_name)


@pytest.mark.skipif(HOST.startswith("127."), reason="needs a non-loopback address to stand in for pods")
async def test_a_killed_ccm_serves_its_load_balancers_again_as_soon_as_it_restarts_not_once_it_leads(
        control_plane: ControlPlane, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    config = tmp_path / "cloud-config.yaml"
    config.write_text(f"clusterName: test\nstateFile: {tmp_path / 'state.json'}\nloadBalancerCIDR: 127.0.124.0/29\n")
    node = f"{namespace}-node"  # with none, the load balancer has nowhere to send traffic through
    assert api.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}
                    ).status_code == 201
    port = free_port()
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": port, "targetPort": 8080}]}}
    assert api.post(f"/api/v1/namespaces/{namespace}/services", json=service).status_code == 201
    first = local_ccm(control_plane, config, "ccm-killed.log")
    restarted: ChildProcess | None = None
    try:
        async with pod_server("pod") as pod, pod_server("later") as later:
            put_endpoints(api, endpoints(namespace, "web", pod))

            def address() -> str:
                status = api.get(f"/api/v1/namespaces/{namespace}/services/web").json()["status"]
                return str(((status.get("loadBalancer") or {}).get("ingress") or [{}])[0].get("ip", ""))
            lb = await wait_for(address, 30, "an EXTERNAL-IP for the service")
            assert await wait_for(lambda: answer(lb, port), 10, "traffic through the load balancer") == b"pod:hi"

            first.stop(kill=True)  # SIGKILL: no clean-up, its Lease stays held for LEASE_DURATION
            assert await answer(lb, port) == b""
            restarted_at = time.monotonic()
            restarted = local_ccm(control_plane, config, "ccm-restarted.log")
            assert await wait_for(lambda: answer(lb, port), RESTART_MARGIN, "traffic again") == b"pod:hi"
            assert time.monotonic() - restarted_at < RESTART_MARGIN < LEASE_DURATION
            assert "initialized cloud provider local" not in restarted.log(), "served before leading"

            # the takeover, once the dead CCM's Lease expires, keeps the listener: every request is answered
            while "adopted 1 load balancer(s)" not in restarted.log():
                assert time.monotonic() - restarted_at < 3 * LEASE_DURATION, "the restarted CCM never led"
                assert await answer(lb, port) == b"pod:hi", f"dropped {time.monotonic() - restarted_at:.1f}s after"
                await asyncio.sleep(0.05)
            put_endpoints(api, endpoints(namespace, "web", later))

            async def later_answers() -> bool:
                return await answer(lb, port) == b"later:hi"
            await wait_for(later_answers, 10, "the leader to follow the endpoints")
    finally:
        first.stop()
        if restarted is not None:
            restarted.stop()
        api.delete(f"/api/v1/nodes/{node}")
        # no CCM is left to remove the load balancer's finalizer: leave no LoadBalancer Service to other tests
        web = f"/api/v1/namespaces/{namespace}/services/web"
        api.patch(web, json={"metadata": {"finalizers": None}},
                  headers={"Content-Type": "application/merge-patch+json"})
        api.delete(web)


@pytest.mark.parametrize("flags, message", [
    ((), "--cloud-provider is required; available: local, fake"),
    (("--cloud-provider=nope",), "unknown cloud provider 'nope'; available: local, fake"),
    (("--cloud-provider=external",), "--cloud-provider=external is for the kubelet and the KCM"),
    (("--cloud-provider=local",), "the local cloud needs --cloud-config"),
    (("--cloud-provider=fake", "--controllers=cloud-node,nope"), '"nope" is not in the list of known controllers'),
    (("--cloud-provider=missing.module:factory",), "cannot load missing.module:factory"),
])
def test_what_the_ccm_refuses_before_it_starts(flags: tuple[str, ...], message: str) -> None:
    result = mkpy_ccm(*flags)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("config, message", [
    ("clusterName: [\n", "cloud config is not YAML"),
    ("clusterName: c\n", "stateFile is required"),
    ("clusterName: c\nstateFile: /tmp/s.json\nzone: local-a\n", "unknown key(s) zone"),
    ("clusterName: c\nstateFile: /tmp/s.json\nloadBalancerCIDR: 10.0.0.0/33\n", "loadBalancerCIDR"),
])
def test_an_invalid_local_cloud_config_stops_the_ccm_with_one_line(tmp_path: Path, config: str, message: str) -> None:
    path = tmp_path / "cloud-config.yaml"
    path.write_text(config)
    result = mkpy_ccm("--cloud-provider=local", f"--cloud-config={path}")
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_plugin_that_cannot_read_its_config_is_one_line(tmp_path: Path, plugin_path: Path) -> None:
    path = tmp_path / "tiny.conf"
    path.write_text(textwrap.dedent("""\
        broken: yes
    """))
    result = mkpy_ccm("--cloud-provider=tiny", f"--cloud-config={path}", pythonpath=plugin_path)
    assert result.returncode == 1
    assert "cloud provider 'tiny' could not start: this tiny cloud cannot read its config" in result.stderr


def test_every_cloud_controller_has_kubes_event_source() -> None:
    from minikube_py.ccm.controllers import descriptors

    sources = {descriptor.name: descriptor.event_component for descriptor in descriptors()}
    assert sources == {"cloud-node-controller": "cloud-node-controller",
                       "cloud-node-lifecycle-controller": "cloud-node-lifecycle-controller",
                       "service-lb-controller": "service-controller", "node-route-controller": "route_controller"}

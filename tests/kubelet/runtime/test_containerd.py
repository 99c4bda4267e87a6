"""Per-node containerd, for real: two containerd side by side on this host, pods on both, images loaded.

The module starts two throwaway containerd processes ("node1" and "node2", each with its own directory,
socket, bridge and cgroup), gives each its pod subnet as the kubelet does (CRI UpdateRuntimeConfig: containerd
renders its CNI config template), imports the built-in images into both, and removes everything (pods,
processes, bridges, cgroups) at the end. It needs root and containerd: run scripts/setup-containerd.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import subprocess
import sys
import time
import tomllib
import types
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

import pytest
from click.testing import CliRunner

from minikube_py.cli.image import image
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.images.builtin import (
    BUSYBOX_IMAGE,
    PAUSE_IMAGE,
    builtin_images,
    busybox_layer,
    find_busybox,
)
from minikube_py.kubelet.images.importer import ImageImportError, import_image
from minikube_py.kubelet.images.oci import ImageConfig, write_archive
from minikube_py.kubelet.runtime import containerd
from minikube_py.kubelet.runtime.containerd import (
    FORWARD_COMMENT,
    MASQUERADE_COMMENT,
    RENDERED_CNI_CONFIG,
    ContainerdLayout,
    available,
    containerd_argv,
    ensure_host_network,
    remove_bridge,
    remove_cgroup_tree,
    remove_host_network,
    remove_network_config,
    wait_ready,
    write_config,
)

TAG = os.getpid() % 100000  # keeps bridges and cgroups apart from another run of these tests
SUBNET_BASE = f"10.{200 + TAG % 50}"  # two /24s of a /16 no other test uses
T = TypeVar("T")


@dataclass
class Node:
    name: str
    layout: ContainerdLayout
    pod_cidr: str
    bridge: str
    cgroup_parent: str
    process: subprocess.Popen[bytes]
    network_before: tuple[bool, str, str] = (True, "", "")  # NetworkReady (status, reason, message) before


# --- config, without running containerd -----------------------------------------------------------------


def node_config(tmp_path: Path, **overrides: str) -> Path:
    arguments = {"bridge_name": "mkpy1", "cgroup_parent": "/mkpy-node1", "sandbox_image": PAUSE_IMAGE, **overrides}
    return write_config(ContainerdLayout(tmp_path / "node1"), **arguments)


def test_config_gives_each_node_its_own_paths_ports_and_network(tmp_path: Path) -> None:
    layout = ContainerdLayout(tmp_path / "node1")
    config = tomllib.loads(node_config(tmp_path).read_text())

    assert (config["version"], config["root"], config["state"]) == (2, str(layout.root), str(layout.state))
    assert config["grpc"]["address"] == str(layout.socket) == layout.endpoint.removeprefix("unix://")
    assert config["cgroup"]["path"] == "/mkpy-node1/containerd"
    plugin = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert plugin["stream_server_port"] == "0" and plugin["stream_server_address"] == "127.0.0.1"
    assert plugin["sandbox_image"] == PAUSE_IMAGE
    assert plugin["restrict_oom_score_adj"] is True and plugin["disable_apparmor"] is True
    assert plugin["cni"] == {"bin_dir": "/usr/lib/cni", "conf_dir": str(layout.cni_conf_dir),
                             "conf_template": str(layout.cni_conf_template), "max_conf_num": 1}
    runc = plugin["containerd"]["runtimes"]["runc"]
    assert runc["options"] == {"Root": str(layout.runc_root), "SystemdCgroup": False}
    assert containerd_argv(layout)[1:] == ["--config", str(layout.config_path)]

    # no network config until the kubelet passes on the pod CIDR; the template is outside conf_dir
    assert list(layout.cni_conf_dir.iterdir()) == []
    assert sorted(path.name for path in layout.cni_conf_template.parent.iterdir()) == [
        "conflist.tmpl", "ipam", "net.d"]  # and no temporary file left behind


def test_the_cni_template_renders_the_bridge_network_on_the_pod_cidr(tmp_path: Path) -> None:
    layout = ContainerdLayout(tmp_path / "node1")
    node_config(tmp_path)
    template = layout.cni_conf_template.read_text()
    assert template.count("{{") == 1  # .PodCIDR is all containerd fills in
    rendered = json.loads(template.replace("{{.PodCIDR}}", "10.88.1.0/24"))  # what text/template makes of it
    bridge, portmap = rendered["plugins"]  # no firewall plugin: the host's FORWARD rules do its work
    assert (bridge["type"], bridge["bridge"], bridge["isGateway"], bridge["ipMasq"], bridge["hairpinMode"]) == (
        "bridge", "mkpy1", True, False, True)
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.88.1.0/24"}]]
    assert bridge["ipam"]["dataDir"] == str(layout.ipam_data_dir)
    assert portmap["type"] == "portmap"


def test_a_rendered_network_config_outlives_a_new_config_until_removed(tmp_path: Path) -> None:
    layout = ContainerdLayout(tmp_path / "node1")
    node_config(tmp_path)
    rendered = layout.cni_conf_dir / RENDERED_CNI_CONFIG
    rendered.write_text("{}")  # as containerd leaves it; `mkpy up` writes the config again at every start
    node_config(tmp_path)
    assert rendered.read_text() == "{}"
    remove_network_config(layout)
    remove_network_config(layout)  # already gone is fine
    assert not rendered.exists()


def test_config_without_cgroup_parent_leaves_containerd_where_it_starts(tmp_path: Path) -> None:
    assert "cgroup" not in tomllib.loads(node_config(tmp_path, cgroup_parent="").read_text())


@pytest.mark.parametrize(("overrides", "message"), [
    pytest.param({"bridge_name": "a-bridge-name-too-long"}, "invalid bridge name", id="bridge name > 15"),
    pytest.param({"cgroup_parent": "mkpy-node1"}, "invalid cgroup parent 'mkpy-node1'", id="relative cgroup"),
])
def test_config_refuses_bad_values_naming_them(overrides: dict[str, str], message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError) as raised:
        node_config(tmp_path, **overrides)
    assert str(raised.value).startswith(message)
    assert not (tmp_path / "node1").exists()


def test_config_refuses_a_socket_path_longer_than_unix_sockets_allow(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="socket path .* is longer than 101 characters"):
        write_config(ContainerdLayout(tmp_path / ("x" * 100)), "mkpy1", "", PAUSE_IMAGE)


def test_available_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert available() == (False, "containerd needs root (running as uid 1000)")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    real_which = containerd.shutil.which
    monkeypatch.setattr(containerd.shutil, "which", lambda name: None if name == "runc" else real_which(name))
    ok, reason = available()
    assert not ok and reason == "missing runc: run scripts/setup-containerd as root"


async def test_wait_ready_gives_up_on_a_socket_nobody_serves(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=f"containerd at {tmp_path}/none.sock did not answer CRI within 0.3 s"):
        await wait_ready(tmp_path / "none.sock", timeout=0.3)
    assert time.monotonic() - started < 2


def test_host_network_rules_are_added_once_and_removed() -> None:
    cluster_cidr = f"{SUBNET_BASE}.0.0/16"
    ensure_host_network(cluster_cidr)
    ensure_host_network(cluster_cidr)
    try:
        assert host_rules(cluster_cidr) == {"masquerade": 1, "forward from": 1, "forward replies": 1}
        assert iptables_rules("filter", "FORWARD")[1].startswith("-A FORWARD -d "), "FORWARD rules go first"
        assert Path("/proc/sys/net/ipv4/ip_forward").read_text() == "1\n"
    finally:
        remove_host_network(cluster_cidr)
    assert host_rules(cluster_cidr) == {"masquerade": 0, "forward from": 0, "forward replies": 0}
    with pytest.raises(ValueError, match="invalid cluster CIDR '10.0.0.0/40'"):
        ensure_host_network("10.0.0.0/40")


def iptables_rules(table: str, chain: str) -> list[str]:
    return subprocess.run(["iptables", "-w", "-t", table, "-S", chain], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def host_rules(cluster_cidr: str) -> dict[str, int]:
    """How many of each host rule `ensure_host_network` adds for this cluster are in place."""
    nat, forward = iptables_rules("nat", "POSTROUTING"), iptables_rules("filter", "FORWARD")
    return {
        "masquerade": sum(f"-s {cluster_cidr}" in rule and MASQUERADE_COMMENT in rule for rule in nat),
        "forward from": sum(f"-s {cluster_cidr}" in rule and FORWARD_COMMENT in rule for rule in forward),
        "forward replies": sum(f"-d {cluster_cidr}" in rule and "RELATED,ESTABLISHED" in rule
                               and FORWARD_COMMENT in rule for rule in forward),
    }


# --- two real containerd nodes ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Node]]:
    ok, reason = available()
    if not ok:
        pytest.fail(f"containerd cannot run here: {reason} (run scripts/setup-containerd as root)")
    directory = tmp_path_factory.mktemp("nodes")
    images = builtin_images(directory / "images")
    started: list[Node] = []
    try:
        for number in (1, 2):
            started.append(start_node(directory, number))
        asyncio.run(wait_until_ready(started))
        asyncio.run(pass_pod_cidrs(started))
        for node in started:
            for archive in images:
                import_image(node.layout.socket, archive)
        yield started
    finally:
        for node in started:
            stop_node(node)


def start_node(directory: Path, number: int) -> Node:
    layout = ContainerdLayout(directory / f"node{number}")
    pod_cidr, bridge = f"{SUBNET_BASE}.{number}.0/24", f"mkt{TAG}n{number}"
    cgroup_parent = f"/mkpy-test-{TAG}-node{number}"
    write_config(layout, bridge, cgroup_parent, PAUSE_IMAGE)
    with layout.log_path.open("wb") as log:
        process = subprocess.Popen(containerd_argv(layout), stdout=subprocess.DEVNULL, stderr=log)
    return Node(f"node{number}", layout, pod_cidr, bridge, cgroup_parent, process)


async def wait_until_ready(nodes: list[Node]) -> None:
    try:
        await asyncio.gather(*(wait_ready(node.layout.socket, timeout=15) for node in nodes))
    except TimeoutError as error:
        logs = "\n".join(node.layout.log_path.read_text()[-2000:] for node in nodes)
        raise AssertionError(f"{error}\n{logs}") from None


def network_ready(status: cri.StatusResponse) -> tuple[bool, str, str]:
    network = next(c for c in status.status.conditions if c.type == "NetworkReady")
    return network.status, network.reason, network.message


async def pass_pod_cidrs(nodes: list[Node]) -> None:
    """What each node's kubelet does once its Node has a pod CIDR."""
    for node in nodes:
        async with RuntimeClient(str(node.layout.socket), timeout=10) as runtime:
            node.network_before = network_ready(await runtime.status())
            await runtime.update_runtime_config(node.pod_cidr)


def stop_node(node: Node) -> None:
    try:
        if node.process.poll() is None:
            asyncio.run(remove_all_pods(node))  # or their shims and processes would outlive containerd
    finally:
        node.process.terminate()
        node.process.wait(timeout=10)
        remove_bridge(node.bridge)
        remove_cgroup_tree(node.cgroup_parent)


async def remove_all_pods(node: Node) -> None:
    async with RuntimeClient(str(node.layout.socket), timeout=10) as runtime:
        for sandbox in await runtime.list_pod_sandbox():
            await runtime.remove_pod_sandbox(sandbox.id)


@dataclass
class Pod:
    sandbox_id: str
    container_id: str
    ip: str
    log_path: Path


async def run_busybox_pod(runtime: RuntimeClient, node: Node, script: str) -> Pod:
    """A pod with one busybox container running `script`, as the kubelet would start it."""
    uid = str(uuid.uuid4())
    log_directory = node.layout.dir / "pods" / uid
    log_directory.mkdir(parents=True)
    sandbox = cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name="web", namespace="default", uid=uid),
        hostname="web", log_directory=str(log_directory),
        linux=cri.LinuxPodSandboxConfig(cgroup_parent=f"{node.cgroup_parent}/pod{uid}"),
    )
    sandbox_id = await runtime.run_pod_sandbox(sandbox)
    container = cri.ContainerConfig(metadata=cri.ContainerMetadata(name="main"),
                                    image=cri.ImageSpec(image=BUSYBOX_IMAGE), command=["sh", "-c", script],
                                    log_path="main/0.log")
    container_id = await runtime.create_container(sandbox_id, container, sandbox)
    await runtime.start_container(container_id)
    status = await runtime.pod_sandbox_status(sandbox_id)
    return Pod(sandbox_id, container_id, status.status.network.ip, log_directory / "main" / "0.log")


async def eventually(check: Callable[[], Awaitable[T]], what: str, timeout: float = 5.0) -> T:
    """The result of `check()` once it stops raising; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await check()
        except Exception as error:  # whatever goes wrong (not yet listening, empty log) is retried
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} within {timeout} s: {error!r}") from error
        await asyncio.sleep(0.05)


async def http_get(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to the pod, no proxy
    return await asyncio.to_thread(lambda: opener.open(url, timeout=2).read().decode())


async def serve_on(node: Node) -> tuple[Pod, int | None]:
    """Runs a busybox pod serving its node's name over HTTP on :8080; returns it and its streaming port."""
    script = (f"echo hello from {node.name}; mkdir /www; echo page of {node.name} > /www/index.html; "
              "exec httpd -f -p 8080 -h /www")
    async with RuntimeClient(str(node.layout.socket)) as runtime:
        pod = await run_busybox_pod(runtime, node, script)

        async def log_line() -> str:
            text = pod.log_path.read_text()
            assert text, "empty log"
            return text

        line = await eventually(log_line, f"the container log {pod.log_path} gets a line")
        assert line.endswith(f" stdout F hello from {node.name}\n"), line  # the CRI log format
        assert await eventually(lambda: http_get(f"http://{pod.ip}:8080/"), "httpd answers") == (
            f"page of {node.name}\n")
        stream_url = await runtime.port_forward(pod.sandbox_id, [8080])
    return pod, urlparse(stream_url).port


async def test_busybox_pods_run_on_two_containerd_nodes_side_by_side(nodes: list[Node]) -> None:
    results = await asyncio.gather(*(serve_on(node) for node in nodes))

    (pod1, port1), (pod2, port2) = results
    for node, pod in zip(nodes, (pod1, pod2), strict=True):
        assert ipaddress.ip_address(pod.ip) in ipaddress.ip_network(node.pod_cidr), (pod.ip, node.pod_cidr)
        assert node.process.poll() is None, f"{node.name}'s containerd exited: {node.layout.log_path}"
    assert port1 and port2 and port1 != port2, f"streaming servers should each pick a free port: {port1, port2}"
    async with RuntimeClient(str(nodes[1].layout.socket)) as runtime:  # pod to pod across nodes
        fetched = await runtime.exec_sync(
            pod2.container_id, ["timeout", "5", "wget", "-q", "-O-", f"http://{pod1.ip}:8080/"], timeout=10)
        await runtime.remove_pod_sandbox(pod2.sandbox_id)
    assert (fetched.exit_code, fetched.stdout, fetched.stderr) == (0, b"page of node1\n", b"")


async def test_pods_reach_each_other_across_nodes_where_forwarded_traffic_is_dropped(nodes: list[Node]) -> None:
    """On a Docker host FORWARD's policy is DROP; the host rules of `ensure_host_network` let pod traffic
    through. Simulated with DROP rules for this test's pod range only, appended to FORWARD so that they act
    after everything else in the chain, where a DROP policy would."""
    cluster_cidr = f"{SUBNET_BASE}.0.0/16"
    drops = [["FORWARD", "-s", cluster_cidr, "-j", "DROP"], ["FORWARD", "-d", cluster_cidr, "-j", "DROP"]]
    for rule in drops:
        subprocess.run(["iptables", "-w", "-A", *rule], check=True)
    ensure_host_network(cluster_cidr)
    try:
        (server, _), (client, _) = await asyncio.gather(*(serve_on(node) for node in nodes))
        async with RuntimeClient(str(nodes[1].layout.socket)) as runtime:
            fetched = await runtime.exec_sync(
                client.container_id, ["timeout", "5", "wget", "-q", "-O-", f"http://{server.ip}:8080/"], timeout=10)
        for node, pod in zip(nodes, (server, client), strict=True):
            async with RuntimeClient(str(node.layout.socket)) as runtime:
                await runtime.remove_pod_sandbox(pod.sandbox_id)
    finally:
        remove_host_network(cluster_cidr)
        for rule in drops:
            subprocess.run(["iptables", "-w", "-D", *rule], check=True)
    assert (fetched.exit_code, fetched.stdout) == (0, b"page of node1\n"), fetched.stderr


async def test_containerd_renders_its_network_from_the_first_pod_cidr_it_is_given_and_keeps_it(
        nodes: list[Node]) -> None:
    node = nodes[0]
    assert node.network_before == (False, "NetworkPluginNotReady",
                                   "Network plugin returns error: cni plugin not initialized")
    rendered = node.layout.cni_conf_dir / RENDERED_CNI_CONFIG
    [[network_range]] = json.loads(rendered.read_text())["plugins"][0]["ipam"]["ranges"]
    assert network_range == {"subnet": node.pod_cidr}
    async with RuntimeClient(str(node.layout.socket)) as runtime:
        assert network_ready(await runtime.status()) == (True, "", "")
        await runtime.update_runtime_config(f"{SUBNET_BASE}.99.0/24")  # a network is loaded: nothing changes
    assert json.loads(rendered.read_text())["plugins"][0]["ipam"]["ranges"] == [[network_range]]


async def test_pod_ips_are_recorded_in_the_node_ipam_directory(nodes: list[Node]) -> None:
    node = nodes[0]
    async with RuntimeClient(str(node.layout.socket)) as runtime:
        pod = await run_busybox_pod(runtime, node, "sleep 60")
        recorded = list(node.layout.ipam_data_dir.glob(f"*/{pod.ip}"))
        await runtime.remove_pod_sandbox(pod.sandbox_id)
    assert [path.parent.name for path in recorded] == [f"mkpy-{node.bridge}"]
    assert not list(node.layout.ipam_data_dir.glob(f"*/{pod.ip}")), "removing the pod frees its IP"


def test_containerd_runs_in_the_node_cgroup(nodes: list[Node]) -> None:
    for node in nodes:
        cgroups = Path(f"/proc/{node.process.pid}/cgroup").read_text().splitlines()
        memory = next(line for line in cgroups if ":memory:" in line)
        assert memory.endswith(f":{node.cgroup_parent}/containerd"), cgroups


async def test_image_load_imports_an_archive_into_every_node(nodes: list[Node], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    reference = f"example.com/mkpy/hello:{TAG}"
    write_archive(tmp_path / "hello.tar", reference, [busybox_layer(find_busybox())],
                  ImageConfig(cmd=("echo", "hello")))
    cluster = types.ModuleType("minikube_py.cli.nodes")
    cluster.containerd_sockets = lambda name: {node.name: str(node.layout.socket) for node in nodes}
    monkeypatch.setitem(sys.modules, "minikube_py.cli.nodes", cluster)

    result = await asyncio.to_thread(CliRunner().invoke, image, ["load", str(tmp_path / "hello.tar")])

    assert (result.exit_code, result.output) == (0, f"node1: loaded {reference}\nnode2: loaded {reference}\n")
    for node in nodes:
        async with RuntimeClient(str(node.layout.socket)) as runtime:
            found = await runtime.image_status(reference)
            assert found is not None and reference in found.repo_tags, f"{reference} missing on {node.name}"
            await runtime.remove_image(reference)


def test_importing_a_file_that_is_not_an_image_fails_clearly(nodes: list[Node], tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not an image\n")
    with pytest.raises(ImageImportError, match="notes.txt is not an image archive"):
        import_image(nodes[0].layout.socket, tmp_path / "notes.txt")

"""`mkpy crictl` against the in-test runtime: crictl's tables, ID prefixes, exec exit codes, errors."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import types
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from minikube_py.cli import crictl as crictl_module
from minikube_py.cli.crictl import crictl, human_size
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.logs import format_line
from tests.kubelet.cri import TinyRuntime, container_config, pod_config, serve_in_thread

POD_1, POD_2 = "01" + "a" * 62, "02" + "a" * 62
WEB, SIDECAR, DB = "01" + "c" * 62, "02" + "c" * 62, "03" + "c" * 62
BUSYBOX_ID = "sha256:a416a98b71e224a31ee99cff8e16063554498227d2b696152a9c3e0aa65e5824"


@pytest.fixture
def runtime() -> TinyRuntime:
    return TinyRuntime()


@pytest.fixture
def socket(runtime: TinyRuntime, tmp_path: Path) -> Iterator[str]:
    """A runtime with pod web (containers web, running, and sidecar, created) and pod db (db, exited)."""
    path = str(tmp_path / "cri.sock")
    log_dir = tmp_path / "pods" / "default_web"
    (log_dir / "web").mkdir(parents=True)
    (log_dir / "web" / "0.log").write_bytes(
        format_line("stdout", b"hello", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
        + format_line("stderr", b"world", datetime(2024, 1, 2, 3, 4, 6, tzinfo=UTC))
    )
    runtime.add_image("docker.io/library/busybox:1.36", BUSYBOX_ID, 2_224_356)

    async def populate() -> None:
        async with RuntimeClient(path) as client:
            web = pod_config("web")
            web.log_directory = str(log_dir)
            await client.run_pod_sandbox(web)
            await client.create_container(POD_1, container_config("web", log_path="web/0.log"), web)
            await client.start_container(WEB)
            await client.create_container(POD_1, container_config("sidecar"), web)
            db = pod_config("db", namespace="data")
            await client.run_pod_sandbox(db)
            await client.create_container(POD_2, container_config("db", image="postgres:16"), db)
            await client.start_container(DB)
            await client.stop_container(DB, 0)
            await client.stop_pod_sandbox(POD_2)

    with serve_in_thread(runtime, path):
        asyncio.run(populate())
        yield path


def crictl_run(socket: str, *args: str) -> Result:
    return CliRunner().invoke(crictl, ["--runtime-endpoint", socket, *args])


def rows(output: str) -> list[list[str]]:
    """A crictl table's lines split into cells (cells are separated by at least 3 spaces)."""
    return [re.split(r" {3,}", line.rstrip()) for line in output.splitlines()]


# --- tables ---


def test_pods_lists_sandboxes_newest_first(socket: str) -> None:
    result = crictl_run(socket, "pods")
    assert result.exit_code == 0, result.output
    assert rows(result.output) == [
        ["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME"],
        [POD_2[:13], "Less than a second ago", "NotReady", "db", "data", "0", "(default)"],
        [POD_1[:13], "Less than a second ago", "Ready", "web", "default", "0", "(default)"],
    ]
    assert result.output.startswith("POD ID" + " " * 14 + "CREATED")  # columns at least 20 wide, like crictl


@pytest.mark.parametrize(
    ("options", "expected"),
    [([], [POD_2, POD_1]), (["--name", "^we"], [POD_1]), (["--namespace", "data"], [POD_2]),
     (["--state", "Ready"], [POD_1]), (["--state", "notready"], [POD_2])],
    ids=["all", "by name", "by namespace", "ready", "not ready"],
)
def test_pods_quiet_prints_whole_ids_of_the_matching_pods(
    socket: str, options: list[str], expected: list[str]
) -> None:
    result = crictl_run(socket, "pods", "-q", *options)
    assert result.output.split() == expected


def test_ps_lists_running_containers_unless_all(socket: str) -> None:
    result = crictl_run(socket, "ps")
    assert rows(result.output) == [
        ["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD"],
        [WEB[:13], "busybox:1.36", "Less than a second ago", "Running", "web", "0", POD_1[:13], "web"],
    ]
    everything = crictl_run(socket, "ps", "-a", "-q")
    assert sorted(everything.output.split()) == [WEB, SIDECAR, DB]


def test_ps_pod_takes_an_id_prefix(socket: str) -> None:
    assert crictl_run(socket, "ps", "-a", "-q", "--pod", "01").output.split() == [SIDECAR, WEB]
    states = [row[3] for row in rows(crictl_run(socket, "ps", "-a", "--pod", "02").output)]
    assert states == ["STATE", "Exited"]


def test_images_lists_repository_tag_id_and_size(socket: str) -> None:
    result = crictl_run(socket, "images")
    assert rows(result.output) == [
        ["IMAGE", "TAG", "IMAGE ID", "SIZE"],
        ["docker.io/library/busybox", "1.36", "a416a98b71e22", "2.22MB"],
    ]


@pytest.mark.parametrize(("size", "text"), [(45, "45B"), (743_000, "743kB"), (1_234_567_890, "1.23GB")])
def test_sizes_read_like_crictls(size: int, text: str) -> None:
    assert human_size(size) == text


# --- inspecting ---


def test_inspect_prints_status_and_verbose_info_as_json(socket: str) -> None:
    result = crictl_run(socket, "inspect", "01c")
    document = json.loads(result.output)
    assert document["status"]["id"] == WEB
    assert document["status"]["state"] == "CONTAINER_RUNNING"
    assert document["status"]["exitCode"] == 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", document["status"]["createdAt"])
    assert document["info"] == {"info": {"pid": 4243, "runtimeSpec": {"ociVersion": "1.0.2"}}}


def test_inspectp_and_inspecti(socket: str) -> None:
    pod = json.loads(crictl_run(socket, "inspectp", "02").output)
    assert (pod["status"]["metadata"]["name"], pod["status"]["state"]) == ("db", "SANDBOX_NOTREADY")
    image = json.loads(crictl_run(socket, "inspecti", "docker.io/library/busybox:1.36").output)
    assert image["status"]["size"] == 2224356
    assert image["info"]["info"]["imageSpec"]["architecture"] == "amd64"


def test_inspecti_of_an_absent_image_fails(socket: str) -> None:
    result = crictl_run(socket, "inspecti", "nginx:1.27")
    assert result.exit_code == 1
    assert result.output == "Error: no such image 'nginx:1.27'\n"


def test_version_and_info(socket: str) -> None:
    assert crictl_run(socket, "version").output.splitlines() == [
        "Version:  0.1.0", "RuntimeName:  tiny", "RuntimeVersion:  1.0", "RuntimeApiVersion:  v1"]
    info = json.loads(crictl_run(socket, "info").output)
    assert info["status"]["conditions"][0] == {"type": "RuntimeReady", "status": True}
    assert info["config"] == {"sandboxImage": "pause:3.9"}


# --- IDs ---


def test_an_ambiguous_prefix_is_a_clear_error(socket: str) -> None:
    result = crictl_run(socket, "inspect", "0")
    assert result.exit_code == 1
    assert result.output == (
        f"Error: container ID prefix '0' is ambiguous: it matches {WEB[:13]}, {SIDECAR[:13]}, {DB[:13]}\n"
    )


def test_an_unknown_id_is_a_clear_error(socket: str) -> None:
    result = crictl_run(socket, "stopp", "ff")
    assert (result.exit_code, result.output) == (1, "Error: no pod sandbox with ID 'ff'\n")


# --- logs and exec ---


def test_logs_reads_the_containers_log_file(socket: str) -> None:
    assert crictl_run(socket, "logs", "01c").output == "hello\nworld\n"
    assert crictl_run(socket, "logs", "--tail", "1", "--timestamps", WEB).output == (
        "2024-01-02T03:04:06.000000000Z world\n"
    )


def test_logs_follow_prints_new_lines_until_the_container_stops(
    socket: str, runtime: TinyRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crictl_module, "FOLLOW_CHECK_INTERVAL", 0.05)
    log = tmp_path / "pods" / "default_web" / "web" / "0.log"

    def container_writes_then_exits() -> None:
        with open(log, "ab") as file:
            file.write(format_line("stdout", b"later", datetime.now(UTC)))
        runtime.containers[WEB].state = cri.CONTAINER_EXITED

    timer = threading.Timer(0.3, container_writes_then_exits)
    timer.start()
    result = crictl_run(socket, "logs", "-f", "--tail", "1", "01c")
    timer.join()
    assert (result.exit_code, result.output) == (0, "world\nlater\n")


def test_logs_of_a_container_without_log_file_fails(socket: str) -> None:
    result = crictl_run(socket, "logs", DB)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: container {DB[:13]} has no log file")


def test_exec_prints_output_and_passes_options_to_the_command(socket: str) -> None:
    result = crictl_run(socket, "exec", "01c", "ls", "-la", "/")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "ls -la /\n", "done\n")


def test_exec_exits_with_the_commands_exit_code(socket: str) -> None:
    assert crictl_run(socket, "exec", WEB, "exit", "3").exit_code == 3


# --- stopping and removing ---


def test_stop_rm_stopp_rmp(socket: str, runtime: TinyRuntime) -> None:
    assert crictl_run(socket, "stop", "--timeout", "0", "01c").output == f"{WEB}\n"
    assert runtime.containers[WEB].state == cri.CONTAINER_EXITED
    assert crictl_run(socket, "rm", "-f", "02c", "03").output == f"{SIDECAR}\n{DB}\n"
    assert crictl_run(socket, "stopp", "01").output == f"Stopped sandbox {POD_1}\n"
    removed = crictl_run(socket, "rmp", "01", "02").output
    assert removed == f"Removed sandbox {POD_1}\nRemoved sandbox {POD_2}\n"
    assert (list(runtime.containers), list(runtime.sandboxes)) == ([WEB], [])


# --- choosing the runtime, and failing ---


def test_an_unreachable_runtime_is_a_one_line_error_naming_the_socket(tmp_path: Path) -> None:
    missing = str(tmp_path / "nothing.sock")
    result = crictl_run(missing, "pods")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: ListPodSandbox: container runtime at {missing} is not reachable")
    assert len(result.output.splitlines()) == 1


def test_the_endpoint_may_come_from_the_environment(socket: str) -> None:
    environment = {"CONTAINER_RUNTIME_ENDPOINT": f"unix://{socket}"}
    result = CliRunner().invoke(crictl, ["pods", "-q"], env=environment)
    assert result.output.split() == [POD_2, POD_1]


def test_node_asks_the_cluster_for_the_nodes_socket(socket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    def runtime_endpoint(cluster_name: str, node_name: str) -> str:
        asked.append((cluster_name, node_name))
        return socket

    nodes_module = types.SimpleNamespace(runtime_endpoint=runtime_endpoint)
    monkeypatch.setitem(sys.modules, "minikube_py.cli.nodes", nodes_module)
    result = CliRunner().invoke(crictl, ["--name", "lab", "--node", "lab-m02", "pods", "-q", "--name", "web"],
                                env={"CONTAINER_RUNTIME_ENDPOINT": None})
    assert (asked, result.output.split()) == ([("lab", "lab-m02")], [POD_1])


def test_without_endpoint_or_node_it_says_what_to_give() -> None:
    result = CliRunner().invoke(crictl, ["ps"], env={"CONTAINER_RUNTIME_ENDPOINT": None})
    assert result.exit_code == 1
    assert "--node NODE" in result.output and "--runtime-endpoint" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [(["pods", "--name", "("], "invalid regular expression"), (["logs", "--tail", "-1", "x"], "-1"),
     (["exec", "x"], "Missing argument")],
    ids=["bad regex", "negative tail", "exec without command"],
)
def test_bad_arguments_are_usage_errors(socket: str, args: list[str], message: str) -> None:
    result = crictl_run(socket, *args)
    assert result.exit_code == 2
    assert message in result.output


def test_a_tcp_endpoint_is_refused() -> None:
    result = crictl_run("tcp://127.0.0.1:1", "pods")
    assert (result.exit_code, result.output) == (
        1, "Error: unsupported CRI endpoint 'tcp://127.0.0.1:1': use a unix socket path or unix:///path\n")

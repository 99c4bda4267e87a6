"""FakeRuntime as a state machine, without gRPC: a fake clock and fake timers make every exit deterministic."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.fake.runtime import (
    BUSYBOX_IMAGE,
    PAUSE_IMAGE,
    FakeRuntime,
    InvalidArgument,
    NotFound,
    RuntimeFailure,
    Unavailable,
    Unimplemented,
    parse_reference,
)
from minikube_py.kubelet.cri.logs import parse_line

START = 1_700_000_000_000_000_000  # Unix nanoseconds


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


class FakeTimer:
    def __init__(self, delay: float, callback: Callable[[], object]) -> None:
        self.delay, self.callback, self.cancelled = delay, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimers:
    def __init__(self) -> None:
        self.scheduled: list[FakeTimer] = []

    def call_later(self, delay: float, callback: Callable[[], object]) -> FakeTimer:
        self.scheduled.append(FakeTimer(delay, callback))
        return self.scheduled[-1]

    def fire_all(self) -> None:
        for timer in self.scheduled:
            if not timer.cancelled:
                timer.callback()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timers() -> FakeTimers:
    return FakeTimers()


@pytest.fixture
def runtime(clock: Clock, timers: FakeTimers) -> FakeRuntime:
    return FakeRuntime(clock=clock, timers=timers)


def pod(name: str = "web", *, uid: str = "", attempt: int = 0, host_network: bool = False,
        annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
        log_directory: str = "") -> cri.PodSandboxConfig:
    config = cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name=name, namespace="default", uid=uid or f"uid-{name}", attempt=attempt),
        annotations=annotations or {}, labels=labels or {}, log_directory=log_directory)
    if host_network:
        config.linux.security_context.namespace_options.network = cri.NODE
    return config


def container(name: str = "app", *, image: str = BUSYBOX_IMAGE, attempt: int = 0,
              command: tuple[str, ...] = ("sleep", "3600"), labels: dict[str, str] | None = None
              ) -> cri.ContainerConfig:
    return cri.ContainerConfig(metadata=cri.ContainerMetadata(name=name, attempt=attempt),
                               image=cri.ImageSpec(image=image), command=list(command), labels=labels or {},
                               log_path=f"{name}/{attempt}.log")


def started(runtime: FakeRuntime, config: cri.PodSandboxConfig, name: str = "app") -> str:
    sandbox = runtime.run_pod_sandbox(config)
    created = runtime.create_container(sandbox.id, container(name), config)
    runtime.start_container(created.id)
    return created.id


def log_lines(path: str) -> list[tuple[str, str]]:
    return [(line.stream, line.content.decode()) for line in map(parse_line, Path(path).read_bytes().splitlines())]


# --- sandboxes ---------------------------------------------------------------------------------------------

def test_a_sandbox_gets_a_random_id_and_the_next_pod_ip_skipping_network_and_gateway(runtime: FakeRuntime):
    first, second = runtime.run_pod_sandbox(pod("a")), runtime.run_pod_sandbox(pod("b"))
    assert re.fullmatch(r"[0-9a-f]{64}", first.id) and first.id != second.id
    assert (first.state, first.ip, second.ip) == (cri.SANDBOX_READY, "10.244.0.2", "10.244.0.3")
    assert first.created_at == START


def test_a_host_network_sandbox_gets_no_pod_ip(runtime: FakeRuntime):
    assert runtime.run_pod_sandbox(pod(host_network=True)).ip == ""
    assert runtime.run_pod_sandbox(pod("other")).ip == "10.244.0.2"


def test_a_full_pod_cidr_fails_like_host_local_ipam_and_a_stopped_sandbox_frees_its_ip():
    runtime = FakeRuntime(pod_cidr="10.1.0.0/30")  # .0 network, .1 gateway, .3 broadcast: one pod IP
    first = runtime.run_pod_sandbox(pod("a"))
    with pytest.raises(RuntimeFailure, match="no IP addresses available in range set: 10.1.0.2-10.1.0.2"):
        runtime.run_pod_sandbox(pod("b"))
    runtime.stop_pod_sandbox(first.id)
    assert runtime.run_pod_sandbox(pod("b")).ip == "10.1.0.2"


@pytest.mark.parametrize("cidr", ["10.244.0.0/33", "10.244.0.5/24", "not-a-cidr", "10.0.0.0/31"])
def test_a_bad_pod_cidr_is_refused(cidr: str):
    with pytest.raises(ValueError):
        FakeRuntime(pod_cidr=cidr)


def test_without_a_pod_cidr_pods_wait_for_the_one_the_kubelet_passes_on_and_later_ones_change_nothing(
        clock: Clock, timers: FakeTimers):
    runtime = FakeRuntime(pod_cidr="", clock=clock, timers=timers)
    with pytest.raises(RuntimeFailure, match=r'failed to setup network for sandbox "[0-9a-f]{64}": '
                                             r"cni plugin not initialized$"):
        runtime.run_pod_sandbox(pod("a"))
    assert runtime.run_pod_sandbox(pod("host", host_network=True)).ip == ""  # no CNI for the node's network
    runtime.update_runtime_config("")
    assert runtime.pod_ips is None
    runtime.update_runtime_config("10.244.5.0/24, fd00:5::/64")  # the first CIDR is the pod network
    assert runtime.run_pod_sandbox(pod("a")).ip == "10.244.5.2"  # the fake frees a failed sandbox's name
    runtime.update_runtime_config("10.244.6.0/24")  # as containerd once its CNI config is loaded: ignored
    assert runtime.run_pod_sandbox(pod("b")).ip == "10.244.5.3"


@pytest.mark.parametrize(("cidrs", "message"), [
    ("banana", "get routes: invalid CIDR address: banana"),
    ("10.244.5.0/24,fd00::/200", "get routes: invalid CIDR address: fd00::/200"),
    ("10.244.5.7/24", "invalid pod CIDR 10.244.5.7/24: 10.244.5.7/24 has host bits set"),
])
def test_a_bad_pod_cidr_from_the_kubelet_is_refused_and_changes_nothing(cidrs: str, message: str):
    runtime = FakeRuntime(pod_cidr="")
    with pytest.raises(RuntimeFailure, match=re.escape(message)):
        runtime.update_runtime_config(cidrs)
    assert runtime.pod_ips is None


def test_stopping_a_sandbox_kills_its_containers_and_releases_its_ip(runtime: FakeRuntime):
    config = pod()
    container_id = started(runtime, config)
    sandbox = runtime.list_pod_sandboxes()[0]
    runtime.stop_pod_sandbox(sandbox.id)
    runtime.stop_pod_sandbox(sandbox.id)  # twice is fine
    assert (sandbox.state, sandbox.ip) == (cri.SANDBOX_NOTREADY, "")
    stopped = runtime.container(container_id)
    assert (stopped.state, stopped.exit_code, stopped.reason) == (cri.CONTAINER_EXITED, 137, "Error")


def test_removing_a_sandbox_removes_its_containers_twice_is_fine_and_stop_after_remove_is_not_found(
        runtime: FakeRuntime):
    container_id = started(runtime, pod())
    sandbox_id = runtime.list_pod_sandboxes()[0].id
    runtime.remove_pod_sandbox(sandbox_id)
    runtime.remove_pod_sandbox(sandbox_id)
    assert runtime.list_pod_sandboxes() == [] and runtime.list_containers() == []
    with pytest.raises(NotFound, match=f'find sandbox "{sandbox_id}": not found'):
        runtime.stop_pod_sandbox(sandbox_id)
    with pytest.raises(NotFound):
        runtime.container(container_id)


def test_a_pod_attempt_can_have_one_sandbox_until_it_is_removed(runtime: FakeRuntime):
    first = runtime.run_pod_sandbox(pod())
    with pytest.raises(RuntimeFailure, match=f'name "web_default_uid-web_0" is reserved for "{first.id}"'):
        runtime.run_pod_sandbox(pod())
    assert runtime.run_pod_sandbox(pod(attempt=1)).ip == "10.244.0.3"  # the failed attempt kept no IP
    runtime.remove_pod_sandbox(first.id)
    runtime.run_pod_sandbox(pod())


def test_without_the_sandbox_image_a_sandbox_fails_like_offline_containerd():
    runtime = FakeRuntime(images=[BUSYBOX_IMAGE])
    with pytest.raises(RuntimeFailure) as failure:
        runtime.run_pod_sandbox(pod())
    assert str(failure.value).startswith(f'failed to get sandbox image "{PAUSE_IMAGE}": failed to pull image')
    assert str(failure.value).endswith("dial tcp: lookup registry.k8s.io: no such host")


def test_a_sandbox_without_metadata_is_an_invalid_argument(runtime: FakeRuntime):
    with pytest.raises(InvalidArgument, match="must include metadata"):
        runtime.run_pod_sandbox(cri.PodSandboxConfig(hostname="x"))


def test_sandboxes_are_listed_by_id_prefix_state_and_labels(runtime: FakeRuntime):
    web = runtime.run_pod_sandbox(pod("web", labels={"app": "web"}))
    db = runtime.run_pod_sandbox(pod("db", labels={"app": "db"}))
    runtime.stop_pod_sandbox(db.id)
    assert runtime.list_pod_sandboxes(id=web.id[:12]) == [web]
    assert runtime.list_pod_sandboxes(id="nope") == []
    assert runtime.list_pod_sandboxes(state=cri.SANDBOX_NOTREADY) == [db]
    assert runtime.list_pod_sandboxes(labels={"app": "web"}) == [web]
    assert runtime.sandbox(db.id[:8]) is db


def test_a_pods_sandboxes_and_containers_are_listed_by_its_uid_label_until_removed(runtime: FakeRuntime):
    def pod_labels(uid: str) -> dict[str, str]:
        return {"io.kubernetes.pod.uid": uid, "app": "web"}

    sandboxes = {uid: runtime.run_pod_sandbox(pod(f"web-{uid}", uid=uid, labels=pod_labels(uid))) for uid in "ab"}
    containers = {uid: runtime.create_container(sandboxes[uid].id, container(labels=pod_labels(uid)),
                                                pod(f"web-{uid}", uid=uid, labels=pod_labels(uid)))
                  for uid in "ab"}
    for uid in "ab":
        assert runtime.list_pod_sandboxes(labels={"io.kubernetes.pod.uid": uid}) == [sandboxes[uid]]
        assert runtime.list_containers(labels={"io.kubernetes.pod.uid": uid}) == [containers[uid]]
    assert runtime.list_containers(labels={"io.kubernetes.pod.uid": "a", "app": "db"}) == []  # every label counts
    runtime.remove_pod_sandbox(sandboxes["a"].id)
    assert runtime.list_pod_sandboxes(labels={"io.kubernetes.pod.uid": "a"}) == []
    assert runtime.list_containers(labels={"io.kubernetes.pod.uid": "a"}) == []
    assert runtime.list_containers(labels={"app": "web"}) == [containers["b"]]


# --- containers --------------------------------------------------------------------------------------------

def test_a_started_container_runs_and_writes_a_log_line(runtime: FakeRuntime, clock: Clock, tmp_path: Path):
    config = pod(log_directory=str(tmp_path / "pods" / "web"))
    sandbox = runtime.run_pod_sandbox(config)
    created = runtime.create_container(sandbox.id, container(), config)
    assert (created.state, created.log_path) == (cri.CONTAINER_CREATED, str(tmp_path / "pods/web/app/0.log"))
    clock.advance(2)
    runtime.start_container(created.id)
    assert (created.state, created.started_at) == (cri.CONTAINER_RUNNING, START + 2_000_000_000)
    assert log_lines(created.log_path) == [
        ("stdout", f"fake runtime: started app (image {BUSYBOX_IMAGE}, command sleep 3600)")]


def test_a_container_scripted_to_fail_exits_with_its_code_at_its_time(
        runtime: FakeRuntime, timers: FakeTimers, tmp_path: Path):
    annotations = {"fake.cri.mkpy.dev/run-seconds.app": "1.5", "fake.cri.mkpy.dev/exit-code.app": "3"}
    container_id = started(runtime, pod(annotations=annotations, log_directory=str(tmp_path)))
    assert [timer.delay for timer in timers.scheduled] == [1.5]
    timers.fire_all()
    exited = runtime.container(container_id)
    assert (exited.state, exited.exit_code, exited.reason) == (cri.CONTAINER_EXITED, 3, "Error")
    assert exited.finished_at == exited.started_at + 1_500_000_000
    assert log_lines(exited.log_path)[-1] == ("stderr", "fake runtime: app exited with code 3")


@pytest.mark.parametrize(("annotations", "delay", "exit_code", "reason"), [
    ({"fake.cri.mkpy.dev/exit-code.app": "0"}, 0.0, 0, "Completed"),
    ({"fake.cri.mkpy.dev/run-seconds.app": "2"}, 2.0, 0, "Completed"),
    ({"fake.cri.mkpy.dev/exit-code.other": "1"}, None, None, None),
])
def test_exit_code_alone_exits_at_once_run_seconds_alone_exits_0_and_other_containers_are_unaffected(
        runtime: FakeRuntime, timers: FakeTimers, annotations, delay, exit_code, reason):
    container_id = started(runtime, pod(annotations=annotations))
    assert [timer.delay for timer in timers.scheduled] == ([] if delay is None else [delay])
    timers.fire_all()
    state = runtime.container(container_id)
    if delay is None:
        assert state.state == cri.CONTAINER_RUNNING
    else:
        assert (state.state, state.exit_code, state.reason) == (cri.CONTAINER_EXITED, exit_code, reason)


@pytest.mark.parametrize(("key", "value"), [
    ("exit-code", "abc"), ("exit-code", "256"), ("exit-code", "-1"), ("run-seconds", "soon"),
    ("run-seconds", "-2"), ("run-seconds", "nan"), ("exec-exit-code", "1.5"),
])
def test_a_malformed_script_annotation_fails_create_container_naming_it(runtime: FakeRuntime, key, value):
    config = pod(annotations={f"fake.cri.mkpy.dev/{key}.app": value})
    sandbox = runtime.run_pod_sandbox(config)
    with pytest.raises(InvalidArgument, match=f"annotation fake.cri.mkpy.dev/{key}.app='{re.escape(value)}'"):
        runtime.create_container(sandbox.id, container(), config)


def test_a_start_error_fails_start_and_leaves_the_container_exited_like_containerd(runtime: FakeRuntime):
    config = pod(annotations={"fake.cri.mkpy.dev/start-error.app": 'exec: "nope": executable file not found'})
    sandbox = runtime.run_pod_sandbox(config)
    created = runtime.create_container(sandbox.id, container(), config)
    with pytest.raises(RuntimeFailure, match="executable file not found"):
        runtime.start_container(created.id)
    assert (created.state, created.exit_code, created.reason) == (cri.CONTAINER_EXITED, 128, "StartError")
    assert "executable file not found" in created.message and created.started_at == 0 < created.finished_at


def test_stop_with_a_grace_period_exits_0_and_cancels_the_scripted_exit(runtime: FakeRuntime, timers: FakeTimers):
    container_id = started(runtime, pod(annotations={"fake.cri.mkpy.dev/run-seconds.app": "60"}))
    runtime.stop_container(container_id, timeout=30)
    runtime.stop_container(container_id, timeout=30)  # stopping an exited container is fine
    stopped = runtime.container(container_id)
    assert (stopped.state, stopped.exit_code, stopped.reason) == (cri.CONTAINER_EXITED, 0, "Completed")
    assert timers.scheduled[0].cancelled


def test_stop_without_a_grace_period_kills(runtime: FakeRuntime):
    container_id = started(runtime, pod())
    runtime.stop_container(container_id, timeout=0)
    assert runtime.container(container_id).exit_code == 137


def test_a_container_starts_only_once(runtime: FakeRuntime):
    container_id = started(runtime, pod())
    with pytest.raises(RuntimeFailure, match="container is in CONTAINER_RUNNING state"):
        runtime.start_container(container_id)


@pytest.mark.parametrize(("case", "error", "message"), [
    ("unknown sandbox", NotFound, 'failed to find sandbox id "nope": not found'),
    ("absent image", NotFound, 'failed to resolve image "docker.io/library/nginx:latest": not found'),
    ("no metadata", InvalidArgument, "container config must include metadata"),
    ("stopped sandbox", RuntimeFailure, "is not running"),
    ("same name and attempt twice", RuntimeFailure, 'name "app_web_default_uid-web_0" is reserved for'),
])
def test_create_container_refuses(runtime: FakeRuntime, case: str, error: type[Exception], message: str):
    config = pod()
    sandbox = runtime.run_pod_sandbox(config)
    sandbox_id, spec = sandbox.id, container()
    if case == "unknown sandbox":
        sandbox_id = "nope"
    elif case == "absent image":
        spec = container(image="docker.io/library/nginx:latest")
    elif case == "no metadata":
        spec.ClearField("metadata")
    elif case == "stopped sandbox":
        runtime.stop_pod_sandbox(sandbox.id)
    else:
        runtime.create_container(sandbox.id, container(), config)
    with pytest.raises(error, match=re.escape(message)):
        runtime.create_container(sandbox_id, spec, config)


def test_removing_a_running_container_kills_it_keeps_its_log_and_twice_is_fine(runtime: FakeRuntime, tmp_path):
    container_id = started(runtime, pod(log_directory=str(tmp_path)))
    log_path = runtime.container(container_id).log_path
    runtime.remove_container(container_id)
    runtime.remove_container(container_id)
    assert runtime.list_containers() == []
    assert log_lines(log_path)[-1] == ("stderr", "fake runtime: app killed by SIGKILL")


def test_containers_are_listed_by_id_state_sandbox_and_labels(runtime: FakeRuntime):
    web, db = pod("web"), pod("db")
    web_sandbox, db_sandbox = runtime.run_pod_sandbox(web), runtime.run_pod_sandbox(db)
    one = runtime.create_container(web_sandbox.id, container("one", labels={"tier": "front"}), web)
    two = runtime.create_container(db_sandbox.id, container("two"), db)
    runtime.start_container(two.id)
    assert runtime.list_containers(id=one.id[:10]) == [one]
    assert runtime.list_containers(state=cri.CONTAINER_RUNNING) == [two]
    assert runtime.list_containers(sandbox_id=db_sandbox.id[:6]) == [two]
    assert runtime.list_containers(labels={"tier": "front"}) == [one]
    assert runtime.list_containers(sandbox_id="nope") == []


def test_resources_are_recorded_while_the_container_lives(runtime: FakeRuntime):
    container_id = started(runtime, pod())
    runtime.update_container_resources(container_id, cri.LinuxContainerResources(cpu_shares=512))
    assert runtime.container(container_id).resources.cpu_shares == 512
    runtime.stop_container(container_id, 10)
    with pytest.raises(RuntimeFailure, match="is in CONTAINER_EXITED state"):
        runtime.update_container_resources(container_id, cri.LinuxContainerResources())
    with pytest.raises(RuntimeFailure, match="container is not running"):
        runtime.reopen_container_log(container_id)


def test_exec_sync_answers_with_the_scripted_exit_code_and_echoes(runtime: FakeRuntime):
    container_id = started(runtime, pod(annotations={"fake.cri.mkpy.dev/exec-exit-code.app": "1"}))
    assert runtime.exec_sync(container_id, ["echo", "hello", "world"]) == (b"hello world\n", 1)
    assert runtime.exec_sync(container_id, ["cat", "/tmp/healthy"]) == (b"", 1)
    with pytest.raises(InvalidArgument):
        runtime.exec_sync(container_id, [])
    runtime.stop_container(container_id, 1)
    with pytest.raises(RuntimeFailure, match="container is in CONTAINER_EXITED state"):
        runtime.exec_sync(container_id, ["true"])


def test_streaming_calls_are_unimplemented_for_existing_objects_and_not_found_otherwise(runtime: FakeRuntime):
    container_id = started(runtime, pod())
    sandbox_id = runtime.list_pod_sandboxes()[0].id
    for call in (lambda: runtime.exec(container_id), lambda: runtime.attach(container_id),
                 lambda: runtime.port_forward(sandbox_id)):
        with pytest.raises(Unimplemented, match="the fake runtime has no processes to"):
            call()
    with pytest.raises(NotFound):
        runtime.exec("nope")
    with pytest.raises(NotFound):
        runtime.port_forward("nope")


# --- stats ---------------------------------------------------------------------------------------------------

def test_usage_is_small_steady_and_grows_with_time(runtime: FakeRuntime, clock: Clock):
    container_id = started(runtime, pod())
    running = runtime.container(container_id)
    clock.advance(10)
    usage = runtime.container_usage(running)
    assert 1024 * 1024 <= usage.memory_working_set_bytes < 4 * 1024 * 1024
    assert 1_000_000 <= usage.cpu_nano_cores <= 5_000_000
    assert usage.cpu_core_nano_seconds == 10 * usage.cpu_nano_cores
    assert runtime.container_usage(running) == usage  # deterministic
    total, containers = runtime.pod_usage(runtime.sandbox(running.sandbox_id))
    assert containers == [(running, usage)] and total.processes == 2
    assert total.memory_working_set_bytes > usage.memory_working_set_bytes and total.network_rx_bytes > 0
    runtime.stop_pod_sandbox(running.sandbox_id)
    assert runtime.container_usage(running).memory_working_set_bytes == 0
    with pytest.raises(Unavailable):
        runtime.pod_usage(runtime.sandbox(running.sandbox_id))


# --- images --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("given", "normalised"), [
    ("busybox", "docker.io/library/busybox:latest"),
    ("busybox:1.36", "docker.io/library/busybox:1.36"),
    ("library/busybox", "docker.io/library/busybox:latest"),
    ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
    ("index.docker.io/library/busybox", "docker.io/library/busybox:latest"),
    ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
    ("localhost:5000/team/app", "localhost:5000/team/app:latest"),
    ("busybox:1.36@sha256:" + "a" * 64, "docker.io/library/busybox@sha256:" + "a" * 64),
])
def test_references_are_normalised_as_containerd_does(given: str, normalised: str):
    assert str(parse_reference(given)) == normalised


@pytest.mark.parametrize("bad", ["", "Busybox", "busybox:", "busybox@sha256:12", "a//b", "busybox:-x"])
def test_malformed_references_are_refused(runtime: FakeRuntime, bad: str):
    with pytest.raises(ValueError):
        parse_reference(bad)
    with pytest.raises(InvalidArgument, match="invalid reference format"):
        runtime.pull_image(bad)
    assert runtime.image_status(bad) is None


def test_the_default_images_are_present_and_found_by_reference_id_and_digest(runtime: FakeRuntime):
    busybox = runtime.image_status("busybox")
    assert busybox is not None and busybox.repo_tags == (BUSYBOX_IMAGE,)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", busybox.id)
    assert re.fullmatch(r"docker\.io/library/busybox@sha256:[0-9a-f]{64}", busybox.repo_digests[0])
    assert runtime.image_status(busybox.id) is busybox
    assert runtime.image_status(busybox.repo_digests[0]) is busybox
    assert {image.repo_tags[0] for image in runtime.list_images()} == {PAUSE_IMAGE, BUSYBOX_IMAGE}
    assert runtime.list_images("busybox") == [busybox]


def test_any_reference_can_be_pulled_pulling_again_is_a_no_op_and_removal_forgets_every_reference(
        runtime: FakeRuntime):
    pulled = runtime.pull_image("nginx:1.27")
    assert runtime.pull_image("docker.io/library/nginx:1.27") is pulled
    assert runtime.image_status("nginx:1.27") is pulled and pulled.size > 0
    runtime.remove_image(pulled.id)
    runtime.remove_image(pulled.id)
    assert runtime.image_status("nginx:1.27") is None and runtime.image_status(pulled.repo_digests[0]) is None


def test_pulling_from_an_invalid_host_fails_like_offline_containerd(runtime: FakeRuntime):
    with pytest.raises(RuntimeFailure) as failure:
        runtime.pull_image("registry.invalid:5000/team/app:v1")
    assert str(failure.value) == (
        'failed to pull and unpack image "registry.invalid:5000/team/app:v1": failed to resolve reference '
        '"registry.invalid:5000/team/app:v1": failed to do request: Head '
        '"https://registry.invalid:5000/v2/team/app/manifests/v1": dial tcp: lookup registry.invalid: no such host')


def test_a_pod_with_a_pull_error_annotation_cannot_pull(runtime: FakeRuntime):
    config = pod(annotations={"fake.cri.mkpy.dev/pull-error": "pull access denied"})
    with pytest.raises(RuntimeFailure, match="^pull access denied$"):
        runtime.pull_image("nginx", config)
    assert runtime.pull_image("nginx", pod()).repo_tags == ("docker.io/library/nginx:latest",)


def test_image_fs_usage_adds_up_the_images(runtime: FakeRuntime):
    used, inodes = runtime.image_fs_usage()
    assert used == sum(image.size for image in runtime.list_images()) and inodes > 0

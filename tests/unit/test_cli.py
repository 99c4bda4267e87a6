"""The `mkpy` command line: argument errors, cluster bookkeeping, the supervisor and flag parsing.

Every test runs with MKPY_HOME and HOME in a temporary directory, so no real cluster or kubeconfig is touched.
Nothing here starts etcd or the apiserver (tests/e2e does); processes started here are tiny Python sleepers.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import textwrap
import time
import types

import click
import pytest
import yaml
from click.testing import CliRunner

from minikube_py.apiserver.options import ServerOptions
from minikube_py.cli import cluster as cluster_module
from minikube_py.cli import kubeconfig
from minikube_py.cli.cluster import Cluster, list_clusters
from minikube_py.cli.components import COMPONENT_NAMES, control_plane
from minikube_py.cli.flags import parse_duration
from minikube_py.cli.main import COMMANDS, cli
from minikube_py.cli.supervisor import Health, Supervised


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MKPY_HOME", str(tmp_path / "mkpy-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)


def mkpy(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="mkpy")


def test_help_lists_every_command_and_each_one_loads():
    result = mkpy("--help")
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output
        assert mkpy(name, "--help").exit_code == 0


@pytest.mark.parametrize("args", [
    ["down", "--name", "ghost"],
    ["status", "--name", "ghost"],
    ["logs", "etcd", "--name", "ghost"],
    ["kubeconfig", "--name", "ghost"],
    ["etcdctl", "--name", "ghost", "get", "/"],
])
def test_commands_on_an_unknown_cluster_fail_with_one_line(args):
    Cluster.create_or_load("real")
    result = mkpy(*args)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        'Error: cluster "ghost" does not exist (known clusters: real); create it with `mkpy up --name ghost`']


@pytest.mark.parametrize("name", ["Upper", "-dash", "dash-", "a" * 41, "under_score", "dot.ted"])
def test_an_invalid_cluster_name_is_a_usage_error(name):
    result = mkpy("status", "--name", name)
    assert result.exit_code == 2
    assert "a cluster name must be lowercase" in result.output


def test_logs_of_an_unknown_component_is_a_usage_error():
    result = mkpy("logs", "kubelet")
    assert result.exit_code == 2
    assert "'kubelet' is not one of 'etcd', 'apiserver'" in result.output


def test_logs_prints_the_component_log():
    created = Cluster.create_or_load("mkpy")
    (created.logs_dir / "etcd.log").write_text("==> mkpy: starting etcd\nready\n")
    result = mkpy("logs", "etcd")
    assert result.exit_code == 0
    assert result.output == "==> mkpy: starting etcd\nready\n"


def test_logs_of_a_never_started_component_says_so():
    Cluster.create_or_load("mkpy")
    result = mkpy("logs", "apiserver")
    assert result.exit_code == 1
    assert "apiserver of cluster \"mkpy\" has no log yet" in result.output


def test_kubeconfig_prints_the_standalone_path_once_written():
    created = Cluster.create_or_load("dev")
    assert mkpy("kubeconfig", "--name", "dev").exit_code == 1
    created.kubeconfig_path.write_text("apiVersion: v1\n")
    result = mkpy("kubeconfig", "--name", "dev")
    assert (result.exit_code, result.output) == (0, f"{created.kubeconfig_path}\n")


def test_deleting_an_unknown_cluster_is_not_an_error():
    result = mkpy("delete", "--name", "ghost")
    assert result.exit_code == 0
    assert "does not exist; nothing to delete" in result.output


def test_delete_removes_the_directory_and_only_our_kubeconfig_entries(tmp_path):
    created = Cluster.create_or_load("dev")
    user_config = tmp_path / "home" / ".kube" / "config"
    theirs = {"clusters": [{"name": "prod", "cluster": {}}], "current-context": "prod"}
    user_config.parent.mkdir(parents=True)
    user_config.write_text(yaml.safe_dump(theirs))
    kubeconfig.merge(user_config, kubeconfig.standalone("mkpy-dev", "https://x", b"", b"", b""),
                     switch_context=False)
    result = mkpy("delete", "--name", "dev")
    assert result.exit_code == 0, result.output
    assert not created.dir.exists()
    assert list_clusters() == []
    left = yaml.safe_load(user_config.read_text())
    assert [c["name"] for c in left["clusters"]] == ["prod"] and left["contexts"] == []
    assert left["current-context"] == "prod"


def test_status_of_a_stopped_cluster_is_a_table_not_an_error():
    Cluster.create_or_load("mkpy")
    result = mkpy("status")
    assert result.exit_code == 0
    assert "etcd" in result.output and "apiserver" in result.output and "no" in result.output


def test_up_refuses_a_port_held_by_another_process():
    created = Cluster.create_or_load("mkpy")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", created.ports.etcd_client))
        holder.listen()
        result = mkpy("up", "--no-switch-context")
    assert result.exit_code == 1
    assert f"port {created.ports.etcd_client} (etcd client) on 127.0.0.1 is in use" in result.output


@pytest.fixture
def fake_etcdctl(tmp_path, monkeypatch):
    """An etcdctl that records its arguments in a file and exits 3."""
    record = tmp_path / "etcdctl-args"
    script = tmp_path / "etcdctl"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import sys
        open({str(record)!r}, "w").write("\\n".join(sys.argv[1:]))
        sys.exit(3)
    """))
    script.chmod(0o755)
    monkeypatch.setattr("minikube_py.store.etcd_server.etcdctl_binary", lambda: str(script))
    return record


@pytest.mark.parametrize("args, passed", [
    (["--name", "dev", "get", "--prefix", "/registry/pods"], ["get", "--prefix", "/registry/pods"]),
    (["--name=dev", "get", "/x", "--name", "other"], ["get", "/x", "--name", "other"]),
    (["--name", "dev", "-w", "json", "get", "--keys-only", "/"], ["-w", "json", "get", "--keys-only", "/"]),
    (["--name", "dev", "get", "--help"], ["get", "--help"]),
])
def test_etcdctl_passes_arguments_verbatim_and_its_exit_code_back(fake_etcdctl, args, passed):
    created = Cluster.create_or_load("dev")
    result = mkpy("etcdctl", *args)
    assert result.exit_code == 3, result.output
    assert fake_etcdctl.read_text().split("\n") == [f"--endpoints={created.etcd_endpoint}", *passed]


def test_a_cluster_keeps_its_ports_across_loads():
    created = Cluster.create_or_load("dev")
    assert Cluster.load("dev").ports == created.ports
    assert Cluster.create_or_load("dev").ports == created.ports


def test_clusters_side_by_side_never_share_a_port(monkeypatch):
    per_cluster = len(dataclasses.fields(cluster_module.Ports))
    monkeypatch.setattr(cluster_module, "PORT_RANGE", (21000, 21000 + 3 * per_cluster - 1))
    clusters = [Cluster.create_or_load(name) for name in ("a", "b", "c")]
    ports = [p for c in clusters for p in dataclasses.astuple(c.ports)]
    assert len(set(ports)) == 3 * per_cluster
    assert [c.name for c in list_clusters()] == ["a", "b", "c"]


def test_a_cluster_made_before_the_scheduler_and_kcm_existed_gets_their_ports_on_its_next_up():
    created = Cluster.create_or_load("old")
    created.ports.scheduler = created.ports.kcm = 0
    created.save()
    again = Cluster.create_or_load("old")
    assert again.ports.scheduler != 0 and again.ports.kcm != 0
    assert (again.ports.etcd_client, again.ports.etcd_peer, again.ports.apiserver) == (
        created.ports.etcd_client, created.ports.etcd_peer, created.ports.apiserver)
    assert Cluster.load("old").ports == again.ports


@pytest.mark.parametrize(("without", "steps"), [
    ((), ["start etcd", "wait etcd", "start apiserver", "wait apiserver", "start kcm", "start ccm",
          "start scheduler", "wait kcm", "wait ccm", "wait scheduler"]),
    (("kcm",), ["start etcd", "wait etcd", "start apiserver", "wait apiserver", "start ccm", "start scheduler",
                "wait ccm", "wait scheduler"]),
], ids=["the controllers start together once the apiserver is healthy", "also with one of them left out"])
def test_up_starts_the_components_that_need_only_the_apiserver_together(monkeypatch, without, steps):
    from minikube_py.cli import lifecycle

    done = []
    monkeypatch.setattr(lifecycle, "_start", lambda cluster, component: done.append(f"start {component.name}"))
    monkeypatch.setattr(lifecycle, "_wait_healthy",
                        lambda console, cluster, component, process, began: done.append(f"wait {component.name}"))
    created = Cluster.create_or_load("dev")
    components = [c for c in control_plane(created) if c.name not in without]
    lifecycle.bring_up_all(lifecycle.Console(), created, components)
    assert done == steps


def test_the_component_table_matches_the_component_names():
    assert tuple(c.name for c in control_plane(Cluster.create_or_load("dev"))) == COMPONENT_NAMES


def test_the_apiserver_is_started_with_the_cluster_pki_and_its_token_file_when_present():
    created = Cluster.create_or_load("dev")
    apiserver = control_plane(created, "10.1.2.3")[1]
    argv = apiserver.argv()
    assert argv[1:4] == ["-m", "minikube_py.cli.main", "apiserver"]
    assert f"--etcd-servers={created.etcd_endpoint}" in argv
    assert f"--secure-port={created.ports.apiserver}" in argv
    assert f"--client-ca-file={created.pki_dir / 'ca.crt'}" in argv
    assert "--advertise-address=10.1.2.3" in argv
    assert not any(a.startswith("--token-auth-file") for a in argv)
    created.token_auth_file.write_text("t,u,1\n")
    assert f"--token-auth-file={created.token_auth_file}" in apiserver.argv()


@pytest.fixture
def served(monkeypatch):
    """Replace the apiserver's serve() and collect the ServerOptions it is called with."""
    calls: list[ServerOptions] = []
    fake = types.ModuleType("minikube_py.apiserver.server")
    fake.serve = calls.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "minikube_py.apiserver.server", fake)
    return calls


def test_apiserver_flags_become_server_options(served, tmp_path):
    cert, key, ca = (tmp_path / n for n in ("s.crt", "s.key", "ca.crt"))
    for path in (cert, key, ca):
        path.write_text("x")
    result = mkpy("apiserver", "--etcd-servers=http://a:2379, http://b:2379", "--secure-port=7443",
                  f"--tls-cert-file={cert}", f"--tls-private-key-file={key}", f"--client-ca-file={ca}",
                  "--etcd-compaction-interval=1m30s", "--service-cluster-ip-range=10.0.0.0/24",
                  "--service-node-port-range=31000-31010")
    assert result.exit_code == 0, result.output
    (options,) = served
    assert options.etcd_servers == ["http://a:2379", "http://b:2379"]
    assert (options.secure_port, options.etcd_compaction_interval) == (7443, 90.0)
    assert (options.tls_cert_file, options.client_ca_file) == (str(cert), str(ca))
    assert options.service_cluster_ip_range == "10.0.0.0/24"
    assert options.service_node_port_range == "31000-31010"
    assert options.advertise_address == "127.0.0.1"


@pytest.mark.parametrize("flag, seconds", [
    ("--event-ttl=1h0m0s", 3600), ("--event-ttl=30s", 30), ("--event-ttl=2s", 2), ("--event-ttl=90", 90),
    ("--event-ttl=1.9s", 1), ("--event-ttl=0", 0),
])
def test_the_event_ttl_is_whole_seconds(served, flag, seconds):
    assert mkpy("apiserver", flag).exit_code == 0
    assert served[0].event_ttl == seconds


def test_apiserver_defaults_are_the_server_options_defaults(served):
    assert mkpy("apiserver").exit_code == 0
    assert served == [ServerOptions(advertise_address="127.0.0.1")]


@pytest.mark.parametrize("flag, message", [
    ("--etcd-servers=127.0.0.1:2379", "is not an http(s)://host:port URL"),
    ("--etcd-servers=http://a", "is not an http(s)://host:port URL"),
    ("--etcd-compaction-interval=5 minutes", "invalid duration"),
    ("--event-ttl=abc", "invalid duration"),
    ("--event-ttl=-1s", "invalid duration"),
    ("--event-ttl=500ms", "must be 0 (keep Events until deleted) or at least 1s, not 0.5s"),
    ("--secure-port=70000", "70000 is not in the range"),
    ("--bind-address=localhost", "is not an IP address"),
    ("--service-cluster-ip-range=10.96.0.1/12", "is not a network in CIDR notation"),
    ("--service-node-port-range=32767-30000", "is not a port range"),
    ("--tls-cert-file=/nonexistent", "does not exist"),
    ("--no-such-flag", "No such option"),
    ("--authorization-mode=Node,ABAC", "'ABAC' is not one of AlwaysAllow, AlwaysDeny, Node, RBAC"),
    ("--enable-admission-plugins=NoSuchPlugin", "unknown admission plugin(s): NoSuchPlugin"),
])
def test_bad_apiserver_flags_are_usage_errors(served, flag, message):
    result = mkpy("apiserver", flag)
    assert result.exit_code == 2
    assert message in result.output
    assert served == []


def test_a_certificate_without_its_key_is_a_usage_error(served, tmp_path):
    (tmp_path / "s.crt").write_text("x")
    result = mkpy("apiserver", f"--tls-cert-file={tmp_path / 's.crt'}")
    assert result.exit_code == 2 and "must be given together" in result.output


def test_a_plugin_both_enabled_and_disabled_is_a_usage_error(served):
    result = mkpy("apiserver", "--enable-admission-plugins=Priority", "--disable-admission-plugins=Priority")
    assert result.exit_code == 2 and "both enabled and disabled: Priority" in result.output
    assert served == []


def test_an_unusable_service_account_key_stops_the_apiserver_before_it_starts(served, tmp_path):
    (tmp_path / "sa.pub").write_text("not a key\n")
    result = mkpy("apiserver", f"--service-account-key-file={tmp_path / 'sa.pub'}")
    assert result.exit_code == 2 and "sa.pub holds no RSA or ECDSA key" in result.output
    assert served == []


def test_a_malformed_token_file_stops_the_apiserver_before_it_starts(served, tmp_path):
    (tmp_path / "tokens.csv").write_text("t1,alice\n")
    result = mkpy("apiserver", f"--token-auth-file={tmp_path / 'tokens.csv'}")
    assert result.exit_code == 2 and "tokens.csv:1: expected at least 3 columns" in result.output
    assert served == []


@pytest.mark.parametrize("text, seconds", [
    ("5m0s", 300.0), ("300s", 300.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("250ms", 0.25), ("0", 0.0),
    ("90", 90.0), ("2.5", 2.5), ("1m0.5s", 60.5), ("10us", 1e-5),
])
def test_go_durations_are_parsed_to_seconds(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["-5s", "5 m", "5x", "m", "1h 30m", "1h-30m", ""])
def test_malformed_durations_are_refused(text):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def sleeper(marker: str) -> list[str]:
    return [sys.executable, "-c", "import time, sys; time.sleep(60)", marker]


def test_the_supervisor_starts_finds_and_stops_a_process(tmp_path):
    supervised = Supervised("sleeper", tmp_path)
    process = supervised.start(sleeper(str(tmp_path)))
    try:
        # a busy machine may show the child's new command line (which names the cluster) a moment late
        deadline = time.monotonic() + 5
        while supervised.pid() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert supervised.pid() == process.pid
        assert supervised.stop(timeout=5) == process.pid
        process.wait(timeout=5)
        assert supervised.pid() is None and not supervised.pid_path.exists()
        assert supervised.log_path.read_text().startswith("==> mkpy: ")
    finally:
        process.kill()


def test_a_pidfile_naming_someone_elses_process_is_not_ours(tmp_path):
    supervised = Supervised("etcd", tmp_path)
    supervised.pid_path.parent.mkdir(parents=True)
    supervised.pid_path.write_text(f"{os.getpid()}\n")  # pytest's own command line does not name tmp_path
    assert supervised.pid() is None
    assert supervised.stop() is None


def test_waiting_for_a_process_that_exits_shows_its_last_log_lines(tmp_path):
    supervised = Supervised("crasher", tmp_path)
    process = supervised.start([sys.executable, "-c", "print('boom: bad flag'); raise SystemExit(3)", str(tmp_path)])
    with pytest.raises(click.ClickException) as failure:
        supervised.wait_healthy(lambda: Health(False, "unreachable"), timeout=30, process=process)
    assert "crasher exited with code 3" in failure.value.message
    assert "boom: bad flag" in failure.value.message


def test_waiting_too_long_names_the_log(tmp_path):
    supervised = Supervised("slow", tmp_path)
    process = supervised.start(sleeper(str(tmp_path)))
    try:
        with pytest.raises(click.ClickException, match=r"slow is not ready after 0s \(not ready \(503\)\); see "):
            supervised.wait_healthy(lambda: Health(False, "not ready (503)"), timeout=0.05, process=process)
    finally:
        supervised.stop(timeout=5)
        process.wait(timeout=5)


@pytest.mark.parametrize("value, message", [
    ("kcmgrace", "is not COMPONENT.FLAG=VALUE"),
    ("kcm.=1", "is not COMPONENT.FLAG=VALUE"),
    ("kcm.Bad_Flag=1", "is not COMPONENT.FLAG=VALUE"),
    ("proxy.mode=ipvs", "unknown component 'proxy'"),
])
def test_a_malformed_extra_config_is_a_usage_error(value, message):
    result = mkpy("up", "--extra-config", value)
    assert result.exit_code == 2
    assert message in result.output
    assert list_clusters() == []  # refused before the cluster directory is made


def test_extra_config_is_kept_per_component_and_later_values_win():
    from minikube_py.cli.lifecycle import _parse_extra_config

    parsed = _parse_extra_config(None, None, ("kcm.node-monitor-grace-period=10s", "kubelet.max-pods=20",  # type: ignore[arg-type]
                                              "kcm.node-monitor-grace-period=12s", "apiserver.v=4"))
    assert parsed == {"kcm": {"node-monitor-grace-period": "12s"}, "kubelet": {"max-pods": "20"},
                      "apiserver": {"v": "4"}}
    cluster = Cluster.create_or_load("dev")
    cluster.extra_config = parsed
    cluster.save()
    loaded = Cluster.load("dev")
    assert loaded.extra_args("kcm") == ["--node-monitor-grace-period=12s"]
    assert loaded.extra_args("kubelet-dev-m02") == ["--max-pods=20"]
    assert loaded.extra_args("scheduler") == []

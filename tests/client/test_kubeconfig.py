"""Kubeconfig and in-cluster configuration: contexts, credentials, paths, merging, TLS, and bad input."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any

import pytest
import yaml

from minikube_py.auth import pki
from minikube_py.client.kubeconfig import ClientConfig, ConfigError, in_cluster_config, load_kubeconfig


@pytest.fixture(scope="module")
def pems(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pki")
    ca = pki.ensure_ca(folder)
    client = pki.ensure_client_cert(folder, ca, "alice", user="alice")
    return {"ca": ca.cert_path, "cert": client.cert_path, "key": client.key_path}


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig(current: str = "main", *, clusters: dict[str, dict[str, Any]] | None = None,
               users: dict[str, dict[str, Any]] | None = None,
               contexts: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    clusters = {"main": {"server": "https://10.0.0.1:6443/"}} if clusters is None else clusters
    users = {"main": {"token": "t0k3n"}} if users is None else users
    contexts = {"main": {"cluster": "main", "user": "main"}} if contexts is None else contexts
    return {"apiVersion": "v1", "kind": "Config", "current-context": current,
            "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
            "users": [{"name": n, "user": u} for n, u in users.items()],
            "contexts": [{"name": n, "context": c} for n, c in contexts.items()]}


def write(path: Path, config: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    return path


def test_the_current_context_gives_server_token_and_namespace(tmp_path: Path) -> None:
    config = kubeconfig(contexts={"main": {"cluster": "main", "user": "main", "namespace": "team"}})
    loaded = load_kubeconfig(write(tmp_path / "config", config))
    assert (loaded.server, loaded.token, loaded.namespace) == ("https://10.0.0.1:6443", "t0k3n", "team")
    assert loaded.ca_file is None and loaded.cert_data is None and not loaded.insecure_skip_tls_verify


def test_a_context_given_by_name_overrides_the_current_one(tmp_path: Path) -> None:
    config = kubeconfig(clusters={"main": {"server": "https://a:1"}, "other": {"server": "https://b:2"}},
                        contexts={"main": {"cluster": "main"}, "other": {"cluster": "other"}})
    path = write(tmp_path / "config", config)
    assert load_kubeconfig(path).server == "https://a:1"
    assert load_kubeconfig(path, context="other").server == "https://b:2"
    assert load_kubeconfig(path, context="other").namespace == "default"


def test_embedded_certificates_are_decoded_and_build_a_tls_context(tmp_path: Path, pems: dict[str, Path]) -> None:
    config = kubeconfig(clusters={"main": {"server": "https://a:1", "certificate-authority-data": b64(pems["ca"])}},
                        users={"main": {"client-certificate-data": b64(pems["cert"]),
                                        "client-key-data": b64(pems["key"])}})
    loaded = load_kubeconfig(write(tmp_path / "config", config))
    assert loaded.ca_data == pems["ca"].read_bytes() and loaded.key_data == pems["key"].read_bytes()
    context = loaded.ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert len(context.get_ca_certs()) == 1


def test_relative_paths_resolve_against_the_kubeconfig_directory(tmp_path: Path, pems: dict[str, Path]) -> None:
    folder = tmp_path / "kube"
    for name, source in pems.items():
        write(folder / "certs" / f"{name}.pem", source.read_text())
    config = kubeconfig(clusters={"main": {"server": "https://a:1", "certificate-authority": "certs/ca.pem"}},
                        users={"main": {"client-certificate": "certs/cert.pem", "client-key": "certs/key.pem",
                                        "tokenFile": "token"}})
    loaded = load_kubeconfig(write(folder / "config", config))
    assert loaded.ca_file == str(folder / "certs" / "ca.pem")
    assert (loaded.cert_file, loaded.key_file) == (str(folder / "certs/cert.pem"), str(folder / "certs/key.pem"))
    assert loaded.token_file == str(folder / "token")
    assert len(loaded.ssl_context().get_ca_certs()) == 1


def test_insecure_skip_tls_verify_turns_verification_off(tmp_path: Path) -> None:
    config = kubeconfig(clusters={"main": {"server": "https://a:1", "insecure-skip-tls-verify": True}})
    context = load_kubeconfig(write(tmp_path / "config", config)).ssl_context()
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname


def test_kubeconfig_files_merge_with_the_first_definition_winning(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    first = write(tmp_path / "one", kubeconfig("", clusters={"main": {"server": "https://first:1"}}, users={},
                                               contexts={}))
    second = write(tmp_path / "two", kubeconfig("main", clusters={"main": {"server": "https://second:2"}}))
    missing = tmp_path / "missing"
    monkeypatch.setenv("KUBECONFIG", f"{missing}:{first}:{second}")
    loaded = load_kubeconfig()
    assert (loaded.server, loaded.token) == ("https://first:1", "t0k3n")


def test_without_kubeconfig_variable_the_home_config_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path / ".kube" / "config", kubeconfig())
    assert load_kubeconfig().server == "https://10.0.0.1:6443"


def test_in_cluster_config_reads_the_service_account_directory(tmp_path: Path, pems: dict[str, Path]) -> None:
    write(tmp_path / "token", "sa-token\n")
    write(tmp_path / "ca.crt", pems["ca"].read_text())
    write(tmp_path / "namespace", "kube-system")
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    loaded = in_cluster_config(tmp_path, env)
    assert (loaded.server, loaded.namespace) == ("https://10.96.0.1:443", "kube-system")
    assert (loaded.token_file, loaded.ca_file) == (str(tmp_path / "token"), str(tmp_path / "ca.crt"))
    ipv6 = in_cluster_config(tmp_path, {**env, "KUBERNETES_SERVICE_HOST": "fd00::1"})
    assert ipv6.server == "https://[fd00::1]:443"


BAD_KUBECONFIGS: list[tuple[str, str | dict[str, Any], str | None, str]] = [
    ("malformed YAML is reported with the file name", "clusters: [\n  - {name: x", None, "cannot read"),
    ("a YAML list is not a kubeconfig", "- a\n- b\n", None, "not a kubeconfig"),
    ("clusters that are not a list", {"clusters": {"a": 1}}, None, "clusters must be a list"),
    ("an unknown context given by name", kubeconfig(), "nope", "context 'nope' does not exist"),
    ("no current context and none given", kubeconfig(""), None, "no current-context"),
    ("a context naming a missing cluster", kubeconfig(contexts={"main": {"cluster": "gone"}}), None,
     "cluster 'gone' does not exist"),
    ("a context without a cluster", kubeconfig(contexts={"main": {"user": "main"}}), None, "has no cluster"),
    ("a cluster without a server", kubeconfig(clusters={"main": {"insecure-skip-tls-verify": True}}), None,
     "has no server"),
    ("certificate data that is not base64",
     kubeconfig(clusters={"main": {"server": "https://a:1", "certificate-authority-data": "%%%"}}), None,
     "certificate-authority-data is not valid base64"),
    ("an exec credential plugin", kubeconfig(users={"main": {"exec": {"command": "aws"}}}), None,
     "'exec' is not supported"),
    ("an entry without a name", {"clusters": [{"cluster": {"server": "https://a"}}]}, None, "needs a name"),
]


@pytest.mark.parametrize(("content", "context", "message"), [case[1:] for case in BAD_KUBECONFIGS],
                         ids=[case[0] for case in BAD_KUBECONFIGS])
def test_bad_kubeconfigs_are_config_errors(tmp_path: Path, content: str | dict[str, Any], context: str | None,
                                           message: str) -> None:
    path = write(tmp_path / "config", content)
    with pytest.raises(ConfigError, match=message) as caught:
        load_kubeconfig(path, context=context)
    assert "\n" not in str(caught.value)


def test_a_missing_kubeconfig_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such kubeconfig file"):
        load_kubeconfig(tmp_path / "absent")


def test_a_kubeconfig_variable_naming_only_missing_files_is_a_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match="none of the files in KUBECONFIG exist"):
        load_kubeconfig()


@pytest.mark.parametrize(("environ", "files", "message"), [
    ({}, {"token": "t"}, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"),
    ({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, {}, "no service account token"),
], ids=["outside a pod the service variables are missing", "a pod without a mounted token"])
def test_bad_in_cluster_environments_are_config_errors(tmp_path: Path, environ: dict[str, str],
                                                       files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    with pytest.raises(ConfigError, match=message):
        in_cluster_config(tmp_path, environ)


def test_bad_tls_material_is_a_config_error(tmp_path: Path, pems: dict[str, Path]) -> None:
    cases = {
        "a CA that is not PEM": ClientConfig("https://a", ca_data=b"not a certificate"),
        "a missing CA file": ClientConfig("https://a", ca_file=str(tmp_path / "absent.crt")),
        "a certificate without its key": ClientConfig("https://a", cert_file=str(pems["cert"])),
        "a key that does not match": ClientConfig("https://a", cert_data=pems["cert"].read_bytes(),
                                                  key_data=b"-----BEGIN PRIVATE KEY-----\nAAAA\n"),
    }
    for case, config in cases.items():
        with pytest.raises(ConfigError) as caught:
            config.ssl_context()
        assert "\n" not in str(caught.value), case

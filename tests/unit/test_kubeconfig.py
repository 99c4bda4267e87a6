"""Kubeconfig files: our entries go in and out of the user's kubeconfig without disturbing anything else."""

from __future__ import annotations

import os
import stat

import pytest
import yaml

from minikube_py.cli import kubeconfig

THEIRS = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example:6443"}}],
    "users": [{"name": "prod-admin", "user": {"token": "t0p"}}],
    "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "prod-admin", "namespace": "web"}}],
    "current-context": "prod",
    "preferences": {"colors": True},
    "extensions": [{"name": "x", "extension": {"a": 1}}],
}


def ours(name="mkpy-dev", server="https://127.0.0.1:20001"):
    return kubeconfig.standalone(name, server, b"CA PEM", b"CERT PEM", b"KEY PEM")


def names(config, section):
    return [entry["name"] for entry in config[section]]


@pytest.fixture
def user_config(tmp_path):
    path = tmp_path / ".kube" / "config"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(THEIRS, sort_keys=False))
    return path


def load(path):
    return yaml.safe_load(path.read_text())


def test_a_standalone_kubeconfig_selects_its_only_context():
    config = ours()
    assert config["current-context"] == "mkpy-dev"
    assert config["contexts"] == [{"name": "mkpy-dev", "context": {"cluster": "mkpy-dev", "user": "mkpy-dev"}}]
    assert config["clusters"][0]["cluster"]["certificate-authority-data"] == "Q0EgUEVN"
    assert set(config["users"][0]["user"]) == {"client-certificate-data", "client-key-data"}


def test_written_kubeconfigs_are_private(tmp_path):
    kubeconfig.write(tmp_path / "kubeconfig", ours())
    assert stat.S_IMODE((tmp_path / "kubeconfig").stat().st_mode) == 0o600


def test_merging_keeps_every_other_entry_and_key(user_config):
    kubeconfig.merge(user_config, ours(), switch_context=True)
    merged = load(user_config)
    assert names(merged, "clusters") == ["prod", "mkpy-dev"]
    assert names(merged, "users") == ["prod-admin", "mkpy-dev"]
    assert names(merged, "contexts") == ["prod", "mkpy-dev"]
    assert merged["contexts"][0] == THEIRS["contexts"][0]
    assert merged["preferences"] == {"colors": True}
    assert merged["extensions"] == THEIRS["extensions"]


def test_merging_again_replaces_our_entries_in_place(user_config):
    kubeconfig.merge(user_config, ours(server="https://127.0.0.1:1"), switch_context=True)
    kubeconfig.merge(user_config, ours(server="https://127.0.0.1:2"), switch_context=True)
    merged = load(user_config)
    assert names(merged, "clusters") == ["prod", "mkpy-dev"]
    assert merged["clusters"][1]["cluster"]["server"] == "https://127.0.0.1:2"


@pytest.mark.parametrize("switch, current", [(True, "mkpy-dev"), (False, "prod")])
def test_the_current_context_switches_only_when_asked(user_config, switch, current):
    kubeconfig.merge(user_config, ours(), switch_context=switch)
    assert load(user_config)["current-context"] == current


def test_the_first_write_backs_up_the_original_once(user_config):
    original = user_config.read_text()
    kubeconfig.merge(user_config, ours("mkpy-a"), switch_context=True)
    kubeconfig.merge(user_config, ours("mkpy-b"), switch_context=True)
    backup = user_config.with_name("config.mkpy-backup")
    assert backup.read_text() == original


def test_merging_into_no_file_creates_it_without_a_backup(tmp_path):
    path = tmp_path / "new" / "config"
    kubeconfig.merge(path, ours(), switch_context=True)
    assert load(path)["current-context"] == "mkpy-dev"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.with_name("config.mkpy-backup").exists()


def test_an_empty_file_is_an_empty_kubeconfig(tmp_path):
    path = tmp_path / "config"
    path.write_text("")
    kubeconfig.merge(path, ours(), switch_context=False)
    assert names(load(path), "contexts") == ["mkpy-dev"]


@pytest.mark.parametrize("text", ["clusters: [unclosed", "- just\n- a list\n", "clusters: 5\n",
                                  "clusters: [5]\n"])
def test_a_file_that_is_not_a_kubeconfig_is_left_alone(tmp_path, text):
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(kubeconfig.KubeconfigError, match=str(path)):
        kubeconfig.merge(path, ours(), switch_context=True)
    assert path.read_text() == text


def test_removing_takes_out_only_our_entries_and_our_current_context(user_config):
    kubeconfig.merge(user_config, ours("mkpy-a"), switch_context=True)
    kubeconfig.merge(user_config, ours("mkpy-b"), switch_context=False)
    assert kubeconfig.remove(user_config, "mkpy-a")
    left = load(user_config)
    assert names(left, "contexts") == ["prod", "mkpy-b"]
    assert names(left, "clusters") == ["prod", "mkpy-b"]
    assert names(left, "users") == ["prod-admin", "mkpy-b"]
    assert left["current-context"] == ""


def test_removing_keeps_someone_elses_current_context(user_config):
    kubeconfig.merge(user_config, ours(), switch_context=False)
    kubeconfig.remove(user_config, "mkpy-dev")
    assert load(user_config) == THEIRS


def test_removing_what_is_not_there_does_not_write(user_config, tmp_path):
    before = user_config.stat().st_mtime_ns
    assert not kubeconfig.remove(user_config, "mkpy-absent")
    assert user_config.stat().st_mtime_ns == before
    assert not kubeconfig.remove(tmp_path / "nothing", "mkpy-absent")


@pytest.mark.parametrize("kubeconfig_env, existing, expected", [
    pytest.param(None, [], "home/.kube/config", id="no KUBECONFIG: ~/.kube/config"),
    pytest.param("a", [], "a", id="one file, even if absent"),
    pytest.param("a:b:c", ["b", "c"], "b", id="several: the first that exists"),
    pytest.param("a:b", [], "b", id="several, none exists: the last"),
    pytest.param(":a:", [], "a", id="empty entries ignored"),
    pytest.param("mkpyhome/dev/kubeconfig", [], "home/.kube/config", id="never an mkpy standalone file"),
])
def test_the_user_kubeconfig_is_where_kubectl_would_write(tmp_path, monkeypatch, kubeconfig_env, existing,
                                                          expected):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in existing:
        (tmp_path / name).write_text("")
    if kubeconfig_env is None:
        monkeypatch.delenv("KUBECONFIG", raising=False)
    else:
        paths = [str(tmp_path / p) if p else "" for p in kubeconfig_env.split(":")]
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join(paths))
    assert kubeconfig.user_kubeconfig_path(tmp_path / "mkpyhome") == tmp_path / expected

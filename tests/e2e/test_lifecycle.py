"""A cluster's life through the `mkpy` command: up, down, up again, status, logs, etcdctl, delete.

The promise tested here is the one in DESIGN.md: `mkpy down` stops the processes and keeps the data, and
the next `mkpy up` brings back the same cluster, with every object exactly as it was (same uid, same
resourceVersion: etcd's revisions survive a restart), at the same address with the same credentials.
Several named clusters live in one home and run side by side, each with its own ports, etcd and kubectl
context. These tests use a home of their own (not the session's shared cluster), so that `mkpy list`
shows only their clusters and stopping one disturbs nobody else.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import (
    KubeCluster,
    Mkpy,
    configmap_manifest,
    deployment_manifest,
    documents,
    namespace_manifest,
    pod_manifest,
    run,
    service_manifest,
    wait_until,
)

pytestmark = pytest.mark.e2e

NS = "keep"
NAMESPACED_KINDS = "configmaps,secrets,deployments,services,pods,serviceaccounts"
CLUSTER_KINDS = "clusterroles,priorityclasses"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, kubectl_on_path: str) -> Mkpy:
    return Mkpy(tmp_path_factory.mktemp("lifecycle"))


def _running(home: Mkpy, name: str) -> Iterator[KubeCluster]:
    # No nodes: these tests check that the control plane keeps every object unchanged across down/up, and a
    # kubelet would (rightly) rewrite its pods' status after each up. tests/e2e/containerd/test_nodes.py
    # covers nodes.
    try:
        yield home.up(name, "--nodes", "0")
    finally:
        home.delete(name)


@pytest.fixture(scope="module")
def alpha(home: Mkpy) -> Iterator[KubeCluster]:
    yield from _running(home, "alpha")


@pytest.fixture(scope="module")
def beta(home: Mkpy) -> Iterator[KubeCluster]:
    yield from _running(home, "beta")


# helpers ------------------------------------------------------------------------------------------------


def snapshot(cluster: KubeCluster) -> dict[tuple[str, str], dict]:
    """Every object this module created, by (kind, name), exactly as the apiserver returns it."""
    listed = cluster.kubectl_json("get", NAMESPACED_KINDS, "-n", NS)["items"]
    listed += [item for item in cluster.kubectl_json("get", CLUSTER_KINDS)["items"]
               if item["metadata"]["name"].startswith("keep-")]
    listed.append(cluster.kubectl_json("get", "namespace", NS))
    return {(item["kind"], item["metadata"]["name"]): item for item in listed}


def component_rows(status_output: str) -> dict[str, list[str]]:
    """The rows of the `mkpy status` table, by component name (rich draws cells between │ bars)."""
    rows = {}
    for line in status_output.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if cells and cells[0] in ("etcd", "apiserver"):
            rows[cells[0]] = cells
    return rows


def keys(etcdctl_output: str) -> list[str]:
    """Object keys, except events and leases: running components (the scheduler) write those as they go."""
    return [line for line in etcdctl_output.splitlines()
            if line.strip() and not line.startswith(("/registry/events/", "/registry/leases/"))]


def scheduler_has_seen(pod: dict) -> bool:
    """The scheduler marks a pod it cannot place (there are no nodes) with PodScheduled=False."""
    return any(c.get("type") == "PodScheduled" for c in pod.get("status", {}).get("conditions") or [])


def contexts(home: Mkpy) -> dict:
    return yaml.safe_load((Path(home.env["HOME"]) / ".kube" / "config").read_text())


KEPT_OBJECTS = documents(
    configmap_manifest("settings", {"color": "blue"}),
    yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "password"},
                    "stringData": {"password": "s3cret"}}),
    deployment_manifest("web", replicas=0),  # its controllers still write its status and a ReplicaSet
    service_manifest("web", {"app": "web"}),
    pod_manifest("solo", {"app": "solo"}),
    yaml.safe_dump({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
)
KEPT_CLUSTER_OBJECTS = documents(
    yaml.safe_dump({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": "keep-reader"},
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    yaml.safe_dump({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": "keep-high"}, "value": 1000}),
)


# tests ----------------------------------------------------------------------------------------------------


def test_up_on_a_running_cluster_only_says_so(home: Mkpy, alpha: KubeCluster) -> None:
    out = home("up", "--name", "alpha").stdout
    assert f'cluster "alpha" is already running at {alpha.server}' in out


def test_down_then_up_keeps_every_object_with_its_uid_and_resource_version(home: Mkpy,
                                                                          alpha: KubeCluster) -> None:
    alpha.apply_manifest(namespace_manifest(NS))
    alpha.apply_manifest(KEPT_OBJECTS, NS)
    alpha.apply_manifest(KEPT_CLUSTER_OBJECTS)
    # the namespace also gets its `default` ServiceAccount and the cluster CA's ConfigMap, a moment later
    wait_until(lambda: len(snapshot(alpha)) == 11, "the 9 objects created here and the namespace's two")
    wait_until(lambda: snapshot(alpha)[("Deployment", "web")].get("status", {}).get("observedGeneration") == 1,
               "the deployment controller to have written the deployment's status")
    wait_until(lambda: all(scheduler_has_seen(obj) for (kind, _), obj in snapshot(alpha).items() if kind == "Pod"),
               "the scheduler to try the pods")
    before = snapshot(alpha)
    etcd_keys = keys(alpha.etcdctl("get", "--prefix", "--keys-only", "/registry/").stdout)

    out = home("down", "--name", "alpha").stdout
    assert 'cluster "alpha" is stopped; its data is kept' in out
    assert all(row[2] == "no" for row in component_rows(home("status", "--name", "alpha").stdout).values())
    refused = alpha.kubectl("get", "pods", "-n", NS, expect_failure=True)
    assert "connection refused" in refused.stderr or "was refused" in refused.stderr

    home("up", "--name", "alpha")
    after = snapshot(alpha)
    assert after.keys() == before.keys()
    for key, obj in before.items():
        assert after[key] == obj, f"{key} changed across down/up"
    assert keys(alpha.etcdctl("get", "--prefix", "--keys-only", "/registry/").stdout) == etcd_keys


def test_after_a_restart_revisions_continue_and_old_resource_versions_still_watch(alpha: KubeCluster) -> None:
    alpha.kubectl("create", "-n", "default", "-f", "-", input=configmap_manifest("before-restart"))
    old_rv = alpha.kubectl_json("get", "configmap", "before-restart", "-n", "default")["metadata"]["resourceVersion"]
    alpha.mkpy("down", "--name", "alpha")
    alpha.mkpy("up", "--name", "alpha")
    alpha.kubectl("label", "configmap", "before-restart", "-n", "default", "restarted=yes")
    new_rv = alpha.kubectl_json("get", "configmap", "before-restart", "-n", "default")["metadata"]["resourceVersion"]
    assert int(new_rv) > int(old_rv)
    # etcd kept its history: a watch from the pre-restart resourceVersion replays the change
    raw = alpha.kubectl("get", "--raw", f"/api/v1/namespaces/default/configmaps?watch=true"
                        f"&resourceVersion={old_rv}&timeoutSeconds=1").stdout
    events = [json.loads(line) for line in raw.splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("MODIFIED", "before-restart")]


def test_status_shows_each_component_running_and_healthy(home: Mkpy, alpha: KubeCluster) -> None:
    rows = component_rows(home("status", "--name", "alpha").stdout)
    assert rows.keys() == {"etcd", "apiserver"}
    for name, (_, pid, running, health, _address) in rows.items():
        assert pid.isdigit() and running == "yes" and health == "healthy", rows[name]
    assert rows["apiserver"][4] == alpha.server
    assert rows["etcd"][4].startswith("http://127.0.0.1:")


def test_logs_of_the_apiserver_show_the_command_line_it_was_started_with(home: Mkpy, alpha: KubeCluster) -> None:
    out = home("logs", "apiserver", "--name", "alpha").stdout
    started = [line for line in out.splitlines() if line.startswith("==> mkpy:") and "starting apiserver" in line]
    assert started, out
    port = alpha.server.rsplit(":", 1)[1]
    assert "minikube_py.cli.main apiserver --etcd-servers=http://127.0.0.1:" in started[-1]
    assert f"--secure-port={port}" in started[-1] and f"--client-ca-file={alpha.dir}/pki/ca.crt" in started[-1]


def test_logs_of_an_unknown_component_is_a_usage_error(home: Mkpy, alpha: KubeCluster) -> None:
    result = home("logs", "kubelet", "--name", "alpha", expect_failure=True)
    assert "Invalid value" in result.stderr


def test_etcdctl_shows_the_keys_and_values_the_apiserver_wrote(alpha: KubeCluster) -> None:
    alpha.kubectl("create", "-n", "default", "-f", "-",
                  input=documents(configmap_manifest("etcd-a", {"k": "v"}), configmap_manifest("etcd-b")))
    listed = keys(alpha.etcdctl("get", "--prefix", "--keys-only", "/registry/configmaps/default/etcd-").stdout)
    assert listed == ["/registry/configmaps/default/etcd-a", "/registry/configmaps/default/etcd-b"]

    stored = json.loads(keys(alpha.etcdctl("get", "--print-value-only",
                                           "/registry/configmaps/default/etcd-a").stdout)[0])
    assert stored["data"] == {"k": "v"} and stored["kind"] == "ConfigMap"
    assert "resourceVersion" not in stored["metadata"]  # it is the key's mod_revision, never stored

    header = json.loads(alpha.etcdctl("get", "/registry/configmaps/default/etcd-a", "-w", "json").stdout)
    served = alpha.kubectl_json("get", "configmap", "etcd-a", "-n", "default")
    assert served["metadata"]["resourceVersion"] == str(header["kvs"][0]["mod_revision"])


def test_two_named_clusters_run_side_by_side(home: Mkpy, alpha: KubeCluster, beta: KubeCluster) -> None:
    assert alpha.server != beta.server
    alpha.kubectl("create", "-n", "default", "-f", "-", input=configmap_manifest("only-in-alpha"))
    beta.kubectl("create", "-n", "default", "-f", "-", input=configmap_manifest("only-in-beta"))
    assert beta.kubectl("get", "configmap", "only-in-alpha", "-n", "default", check=False).returncode != 0
    assert alpha.kubectl("get", "configmap", "only-in-beta", "-n", "default", check=False).returncode != 0
    assert keys(beta.etcdctl("get", "--prefix", "--keys-only", "/registry/configmaps/default/only-").stdout) == \
        ["/registry/configmaps/default/only-in-beta"]

    listing = home("list").stdout
    for name, cluster in (("alpha", alpha), ("beta", beta)):
        assert re.search(rf"│\s*{name}\s*│\s*running\s*│\s*{re.escape(cluster.server)}\s*│", listing), listing

    # both contexts are merged into the user's kubeconfig, so kubectl --context reaches either cluster
    config = contexts(home)
    assert {"mkpy-alpha", "mkpy-beta"} <= {c["name"] for c in config["contexts"]}
    for name in ("alpha", "beta"):
        out = home_kubectl(home, "--context", f"mkpy-{name}", "get", "configmaps", "-n", "default", "-o", "name")
        assert f"configmap/only-in-{name}" in out


def home_kubectl(home: Mkpy, *args: str) -> str:
    """kubectl with the user's merged ~/.kube/config (no --kubeconfig)."""
    return run(["kubectl", *args], env=home.env).stdout


def test_delete_removes_the_directory_and_the_context(home: Mkpy) -> None:
    gamma = home.up("gamma")
    host, port = gamma.server.removeprefix("https://").split(":")
    assert "mkpy-gamma" in {c["name"] for c in contexts(home)["contexts"]}
    out = home("delete", "--name", "gamma").stdout
    assert 'deleted cluster "gamma"' in out and "removed context mkpy-gamma" in out
    assert not gamma.dir.exists()
    assert "mkpy-gamma" not in {c["name"] for c in contexts(home)["contexts"]}
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host, int(port)), timeout=5):
        pass  # the apiserver is stopped before `mkpy delete` returns
    missing = home("status", "--name", "gamma", expect_failure=True)
    assert 'cluster "gamma" does not exist' in missing.stderr


def test_commands_on_an_unknown_cluster_say_it_does_not_exist(home: Mkpy) -> None:
    for command in ("down", "status", "kubeconfig"):
        result = home(command, "--name", "nope", expect_failure=True)
        assert 'cluster "nope" does not exist' in result.stderr, command
    assert 'cluster "nope" does not exist; nothing to delete' in home("delete", "--name", "nope").stdout

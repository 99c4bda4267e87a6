"""More of the kubectl commands people type, with the real kubectl against the shared cluster.

These are the commands whose work is split between kubectl and the apiserver: `apply` of a directory, of a
kustomization and with `--prune`, `diff` (a server-side dry run), `edit` (with a scripted editor),
`replace --force`, the three `patch` types, the typed `create <kind>` commands not covered in
test_kubectl_fidelity.py, and `run`, `expose`, `set env` and `set resources`. Each test works in its own
namespace; cluster-scoped objects get unique names and are deleted again.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KubeCluster, Result, configmap_manifest, documents, run, unique
from tests.e2e.test_kubectl import names, write

pytestmark = pytest.mark.e2e


# helpers --------------------------------------------------------------------------------------------


def deployment(name: str, images: dict[str, str] | None = None, replicas: int = 1,
               labels: dict[str, str] | None = None) -> str:
    """A deployment with one container per `images` entry (name: image)."""
    selector = {"app": name}
    containers = [{"name": c, "image": image} for c, image in (images or {"app": "nginx:1.27"}).items()]
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {**selector, **(labels or {})}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                 "template": {"metadata": {"labels": selector}, "spec": {"containers": containers}}}})


def get(cluster: KubeCluster, kind: str, name: str, namespace: str | None = None) -> Any:
    ns = ["-n", namespace] if namespace else []
    return cluster.kubectl_json("get", kind, name, *ns)


def containers_of(cluster: KubeCluster, name: str, namespace: str) -> dict[str, dict[str, Any]]:
    spec = get(cluster, "deployment", name, namespace)["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"]}


def kubectl_with(cluster: KubeCluster, extra_env: dict[str, str], *args: str, check: bool = True) -> Result:
    """kubectl with additional environment variables (EDITOR, TMPDIR)."""
    return run(cluster.kubectl_argv(*args), env={**cluster.env, **extra_env}, check=check)


def replacing_editor(directory: Path, old: str, new: str) -> str:
    """An EDITOR that replaces `old` with `new` in the file kubectl hands it (and changes nothing when `old`
    is not there, which is how kubectl learns that a second round of editing gave up)."""
    script = write(directory, "editor.py",
                   "import pathlib, sys\n"
                   "path = pathlib.Path(sys.argv[-1])\n"
                   f"path.write_text(path.read_text().replace({old!r}, {new!r}))\n")
    return f"{sys.executable} {script}"


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A throwaway certificate and key for `create secret tls`."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shop.example.com")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path = write(directory, "tls.crt", cert.public_bytes(serialization.Encoding.PEM).decode())
    key_path = write(directory, "tls.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
    return cert_path, key_path


# apply: directories, kustomizations, pruning ------------------------------------------------------------


def test_apply_of_a_directory_creates_everything_then_reports_it_unchanged(cluster: KubeCluster, namespace: str,
                                                                          tmp_path: Path) -> None:
    app = tmp_path / "app"
    write(app, "1-config.yaml", configmap_manifest("settings", {"mode": "fast"}))
    write(app, "2-deployment.yaml", deployment("web"))
    write(app, "3-more.yaml", documents(configmap_manifest("extra-1"), configmap_manifest("extra-2")))
    first = cluster.kubectl("apply", "-n", namespace, "-f", str(app)).stdout
    assert first.splitlines() == ["configmap/settings created", "deployment.apps/web created",
                                  "configmap/extra-1 created", "configmap/extra-2 created"]
    versions = {n: get(cluster, *n.split("/"), namespace)["metadata"]["resourceVersion"]
                for n in ("configmap/settings", "deployment/web", "configmap/extra-1")}
    again = cluster.kubectl("apply", "-n", namespace, "-f", str(app)).stdout
    assert again.splitlines() == ["configmap/settings unchanged", "deployment.apps/web unchanged",
                                  "configmap/extra-1 unchanged", "configmap/extra-2 unchanged"]
    assert {n: get(cluster, *n.split("/"), namespace)["metadata"]["resourceVersion"] for n in versions} == versions


def test_apply_of_a_kustomization_creates_the_kustomized_objects(cluster: KubeCluster, namespace: str,
                                                                tmp_path: Path) -> None:
    base = tmp_path / "overlay"
    write(base, "deployment.yaml", yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                       "envFrom": [{"configMapRef": {"name": "settings"}}]}]}}}}))
    write(base, "kustomization.yaml", yaml.safe_dump({
        "namePrefix": "dev-", "commonLabels": {"team": "blue"}, "resources": ["deployment.yaml"],
        "configMapGenerator": [{"name": "settings", "literals": ["color=red"]}]}))
    out = cluster.kubectl("apply", "-n", namespace, "-k", str(base)).stdout
    created = names(out)
    generated = next(line.split()[0] for line in created if line.startswith("configmap/dev-settings-"))
    assert created == {f"{generated} created", "deployment.apps/dev-web created"}

    config = get(cluster, "configmap", generated.split("/")[1], namespace)
    assert config["data"] == {"color": "red"} and config["metadata"]["labels"] == {"team": "blue"}
    live = get(cluster, "deployment", "dev-web", namespace)
    assert live["metadata"]["labels"] == {"team": "blue"}
    assert live["spec"]["selector"]["matchLabels"] == {"app": "web", "team": "blue"}
    assert live["spec"]["template"]["metadata"]["labels"] == {"app": "web", "team": "blue"}
    assert live["spec"]["template"]["spec"]["containers"][0]["envFrom"] == \
        [{"configMapRef": {"name": generated.split("/")[1]}}]  # the reference follows the hashed name
    listed = cluster.kubectl("get", "deployments,configmaps", "-n", namespace, "-l", "team=blue", "-o", "name")
    assert names(listed.stdout) == {"deployment.apps/dev-web", generated}
    again = cluster.kubectl("apply", "-n", namespace, "-k", str(base)).stdout
    assert names(again) == {f"{generated} unchanged", "deployment.apps/dev-web unchanged"}


def test_apply_with_prune_removes_applied_objects_that_left_the_directory(cluster: KubeCluster, namespace: str,
                                                                         tmp_path: Path) -> None:
    label = unique("set")
    app = tmp_path / "app"
    write(app, "keep.yaml", configmap_manifest("keep", labels={"app": label}))
    old = write(app, "old.yaml", configmap_manifest("old", labels={"app": label}))
    cluster.kubectl("apply", "-n", namespace, "-f", str(app))
    # labelled too, but never applied (no last-applied annotation), and one without the label
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=documents(
        configmap_manifest("hand-made", labels={"app": label}), configmap_manifest("bystander")))
    old.unlink()
    out = cluster.kubectl("apply", "-n", namespace, "--prune", "-l", f"app={label}",
                          "--prune-allowlist=core/v1/ConfigMap", "-f", str(app)).stdout
    assert out.splitlines() == ["configmap/keep unchanged", "configmap/old pruned"]
    left = cluster.kubectl("get", "configmaps", "-n", namespace, "-o", "name").stdout
    assert names(left) >= {"configmap/keep", "configmap/hand-made", "configmap/bystander"}
    assert "configmap/old" not in names(left)


# diff ------------------------------------------------------------------------------------------------------


def test_diff_exits_0_when_the_file_matches_and_1_with_a_diff_when_it_does_not(cluster: KubeCluster,
                                                                             namespace: str,
                                                                             tmp_path: Path) -> None:
    path = write(tmp_path, "cm.yaml", configmap_manifest("conf", {"level": "low", "color": "blue"}))
    cluster.kubectl("apply", "-n", namespace, "-f", str(path))
    before = get(cluster, "configmap", "conf", namespace)
    same = cluster.kubectl("diff", "-n", namespace, "-f", str(path))
    assert same.stdout == ""

    write(tmp_path, "cm.yaml", configmap_manifest("conf", {"level": "high", "color": "blue"}))
    changed = cluster.kubectl("diff", "-n", namespace, "-f", str(path), check=False)
    assert changed.returncode == 1, changed.describe()
    removed = [line for line in changed.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in changed.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert [line.strip() for line in removed if "level" in line] == ["-  level: low"]
    assert [line.strip() for line in added if "level" in line] == ["+  level: high"]
    assert not any("color" in line for line in removed + added)
    assert get(cluster, "configmap", "conf", namespace) == before, "kubectl diff must not change the object"


def test_diff_of_a_new_object_shows_it_whole_and_creates_nothing(cluster: KubeCluster, namespace: str,
                                                                tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", deployment("fresh", replicas=3))
    result = cluster.kubectl("diff", "-n", namespace, "-f", str(path), check=False)
    assert result.returncode == 1, result.describe()
    assert "+  replicas: 3" in result.stdout
    assert "+      restartPolicy: Always" in result.stdout  # the server's defaults are in the dry-run answer
    cluster.kubectl("get", "deployment", "fresh", "-n", namespace, expect_failure=True)


# edit ------------------------------------------------------------------------------------------------------


def test_edit_with_a_scripted_editor_changes_the_field(cluster: KubeCluster, namespace: str,
                                                       tmp_path: Path) -> None:
    cluster.kubectl("create", "configmap", "tuned", "-n", namespace, "--from-literal=speed=slow")
    editor = replacing_editor(tmp_path, "speed: slow", "speed: fast")
    out = kubectl_with(cluster, {"EDITOR": editor, "TMPDIR": str(tmp_path)},
                       "edit", "configmap", "tuned", "-n", namespace).stdout
    assert out.strip() == "configmap/tuned edited"
    assert get(cluster, "configmap", "tuned", namespace)["data"] == {"speed": "fast"}


def test_edit_that_makes_the_object_invalid_is_refused(cluster: KubeCluster, namespace: str,
                                                       tmp_path: Path) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=deployment("guarded", replicas=2))
    before = get(cluster, "deployment", "guarded", namespace)
    editor = replacing_editor(tmp_path, "replicas: 2", "replicas: -5")
    result = kubectl_with(cluster, {"EDITOR": editor, "TMPDIR": str(tmp_path)},
                          "edit", "deployment", "guarded", "-n", namespace, check=False)
    assert result.returncode != 0, result.describe()
    assert 'deployments.apps "guarded" is invalid' in result.stderr
    assert "Edit cancelled, no valid changes were saved." in result.stderr
    assert get(cluster, "deployment", "guarded", namespace)["spec"] == before["spec"]  # status: the controller's


# replace --force ----------------------------------------------------------------------------------------------


def test_replace_force_deletes_and_recreates_the_object(cluster: KubeCluster, namespace: str,
                                                        tmp_path: Path) -> None:
    path = write(tmp_path, "cm.yaml", configmap_manifest("reborn", {"life": "1"}))
    cluster.kubectl("create", "-n", namespace, "-f", str(path))
    before = get(cluster, "configmap", "reborn", namespace)
    write(tmp_path, "cm.yaml", configmap_manifest("reborn", {"life": "2"}))
    out = cluster.kubectl("replace", "--force", "-n", namespace, "-f", str(path)).stdout
    assert out.splitlines() == ['configmap "reborn" deleted', "configmap/reborn replaced"]
    after = get(cluster, "configmap", "reborn", namespace)
    assert after["data"] == {"life": "2"}
    assert after["metadata"]["uid"] != before["metadata"]["uid"]


# patch ----------------------------------------------------------------------------------------------------------


def test_patch_strategic_changes_one_container_by_name(cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(deployment("pair", {"app": "nginx:1.27", "sidecar": "busybox:1.36"}), namespace)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}}
    out = cluster.kubectl("patch", "deployment", "pair", "-n", namespace, "--type=strategic",
                          "-p", json.dumps(patch)).stdout
    assert out.strip() == "deployment.apps/pair patched"
    images = {name: c["image"] for name, c in containers_of(cluster, "pair", namespace).items()}
    assert images == {"app": "nginx:1.27", "sidecar": "busybox:1.37"}


def test_patch_merge_replaces_lists_and_deletes_keys_with_null(cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(deployment("pair", {"app": "nginx:1.27", "sidecar": "busybox:1.36"},
                                      labels={"stage": "beta"}), namespace)
    patch = {"metadata": {"labels": {"stage": None, "owner": "me"}},
             "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}}
    cluster.kubectl("patch", "deployment", "pair", "-n", namespace, "--type=merge", "-p", json.dumps(patch))
    live = get(cluster, "deployment", "pair", namespace)
    assert live["metadata"]["labels"] == {"app": "pair", "owner": "me"}
    assert [c["name"] for c in live["spec"]["template"]["spec"]["containers"]] == ["sidecar"]


def test_patch_json_applies_operations_in_order(cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(deployment("ops", replicas=1), namespace)
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 3},
           {"op": "add", "path": "/metadata/annotations", "value": {"note": "json"}},
           {"op": "copy", "from": "/metadata/annotations/note", "path": "/metadata/labels/note"}]
    cluster.kubectl("patch", "deployment", "ops", "-n", namespace, "--type=json", "-p", json.dumps(ops))
    live = get(cluster, "deployment", "ops", namespace)
    assert live["spec"]["replicas"] == 3 and live["metadata"]["generation"] == 2
    assert live["metadata"]["annotations"]["note"] == "json" and live["metadata"]["labels"]["note"] == "json"


def test_patch_json_with_a_failing_test_operation_changes_nothing(cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(configmap_manifest("checked", {"owner": "alice"}), namespace)
    before = get(cluster, "configmap", "checked", namespace)
    ops = [{"op": "test", "path": "/data/owner", "value": "bob"},
           {"op": "replace", "path": "/data/owner", "value": "carol"}]
    result = cluster.kubectl("patch", "configmap", "checked", "-n", namespace, "--type=json", "-p", json.dumps(ops),
                             expect_failure=True)
    assert "The request is invalid" in result.stderr and "testing value" in result.stderr
    assert get(cluster, "configmap", "checked", namespace) == before


# typed create commands (those test_kubectl_fidelity.py does not cover) ----------------------------------------


def test_create_service_nodeport_gets_the_node_port_asked_for(cluster: KubeCluster, namespace: str) -> None:
    port = 30000 + int(unique("p")[-4:], 16) % 2700  # spread over the range: tests share the cluster
    out = cluster.kubectl("create", "service", "nodeport", "edge", "-n", namespace, "--tcp=80:8080",
                          f"--node-port={port}").stdout
    assert out.strip() == "service/edge created"
    spec = get(cluster, "service", "edge", namespace)["spec"]
    assert spec["type"] == "NodePort" and spec["clusterIP"] and spec["externalTrafficPolicy"] == "Cluster"
    assert spec["ports"] == [{"name": "80-8080", "port": 80, "targetPort": 8080, "nodePort": port,
                              "protocol": "TCP"}]
    assert spec["selector"] == {"app": "edge"}


def test_create_configmap_from_files_keys_them_by_file_name(cluster: KubeCluster, namespace: str,
                                                            tmp_path: Path) -> None:
    greeting = write(tmp_path, "greeting.txt", "hello\nworld\n")
    write(tmp_path / "conf.d", "a.conf", "a=1\n")
    write(tmp_path / "conf.d", "b.conf", "b=2\n")
    cluster.kubectl("create", "configmap", "files", "-n", namespace, f"--from-file={greeting}",
                    f"--from-file=renamed.txt={greeting}")
    cluster.kubectl("create", "configmap", "folder", "-n", namespace, f"--from-file={tmp_path / 'conf.d'}")
    assert get(cluster, "configmap", "files", namespace)["data"] == {"greeting.txt": "hello\nworld\n",
                                                                     "renamed.txt": "hello\nworld\n"}
    assert get(cluster, "configmap", "folder", namespace)["data"] == {"a.conf": "a=1\n", "b.conf": "b=2\n"}


def test_create_secret_tls_stores_the_certificate_and_key(cluster: KubeCluster, namespace: str,
                                                          tmp_path: Path) -> None:
    import base64

    cert, key = self_signed_certificate(tmp_path)
    cluster.kubectl("create", "secret", "tls", "shop-tls", "-n", namespace, f"--cert={cert}", f"--key={key}")
    secret = get(cluster, "secret", "shop-tls", namespace)
    assert secret["type"] == "kubernetes.io/tls"
    assert base64.b64decode(secret["data"]["tls.crt"]).decode() == cert.read_text()
    assert base64.b64decode(secret["data"]["tls.key"]).decode() == key.read_text()


def test_create_secret_tls_with_a_mismatched_key_is_refused_by_kubectl(cluster: KubeCluster, namespace: str,
                                                                      tmp_path: Path) -> None:
    cert, _ = self_signed_certificate(tmp_path / "one")
    _, other_key = self_signed_certificate(tmp_path / "two")
    result = cluster.kubectl("create", "secret", "tls", "mixed", "-n", namespace, f"--cert={cert}",
                             f"--key={other_key}", expect_failure=True)
    assert "private key does not match public key" in result.stderr
    cluster.kubectl("get", "secret", "mixed", "-n", namespace, expect_failure=True)


NamespacedCheck = Callable[[dict[str, Any]], bool]


@pytest.mark.parametrize(("args", "kind", "name", "check"), [
    pytest.param(["cronjob", "nightly", "--image=busybox:1.36", "--schedule=0 3 * * *", "--", "echo", "hi"],
                 "cronjob", "nightly",
                 lambda o: o["spec"]["schedule"] == "0 3 * * *" and o["spec"]["concurrencyPolicy"] == "Allow"
                 and o["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
                 and o["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure",
                 id="cronjob"),
    pytest.param(["quota", "limits", "--hard=pods=10,requests.cpu=2,services.nodeports=0"],
                 "resourcequota", "limits",
                 lambda o: o["spec"]["hard"] == {"pods": "10", "requests.cpu": "2", "services.nodeports": "0"},
                 id="quota"),
    pytest.param(["pdb", "web-pdb", "--selector=app=web", "--min-available=50%"],
                 "poddisruptionbudget", "web-pdb",
                 lambda o: o["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
                 id="pdb"),
    pytest.param(["ingress", "shop", "--class=nginx", "--rule=shop.example.com/cart*=cart:8080"],
                 "ingress", "shop",
                 lambda o: o["spec"]["ingressClassName"] == "nginx" and o["spec"]["rules"] == [
                     {"host": "shop.example.com", "http": {"paths": [
                         {"path": "/cart", "pathType": "Prefix",
                          "backend": {"service": {"name": "cart", "port": {"number": 8080}}}}]}}],
                 id="ingress"),
    pytest.param(["rolebinding", "readers", "--role=reader", "--user=alice", "--serviceaccount=ops:robot"],
                 "rolebinding", "readers",
                 lambda o: o["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
                 and o["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"},
                                       {"kind": "ServiceAccount", "name": "robot", "namespace": "ops"}],
                 id="rolebinding"),
])
def test_typed_create_commands_store_what_kubectl_built(cluster: KubeCluster, namespace: str, args: list[str],
                                                        kind: str, name: str, check: NamespacedCheck) -> None:
    cluster.kubectl("create", "-n", namespace, *args)  # before `--`, which ends kubectl's own flags
    obj = get(cluster, kind, name, namespace)
    assert obj["metadata"]["namespace"] == namespace
    assert check(obj), json.dumps(obj, indent=1)


def test_create_priorityclass_is_cluster_scoped_and_defaulted(cluster: KubeCluster) -> None:
    name = unique("prio")
    cluster.kubectl("create", "priorityclass", name, "--value=1000", "--description=for the tests")
    try:
        obj = get(cluster, "priorityclass", name)
        assert (obj["value"], obj["description"], obj.get("globalDefault", False)) == (1000, "for the tests", False)
        assert obj["preemptionPolicy"] == "PreemptLowerPriority"  # the server's default
        assert "namespace" not in obj["metadata"]
        refused = cluster.kubectl("create", "priorityclass", unique("prio"), "--value=2000000000", check=False)
        assert refused.returncode != 0 and "is invalid" in refused.stderr and "value" in refused.stderr
    finally:
        cluster.kubectl("delete", "priorityclass", name, check=False)


def test_create_clusterrole_and_clusterrolebinding(cluster: KubeCluster) -> None:
    role, binding = unique("node-reader"), unique("node-readers")
    try:
        cluster.kubectl("create", "clusterrole", role, "--verb=get", "--resource=nodes,pods/log",
                        "--non-resource-url=/healthz")
        cluster.kubectl("create", "clusterrolebinding", binding, f"--clusterrole={role}", "--group=devs")
        rules = get(cluster, "clusterrole", role)["rules"]
        assert rules == [{"apiGroups": [""], "resources": ["nodes", "pods/log"], "verbs": ["get"]},
                         {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]
        bound = get(cluster, "clusterrolebinding", binding)
        assert bound["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}
        assert bound["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]
    finally:
        cluster.kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found")
        cluster.kubectl("delete", "clusterrole", role, "--ignore-not-found")


# run, expose, set ---------------------------------------------------------------------------------------------


def test_run_creates_a_pod_with_labels_env_and_port(cluster: KubeCluster, namespace: str) -> None:
    out = cluster.kubectl("run", "runner", "-n", namespace, "--image=nginx:1.27", "--labels=app=runner,tier=x",
                          "--env=MODE=fast", "--port=80").stdout
    assert out.strip() == "pod/runner created"
    pod = get(cluster, "pod", "runner", namespace)
    assert pod["metadata"]["labels"] == {"app": "runner", "tier": "x"}
    container = pod["spec"]["containers"][0]
    assert (container["name"], container["image"]) == ("runner", "nginx:1.27")
    assert container["env"] == [{"name": "MODE", "value": "fast"}]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert pod["spec"]["restartPolicy"] == "Always" and pod["status"]["phase"] == "Pending"


def test_run_with_server_dry_run_prints_the_defaulted_pod_and_creates_none(cluster: KubeCluster,
                                                                         namespace: str) -> None:
    out = cluster.kubectl("run", "ghost", "-n", namespace, "--image=nginx:1.27", "--restart=Never",
                          "--dry-run=server", "-o", "json").stdout
    pod = json.loads(out)
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["dnsPolicy"] == "ClusterFirst"
    assert pod["metadata"]["uid"]  # filled in by the server, though never stored
    cluster.kubectl("get", "pod", "ghost", "-n", namespace, expect_failure=True)


def test_run_with_an_invalid_name_is_refused(cluster: KubeCluster, namespace: str) -> None:
    result = cluster.kubectl("run", "Bad_Name", "-n", namespace, "--image=nginx", expect_failure=True)
    assert 'The Pod "Bad_Name" is invalid' in result.stderr and "metadata.name" in result.stderr


def test_expose_deployment_makes_a_service_selecting_its_pods(cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(deployment("shop"), namespace)
    out = cluster.kubectl("expose", "deployment", "shop", "-n", namespace, "--port=80", "--target-port=8080",
                          "--name=shop-svc").stdout
    assert out.strip() == "service/shop-svc exposed"
    spec = get(cluster, "service", "shop-svc", namespace)["spec"]
    assert spec["selector"] == {"app": "shop"} and spec["type"] == "ClusterIP" and spec["clusterIP"]
    assert spec["ports"] == [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]
    missing = cluster.kubectl("expose", "deployment", "nothing", "-n", namespace, "--port=80", expect_failure=True)
    assert 'deployments.apps "nothing" not found' in missing.stderr


def test_set_env_adds_lists_and_removes_variables(cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(deployment("envy"), namespace)
    out = cluster.kubectl("set", "env", "deployment/envy", "-n", namespace, "COLOR=red", "SIZE=L").stdout
    assert out.strip() == "deployment.apps/envy env updated"
    assert containers_of(cluster, "envy", namespace)["app"]["env"] == [{"name": "COLOR", "value": "red"},
                                                                      {"name": "SIZE", "value": "L"}]
    listed = cluster.kubectl("set", "env", "deployment/envy", "-n", namespace, "--list").stdout
    assert listed.splitlines()[1:] == ["COLOR=red", "SIZE=L"]
    cluster.kubectl("set", "env", "deployment/envy", "-n", namespace, "COLOR-")
    assert containers_of(cluster, "envy", namespace)["app"]["env"] == [{"name": "SIZE", "value": "L"}]
    assert get(cluster, "deployment", "envy", namespace)["metadata"]["generation"] == 3


def test_set_resources_stores_canonical_quantities_and_refuses_requests_over_limits(
        cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(deployment("sized", {"app": "nginx:1.27", "sidecar": "busybox:1.36"}), namespace)
    out = cluster.kubectl("set", "resources", "deployment", "sized", "-n", namespace, "-c", "app",
                          "--limits=cpu=0.5,memory=1Gi", "--requests=cpu=0.25,memory=1024Mi").stdout
    assert out.strip() == "deployment.apps/sized resource requirements updated"
    containers = containers_of(cluster, "sized", namespace)
    assert containers["app"]["resources"] == {"limits": {"cpu": "500m", "memory": "1Gi"},
                                              "requests": {"cpu": "250m", "memory": "1Gi"}}
    assert containers["sidecar"]["resources"] == {}
    refused = cluster.kubectl("set", "resources", "deployment", "sized", "-n", namespace, "-c", "app",
                              "--limits=cpu=1", "--requests=cpu=2", expect_failure=True)
    assert "spec.template.spec.containers[0].resources.requests" in refused.stderr
    assert "must be less than or equal to cpu limit" in refused.stderr
    assert containers_of(cluster, "sized", namespace)["app"]["resources"]["limits"]["cpu"] == "500m"

